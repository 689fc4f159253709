#!/bin/sh
# Start-up to first answer on a new database, beside the minimal rmcp 3.9.0 server, in one
# interleaved run (issue 18). Usage: benches/startup.sh [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
cargo build --release --locked --bin meta-utl-mcp --example loadgen
CARGO_TARGET_DIR="$PWD/target/rmcp-minimal" \
    cargo build --release --locked --manifest-path benches/rmcp-minimal/Cargo.toml
exec target/release/examples/loadgen --startup --n "${1:-50}" \
    --rmcp target/rmcp-minimal/release/rmcp-minimal

#!/usr/bin/env bash
# Install the pinned Claude Code CLI from npm into DEST (a folder of its own, with a package.json
# so that npm installs there and not into a package.json above it) and print the path of its
# `claude` executable on the last line of stdout. Used by CI and by developers to run the tests
# that drive the real client against a scripted model (tests/claude_code.rs):
#   META_UTL_CLAUDE="$(scripts/fetch_claude.sh DEST | tail -n 1)" cargo test --test claude_code
#
# Usage: scripts/fetch_claude.sh DEST
#
# Idempotent: when DEST already holds the pinned version, nothing is fetched. Needs npm and
# node.
set -euo pipefail

PACKAGE="@anthropic-ai/claude-code"
VERSION="2.1.330" # also PINNED_VERSION in tests/common/claude.rs, which checks it

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DEST" >&2
    exit 2
fi
mkdir -p "$1"
DEST="$(cd "$1" && pwd)"
BIN="$DEST/node_modules/.bin/claude"

version_ok() {
    [ -x "$BIN" ] && [[ "$("$BIN" --version 2>/dev/null)" == "$VERSION "* ]]
}

if ! version_ok; then
    [ -f "$DEST/package.json" ] || echo '{"private": true}' >"$DEST/package.json"
    (cd "$DEST" && timeout 300 npm install --silent --no-audit --no-fund "$PACKAGE@$VERSION" >&2)
    # npm 11 may hold back the package's postinstall, which puts the platform's native binary
    # in place of the placeholder; run it by hand when the command is still the placeholder.
    if ! version_ok; then
        (cd "$DEST/node_modules/$PACKAGE" && node install.cjs) >&2 || true
    fi
    if ! version_ok; then
        echo "fetch_claude: $PACKAGE@$VERSION did not install a working claude in $DEST" >&2
        exit 1
    fi
fi
echo "$BIN"

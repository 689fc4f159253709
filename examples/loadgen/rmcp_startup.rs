//! Start-up to first answer on a new database, side by side with a minimal server on the
//! official Rust SDK (`benches/rmcp-minimal`).
//!
//! `cargo run --release --example loadgen -- --startup [--rmcp BIN] [--ab BIN] [--n N]`
//!
//! Each round starts, in turn: this server on a new database file answering `initialize`
//! first; this server on a new database file answering a tool call
//! (`get_meta_learning_status`) first; and, with `--rmcp`, the minimal rmcp server answering
//! `initialize`; with `--ab`, another build of this server, `initialize` first. Interleaved, so that every subject sees the same host load; N rounds (50 by
//! default). The time runs from just before the spawn to the answer's last byte. Prints p50,
//! p90 and the minimum, and the ratio of the p50s.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{Proc, binary, percentile};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}}"#;
const STATUS: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_meta_learning_status","arguments":{}}}"#;

fn first_answer(bin: &Path, db: Option<&Path>, line: &str) -> Duration {
    let t = Instant::now();
    let mut p = match db {
        Some(db) => Proc::start_bin(bin, db),
        None => Proc::start_plain(bin),
    };
    p.send(line);
    p.recv();
    t.elapsed()
}

/// Run the side-by-side start-up table.
pub(super) fn run(rmcp: Option<&Path>, other: Option<&Path>, n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let ours = binary();
    let mut init = Vec::new();
    let mut tool = Vec::new();
    let mut minimal = Vec::new();
    let mut b = Vec::new();
    for i in 0..n {
        let db = dir.path().join(format!("init-{i}.db"));
        init.push(first_answer(&ours, Some(&db), INITIALIZE));
        let db = dir.path().join(format!("tool-{i}.db"));
        tool.push(first_answer(&ours, Some(&db), STATUS));
        if let Some(bin) = other {
            let db = dir.path().join(format!("b-{i}.db"));
            b.push(first_answer(bin, Some(&db), INITIALIZE));
        }
        if let Some(bin) = rmcp {
            minimal.push(first_answer(bin, None, INITIALIZE));
        }
    }
    println!(
        "| start-up to first answer, new database | n | p50 µs | p90 µs | min µs | p50 ÷ rmcp p50 |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let p50 = |v: &[Duration]| percentile(v, 0.5).as_secs_f64() * 1e6;
    minimal.sort();
    let base = (!minimal.is_empty()).then(|| p50(&minimal));
    for (label, mut v) in [
        ("meta-utl-mcp, `initialize` first", init),
        ("meta-utl-mcp, `get_meta_learning_status` first", tool),
        ("build B (`--ab`), `initialize` first", b),
        ("rmcp 3.9.0 minimal server, `initialize` first", minimal),
    ] {
        if v.is_empty() {
            continue;
        }
        v.sort();
        println!(
            "| {label} | {} | {:.0} | {:.0} | {:.0} | {} |",
            v.len(),
            p50(&v),
            percentile(&v, 0.9).as_secs_f64() * 1e6,
            v[0].as_secs_f64() * 1e6,
            base.map_or("–".into(), |b| format!("{:.2}", p50(&v) / b)),
        );
    }
}

//! Profiling driver for `gwt_compute_delta_sc`: builds an in-memory store of `N` vertices, then
//! runs `CALLS` end-to-end tool calls (parse the request line, `call_tool`, serialise the
//! response) with two full fingerprints. Meant for callgrind, which counts instructions and so
//! gives stable figures on a loaded machine; collect only the calls with `--toggle-collect`:
//!
//! ```text
//! cargo build --release --example delta_sc_profile
//! valgrind --tool=callgrind --toggle-collect='delta_sc_profile::run_calls' \
//!     $CARGO_TARGET_DIR/release/examples/delta_sc_profile 10000 20 persist
//! ```
//!
//! Arguments: `N` (default 10000), `CALLS` (default 20), and `persist` to persist every call
//! (each call then updates the same vertex, so after ten calls it has ten stored versions);
//! otherwise `persist: false`. The fingerprints come from `benches/support` (seeded).
//!
//! `parse [ROUNDS]` times the argument parsing alone (both fingerprints of the bench-size
//! request, already decoded into a JSON value, into typed fingerprints), `ROUNDS` times
//! (default 200), and prints the median and p95; under callgrind collect `parse_arguments`.

#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;

use meta_utl_mcp::service::delta_sc::{E1Index, Fingerprint};
use meta_utl_mcp::store::{DbPath, Store};
use meta_utl_mcp::tools::App;
use meta_utl_mcp::tools::delta_sc::{ComputeInput, parse_fast};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use uuid::Uuid;

fn app_with(n: usize, rng: &mut StdRng) -> App {
    let store = Store::open(&DbPath::Memory).expect("store");
    let templates: Vec<Fingerprint> = (0..16).map(|_| support::fingerprint(rng)).collect();
    support::put_vertices(&store, 0..n, &templates, rng);
    App::new(store).expect("app")
}

#[inline(never)]
fn run_calls(app: &App, lines: &[String]) -> usize {
    let mut bytes = 0;
    for line in lines {
        let req: Value = serde_json::from_str(black_box(line)).expect("json");
        let out = app
            .call_tool("gwt_compute_delta_sc", &req["params"]["arguments"])
            .expect("call");
        bytes += serde_json::to_string(&out).expect("serialise").len();
    }
    bytes
}

/// `scan N`: time the E1 k-NN scan alone over `N` random rows (200 queries; p50 and p95).
fn scan(n: usize) {
    let mut rng = StdRng::seed_from_u64(7);
    let mut index = E1Index::new();
    let mut row = || -> Vec<f32> { (0..1024).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
    for i in 0..n {
        index
            .upsert(Uuid::from_u128(i as u128 + 1), &row())
            .expect("row");
    }
    let queries: Vec<Vec<f32>> = (0..200).map(|_| row()).collect();
    let mut times: Vec<u128> = queries
        .iter()
        .map(|q| {
            let t = std::time::Instant::now();
            black_box(index.nearest(q, 20, None));
            t.elapsed().as_micros()
        })
        .collect();
    times.sort_unstable();
    eprintln!(
        "E1 scan over {n} rows: p50 {} µs, p95 {} µs (200 queries)",
        times[99], times[189]
    );
}

/// The work the tool does with its arguments before it calls the service.
#[inline(never)]
fn parse_arguments(arguments: &Value) -> usize {
    let input: ComputeInput = parse_fast(arguments).expect("valid arguments");
    input.old_fingerprint.0.e12_late_interaction.tokens.len()
        + input.new_fingerprint.0.e12_late_interaction.tokens.len()
}

/// `parse ROUNDS`: time [`parse_arguments`] on the bench-size request.
fn parse(rounds: usize) {
    let mut rng = StdRng::seed_from_u64(42);
    let (old, new) = (
        support::fingerprint(&mut rng),
        support::fingerprint(&mut rng),
    );
    let arguments = json!({
        "vertex_id": Uuid::from_u128(u128::MAX).to_string(),
        "old_fingerprint": support::fingerprint_json(&old),
        "new_fingerprint": support::fingerprint_json(&new),
        "persist": false
    });
    let mut times: Vec<u128> = (0..rounds)
        .map(|_| {
            let t = std::time::Instant::now();
            black_box(parse_arguments(black_box(&arguments)));
            t.elapsed().as_nanos()
        })
        .collect();
    times.sort_unstable();
    eprintln!(
        "parse arguments ({} bytes of JSON): median {:.1} µs, p95 {:.1} µs ({rounds} rounds)",
        arguments.to_string().len(),
        times[rounds / 2] as f64 / 1000.0,
        times[rounds * 95 / 100] as f64 / 1000.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "parse") {
        parse(args.get(2).map_or(200, |s| s.parse().expect("ROUNDS")));
        return;
    }
    if args.get(1).is_some_and(|a| a == "scan") {
        scan(args.get(2).map_or(10_000, |s| s.parse().expect("N")));
        return;
    }
    let n: usize = args.get(1).map_or(10_000, |s| s.parse().expect("N"));
    let calls: usize = args.get(2).map_or(20, |s| s.parse().expect("CALLS"));
    let persist = args.get(3).is_some_and(|s| s == "persist");
    let mut rng = StdRng::seed_from_u64(42);
    let fps: Vec<Fingerprint> = (0..calls + 1)
        .map(|_| support::fingerprint(&mut rng))
        .collect();
    let lines: Vec<String> = (0..calls)
        .map(|k| {
            // Persisting: a chain of updates of one vertex; otherwise the same pair each time.
            let (old, new) = if persist {
                (&fps[k], &fps[k + 1])
            } else {
                (&fps[0], &fps[1])
            };
            let args = json!({
                "vertex_id": Uuid::from_u128(u128::MAX).to_string(),
                "old_fingerprint": support::fingerprint_json(old),
                "new_fingerprint": support::fingerprint_json(new),
                "persist": persist
            });
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "gwt_compute_delta_sc", "arguments": args}})
            .to_string()
        })
        .collect();
    let app = app_with(n, &mut rng);
    let started = std::time::Instant::now();
    let bytes = run_calls(&app, &lines);
    eprintln!(
        "{calls} calls over {n} vertices (persist: {persist}), {bytes} response bytes, \
         {} µs per call",
        started.elapsed().as_micros() / calls as u128
    );
}

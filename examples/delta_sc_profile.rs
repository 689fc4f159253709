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
//! otherwise `persist: false`. The fingerprints are those of `benches/delta_sc.rs` (seeded).

use std::hint::black_box;

use chrono::Utc;
use meta_utl_mcp::service::delta_sc::{
    E1Index, EmbedderId, EmbedderKind, Fingerprint, FingerprintBuilder, SPARSE_VOCAB, VertexCache,
};
use meta_utl_mcp::store::{DbPath, Store, StoreError, vertices};
use meta_utl_mcp::tools::App;
use rand::{RngExt, SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};
use uuid::Uuid;

fn fingerprint(rng: &mut StdRng) -> Fingerprint {
    let mut b = FingerprintBuilder::new();
    for e in EmbedderId::ALL {
        match e.kind() {
            EmbedderKind::Dense { dim } => {
                b.dense(
                    e,
                    (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect(),
                );
            }
            EmbedderKind::Sparse { .. } => {
                let mut idx: Vec<u16> = (0..200)
                    .map(|_| rng.random_range(0..SPARSE_VOCAB) as u16)
                    .collect();
                idx.sort_unstable();
                idx.dedup();
                let vals = idx.iter().map(|_| rng.random_range(0.0f32..1.0)).collect();
                b.sparse(e, idx, vals);
            }
            EmbedderKind::Tokens { dim } => {
                b.tokens(
                    e,
                    (0..32)
                        .map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect())
                        .collect(),
                );
            }
        }
    }
    b.build().expect("valid")
}

fn to_json(fp: &Fingerprint) -> Value {
    let mut m = Map::new();
    for e in EmbedderId::ALL {
        let v = match fp.get(e) {
            meta_utl_mcp::service::delta_sc::EmbedderRef::Dense(v) => json!(v),
            meta_utl_mcp::service::delta_sc::EmbedderRef::Sparse(s) => {
                json!({"indices": s.indices, "values": s.values})
            }
            meta_utl_mcp::service::delta_sc::EmbedderRef::Tokens(t) => json!(t.tokens),
        };
        m.insert(e.field().to_string(), v);
    }
    Value::Object(m)
}

fn app_with(n: usize, rng: &mut StdRng) -> App {
    let store = Store::open(&DbPath::Memory).expect("store");
    let templates: Vec<Fingerprint> = (0..16).map(|_| fingerprint(rng)).collect();
    let mut cache = VertexCache::default();
    store
        .write(|db| {
            for i in 0..n {
                let mut fp = templates[i % templates.len()].clone();
                fp.e1_semantic = (0..1024).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                vertices::put_current(
                    db,
                    &mut cache,
                    Uuid::from_u128(i as u128 + 1),
                    &fp,
                    Utc::now(),
                )?;
            }
            Ok::<(), StoreError>(())
        })
        .expect("populate");
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "scan") {
        scan(args.get(2).map_or(10_000, |s| s.parse().expect("N")));
        return;
    }
    let n: usize = args.get(1).map_or(10_000, |s| s.parse().expect("N"));
    let calls: usize = args.get(2).map_or(20, |s| s.parse().expect("CALLS"));
    let persist = args.get(3).is_some_and(|s| s == "persist");
    let mut rng = StdRng::seed_from_u64(42);
    let fps: Vec<Fingerprint> = (0..calls + 1).map(|_| fingerprint(&mut rng)).collect();
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
                "old_fingerprint": to_json(old),
                "new_fingerprint": to_json(new),
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

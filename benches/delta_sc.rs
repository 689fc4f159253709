//! Criterion bench of `gwt_compute_delta_sc`: the end-to-end tool call (parse the request text,
//! run the handler against the store, serialise the result) with two full fingerprints, over
//! 1,000 and 10,000 stored vertices; plus the E1 k-NN scan and `compute` alone.
//!
//! Full fingerprint: 7,424 dense floats, two sparse vectors of ~200 terms, 32 E12 tokens of 128.
//! The store is in memory (`:memory:`) and `persist: false`, so every iteration sees the same
//! store. Seeded RNG. After criterion's report, a manual loop prints p50/p95 to stderr.
//!
//! `cargo bench --bench delta_sc`

#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use meta_utl_mcp::service::delta_sc::{E1Index, Fingerprint};
use meta_utl_mcp::store::{DbPath, Store};
use meta_utl_mcp::tools::App;
use rand::{RngExt, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use uuid::Uuid;

/// An app over an in-memory store holding `n` vertices (current fingerprints only).
fn app_with(n: usize, rng: &mut StdRng) -> App {
    let store = Store::open(&DbPath::Memory).expect("store");
    let templates: Vec<Fingerprint> = (0..16).map(|_| support::fingerprint(rng)).collect();
    support::put_vertices(&store, 0..n, &templates, rng);
    App::new(store).expect("app")
}

fn bench(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(42);
    let old = support::fingerprint(&mut rng);
    let new = support::fingerprint(&mut rng);
    let args = json!({
        "vertex_id": Uuid::from_u128(u128::MAX).to_string(),
        "old_fingerprint": support::fingerprint_json(&old),
        "new_fingerprint": support::fingerprint_json(&new),
        "persist": false
    });
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "gwt_compute_delta_sc", "arguments": args}})
    .to_string();
    let call = |app: &App| {
        let req: Value = serde_json::from_str(black_box(&line)).expect("json");
        let out = app
            .call_tool("gwt_compute_delta_sc", &req["params"]["arguments"])
            .expect("call");
        serde_json::to_string(&out).expect("serialise")
    };
    let mut group = c.benchmark_group("gwt_compute_delta_sc");
    group.sample_size(20);
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(2));
    let mut percentiles = Vec::new();
    for n in [1_000usize, 10_000] {
        let app = app_with(n, &mut rng);
        group.bench_with_input(BenchmarkId::new("end_to_end", n), &app, |b, app| {
            b.iter(|| call(app))
        });
        let mut times: Vec<u128> = (0..100)
            .map(|_| {
                let t = Instant::now();
                black_box(call(&app));
                t.elapsed().as_micros()
            })
            .collect();
        times.sort_unstable();
        percentiles.push((n, times[49], times[94]));
        // Where the time goes (medians of 50): parse the line, the handler, serialise.
        let median = |mut v: Vec<u128>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        let req: Value = serde_json::from_str(&line).expect("json");
        let parse = median(
            (0..50)
                .map(|_| {
                    let t = Instant::now();
                    black_box(serde_json::from_str::<Value>(&line).expect("json"));
                    t.elapsed().as_micros()
                })
                .collect(),
        );
        let handler = median(
            (0..50)
                .map(|_| {
                    let t = Instant::now();
                    black_box(
                        app.call_tool("gwt_compute_delta_sc", &req["params"]["arguments"])
                            .expect("call"),
                    );
                    t.elapsed().as_micros()
                })
                .collect(),
        );
        let mut index = E1Index::new();
        for i in 0..n {
            let row: Vec<f32> = (0..1024).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            index
                .upsert(Uuid::from_u128(i as u128 + 1), &row)
                .expect("row");
        }
        let scan = median(
            (0..50)
                .map(|_| {
                    let t = Instant::now();
                    black_box(index.nearest(&new.e1_semantic, 20, None));
                    t.elapsed().as_micros()
                })
                .collect(),
        );
        eprintln!(
            "n = {n}: parse request {parse} µs, call_tool {handler} µs, of which E1 scan {scan} µs (medians)"
        );
    }
    group.finish();
    for (n, p50, p95) in percentiles {
        eprintln!("gwt_compute_delta_sc end_to_end/{n}: p50 {p50} µs, p95 {p95} µs (100 calls)");
    }
    eprintln!(
        "request line: {} bytes; E1 index: {} bytes per stored vertex",
        line.len(),
        E1Index::BYTES_PER_VERTEX
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

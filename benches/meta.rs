//! Criterion benches for the meta-learning hot paths: `record_prediction` (durable, through the
//! dispatcher), status, a filtered log query over 100,000 stored events, and a Bayesian
//! recalibration over a full replay window. Seeded; run with `cargo bench --bench meta`.

use std::hint::black_box;

use chrono::{Duration, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use meta_utl_mcp::service::meta::{Event, EventType, MetaState, Prediction};
use meta_utl_mcp::service::vocab::{Domain, Lambdas};
use meta_utl_mcp::store::{DbPath, Store, meta as meta_store};
use meta_utl_mcp::tools::App;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;

fn file_app(dir: &tempfile::TempDir) -> App {
    App::new(Store::open(&DbPath::File(dir.path().join("bench.db"))).unwrap()).unwrap()
}

fn bench_calls(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let app = file_app(&dir);
    let mut i = 0u64;
    c.bench_function("record_prediction (durable, WAL file)", |b| {
        b.iter(|| {
            i += 1;
            let args = json!({"embedder_index": i % 13, "predicted": 0.8, "actual": 0.55, "delta_s": 0.6, "delta_c": 0.3});
            black_box(app.call_tool("record_prediction", &args).unwrap())
        })
    });
    c.bench_function("get_meta_learning_status", |b| {
        let args = json!({"include_embedder_breakdown": true});
        b.iter(|| black_box(app.call_tool("get_meta_learning_status", &args).unwrap()))
    });
}

fn bench_log_query(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&DbPath::File(dir.path().join("log.db"))).unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    let start = Utc::now() - Duration::days(30);
    let l = Lambdas::pair(0.5, 0.5);
    store
        .write(|db| {
            let events: Vec<Event> = (0..100_000)
                .map(|i| Event {
                    timestamp: start + Duration::seconds(i * 25),
                    event_type: EventType::ALL[rng.random_range(0..EventType::ALL.len())],
                    prediction_error: Some(0.3),
                    lambda_before: l,
                    lambda_after: l,
                    accuracy_avg: Some(0.8),
                    escalated: false,
                    domain: Some(Domain::ALL[rng.random_range(0..Domain::ALL.len())]),
                    embedder_index: Some(0),
                    detail: String::new(),
                })
                .collect();
            meta_store::insert_events(db, &events)
        })
        .unwrap();
    let app = App::new(store).unwrap();
    let args = json!({"event_type": "accuracy_alert", "domain": "code",
                      "start_time": (start + Duration::days(10)).to_rfc3339(),
                      "limit": 100, "offset": 50});
    c.bench_function(
        "get_meta_learning_log, 100k events, type+domain+time filter",
        |b| b.iter(|| black_box(app.call_tool("get_meta_learning_log", &args).unwrap())),
    );
}

fn bench_bayesian(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(7);
    let replay: Vec<Prediction> = (0..100)
        .map(|_| {
            let (ds, dc): (f64, f64) = (rng.random(), rng.random());
            Prediction {
                timestamp: Utc::now(),
                embedder_index: Some(0),
                predicted: 0.5,
                actual: 0.35 * ds + 0.65 * dc,
                delta_s: Some(ds),
                delta_c: Some(dc),
                domain: None,
                ach_level: 0.001,
            }
        })
        .collect();
    let state = MetaState::default();
    c.bench_function(
        "Bayesian λ recalibration (GP + EI, 100 predictions)",
        |b| b.iter(|| black_box(state.plan_bayesian(&replay))),
    );
}

criterion_group!(benches, bench_calls, bench_log_query, bench_bayesian);
criterion_main!(benches);

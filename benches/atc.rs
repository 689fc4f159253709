//! Criterion benches for the ATC hot paths: Level 2 over full windows (13 × 10,000
//! observations, with its 5-fold cross-validation), Level 4 on 130,000 observations of one
//! domain, the advice of `get_calibration_metrics` on full windows, and ingesting 10,000
//! observations in one `record_calibration_observations` call (durable, WAL file; and the typed
//! parse of its arguments alone). Seeded; run with `cargo bench --bench atc`. Targets (issue
//! 4): < 50 ms, < 100 ms, < 50 ms.

use std::hint::black_box;

use chrono::{DateTime, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use meta_utl_mcp::service::atc::level4::level4_bo_config;
use meta_utl_mcp::service::atc::state::WINDOW_CAPACITY;
use meta_utl_mcp::service::atc::temperature::sigmoid;
use meta_utl_mcp::service::atc::{AtcState, Observation, ObservationFilter, RunMode};
use meta_utl_mcp::service::vocab::Domain;
use meta_utl_mcp::service::vocab::NUM_EMBEDDERS;
use meta_utl_mcp::store::{DbPath, Store};
use meta_utl_mcp::tools::App;
use meta_utl_mcp::tools::atc::RecordInput;
use meta_utl_mcp::tools::wire;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

/// (confidence, correct) with z ~ N(1, 1.5²), correct ~ Bernoulli(σ(z)), confidence σ(2z).
fn overconfident(rng: &mut StdRng) -> (f64, bool) {
    let z: f64 = Normal::new(1.0, 1.5).unwrap().sample(rng);
    let u: f64 = rng.random();
    (sigmoid(2.0 * z), u < sigmoid(z))
}

/// Every embedder's window full of over-confident General-domain observations.
fn full_state() -> AtcState {
    let mut rng = StdRng::seed_from_u64(42);
    let t0 = DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap();
    let mut s = AtcState::new();
    for e in 1..=NUM_EMBEDDERS as u8 {
        for _ in 0..WINDOW_CAPACITY {
            let (confidence, correct) = overconfident(&mut rng);
            s.ingest(Observation {
                timestamp: t0,
                embedder_id: e,
                confidence,
                correct,
                domain: Domain::General,
                threshold_name: None,
                threshold_used: None,
            })
            .unwrap();
        }
    }
    s
}

fn bench_levels(c: &mut Criterion) {
    let mut s = full_state();
    let now = Utc::now();
    c.bench_function(
        "level 2: fit 13 temperatures on 13 x 10,000 observations",
        |b| b.iter(|| black_box(s.run_level2(RunMode::DryRun))),
    );
    // Right after Level 2 no refit would move a temperature, so the check scans every window.
    let mut fitted = s.clone();
    fitted.run_level2(RunMode::Apply);
    c.bench_function(
        "advice: would level 2 change a temperature, 13 x 10,000 observations after level 2",
        |b| b.iter(|| black_box(fitted.level2_would_change(None))),
    );
    c.bench_function(
        "advice: get_calibration_metrics' assessment of 13 x 10,000 observations after level 2",
        |b| {
            b.iter(|| black_box(fitted.assess(&ObservationFilter::default(), Domain::General, now)))
        },
    );
    c.bench_function(
        "level 4: GP + EI over theta_acc on 130,000 observations",
        |b| {
            b.iter(|| {
                black_box(s.run_level4(Domain::General, now, RunMode::DryRun, &level4_bo_config()))
            })
        },
    );
}

fn bench_ingest(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&DbPath::File(dir.path().join("atc.db"))).unwrap();
    let app = App::new(store).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let observations: Vec<Value> = (0..10_000)
        .map(|i| {
            let (confidence, correct) = overconfident(&mut rng);
            json!({"embedder_id": i % 13 + 1, "confidence": confidence, "correct": correct,
                   "domain": "Code", "threshold_name": "theta_acc", "threshold_used": 0.75})
        })
        .collect();
    let args = json!({"observations": observations});
    c.bench_function(
        "record_calibration_observations: parse 10,000 observations",
        |b| b.iter(|| black_box(wire::parse::<RecordInput>(&args).unwrap())),
    );
    c.bench_function(
        "record_calibration_observations: 10,000 in one call (durable)",
        |b| {
            b.iter(|| {
                black_box(
                    app.call_tool("record_calibration_observations", &args)
                        .unwrap(),
                )
            })
        },
    );
}

criterion_group!(benches, bench_levels, bench_ingest);
criterion_main!(benches);

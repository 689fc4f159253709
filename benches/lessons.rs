//! Lesson store benchmarks: `check_strategy_blacklist` against 100,000 stored lessons, and
//! `log_lesson_learned` throughput, both through the real dispatcher (`tools::App`) on a WAL
//! database file.
//!
//! Run: `cargo bench --bench lessons`. Before criterion's runs it prints the p50/p95/p99 latency
//! of 2,000 checks (500 with `include_related`) and the rate of 500 sequential logs (criterion itself reports means and
//! confidence intervals, not percentiles). `cargo bench --bench lessons -- none` prints only
//! those two lines.
//! Data: 1,000 tasks × 100 lessons; strategies and root-cause summaries drawn with a seeded RNG,
//! 60 % of words from 50 common ones and 40 % from 5,000 rare ones (see `support::strategy`).

#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use meta_utl_mcp::store::{DbPath, Store};
use meta_utl_mcp::tools::App;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;

const TASKS: usize = 1_000;
const LESSONS_PER_TASK: usize = 100;
const SEED: u64 = 0x01e5_50a5;

/// A WAL database holding `TASKS × LESSONS_PER_TASK` lessons, and the dispatcher over it.
fn populated() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&DbPath::File(dir.path().join("bench.db"))).expect("open");
    let mut rng = StdRng::seed_from_u64(SEED);
    support::put_lessons(
        &store,
        0..TASKS * LESSONS_PER_TASK,
        LESSONS_PER_TASK,
        &mut rng,
    );
    (dir, App::new(store).expect("app"))
}

fn percentiles(mut d: Vec<Duration>) -> (Duration, Duration, Duration) {
    d.sort();
    let at = |q: f64| d[((d.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50), at(0.95), at(0.99))
}

fn bench_lessons(c: &mut Criterion) {
    let (_dir, app) = populated();
    let mut rng = StdRng::seed_from_u64(SEED + 1);

    let mut samples = Vec::with_capacity(2_000);
    for _ in 0..2_000 {
        let task = format!("task-{}", rng.random_range(0..TASKS));
        let args = json!({"task_id": task, "strategy": support::strategy(&mut rng, 10)});
        let started = Instant::now();
        black_box(
            app.call_tool("check_strategy_blacklist", &args)
                .expect("check"),
        );
        samples.push(started.elapsed());
    }
    let (p50, p95, p99) = percentiles(samples);
    eprintln!(
        "check_strategy_blacklist over {} lessons ({} per task): p50 {p50:?}, p95 {p95:?}, p99 {p99:?}",
        TASKS * LESSONS_PER_TASK,
        LESSONS_PER_TASK
    );

    let mut samples = Vec::with_capacity(500);
    for _ in 0..500 {
        let task = format!("task-{}", rng.random_range(0..TASKS));
        let args = json!({"task_id": task, "strategy": support::strategy(&mut rng, 10), "include_related": true});
        let started = Instant::now();
        black_box(
            app.call_tool("check_strategy_blacklist", &args)
                .expect("check"),
        );
        samples.push(started.elapsed());
    }
    let (p50, p95, p99) = percentiles(samples);
    eprintln!("  with include_related: p50 {p50:?}, p95 {p95:?}, p99 {p99:?}");

    const LOGS: u64 = 500;
    let started = Instant::now();
    for n in 0..LOGS {
        let args = json!({
            "task_id": format!("prepass-{}", n % 50),
            "strategy_description": format!("{} {n}", support::strategy(&mut rng, 8)),
            "rca_summary": support::strategy(&mut rng, 20),
            "failure_type": "TOOL_MISUSE",
            "source_agent": "bench"
        });
        black_box(app.call_tool("log_lesson_learned", &args).expect("log"));
    }
    let elapsed = started.elapsed();
    eprintln!(
        "log_lesson_learned: {LOGS} lessons in {elapsed:?} = {:.0} lessons/s (one transaction each)",
        LOGS as f64 / elapsed.as_secs_f64()
    );

    let mut group = c.benchmark_group("lessons");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.bench_function("check_100k", |b| {
        b.iter(|| {
            let task = format!("task-{}", rng.random_range(0..TASKS));
            let args = json!({"task_id": task, "strategy": support::strategy(&mut rng, 10)});
            black_box(
                app.call_tool("check_strategy_blacklist", &args)
                    .expect("check"),
            )
        })
    });
    group.bench_function("check_100k_include_related", |b| {
        b.iter(|| {
            let task = format!("task-{}", rng.random_range(0..TASKS));
            let args = json!({"task_id": task, "strategy": support::strategy(&mut rng, 10), "include_related": true});
            black_box(app.call_tool("check_strategy_blacklist", &args).expect("check"))
        })
    });
    let mut n = 0u64;
    group.bench_function("log_lesson_learned", |b| {
        b.iter(|| {
            n += 1;
            let args = json!({
                "task_id": format!("new-task-{}", n % 1_000),
                "strategy_description": format!("{} {n}", support::strategy(&mut rng, 8)),
                "rca_summary": support::strategy(&mut rng, 20),
                "failure_type": "TOOL_MISUSE",
                "source_agent": "bench"
            });
            black_box(app.call_tool("log_lesson_learned", &args).expect("log"))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_lessons);
criterion_main!(benches);

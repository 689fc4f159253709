//! Scale curves: how each load scenario grows with stored data.
//!
//! `cargo run --release --example loadgen -- --scale [--quick]`
//!
//! Three families, each on a database file grown in steps (data written straight through the
//! store API, which is what a long-running server accumulates), with a fresh release binary
//! started on it at every step:
//! - events: 10³…10⁶ meta-learning events — (a) pipelined status, (b) status round trip,
//!   (c) durable `record_prediction` pipelined and one at a time, the log query with and
//!   without filters, start-up, and the file size;
//! - lessons: 10³…10⁵ — `check_strategy_blacklist` (exact hit, miss, `include_related`) and
//!   durable `log_lesson_learned`; with `META_UTL_EMBEDDING_MODEL=DIR` the server matches with
//!   that model, and every stored lesson gets a random unit vector under its id;
//! - vertices: 10³…10⁵ stored full fingerprints — (d) `gwt_compute_delta_sc` with two full
//!   fingerprints (`persist: false`, so every call sees the same store), and the first call
//!   after start-up, which loads the E1 index (about 5.3 GB of file at 10⁵).
//!
//! Seeded; `--quick` stops each family one step early and takes fewer samples; naming families
//! (`--scale lessons`) runs only those; `--up-to N` stops each family after its step `N`
//! (`--scale vertices --up-to 10000`).

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use meta_utl_mcp::service::delta_sc::Fingerprint;
use meta_utl_mcp::store::{DbPath, Store};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;
use uuid::Uuid;

use super::{Proc, call, percentile, pipelined, populate_events, startup, support};

/// One measured point of a curve.
struct Point {
    size: usize,
    cells: Vec<String>,
}

/// The largest step to run: the value of `--up-to N`, or every step.
fn up_to() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--up-to")
        .and_then(|i| args.get(i + 1))
        .map_or(usize::MAX, |n| {
            n.parse().expect("--up-to takes a number of items")
        })
}

fn us(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}

/// p50 and p95 of `n` one-at-a-time calls of `line(i)`.
fn round_trips(p: &mut Proc, n: usize, line: impl Fn(usize) -> String) -> (Duration, Duration) {
    let mut lat: Vec<Duration> = (0..n).map(|i| p.round_trip(&line(i))).collect();
    lat.sort();
    (percentile(&lat, 0.5), percentile(&lat, 0.95))
}

fn file_mb(db: &Path) -> String {
    let size: u64 = ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    format!("{:.1}", size as f64 / 1e6)
}

fn print_table(title: &str, size_name: &str, header: &[&str], points: &[Point]) {
    println!("\n**{title}**\n");
    println!("| {size_name} | {} |", header.join(" | "));
    println!("|---:|{}", "---:|".repeat(header.len()));
    for p in points {
        println!("| {} | {} |", p.size, p.cells.join(" | "));
    }
}

fn events(dir: &Path, quick: bool) {
    let db = dir.join("events.db");
    let sizes: &[usize] = if quick {
        &[1_000, 10_000, 100_000]
    } else {
        &[1_000, 10_000, 100_000, 1_000_000]
    };
    let samples = if quick { 200 } else { 1_000 };
    let mut stored = 0;
    let mut points = Vec::new();
    let last = up_to();
    for &size in sizes.iter().filter(|&&s| s <= last) {
        populate_events(&db, size - stored);
        stored = size;
        let mut cells = Vec::new();
        let mut p = Proc::start(&db);
        let status = json!({"include_embedder_breakdown": true});
        let reads = (0..10 * samples as u64)
            .map(|i| call(i, "get_meta_learning_status", &status))
            .collect();
        cells.push(format!("{:.0}", pipelined(&mut p, reads)));
        let (p50, p95) = round_trips(&mut p, samples, |i| {
            call(i as u64, "get_meta_learning_status", &status)
        });
        cells.extend([us(p50), us(p95)]);
        let filtered = json!({"event_type": "accuracy_alert", "domain": "code",
            "start_time": (Utc::now() - chrono::Duration::days(30)).to_rfc3339(),
            "limit": 100, "offset": 100});
        let (p50, p95) = round_trips(&mut p, 200, |i| {
            call(i as u64, "get_meta_learning_log", &filtered)
        });
        cells.extend([us(p50), us(p95)]);
        let newest = json!({"limit": 100});
        let (p50, p95) = round_trips(&mut p, 200, |i| {
            call(i as u64, "get_meta_learning_log", &newest)
        });
        cells.extend([us(p50), us(p95)]);
        // Writes last: each prediction adds about two events, which the next step counts in.
        let writes = (0..5 * samples as u64)
            .map(|i| {
                call(
                    i,
                    "record_prediction",
                    &json!({"embedder_index": i % 13,
                    "predicted": 0.8, "actual": 0.55, "delta_s": 0.6, "delta_c": 0.3}),
                )
            })
            .collect();
        cells.push(format!("{:.0}", pipelined(&mut p, writes)));
        let (p50, _) = round_trips(&mut p, samples, |i| {
            call(
                i as u64,
                "record_prediction",
                &json!({"embedder_index": i % 13,
                "predicted": 0.7, "actual": 0.6}),
            )
        });
        cells.push(us(p50));
        cells.push(format!(
            "{:.1}",
            p.peak_rss_kib().unwrap_or(0) as f64 / 1024.0
        ));
        drop(p);
        let mut start = startup(&db, 10);
        start.sort();
        cells.push(us(percentile(&start, 0.5)));
        cells.push(file_mb(&db));
        points.push(Point { size, cells });
    }
    print_table(
        "Stored meta-learning events",
        "events",
        &[
            "(a) status pipelined, calls/s",
            "(b) status p50 µs",
            "(b) p95 µs",
            "log type+domain+time p50 µs",
            "p95 µs",
            "log newest 100 p50 µs",
            "p95 µs",
            "(c) record_prediction pipelined, calls/s",
            "(c) one at a time p50 µs",
            "peak RSS MB",
            "start-up p50 µs",
            "file MB",
        ],
        &points,
    );
}

fn populate_lessons(db: &Path, from: usize, to: usize, rng: &mut StdRng) {
    let store = Store::open(&DbPath::File(db.to_path_buf())).unwrap();
    support::put_lessons(&store, from..to, 100, rng);
    if let Some((model, dimension)) = model_under_test() {
        // Random unit vectors under the server's model id: the server then has nothing to
        // back-fill, and a check costs what it would with real vectors.
        support::put_random_vectors(&store, &model, dimension, rng);
    }
}

/// With `META_UTL_EMBEDDING_MODEL=DIR` the server matches with that model: its id (the
/// folder's name) and dimension (`hidden_size` in its `config.json`).
fn model_under_test() -> Option<(String, usize)> {
    let dir =
        std::env::var_os("META_UTL_EMBEDDING_MODEL").filter(|d| !d.is_empty() && d != "off")?;
    let dir = Path::new(&dir);
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).ok()?).ok()?;
    let dimension = config["hidden_size"].as_u64()? as usize;
    Some((dir.file_name()?.to_string_lossy().into_owned(), dimension))
}

fn lessons(dir: &Path, quick: bool) {
    let db = dir.join("lessons.db");
    let sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    let samples = if quick { 200 } else { 1_000 };
    let mut rng = StdRng::seed_from_u64(0x5ca1e);
    let mut stored = 0;
    let mut points = Vec::new();
    let last = up_to();
    for &size in sizes.iter().filter(|&&s| s <= last) {
        populate_lessons(&db, stored, size, &mut rng);
        stored = size;
        let mut p = Proc::start(&db);
        let mut cells = Vec::new();
        // Task 0 holds lessons 0..100; lesson 7's strategy ends in "#7". The miss and the
        // related query differ at every call, so that no cached embedding answers them.
        let hit = |_: usize| json!({"task_id": "task-0", "strategy": "anything #7"});
        let miss = |i: usize| {
            json!({"task_id": "task-0",
                   "strategy": format!("an approach nobody has tried yet, variant {i}")})
        };
        let related = |i: usize| {
            json!({"task_id": "task-0",
                   "strategy": format!("retry the network call with a cache, variant {i}"),
                   "include_related": true})
        };
        let cases: [&dyn Fn(usize) -> serde_json::Value; 3] = [&hit, &miss, &related];
        for args in cases {
            let (p50, p95) = round_trips(&mut p, samples, |i| {
                call(i as u64, "check_strategy_blacklist", &args(i))
            });
            cells.extend([us(p50), us(p95)]);
        }
        let logs = (0..samples as u64)
            .map(|i| {
                call(
                    i,
                    "log_lesson_learned",
                    &json!({"task_id": format!("new-{size}"),
                    "strategy_description": format!("a fresh strategy number {i}"),
                    "rca_summary": "root cause: measured under load", "failure_type": "LOGIC_ERROR",
                    "source_agent": "scale"}),
                )
            })
            .collect();
        cells.push(format!("{:.0}", pipelined(&mut p, logs)));
        cells.push(format!(
            "{:.1}",
            p.peak_rss_kib().unwrap_or(0) as f64 / 1024.0
        ));
        cells.push(file_mb(&db));
        drop(p);
        points.push(Point { size, cells });
    }
    let title = match model_under_test() {
        Some((model, _)) => format!("Stored lessons (embedding matcher, {model})"),
        None => "Stored lessons (lexical matcher)".to_owned(),
    };
    print_table(
        &title,
        "lessons",
        &[
            "check (match) p50 µs",
            "p95 µs",
            "check (no match) p50 µs",
            "p95 µs",
            "check include_related p50 µs",
            "p95 µs",
            "log_lesson_learned pipelined, calls/s",
            "peak RSS MB",
            "file MB",
        ],
        &points,
    );
}

fn vertices(dir: &Path, quick: bool) {
    let db = dir.join("vertices.db");
    let sizes: &[usize] = if quick {
        &[1_000, 3_000]
    } else {
        &[1_000, 3_000, 10_000, 30_000, 100_000]
    };
    let samples = if quick { 50 } else { 200 };
    let mut rng = StdRng::seed_from_u64(42);
    // A few full fingerprints stored under many ids, each with its own E1 row (the vector the
    // nearest-neighbour scan reads), so building 10,000 stays quick.
    let templates: Vec<Fingerprint> = (0..16).map(|_| support::fingerprint(&mut rng)).collect();
    let args = json!({
        "vertex_id": Uuid::from_u128(u128::MAX).to_string(),
        "old_fingerprint": support::fingerprint_json(&support::fingerprint(&mut rng)),
        "new_fingerprint": support::fingerprint_json(&support::fingerprint(&mut rng)),
        "persist": false
    });
    let line = call(1, "gwt_compute_delta_sc", &args);
    let mut stored = 0;
    let mut points = Vec::new();
    let last = up_to();
    for &size in sizes.iter().filter(|&&s| s <= last) {
        let store = Store::open(&DbPath::File(db.clone())).unwrap();
        // One transaction per 10,000 vertices keeps the WAL (53 KB per vertex) bounded.
        for from in (stored..size).step_by(10_000) {
            support::put_vertices(&store, from..size.min(from + 10_000), &templates, &mut rng);
        }
        drop(store);
        stored = size;
        let mut p = Proc::start(&db);
        let first = Instant::now();
        p.round_trip(&line); // loads the vertex cache
        let first = first.elapsed();
        let (p50, p95) = round_trips(&mut p, samples, |_| line.clone());
        let cells = vec![
            us(p50),
            us(p95),
            format!("{:.0}", first.as_secs_f64() * 1e3),
            format!("{:.1}", p.peak_rss_kib().unwrap_or(0) as f64 / 1024.0),
            file_mb(&db),
        ];
        drop(p);
        points.push(Point { size, cells });
    }
    println!(
        "\n(d) request: two full fingerprints, {} KB of JSON.",
        line.len() / 1000
    );
    print_table(
        "Stored vertices (full fingerprints)",
        "vertices",
        &[
            "(d) gwt_compute_delta_sc p50 µs",
            "p95 µs",
            "first call ms",
            "peak RSS MB",
            "file MB",
        ],
        &points,
    );
}

/// Run every curve and print one Markdown table per family.
pub fn run(quick: bool) {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    // `--scale lessons` (or `events`, `vertices`) runs one family; none named runs all three.
    let named: Vec<String> = std::env::args()
        .filter(|a| ["events", "lessons", "vertices"].contains(&a.as_str()))
        .collect();
    let wanted = |f: &str| named.is_empty() || named.iter().any(|n| n == f);
    if wanted("events") {
        events(dir.path(), quick);
    }
    if wanted("lessons") {
        lessons(dir.path(), quick);
    }
    if wanted("vertices") {
        vertices(dir.path(), quick);
    }
    eprintln!("scale curves took {:.0} s", t.elapsed().as_secs_f64());
}

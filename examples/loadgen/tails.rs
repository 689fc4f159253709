//! Tail latency of every durable write tool, one call at a time over stdio.
//!
//! `cargo run --release --example loadgen -- --tails [--quick] [--n N] [--only TOOL] [--ab BIN] [--slow-us US]`
//!
//! For each write tool of `tools/list` (annotation `readOnlyHint: false`), one fresh server on
//! a fresh database file, a warm-up of 50 calls, then `N` calls (3,000 by default, 500 with
//! `--quick`), each sent after the previous answer arrived. Every answer of a write leaves
//! only after its `COMMIT`, so each round trip includes the commit and whatever the commit
//! triggers (a WAL checkpoint, an FTS5 segment merge). Arguments are the tool's published
//! example, varied per call where the example would otherwise rewrite one row
//! (`log_lesson_learned`, `record_directive`, `set_lesson_active`, `epistemic_action`,
//! `record_prediction`), so that the tables and the FTS5 index grow as in real use.
//!
//! Prints p50, p90, p99, p99.9 and the maximum in µs, and the ratios p99/p50 and p99.9/p50
//! (targets: ≤ 3 and ≤ 10). On a machine shared with other builds much of the tail is time
//! slices lost to them, which is why `--ab` exists: compare builds in one run, not runs.
//!
//! `--slow-us US` also prints, on stderr, each measured call that took longer than `US` µs: the
//! tool, when it was sent (`CLOCK_MONOTONIC`, in seconds) and how long it took, so that slow
//! calls can be matched with a system trace taken meanwhile on the same clock, for example
//! `perf record -a -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup
//! -e syscalls:sys_enter_fsync -e syscalls:sys_exit_fsync -g` (docs/PERFORMANCE.md shows what
//! that found).
//!
//! `--ab BIN` runs the same calls against the server binary `BIN` too (another build, on its
//! own database), alternating blocks of 100 calls between the two, so that both see the same
//! host load; its rows are marked "(B)".

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Proc, binary, call, examples, percentile};

/// The arguments of call `i` of `tool`: its example, varied where a repeated example would
/// rewrite the same row.
fn args(tool: &str, example: &Value, i: u64) -> Value {
    let mut a = example.clone();
    match tool {
        "log_lesson_learned" => {
            a["strategy_description"] = json!(format!(
                "Mock the database layer in integration tests, variant {i} of the plan"
            ));
            a["task_id"] = json!(format!("TASK-{}", i / 20));
        }
        "set_lesson_active" => {
            a["active"] = json!(i % 2 == 1);
        }
        "record_directive" => {
            a["task_id"] = json!(format!("TASK-{}", i / 20));
        }
        "epistemic_action" => {
            a["target"] = json!(format!("The login test fails for reason {i}"));
        }
        "record_prediction" => {
            a = json!({"embedder_index": i % 13, "predicted": 0.7, "actual": 0.6,
                       "delta_s": 0.5, "delta_c": 0.4});
        }
        _ => {}
    }
    a
}

/// One server under test: its process and the round trips measured.
struct Subject {
    proc: Proc,
    wall: Vec<Duration>,
}

impl Subject {
    fn start(bin: &Path, db: &Path, name: &str, example: &Value) -> Subject {
        let mut proc = Proc::start_bin(bin, db);
        for i in 0..50 {
            proc.round_trip(&call(i, name, &args(name, example, i)));
        }
        Subject {
            proc,
            wall: Vec::new(),
        }
    }

    /// Call `name` once and record the round trip; past `slow`, print it (see the module doc).
    fn measure(&mut self, name: &str, example: &Value, i: u64, slow: Option<Duration>) {
        let line = call(i, name, &args(name, example, i));
        let sent = monotonic_seconds();
        let t = Instant::now();
        self.proc.send(&line);
        self.proc.recv();
        let took = t.elapsed();
        if slow.is_some_and(|s| took > s) {
            eprintln!(
                "slow call: {name} sent at {sent:.6} s (CLOCK_MONOTONIC) took {:.0} µs",
                took.as_secs_f64() * 1e6
            );
        }
        self.wall.push(took);
    }
}

/// Now on `CLOCK_MONOTONIC`, the clock `perf record -k CLOCK_MONOTONIC` stamps events with, in
/// seconds.
fn monotonic_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn row(label: &str, mut lat: Vec<Duration>) {
    lat.sort();
    let p = |q| percentile(&lat, q).as_secs_f64() * 1e6;
    let (p50, p99, p999) = (p(0.5), p(0.99), p(0.999));
    println!(
        "| {label} | {} | {p50:.0} | {:.0} | {p99:.0} | {p999:.0} | {:.0} | {:.1} | {:.1} |",
        lat.len(),
        p(0.9),
        lat.last().unwrap().as_secs_f64() * 1e6,
        p99 / p50,
        p999 / p50,
    );
}

/// Run the tails table; `only` restricts it to one tool, `other` adds an A/B subject, `slow`
/// prints the calls slower than it.
pub(super) fn run(
    quick: bool,
    n: Option<usize>,
    only: Option<&str>,
    other: Option<&Path>,
    slow: Option<Duration>,
) {
    let n = n.unwrap_or(if quick { 500 } else { 3_000 });
    let dir = tempfile::tempdir().unwrap();
    let tools = {
        let mut p = Proc::start(&dir.path().join("list.db"));
        examples(&mut p)
    };
    println!(
        "| write tool (one at a time, durable) | n | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | p99/p50 | p99.9/p50 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, example, read_only) in tools {
        if read_only || only.is_some_and(|o| o != name) {
            continue;
        }
        let mut subjects = vec![(
            "",
            Subject::start(
                &binary(),
                &dir.path().join(format!("{name}.db")),
                &name,
                &example,
            ),
        )];
        if let Some(bin) = other {
            let db = dir.path().join(format!("{name}-b.db"));
            subjects.push((" (B)", Subject::start(bin, &db, &name, &example)));
        }
        for block in (50..50 + n as u64).collect::<Vec<_>>().chunks(100) {
            for (_, s) in &mut subjects {
                for &i in block {
                    s.measure(&name, &example, i, slow);
                }
            }
        }
        for (mark, s) in subjects {
            row(&format!("{name}{mark}"), s.wall);
        }
    }
}

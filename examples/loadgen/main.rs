//! Stdio load generator: starts the release binary on a temporary database and drives it like a
//! client, printing throughput, latency percentiles and peak RSS as a Markdown table.
//!
//! ```text
//! cargo build --release && cargo run --release --example loadgen -- [--quick]
//! cargo build --release && cargo run --release --example loadgen -- --scale [--quick]
//! cargo build --release && cargo run --release --example loadgen -- --startup [--rmcp BIN] [--ab BIN] [--n N]
//! cargo build --release && cargo run --release --example loadgen -- --tails [--quick] [--n N] [--only TOOL] [--ab OTHER_BINARY] [--slow-us US]
//! cargo build --release && cargo run --release --example loadgen -- --backends postgres://USER@HOST:PORT [--quick]
//! ```
//!
//! `--scale` prints the scale curves instead (see [`scale`]); `--tails` the tail latencies of
//! every durable write tool (see [`tails`]); `--startup` start-up beside the minimal rmcp
//! server (see [`rmcp_startup`]); `--backends` SQLite beside PostgreSQL (see [`backends`]).
//!
//! Scenarios: (a) pipelined read calls, (b) one-at-a-time read round trips, (c) durable writes,
//! pipelined and one at a time, (d) every other listed write tool with its published example,
//! (e) a mixed workload, start-up to first answer on an empty database and on one holding
//! 1,000,000 events, and a filtered log query over those events. Seeded; Linux only for RSS.

// The Markdown tables on stdout are this program's output.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use meta_utl_mcp::service::meta::{Event, EventType};
use meta_utl_mcp::service::vocab::{Domain, Lambdas};
use meta_utl_mcp::store::{DbPath, Store, meta as meta_store};
use serde_json::{Value, json};

mod backends;
mod rmcp_startup;
mod scale;
#[path = "../../benches/support/mod.rs"]
mod support;
mod tails;

struct Proc {
    child: Child,
    /// `None` only while a pipelined writer thread owns it.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/release/examples/loadgen → target/release/meta-utl-mcp
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("meta-utl-mcp");
    assert!(
        bin.exists(),
        "build the server first: cargo build --release ({})",
        bin.display()
    );
    bin
}

impl Proc {
    fn start(db: &Path) -> Proc {
        Proc::start_bin(&binary(), db)
    }

    /// Start the server binary `bin` (another build, for an A/B run) on `db`.
    fn start_bin(bin: &Path, db: &Path) -> Proc {
        Proc::spawn(Command::new(bin).arg("--db").arg(db))
    }

    /// Start a server binary that takes no arguments (the rmcp yardstick).
    fn start_plain(bin: &Path) -> Proc {
        Proc::spawn(&mut Command::new(bin))
    }

    fn spawn(command: &mut Command) -> Proc {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server");
        Proc {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).expect("JSON response");
        assert!(v.get("error").is_none(), "request failed: {line}");
        v
    }

    fn round_trip(&mut self, line: &str) -> Duration {
        let t = Instant::now();
        self.send(line);
        self.recv();
        t.elapsed()
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    }

    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(id: u64, name: &str, args: &Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}})
        .to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

struct Row {
    scenario: String,
    n: usize,
    throughput: Option<f64>,
    p50: Option<Duration>,
    p95: Option<Duration>,
    p99: Option<Duration>,
    rss_kib: Option<u64>,
}

fn latency_row(scenario: &str, mut lat: Vec<Duration>, rss: Option<u64>) -> Row {
    lat.sort();
    let total: Duration = lat.iter().sum();
    Row {
        scenario: scenario.into(),
        n: lat.len(),
        throughput: Some(lat.len() as f64 / total.as_secs_f64()),
        p50: Some(percentile(&lat, 0.5)),
        p95: Some(percentile(&lat, 0.95)),
        p99: Some(percentile(&lat, 0.99)),
        rss_kib: rss,
    }
}

/// Send `lines` all at once from a writer thread and read every answer; returns calls/s.
fn pipelined(p: &mut Proc, lines: Vec<String>) -> f64 {
    let n = lines.len();
    let mut stdin = p.stdin.take().expect("stdin");
    let t = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut buf = Vec::new();
        for l in lines {
            buf.extend_from_slice(l.as_bytes());
            buf.push(b'\n');
        }
        stdin.write_all(&buf).unwrap();
        stdin.flush().unwrap();
        stdin
    });
    for _ in 0..n {
        p.recv();
    }
    let elapsed = t.elapsed();
    p.stdin = Some(writer.join().unwrap());
    n as f64 / elapsed.as_secs_f64()
}

fn examples(p: &mut Proc) -> Vec<(String, Value, bool)> {
    p.send(r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#);
    let list = p.recv();
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                meta_utl_mcp::tools::find(t["name"].as_str().unwrap())
                    .map(|tool| (tool.example)())
                    .unwrap_or(Value::Null),
                t["annotations"]["readOnlyHint"] == json!(true),
            )
        })
        .collect()
}

fn populate_events(db: &Path, n: usize) {
    let store = Store::open(&DbPath::File(db.to_path_buf())).unwrap();
    let start = Utc::now() - chrono::Duration::days(60);
    let l = Lambdas::pair(0.5, 0.5);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for chunk in 0..n.div_ceil(100_000) {
        store
            .write(|db| {
                let events: Vec<Event> = (0..100_000.min(n - chunk * 100_000))
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let k = chunk * 100_000 + i;
                        Event {
                            timestamp: start + chrono::Duration::milliseconds(k as i64 * 5000),
                            event_type: EventType::ALL[(x % 7) as usize],
                            prediction_error: Some(0.3),
                            lambda_before: l,
                            lambda_after: l,
                            accuracy_avg: Some(0.8),
                            escalated: false,
                            domain: Some(Domain::ALL[((x >> 8) % 6) as usize]),
                            embedder_index: Some((x % 13) as u8),
                            detail: String::new(),
                        }
                    })
                    .collect();
                meta_store::insert_events(db, &events)
            })
            .unwrap();
    }
}

fn startup(db: &Path, runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            let mut p = Proc::start(db);
            p.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_meta_learning_status","arguments":{}}}"#);
            p.recv();
            t.elapsed()
        })
        .collect()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--scale") {
        scale::run(quick);
        return;
    }
    let value = |flag: &str| {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    if let Some(server) = value("--backends") {
        backends::run(&server, quick);
        return;
    }
    if std::env::args().any(|a| a == "--startup") {
        let n = value("--n").map_or(50, |v| v.parse().expect("--n takes a count"));
        rmcp_startup::run(
            value("--rmcp").map(PathBuf::from).as_deref(),
            value("--ab").map(PathBuf::from).as_deref(),
            n,
        );
        return;
    }
    if std::env::args().any(|a| a == "--tails") {
        let n = value("--n").map(|v| v.parse().expect("--n takes a count"));
        let other = value("--ab").map(PathBuf::from);
        let slow = value("--slow-us").map(|v| {
            Duration::from_micros(v.parse().expect("--slow-us takes a count of microseconds"))
        });
        tails::run(quick, n, value("--only").as_deref(), other.as_deref(), slow);
        return;
    }
    let scale = if quick { 10 } else { 1 };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("load.db");
    let mut rows = Vec::new();

    let empty_start = startup(&dir.path().join("empty.db"), 20 / scale.min(20));
    rows.push(latency_row(
        "start-up to first answer, empty database",
        empty_start,
        None,
    ));

    let mut p = Proc::start(&db);
    p.round_trip(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
    let idle = p.rss_kib();
    rows.push(Row {
        scenario: "idle RSS after start-up".into(),
        n: 1,
        throughput: None,
        p50: None,
        p95: None,
        p99: None,
        rss_kib: idle,
    });
    let status = json!({"include_embedder_breakdown": true});

    // (c) durable writes first, so the reads below see a populated state.
    let n = 20_000 / scale;
    let writes: Vec<String> = (0..n as u64)
        .map(|i| call(i, "record_prediction", &json!({"embedder_index": i % 13, "predicted": 0.8, "actual": 0.55, "delta_s": 0.6, "delta_c": 0.3})))
        .collect();
    let tput = pipelined(&mut p, writes);
    rows.push(Row {
        scenario: "(c) record_prediction, pipelined (durable)".into(),
        n,
        throughput: Some(tput),
        p50: None,
        p95: None,
        p99: None,
        rss_kib: p.peak_rss_kib(),
    });
    let lat: Vec<Duration> = (0..2000 / scale as u64)
        .map(|i| {
            p.round_trip(&call(
                i,
                "record_prediction",
                &json!({"embedder_index": i % 13, "predicted": 0.7, "actual": 0.6}),
            ))
        })
        .collect();
    rows.push(latency_row(
        "(c) record_prediction, one at a time",
        lat,
        p.peak_rss_kib(),
    ));

    // (a) pipelined reads, (b) one-at-a-time reads.
    let n = 50_000 / scale;
    let reads: Vec<String> = (0..n as u64)
        .map(|i| call(i, "get_meta_learning_status", &status))
        .collect();
    let tput = pipelined(&mut p, reads);
    rows.push(Row {
        scenario: "(a) get_meta_learning_status, pipelined".into(),
        n,
        throughput: Some(tput),
        p50: None,
        p95: None,
        p99: None,
        rss_kib: p.peak_rss_kib(),
    });
    let lat: Vec<Duration> = (0..5000 / scale as u64)
        .map(|i| p.round_trip(&call(i, "get_meta_learning_status", &status)))
        .collect();
    rows.push(latency_row(
        "(b) get_meta_learning_status, one at a time",
        lat,
        p.peak_rss_kib(),
    ));
    let lat: Vec<Duration> = (0..5000 / scale as u64)
        .map(|i| p.round_trip(&json!({"jsonrpc":"2.0","id":i,"method":"ping"}).to_string()))
        .collect();
    rows.push(latency_row(
        "(b) ping, one at a time",
        lat,
        p.peak_rss_kib(),
    ));

    // (d) every other tool with its published example, one at a time.
    for (name, example, _read_only) in examples(&mut p) {
        if name == "record_prediction" || name == "get_meta_learning_status" {
            continue;
        }
        let lat: Vec<Duration> = (0..500 / scale as u64)
            .map(|i| {
                let t = Instant::now();
                p.send(&call(i, &name, &example));
                let mut line = String::new();
                p.stdout.read_line(&mut line).unwrap();
                t.elapsed()
            })
            .collect();
        rows.push(latency_row(
            &format!("(d) {name} (example args), one at a time"),
            lat,
            p.peak_rss_kib(),
        ));
    }

    // (e) mixed: 4 reads per write, pipelined.
    let n = 20_000 / scale;
    let mixed: Vec<String> = (0..n as u64)
        .map(|i| {
            if i % 5 == 0 {
                call(
                    i,
                    "record_prediction",
                    &json!({"embedder_index": i % 13, "predicted": 0.6, "actual": 0.5}),
                )
            } else if i % 5 == 1 {
                call(i, "get_meta_learning_log", &json!({"limit": 20}))
            } else {
                call(i, "get_meta_learning_status", &status)
            }
        })
        .collect();
    let tput = pipelined(&mut p, mixed);
    rows.push(Row {
        scenario: "(e) mixed 1 write : 4 reads, pipelined".into(),
        n,
        throughput: Some(tput),
        p50: None,
        p95: None,
        p99: None,
        rss_kib: p.peak_rss_kib(),
    });
    drop(p);

    // Log query and start-up over 1,000,000 stored events.
    let big = dir.path().join("events.db");
    let n_events = 1_000_000 / scale;
    populate_events(&big, n_events);
    let mut p = Proc::start(&big);
    let q = json!({"event_type": "accuracy_alert", "domain": "code",
                   "start_time": (Utc::now() - chrono::Duration::days(30)).to_rfc3339(), "limit": 100, "offset": 100});
    let lat: Vec<Duration> = (0..200)
        .map(|i| p.round_trip(&call(i, "get_meta_learning_log", &q)))
        .collect();
    rows.push(latency_row(
        &format!("log query (type+domain+time, offset 100) over {n_events} events, round trip"),
        lat,
        p.peak_rss_kib(),
    ));
    let q = json!({"limit": 100});
    let lat: Vec<Duration> = (0..200)
        .map(|i| p.round_trip(&call(i, "get_meta_learning_log", &q)))
        .collect();
    rows.push(latency_row(
        &format!("log query (no filter, newest 100) over {n_events} events, round trip"),
        lat,
        p.peak_rss_kib(),
    ));
    drop(p);
    rows.push(latency_row(
        &format!("start-up to first answer, {n_events} events"),
        startup(&big, 10),
        None,
    ));

    print_table(&rows);
}

/// Print `rows` as a Markdown table.
fn print_table(rows: &[Row]) {
    println!("| scenario | n | calls/s | p50 | p95 | p99 | peak RSS |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let fmt_d = |d: Option<Duration>| {
        d.map(|d| format!("{:.1} µs", d.as_secs_f64() * 1e6))
            .unwrap_or_else(|| "–".into())
    };
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.n,
            r.throughput
                .map(|t| format!("{t:.0}"))
                .unwrap_or_else(|| "–".into()),
            fmt_d(r.p50),
            fmt_d(r.p95),
            fmt_d(r.p99),
            r.rss_kib
                .map(|k| format!("{:.1} MB", k as f64 / 1024.0))
                .unwrap_or_else(|| "–".into()),
        );
    }
}

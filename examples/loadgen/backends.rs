//! `--backends SERVER_URL`: the same calls against a new SQLite file and a new PostgreSQL
//! database side by side, in one run (issue 19's figures): start-up to the first answer on a
//! new database, durable writes pipelined and one at a time, and the blacklist check.
//!
//! `SERVER_URL` is a PostgreSQL server without a database, e.g.
//! `postgres://postgres@127.0.0.1:5432`; each run creates databases named
//! `loadgen_<pid>_<n>` there and drops them afterwards.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Proc, Row, call, latency_row, pipelined};

/// A fresh database on the server: created now, dropped when this is dropped.
struct PgDb {
    server: String,
    name: String,
}

impl PgDb {
    fn create(server: &str, n: usize) -> PgDb {
        let name = format!("loadgen_{}_{n}", std::process::id());
        admin(server, &format!("CREATE DATABASE {name}"));
        PgDb {
            server: server.trim_end_matches('/').to_string(),
            name,
        }
    }

    fn url(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        admin(
            &self.server,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

fn admin(server: &str, sql: &str) {
    let url = format!("{}/postgres", server.trim_end_matches('/'));
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect to the server");
    c.batch_execute(sql).expect(sql);
}

fn start(db: &str) -> Proc {
    Proc::start(Path::new(db))
}

fn first_answer(db: &str) -> Duration {
    let t = Instant::now();
    let mut p = start(db);
    p.send(&call(1, "get_meta_learning_status", &json!({})));
    p.recv();
    t.elapsed()
}

fn measure(label: &str, db: &dyn Fn(usize) -> String, n: usize, rows: &mut Vec<Row>) {
    // Start-up on a new database, `n / 100` times (at least 5).
    let starts: Vec<Duration> = (0..(n / 100).max(5))
        .map(|k| first_answer(&db(k + 1)))
        .collect();
    rows.push(latency_row(
        &format!("{label}: start-up to first answer, new database"),
        starts,
        None,
    ));

    let target = db(0);
    let mut p = start(&target);
    p.round_trip(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
    let writes: Vec<String> = (0..n as u64)
        .map(|i| {
            call(
                i,
                "record_prediction",
                &json!({"embedder_index": i % 13, "predicted": 0.8, "actual": 0.55}),
            )
        })
        .collect();
    let tput = pipelined(&mut p, writes);
    rows.push(Row {
        scenario: format!("{label}: record_prediction, pipelined (durable)"),
        n,
        throughput: Some(tput),
        p50: None,
        p95: None,
        p99: None,
        rss_kib: p.peak_rss_kib(),
    });
    let one = |p: &mut Proc, tool: &str, args: &dyn Fn(u64) -> serde_json::Value| {
        (0..(n / 10) as u64)
            .map(|i| p.round_trip(&call(i, tool, &args(i))))
            .collect::<Vec<_>>()
    };
    let lat = one(
        &mut p,
        "record_prediction",
        &|i| json!({"embedder_index": i % 13, "predicted": 0.8, "actual": 0.55}),
    );
    rows.push(latency_row(
        &format!("{label}: record_prediction, one at a time"),
        lat,
        None,
    ));
    let lat = one(&mut p, "log_lesson_learned", &|i| {
        json!({"task_id": format!("task-{}", i % 50), "strategy_description": format!("retry the flaky step {i} times with a longer timeout"),
               "rca_summary": "the step fails for another reason", "failure_type": "LOGIC_ERROR", "source_agent": "loadgen"})
    });
    rows.push(latency_row(
        &format!("{label}: log_lesson_learned, one at a time"),
        lat,
        None,
    ));
    let lat = one(
        &mut p,
        "check_strategy_blacklist",
        &|i| json!({"task_id": format!("task-{}", i % 50), "strategy": format!("retry the flaky step {} times with a longer timeout", i + 7)}),
    );
    rows.push(latency_row(
        &format!("{label}: check_strategy_blacklist, one at a time"),
        lat,
        None,
    ));
    let lat = one(&mut p, "get_meta_learning_status", &|_| json!({}));
    rows.push(latency_row(
        &format!("{label}: get_meta_learning_status, one at a time"),
        lat,
        None,
    ));
}

/// Run both backends and print one table.
pub(super) fn run(server: &str, quick: bool) {
    let n = if quick { 1000 } else { 10_000 };
    let mut rows = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = |k: usize| dir.path().join(format!("db{k}.db")).display().to_string();
    measure("SQLite", &sqlite, n, &mut rows);
    let made = std::cell::RefCell::new(Vec::new());
    let pg = |k: usize| {
        let db = PgDb::create(server, k);
        let url = db.url();
        made.borrow_mut().push(db);
        url
    };
    measure("PostgreSQL", &pg, n, &mut rows);
    drop(made);
    super::print_table(&rows);
}

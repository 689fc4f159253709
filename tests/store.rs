//! Persistence on the real binary: restart, several processes on one file, kill -9, bad
//! databases, file permissions, and event retention.

mod common;

use std::process::Stdio;

use common::{Backend, Server, pipe};
use serde_json::{Value, json};

common::both_backends!(
    state_and_log_are_identical_after_a_restart,
    two_processes_lose_no_update,
    eight_processes_lose_no_update,
    kill_9_loses_nothing_that_was_answered,
    several_servers_creating_one_new_database_at_once_all_start,
    piped_writes_answer_exactly_as_one_at_a_time,
);

fn state_and_log_are_identical_after_a_restart(backend: Backend) {
    let mut s = Server::start_on(backend);
    for i in 0..40 {
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i % 13, "predicted": 0.9, "actual": 0.35, "delta_s": 0.7, "delta_c": 0.2, "domain": "code"}),
        );
    }
    s.tool_ok(
        "trigger_lambda_recalibration",
        json!({"force_bayesian": true}),
    );
    s.tool_ok(
        "reset_meta_learning",
        json!({"scope": "escalation", "rationale": "checked"}),
    );
    let args = json!({"include_accuracy_history": true, "include_embedder_breakdown": true});
    let before = s.tool_ok("get_meta_learning_status", args.clone());
    let log_before = s.tool_ok("get_meta_learning_log", json!({"limit": 1000}));
    let mut s = s.restart();
    let mut after = s.tool_ok("get_meta_learning_status", args);
    let log_after = s.tool_ok("get_meta_learning_log", json!({"limit": 1000}));
    after["recent_events_count"] = before["recent_events_count"].clone();
    assert_eq!(before, after);
    assert_eq!(log_before["events"], log_after["events"]);
    assert_eq!(log_before["total_count"], log_after["total_count"]);
}

fn concurrent_processes(backend: Backend, processes: usize, per_process: usize) {
    let fresh = backend.fresh();
    let db = fresh.target.clone();
    // Create the schema once so the processes race on writes, not on migrations.
    let (status, _, _) = pipe(&db, b"");
    assert!(status.success());
    let handles: Vec<_> = (0..processes)
        .map(|p| {
            let db = db.clone();
            std::thread::spawn(move || {
                let input: String = (0..per_process)
                    .map(|i| common::record_line(i, p + i) + "\n")
                    .collect();
                pipe(&db, input.as_bytes())
            })
        })
        .collect();
    for h in handles {
        let (status, lines, stderr) = h.join().unwrap();
        assert!(status.success(), "{stderr}");
        assert_eq!(lines.len(), per_process);
        for l in lines {
            let v: Value = serde_json::from_str(&l).unwrap();
            assert!(v.get("result").is_some(), "a write failed: {l}");
        }
        assert!(!stderr.contains("locked"), "{stderr}");
    }
    let mut s = Server::start_at(&db, &[]);
    let st = s.tool_ok("get_meta_learning_status", json!({}));
    assert_eq!(st["interaction_count"], json!(processes * per_process));
    // Every prediction has error 0.5 > 0.2, so each logged exactly one λ adjustment.
    let adj = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "lambda_adjustment", "limit": 1}),
    );
    let lifecycle_changes = if processes * per_process >= 50 { 1 } else { 0 };
    assert_eq!(
        adj["total_count"],
        json!(processes * per_process + lifecycle_changes)
    );
}

fn two_processes_lose_no_update(backend: Backend) {
    concurrent_processes(backend, 2, 100);
}

fn eight_processes_lose_no_update(backend: Backend) {
    concurrent_processes(backend, 8, 40);
}

fn kill_9_loses_nothing_that_was_answered(backend: Backend) {
    let fresh = backend.fresh();
    let db = fresh.target.clone();
    let answered = common::write_until_killed(&db, 300);
    let mut s = Server::start_at(&db, &[]);
    let count = s.tool_ok("get_meta_learning_status", json!({}))["interaction_count"]
        .as_u64()
        .unwrap();
    assert!(
        count >= answered,
        "{answered} answered but only {count} stored"
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.db");
    let content = b"these are my notes, not a database\n".repeat(200);
    std::fs::write(&db, &content).unwrap();
    let (status, lines, stderr) = pipe(&db, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(status.code(), Some(2));
    common::at_most_the_ping_answer(&lines);
    assert!(
        stderr.contains("not a meta-utl-mcp database") && stderr.contains("notes.db"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), content);
}

#[test]
fn a_database_from_a_newer_version_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("future.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        // Ours (the application id is the ASCII of "MUTL"), from a newer binary.
        conn.execute_batch(
            "CREATE TABLE t (x); PRAGMA application_id = 1297437772; PRAGMA user_version = 999;",
        )
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let (status, _, stderr) = pipe(&db, b"");
    assert_eq!(status.code(), Some(2));
    assert!(stderr.contains("schema version 999"), "{stderr}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn an_unwritable_location_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    // A directory cannot be created below a regular file, even as root.
    let db = blocker.join("sub").join("state.db");
    let (status, _, stderr) = pipe(&db, b"");
    assert_eq!(status.code(), Some(2));
    assert!(
        stderr.contains("cannot open") && stderr.contains("--db"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn new_files_are_private_to_the_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data-home");
    let out = common::command()
        .env("XDG_DATA_HOME", &data)
        .env_remove("META_UTL_DB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app_dir = data.join("meta-utl-mcp");
    let db = app_dir.join("state.db");
    assert_eq!(
        std::fs::metadata(&app_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&db).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn old_events_are_deleted_at_start_up_and_nothing_else() {
    let mut s = Server::start();
    for i in 0..5 {
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i, "predicted": 0.9, "actual": 0.4}),
        );
    }
    let total = s.tool_ok("get_meta_learning_log", json!({}))["total_count"]
        .as_u64()
        .unwrap();
    let db = s.db.clone();
    let dir = s.kill();
    {
        // Age two events by 100 days, moving them between the hourly counts the store keeps
        // beside the log as it would have counted them.
        let conn = rusqlite::Connection::open(&db).unwrap();
        let old_us = (chrono::Utc::now() - chrono::Duration::days(100)).timestamp_micros();
        let hour_us: i64 = 3_600_000_000;
        conn.execute_batch(&format!(
            "UPDATE meta_event_hours SET n = n - (SELECT count(*) FROM meta_events
                 WHERE id <= 2 AND ts_us / {hour_us} = hour)
             WHERE hour IN (SELECT ts_us / {hour_us} FROM meta_events WHERE id <= 2);
             UPDATE meta_events SET ts_us = {old_us} WHERE id <= 2;
             INSERT INTO meta_event_hours (hour, n) VALUES ({old_us} / {hour_us}, 2);"
        ))
        .unwrap();
    }
    let mut s = Server::start_at(&db, &["--event-retention-days", "90"]);
    let log = s.tool_ok("get_meta_learning_log", json!({}));
    assert_eq!(log["total_count"], json!(total - 2));
    assert_eq!(
        s.tool_ok("get_meta_learning_status", json!({}))["interaction_count"],
        5
    );
    drop(dir);
}

#[test]
fn the_database_path_comes_from_the_flag_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("from-env.db");
    let out = common::command()
        .env("META_UTL_DB", &db)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(db.exists());
    let mut s = Server::start_at(std::path::Path::new(":memory:"), &[]);
    let st = s.tool_ok("get_meta_learning_status", json!({}));
    assert_eq!(st["database"], ":memory:");
}

fn several_servers_creating_one_new_database_at_once_all_start(backend: Backend) {
    for round in 0..10 {
        let fresh = backend.fresh();
        // On SQLite, in a folder that does not exist yet either.
        let db = match backend {
            Backend::Sqlite => fresh.target.with_file_name("new").join("state.db"),
            Backend::Postgres => fresh.target.clone(),
        };
        let handles: Vec<_> = (0..6)
            .map(|p| {
                let db = db.clone();
                std::thread::spawn(move || pipe(&db, (common::record_line(p, p) + "\n").as_bytes()))
            })
            .collect();
        for h in handles {
            let (status, lines, stderr) = h.join().unwrap();
            assert!(status.success(), "round {round}: {stderr}");
            assert_eq!(lines.len(), 1, "round {round}: {stderr}");
            assert!(
                lines[0].contains("\"result\""),
                "round {round}: {}",
                lines[0]
            );
        }
        let mut s = Server::start_at(&db, &[]);
        assert_eq!(
            s.tool_ok("get_meta_learning_status", json!({}))["interaction_count"],
            6
        );
    }
}

/// The requests of `piped_writes_answer_exactly_as_one_at_a_time`: valid predictions, invalid
/// ones (an argument error), a duplicate lesson (a structured failure) and reads between them.
fn mixed_requests() -> Vec<Value> {
    let lesson = json!({"task_id": "T-1", "strategy_description": "Retry the flaky network call",
        "rca_summary": "root cause: the server is down, not flaky", "failure_type": "LOGIC_ERROR",
        "source_agent": "agent-1"});
    let mut out = Vec::new();
    for i in 0..120usize {
        let args = match i % 10 {
            3 => json!({"embedder_index": 1, "predicted": 0.5, "actual": 2.0}),
            5 | 6 => lesson.clone(),
            _ => json!({"embedder_index": i % 13, "predicted": 0.9, "actual": (i % 7) as f64 / 7.0,
                        "delta_s": 0.6, "delta_c": 0.3}),
        };
        let name = if i % 10 == 5 || i % 10 == 6 {
            "log_lesson_learned"
        } else {
            "record_prediction"
        };
        out.push(json!({"name": name, "arguments": args}));
        if i % 25 == 24 {
            out.push(json!({"name": "get_meta_learning_status", "arguments": {}}));
        }
    }
    out
}

/// What a client sees of an answer, without the fields that differ between two runs
/// (lesson ids and times).
fn comparable(answer: &Value) -> Value {
    let mut a = answer.clone();
    if let Some(sc) = a
        .pointer_mut("/result/structuredContent")
        .and_then(Value::as_object_mut)
    {
        for volatile in [
            "lesson_id",
            "existing_lesson_id",
            "created_at",
            "last_adjustment_at",
            "database",
            "detail",
        ] {
            sc.remove(volatile);
        }
    }
    if let Some(r) = a.get_mut("result").and_then(Value::as_object_mut) {
        r.remove("content");
    }
    a
}

fn piped_writes_answer_exactly_as_one_at_a_time(backend: Backend) {
    // Piped all at once, writes share group commits; one at a time, each commits alone. A
    // client must not be able to tell: same answers, same stored state after a restart.
    let requests = mixed_requests();
    let (piped_fresh, sequential_fresh) = (backend.fresh(), backend.fresh());
    let piped_db = piped_fresh.target.clone();
    let input: String = requests
        .iter()
        .enumerate()
        .map(|(id, p)| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": p}).to_string()
                + "\n"
        })
        .collect();
    let (status, lines, _) = pipe(&piped_db, input.as_bytes());
    assert!(status.success());
    let mut piped: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    piped.sort_by_key(|v| v["id"].as_u64());
    assert_eq!(piped.len(), requests.len());

    let mut s = Server::start_at(&sequential_fresh.target, &[]);
    for (id, (p, got)) in requests.iter().zip(&piped).enumerate() {
        s.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": p}).to_string(),
        );
        let want = s.recv();
        assert_eq!(comparable(got), comparable(&want), "request {id}: {p}");
    }
    // Invalid arguments of a script without a handshake are tool results with isError and
    // the message as text (SEP-1303).
    let invalid = piped
        .iter()
        .filter(|v| v["result"]["isError"] == true && v["result"]["structuredContent"].is_null())
        .count();
    let duplicate = piped
        .iter()
        .filter(|v| v["result"]["structuredContent"]["error"] == "LESSON_ALREADY_EXISTS")
        .count();
    assert_eq!(
        (invalid, duplicate),
        (12, 23),
        "each failure answered alone"
    );

    // Everything answered was committed.
    let status_args = json!({"include_embedder_breakdown": true});
    let sequential = s.tool_ok("get_meta_learning_status", status_args.clone());
    let mut reopened = Server::start_at(&piped_db, &[]);
    let after = reopened.tool_ok("get_meta_learning_status", status_args);
    assert_eq!(after["interaction_count"], 84);
    for field in [
        "interaction_count",
        "current_lambdas",
        "current_accuracy",
        "adjustment_count",
    ] {
        assert_eq!(after[field], sequential[field], "{field}");
    }
}

#[test]
fn the_store_is_closed_cleanly_at_eof() {
    // The last connection checkpoints and removes the WAL file when it closes; a WAL left
    // behind means the process exited with the store still open.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let (status, lines, _) = pipe(&db, format!("{}\n", common::record_line(1, 3)).as_bytes());
    assert!(status.success());
    assert_eq!(lines.len(), 1);
    assert!(db.exists());
    assert!(!dir.path().join("state.db-wal").exists(), "WAL left behind");
}

//! The WAL is checkpointed by the server's background thread while it serves, and a new
//! database is created without leaving anything beside it (issue 18).

mod common;

use std::time::{Duration, Instant};

use common::Server;
use serde_json::json;

fn observations(n: usize, seed: usize) -> serde_json::Value {
    let obs: Vec<_> = (0..n)
        .map(|i| {
            let k = seed * n + i;
            json!({"confidence": (k % 97) as f64 / 100.0 + 0.01, "correct": !k.is_multiple_of(3),
                   "domain": "Code", "embedder_id": k % 13 + 1})
        })
        .collect();
    json!({ "observations": obs })
}

fn size(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

#[test]
fn committed_pages_reach_the_database_file_while_the_server_runs() {
    let mut s = Server::start();
    s.tool_ok("record_calibration_observations", observations(10, 0));
    let created = size(&s.db);
    let wal = s.db.with_file_name("state.db-wal");
    // Well past the 1,000 WAL pages that wake the checkpoint thread.
    let mut written = 0;
    for call in 1.. {
        s.tool_ok("record_calibration_observations", observations(5_000, call));
        written = call;
        if size(&wal) > 8 * 1024 * 1024 {
            break;
        }
        assert!(call < 200, "the WAL did not grow: {} bytes", size(&wal));
    }
    // The checkpoint runs beside the requests: wait for it, the server still running.
    let deadline = Instant::now() + Duration::from_secs(30);
    while size(&s.db) <= created && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        size(&s.db) > created,
        "after {written} calls the database file is still {created} bytes: nothing was \
         checkpointed while serving (WAL {} bytes)",
        size(&wal)
    );
    // And what was copied is what was committed.
    let status = s.tool_ok("get_calibration_metrics", json!({"domain": "Code"}));
    assert!(status.is_object());
    let (exit, _, stderr) = s.finish();
    assert!(exit.success(), "{stderr}");
}

#[test]
fn a_new_database_leaves_nothing_else_in_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub").join("state.db");
    let mut s = Server::start_at(&db, &[]);
    s.tool_ok("get_meta_learning_status", json!({}));
    let mut names: Vec<String> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["state.db", "state.db-shm", "state.db-wal"]);
    let (exit, _, stderr) = s.finish();
    assert!(exit.success(), "{stderr}");
    let names: Vec<String> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["state.db"]);
    // Reopened, the file is ours and complete.
    let mut s = Server::start_at(&db, &[]);
    s.tool_ok("get_meta_learning_status", json!({}));
    let (exit, _, stderr) = s.finish();
    assert!(exit.success(), "{stderr}");
}

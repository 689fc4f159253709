//! Flags and environment at start-up, over the real binary: bad values exit 2 with a message
//! and touch nothing (issue 16, items 12–14).

mod common;

use std::process::Stdio;

fn run(args: &[&str], env: &[(&str, &str)], unset: &[&str]) -> (Option<i32>, String) {
    let mut cmd = common::command();
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in unset {
        cmd.env_remove(k);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_out_of_range_retention_is_refused_not_a_panic() {
    let (code, err) = run(
        &["--db", ":memory:", "--event-retention-days", "100000000"],
        &[],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1..=36500"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_empty_database_variable_means_the_default_location() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().to_str().unwrap();
    let (code, err) = run(&[], &[("META_UTL_DB", ""), ("XDG_DATA_HOME", xdg)], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(dir.path().join("meta-utl-mcp/state.db").exists());
}

#[test]
fn without_home_or_xdg_the_server_asks_for_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = common::command();
    let out = cmd
        .current_dir(dir.path())
        .env_remove("HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("META_UTL_DB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--db"), "{err}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created"
    );
}

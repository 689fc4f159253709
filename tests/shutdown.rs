//! SIGTERM over the real binary: every complete line already taken from stdin is answered,
//! and a client that does not read its answers cannot keep the server alive beyond the grace
//! period (issue 16, items 10 and 11).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use meta_utl_mcp::server::SHUTDOWN_GRACE;
use serde_json::{Value, json};

fn sigterm(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Pipe `lines` to a server, send SIGTERM `after` the first answer, and compare what the
/// server answered with what it took from the pipe (the bytes left in the pipe afterwards
/// were never read).
fn sigterm_while_busy(lines: &[String], after: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (pipe_out, mut pipe_in) = std::io::pipe().unwrap();
    let leftover_end = pipe_out.try_clone().unwrap();
    let mut child = common::command()
        .arg("--db")
        .arg(dir.path().join("state.db"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::from(pipe_out))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let answers = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap())
            .collect::<Vec<_>>()
    });
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let input: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    let total = input.len();
    let writer = std::thread::spawn(move || {
        let _ = pipe_in.write_all(&input);
    });
    std::thread::sleep(after);
    sigterm(child.id());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    let log = log.join().unwrap();
    assert!(status.success(), "{status:?}: {log}");
    // The server is gone: what is still in the pipe it never read.
    let mut leftover = Vec::new();
    let mut end = leftover_end;
    let drain = std::thread::spawn(move || {
        let _ = end.read_to_end(&mut leftover);
        leftover
    });
    writer.join().unwrap();
    let leftover = drain.join().unwrap();
    let taken = total - leftover.len();
    let lines_taken = lines
        .iter()
        .scan(0, |end, l| {
            *end += l.len() + 1;
            Some(*end)
        })
        .take_while(|end| *end <= taken)
        .count();
    let answers = answers.join().unwrap();
    let mut ids: Vec<u64> = answers.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    let want: Vec<u64> = (1..=lines_taken as u64).collect();
    assert!(
        ids == want,
        "{} complete lines taken from the pipe, {} answered (first missing: {:?}); log: {log}",
        lines_taken,
        ids.len(),
        want.iter().find(|i| ids.binary_search(i).is_err())
    );
    eprintln!(
        "SIGTERM after {after:?}: {lines_taken} of {} lines taken, all answered",
        lines.len()
    );
}

#[test]
fn sigterm_answers_every_complete_line_already_taken_from_stdin() {
    // Writes (group commits) and reads, so that lines wait in the reader's buffer and queue
    // when the signal comes.
    let lines: Vec<String> = (1..=4000u64)
        .map(|id| {
            if id % 4 == 0 {
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"get_meta_learning_status","arguments":{}}})
            } else {
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"record_prediction",
                    "arguments":{"embedder_index": id % 13, "predicted": 0.9, "actual": 0.4}}})
            }
            .to_string()
        })
        .collect();
    for ms in [150, 400, 900] {
        sigterm_while_busy(&lines, Duration::from_millis(ms));
    }
}

#[test]
fn sigterm_ends_a_server_whose_client_does_not_read_within_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = common::command()
        .arg("--db")
        .arg(dir.path().join("state.db"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdout = child.stdout.take().unwrap(); // kept open, never read
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut stdin = child.stdin.take().unwrap();
    // 79 kB answers: the pipe (64 kB) is full after the first one.
    for id in 1..=200 {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Instant::now();
    sigterm(child.id());
    let limit = SHUTDOWN_GRACE + Duration::from_secs(3);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if signalled.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running {limit:?} after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = signalled.elapsed();
    let log = log.join().unwrap();
    assert!(status.success(), "{status:?}: {log}");
    assert!(
        took >= SHUTDOWN_GRACE,
        "exited after {took:?}, before the grace period"
    );
    assert!(log.contains("could not be delivered"), "{log}");
    drop(stdin);
}

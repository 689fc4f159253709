//! Hostile input over the real binary: what a client sends is never echoed without a bound, in
//! answers or in logs, and ids come back byte for byte (issue 16, items 6 and 8).

mod common;

use common::Server;
use serde_json::json;

/// An answer or stderr that echoes client text stays this small, whatever was sent.
const SMALL: usize = 4096;

#[test]
fn huge_client_text_is_echoed_clipped() {
    let huge = "x".repeat(1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start_at(&dir.path().join("state.db"), &["--log-level", "debug"]);
    let r = s.call(&huge, json!({}));
    let text = r.to_string();
    assert!(
        text.len() < SMALL,
        "unknown tool answer of {} bytes",
        text.len()
    );
    assert!(
        r["error"]["message"].as_str().unwrap().ends_with('…'),
        "{r}"
    );

    let r = s.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": huge}}),
    );
    assert_eq!(r["error"]["code"], -32022, "{r}");
    assert!(
        r.to_string().len() < SMALL,
        "version error of {} bytes",
        r.to_string().len()
    );

    let r = s.request(&huge, json!({}));
    assert_eq!(r["error"]["code"], -32601);
    assert!(r.to_string().len() < SMALL);

    let r = s.initialize(&huge);
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    let (status, _, stderr) = s.finish();
    assert!(status.success());
    assert!(
        stderr.len() < 4 * SMALL,
        "stderr of {} bytes echoes the client's text",
        stderr.len()
    );
}

#[test]
fn a_lone_surrogate_is_refused_like_nul_naming_the_field_and_the_id_is_kept() {
    let mut s = Server::start();
    s.send_line(r#"{"jsonrpc":"2.0","id":"sur-1","method":"tools/call","params":{"name":"epistemic_action","arguments":{"action_type":"assert","target":"a\ud800b","rationale":"r"}}}"#);
    let r = s.recv();
    assert_eq!(r["id"], "sur-1", "{r}");
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("field 'target'") && text.contains("lone UTF-16 surrogate"),
        "{r}"
    );
    // Nothing was stored: the workspace has no belief.
    let q = s.tool_ok(
        "epistemic_action",
        serde_json::json!({"action_type": "query", "target": "a\u{fffd}b", "rationale": "r"}),
    );
    assert_eq!(q["query_result"]["found"], false, "{q}");
    // A pair is a character and is kept.
    s.send_line(r#"{"jsonrpc":"2.0","id":"sur-2","method":"tools/call","params":{"name":"epistemic_action","arguments":{"action_type":"assert","target":"a\ud83d\ude00b","rationale":"r"}}}"#);
    let r = s.recv();
    assert_eq!(r["result"]["structuredContent"]["target"], "a😀b", "{r}");
}

#[test]
fn every_numeric_id_is_echoed_byte_for_byte() {
    let ids = [
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "1.0",
        "1E3",
        "1e-7",
        "-0",
        "0.1000000000000000055511151231257827",
        "3.141592653589793238462643383279",
        "7",
    ];
    let mut s = Server::start();
    for id in ids {
        // A request, an error for an unknown method, and the same in a batch.
        s.send_line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        let line = s.recv_raw();
        assert!(line.contains(&format!(r#""id":{id},"#)), "{id}: {line}");
        s.send_line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"nope"}}"#));
        let line = s.recv_raw();
        assert!(line.contains(&format!(r#""id":{id},"#)), "{id}: {line}");
        s.send_line(&format!(
            r#"[{{"jsonrpc":"2.0","id":{id},"method":"ping"}},{{"jsonrpc":"1.0","id":{id}}}]"#
        ));
        let line = s.recv_raw();
        assert_eq!(
            line.matches(&format!(r#""id":{id},"#)).count(),
            2,
            "{id}: {line}"
        );
    }
}

/// The peak resident memory of process `pid` so far (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Send `lines` to a server whose stdout nobody reads until the server stops taking input
/// (or everything is sent); returns the server's peak RSS.
fn peak_rss_while_flooded(lines: Vec<Vec<u8>>) -> Option<u64> {
    use std::io::Write;
    use std::process::Stdio;
    peak_rss(std::process::id())?;
    let dir = tempfile::tempdir().unwrap();
    let mut child = common::command()
        .arg("--db")
        .arg(dir.path().join("state.db"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let _stdout = child.stdout.take().unwrap(); // kept open, never read
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    // Stdin stays open after the last line: EOF would let the server finish and exit.
    let writer = std::thread::spawn(move || {
        for line in lines {
            if stdin.write_all(&line).is_err() {
                break;
            }
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        stdin
    });
    // Until the writer has been blocked (or done) for 3 s: the server has taken all it will.
    let mut last = (usize::MAX, std::time::Instant::now());
    let mut peak = None;
    while last.1.elapsed() < std::time::Duration::from_secs(3) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        peak = peak.max(peak_rss(pid));
        let now = sent.load(std::sync::atomic::Ordering::SeqCst);
        if now != last.0 {
            last = (now, std::time::Instant::now());
        }
    }
    peak = peak.max(peak_rss(pid));
    let _ = child.kill();
    let _ = child.wait();
    drop(writer.join());
    eprintln!(
        "peak RSS {:.0} MB after {} lines taken",
        peak.unwrap_or(0) as f64 / 1e6,
        sent.load(std::sync::atomic::Ordering::SeqCst)
    );
    peak
}

/// The bound the README promises for memory, whatever the client sends.
const RSS_BOUND: u64 = 256 * 1000 * 1000;

#[test]
fn memory_is_bounded_by_bytes_when_the_client_does_not_read() {
    // Lines just under the 16 MiB line limit. `[0,0,…]` costs 64 bytes of memory per two
    // bytes of text once parsed; the long string costs its length.
    let call = |id: usize, arguments: &str| {
        let mut line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"record_calibration_observations","arguments":{arguments}}}}}"#
        )
        .into_bytes();
        line.push(b'\n');
        line
    };
    let zeros = format!(
        r#"{{"observations":[{}0]}}"#,
        "0,".repeat(8 * 1024 * 1024 - 100)
    );
    let text = format!(
        r#"{{"observations":"{}"}}"#,
        "x".repeat(16 * 1024 * 1024 - 200)
    );
    let floats = format!(
        r#"{{"observations":[{}0]}}"#,
        "0.5,".repeat(4 * 1024 * 1024 - 100)
    );
    let mut lines = Vec::new();
    for i in 0..8 {
        lines.push(call(3 * i, &zeros));
        lines.push(call(3 * i + 1, &text));
        lines.push(call(3 * i + 2, &floats));
    }
    // Amplification: a batch of 256 `tools/list` is 12 kB and its answer 20 MB.
    let batch: Vec<String> = (0..256)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#))
        .collect();
    let batch = format!("[{}]\n", batch.join(","));
    lines.extend((0..30).map(|_| batch.clone().into_bytes()));
    let Some(peak) = peak_rss_while_flooded(lines) else {
        eprintln!("skipped: no /proc/PID/status here");
        return;
    };
    assert!(
        peak < RSS_BOUND,
        "peak RSS {} MB with a client that does not read",
        peak / 1_000_000
    );
}

#[test]
fn a_line_too_costly_to_parse_is_refused_under_its_id() {
    let mut s = Server::start();
    let zeros = format!("[{}0]", "0,".repeat(8 * 1024 * 1024 - 100));
    s.send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{{"name":"record_calibration_observations","arguments":{{"observations":{zeros}}}}}}}"#
    ));
    let r = s.recv();
    assert_eq!(r["id"], "big-1", "{r}");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("memory"),
        "{r}"
    );
    assert_eq!(s.request("ping", json!(null))["result"], json!({}));
}

#[test]
fn a_batch_stops_running_once_its_answers_are_large() {
    let mut s = Server::start();
    let n = 300;
    let batch: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#))
        .collect();
    s.send_line(&format!("[{}]", batch.join(",")));
    let line = s.recv_raw();
    assert!(
        line.len() < meta_utl_mcp::server::MAX_BATCH_ANSWER_BYTES + 200_000,
        "{} bytes",
        line.len()
    );
    let answers: Vec<serde_json::Value> = serde_json::from_str(&line).unwrap();
    assert_eq!(answers.len(), n, "one answer per request");
    let run = answers.iter().filter(|a| a.get("result").is_some()).count();
    assert!(run > 100 && run < n, "{run} run");
    let last = &answers[n - 1];
    assert_eq!(last["id"], n - 1);
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("smaller batch"),
        "{last}"
    );
}

#[test]
fn a_timestamp_from_the_future_is_refused_naming_the_field() {
    let mut s = Server::start();
    let obs = |t: &str| {
        json!({"observations": [
            {"embedder_id": 1, "confidence": 0.9, "correct": true},
            {"embedder_id": 1, "confidence": 0.9, "correct": true, "timestamp": t}
        ]})
    };
    let (_, msg) = s.tool_err(
        "record_calibration_observations",
        obs("2030-01-01T00:00:00Z"),
    );
    assert!(
        msg.contains("observations[1]: field 'timestamp' is in the future"),
        "{msg}"
    );
    // Nothing of the refused call was stored; a timestamp within the skew is fine.
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(60)).to_rfc3339();
    let r = s.tool_ok("record_calibration_observations", obs(&soon));
    assert_eq!(r["accepted"], 2, "{r}");
    let m = s.tool_ok("get_calibration_metrics", json!({"timeframe": "1h"}));
    assert_eq!(m["observation_count"], 2, "{m}");
}

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
fn a_lone_surrogate_is_read_as_a_replacement_character_and_the_id_is_kept() {
    let mut s = Server::start();
    s.send_line(r#"{"jsonrpc":"2.0","id":"sur-1","method":"tools/call","params":{"name":"epistemic_action","arguments":{"action_type":"assert","target":"a\ud800b","rationale":"r"}}}"#);
    let r = s.recv();
    assert_eq!(r["id"], "sur-1", "{r}");
    assert_eq!(
        r["result"]["structuredContent"]["target"], "a\u{fffd}b",
        "{r}"
    );
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

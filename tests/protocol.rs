//! The MCP/JSON-RPC protocol over stdio on the real binary: handshake, listing, errors,
//! batches, garbage, oversize lines, and EOF handling.

mod common;

use std::time::Duration;

use common::{Backend, Server, assert_jsonrpc_response, pipe};
use serde_json::{Value, json};

common::both_backends!(
    every_listed_tool_is_callable_and_its_output_matches_its_schema,
    eof_answers_every_piped_request_and_exits_zero,
);

#[test]
fn handshake_negotiates_versions_and_describes_the_server() {
    let mut s = Server::start();
    for (asked, want) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2031-01-01", "2025-11-25"),
    ] {
        let r = s.initialize(asked);
        let result = &r["result"];
        assert_eq!(result["protocolVersion"], want, "asked {asked}");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
        assert_eq!(result["serverInfo"]["name"], "meta-utl-mcp");
        assert!(result["serverInfo"]["version"].is_string());
        assert!(result["serverInfo"]["title"].is_string());
        let instructions = result["instructions"].as_str().unwrap();
        assert!(instructions.contains("check_strategy_blacklist"));
        assert!(
            instructions.contains(s.db.to_str().unwrap()),
            "names the database in use"
        );
    }
    // The initialized notification got no answer: the next response is the ping's.
    let r = s.request("ping", Value::Null);
    assert_eq!(r["result"], json!({}));
}

#[test]
fn tools_list_describes_every_tool_with_object_schemas_and_annotations() {
    let mut s = Server::start();
    let r = s.request("tools/list", Value::Null);
    let tools = r["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in [
        "record_prediction",
        "get_meta_learning_status",
        "trigger_lambda_recalibration",
        "get_meta_learning_log",
        "reset_meta_learning",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{}", t["name"]);
        assert_eq!(t["outputSchema"]["type"], "object", "{}", t["name"]);
        assert!(t["title"].is_string() && t["description"].is_string());
        let a = &t["annotations"];
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint"] {
            assert!(a[hint].is_boolean(), "{} {hint}", t["name"]);
        }
        assert_eq!(a["openWorldHint"], false);
    }
}

fn every_listed_tool_is_callable_and_its_output_matches_its_schema(backend: Backend) {
    let mut s = Server::start_on(backend);
    let r = s.request("tools/list", Value::Null);
    let tools = r["result"]["tools"].as_array().unwrap().clone();
    for t in tools {
        let name = t["name"].as_str().unwrap();
        // Calling with no arguments must answer (a result or a -32602), never hang or crash.
        let r = s.call(name, json!({}));
        assert!(
            r.get("result").is_some() || r["error"]["code"] == -32602,
            "{name}: {r}"
        );
        if let Some(result) = r.get("result").filter(|res| res["isError"] == false) {
            let validator = jsonschema::validator_for(&t["outputSchema"]).unwrap();
            if let Err(e) = validator.validate(&result["structuredContent"]) {
                panic!("{name}: output violates outputSchema: {e}");
            }
        }
    }
}

#[test]
fn ids_are_echoed_with_their_type() {
    let mut s = Server::start();
    s.send_line(r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#);
    assert_eq!(s.recv()["id"], json!("abc"));
    s.send_line(r#"{"jsonrpc":"2.0","id":42,"method":"ping"}"#);
    assert_eq!(s.recv()["id"], json!(42));
    s.send_line(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
    assert_eq!(s.recv()["id"], json!(0));
}

#[test]
fn errors_use_standard_codes_and_the_server_keeps_serving() {
    let mut s = Server::start();
    let cases: &[(&str, i64)] = &[
        ("this is not json", -32700),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#,
            -32601,
        ),
        (r#"{"jsonrpc":"2.0","id":3}"#, -32600),
        (r#"{"id":4,"method":"ping"}"#, -32600),
        (r#"17"#, -32600),
        (r#"[]"#, -32600),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#,
            -32602,
        ),
    ];
    for (line, code) in cases {
        s.send_line(line);
        let r = s.recv();
        assert_eq!(r["error"]["code"], json!(code), "{line}: {r}");
        assert_eq!(r["jsonrpc"], "2.0");
    }
    let r = s.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(r["error"]["message"], "Unknown tool: nope");
    assert_eq!(s.request("ping", Value::Null)["result"], json!({}));
}

#[test]
fn notifications_are_never_answered() {
    let mut s = Server::start();
    s.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    s.send_line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#);
    s.send_line(r#"{"jsonrpc":"2.0","method":"unknown/notification"}"#);
    s.send_line(
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_meta_learning_status"}}"#,
    );
    assert!(s.recv_within(Duration::from_millis(300)).is_none());
    assert_eq!(s.request("ping", Value::Null)["result"], json!({}));
}

#[test]
fn batches_answer_with_an_array_without_notifications() {
    let mut s = Server::start();
    s.send_line(
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"nope"},5]"#,
    );
    let r = s.recv();
    let items = r.as_array().expect("an array");
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["id"], 1);
    assert_eq!(items[0]["result"], json!({}));
    assert_eq!(items[1]["id"], "b");
    assert_eq!(items[1]["error"]["code"], -32601);
    assert_eq!(items[2]["id"], Value::Null);
    assert_eq!(items[2]["error"]["code"], -32600);
    // A batch of notifications only gets no answer at all.
    s.send_line(r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#);
    assert!(s.recv_within(Duration::from_millis(300)).is_none());
}

#[test]
fn tools_work_without_initialize() {
    let mut s = Server::start();
    let status = s.tool_ok("get_meta_learning_status", json!({}));
    assert_eq!(status["enabled"], true);
}

#[test]
fn an_oversize_line_is_refused_and_the_server_keeps_serving() {
    let mut s = Server::start();
    let mut big = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 17 * 1024 * 1024));
    big.extend_from_slice(b"\"}}\n");
    s.send_raw(&big);
    let r = s.recv();
    assert_eq!(r["error"]["code"], -32600);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    assert_eq!(s.request("ping", Value::Null)["result"], json!({}));
}

#[test]
fn garbage_bytes_crlf_bom_and_deep_nesting_are_answered() {
    let mut s = Server::start();
    s.send_raw(b"\xff\xfe\x00garbage\n");
    assert_eq!(s.recv()["error"]["code"], -32700);
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
    assert_eq!(s.recv()["result"], json!({}));
    s.send_raw(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    assert_eq!(s.recv()["id"], 2);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    s.send_line(&deep);
    assert_eq!(s.recv()["error"]["code"], -32700);
    assert_eq!(s.request("ping", Value::Null)["result"], json!({}));
}

fn eof_answers_every_piped_request_and_exits_zero(backend: Backend) {
    let fresh = backend.fresh();
    let db = fresh.target.clone();
    let mut input = String::new();
    input.push_str(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}"#);
    input.push('\n');
    let n = 300;
    for i in 1..=n {
        let line = match i % 3 {
            0 => {
                json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"record_prediction","arguments":{"embedder_index": i % 13,"predicted":0.8,"actual":0.5}}})
            }
            1 => {
                json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"get_meta_learning_status","arguments":{}}})
            }
            _ => json!({"jsonrpc":"2.0","id":i,"method":"ping"}),
        };
        input.push_str(&line.to_string());
        input.push('\n');
    }
    // The last request has no trailing newline: it must still be answered.
    input.push_str(r#"{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"get_meta_learning_status","arguments":{}}}"#);
    let (status, lines, stderr) = pipe(&db, input.as_bytes());
    assert!(status.success(), "exit {status:?}: {stderr}");
    let mut ids = std::collections::HashSet::new();
    for line in &lines {
        assert_jsonrpc_response(line);
        let v: Value = serde_json::from_str(line).unwrap();
        ids.insert(v["id"].to_string());
    }
    assert_eq!(lines.len(), n + 2, "one response per request");
    assert!(ids.contains("\"last\""));
    // Writes were applied in order before the final read: 100 predictions recorded.
    let last: Value = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == "last")
        .unwrap();
    assert_eq!(
        last["result"]["structuredContent"]["interaction_count"],
        100
    );
}

#[test]
fn stateless_and_handshake_eras_work_in_one_process() {
    let mut s = Server::start();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let d = s.request("server/discover", json!({"_meta": meta}));
    let d = &d["result"];
    assert_eq!(d["supportedVersions"][0], "2026-07-28");
    assert!(
        d["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25"))
    );
    assert_eq!(d["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "meta-utl-mcp"
    );
    assert!(d["ttlMs"].is_u64() && d["cacheScope"] == "private");
    assert!(d["instructions"].is_string());
    assert_eq!(d["resultType"], "complete");
    // server/discover without _meta (a client probing first) is answered too.
    assert!(s.request("server/discover", Value::Null)["result"]["supportedVersions"].is_array());

    let list = s.request("tools/list", json!({"_meta": meta}));
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 3_600_000);
    assert_eq!(list["result"]["cacheScope"], "public");
    let call = s.request(
        "tools/call",
        json!({"name": "get_meta_learning_status", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(call["result"]["structuredContent"]["enabled"], true);

    // The handshake era in the same process: no stateless fields.
    let init = s.initialize("2025-11-25");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert!(init["result"].get("resultType").is_none());
    let list = s.request("tools/list", Value::Null);
    assert!(list["result"].get("ttlMs").is_none());
    assert!(list["result"].get("resultType").is_none());
    let call = s.call("get_meta_learning_status", json!({}));
    assert!(call["result"].get("resultType").is_none());

    // A modern version we do not speak: -32022 with the supported list.
    let bad = s.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}),
    );
    assert_eq!(bad["error"]["code"], -32022);
    assert_eq!(bad["error"]["data"]["requested"], "2099-01-01");
    assert!(
        bad["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
}

#[test]
fn a_cancelled_queued_request_gets_no_response() {
    let mut s = Server::start();
    // A write queues behind the writes before it; cancelling it while queued suppresses its
    // answer. Send a burst of writes, the one to cancel, and the cancellation in one chunk.
    let mut burst = String::new();
    for i in 0..1000 {
        burst.push_str(&json!({"jsonrpc":"2.0","id":format!("w{i}"),"method":"tools/call","params":{"name":"record_prediction","arguments":{"embedder_index":0,"predicted":0.5,"actual":0.5}}}).to_string());
        burst.push('\n');
    }
    burst.push_str(r#"{"jsonrpc":"2.0","id":"victim","method":"tools/call","params":{"name":"record_prediction","arguments":{"embedder_index":1,"predicted":0.5,"actual":0.5}}}"#);
    burst.push('\n');
    burst.push_str(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"victim","reason":"user"}}"#);
    burst.push('\n');
    burst.push_str(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    burst.push('\n');
    s.send_raw(burst.as_bytes());
    let mut ids = Vec::new();
    while ids.len() < 1001 {
        let v = s.recv();
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    assert!(
        !ids.contains(&"victim".to_string()),
        "the cancelled request was answered"
    );
    assert!(s.recv_within(Duration::from_millis(500)).is_none());
    // Cancelling something unknown or finished is ignored.
    s.send_line(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w0"}}"#,
    );
    assert_eq!(s.request("ping", Value::Null)["result"], json!({}));
}

//! What the model sees, over the real binary: invalid arguments by negotiated protocol revision
//! (SEP-1303), tool profiles (`--tools`), and the instructions.

mod common;

use common::{Backend, Server};
use serde_json::{Value, json};

common::both_backends!(
    invalid_arguments_are_answered_by_negotiated_revision,
    a_profile_publishes_and_accepts_only_its_families,
    annotations_tell_the_truth,
);

#[test]
fn every_input_schema_is_a_plain_object_at_the_top() {
    let mut s = Server::start();
    let r = s.request("tools/list", Value::Null);
    let tools = r["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 16);
    for t in tools {
        let name = t["name"].as_str().unwrap();
        let schema = t["inputSchema"].as_object().unwrap();
        assert_eq!(schema["type"], "object", "{name}");
        for key in schema.keys() {
            assert!(
                common::TOP_LEVEL_KEYS.contains(&key.as_str()),
                "{name}: inputSchema has '{key}' at the top; allowed: {:?}",
                common::TOP_LEVEL_KEYS
            );
        }
        // Every `$ref` is local and resolves.
        let text = t["inputSchema"].to_string();
        for r in text.split("\"$ref\":\"").skip(1) {
            let target = r.split('"').next().unwrap();
            let pointer = target.strip_prefix('#').expect("a local $ref");
            assert!(
                t["inputSchema"].pointer(pointer).is_some(),
                "{name}: {target}"
            );
        }
    }
}

/// How a revision answers invalid arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// A tool result with `isError: true` and the message as text.
    ToolResult,
    /// JSON-RPC `-32602`.
    InvalidParams,
}

fn check(s: &mut Server, meta: Option<&str>, expect: Expect, label: &str) {
    for (tool, args, word) in common::invalid_calls() {
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(v) = meta {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": v});
        }
        let r = s.request("tools/call", params);
        match expect {
            Expect::InvalidParams => {
                assert_eq!(r["error"]["code"], -32602, "{label} {tool}: {r}");
                let m = r["error"]["message"].as_str().unwrap();
                assert!(m.contains(word), "{label} {tool}: {m}");
            }
            Expect::ToolResult => {
                let result = &r["result"];
                assert_eq!(result["isError"], true, "{label} {tool}: {r}");
                let text = result["content"][0]["text"].as_str().unwrap();
                assert!(text.contains(word), "{label} {tool}: {text}");
                if tool == "check_strategy_blacklist" {
                    // The lessons family has a structured error object (its seed's).
                    assert_eq!(result["structuredContent"]["success"], false, "{r}");
                    assert_eq!(result["structuredContent"]["error"], "VALIDATION_ERROR");
                    assert_eq!(result["structuredContent"]["detail"], text);
                } else {
                    assert!(result.get("structuredContent").is_none(), "{r}");
                }
                let stateless = meta == Some("2026-07-28");
                assert_eq!(result.get("resultType").is_some(), stateless, "{r}");
            }
        }
    }
    // An unknown tool is a protocol error in every revision.
    let mut params = json!({"name": "no_such_tool", "arguments": {}});
    if let Some(v) = meta {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": v});
    }
    let r = s.request("tools/call", params);
    assert_eq!(r["error"]["code"], -32602, "{label}: {r}");
    assert_eq!(r["error"]["message"], "Unknown tool: no_such_tool");
}

fn invalid_arguments_are_answered_by_negotiated_revision(backend: Backend) {
    for (version, expect) in [
        ("2025-11-25", Expect::ToolResult),
        ("2025-06-18", Expect::InvalidParams),
        ("2025-03-26", Expect::InvalidParams),
        ("2024-11-05", Expect::InvalidParams),
    ] {
        let mut s = Server::start_on(backend);
        let init = s.initialize(version);
        assert_eq!(init["result"]["protocolVersion"], version);
        check(&mut s, None, expect, version);
    }
    // A script without a handshake, and stateless 2026-07-28 requests.
    let mut s = Server::start_on(backend);
    check(&mut s, None, Expect::ToolResult, "no handshake");
    check(&mut s, Some("2026-07-28"), Expect::ToolResult, "2026-07-28");
    // Without a handshake, a request naming an older revision in _meta gets what it knows.
    check(
        &mut s,
        Some("2025-06-18"),
        Expect::InvalidParams,
        "_meta 2025-06-18",
    );
}

fn names(s: &mut Server) -> Vec<String> {
    let r = s.request("tools/list", Value::Null);
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn a_profile_publishes_and_accepts_only_its_families(backend: Backend) {
    let fresh = backend.fresh();
    let db = fresh.target.clone();
    let mut s = Server::start_at(&db, &["--tools", "lessons,epistemic"]);
    assert_eq!(
        names(&mut s),
        [
            "epistemic_action",
            "log_lesson_learned",
            "check_strategy_blacklist",
            "list_directive_history",
            "record_directive",
            "set_lesson_active"
        ]
    );
    let r = s.call(
        "record_prediction",
        json!({"embedder_index": 0, "predicted": 0.5, "actual": 0.5}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "Unknown tool: record_prediction");
    let init = s.initialize("2025-11-25");
    let text = init["result"]["instructions"].as_str().unwrap();
    assert!(text.contains("check_strategy_blacklist"), "{text}");
    assert!(!text.contains("record_prediction"), "{text}");
    drop(s);

    // The environment variable does the same; the default is every family.
    let mut s = Server::start_on(backend);
    assert_eq!(names(&mut s).len(), 16);
    let out = common::command()
        .args(["--db", ":memory:"])
        .env("META_UTL_TOOLS", "utl")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")?;
            c.wait_with_output()
        })
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["gwt_compute_delta_sc"]);

    // An unknown family is refused at start-up, naming the allowed ones.
    let out = common::command()
        .args(["--db", ":memory:", "--tools", "lessons,memory"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("memory") && err.contains("meta_learning, atc, utl, epistemic, lessons"),
        "{err}"
    );
}

fn annotations_tell_the_truth(backend: Backend) {
    let mut s = Server::start_on(backend);
    let r = s.request("tools/list", Value::Null);
    for t in r["result"]["tools"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let a = &t["annotations"];
        assert_eq!(a["openWorldHint"], false, "{name}");
        // check_strategy_blacklist records its prediction (issue 31): it writes.
        if name.starts_with("get_") || name.starts_with("list_") {
            assert_eq!(a["readOnlyHint"], true, "{name}");
            assert_eq!(a["destructiveHint"], false, "{name}");
        } else {
            assert_eq!(a["readOnlyHint"], false, "{name}");
        }
    }
    // Both recalibrations overwrite learned parameters unless dry_run, and say so.
    for name in ["trigger_lambda_recalibration", "trigger_recalibration"] {
        let t = r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        assert_eq!(t["annotations"]["destructiveHint"], true, "{name}");
        assert!(
            t["description"].as_str().unwrap().contains("dry_run"),
            "{name}"
        );
    }
}

//! `epistemic_action` over the wire on the real binary: persistence across restarts, the
//! log-odds verification path, retraction, Unicode targets and limits, validation errors, and
//! the seed's 15 schema cases against our `tools/list` entry.

mod common;

use common::{Backend, Server};
use serde_json::{Value, json};

common::both_backends!(
    assert_then_query_finds_it_after_a_restart,
    hypothesize_then_verify_twice_reaches_the_log_odds_posterior,
    verify_with_low_evidence_denies,
    hypothesize_on_an_existing_belief_answers_with_it,
    retract_keeps_history_and_unknown_targets_are_belief_not_found,
    workspace_state_reports_counts_mean_confidence_and_entropy,
    unicode_targets_work_and_length_is_counted_in_characters,
    invalid_arguments_are_32602_naming_the_field,
    seed_schema_cases_hold_for_the_listed_tool,
    outputs_match_the_output_schema,
    query_returns_the_latest_fifty_events_and_the_full_history_length,
    a_belief_asserted_in_one_process_is_found_by_another_at_once,
);

const TOL: f64 = 1e-6;

fn act(s: &mut Server, action: &str, target: &str, confidence: Option<f64>) -> Value {
    let mut args = json!({"action_type": action, "target": target, "rationale": "test"});
    if let Some(c) = confidence {
        args["confidence"] = json!(c);
    }
    s.tool_ok("epistemic_action", args)
}

/// A call that must answer a structured failure (`isError: true`); returns `structuredContent`
/// after checking that the text block carries the same JSON.
fn act_failed(s: &mut Server, args: Value) -> Value {
    let r = s.call("epistemic_action", args.clone());
    let result = r.get("result").unwrap_or_else(|| panic!("{args}: {r}"));
    assert_eq!(result["isError"], json!(true), "{args}: {r}");
    let text: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(text, result["structuredContent"]);
    result["structuredContent"].clone()
}

fn assert_then_query_finds_it_after_a_restart(backend: Backend) {
    let mut s = Server::start_on(backend);
    let a = act(&mut s, "assert", "Rust has no GC", Some(0.8));
    assert_eq!(a["outcome"], "created");
    assert_eq!(a["belief_state"]["status"], "active");
    assert_eq!(a["workspace_state"]["counts"]["active"], 1);
    let id = a["belief_state"]["id"].clone();

    let mut s = s.restart();
    // Different case and spacing: the same belief (Unicode case fold + collapsed whitespace).
    let q = act(&mut s, "query", "  rust HAS no   gc ", None);
    assert_eq!(q["query_result"]["found"], true);
    assert_eq!(q["query_result"]["history_length"], 1);
    assert_eq!(q["belief_state"]["id"], id);
    assert_eq!(q["belief_state"]["target"], "Rust has no GC");
    assert_eq!(q["belief_state"]["confidence"], 0.8);
    assert_eq!(q["belief_state"]["status"], "active");
    assert_eq!(q["workspace_state"]["total_beliefs"], 1);

    let missing = act(&mut s, "query", "something never asserted", None);
    assert_eq!(missing["success"], true);
    assert_eq!(missing["query_result"]["found"], false);
    assert_eq!(missing["belief_state"], Value::Null);
}

fn hypothesize_then_verify_twice_reaches_the_log_odds_posterior(backend: Backend) {
    let mut s = Server::start_on(backend);
    let h = act(&mut s, "hypothesize", "The cache is the bottleneck", None);
    assert_eq!(h["belief_state"]["status"], "hypothetical");
    assert_eq!(h["belief_state"]["confidence"], 0.5);
    // Prior 0.5 (odds 1); evidence 0.9 has odds 9, so after two verifications the odds are 81:
    // posterior = 81/82 = 0.98780487804878…  After the first: 9/10 = 0.9.
    let v1 = act(&mut s, "verify", "the cache is the bottleneck", Some(0.9));
    assert!((v1["belief_state"]["confidence"].as_f64().unwrap() - 0.9).abs() < TOL);
    let v2 = act(&mut s, "verify", "The cache is the bottleneck", Some(0.9));
    let c = v2["belief_state"]["confidence"].as_f64().unwrap();
    assert!((c - 81.0 / 82.0).abs() < TOL, "posterior {c}");
    assert_eq!(v2["belief_state"]["status"], "verified");
    assert_eq!(v2["belief_state"]["history_length"], 3);
    // Survives a restart bit-exactly.
    let mut s = s.restart();
    let q = act(&mut s, "query", "The cache is the bottleneck", None);
    assert_eq!(q["belief_state"]["confidence"].as_f64().unwrap(), c);
    let hist = q["query_result"]["history"].as_array().unwrap();
    let actions: Vec<&str> = hist
        .iter()
        .map(|e| e["action_type"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["hypothesize", "verify", "verify"]);
    assert!((hist[2]["confidence_before"].as_f64().unwrap() - 0.9).abs() < TOL);
}

fn verify_with_low_evidence_denies(backend: Backend) {
    let mut s = Server::start_on(backend);
    act(
        &mut s,
        "hypothesize",
        "tests are flaky because of timing",
        None,
    );
    // Prior 0.5 (odds 1) × evidence odds 1/9 ⇒ 0.1 < 0.3 ⇒ denied.
    let v = act(
        &mut s,
        "verify",
        "tests are flaky because of timing",
        Some(0.1),
    );
    assert!((v["belief_state"]["confidence"].as_f64().unwrap() - 0.1).abs() < TOL);
    assert_eq!(v["belief_state"]["status"], "denied");
    assert_eq!(v["workspace_state"]["counts"]["denied"], 1);
}

fn hypothesize_on_an_existing_belief_answers_with_it(backend: Backend) {
    let mut s = Server::start_on(backend);
    act(&mut s, "assert", "x is y", Some(0.9));
    let h = act(&mut s, "hypothesize", "X IS Y", Some(0.1));
    assert_eq!(h["outcome"], "already_exists");
    assert_eq!(h["belief_state"]["status"], "active");
    assert_eq!(h["belief_state"]["confidence"], 0.9);
    assert!(h["message"].as_str().unwrap().contains("already exists"));
}

fn retract_keeps_history_and_unknown_targets_are_belief_not_found(backend: Backend) {
    let mut s = Server::start_on(backend);
    act(&mut s, "assert", "deploys happen on Fridays", Some(0.7));
    act(&mut s, "verify", "deploys happen on Fridays", Some(0.8));
    let r = act(&mut s, "retract", "deploys happen on fridays", None);
    assert_eq!(r["belief_state"]["status"], "retracted");
    assert_eq!(r["belief_state"]["confidence"], 0.0);
    assert_eq!(r["belief_state"]["history_length"], 3);
    assert_eq!(r["workspace_state"]["counts"]["retracted"], 1);
    assert_eq!(r["workspace_state"]["live_beliefs"], 0);
    assert_eq!(r["workspace_state"]["mean_confidence"], Value::Null);
    let q = act(&mut s, "query", "deploys happen on Fridays", None);
    assert_eq!(q["query_result"]["history_length"], 3);
    assert_eq!(q["query_result"]["history"][2]["action_type"], "retract");

    for action in ["verify", "retract"] {
        let f = act_failed(
            &mut s,
            json!({"action_type": action, "target": "never seen", "confidence": 0.9, "rationale": "r"}),
        );
        assert_eq!(f["success"], false);
        assert_eq!(f["error"], "BELIEF_NOT_FOUND");
        assert_eq!(f["action_type"], action);
    }
    // Nothing was created by the failures.
    let q = act(&mut s, "query", "never seen", None);
    assert_eq!(q["query_result"]["found"], false);
}

fn workspace_state_reports_counts_mean_confidence_and_entropy(backend: Backend) {
    let mut s = Server::start_on(backend);
    act(&mut s, "assert", "a", Some(0.5));
    let w = act(&mut s, "assert", "b", Some(0.25))["workspace_state"].clone();
    // Mean confidence (0.5 + 0.25)/2 = 0.375; entropies H(0.5) = 1 bit and
    // H(0.25) = 0.5 + 0.75·log2(4/3) = 0.811278…, mean 0.905639…
    assert_eq!(w["counts"]["active"], 2);
    assert_eq!(w["total_beliefs"], 2);
    assert!((w["mean_confidence"].as_f64().unwrap() - 0.375).abs() < TOL);
    let h = 0.5 + 0.75 * (4.0f64 / 3.0).log2();
    assert!((w["mean_entropy"].as_f64().unwrap() - (1.0 + h) / 2.0).abs() < TOL);
}

fn unicode_targets_work_and_length_is_counted_in_characters(backend: Backend) {
    let mut s = Server::start_on(backend);
    let targets = [
        "数据库连接池太小",
        "🚀 launch when 🟢",
        "cafe\u{301} crème brûlée",
        "ΟΔΥΣΣΕΥΣ",
    ];
    for t in targets {
        let a = act(&mut s, "assert", t, Some(0.6));
        assert_eq!(a["belief_state"]["target"], t);
    }
    // Composed vs decomposed accents and final sigma fold to the same key.
    let q = act(&mut s, "query", "CAFÉ CRÈME BRÛLÉE", None);
    assert_eq!(q["query_result"]["found"], true);
    let q = act(&mut s, "query", "οδυσσευς", None);
    assert_eq!(q["query_result"]["found"], true);

    // 4096 characters, 16 384 bytes: accepted; 4097 characters: rejected naming the field.
    let max = "🦀".repeat(4096);
    assert!(max.len() > 4096);
    let a = act(&mut s, "assert", &max, Some(0.9));
    assert_eq!(
        a["belief_state"]["target"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        4096
    );
    let max_han = "中".repeat(4096);
    act(&mut s, "hypothesize", &max_han, None);
    let (code, msg) = s.tool_err(
        "epistemic_action",
        json!({"action_type": "assert", "target": "🦀".repeat(4097), "rationale": "r"}),
    );
    assert_eq!(code, -32602);
    assert!(msg.contains("target") && msg.contains("4096"), "{msg}");
    // A 1024-character rationale of 2-byte characters is fine, 1025 is not.
    act_ok_rationale(&mut s, &"é".repeat(1024));
    let (code, msg) = s.tool_err(
        "epistemic_action",
        json!({"action_type": "assert", "target": "t", "rationale": "é".repeat(1025)}),
    );
    assert_eq!(code, -32602);
    assert!(msg.contains("rationale"), "{msg}");
}

fn act_ok_rationale(s: &mut Server, rationale: &str) {
    s.tool_ok(
        "epistemic_action",
        json!({"action_type": "assert", "target": "rationale test", "rationale": rationale}),
    );
}

fn invalid_arguments_are_32602_naming_the_field(backend: Backend) {
    let mut s = Server::start_on(backend);
    let base = json!({"action_type": "assert", "target": "t", "rationale": "r"});
    let with = |k: &str, v: Value| {
        let mut a = base.clone();
        a[k] = v;
        a
    };
    let without = |k: &str| {
        let mut a = base.clone();
        a.as_object_mut().unwrap().remove(k);
        a
    };
    let cases: Vec<(Value, &str)> = vec![
        (without("action_type"), "action_type"),
        (without("target"), "target"),
        (without("rationale"), "rationale"),
        (with("action_type", json!("believe")), "action_type"),
        (with("target", json!("")), "target"),
        (with("target", json!(42)), "target"),
        (with("rationale", json!("")), "rationale"),
        (with("confidence", json!(1.5)), "confidence"),
        (with("confidence", json!(-0.1)), "confidence"),
        (with("confidence", json!("high")), "confidence"),
        (
            with("context", json!({"uncertainty_type": "random"})),
            "uncertainty_type",
        ),
        (
            with("context", json!({"source_nodes": ["not-a-uuid"]})),
            "source_nodes",
        ),
        (
            with(
                "context",
                json!({"source_nodes": "550e8400-e29b-41d4-a716-446655440000"}),
            ),
            "source_nodes",
        ),
        (with("context", json!({"extra": 1})), "context.extra"),
        (with("context", json!([])), "context"),
        (with("unknown_field", json!(1)), "unknown_field"),
    ];
    for (args, field) in cases {
        let (code, msg) = s.tool_err("epistemic_action", args.clone());
        assert_eq!(code, -32602, "{args}");
        assert!(msg.contains(field), "{args}: {msg}");
    }
    // The enum message lists the allowed values.
    let (_, msg) = s.tool_err("epistemic_action", with("action_type", json!("believe")));
    for v in ["assert", "retract", "query", "hypothesize", "verify"] {
        assert!(msg.contains(v), "{msg}");
    }
    // A valid context is accepted and kept.
    let ok = s.tool_ok(
        "epistemic_action",
        with(
            "context",
            json!({"source_nodes": ["550e8400-e29b-41d4-a716-446655440000"], "uncertainty_type": "aleatory"}),
        ),
    );
    assert_eq!(ok["belief_state"]["uncertainty_type"], "aleatory");
    assert_eq!(
        ok["belief_state"]["source_nodes"],
        json!(["550e8400-e29b-41d4-a716-446655440000"])
    );
}

// ------------------------------------------------------------------------------------------
// The seed's 15 schema cases (seeds/epistemic-action.md §12), against our tools/list entry.

fn listed_tools(s: &mut Server) -> Value {
    s.request("tools/list", Value::Null)["result"]["tools"].clone()
}

fn epistemic_entry(tools: &Value) -> Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "epistemic_action")
        .expect("epistemic_action listed")
        .clone()
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("schema compiles")
}

fn seed_schema_cases_hold_for_the_listed_tool(backend: Backend) {
    let mut s = Server::start_on(backend);
    let tools = listed_tools(&mut s);
    let tool = epistemic_entry(&tools);
    let schema = &tool["inputSchema"];
    let props = &schema["properties"];
    let v = validator(schema);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };

    // 1. test_epistemic_action_definition_exists
    assert_eq!(tool["name"], "epistemic_action");
    // 2. test_epistemic_action_schema_required_fields
    let required = strings(&schema["required"]);
    for f in ["action_type", "target", "rationale"] {
        assert!(required.contains(&f.to_string()), "{f}");
    }
    // 3. test_epistemic_action_type_enum_values and 4. test_all_action_type_values
    let actions = strings(&props["action_type"]["enum"]);
    assert_eq!(
        actions,
        ["assert", "retract", "query", "hypothesize", "verify"]
    );
    // 5. test_target_length_constraints
    assert_eq!(props["target"]["minLength"], 1);
    assert_eq!(props["target"]["maxLength"], 4096);
    // 6. test_rationale_length_constraints
    assert_eq!(props["rationale"]["minLength"], 1);
    assert_eq!(props["rationale"]["maxLength"], 1024);
    // 7. test_confidence_bounds
    assert_eq!(props["confidence"]["minimum"].as_f64(), Some(0.0));
    assert_eq!(props["confidence"]["maximum"].as_f64(), Some(1.0));
    assert_eq!(props["confidence"]["default"].as_f64(), Some(0.5));
    // 8. test_context_uncertainty_types
    let kinds = strings(&props["context"]["properties"]["uncertainty_type"]["enum"]);
    assert_eq!(kinds, ["epistemic", "aleatory", "mixed"]);
    // 9. test_source_nodes_uuid_format
    let items = &props["context"]["properties"]["source_nodes"]["items"];
    assert_eq!(items["type"], "string");
    assert_eq!(items["format"], "uuid");
    // 10. test_serialization_roundtrip
    let text = serde_json::to_string(&tools).unwrap();
    assert!(text.contains("epistemic_action") && text.contains("inputSchema"));
    let back: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, tools);
    // 11. test_verify_epistemic_in_all_tools
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "epistemic_action")
    );
    // 12. test_synthetic_valid_input (the seed's §7.1 input): valid, and the server accepts it.
    let synthetic = json!({
        "action_type": "hypothesize",
        "target": "The system should consolidate memories when IC < 0.5",
        "confidence": 0.75,
        "rationale": "Identity crisis threshold per constitution.yaml gwt.self_ego_node.thresholds.critical",
        "context": {
            "source_nodes": ["550e8400-e29b-41d4-a716-446655440000"],
            "uncertainty_type": "epistemic"
        }
    });
    assert!(v.is_valid(&synthetic));
    s.tool_ok("epistemic_action", synthetic);
    // 13. test_edge_case_maximum_target_length: 4096 accepted, 4097 rejected (characters).
    let base = json!({"action_type": "assert", "rationale": "r"});
    let target = |t: String| {
        let mut a = base.clone();
        a["target"] = json!(t);
        a
    };
    assert!(v.is_valid(&target("x".repeat(4096))));
    assert!(v.is_valid(&target("中".repeat(4096))));
    assert!(!v.is_valid(&target("x".repeat(4097))));
    // 14. test_edge_case_minimum_values: 1-char target and rationale, confidence 0.0 are valid;
    // the empty target is not.
    let min = json!({"action_type": "assert", "target": "x", "rationale": "y", "confidence": 0.0});
    assert!(v.is_valid(&min));
    s.tool_ok("epistemic_action", min);
    assert!(!v.is_valid(&target(String::new())));
    // 15. test_edge_case_required_fields: only action_type → invalid (schema and server).
    let partial = json!({"action_type": "assert"});
    assert!(!v.is_valid(&partial));
    assert_eq!(s.tool_err("epistemic_action", partial).0, -32602);
    // And a non-UUID source node fails the schema's format check.
    let bad = json!({"action_type": "assert", "target": "x", "rationale": "y", "context": {"source_nodes": ["nope"]}});
    assert!(!v.is_valid(&bad));
}

fn outputs_match_the_output_schema(backend: Backend) {
    let mut s = Server::start_on(backend);
    let tool = epistemic_entry(&listed_tools(&mut s));
    let v = validator(&tool["outputSchema"]);
    let outs = vec![
        act(&mut s, "hypothesize", "h", Some(0.4)),
        act(&mut s, "verify", "h", Some(0.9)),
        act(&mut s, "assert", "h", Some(0.2)),
        act(&mut s, "query", "h", None),
        act(&mut s, "query", "absent", None),
        act(&mut s, "retract", "h", None),
        act_failed(
            &mut s,
            json!({"action_type": "verify", "target": "absent", "rationale": "r"}),
        ),
    ];
    for out in outs {
        if let Err(e) = v.validate(&out) {
            panic!("{out} violates the output schema: {e}");
        }
    }
}

fn query_returns_the_latest_fifty_events_and_the_full_history_length(backend: Backend) {
    let mut s = Server::start_on(backend);
    act(&mut s, "hypothesize", "long lived", None);
    for i in 0..60 {
        let c = if i % 2 == 0 { 0.6 } else { 0.4 };
        act(&mut s, "verify", "long lived", Some(c));
    }
    let q = act(&mut s, "query", "long lived", None);
    assert_eq!(q["query_result"]["history_length"], 61);
    assert_eq!(q["belief_state"]["history_length"], 61);
    let hist = q["query_result"]["history"].as_array().unwrap();
    assert_eq!(hist.len(), 50);
    // Oldest first: the first hypothesize and ten verifications are left out.
    assert!(hist.iter().all(|e| e["action_type"] == "verify"));
    // Alternating 0.6 / 0.4 evidence cancels in log-odds (ln 1.5 − ln 1.5 = 0): back to 0.5.
    assert!((q["belief_state"]["confidence"].as_f64().unwrap() - 0.5).abs() < TOL);
}

fn a_belief_asserted_in_one_process_is_found_by_another_at_once(backend: Backend) {
    let mut a = Server::start_on(backend);
    a.ready();
    let mut b = Server::start_at(&a.db.clone(), &[]);
    act(&mut a, "hypothesize", "shared belief", Some(0.6));
    let v = act(&mut b, "verify", "Shared Belief", Some(0.9));
    // 0.6 (odds 1.5) × 9 = 13.5 ⇒ 13.5/14.5.
    assert!((v["belief_state"]["confidence"].as_f64().unwrap() - 13.5 / 14.5).abs() < TOL);
    let q = act(&mut a, "query", "shared belief", None);
    assert_eq!(q["query_result"]["history_length"], 2);
    assert_eq!(q["belief_state"]["status"], "verified");
}

//! The five meta-learning tools over the wire, on the real binary: the seed's full-state
//! verification cases, escalation end to end, and every argument error arm.

mod common;

use common::{Backend, Server};
use serde_json::{Value, json};

common::both_backends!(
    status_reflects_recorded_predictions,
    a_large_error_adjusts_lambda_by_the_seed_rule_and_logs_it,
    dry_run_changes_nothing,
    pagination_of_25_events_with_offset_10_returns_10_with_more,
    invalid_arguments_are_rejected_naming_the_field,
    ten_low_cycles_escalate_three_failures_reach_a_human_and_reset_acknowledges,
    bayesian_recalibration_over_the_wire_recovers_a_hidden_lambda,
);

const TOL: f64 = 1e-9;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn status_reflects_recorded_predictions(backend: Backend) {
    let mut s = Server::start_on(backend);
    let empty = s.tool_ok(
        "get_meta_learning_status",
        json!({"include_embedder_breakdown": true}),
    );
    assert_eq!(empty["current_accuracy"], Value::Null);
    assert_eq!(empty["interaction_count"], 0);
    assert_eq!(empty["lifecycle_stage"], "infancy");
    assert_eq!(
        empty["current_lambdas"],
        json!({"lambda_s": 0.7, "lambda_c": 0.3})
    );
    assert_eq!(empty["embedder_accuracy"].as_array().unwrap().len(), 13);

    // accuracies: 1 − |p − a| = 0.9, 0.82, 0.95 on embedders 0, 0, 4
    for (e, p, a) in [(0, 0.5, 0.4), (0, 0.6, 0.78), (4, 0.3, 0.25)] {
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": e, "predicted": p, "actual": a}),
        );
    }
    let st = s.tool_ok(
        "get_meta_learning_status",
        json!({"include_accuracy_history": true, "include_embedder_breakdown": true}),
    );
    let want = (0.9 + 0.82 + 0.95) / 3.0;
    assert!((f(&st["current_accuracy"]) - want).abs() < 1e-9);
    assert_eq!(st["interaction_count"], 3);
    assert_eq!(st["accuracy_history"].as_array().unwrap().len(), 3);
    let per = st["embedder_accuracy"].as_array().unwrap();
    assert!((f(&per[0]) - 0.86).abs() < 1e-9);
    assert!((f(&per[4]) - 0.95).abs() < 1e-9);
    assert_eq!(per[1], Value::Null);
    let w: Vec<f64> = st["embedder_weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(f)
        .collect();
    assert!((w.iter().sum::<f64>() - 1.0).abs() < TOL);
    assert!(w[4] > w[0], "more accurate embedder weighs more");
    // No error exceeded 0.2: λ untouched, no adjustments.
    assert_eq!(st["adjustment_count"], 0);
}

fn a_large_error_adjusts_lambda_by_the_seed_rule_and_logs_it(backend: Backend) {
    let mut s = Server::start_on(backend);
    let r = s.tool_ok(
        "record_prediction",
        json!({"embedder_index": 2, "predicted": 0.8, "actual": 0.5, "domain": "Code"}),
    );
    // δ_s = −α·e = −0.05 · 0.3
    assert!((f(&r["adjustment"]["delta_s"]) + 0.015).abs() < TOL);
    assert!((f(&r["current_lambdas"]["lambda_s"]) - 0.685).abs() < TOL);
    assert_eq!(r["events"], json!(["lambda_adjustment"]));
    let log = s.tool_ok("get_meta_learning_log", json!({"domain": "code"}));
    assert_eq!(log["total_count"], 1);
    let e = &log["events"][0];
    assert_eq!(e["event_type"], "lambda_adjustment");
    assert_eq!(e["domain"], "code");
    assert!((f(&e["prediction_error"]) - 0.3).abs() < TOL);
    assert!((f(&e["lambda_before"]["lambda_s"]) - 0.7).abs() < TOL);
    assert!((f(&e["lambda_after"]["lambda_s"]) - 0.685).abs() < TOL);
    let other = s.tool_ok("get_meta_learning_log", json!({"domain": "medical"}));
    assert_eq!(other["total_count"], 0);
}

fn dry_run_changes_nothing(backend: Backend) {
    let mut s = Server::start_on(backend);
    for i in 0..12 {
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i % 13, "predicted": 0.9, "actual": 0.4, "delta_s": 0.8, "delta_c": 0.2}),
        );
    }
    let before = s.tool_ok(
        "get_meta_learning_status",
        json!({"include_accuracy_history": true}),
    );
    let log_before = s.tool_ok("get_meta_learning_log", json!({"limit": 1000}));
    for force in [false, true] {
        let r = s.tool_ok(
            "trigger_lambda_recalibration",
            json!({"force_bayesian": force, "dry_run": true}),
        );
        assert_eq!(r["dry_run"], true);
        assert_eq!(r["method"], if force { "bayesian" } else { "gradient" });
    }
    let after = s.tool_ok(
        "get_meta_learning_status",
        json!({"include_accuracy_history": true}),
    );
    let log_after = s.tool_ok("get_meta_learning_log", json!({"limit": 1000}));
    assert_eq!(before, after);
    assert_eq!(log_before["events"], log_after["events"]);
}

fn pagination_of_25_events_with_offset_10_returns_10_with_more(backend: Backend) {
    let mut s = Server::start_on(backend);
    // error 0.21 > 0.2 adjusts λ (one event each); accuracy 0.79 never raises an alert.
    for i in 0..25 {
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i % 13, "predicted": 0.71, "actual": 0.5}),
        );
    }
    let page = s.tool_ok("get_meta_learning_log", json!({"limit": 10, "offset": 10}));
    assert_eq!(page["events"].as_array().unwrap().len(), 10);
    assert_eq!(page["total_count"], 25);
    assert_eq!(page["has_more"], true);
    let last = s.tool_ok("get_meta_learning_log", json!({"limit": 10, "offset": 20}));
    assert_eq!(last["events"].as_array().unwrap().len(), 5);
    assert_eq!(last["has_more"], false);
    // Newest first, and pages do not overlap.
    let all = s.tool_ok("get_meta_learning_log", json!({"limit": 25}));
    let ts: Vec<&str> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["timestamp"].as_str().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(page["events"][0], all["events"][10]);
    // Time filters really filter.
    let future = s.tool_ok(
        "get_meta_learning_log",
        json!({"start_time": "2999-01-01T00:00:00Z"}),
    );
    assert_eq!(future["total_count"], 0);
    let past = s.tool_ok(
        "get_meta_learning_log",
        json!({"end_time": "2000-01-01T00:00:00+00:00"}),
    );
    assert_eq!(past["total_count"], 0);
    let typed = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "lambda_adjustment", "limit": 1}),
    );
    assert_eq!(typed["total_count"], 25);
}

fn invalid_arguments_are_rejected_naming_the_field(backend: Backend) {
    let mut s = Server::start_on(backend);
    let cases = [
        (
            "get_meta_learning_log",
            json!({"event_type": "invalid_event_type"}),
            "event_type",
        ),
        (
            "get_meta_learning_log",
            json!({"domain": "finance"}),
            "domain",
        ),
        (
            "get_meta_learning_log",
            json!({"start_time": "not-a-timestamp"}),
            "start_time",
        ),
        ("get_meta_learning_log", json!({"limit": 0}), "limit"),
        ("get_meta_learning_log", json!({"limit": 1001}), "limit"),
        ("get_meta_learning_log", json!({"offset": -1}), "offset"),
        (
            "get_meta_learning_status",
            json!({"include_accuracy_history": "yes"}),
            "include_accuracy_history",
        ),
        (
            "trigger_lambda_recalibration",
            json!({"domain": "finance"}),
            "domain",
        ),
        (
            "trigger_lambda_recalibration",
            json!({"dry_run": 1}),
            "dry_run",
        ),
        (
            "record_prediction",
            json!({"embedder_index": 13, "predicted": 0.5, "actual": 0.5}),
            "embedder_index",
        ),
        (
            "record_prediction",
            json!({"embedder_index": 0, "predicted": 1.5, "actual": 0.5}),
            "predicted",
        ),
        (
            "record_prediction",
            json!({"embedder_index": 0, "predicted": 0.5}),
            "actual",
        ),
        (
            "record_prediction",
            json!({"predicted": 0.5, "actual": 0.5}),
            "embedder_index",
        ),
        (
            "record_prediction",
            json!({"embedder_index": 0, "predicted": 0.5, "actual": -0.1}),
            "actual",
        ),
        (
            "record_prediction",
            json!({"embedder_index": 0, "predicted": 0.5, "actual": 0.5, "delta_s": 0.2}),
            "delta_c",
        ),
        (
            "record_prediction",
            json!({"embedder_index": 0, "predicted": 0.5, "actual": 0.5, "bogus": 1}),
            "bogus",
        ),
        (
            "record_prediction",
            json!({"prediction_id": "not-a-uuid", "actual": 0.5}),
            "prediction_id",
        ),
        (
            "record_prediction",
            json!({"prediction_id": "6f1c1c4e-8e0a-4c55-9a43-1d1f0a9b2c3d", "actual": 0.5}),
            "6f1c1c4e-8e0a-4c55-9a43-1d1f0a9b2c3d",
        ),
        (
            "reset_meta_learning",
            json!({"scope": "everything", "rationale": "x"}),
            "scope",
        ),
        ("reset_meta_learning", json!({"scope": "all"}), "rationale"),
    ];
    for (tool, args, field) in cases {
        let (code, msg) = s.tool_err(tool, args.clone());
        assert_eq!(code, -32602, "{tool} {args}: {msg}");
        assert!(
            msg.contains(field),
            "{tool} {args}: message {msg:?} should name {field}"
        );
    }
    // A start after the end is an empty range, not an argument error (no JSON Schema keyword
    // compares two fields, so the schema could not say it): it selects nothing.
    let empty = s.tool_ok(
        "get_meta_learning_log",
        json!({"start_time": "2025-02-01T00:00:00Z", "end_time": "2025-01-01T00:00:00Z"}),
    );
    assert_eq!(empty["total_count"], 0);
    assert_eq!(empty["has_more"], false);
    // Nothing was recorded by the failed calls.
    assert_eq!(
        s.tool_ok("get_meta_learning_status", json!({}))["interaction_count"],
        0
    );
}

fn ten_low_cycles_escalate_three_failures_reach_a_human_and_reset_acknowledges(backend: Backend) {
    let mut s = Server::start_on(backend);
    // accuracy 0.4 every time, no ΔS/ΔC: each automatic Bayesian run fails (no samples).
    let mut bayes_runs = 0;
    for i in 1..=30 {
        let r = s.tool_ok(
            "record_prediction",
            json!({"embedder_index": 0, "predicted": 0.9, "actual": 0.3}),
        );
        if !r["bayesian_recalibration"].is_null() {
            bayes_runs += 1;
            assert_eq!(i % 10, 0, "escalation every 10 consecutive low cycles");
            assert_eq!(r["bayesian_recalibration"]["success"], false);
        }
    }
    assert_eq!(bayes_runs, 3);
    let st = s.tool_ok("get_meta_learning_status", json!({}));
    assert_eq!(st["escalation_status"], "human_review_required");
    let human = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "human_escalation"}),
    );
    assert_eq!(human["total_count"], 1);
    let alerts = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "accuracy_alert"}),
    );
    assert_eq!(
        alerts["total_count"], 1,
        "one alert while accuracy stays low (hysteresis)"
    );
    let escalations = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "bayesian_escalation"}),
    );
    assert_eq!(escalations["total_count"], 3);

    let r = s.tool_ok(
        "reset_meta_learning",
        json!({"scope": "escalation", "rationale": "reviewed: outcomes were mislabelled"}),
    );
    assert_eq!(r["escalation_status"], "normal");
    let healing = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "self_healing"}),
    );
    assert_eq!(healing["total_count"], 1);
    assert!(
        healing["events"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("mislabelled")
    );
}

fn bayesian_recalibration_over_the_wire_recovers_a_hidden_lambda(backend: Backend) {
    let mut s = Server::start_on(backend);
    let lambda_star = 0.35;
    // Deterministic pseudo-random ΔS, ΔC from a linear congruential sequence.
    let mut x: u64 = 12345;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..60 {
        let (ds, dc) = (next(), next());
        let actual = lambda_star * ds + (1.0 - lambda_star) * dc;
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i % 13, "predicted": 0.5, "actual": actual, "delta_s": ds, "delta_c": dc, "domain": "research"}),
        );
    }
    let r = s.tool_ok(
        "trigger_lambda_recalibration",
        json!({"force_bayesian": true, "domain": "research"}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["method"], "bayesian");
    let got = f(&r["new_lambdas"]["lambda_s"]);
    assert!((got - lambda_star).abs() < 0.02, "λ_s {got}");
    assert!(f(&r["bo_iterations"]) <= 15.0);
    assert!(f(&r["replay_accuracy_after"]) >= f(&r["replay_accuracy_before"]));
    let st = s.tool_ok("get_meta_learning_status", json!({}));
    assert_eq!(
        st["current_lambdas"]["lambda_s"],
        r["new_lambdas"]["lambda_s"]
    );
    // No predictions in another domain: Bayesian cannot evaluate and says why.
    let none = s.tool_ok(
        "trigger_lambda_recalibration",
        json!({"force_bayesian": true, "domain": "legal"}),
    );
    assert_eq!(none["success"], false);
    assert!(none["error"].as_str().unwrap().contains("at least 10"));
}

//! The four ATC tools over the wire, on the real binary: observations change the metrics,
//! Level 2 calibrates over-confident data, state survives a restart, the timeframe filters by
//! time, and every argument error arm.

mod common;

use chrono::{Duration, Utc};
use common::{Backend, Server};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

common::both_backends!(
    observations_change_the_metrics,
    level2_lowers_the_ece_of_overconfident_data,
    restart_keeps_temperatures_bandit_statistics_and_thresholds,
    level4_moves_theta_acc_to_the_balanced_accuracy_optimum,
    level1_reports_threshold_drift,
    timeframe_filters_by_observation_time,
    every_error_arm,
    two_processes_on_one_database_see_each_others_observations,
    level2_reports_the_ece_after_in_sample_and_cross_validated,
    after_level2_level2_is_no_longer_recommended,
    an_empty_window_does_not_call_for_level4_and_times_are_utc_micros,
    schemas_and_server_agree_on_edge_values,
);

const TOL: f64 = 1e-9;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Over-confident observations: z ~ N(1, 1.5²), correct ~ Bernoulli(σ(z)), reported σ(2z).
fn overconfident(embedder_id: u8, n: usize, seed: u64, domain: &str) -> Vec<Value> {
    let mut rng = StdRng::seed_from_u64(seed);
    let normal = Normal::new(1.0, 1.5).unwrap();
    (0..n)
        .map(|_| {
            let z: f64 = normal.sample(&mut rng);
            let u: f64 = rng.random();
            json!({"embedder_id": embedder_id, "confidence": sigmoid(2.0 * z),
                   "correct": u < sigmoid(z), "domain": domain})
        })
        .collect()
}

/// `tool_ok` that also validates `structuredContent` against the tool's declared `outputSchema`
/// (as the Python SDK does).
fn ok(s: &mut Server, name: &str, args: Value) -> Value {
    let out = s.tool_ok(name, args.clone());
    let list = s.request("tools/list", Value::Null);
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"));
    let validator = jsonschema::validator_for(&tool["outputSchema"]).unwrap();
    if let Err(e) = validator.validate(&out) {
        panic!("{name} {args}: output violates its outputSchema: {e}\n{out}");
    }
    out
}

/// The descriptions of the OVERRIDE directives, oldest first (from `list_directive_history`).
fn overrides(s: &mut Server) -> Vec<String> {
    let h = s.tool_ok("list_directive_history", json!({"limit": 1000}));
    let mut out: Vec<String> = h["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["intervention_type"] == "OVERRIDE")
        .map(|e| e["description"].as_str().expect("description").to_string())
        .collect();
    out.reverse();
    out
}

fn observations_change_the_metrics(backend: Backend) {
    let mut s = Server::start_on(backend);
    let empty = ok(&mut s, "get_calibration_metrics", json!({}));
    assert_eq!(empty["observation_count"], 0);
    assert_eq!(empty["metrics"], Value::Null);
    assert_eq!(empty["status"], Value::Null);

    // E3 (T = 1). Raw bins: 0.9 → (0.8, 0.9] conf 0.9 acc 0.5; 0.6 → conf 0.6 acc 1;
    // 0.2 → conf 0.2 acc 0. ECE = (2·0.4 + 0.4 + 0.2)/4 = 0.35, MCE = 0.4,
    // Brier = (0.01 + 0.81 + 0.16 + 0.04)/4 = 0.255.
    let obs = json!([
        {"embedder_id": 3, "confidence": 0.9, "correct": true},
        {"embedder_id": 3, "confidence": 0.9, "correct": false},
        {"embedder_id": 3, "confidence": 0.6, "correct": true},
        {"embedder_id": 3, "confidence": 0.2, "correct": false}
    ]);
    let rec = ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    assert_eq!(rec["accepted"], 4);
    assert_eq!(rec["window_sizes"][2], 4);
    assert!((f(&rec["metrics_after"]["raw"]["ece"]) - 0.35).abs() < TOL);

    let m = ok(
        &mut s,
        "get_calibration_metrics",
        json!({"timeframe": "1h", "include_bins": true}),
    );
    assert_eq!(m["observation_count"], 4);
    assert!((f(&m["raw_metrics"]["ece"]) - 0.35).abs() < TOL);
    assert!((f(&m["raw_metrics"]["mce"]) - 0.4).abs() < TOL);
    assert!((f(&m["raw_metrics"]["brier"]) - 0.255).abs() < TOL);
    assert_eq!(m["status"], "Critical");
    assert_eq!(m["should_recalibrate"], true);
    let bins = m["reliability"]["raw"].as_array().unwrap();
    assert_eq!(bins.len(), 10);
    assert_eq!(bins[8]["count"], 2);
    assert_eq!(bins[8]["accuracy"], 0.5);
    assert_eq!(bins[0]["mean_confidence"], Value::Null);

    // Per-embedder and per-domain filters.
    let e4 = ok(&mut s, "get_calibration_metrics", json!({"embedder_id": 4}));
    assert_eq!(e4["observation_count"], 0);
    let code = ok(&mut s, "get_calibration_metrics", json!({"domain": "code"}));
    assert_eq!(code["observation_count"], 0);
    assert_eq!(code["domain"], "Code");
}

fn level2_lowers_the_ece_of_overconfident_data(backend: Backend) {
    let mut s = Server::start_on(backend);
    let obs = overconfident(1, 3000, 7, "General");
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    let before = ok(&mut s, "get_calibration_metrics", json!({}));

    let dry = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 2, "dry_run": true}),
    );
    assert_eq!(dry["recalibration"]["action"], "computed");
    assert_eq!(
        ok(&mut s, "get_calibration_metrics", json!({}))["metrics"],
        before["metrics"]
    );

    let r = ok(&mut s, "trigger_recalibration", json!({"level": 2}));
    assert_eq!(r["success"], true);
    assert_eq!(r["metrics_scope"], "all");
    let e1 = &r["recalibration"]["temperatures"][0];
    assert_eq!(e1["samples"], 3000);
    assert!(f(&e1["temperature_after"]) > 1.5, "{e1}");
    assert!(f(&e1["nll_after"]) < f(&e1["nll_before"]));
    assert!(f(&e1["ece_after"]) < f(&e1["ece_before"]));
    assert_eq!(
        r["recalibration"]["temperatures"][1]["skipped"],
        "0 samples, need at least 10"
    );
    let ece_before = f(&r["metrics_before"]["calibrated"]["ece"]);
    let ece_after = f(&r["metrics_after"]["calibrated"]["ece"]);
    assert!(ece_after < ece_before, "{ece_before} -> {ece_after}");
    assert!(ece_after < 0.05, "{ece_after}");
    assert_eq!(r["metrics_after"]["raw"], r["metrics_before"]["raw"]);

    let after = ok(&mut s, "get_calibration_metrics", json!({}));
    assert!((f(&after["metrics"]["ece"]) - ece_after).abs() < TOL);
    assert_eq!(after["raw_metrics"], before["raw_metrics"]);
    let st = ok(&mut s, "get_threshold_status", json!({"embedder_id": 1}));
    assert_eq!(st["embedders"].as_array().unwrap().len(), 1);
    assert_eq!(st["embedders"][0]["temperature"], e1["temperature_after"]);

    let notes = overrides(&mut s);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("level 2") && notes[0].contains("E1 T"),
        "{notes:?}"
    );
}

fn restart_keeps_temperatures_bandit_statistics_and_thresholds(backend: Backend) {
    let mut s = Server::start_on(backend);
    let mut obs = overconfident(5, 500, 3, "Legal");
    // Bandit feedback on the Legal bandit: 0.77 succeeds 9 times of 10.
    for i in 0..10 {
        obs.push(
            json!({"embedder_id": 2, "confidence": 0.8, "correct": i < 9, "domain": "Legal",
                        "threshold_name": "theta_acc", "threshold_used": 0.77}),
        );
    }
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    ok(&mut s, "trigger_recalibration", json!({"level": 2}));
    let l3 = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 3, "domain": "legal", "seed": 42}),
    );
    assert_eq!(l3["recalibration"]["successes"], json!([0, 0, 0, 9, 0]));
    assert_eq!(l3["recalibration"]["failures"], json!([0, 0, 0, 1, 0]));
    let l4 = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 4, "domain": "Legal"}),
    );
    assert_eq!(l4["success"], true, "{l4}");
    let applied = l4["recalibration"]["applied"].as_bool().unwrap();
    let status = ok(&mut s, "get_threshold_status", json!({"domain": "Legal"}));
    if applied {
        assert_eq!(
            status["thresholds"]["theta_acc"]["value"],
            l4["recalibration"]["theta_acc_after"]
        );
    }
    assert_eq!(status["bandit"]["total_pulls"], 10);
    assert_eq!(
        status["bandit"]["selected_threshold"],
        l3["recalibration"]["selected_threshold"]
    );
    assert!(status["last_level4_run"].is_string());
    let metrics = ok(
        &mut s,
        "get_calibration_metrics",
        json!({"timeframe": "30d", "include_bins": true}),
    );

    let mut s = s.restart();
    assert_eq!(
        ok(&mut s, "get_threshold_status", json!({"domain": "Legal"})),
        status
    );
    let again = ok(
        &mut s,
        "get_calibration_metrics",
        json!({"timeframe": "30d", "include_bins": true}),
    );
    assert_eq!(again["metrics"], metrics["metrics"]);
    assert_eq!(again["reliability"], metrics["reliability"]);

    // Triggering Level 3 again selects again without wiping the statistics; reset does.
    let again = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 3, "domain": "Legal", "seed": 1}),
    );
    assert_eq!(again["recalibration"]["total_pulls"], 10);
    let reset = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 3, "domain": "Legal", "reset": true}),
    );
    assert_eq!(reset["recalibration"]["total_pulls"], 0);
    let mut s = s.restart();
    let st = ok(&mut s, "get_threshold_status", json!({"domain": "Legal"}));
    assert_eq!(st["bandit"]["total_pulls"], 0);
    assert_eq!(st["embedders"], status["embedders"]);
}

fn level4_moves_theta_acc_to_the_balanced_accuracy_optimum(backend: Backend) {
    let mut s = Server::start_on(backend);
    // E2 (T = 1): right answers at 0.66..0.96, wrong ones at 0.34..0.64 → θ in (0.64, 0.66].
    let obs: Vec<Value> = (0..40)
        .flat_map(|i| {
            let step = 0.3 * f64::from(i) / 40.0;
            [
                json!({"embedder_id": 2, "confidence": 0.66 + step, "correct": true, "domain": "Code"}),
                json!({"embedder_id": 2, "confidence": 0.64 - step, "correct": false, "domain": "Code"}),
            ]
        })
        .collect();
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    let dry = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 4, "domain": "Code", "dry_run": true}),
    );
    assert_eq!(dry["recalibration"]["applied"], false);
    let code = ok(&mut s, "get_threshold_status", json!({"domain": "Code"}));
    assert!((f(&code["thresholds"]["theta_acc"]["value"]) - 0.772).abs() < TOL);
    assert_eq!(code["last_level4_run"], Value::Null);

    let r = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 4, "domain": "Code"}),
    );
    let rc = &r["recalibration"];
    assert_eq!(rc["applied"], true, "{r}");
    let theta = f(&rc["theta_acc_after"]);
    assert!(theta > 0.64 && theta <= 0.66, "{theta}");
    assert!((f(&rc["balanced_accuracy_after"]) - 1.0).abs() < TOL);
    assert!(f(&rc["balanced_accuracy_before"]) < 1.0);
    let st = ok(&mut s, "get_threshold_status", json!({"domain": "Code"}));
    assert_eq!(f(&st["thresholds"]["theta_acc"]["value"]), theta);
    assert!(f(&st["thresholds"]["theta_warn"]["value"]) < theta);
    assert!(f(&st["thresholds"]["theta_opt"]["value"]) > theta);

    // Too few observations in another domain: reported, not an error.
    let r = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 4, "domain": "Medical"}),
    );
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "0 observations, need at least 20");
    assert_eq!(overrides(&mut s).len(), 1);
}

fn level1_reports_threshold_drift(backend: Backend) {
    let mut s = Server::start_on(backend);
    // General theta_acc is 0.74; the agent keeps using 0.80 ± 0.01.
    let obs: Vec<Value> = (0..60)
        .map(|i| {
            json!({"embedder_id": 4, "confidence": 0.7, "correct": i % 3 != 0,
                        "threshold_name": "theta_acc",
                        "threshold_used": if i % 2 == 0 { 0.81 } else { 0.79 }})
        })
        .collect();
    let rec = ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    assert_eq!(rec["threshold_drift_updates"], 60);
    assert_eq!(rec["bandit_updates"], 0);
    let r = ok(&mut s, "trigger_recalibration", json!({"level": 1}));
    let score = f(&r["recalibration"]["drift_scores"]["theta_acc"]);
    assert!(score > 3.0, "{r}");
    assert_eq!(r["recalibration"]["recommended_levels"][0], 2);
    let m = ok(&mut s, "get_calibration_metrics", json!({}));
    assert!(
        m["recommended_levels"]
            .as_array()
            .unwrap()
            .contains(&json!(3))
    );
    assert!(overrides(&mut s).is_empty());
}

fn timeframe_filters_by_observation_time(backend: Backend) {
    let mut s = Server::start_on(backend);
    let now = Utc::now();
    let at = |ago: Duration, correct: bool| {
        json!({"embedder_id": 6, "confidence": 0.7, "correct": correct,
               "timestamp": (now - ago).to_rfc3339()})
    };
    let obs = json!([
        {"embedder_id": 6, "confidence": 0.7, "correct": true},
        at(Duration::minutes(30), true),
        at(Duration::hours(5), false),
        at(Duration::hours(5), false),
        at(Duration::days(3), true),
        at(Duration::days(20), false),
        at(Duration::days(45), true),
    ]);
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    // counts and accuracies per window: 1h → 2 (both right); 24h → 4 (2 right); 7d → 5 (3);
    // 30d → 6 (3).
    for (tf, n, acc) in [
        ("1h", 2, 1.0),
        ("24h", 4, 0.5),
        ("7d", 5, 0.6),
        ("30d", 6, 0.5),
    ] {
        let m = ok(&mut s, "get_calibration_metrics", json!({"timeframe": tf}));
        assert_eq!(m["observation_count"], n, "{tf}");
        assert!(
            (f(&m["raw_metrics"]["accuracy"]) - acc).abs() < TOL,
            "{tf}: {m}"
        );
    }
}

fn every_error_arm(backend: Backend) {
    let mut s = Server::start_on(backend);
    let good = json!({"embedder_id": 1, "confidence": 0.5, "correct": true});
    let with = |k: &str, v: Value| {
        let mut o = good.clone();
        o[k] = v;
        json!({"observations": [o]})
    };
    let too_many: Vec<Value> = (0..10_001).map(|_| good.clone()).collect();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "trigger_recalibration",
            json!({}),
            "Missing required 'level' parameter. Must be 1, 2, 3, or 4.",
        ),
        (
            "trigger_recalibration",
            json!({"level": 5}),
            "Invalid level 5. Must be 1, 2, 3, or 4.",
        ),
        (
            "trigger_recalibration",
            json!({"level": 0}),
            "Invalid level 0. Must be 1, 2, 3, or 4.",
        ),
        (
            "trigger_recalibration",
            json!({"level": "two"}),
            "Invalid level \"two\". Must be 1, 2, 3, or 4.",
        ),
        (
            "trigger_recalibration",
            json!({"level": 2, "domain": "finance"}),
            "Invalid domain \"finance\". Valid values: Code, Medical, Legal, Creative, Research, General",
        ),
        (
            "trigger_recalibration",
            json!({"level": 2, "dry_run": "yes"}),
            "'dry_run' must be a boolean",
        ),
        (
            "trigger_recalibration",
            json!({"level": 2, "reset": true}),
            "'reset' applies to level 3 only",
        ),
        (
            "trigger_recalibration",
            json!({"level": 3, "seed": -1}),
            "'seed' must be an integer",
        ),
        (
            "trigger_recalibration",
            json!({"level": 1, "force": true}),
            "unknown field 'force'",
        ),
        (
            "get_calibration_metrics",
            json!({"timeframe": "2h"}),
            "Invalid timeframe \"2h\". Valid values: 1h, 24h, 7d, 30d",
        ),
        (
            "get_calibration_metrics",
            json!({"embedder_id": 14}),
            "'embedder_id' must be an integer in 1..=13",
        ),
        (
            "get_threshold_status",
            json!({"domain": 3}),
            "Invalid domain 3.",
        ),
        (
            "get_threshold_status",
            json!({"embedder_id": 0}),
            "'embedder_id' must be an integer in 1..=13",
        ),
        (
            "record_calibration_observations",
            json!({}),
            "missing required field 'observations'",
        ),
        (
            "record_calibration_observations",
            json!({"observations": {}}),
            "must be an array",
        ),
        (
            "record_calibration_observations",
            json!({"observations": []}),
            "must hold 1..=10000 observations, got 0",
        ),
        (
            "record_calibration_observations",
            json!({"observations": too_many}),
            "got 10001",
        ),
        (
            "record_calibration_observations",
            json!({"observations": [good, 3]}),
            "observations[1]: must be an object",
        ),
        (
            "record_calibration_observations",
            with("embedder_id", json!(0)),
            "observations[0]: field 'embedder_id' must be an integer in 1..=13",
        ),
        (
            "record_calibration_observations",
            with("confidence", json!(1.5)),
            "observations[0]: field 'confidence' must be in [0, 1], got 1.5",
        ),
        (
            "record_calibration_observations",
            with("correct", json!(1)),
            "observations[0]: field 'correct' must be a boolean",
        ),
        (
            "record_calibration_observations",
            with("domain", json!("finance")),
            "Invalid domain \"finance\"",
        ),
        (
            "record_calibration_observations",
            with("threshold_name", json!("theta_x")),
            "Invalid threshold_name \"theta_x\". Valid values: theta_opt, theta_acc",
        ),
        (
            "record_calibration_observations",
            with("threshold_used", json!(-0.1)),
            "field 'threshold_used' must be in [0, 1]",
        ),
        (
            "record_calibration_observations",
            with("timestamp", json!("yesterday")),
            "Invalid timestamp format 'yesterday' in field 'timestamp'",
        ),
        (
            "record_calibration_observations",
            with("extra", json!(1)),
            "observations[0]: unknown field 'extra'",
        ),
    ];
    for (tool, args, expected) in cases {
        let (code, message) = s.tool_err(tool, args.clone());
        assert_eq!(code, -32602, "{tool} {args}");
        assert!(
            message.contains(expected),
            "{tool}: {message:?} lacks {expected:?}"
        );
    }
    // A rejected call records nothing.
    let m = ok(
        &mut s,
        "get_calibration_metrics",
        json!({"timeframe": "30d"}),
    );
    assert_eq!(m["observation_count"], 0);
}

fn two_processes_on_one_database_see_each_others_observations(backend: Backend) {
    let fresh = backend.fresh();
    let db = fresh.target.clone();
    let mut a = Server::start_at(&db, &[]);
    let mut b = Server::start_at(&db, &[]);
    let batch = |n: usize, embedder_id: u8| -> Value {
        let obs: Vec<Value> = (0..n)
            .map(|i| {
                json!({"embedder_id": embedder_id, "confidence": 0.8, "correct": i % 4 != 0,
                            "threshold_used": 0.72})
            })
            .collect();
        json!({ "observations": obs })
    };
    ok(&mut a, "record_calibration_observations", batch(5, 1));
    let rec = ok(&mut b, "record_calibration_observations", batch(12, 2));
    assert_eq!(
        rec["window_sizes"][0], 5,
        "b reloaded a's observations first"
    );
    let m = ok(&mut a, "get_calibration_metrics", json!({}));
    assert_eq!(m["observation_count"], 17);
    let st = ok(&mut a, "get_threshold_status", json!({}));
    assert_eq!(st["bandit"]["total_pulls"], 17);
    // E2: 12 observations at 0.8, 9 right (i % 4 != 0) → the NLL optimum is T with σ(logit(0.8)/T)
    // = 0.75, i.e. T = ln 4 / ln 3 ≈ 1.2619, inside [0.5, 2].
    let r = ok(&mut b, "trigger_recalibration", json!({"level": 2}));
    let t2 = f(&r["recalibration"]["temperatures"][1]["temperature_after"]);
    assert!((t2 - 4f64.ln() / 3f64.ln()).abs() < 1e-9, "{t2}");
    let sa = ok(&mut a, "get_threshold_status", json!({}));
    let sb = ok(&mut b, "get_threshold_status", json!({}));
    assert_eq!(sa["embedders"], sb["embedders"]);
    assert_eq!(f(&sa["embedders"][1]["temperature"]), t2);
}

/// The 20 observations of the hand-computed cross-validation case (service
/// `temperature::tests::cross_validation_by_hand`): E1 at confidence 0.8, folds of four in the
/// order sent, `[✓✓✓✓] [✓✓✓✓] [✓✓✓✓] [✓✓✗✗] [✓✓✗✗]`.
fn twenty_by_fold() -> Value {
    let obs: Vec<Value> = (0..20)
        .map(|i| json!({"embedder_id": 1, "confidence": 0.8, "correct": i < 12 || i % 4 < 2}))
        .collect();
    json!({ "observations": obs })
}

fn level2_reports_the_ece_after_in_sample_and_cross_validated(backend: Backend) {
    let mut s = Server::start_on(backend);
    ok(&mut s, "record_calibration_observations", twenty_by_fold());
    let r = ok(&mut s, "trigger_recalibration", json!({"level": 2}));
    let rc = &r["recalibration"];
    // In sample T = 1 makes every confidence equal the accuracy 0.8: ECE 0. Out of fold the
    // temperatures fitted on the other folds predict 0.75 for twelve right answers and 0.875
    // for eight of which four are right: ECE = 0.6·0.25 + 0.4·0.375 = 0.3.
    assert_eq!(rc["cv_folds"], 5);
    assert!(f(&rc["ece_after_in_sample"]) < TOL, "{rc}");
    assert!(
        (f(&rc["ece_after_cross_validated"]) - 0.3).abs() < TOL,
        "{rc}"
    );
    let e1 = &rc["temperatures"][0];
    assert!((f(&e1["temperature_after"]) - 1.0).abs() < TOL);
    assert_eq!(e1["ece_after"], e1["ece_after_in_sample"]);
    assert!((f(&e1["ece_after_cross_validated"]) - 0.3).abs() < TOL);
    assert_eq!(
        rc["temperatures"][1]["ece_after_cross_validated"],
        Value::Null
    );
    assert!(
        (f(&r["metrics_after"]["calibrated"]["ece"]) - f(&rc["ece_after_in_sample"])).abs() < TOL
    );
}

fn after_level2_level2_is_no_longer_recommended(backend: Backend) {
    let mut s = Server::start_on(backend);
    // 80 % right at 0.9 (over-confident) and 90 % right at 0.65 (under-confident): one
    // temperature cannot fix both, so calibration stays Poor after Level 2.
    let obs: Vec<Value> = (0..60)
        .flat_map(|i| {
            [
                json!({"embedder_id": 1, "confidence": 0.9, "correct": i % 10 < 8}),
                json!({"embedder_id": 1, "confidence": 0.65, "correct": i % 10 < 9}),
            ]
        })
        .collect();
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    let before = ok(&mut s, "get_calibration_metrics", json!({}));
    assert!(
        before["recommended_levels"]
            .as_array()
            .unwrap()
            .contains(&json!(2)),
        "{before}"
    );
    let r = ok(&mut s, "trigger_recalibration", json!({"level": 2}));
    let after = ok(&mut s, "get_calibration_metrics", json!({}));
    assert_ne!(
        after["status"], "Excellent",
        "the case needs data Level 2 cannot fix"
    );
    for (what, levels, advice) in [
        ("trigger", &r["recommended_levels"], &r["recommendations"]),
        (
            "metrics",
            &after["recommended_levels"],
            &after["recommendations"],
        ),
    ] {
        assert!(
            !levels.as_array().unwrap().contains(&json!(2)),
            "{what}: {levels}"
        );
        assert!(
            advice
                .as_array()
                .unwrap()
                .iter()
                .all(|a| !a.as_str().unwrap().contains("level 2")),
            "{what}: {advice}"
        );
        assert!(
            levels.as_array().unwrap().contains(&json!(4)),
            "{what}: {levels}"
        );
    }
    // A dry run changes nothing, so Level 2 stays recommended after one.
    let mut s = Server::start_on(backend);
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    let dry = ok(
        &mut s,
        "trigger_recalibration",
        json!({"level": 2, "dry_run": true}),
    );
    assert!(
        dry["recommended_levels"]
            .as_array()
            .unwrap()
            .contains(&json!(2)),
        "{dry}"
    );
}

fn an_empty_window_does_not_call_for_level4_and_times_are_utc_micros(backend: Backend) {
    let mut s = Server::start_on(backend);
    let three_days_ago = (Utc::now() - Duration::days(3)).to_rfc3339();
    let obs: Vec<Value> = (0..30)
        .map(|i| {
            json!({"embedder_id": 2, "confidence": 0.9, "correct": i % 2 == 0,
                   "timestamp": three_days_ago})
        })
        .collect();
    ok(
        &mut s,
        "record_calibration_observations",
        json!({"observations": obs}),
    );
    let week = ok(
        &mut s,
        "get_calibration_metrics",
        json!({"timeframe": "7d"}),
    );
    assert_eq!(week["observation_count"], 30);
    assert_eq!(week["should_optimize_level4"], true, "{week}");
    let hour = ok(
        &mut s,
        "get_calibration_metrics",
        json!({"timeframe": "1h"}),
    );
    assert_eq!(hour["observation_count"], 0);
    assert_eq!(hour["status"], Value::Null);
    assert_eq!(hour["should_optimize_level4"], false, "{hour}");
    // Timestamps on the wire: RFC 3339, UTC, `Z`, microseconds.
    let utc_micros = |v: &Value| {
        let t = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
        assert!(t.ends_with('Z') && t.len() == 27, "{t}");
    };
    utc_micros(&hour["since"]);
    ok(&mut s, "trigger_recalibration", json!({"level": 4}));
    let st = ok(&mut s, "get_threshold_status", json!({}));
    utc_micros(&st["last_level4_run"]);
}

/// The published input schema and the server agree on every edge value of every field (the
/// generic property test runs more cases after merging; this one pins the ATC rules).
fn schemas_and_server_agree_on_edge_values(backend: Backend) {
    let mut s = Server::start_on(backend);
    let list = s.request("tools/list", Value::Null);
    let schema = |name: &str| {
        let tool = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        tool["inputSchema"].clone()
    };
    let edges = [
        json!(null),
        json!(""),
        json!("   "),
        json!("code"),
        json!(" code "),
        json!("CODE"),
        json!("General"),
        json!("24H"),
        json!("2h"),
        json!("theta_acc"),
        json!("THETA_ACC"),
        json!("2024-01-15T10:30:00Z"),
        json!("2024-01-15 10:30:00Z"),
        json!(0),
        json!(1),
        json!(2),
        json!(3),
        json!(3.0),
        json!(4),
        json!(5),
        json!(2.5),
        json!(-1),
        json!(0.5),
        json!(1.5),
        json!(13),
        json!(14),
        json!(1e16),
        json!(9_007_199_254_740_991_i64),
        json!(true),
        json!(false),
        json!([]),
        json!({}),
    ];
    let mut cases: Vec<(&str, Value)> = Vec::new();
    for base in [json!({"level": 3}), json!({"level": 2}), json!({})] {
        for field in ["level", "domain", "dry_run", "reset", "seed", "other"] {
            for v in &edges {
                let mut args = base.clone();
                args[field] = v.clone();
                cases.push(("trigger_recalibration", args));
            }
        }
    }
    for field in ["timeframe", "domain", "embedder_id", "include_bins"] {
        for v in &edges {
            cases.push(("get_calibration_metrics", json!({ field: v })));
        }
    }
    for field in ["domain", "embedder_id"] {
        for v in &edges {
            cases.push(("get_threshold_status", json!({ field: v })));
        }
    }
    let good = json!({"embedder_id": 1, "confidence": 0.5, "correct": true});
    for field in [
        "embedder_id",
        "confidence",
        "correct",
        "domain",
        "threshold_name",
        "threshold_used",
        "timestamp",
    ] {
        for v in &edges {
            let mut o = good.clone();
            o[field] = v.clone();
            cases.push((
                "record_calibration_observations",
                json!({"observations": [o]}),
            ));
        }
    }
    for v in &edges {
        cases.push((
            "record_calibration_observations",
            json!({ "observations": v }),
        ));
        cases.push((
            "record_calibration_observations",
            json!({ "observations": [v] }),
        ));
    }
    let mut checked = 0;
    for (tool, args) in cases {
        let r = s.call(tool, args.clone());
        // Invalid arguments are an isError result (a session without a handshake, SEP-1303).
        if let Some(e) = r.get("error") {
            assert_eq!(e["code"], -32602, "{tool} {args}: {r}");
        }
        common::assert_schema_agrees(tool, &schema(tool), &args, &r);
        checked += 1;
    }
    assert!(checked > 800, "{checked}");
}

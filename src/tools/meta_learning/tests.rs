//! Schema truth for the meta-learning tools (the published input schema and the parser give the
//! same verdict on edge values, mutations and random combinations) and output schemas checked
//! against real answers of every kind.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::*;
use crate::store::{DbPath, Store};
use crate::tools::wire::{self, Validate};
use crate::tools::{App, ToolDef};

/// Values every field is tried with.
fn edges() -> Vec<Value> {
    vec![
        json!(null),
        json!(""),
        json!("   "),
        json!("a"),
        json!("code"),
        json!("CODE"),
        json!(" code"),
        json!("lambda_adjustment"),
        json!("Human_Escalation"),
        json!("escalation"),
        json!("All"),
        json!("2024-01-15T10:30:00Z"),
        json!("2024-01-15T10:30:00.5+02:00"),
        json!("2024-01-15 10:30:00Z"),
        json!("550e8400-e29b-41d4-a716-446655440000"),
        json!("{550e8400-e29b-41d4-a716-446655440000}"),
        json!("x".repeat(1025)),
        json!(" ".repeat(1024)),
        json!(0),
        json!(1),
        json!(12),
        json!(13),
        json!(-1),
        json!(0.5),
        json!(0.0015),
        json!(1.5),
        json!(1000),
        json!(1001),
        json!(10.0),
        json!(1e15),
        json!(1e16),
        json!(9_223_372_036_854_775_807_i64),
        json!(u64::MAX),
        json!(true),
        json!([]),
        json!({}),
    ]
}

/// Check that the schema of `T` and the parser agree on `args` (`wire::tests::assert_agree`);
/// the schema's verdict.
fn agree<T: DeserializeOwned + Validate + schemars::JsonSchema>(
    validator: &jsonschema::Validator,
    args: &Value,
) -> bool {
    wire::tests::assert_agree::<T>(&wire::input_schema::<T>(), validator, args)
}

/// Every field of `bases` set to every edge value and removed, one unknown field added, and
/// `random` calls: any combination of fields, or a base with up to three fields changed, drawn
/// from the bases' values and the edges. Returns the
/// number of cases and how many of them were valid.
fn check_tool<T: ToolDef>(bases: &[Value], random: usize) -> (usize, usize) {
    let schema = wire::input_schema::<T::Input>();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let fields: Vec<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let edges = edges();
    let mut cases = 0;
    let mut valid = 0;
    for base in bases {
        // A base may spell a choice in another case: the server accepts it, the schema names
        // one spelling.
        agree::<T::Input>(&validator, base);
        assert!(wire::parse::<T::Input>(base).is_ok(), "{base}");
        for f in &fields {
            for v in &edges {
                let mut args = base.clone();
                args[f.as_str()] = v.clone();
                valid += usize::from(agree::<T::Input>(&validator, &args));
                cases += 1;
            }
            let mut args = base.clone();
            args.as_object_mut().unwrap().remove(f);
            agree::<T::Input>(&validator, &args);
            cases += 1;
        }
        let mut args = base.clone();
        args["unknown"] = json!(1);
        agree::<T::Input>(&validator, &args);
    }
    let mut pool: Vec<Vec<Value>> = vec![edges.clone(); fields.len()];
    for base in bases {
        for (k, f) in fields.iter().enumerate() {
            if let Some(v) = base.get(f) {
                // Valid values weigh more, so that many combinations pass.
                pool[k].extend(std::iter::repeat_n(v.clone(), edges.len()));
            }
        }
    }
    let mut rng = StdRng::seed_from_u64(13);
    for round in 0..random {
        let mut args = Map::new();
        if round % 2 == 0 {
            // Any combination of fields.
            for (k, f) in fields.iter().enumerate() {
                if rng.random_bool(0.5) {
                    let i = rng.random_range(0..pool[k].len());
                    args.insert(f.clone(), pool[k][i].clone());
                }
            }
        } else {
            // A valid call with one to three fields changed or removed.
            args = bases[rng.random_range(0..bases.len())]
                .as_object()
                .unwrap()
                .clone();
            for _ in 0..rng.random_range(1..=3) {
                let k = rng.random_range(0..fields.len());
                if rng.random_bool(0.3) {
                    args.remove(&fields[k]);
                } else {
                    let i = rng.random_range(0..pool[k].len());
                    args.insert(fields[k].clone(), pool[k][i].clone());
                }
            }
        }
        valid += usize::from(agree::<T::Input>(&validator, &Value::Object(args)));
        cases += 1;
    }
    (cases, valid)
}

#[test]
fn input_schemas_tell_the_truth() {
    let uuid = "550e8400-e29b-41d4-a716-446655440000";
    let record = [
        json!({"prediction_id": uuid, "actual": 0.5}),
        json!({"prediction_id": uuid, "actual": 0.5, "ach_level": 0.002}),
        json!({"embedder_index": 3, "predicted": 0.9, "actual": 0.2}),
        json!({"embedder_index": 0, "predicted": 0.8, "actual": 0.5, "delta_s": 0.6,
               "delta_c": 0.4, "domain": "code", "ach_level": 0.0015}),
    ];
    let n = [
        check_tool::<RecordPrediction>(&record, 3000),
        check_tool::<GetMetaLearningStatus>(
            &[
                json!({}),
                json!({"include_accuracy_history": true, "include_embedder_breakdown": false}),
            ],
            600,
        ),
        check_tool::<TriggerLambdaRecalibration>(
            &[json!({"force_bayesian": true, "domain": "legal", "dry_run": true})],
            600,
        ),
        check_tool::<GetMetaLearningLog>(
            &[
                json!({"start_time": "2024-01-15T10:30:00Z", "end_time": "2025-01-15T10:30:00+01:00",
                     "event_type": "ACCURACY_ALERT", "domain": "research", "limit": 1000, "offset": 20}),
            ],
            1000,
        ),
        check_tool::<ResetMetaLearning>(
            &[json!({"scope": "all", "rationale": "the outcomes were mislabelled"})],
            600,
        ),
    ];
    // At least 500 cases per tool, and a fair share of both verdicts.
    assert!(
        n.iter()
            .all(|&(cases, valid)| cases >= 500 && valid >= cases / 20 && valid < cases),
        "{n:?}"
    );
}

#[test]
fn the_two_record_forms_are_refused_with_their_reasons() {
    let refused = |args: Value| match wire::parse::<RecordInput>(&args) {
        Err(ToolError::InvalidParams(m)) => m,
        other => panic!("{args}: {other:?}"),
    };
    let uuid = "550e8400-e29b-41d4-a716-446655440000";
    let cases = [
        (
            json!({"prediction_id": uuid, "actual": 0.5, "domain": "code"}),
            "field 'domain' cannot be combined with 'prediction_id'",
        ),
        (
            json!({"predicted": 0.5, "actual": 0.5}),
            "missing required field 'embedder_index' (an integer in 0..=12); or send prediction_id and actual",
        ),
        (
            json!({"embedder_index": 2, "actual": 0.5}),
            "missing required field 'predicted'",
        ),
        (
            json!({"embedder_index": 2, "predicted": 0.5, "actual": 0.5, "delta_c": 0.1}),
            "fields 'delta_s' and 'delta_c' go together",
        ),
        (
            json!({"embedder_index": 2, "predicted": 0.5, "actual": 0.5, "domain": "finance"}),
            "Invalid domain \"finance\". Valid values: code, medical, legal, creative, research, general",
        ),
    ];
    for (args, want) in cases {
        let got = refused(args.clone());
        assert!(got.contains(want), "{args}: {got}");
    }
}

/// Calls `name` in `app` and checks its answer against the tool's output schema.
fn call_checked(app: &App, name: &str, args: Value) -> Value {
    let tool = crate::tools::find(name).unwrap();
    let result = app
        .call_tool(name, &args)
        .unwrap_or_else(|e| panic!("{name} {args}: {e:?}"));
    let structured = result["structuredContent"].clone();
    let validator = jsonschema::validator_for(&(tool.output_schema)()).unwrap();
    if let Err(e) = validator.validate(&structured) {
        panic!("{name} answer {structured} violates its outputSchema: {e}");
    }
    structured
}

fn is_wire_timestamp(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    // 2026-01-01T00:00:00.000000Z
    s.len() == 27 && s.ends_with('Z') && s.as_bytes()[19] == b'.'
}

#[test]
fn every_kind_of_answer_matches_its_output_schema() {
    let app = App::new(Store::open(&DbPath::Memory).unwrap()).unwrap();
    let first = call_checked(
        &app,
        "record_prediction",
        json!({"embedder_index": 2, "predicted": 0.9, "actual": 0.1, "domain": "MEDICAL"}),
    );
    assert!(first["adjustment"].is_object());
    assert!(first["bayesian_recalibration"].is_null());
    // Nine more low cycles start an automatic Bayesian run, which fails without ΔS/ΔC.
    let mut last = first;
    for _ in 0..9 {
        last = call_checked(
            &app,
            "record_prediction",
            json!({"embedder_index": 2, "predicted": 0.9, "actual": 0.3}),
        );
    }
    assert_eq!(last["bayesian_recalibration"]["success"], false);
    assert_eq!(last["escalation_status"], "bayesian_pending");
    let status = call_checked(
        &app,
        "get_meta_learning_status",
        json!({"include_accuracy_history": true, "include_embedder_breakdown": true}),
    );
    assert!(is_wire_timestamp(&status["last_adjustment_at"]), "{status}");
    let log = call_checked(&app, "get_meta_learning_log", json!({"domain": "Medical"}));
    assert_eq!(log["events"][0]["domain"], "medical");
    assert!(is_wire_timestamp(&log["events"][0]["timestamp"]));
    for dry_run in [true, false] {
        let r = call_checked(
            &app,
            "trigger_lambda_recalibration",
            json!({"domain": "medical", "dry_run": dry_run}),
        );
        assert_eq!(r["method"], "bayesian", "an escalation is pending");
        assert_eq!(r["domain"], "medical");
    }
    let reset = call_checked(
        &app,
        "reset_meta_learning",
        json!({"scope": "all", "rationale": "  mislabelled outcomes  "}),
    );
    assert_eq!(reset["escalation_status"], "normal");
    let healing = call_checked(
        &app,
        "get_meta_learning_log",
        json!({"event_type": "SELF_HEALING"}),
    );
    assert_eq!(
        healing["events"][0]["detail"],
        "operator reset (all): mislabelled outcomes"
    );
    let empty = call_checked(
        &app,
        "trigger_lambda_recalibration",
        json!({"domain": "legal", "dry_run": true}),
    );
    assert_eq!(empty["method"], "none");
}

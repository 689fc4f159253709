//! Table tests of the `gwt_compute_delta_sc` arguments: messages that name the argument, the
//! embedder and the rule, and the published schema agreeing with the parser on every rule it
//! can state (and, for the known gaps, documented to disagree).

use serde_json::{Value, json};

use super::*;
use crate::tools::wire;

/// A deterministic full fingerprint with four E12 tokens and five sparse terms (`phase` shifts
/// every value).
fn example_fingerprint_json(phase: f64) -> Value {
    let mut m = Map::new();
    for e in EmbedderId::ALL {
        let seed = phase + e.index() as f64;
        let wave = |n: usize, s: f64| -> Vec<f64> {
            (0..n)
                .map(|i| ((i as f64 * 0.37 + s).sin() * 1000.0).round() / 1000.0)
                .collect()
        };
        let v = match e.kind() {
            EmbedderKind::Dense { dim } => json!(wave(dim, seed)),
            EmbedderKind::Sparse { .. } => json!({
                "indices": [3, 101, 1500, 20000, 30521],
                "values": [0.5, 0.25, 1.0, 0.75, 0.125 + phase.abs().min(1.0) * 0.5]
            }),
            EmbedderKind::Tokens { dim } => {
                json!(
                    (0..4)
                        .map(|t| wave(dim, seed + t as f64))
                        .collect::<Vec<_>>()
                )
            }
        };
        m.insert(e.field().to_string(), v);
    }
    Value::Object(m)
}

fn args_with(fp: Value) -> Value {
    json!({
        "vertex_id": "6f1c1f0e-3a55-4c1a-9d7e-0b8e3f2a9c11",
        "old_fingerprint": compact_fingerprint_json(5),
        "new_fingerprint": fp,
    })
}

/// The tool's parse; every verdict and message must equal `wire::parse`'s.
fn parse(args: &Value) -> Result<ComputeInput, ToolError> {
    let slow = wire::parse::<ComputeInput>(args);
    let fast = parse_fast(args);
    match (&slow, &fast) {
        (Ok(a), Ok(b)) => assert_eq!(
            (&a.old_fingerprint, &a.new_fingerprint),
            (&b.old_fingerprint, &b.new_fingerprint)
        ),
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("parse_fast disagrees with wire::parse: {slow:?} vs {fast:?}"),
    }
    fast
}

fn err(args: &Value) -> String {
    match parse(args) {
        Err(ToolError::InvalidParams(m)) => m,
        Err(other) => panic!("expected InvalidParams, got {other:?}"),
        Ok(_) => panic!("expected an error for {}", wire::shown(args)),
    }
}

#[test]
fn the_compact_example_is_valid_and_small() {
    let input = parse(&ComputeDeltaSc::example()).unwrap();
    assert_ne!(input.old_fingerprint, input.new_fingerprint);
    assert!(compact_fingerprint_json(3).to_string().len() < 20_000);
}

#[test]
fn the_bare_and_the_wrapped_form_read_alike() {
    let fp = example_fingerprint_json(0.0);
    let a = parse(&args_with(fp.clone())).unwrap();
    let wrapped = json!({"semantic": fp, "purpose_vector": [1], "id": "x"});
    let b = parse(&args_with(wrapped)).unwrap();
    assert_eq!(a.new_fingerprint, b.new_fingerprint);
    // E12 as {"tokens": [...]}, indices as integral floats.
    let mut alt = example_fingerprint_json(0.0);
    alt["e12_late_interaction"] = json!({"tokens": alt["e12_late_interaction"].clone()});
    alt["e6_sparse"]["indices"] = json!([3.0, 101, 1500, 20000, 30521]);
    assert_eq!(
        parse(&args_with(alt)).unwrap().new_fingerprint,
        a.new_fingerprint
    );
}

#[test]
fn a_nul_character_in_the_wrapper_s_ignored_fields_is_refused_by_both_paths() {
    let fp = example_fingerprint_json(0.0);
    let wrapped = json!({"semantic": fp, "purpose_vector": [1], "id": "x\u{0}y"});
    let message = err(&args_with(wrapped));
    assert!(
        message.contains("field 'new_fingerprint.id' contains the NUL character (U+0000)"),
        "{message}"
    );
    let nested = json!({"semantic": example_fingerprint_json(0.0), "meta": [{"tag": "\u{0}"}]});
    let message = err(&args_with(nested));
    assert!(message.contains("new_fingerprint.meta[0].tag"), "{message}");
}

type Edit = fn(&mut Value);

/// (edit of a valid fingerprint, part of the message). The messages of the rules that were
/// there before the typed arguments are unchanged.
fn refusals() -> Vec<(Edit, &'static str)> {
    vec![
        (
            |v| {
                v.as_object_mut().unwrap().remove("e7_code");
            },
            "new_fingerprint: Fingerprint must contain all 13 embedders (ARCH-05): missing e7_code",
        ),
        (
            |v| v["e1_semantic"] = json!(vec![0.5; 768]),
            "new_fingerprint: e1_semantic: expected 1024 values, got 768",
        ),
        (
            |v| v["e1_semantic"] = json!("x"),
            "new_fingerprint: e1_semantic: expected an array of 1024 numbers, got a string",
        ),
        (
            |v| v["e1_semantic"][3] = json!(true),
            "new_fingerprint: e1_semantic[3]: expected a number, got a boolean",
        ),
        (
            |v| v["e8_graph"][2] = json!(1e300),
            "new_fingerprint: e8_graph[2] = 1e+300 is outside the 32-bit float range",
        ),
        (
            |v| v["e6_sparse"]["indices"] = json!([5, 3, 9, 10, 11]),
            "new_fingerprint: e6_sparse: indices must be strictly ascending",
        ),
        (
            |v| v["e6_sparse"]["indices"] = json!([3, 3, 9, 10, 11]),
            "e6_sparse: duplicate index 3",
        ),
        (
            |v| v["e13_splade"]["indices"] = json!([3, 4, 9, 10, 30522]),
            "e13_splade: indices[4] = 30522 is out of range; indices must be < 30522",
        ),
        (
            |v| v["e13_splade"]["indices"] = json!([3, 4, 9, 10, -1]),
            "e13_splade: indices[4] = -1 is out of range; indices must be >= 0",
        ),
        (
            |v| v["e13_splade"]["indices"] = json!([3, 4, 9, 10, 10.5]),
            "e13_splade: indices[4] = 10.5 is not an integer",
        ),
        (
            |v| v["e6_sparse"]["values"] = json!([1.0]),
            "e6_sparse: indices and values must have the same length",
        ),
        (
            |v| v["e6_sparse"]["values"][1] = json!(-1e-50),
            "e6_sparse: values[1] = -1e-50 is negative; sparse term weights must be >= 0",
        ),
        (
            |v| v["e6_sparse"]["weights"] = json!([]),
            "e6_sparse: unknown field 'weights'; allowed fields: indices, values",
        ),
        (
            |v| {
                v["e6_sparse"].as_object_mut().unwrap().remove("values");
            },
            "e6_sparse: missing 'values'",
        ),
        (
            |v| v["e12_late_interaction"] = json!([]),
            "e12_late_interaction: at least one token of 128 values is required",
        ),
        (
            |v| v["e12_late_interaction"][1] = json!(vec![0.5; 127]),
            "e12_late_interaction: tokens[1] has 127 values, expected 128",
        ),
        (
            |v| v["e12_late_interaction"] = json!({"tokens": [], "n": 1}),
            "e12_late_interaction: unknown field 'n'",
        ),
        (
            |v| v["e2_temporal_recent"] = json!(vec![0.0; 512]),
            "e2_temporal_recent: the vector is all zeros",
        ),
        (
            // Non-zero as JSON, zero as a 32-bit float.
            |v| v["e2_temporal_recent"] = json!(vec![1e-46; 512]),
            "e2_temporal_recent: the vector is all zeros",
        ),
        (
            |v| v["e7_cod"] = json!([]),
            "new_fingerprint: unknown field 'e7_cod'; allowed fields: the 13 embedder fields",
        ),
        (
            |v| *v = json!({"semantic": {"e1_semantic": []}}),
            "new_fingerprint.semantic: Fingerprint must contain all 13 embedders",
        ),
        (
            |v| *v = json!({"semantic": [1]}),
            "new_fingerprint.semantic: expected an object with the 13 embedder fields, got an array",
        ),
        (
            |v| *v = json!({"semantic": v.clone(), "e1_semantic": v["e1_semantic"].clone()}),
            "new_fingerprint: give the 13 embedder fields or a 'semantic' field holding them, not both",
        ),
        (
            |v| *v = json!([1]),
            "new_fingerprint: expected an object with the 13 embedder fields",
        ),
    ]
}

#[test]
fn each_rule_is_refused_naming_the_argument_the_embedder_and_the_rule() {
    for (edit, want) in refusals() {
        let mut fp = example_fingerprint_json(0.0);
        edit(&mut fp);
        let m = err(&args_with(fp));
        assert!(m.contains(want), "{m:?} should contain {want:?}");
    }
    // The first problem in embedder order is the one reported.
    let mut fp = example_fingerprint_json(0.0);
    fp["e9_hdc"] = json!("x");
    fp["e2_temporal_recent"] = json!(vec![0.5; 3]);
    fp["e3_temporal_periodic"] = json!(false);
    assert!(err(&args_with(fp)).contains("e3_temporal_periodic: expected an array"));
}

#[test]
fn the_schema_and_the_parser_agree_on_each_rule_but_the_stated_gaps() {
    let schema = wire::input_schema::<ComputeInput>();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let verdicts = |fp: Value| {
        let args = args_with(fp);
        (validator.is_valid(&args), parse(&args).is_ok())
    };
    assert_eq!(verdicts(example_fingerprint_json(0.0)), (true, true));
    // The gaps: strictly ascending, same length, a null nested in an ignored field.
    let gaps: [Edit; 3] = [
        |v| v["e6_sparse"]["indices"] = json!([5, 3, 9, 10, 11]),
        |v| v["e6_sparse"]["values"] = json!([1.0]),
        |v| *v = json!({"semantic": v.clone(), "record": {"parent": null}}),
    ];
    for (k, edit) in gaps.iter().enumerate() {
        let mut fp = example_fingerprint_json(0.0);
        edit(&mut fp);
        assert_eq!(verdicts(fp), (true, false), "gap {k} is no longer a gap");
    }
    let gap_messages = ["strictly ascending", "same length"];
    for (edit, want) in refusals() {
        if gap_messages.iter().any(|g| want.contains(g)) {
            continue;
        }
        let mut fp = example_fingerprint_json(0.0);
        edit(&mut fp);
        assert_eq!(verdicts(fp), (false, false), "{want}");
    }
    // Accepted by both: the other forms and the edge values.
    let accepted: Vec<Edit> = vec![
        |v| *v = json!({"semantic": v.clone(), "purpose": [0.1], "id": "x"}),
        |v| v["e12_late_interaction"] = json!({"tokens": v["e12_late_interaction"].clone()}),
        |v| v["e6_sparse"] = json!({"indices": [], "values": []}),
        |v| v["e6_sparse"]["indices"][0] = json!(3.0),
        |v| v["e6_sparse"]["values"][0] = json!(0),
        |v| v["e9_hdc"] = json!(vec![0; 1024]),
        |v| v["e8_graph"][0] = json!(-3.4e38),
        |v| v["e2_temporal_recent"] = json!([vec![0.0; 511], vec![1e-45]].concat()),
        |v| v["e13_splade"] = json!({"indices": [0, 30521], "values": [0, 3e38]}),
    ];
    for (k, edit) in accepted.iter().enumerate() {
        let mut fp = example_fingerprint_json(0.0);
        edit(&mut fp);
        assert_eq!(verdicts(fp), (true, true), "accepted case {k}");
    }
    // Refused by both (rules the old schema left unsaid).
    let refused: Vec<Edit> = vec![
        |v| v["e8_graph"][0] = json!(3.41e38),
        |v| v["e6_sparse"]["values"][0] = json!(-0.5),
        |v| v["e6_sparse"]["indices"][0] = json!(0.5),
        |v| *v = json!({"semantic": v.clone(), "purpose": null}),
        |v| v["e12_late_interaction"] = json!([vec![0; 128]]),
        |v| v["e12_late_interaction"] = json!({}),
        |v| v["e12_late_interaction"] = json!({"tokens": {"tokens": [vec![0.5; 128]]}}),
        |v| v["e6_sparse"] = json!({"indices": [1]}),
        |v| v["e6_sparse"] = json!({"indices": [1], "values": [1], "weights": []}),
        |v| *v = json!({"semantic": {"semantic": v.clone()}}),
        |v| v["e1_semantic"] = json!(vec![1e-46; 1024]),
        |v| v["extra"] = json!(1),
    ];
    for (k, edit) in refused.iter().enumerate() {
        let mut fp = example_fingerprint_json(0.0);
        edit(&mut fp);
        assert_eq!(verdicts(fp), (false, false), "refused case {k}");
    }
}

#[test]
fn nulls_are_refused_as_wire_parse_refuses_them() {
    let mut fp = example_fingerprint_json(0.0);
    fp["e6_sparse"]["values"][0] = Value::Null;
    let mut in_sparse = example_fingerprint_json(0.0);
    in_sparse["e6_sparse"]["x"] = Value::Null;
    let mut in_tokens = example_fingerprint_json(0.0);
    in_tokens["e12_late_interaction"] = json!({"tokens": [vec![0.5; 128]], "n": null});
    let cases = [
        json!({"new_fingerprint": in_sparse}),
        json!({"new_fingerprint": in_tokens}),
        json!({"new_fingerprint": {"semantic": {"e1_semantic": null}}}),
        json!({"johari_threshold": null}),
        json!({"persist": null}),
        json!({"new_fingerprint": {"semantic": fp.clone(), "x": [{"y": null}]}}),
        json!({"new_fingerprint": fp}),
        json!({"vertex_id": null}),
    ];
    for extra in cases {
        let mut args = args_with(example_fingerprint_json(0.0));
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        assert!(parse(&args).is_err(), "{}", wire::shown(&extra));
    }
    assert!(parse(&Value::Null).is_err());
}

#[test]
fn the_limits_are_exact() {
    // 2^-150 rounds to the even zero; the next double up rounds to the smallest subnormal.
    assert_eq!(schema::ZERO_LIMIT, 2f64.powi(-150));
    assert_eq!(schema::ZERO_LIMIT as f32, 0.0);
    assert!(f64::from_bits(schema::ZERO_LIMIT.to_bits() + 1) as f32 > 0.0);
    assert!(fingerprint::F32_LIMIT <= f64::from(f32::MAX));
    assert_eq!(format!("{:e}", fingerprint::F32_LIMIT), "3.4e38");
}

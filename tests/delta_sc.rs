//! `gwt_compute_delta_sc` over the wire, on the real binary: listing and schemas, one error per
//! validation rule, diagnostics on request, `persist: false`, and the compute →
//! `record_prediction` loop that moves λ.

mod common;

use common::{Backend, Server};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use serde_json::{Map, Value, json};

common::both_backends!(
    listed_with_schemas_and_reachable_by_aliases,
    each_validation_rule_is_invalid_params_naming_the_field,
    identical_update_on_empty_store_has_zero_surprise_and_diagnostics_on_request,
    persist_false_leaves_the_store_unchanged_and_persist_true_survives_restart,
    record_prediction_closes_once_and_moves_lambda_in_the_error_direction,
    teleological_wrapper_is_accepted,
    a_second_process_sees_vertices_stored_by_the_first,
);

const TOOL: &str = "gwt_compute_delta_sc";
const VERTEX: &str = "0b6f2c9e-1d2a-4e8b-9c3f-5a7d1e2b3c4d";
const OTHER: &str = "7c1e9a3b-2f4d-4a6e-8b1c-9d0e2f3a4b5c";

const FIELDS: [(&str, usize); 13] = [
    ("e1_semantic", 1024),
    ("e2_temporal_recent", 512),
    ("e3_temporal_periodic", 512),
    ("e4_temporal_positional", 512),
    ("e5_causal", 768),
    ("e6_sparse", 0),
    ("e7_code", 1536),
    ("e8_graph", 384),
    ("e9_hdc", 1024),
    ("e10_multimodal", 768),
    ("e11_entity", 384),
    ("e12_late_interaction", 128),
    ("e13_splade", 0),
];

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A full fingerprint: dense uniform(−1, 1), 20 sparse terms over the whole vocabulary,
/// 4 tokens of 128.
fn fingerprint(seed: u64) -> Value {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut m = Map::new();
    for (field, dim) in FIELDS {
        let v = match field {
            "e6_sparse" | "e13_splade" => {
                let mut idx: Vec<u32> = (0..20).map(|_| rng.random_range(0..30522)).collect();
                idx.sort_unstable();
                idx.dedup();
                let vals: Vec<f32> = idx.iter().map(|_| rng.random_range(0.1f32..1.0)).collect();
                json!({"indices": idx, "values": vals})
            }
            "e12_late_interaction" => json!(
                (0..4)
                    .map(|_| (0..dim)
                        .map(|_| rng.random_range(-1.0f32..1.0))
                        .collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            ),
            _ => json!(
                (0..dim)
                    .map(|_| rng.random_range(-1.0f32..1.0))
                    .collect::<Vec<_>>()
            ),
        };
        m.insert(field.to_string(), v);
    }
    Value::Object(m)
}

/// `fp` with every dense and token value moved by uniform(−σ, σ).
fn nudge(fp: &Value, sigma: f32, seed: u64) -> Value {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = fp.clone();
    for (field, _) in FIELDS {
        match field {
            "e6_sparse" | "e13_splade" => {}
            "e12_late_interaction" => {
                for tok in out[field].as_array_mut().unwrap() {
                    for x in tok.as_array_mut().unwrap() {
                        *x = json!(f(x) as f32 + rng.random_range(-sigma..sigma));
                    }
                }
            }
            _ => {
                for x in out[field].as_array_mut().unwrap() {
                    *x = json!(f(x) as f32 + rng.random_range(-sigma..sigma));
                }
            }
        }
    }
    out
}

fn args(vertex: &str, old: &Value, new: &Value) -> Value {
    json!({"vertex_id": vertex, "old_fingerprint": old, "new_fingerprint": new})
}

fn listed_with_schemas_and_reachable_by_aliases(backend: Backend) {
    let mut s = Server::start_on(backend);
    let list = s.request("tools/list", Value::Null);
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == TOOL)
        .expect("gwt_compute_delta_sc listed")
        .clone();
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert_eq!(tool["outputSchema"]["type"], "object");
    let required = tool["inputSchema"]["required"].as_array().unwrap();
    for r in ["vertex_id", "old_fingerprint", "new_fingerprint"] {
        assert!(required.contains(&json!(r)), "{r} required");
    }
    // Both fingerprints refer to one definition of the 13 fields (`$defs`, written once).
    let schema = &tool["inputSchema"];
    for arg in ["old_fingerprint", "new_fingerprint"] {
        assert_eq!(
            schema["properties"][arg]["$ref"], "#/$defs/fingerprint",
            "{arg}"
        );
    }
    let fp_props = &schema["$defs"]["embeddings"]["properties"];
    for (field, _) in FIELDS {
        assert!(fp_props.get(field).is_some(), "{field} in schema");
    }
    let fp = fingerprint(1);
    for name in ["gwt/compute_delta_sc", "compute_delta_sc"] {
        let out = s.tool_ok(name, json!({"vertex_id": VERTEX, "old_fingerprint": fp, "new_fingerprint": fp, "persist": false}));
        assert_eq!(out["vertex_id"], VERTEX);
    }
}

fn each_validation_rule_is_invalid_params_naming_the_field(backend: Backend) {
    let mut s = Server::start_on(backend);
    let good = fingerprint(2);
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, &str)> = vec![
        (
            |a| a["vertex_id"] = json!("not-a-uuid"),
            "field 'vertex_id' must be a UUID",
        ),
        (
            |a| {
                a["new_fingerprint"]
                    .as_object_mut()
                    .unwrap()
                    .remove("e7_code");
            },
            "Fingerprint must contain all 13 embedders (ARCH-05): missing e7_code",
        ),
        (
            |a| a["new_fingerprint"]["e1_semantic"] = json!(vec![0.5; 768]),
            "e1_semantic: expected 1024 values, got 768",
        ),
        (
            |a| {
                a["new_fingerprint"]["e6_sparse"] = json!({"indices": [9, 4], "values": [0.1, 0.2]})
            },
            "e6_sparse: indices must be strictly ascending",
        ),
        (
            |a| {
                a["new_fingerprint"]["e6_sparse"] = json!({"indices": [4, 4], "values": [0.1, 0.2]})
            },
            "e6_sparse: duplicate index 4",
        ),
        (
            |a| {
                a["new_fingerprint"]["e13_splade"] =
                    json!({"indices": [4, 30522], "values": [0.1, 0.2]})
            },
            "e13_splade: indices[1] = 30522 is out of range; indices must be < 30522",
        ),
        (
            |a| a["old_fingerprint"]["e13_splade"] = json!({"indices": [4, 5], "values": [0.1]}),
            "old_fingerprint: e13_splade: indices and values must have the same length",
        ),
        (
            |a| a["new_fingerprint"]["e12_late_interaction"] = json!([vec![0.5; 100]]),
            "e12_late_interaction: tokens[0] has 100 values, expected 128",
        ),
        (
            |a| a["new_fingerprint"]["e12_late_interaction"] = json!([]),
            "e12_late_interaction: at least one token of 128 values is required",
        ),
        (
            |a| a["new_fingerprint"]["e5_causal"] = json!(vec![0.0; 768]),
            "e5_causal: the vector is all zeros and has no direction",
        ),
        (
            |a| a["new_fingerprint"]["e8_graph"][0] = json!(1e300),
            "e8_graph[0] = 1e+300 is outside the 32-bit float range",
        ),
        (
            |a| a["johari_threshold"] = json!(1.5),
            "field 'johari_threshold' must be in [0, 1]",
        ),
        (|a| a["colour"] = json!("red"), "unknown field 'colour'"),
        (
            |a| {
                a.as_object_mut().unwrap().remove("old_fingerprint");
            },
            "missing required field 'old_fingerprint'",
        ),
    ];
    for (edit, want) in cases {
        let mut a = args(VERTEX, &good, &good);
        edit(&mut a);
        let (code, msg) = s.tool_err(TOOL, a);
        assert_eq!(code, -32602, "{msg}");
        assert!(msg.contains(want), "{msg:?} should contain {want:?}");
    }
    // The server still works, and nothing was stored by the failed calls.
    let out = s.tool_ok(TOOL, args(VERTEX, &good, &good));
    assert_eq!(out["context"]["stored_vertices"], 0);
}

fn identical_update_on_empty_store_has_zero_surprise_and_diagnostics_on_request(backend: Backend) {
    let mut s = Server::start_on(backend);
    let fp = fingerprint(3);
    let plain = s.tool_ok(TOOL, json!({"vertex_id": VERTEX, "old_fingerprint": fp, "new_fingerprint": fp, "persist": false}));
    assert!(plain.get("diagnostics").is_none());
    assert_eq!(f(&plain["delta_s"]), 0.0);
    for x in plain["delta_s_per_embedder"].as_array().unwrap() {
        assert_eq!(f(x), 0.0);
    }
    assert_eq!(plain["johari_threshold"], 0.5);
    assert_eq!(plain["methods_used"].as_array().unwrap().len(), 13);
    assert_eq!(plain["methods_used"][8]["distance"], "hamming_knn");
    assert_eq!(plain["methods_used"][11]["distance"], "maxsim_knn");
    assert_eq!(plain["methods_used"][0]["normalization"], "raw_distance");
    let diag = s.tool_ok(TOOL, json!({"vertex_id": VERTEX, "old_fingerprint": fp, "new_fingerprint": fp, "persist": false, "include_diagnostics": true, "johari_threshold": 0.9}));
    assert_eq!(diag["johari_threshold"], 0.65);
    let d = &diag["diagnostics"];
    assert_eq!(d["per_embedder"].as_array().unwrap().len(), 13);
    assert_eq!(d["surprise_context"], json!(["old_fingerprint"]));
    assert_eq!(d["neighbours"], json!([]));
}

fn persist_false_leaves_the_store_unchanged_and_persist_true_survives_restart(backend: Backend) {
    let mut s = Server::start_on(backend);
    let a_old = fingerprint(10);
    let a_new = nudge(&a_old, 0.1, 11);
    let b = nudge(&a_new, 0.1, 12);
    // persist: false on A, then B sees no stored vertex.
    s.tool_ok(TOOL, json!({"vertex_id": VERTEX, "old_fingerprint": a_old, "new_fingerprint": a_new, "persist": false}));
    let probe = json!({"vertex_id": OTHER, "old_fingerprint": b, "new_fingerprint": b, "persist": false, "include_diagnostics": true});
    let before = s.tool_ok(TOOL, probe.clone());
    assert_eq!(before["context"]["stored_vertices"], 0);
    assert_eq!(before["diagnostics"]["neighbours"], json!([]));
    // Repeating it gives the same numbers: nothing moved.
    let again = s.tool_ok(TOOL, probe.clone());
    assert_eq!(before["delta_c"], again["delta_c"]);
    // persist: true on A; after a restart B finds A as its neighbour.
    let stored = s.tool_ok(TOOL, args(VERTEX, &a_old, &a_new));
    assert_eq!(stored["persisted"], true);
    let mut s = s.restart();
    let after = s.tool_ok(TOOL, probe);
    assert_eq!(after["context"]["stored_vertices"], 1);
    let n = &after["diagnostics"]["neighbours"][0];
    assert_eq!(n["vertex_id"], VERTEX);
    assert!(f(&n["similarity"]) > 0.9);
    // A close, connected neighbour raises coherence.
    assert!(f(&after["delta_c"]) > f(&before["delta_c"]));
    // A's next update sees its history: the old fingerprint and the stored current.
    let a_next = nudge(&a_new, 0.1, 13);
    let hist = s.tool_ok(TOOL, json!({"vertex_id": VERTEX, "old_fingerprint": a_new, "new_fingerprint": a_next, "include_diagnostics": true}));
    assert_eq!(
        hist["diagnostics"]["surprise_context"],
        json!(["version:0", "old_fingerprint"])
    );
}

fn record_prediction_closes_once_and_moves_lambda_in_the_error_direction(backend: Backend) {
    let mut s = Server::start_on(backend);
    let old = fingerprint(20);
    let new = fingerprint(21); // unrelated: high ΔS, low ΔC
    let out = s.tool_ok(TOOL, args(VERTEX, &old, &new));
    let (ds, dc, l) = (
        f(&out["delta_s"]),
        f(&out["delta_c"]),
        f(&out["learning_score"]),
    );
    assert!(ds - dc > 0.3, "ΔS {ds} ΔC {dc}");
    assert_eq!(out["lambda"], json!({"lambda_s": 0.7, "lambda_c": 0.3}));
    assert!((l - (0.7 * ds + 0.3 * dc)).abs() < 1e-12);
    let id = out["prediction_id"].as_str().unwrap().to_string();
    // actual 0: error e = L − 0 > 0.2, δ_s = −α·e·(ΔS − ΔC) < 0 → λ_s falls.
    let rec = s.tool_ok(
        "record_prediction",
        json!({"prediction_id": id, "actual": 0.0}),
    );
    assert!((f(&rec["predicted"]) - l).abs() < 1e-12);
    let status = s.tool_ok("get_meta_learning_status", json!({}));
    let lambda_s = f(&status["current_lambdas"]["lambda_s"]);
    assert!(lambda_s < 0.7, "λ_s {lambda_s} should fall below 0.7");
    // The next computation uses (and reports) the new λ.
    let next = s.tool_ok(TOOL, json!({"vertex_id": OTHER, "old_fingerprint": old, "new_fingerprint": new, "persist": false}));
    assert!((f(&next["lambda"]["lambda_s"]) - lambda_s).abs() < 1e-12);
    // Closing twice, or an unknown id: -32602 naming the id.
    let (code, msg) = s.tool_err(
        "record_prediction",
        json!({"prediction_id": id, "actual": 0.5}),
    );
    assert_eq!(code, -32602);
    assert!(msg.contains(&id), "{msg}");
    let unknown = "11111111-2222-4333-8444-555555555555";
    let (code, msg) = s.tool_err(
        "record_prediction",
        json!({"prediction_id": unknown, "actual": 0.5}),
    );
    assert_eq!(code, -32602);
    assert!(msg.contains(unknown), "{msg}");
}

fn teleological_wrapper_is_accepted(backend: Backend) {
    let mut s = Server::start_on(backend);
    let fp = fingerprint(30);
    let wrapped = json!({"semantic": fp, "purpose_vector": [0.1, 0.2], "id": "x"});
    let a = s.tool_ok(TOOL, json!({"vertex_id": VERTEX, "old_fingerprint": wrapped, "new_fingerprint": fp, "persist": false}));
    assert_eq!(f(&a["delta_s"]), 0.0);
}

fn a_second_process_sees_vertices_stored_by_the_first(backend: Backend) {
    let fresh = backend.fresh();
    let db = fresh.target.clone();
    let mut a = Server::start_at(&db, &[]);
    let mut b = Server::start_at(&db, &[]);
    let base = fingerprint(40);
    let probe = json!({"vertex_id": OTHER, "old_fingerprint": base, "new_fingerprint": base,
                       "persist": false, "include_diagnostics": true});
    // b loads its (empty) index first.
    assert_eq!(
        b.tool_ok(TOOL, probe.clone())["context"]["stored_vertices"],
        0
    );
    for (k, v) in [VERTEX, "3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a"]
        .iter()
        .enumerate()
    {
        let near = nudge(&base, 0.05, 41 + k as u64);
        a.tool_ok(TOOL, args(v, &near, &near));
    }
    let seen = b.tool_ok(TOOL, probe);
    assert_eq!(seen["context"]["stored_vertices"], 2);
    let ids: Vec<&str> = seen["diagnostics"]["neighbours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["vertex_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&VERTEX), "{ids:?}");
}

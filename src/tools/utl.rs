//! The utl family: `gwt_compute_delta_sc` — surprise (ΔS) and coherence (ΔC) of a memory update
//! over 13 embedders, with a prediction that `record_prediction` can close.
//!
//! Contract: SPEC §4 utl, issue 5 and seeds/compute-delta-sc.md. Numerics live in
//! `service::delta_sc`, persistence in `store::vertices`; this file parses the fingerprints,
//! gathers the context from the store and shapes the answer.

use std::time::Instant;

use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::args::kind;
use super::{Annotations, Args, Handler, Outcome, Tool, ToolError, ToolResult, WriteCtx};
use crate::service::Family;
use crate::service::delta_sc::{
    ContextMember, DeltaScError, DeltaScOutput, EmbedderKind, Fingerprint, FingerprintBuilder,
    Learner, SPARSE_VOCAB, UpdateRequest, delta_c_formula, plan_update,
};
use crate::service::vocab::EmbedderId;
use crate::store::meta::{self as meta_store, OpenPrediction};
use crate::store::vertices;

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[Tool {
    name: "gwt_compute_delta_sc",
    aliases: &["gwt/compute_delta_sc", "compute_delta_sc"],
    title: "Compute ΔS/ΔC of a memory update",
    description: || {
        String::from(
            "Compute how surprising (ΔS) and how coherent (ΔC) an update of a memory vertex is, per embedder (E1-E13) and aggregated, from the vertex's previous versions and its nearest stored vertices. Returns the Johari quadrant with a suggested action, the λ-weighted learning score L = λ_s·ΔS + λ_c·ΔC, and a prediction_id: call record_prediction {prediction_id, actual} once the outcome is known so the λ weights learn. Persists the new version unless persist is false. Fingerprints carry all 13 embedders (ARCH-05).",
        )
    },
    input_schema,
    output_schema,
    annotations: Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    },
    handler: Handler::Write(compute_delta_sc, &[Family::Vertices]),
    example: example_args,
}];

const ARGS: &[&str] = &[
    "vertex_id",
    "old_fingerprint",
    "new_fingerprint",
    "johari_threshold",
    "include_diagnostics",
    "persist",
];

fn fingerprint_schema() -> Value {
    let mut props = Map::new();
    for e in EmbedderId::ALL {
        let s = match e.kind() {
            EmbedderKind::Dense { dim } => json!({
                "type": "array", "items": {"type": "number"}, "minItems": dim, "maxItems": dim
            }),
            EmbedderKind::Sparse { vocab } => json!({
                "type": "object",
                "properties": {
                    "indices": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": vocab - 1}},
                    "values": {"type": "array", "items": {"type": "number", "minimum": 0}}
                },
                "required": ["indices", "values"]
            }),
            EmbedderKind::Tokens { dim } => json!({
                "type": "array", "minItems": 1,
                "items": {"type": "array", "items": {"type": "number"}, "minItems": dim, "maxItems": dim}
            }),
        };
        props.insert(e.field().to_string(), s);
    }
    props.insert(
        "semantic".to_string(),
        json!({"type": "object", "description": "TeleologicalFingerprint form: the 13 embedder fields nested here (other top-level fields are ignored)."}),
    );
    json!({
        "type": "object",
        "description": "All 13 embedders (ARCH-05): dense e1_semantic 1024, e2_temporal_recent 512, e3_temporal_periodic 512, e4_temporal_positional 512, e5_causal 768, e7_code 1536, e8_graph 384, e9_hdc 1024, e10_multimodal 768, e11_entity 384; sparse e6_sparse and e13_splade {indices strictly ascending < 30522, values >= 0, same length}; e12_late_interaction: one or more tokens of 128 numbers. Or a TeleologicalFingerprint whose 'semantic' field holds them.",
        "properties": Value::Object(props),
    })
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "vertex_id": {"type": "string", "format": "uuid", "description": "The memory vertex being updated."},
            "old_fingerprint": fingerprint_schema(),
            "new_fingerprint": fingerprint_schema(),
            "johari_threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                "description": "Threshold θ of the Johari quadrants; accepted in [0, 1], clamped to [0.35, 0.65] (the value used is reported)."},
            "include_diagnostics": {"type": "boolean", "default": false,
                "description": "Add per-embedder distances, coherence components, and neighbour ids and similarities."},
            "persist": {"type": "boolean", "default": true,
                "description": "Store the new version and its distances (false: compute only; the prediction is still opened)."}
        },
        "required": ["vertex_id", "old_fingerprint", "new_fingerprint"],
        "additionalProperties": false
    })
}

const QUADRANTS: [&str; 4] = ["open", "hidden", "blind", "unknown"];
const ACTIONS: [&str; 4] = [
    "direct_recall",
    "get_neighborhood",
    "trigger_dream",
    "epistemic_action",
];

fn output_schema() -> Value {
    let unit = json!({"type": "number", "minimum": 0, "maximum": 1});
    let per13 = json!({"type": "array", "items": unit, "minItems": 13, "maxItems": 13});
    let id_sim = json!({"type": "array", "items": {"type": "object",
        "properties": {"vertex_id": {"type": "string"}, "similarity": {"type": "number"}},
        "required": ["vertex_id", "similarity"]}});
    json!({
        "type": "object",
        "properties": {
            "prediction_id": {"type": "string", "format": "uuid"},
            "vertex_id": {"type": "string", "format": "uuid"},
            "delta_s": unit,
            "delta_c": unit,
            "delta_s_per_embedder": per13,
            "delta_c_per_embedder": per13,
            "johari_quadrant": {"type": "string", "enum": QUADRANTS},
            "suggested_action": {"type": "string", "enum": ACTIONS},
            "johari_threshold": {"type": "number", "minimum": 0.35, "maximum": 0.65},
            "utl_learning_potential": unit,
            "learning_score": unit,
            "lambda": {"type": "object", "properties": {"lambda_s": {"type": "number"}, "lambda_c": {"type": "number"}},
                       "required": ["lambda_s", "lambda_c"]},
            "embedder_weights": per13,
            "per_embedder": {"type": "array", "minItems": 13, "maxItems": 13, "items": {
                "type": "object",
                "properties": {
                    "embedder_index": {"type": "integer", "minimum": 0, "maximum": 12},
                    "embedder": {"type": "string"},
                    "delta_s": unit, "delta_c": unit, "learning_potential": unit,
                    "johari_quadrant": {"type": "string", "enum": QUADRANTS},
                    "suggested_action": {"type": "string", "enum": ACTIONS}
                },
                "required": ["embedder_index", "embedder", "delta_s", "delta_c", "johari_quadrant", "suggested_action"]
            }},
            "methods_used": {"type": "array", "minItems": 13, "maxItems": 13, "items": {
                "type": "object",
                "properties": {
                    "embedder": {"type": "string"},
                    "distance": {"type": "string", "enum": ["cosine_knn", "asymmetric_cosine_knn", "weighted_jaccard_knn", "maxsim_knn", "hamming_knn"]},
                    "normalization": {"type": "string", "enum": ["running_cdf", "raw_distance"]},
                    "coherence": {"type": "string"}
                },
                "required": ["embedder", "distance", "normalization"]
            }},
            "context": {"type": "object", "properties": {
                "previous_versions": {"type": "integer", "description": "Own versions compared against, the request's old fingerprint included."},
                "neighbours": {"type": "integer", "description": "Nearest stored vertices by E1 cosine (at most 10; the first 5 enter the surprise context)."},
                "next_nearest": {"type": "integer", "description": "The next stored vertices (ranks 11-20), the other cluster of the silhouette."},
                "stored_vertices": {"type": "integer", "description": "Vertices in the store before this call."}
            }},
            "persisted": {"type": "boolean"},
            "computation_time_us": {"type": "integer", "minimum": 0},
            "diagnostics": {"type": "object", "properties": {
                "per_embedder": {"type": "array"},
                "surprise_context": {"type": "array", "items": {"type": "string"}},
                "neighbours": id_sim,
                "next_nearest": id_sim
            }}
        },
        "required": ["prediction_id", "vertex_id", "delta_s", "delta_c", "delta_s_per_embedder",
                     "delta_c_per_embedder", "johari_quadrant", "suggested_action", "johari_threshold",
                     "utl_learning_potential", "learning_score", "lambda", "per_embedder",
                     "methods_used", "persisted", "computation_time_us"]
    })
}

/// A deterministic full fingerprint with four E12 tokens and five sparse terms (`phase` shifts
/// every value), for the tests.
#[cfg(test)]
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

/// The smallest valid full fingerprint in JSON: ±1 integers (every `flip`-th value −1), one E12
/// token, two sparse terms. The registry publishes the example in `tools/list`, so it is kept
/// as short as ARCH-05's fixed dimensions allow (about 15 KB per fingerprint).
fn compact_fingerprint_json(flip: usize) -> Value {
    let signs =
        |n: usize| -> Vec<i8> { (0..n).map(|i| if i % flip == 0 { -1 } else { 1 }).collect() };
    let mut m = Map::new();
    for e in EmbedderId::ALL {
        let v = match e.kind() {
            EmbedderKind::Dense { dim } => json!(signs(dim)),
            EmbedderKind::Sparse { .. } => json!({"indices": [7, 20000], "values": [1, flip]}),
            EmbedderKind::Tokens { dim } => json!([signs(dim)]),
        };
        m.insert(e.field().to_string(), v);
    }
    Value::Object(m)
}

fn example_args() -> Value {
    json!({
        "vertex_id": "6f1c1f0e-3a55-4c1a-9d7e-0b8e3f2a9c11",
        "old_fingerprint": compact_fingerprint_json(5),
        "new_fingerprint": compact_fingerprint_json(3),
        "persist": false
    })
}

/// Numbers of a JSON array as f32; `what` names the place for messages.
fn floats(v: &Value, what: &str, expected: &str) -> Result<Vec<f32>, ToolError> {
    let Value::Array(items) = v else {
        return Err(ToolError::invalid(format!(
            "{what}: expected {expected}, got {}",
            kind(v)
        )));
    };
    // Sized up front: collecting into a `Result` gives no size hint, and growing a
    // 1,536-float vector by doubling cost a dozen reallocations per embedder.
    let mut out = Vec::with_capacity(items.len());
    for (i, x) in items.iter().enumerate() {
        let f = x.as_f64().ok_or_else(|| {
            ToolError::invalid(format!("{what}[{i}]: expected a number, got {}", kind(x)))
        })?;
        if f.abs() > f64::from(f32::MAX) {
            return Err(ToolError::invalid(format!(
                "{what}[{i}] = {x} is outside the 32-bit float range (|x| <= 3.4e38)"
            )));
        }
        out.push(f as f32);
    }
    Ok(out)
}

/// Parse one fingerprint argument (`arg` is `old_fingerprint` or `new_fingerprint`).
///
/// # Errors
/// `-32602` naming the argument, the embedder field and the rule broken.
pub fn parse_fingerprint(arg: &str, v: &Value) -> Result<Fingerprint, ToolError> {
    let Value::Object(outer) = v else {
        return Err(ToolError::invalid(format!(
            "{arg}: expected an object with the 13 embedder fields (e1_semantic … e13_splade), or a TeleologicalFingerprint whose 'semantic' field holds them; got {}",
            kind(v)
        )));
    };
    let map = match outer.get("semantic") {
        Some(Value::Object(inner)) if !outer.contains_key("e1_semantic") => inner,
        Some(other) if !outer.contains_key("e1_semantic") => {
            return Err(ToolError::invalid(format!(
                "{arg}.semantic: expected an object with the 13 embedder fields, got {}",
                kind(other)
            )));
        }
        _ => outer,
    };
    let mut b = FingerprintBuilder::new();
    for e in EmbedderId::ALL {
        let Some(value) = map.get(e.field()).filter(|x| !x.is_null()) else {
            continue; // reported by build() as "missing …", all at once
        };
        let what = format!("{arg}: {}", e.field());
        match e.kind() {
            EmbedderKind::Dense { dim } => {
                b.dense(
                    e,
                    floats(value, &what, &format!("an array of {dim} numbers"))?,
                );
            }
            EmbedderKind::Sparse { .. } => {
                let Value::Object(s) = value else {
                    return Err(ToolError::invalid(format!(
                        "{what}: expected a sparse vector {{indices, values}}, got {}",
                        kind(value)
                    )));
                };
                let field = |name: &str| {
                    s.get(name).ok_or_else(|| {
                        ToolError::invalid(format!(
                            "{what}: missing '{name}' (sparse vectors are {{indices, values}})"
                        ))
                    })
                };
                let Value::Array(raw) = field("indices")? else {
                    return Err(ToolError::invalid(format!(
                        "{what}: 'indices' must be an array of integers in [0, {}]",
                        SPARSE_VOCAB - 1
                    )));
                };
                let mut indices = Vec::with_capacity(raw.len());
                for (i, x) in raw.iter().enumerate() {
                    match x.as_u64() {
                        Some(k) if k < SPARSE_VOCAB as u64 => indices.push(k as u16),
                        Some(_) => {
                            return Err(ToolError::invalid(format!(
                                "{what}: indices[{i}] = {x} is out of range; indices must be < {SPARSE_VOCAB}"
                            )));
                        }
                        None => {
                            return Err(ToolError::invalid(format!(
                                "{what}: indices[{i}] = {x} is not an integer; indices must be integers in [0, {}]",
                                SPARSE_VOCAB - 1
                            )));
                        }
                    }
                }
                let values = floats(
                    field("values")?,
                    &format!("{what}.values"),
                    "an array of numbers",
                )?;
                b.sparse(e, indices, values);
            }
            EmbedderKind::Tokens { dim } => {
                let tokens = match value {
                    Value::Object(o) if o.contains_key("tokens") => &o["tokens"],
                    other => other,
                };
                let Value::Array(items) = tokens else {
                    return Err(ToolError::invalid(format!(
                        "{what}: expected an array of token vectors of {dim} numbers, got {}",
                        kind(tokens)
                    )));
                };
                let parsed = items
                    .iter()
                    .enumerate()
                    .map(|(t, tok)| {
                        floats(
                            tok,
                            &format!("{what}: tokens[{t}]"),
                            &format!("an array of {dim} numbers"),
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                b.tokens(e, parsed);
            }
        }
    }
    b.build()
        .map_err(|e| ToolError::invalid(format!("{arg}: {e}")))
}

fn to_tool_error(e: DeltaScError) -> ToolError {
    ToolError::invalid(e.to_string())
}

fn shape_output(
    out: &DeltaScOutput,
    vertex_id: Uuid,
    prediction_id: Uuid,
    persisted: bool,
    stored_vertices: usize,
    include_diagnostics: bool,
) -> Map<String, Value> {
    let per_embedder: Vec<Value> = out
        .embedders
        .iter()
        .map(|o| {
            json!({
                "embedder_index": o.embedder.index(),
                "embedder": o.embedder.name(),
                "delta_s": o.delta_s,
                "delta_c": o.delta_c,
                "learning_potential": o.learning_potential,
                "johari_quadrant": o.quadrant.as_str(),
                "suggested_action": o.quadrant.suggested_action(),
            })
        })
        .collect();
    let formula = delta_c_formula();
    let methods: Vec<Value> = out
        .embedders
        .iter()
        .map(|o| {
            json!({
                "embedder": o.embedder.name(),
                "distance": o.method.name(),
                "normalization": if o.normalised { "running_cdf" } else { "raw_distance" },
                "coherence": formula,
            })
        })
        .collect();
    let mut m = Map::new();
    m.insert("prediction_id".into(), json!(prediction_id.to_string()));
    m.insert("vertex_id".into(), json!(vertex_id.to_string()));
    m.insert("delta_s".into(), json!(out.delta_s));
    m.insert("delta_c".into(), json!(out.delta_c));
    m.insert(
        "delta_s_per_embedder".into(),
        json!(out.embedders.iter().map(|o| o.delta_s).collect::<Vec<_>>()),
    );
    m.insert(
        "delta_c_per_embedder".into(),
        json!(out.embedders.iter().map(|o| o.delta_c).collect::<Vec<_>>()),
    );
    m.insert("johari_quadrant".into(), json!(out.quadrant.as_str()));
    m.insert(
        "suggested_action".into(),
        json!(out.quadrant.suggested_action()),
    );
    m.insert("johari_threshold".into(), json!(out.johari_threshold));
    m.insert(
        "utl_learning_potential".into(),
        json!(out.utl_learning_potential),
    );
    m.insert("learning_score".into(), json!(out.learning_score));
    m.insert(
        "lambda".into(),
        json!({"lambda_s": out.lambda.s(), "lambda_c": out.lambda.c()}),
    );
    m.insert(
        "embedder_weights".into(),
        json!(out.embedders.iter().map(|o| o.weight).collect::<Vec<_>>()),
    );
    m.insert("per_embedder".into(), Value::Array(per_embedder));
    m.insert("methods_used".into(), Value::Array(methods));
    let versions = out
        .surprise_context
        .iter()
        .filter(|c| !matches!(c, ContextMember::Neighbour(_)))
        .count();
    m.insert(
        "context".into(),
        json!({
            "previous_versions": versions,
            "neighbours": out.neighbours.len(),
            "next_nearest": out.next_nearest.len(),
            "stored_vertices": stored_vertices,
        }),
    );
    m.insert("persisted".into(), json!(persisted));
    if include_diagnostics {
        let id_sim = |v: &[(Uuid, f64)]| -> Value {
            v.iter()
                .map(|(id, s)| json!({"vertex_id": id.to_string(), "similarity": s}))
                .collect()
        };
        let members: Vec<String> = out
            .surprise_context
            .iter()
            .map(|c| match c {
                ContextMember::PreviousVersion(i) => format!("version:{i}"),
                ContextMember::OldFingerprint => "old_fingerprint".to_string(),
                ContextMember::Neighbour(id) => format!("neighbour:{id}"),
            })
            .collect();
        let per: Vec<Value> = out
            .embedders
            .iter()
            .map(|o| {
                let c = &o.coherence;
                json!({
                    "embedder": o.embedder.name(),
                    "raw_surprise": o.raw_surprise,
                    "context_distances": o.context_distances,
                    "neighbour_distances": o.neighbour_distances,
                    "next_nearest_distances": o.next_nearest_distances,
                    "connectivity": c.connectivity,
                    "cluster_fit": c.cluster_fit,
                    "consistency": c.consistency,
                    "silhouette": c.silhouette.map(|s| json!({"a": s.a, "b": s.b, "s": s.s})),
                })
            })
            .collect();
        m.insert(
            "diagnostics".into(),
            json!({
                "surprise_context": members,
                "per_embedder": per,
                "neighbours": id_sim(&out.neighbours),
                "next_nearest": id_sim(&out.next_nearest),
            }),
        );
    }
    m
}

fn compute_delta_sc(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    let started = Instant::now();
    args.deny_unknown(ARGS)?;
    let vertex_id = args
        .uuid("vertex_id")?
        .ok_or_else(|| ToolError::invalid("missing required field 'vertex_id' (a UUID)"))?;
    let old = parse_fingerprint("old_fingerprint", args.require("old_fingerprint")?)?;
    let new = parse_fingerprint("new_fingerprint", args.require("new_fingerprint")?)?;
    let johari = args.f64_in("johari_threshold", 0.0, 1.0)?;
    let include_diagnostics = args.bool_or("include_diagnostics", false)?;
    let persist = args.bool_or("persist", true)?;

    let request = UpdateRequest {
        vertex_id,
        old: &old,
        new: &new,
        johari_threshold: johari,
        persist,
    };
    let nearby = ctx.svc.vertices.nearby(&new, vertex_id);
    let stored = vertices::load_context(ctx.db, vertex_id, &nearby)?;
    let learner = Learner {
        lambdas: ctx.svc.meta.lambdas,
        weights: ctx.svc.meta.embedder_weights(),
    };
    let plan = plan_update(&request, &ctx.svc.vertices, &stored, learner).map_err(to_tool_error)?;
    let out = plan.result;
    let stored_vertices = plan.stored_vertices;
    let prediction_id = Uuid::new_v4();
    meta_store::open_prediction(
        ctx.db,
        &OpenPrediction {
            id: prediction_id,
            created: ctx.now,
            delta_s: out.delta_s,
            delta_c: out.delta_c,
            learning_score: out.learning_score,
            domain: None,
        },
    )?;
    if let Some(write) = plan.write {
        let seq = vertices::persist(ctx.db, &write, ctx.now)?;
        ctx.svc
            .vertices
            .apply(write, seq)
            .map_err(|e| ToolError::Internal(e.to_string()))?;
    }
    let mut m = shape_output(
        &out,
        vertex_id,
        prediction_id,
        persist,
        stored_vertices,
        include_diagnostics,
    );
    m.insert(
        "computation_time_us".into(),
        json!(started.elapsed().as_micros() as u64),
    );
    Ok(Outcome::Ok(Value::Object(m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(arg: &str, v: &Value) -> String {
        match parse_fingerprint(arg, v) {
            Err(ToolError::InvalidParams(m)) => m,
            other => panic!("expected InvalidParams, got {other:?}"),
        }
    }

    #[test]
    fn compact_example_is_a_valid_fingerprint() {
        let a = parse_fingerprint("old_fingerprint", &compact_fingerprint_json(5)).unwrap();
        let b = parse_fingerprint("new_fingerprint", &compact_fingerprint_json(3)).unwrap();
        assert_ne!(a, b);
        assert!(compact_fingerprint_json(3).to_string().len() < 20_000);
    }

    #[test]
    fn example_fingerprint_parses_bare_and_wrapped() {
        let fp = example_fingerprint_json(0.0);
        let a = parse_fingerprint("new_fingerprint", &fp).unwrap();
        let b =
            parse_fingerprint("new_fingerprint", &json!({"semantic": fp, "purpose": [1]})).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn parse_errors_name_argument_field_and_rule() {
        let base = example_fingerprint_json(0.0);
        type Edit = fn(&mut Value);
        let cases: Vec<(Edit, &str)> = vec![
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
                |v| v["e8_graph"][2] = json!(1e300),
                "new_fingerprint: e8_graph[2] = 1e+300 is outside the 32-bit float range",
            ),
            (
                |v| v["e6_sparse"]["indices"] = json!([5, 3, 9, 10, 11]),
                "e6_sparse: indices must be strictly ascending",
            ),
            (
                |v| v["e6_sparse"]["indices"] = json!([3, 3, 9, 10, 11]),
                "e6_sparse: duplicate index 3",
            ),
            (
                |v| v["e13_splade"]["indices"] = json!([3, 4, 9, 10, 30522]),
                "e13_splade: indices[4] = 30522 is out of range",
            ),
            (
                |v| v["e13_splade"]["indices"] = json!([3, 4, 9, 10, 70000]),
                "e13_splade: indices[4] = 70000 is out of range",
            ),
            (
                |v| v["e6_sparse"]["values"] = json!([1.0]),
                "e6_sparse: indices and values must have the same length",
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
                |v| v["e2_temporal_recent"] = json!(vec![0.0; 512]),
                "e2_temporal_recent: the vector is all zeros",
            ),
        ];
        for (edit, want) in cases {
            let mut v = base.clone();
            edit(&mut v);
            let m = err("new_fingerprint", &v);
            assert!(m.contains(want), "{m:?} should contain {want:?}");
        }
        assert!(
            err("old_fingerprint", &json!([1])).starts_with("old_fingerprint: expected an object")
        );
    }
}

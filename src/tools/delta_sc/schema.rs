//! The JSON Schema of the fingerprint argument ([`WireFingerprint`]), written by hand: the 13
//! embedder fields with their dimensions, ranges and non-zero rules, the sparse `{indices,
//! values}` rules a schema can state, and the `semantic` wrapper form.
//!
//! The parts are written once, under the input schema's `$defs`, and referenced (`$ref`,
//! local, JSON Schema 2020-12, the dialect MCP names): `old_fingerprint` and
//! `new_fingerprint` share one `fingerprint`, its two forms one `embeddings`, and the ten
//! dense vectors one `vector`. Written out inline, the same rules cost 17.5 KB in every
//! request a client makes to its model; referenced, under 2 KB.
//!
//! What it cannot state, which the reader checks with a message naming the embedder (the known
//! schema-truth gaps of this tool):
//! - sparse `indices` strictly ascending: the schema says `uniqueItems`, which refuses a repeated
//!   index but not a descending pair;
//! - sparse `indices` and `values` of the same length;
//! - in the `semantic` form, a `null` nested inside an ignored field (`"x": {"y": null}`): nulls
//!   are refused anywhere in the arguments, and the schema does not say so at every depth (it
//!   does refuse `null` as an ignored field's own value).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::fingerprint::{F32_LIMIT, SEMANTIC, WireFingerprint};
use crate::service::delta_sc::{EmbedderKind, SPARSE_VOCAB};
use crate::service::vocab::{EmbedderId, NUM_EMBEDDERS};

/// The largest magnitude a 32-bit float rounds to zero, 2^-150 (half the smallest subnormal;
/// the tie rounds to the even zero). A value is non-zero when `|x| > ZERO_LIMIT`.
pub const ZERO_LIMIT: f64 = 7.006_492_321_624_085e-46;

/// The `$defs` entries and the `$ref` to each.
const FINGERPRINT: &str = "fingerprint";
const EMBEDDINGS: &str = "embeddings";
const VECTOR: &str = "vector";
const DIRECTION: &str = "direction";
const SPARSE: &str = "sparse";
const TOKENS: &str = "tokens";

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/$defs/{name}")})
}

/// Numbers a 32-bit float can hold: a dense vector of any length (each use states its length).
fn vector() -> Value {
    json!({
        "type": "array",
        "items": {"type": "number", "minimum": -F32_LIMIT, "maximum": F32_LIMIT},
    })
}

/// A [`vector`] with at least one value non-zero as a 32-bit float.
fn direction() -> Value {
    let mut v = reference(VECTOR);
    v["contains"] = json!({"not": {"minimum": -ZERO_LIMIT, "maximum": ZERO_LIMIT}});
    v
}

/// `n` numbers, at least one of them non-zero when `direction`.
fn dense(n: usize, direction: bool) -> Value {
    let mut v = reference(if direction { DIRECTION } else { VECTOR });
    v["minItems"] = json!(n);
    v["maxItems"] = json!(n);
    v
}

/// A sparse vector over `vocab` terms.
fn sparse(vocab: usize) -> Value {
    json!({
        "type": "object",
        "properties": {
            // Unique and in range, so at most `vocab` of them.
            "indices": {
                "type": "array", "uniqueItems": true,
                "items": {"type": "integer", "minimum": 0, "maximum": vocab - 1},
            },
            "values": {
                "type": "array",
                "items": {"type": "number", "minimum": 0, "maximum": F32_LIMIT},
            },
        },
        "required": ["indices", "values"],
        "additionalProperties": false,
    })
}

/// One or more token vectors of `dim` numbers, bare or as `{"tokens": […]}`.
fn tokens(dim: usize) -> Value {
    let tokens = json!({"type": "array", "minItems": 1, "items": dense(dim, true)});
    json!({"anyOf": [tokens, {
        "type": "object",
        "properties": {"tokens": tokens},
        "required": ["tokens"],
        "additionalProperties": false,
    }]})
}

/// The schema of one embedder's field.
fn embedder_schema(e: EmbedderId) -> Value {
    match e.kind() {
        EmbedderKind::Dense { dim } => dense(dim, e.needs_direction()),
        EmbedderKind::Sparse { .. } => reference(SPARSE),
        EmbedderKind::Tokens { .. } => reference(TOKENS),
    }
}

/// The 13 embedder fields' names, in index order.
fn fields() -> Vec<&'static str> {
    EmbedderId::ALL.iter().map(|e| e.field()).collect()
}

/// The 13 fields, exactly: no other property, and 13 of them (`minProperties` says "all
/// required" in 15 bytes instead of a list of the 13 names).
fn embeddings() -> Value {
    let properties: Map<String, Value> = EmbedderId::ALL
        .into_iter()
        .map(|e| (e.field().to_string(), embedder_schema(e)))
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        "minProperties": NUM_EMBEDDERS,
    })
}

/// The 13 fields, or `{"semantic": {the 13 fields}, …}` with any other field but null and no
/// embedder field beside `semantic`.
fn fingerprint() -> Value {
    json!({"anyOf": [reference(EMBEDDINGS), {
        "type": "object",
        "properties": {SEMANTIC: reference(EMBEDDINGS)},
        "required": [SEMANTIC],
        "propertyNames": {"not": {"enum": fields()}},
        "additionalProperties": {"not": {"type": "null"}},
    }]})
}

/// The description of a fingerprint argument, `when` the update ("before", "after"): what it
/// is and the two rules the schema cannot state (ascending indices, equal lengths); the
/// fields, their dimensions and ranges are the schema's.
pub fn fingerprint_description(when: &str) -> String {
    format!(
        "The memory's {NUM_EMBEDDERS} embedding vectors {when} the update (sparse indices \
         ascending, as many as values), or {{\"{SEMANTIC}\": {{…}}}} inside a stored record."
    )
}

impl JsonSchema for WireFingerprint {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Fingerprint")
    }

    fn inline_schema() -> bool {
        true
    }

    /// A `$ref` to the `fingerprint` entry it adds, with its parts, to the root's `$defs`.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let defs = generator.definitions_mut();
        for (name, schema) in [
            (FINGERPRINT, fingerprint()),
            (EMBEDDINGS, embeddings()),
            (VECTOR, vector()),
            (DIRECTION, direction()),
            (SPARSE, sparse(SPARSE_VOCAB)),
            (TOKENS, tokens(token_dim())),
        ] {
            defs.insert(name.to_string(), schema);
        }
        Schema::try_from(reference(FINGERPRINT)).expect("an object")
    }
}

/// The dimension of the token embedder's vectors.
fn token_dim() -> usize {
    EmbedderId::ALL
        .into_iter()
        .find_map(|e| match e.kind() {
            EmbedderKind::Tokens { dim } => Some(dim),
            _ => None,
        })
        .expect("one embedder has token vectors")
}

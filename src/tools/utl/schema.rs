//! The JSON Schema of the fingerprint argument ([`WireFingerprint`]), written by hand: the 13
//! embedder fields with their dimensions, ranges and non-zero rules, the sparse `{indices,
//! values}` rules a schema can state, and the `semantic` wrapper form.
//!
//! What it cannot state, which the reader checks with a message naming the embedder (the known
//! schema-truth gaps of this tool):
//! - sparse `indices` strictly ascending: the schema says `uniqueItems`, which refuses a repeated
//!   index but not a descending pair;
//! - sparse `indices` and `values` of the same length;
//! - in the `semantic` form, a `null` nested inside an ignored field (`"x": {"y": null}`): nulls
//!   are refused anywhere in the arguments, and a schema without `$ref` cannot say so at every
//!   depth (it does refuse `null` as an ignored field's own value).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use super::fingerprint::{F32_LIMIT, SEMANTIC, WireFingerprint};
use crate::service::delta_sc::{EmbedderKind, SPARSE_VOCAB};
use crate::service::vocab::{EmbedderId, NUM_EMBEDDERS};

/// The largest magnitude a 32-bit float rounds to zero, 2^-150 (half the smallest subnormal;
/// the tie rounds to the even zero). A value is non-zero when `|x| > ZERO_LIMIT`.
pub const ZERO_LIMIT: f64 = 7.006_492_321_624_085e-46;

/// A number a 32-bit float can hold.
fn number() -> Value {
    json!({"type": "number", "minimum": -F32_LIMIT, "maximum": F32_LIMIT})
}

/// "At least one value is non-zero as a 32-bit float."
fn some_non_zero() -> Value {
    json!({"not": {"minimum": -ZERO_LIMIT, "maximum": ZERO_LIMIT}})
}

/// `n` numbers, at least one of them non-zero when `direction`.
fn vector(n: usize, direction: bool) -> Value {
    let mut v = json!({"type": "array", "items": number(), "minItems": n, "maxItems": n});
    if direction {
        v["contains"] = some_non_zero();
    }
    v
}

/// The schema of one embedder's field.
fn embedder_schema(e: EmbedderId) -> Value {
    match e.kind() {
        EmbedderKind::Dense { dim } => vector(dim, e.needs_direction()),
        EmbedderKind::Sparse { vocab } => json!({
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
        }),
        EmbedderKind::Tokens { dim } => {
            let tokens = json!({"type": "array", "minItems": 1, "items": vector(dim, true)});
            json!({"anyOf": [tokens, {
                "type": "object",
                "properties": {"tokens": tokens},
                "required": ["tokens"],
                "additionalProperties": false,
            }]})
        }
    }
}

/// The 13 embedder fields' names, in index order.
fn fields() -> Vec<&'static str> {
    EmbedderId::ALL.iter().map(|e| e.field()).collect()
}

/// The 13 embedder fields as `properties`.
fn embedder_properties() -> Map<String, Value> {
    EmbedderId::ALL
        .into_iter()
        .map(|e| (e.field().to_string(), embedder_schema(e)))
        .collect()
}

/// The description of a fingerprint argument, `when` the update ("before", "after"): the 13
/// fields and their rules in words, from the vocabulary, including the two rules the schema
/// cannot state (ascending indices, equal lengths).
pub fn fingerprint_description(when: &str) -> String {
    let mut dense = Vec::new();
    let (mut sparse, mut tokens) = (Vec::new(), String::new());
    for e in EmbedderId::ALL {
        match e.kind() {
            EmbedderKind::Dense { dim } if e.needs_direction() => {
                dense.push(format!("{} {dim}", e.field()));
            }
            EmbedderKind::Dense { dim } => {
                dense.push(format!("{} {dim} (may be all zero)", e.field()))
            }
            EmbedderKind::Sparse { .. } => sparse.push(e.field()),
            EmbedderKind::Tokens { dim } => {
                tokens = format!("{}: one or more token vectors of {dim} numbers", e.field());
            }
        }
    }
    format!(
        "The memory's 13 embedding vectors {when} the update, one field per embedder. Dense, \
         numbers per field: {}. {tokens}. {}: sparse {{indices, values}} over {SPARSE_VOCAB} terms, \
         indices strictly ascending, one weight >= 0 per index. The other dense vectors and \
         every token need a non-zero value; |x| <= {F32_LIMIT:e}. Or {{\"{SEMANTIC}\": {{the 13 fields}}}} \
         inside a stored record whose other fields are ignored.",
        dense.join(", "),
        sparse.join(" and "),
    )
}

impl JsonSchema for WireFingerprint {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Fingerprint")
    }

    fn inline_schema() -> bool {
        true
    }

    /// The 13 embedder fields under `properties`, and `semantic`: an object of the 13 fields
    /// too. With `semantic` (the wrapper form), no embedder field beside it and any other field
    /// but null; without it, exactly the 13 fields.
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut properties = embedder_properties();
        properties.insert(
            SEMANTIC.to_string(),
            json!({
                "type": "object",
                "properties": embedder_properties(),
                "required": fields(),
                "additionalProperties": false,
            }),
        );
        json_schema!({
            "type": "object",
            "properties": properties,
            "if": {"required": [SEMANTIC]},
            "then": {
                "propertyNames": {"not": {"enum": fields()}},
                "additionalProperties": {"not": {"type": "null"}},
            },
            // The 13 required fields and no more.
            "else": {"required": fields(), "maxProperties": NUM_EMBEDDERS},
        })
    }
}

//! The fast path of the `gwt_compute_delta_sc` arguments: [`parse_fast`] gives the verdicts and
//! messages of `wire::parse` in about the time of the hand-walked parser it replaced.
//!
//! `wire::parse` reads through `serde_path_to_error`, which wraps every value: on the 476 KB
//! bench request (about 24,000 numbers) the serde reader of [`super::fingerprint`] took 640 µs
//! that way, against 70 µs for a direct walk; and even without the wrapping its speed hung on
//! which serde_json calls the compiler chose to inline (20 to 34 million instructions for 20
//! requests, against 19). So the fingerprints are first walked directly here, with the same
//! rules, and only arguments this walk refuses are read again by `wire::parse`, for the message
//! that names the field. The walk accepts exactly what the reader accepts; the unit tests run
//! both on every case.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::fingerprint::{F32_LIMIT, SEMANTIC, WireFingerprint};
use super::{ComputeInput, wire};
use crate::service::delta_sc::{
    EmbedderKind, EmbedderValue, Fingerprint, FingerprintBuilder, SPARSE_VOCAB, SparseVector,
    TokenVectors,
};
use crate::service::vocab::EmbedderId;
use crate::tools::ToolError;
use crate::tools::wire::{Num, UnitInterval, WireUuid};

/// The arguments with the fingerprints left unread (`IgnoredAny` costs nothing on a JSON
/// value): the other fields with `ComputeInput`'s own types and rules.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Shell {
    vertex_id: WireUuid,
    #[allow(dead_code)]
    old_fingerprint: IgnoredAny,
    #[allow(dead_code)]
    new_fingerprint: IgnoredAny,
    johari_threshold: Option<Num<UnitInterval>>,
    include_diagnostics: Option<bool>,
    persist: Option<bool>,
}

/// `wire::parse::<ComputeInput>` with the same verdicts and messages (see the module docs).
///
/// # Errors
/// As `wire::parse`.
pub fn parse_fast(arguments: &Value) -> Result<ComputeInput, ToolError> {
    fast(arguments).map_or_else(|| wire::parse(arguments), Ok)
}

/// The arguments when they are valid, `None` otherwise (then `wire::parse` says why).
fn fast(arguments: &Value) -> Option<ComputeInput> {
    let Value::Object(m) = arguments else {
        return None;
    };
    // wire::parse refuses a null property and a NUL character anywhere; inside the embedder
    // fields (numbers only) the walk below refuses every null itself.
    let nulls = m.iter().any(|(k, v)| match (k.as_str(), v) {
        ("old_fingerprint" | "new_fingerprint", Value::Object(fp)) => null_beside_embedders(fp),
        _ => v.is_null() || wire::has_null_or_nul(v),
    });
    if nulls {
        return None;
    }
    let shell = Shell::deserialize(arguments).ok()?;
    Some(ComputeInput {
        vertex_id: shell.vertex_id,
        old_fingerprint: WireFingerprint(fingerprint(&m["old_fingerprint"])?),
        new_fingerprint: WireFingerprint(fingerprint(&m["new_fingerprint"])?),
        johari_threshold: shell.johari_threshold,
        include_diagnostics: shell.include_diagnostics,
        persist: shell.persist,
    })
}

/// Whether a fingerprint object has a `null` property or a NUL character outside its embedder
/// fields (in the wrapper's ignored fields, or `semantic` itself).
fn null_beside_embedders(fp: &Map<String, Value>) -> bool {
    fp.iter().any(|(k, v)| {
        if EmbedderId::from_field(k).is_some() {
            v.is_null()
        } else if k == SEMANTIC
            && let Value::Object(inner) = v
        {
            null_beside_embedders(inner)
        } else {
            v.is_null() || wire::has_null_or_nul(v)
        }
    })
}

/// A fingerprint in either form, by the rules of [`super::fingerprint`].
fn fingerprint(v: &Value) -> Option<Fingerprint> {
    let Value::Object(m) = v else { return None };
    let fields = match m.get(SEMANTIC) {
        // The wrapper form: no embedder field beside `semantic`, the rest ignored.
        Some(inner) if !m.keys().any(|k| EmbedderId::from_field(k).is_some()) => {
            inner.as_object()?
        }
        Some(_) => return None,
        None => m,
    };
    let mut b = FingerprintBuilder::new();
    for (k, x) in fields {
        let e = EmbedderId::from_field(k)?;
        b.set(e, embedder(e, x)?);
    }
    b.build().ok()
}

fn embedder(e: EmbedderId, v: &Value) -> Option<EmbedderValue> {
    Some(match e.kind() {
        EmbedderKind::Dense { .. } => EmbedderValue::Dense(floats(v, false)?),
        EmbedderKind::Sparse { .. } => {
            let Value::Object(m) = v else { return None };
            if m.len() != 2 {
                return None;
            }
            let Value::Array(raw) = m.get("indices")? else {
                return None;
            };
            let mut indices = Vec::with_capacity(raw.len());
            for x in raw {
                let x = x.as_f64()?;
                if x.fract() != 0.0 || !(0.0..SPARSE_VOCAB as f64).contains(&x) {
                    return None;
                }
                indices.push(x as u16);
            }
            let values = floats(m.get("values")?, true)?;
            EmbedderValue::Sparse(SparseVector { indices, values })
        }
        EmbedderKind::Tokens { .. } => {
            let tokens = match v {
                Value::Object(m) if m.len() == 1 => m.get("tokens")?,
                other => other,
            };
            let Value::Array(items) = tokens else {
                return None;
            };
            let tokens = items
                .iter()
                .map(|t| floats(t, false))
                .collect::<Option<_>>()?;
            EmbedderValue::Tokens(TokenVectors { tokens })
        }
    })
}

/// An array of numbers with `|x| <= F32_LIMIT` (and `>= 0` for sparse values) as `f32`.
fn floats(v: &Value, sparse_values: bool) -> Option<Vec<f32>> {
    let Value::Array(items) = v else { return None };
    let mut out = Vec::with_capacity(items.len());
    for x in items {
        let x = x.as_f64()?;
        if x.abs() > F32_LIMIT || (sparse_values && x < 0.0) {
            return None;
        }
        out.push(x as f32);
    }
    Some(out)
}

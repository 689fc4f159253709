//! The backend-neutral part of the beliefs family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use uuid::Uuid;

use crate::service::epistemic::{ActionType, Belief, BeliefEvent, BeliefStatus, UncertaintyType};
use crate::store::{StoreError, from_us, in_range};

pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {e}"))
}

/// A stored status.
///
/// # Errors
/// [`StoreError::Corrupt`] for an unknown one.
pub(crate) fn status(s: &str) -> Result<BeliefStatus, StoreError> {
    BeliefStatus::parse(s).map_err(|e| corrupt("belief status", e))
}

/// A belief row as stored (both backends decode it with [`belief_from_raw`]).
pub(crate) struct RawBelief {
    pub(crate) seq: i64,
    pub(crate) id: String,
    pub(crate) normalised_target: String,
    pub(crate) target: String,
    pub(crate) status: String,
    pub(crate) confidence: f64,
    pub(crate) rationale: String,
    pub(crate) uncertainty_type: Option<String>,
    pub(crate) source_nodes: String,
    pub(crate) created_us: i64,
    pub(crate) updated_us: i64,
}

/// A history event row as stored: action, input confidence, status before and after,
/// confidence before and after, rationale, time (µs). Decoded by [`event_from_raw`].
pub(crate) type RawEvent = (
    String,
    f64,
    Option<String>,
    String,
    Option<f64>,
    f64,
    String,
    i64,
);

/// The history event of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an unknown action or status, a confidence outside [0, 1], or
/// a time outside chrono's range.
pub(crate) fn event_from_raw(raw: RawEvent) -> Result<BeliefEvent, StoreError> {
    let (action, input, before, after, c_before, c_after, rationale, at) = raw;
    Ok(BeliefEvent {
        action: ActionType::parse(&action).map_err(|e| corrupt("belief action", e))?,
        input_confidence: input,
        status_before: before.as_deref().map(status).transpose()?,
        status_after: status(&after)?,
        confidence_before: c_before
            .map(|c| in_range("belief confidence", c, 0.0, 1.0))
            .transpose()?,
        confidence_after: in_range("belief confidence", c_after, 0.0, 1.0)?,
        rationale,
        at: from_us(at)?,
    })
}

/// The belief of a stored row and its history (oldest first).
///
/// # Errors
/// [`StoreError::Corrupt`] for a source node or id that is not a UUID, an unknown status or
/// uncertainty type, a confidence outside [0, 1], or a time outside chrono's range.
pub(crate) fn belief_from_raw(
    raw: RawBelief,
    history: Vec<BeliefEvent>,
) -> Result<Belief, StoreError> {
    let source_nodes = raw
        .source_nodes
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| Uuid::parse_str(s).map_err(|e| corrupt("belief source node", e)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Belief {
        id: Uuid::parse_str(&raw.id).map_err(|e| corrupt("belief id", e))?,
        target: raw.target,
        normalised_target: raw.normalised_target,
        status: status(&raw.status)?,
        confidence: in_range("belief confidence", raw.confidence, 0.0, 1.0)?,
        rationale: raw.rationale,
        uncertainty_type: raw
            .uncertainty_type
            .as_deref()
            .map(UncertaintyType::parse)
            .transpose()
            .map_err(|e| corrupt("uncertainty type", e))?,
        source_nodes,
        created_at: from_us(raw.created_us)?,
        updated_at: from_us(raw.updated_us)?,
        history,
    })
}

/// The stored `source_nodes` of a belief: hyphenated UUIDs joined by `,`.
pub(crate) fn sources_text(b: &Belief) -> String {
    b.source_nodes
        .iter()
        .map(|u| u.hyphenated().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// What [`merge`](crate::store::beliefs::merge) did with one belief.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Merged {
    /// The belief was not present (by normalised target) and was created.
    pub created: bool,
    /// History events appended (those not already present).
    pub events_added: usize,
}

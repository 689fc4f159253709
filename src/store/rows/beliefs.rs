//! The backend-neutral part of the beliefs family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use uuid::Uuid;

use super::StoredRow;
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

/// A `beliefs` row as stored, its columns selected in field order (both backends read it with
/// [`RawBelief::read`] and decode it with [`belief_from_raw`]).
pub(crate) struct RawBelief {
    /// Row key, which its history events refer to.
    pub(crate) seq: i64,
    /// The belief's UUID, hyphenated text.
    pub(crate) id: String,
    /// The target normalised: unique per project.
    pub(crate) normalised_target: String,
    /// The target as given.
    pub(crate) target: String,
    /// The status's stored name (see `BeliefStatus::parse`).
    pub(crate) status: String,
    /// Confidence, in [0, 1].
    pub(crate) confidence: f64,
    /// Rationale of the latest action that changed the belief.
    pub(crate) rationale: String,
    /// The uncertainty type's stored name, if any (see `UncertaintyType::parse`).
    pub(crate) uncertainty_type: Option<String>,
    /// Source node UUIDs, hyphenated and joined by `,` (see [`sources_text`]); empty for none.
    pub(crate) source_nodes: String,
    /// When it was created: microseconds since the Unix epoch, UTC.
    pub(crate) created_us: i64,
    /// When it last changed: microseconds since the Unix epoch, UTC.
    pub(crate) updated_us: i64,
}

impl RawBelief {
    /// The belief row `r`, in field order (`seq, id, normalised_target, target, status,
    /// confidence, rationale, uncertainty_type, source_nodes, created_us, updated_us`).
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawBelief {
            seq: r.int(0)?,
            id: r.text(1)?,
            normalised_target: r.text(2)?,
            target: r.text(3)?,
            status: r.text(4)?,
            confidence: r.real(5)?,
            rationale: r.text(6)?,
            uncertainty_type: r.opt_text(7)?,
            source_nodes: r.text(8)?,
            created_us: r.int(9)?,
            updated_us: r.int(10)?,
        })
    }
}

/// A `belief_events` row as stored, its columns selected in field order (`action,
/// input_confidence, status_before, status_after, confidence_before, confidence_after,
/// rationale, at_us`); read with [`RawEvent::read`], decoded by [`event_from_raw`].
pub(crate) struct RawEvent {
    /// The action's stored name (see `ActionType::parse`).
    pub(crate) action: String,
    /// The confidence given with the request, in [0, 1] (not checked on reading).
    pub(crate) input_confidence: f64,
    /// The status's stored name before the action; NULL when the action created the belief.
    pub(crate) status_before: Option<String>,
    /// The status's stored name after the action.
    pub(crate) status_after: String,
    /// The confidence before the action, in [0, 1]; NULL when the action created the belief.
    pub(crate) confidence_before: Option<f64>,
    /// The confidence after the action, in [0, 1].
    pub(crate) confidence_after: f64,
    /// The request's rationale.
    pub(crate) rationale: String,
    /// When: microseconds since the Unix epoch, UTC.
    pub(crate) at_us: i64,
}

impl RawEvent {
    /// The history event row `r`, in the column order above.
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawEvent {
            action: r.text(0)?,
            input_confidence: r.real(1)?,
            status_before: r.opt_text(2)?,
            status_after: r.text(3)?,
            confidence_before: r.opt_real(4)?,
            confidence_after: r.real(5)?,
            rationale: r.text(6)?,
            at_us: r.int(7)?,
        })
    }
}

/// The history event of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an unknown action or status, a confidence outside [0, 1], or
/// a time outside chrono's range.
pub(crate) fn event_from_raw(raw: RawEvent) -> Result<BeliefEvent, StoreError> {
    Ok(BeliefEvent {
        action: ActionType::parse(&raw.action).map_err(|e| corrupt("belief action", e))?,
        input_confidence: raw.input_confidence,
        status_before: raw.status_before.as_deref().map(status).transpose()?,
        status_after: status(&raw.status_after)?,
        confidence_before: raw
            .confidence_before
            .map(|c| in_range("belief confidence", c, 0.0, 1.0))
            .transpose()?,
        confidence_after: in_range("belief confidence", raw.confidence_after, 0.0, 1.0)?,
        rationale: raw.rationale,
        at: from_us(raw.at_us)?,
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

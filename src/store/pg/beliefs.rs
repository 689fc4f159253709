//! PostgreSQL twin of `store/beliefs.rs`.

use super::{Pg, get};
use crate::service::epistemic::{
    Belief, BeliefEvent, BeliefStatus, UncertaintyType, WorkspaceSummary, binary_entropy,
};
use crate::store::rows::beliefs::{
    RawBelief, RawEvent, belief_from_raw, event_from_raw, sources_text, status,
};
use crate::store::{StoreError, count, to_us};

/// PostgreSQL twin of [`crate::store::beliefs::find`].
///
/// # Errors
/// [`StoreError::Postgres`], [`StoreError::ConnectionLost`], or [`StoreError::Corrupt`] for
/// an unreadable row.
pub fn find(pg: &Pg, project: &str, normalised_target: &str) -> Result<Option<Belief>, StoreError> {
    let Some(r) = pg.query_opt(
        "SELECT seq, id, normalised_target, target, status, confidence, rationale,
                uncertainty_type, source_nodes, created_us, updated_us
         FROM beliefs WHERE project = $2 AND normalised_target = $1",
        &[&normalised_target, &project],
    )?
    else {
        return Ok(None);
    };
    let raw = RawBelief::read(&r)?;
    let rows = pg.query(
        "SELECT action, input_confidence, status_before, status_after, confidence_before,
                confidence_after, rationale, at_us
         FROM belief_events WHERE belief_seq = $1 ORDER BY seq",
        &[&raw.seq],
    )?;
    let history = rows
        .iter()
        .map(|r| event_from_raw(RawEvent::read(r)?))
        .collect::<Result<_, _>>()?;
    belief_from_raw(raw, history).map(Some)
}

/// PostgreSQL twin of `put_row` in `store/beliefs.rs`: insert or update (by id) a belief's
/// row; returns its `seq`.
///
/// # Errors
/// [`StoreError::Postgres`] (also for a second belief of the same normalised target under
/// another id) or [`StoreError::ConnectionLost`].
pub fn put_row(pg: &Pg, project: &str, b: &Belief) -> Result<i64, StoreError> {
    let row = pg.query_one(
        "INSERT INTO beliefs (id, normalised_target, target, status, confidence, entropy,
                              rationale, uncertainty_type, source_nodes, created_us, updated_us,
                              project)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (id) DO UPDATE SET
             status = excluded.status, confidence = excluded.confidence,
             entropy = excluded.entropy, rationale = excluded.rationale,
             uncertainty_type = excluded.uncertainty_type,
             source_nodes = excluded.source_nodes, updated_us = excluded.updated_us
         WHERE beliefs.project = excluded.project
         RETURNING seq",
        &[
            &b.id.to_string(),
            &b.normalised_target,
            &b.target,
            &b.status.as_str(),
            &b.confidence,
            &binary_entropy(b.confidence),
            &b.rationale,
            &b.uncertainty_type.map(UncertaintyType::as_str),
            &sources_text(b),
            &to_us(b.created_at),
            &to_us(b.updated_at),
            &project,
        ],
    )?;
    get(&row, 0)
}

/// PostgreSQL twin of `append_event` in `store/beliefs.rs`: append one history event to the
/// belief of row `seq`.
///
/// # Errors
/// As [`put_row`].
pub fn append_event(pg: &Pg, seq: i64, event: &BeliefEvent) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO belief_events (belief_seq, action, input_confidence, status_before,
                                    status_after, confidence_before, confidence_after,
                                    rationale, at_us)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &seq,
            &event.action.as_str(),
            &event.input_confidence,
            &event.status_before.map(BeliefStatus::as_str),
            &event.status_after.as_str(),
            &event.confidence_before,
            &event.confidence_after,
            &event.rationale,
            &to_us(event.at),
        ],
    )?;
    Ok(())
}

/// PostgreSQL twin of [`crate::store::beliefs::all`]: every belief with its history, in
/// creation order.
///
/// # Errors
/// As [`find`].
pub fn all(pg: &Pg, project: &str) -> Result<Vec<Belief>, StoreError> {
    let rows = pg.query(
        "SELECT normalised_target FROM beliefs WHERE project = $1 ORDER BY seq",
        &[&project],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let target: String = get(r, 0)?;
        out.extend(find(pg, project, &target)?);
    }
    Ok(out)
}

/// PostgreSQL twin of [`crate::store::beliefs::summary`].
///
/// # Errors
/// As [`find`] (an unknown stored status is [`StoreError::Corrupt`]).
pub fn summary(pg: &Pg, project: &str) -> Result<WorkspaceSummary, StoreError> {
    let rows = pg.query(
        "SELECT status, count(*), sum(confidence), sum(entropy) FROM beliefs
         WHERE project = $1 GROUP BY status",
        &[&project],
    )?;
    let mut s = WorkspaceSummary::default();
    for r in &rows {
        let st: String = get(r, 0)?;
        let n: u64 = count("belief count", get(r, 1)?)?;
        s.add_group(status(&st)?, n, get(r, 2)?, get(r, 3)?);
    }
    Ok(s)
}

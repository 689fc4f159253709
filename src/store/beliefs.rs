//! Belief workspace persistence: one row per belief (keyed by normalised target) and its
//! append-only action history.

use rusqlite::{OptionalExtension, Row, params};
use uuid::Uuid;

use super::{Db, StoreError, from_us, in_range, to_us};
use super::{pg, sqlite_or};
use crate::service::epistemic::{
    ActionType, Belief, BeliefEvent, BeliefStatus, UncertaintyType, WorkspaceSummary,
    binary_entropy,
};

/// Schema of the belief workspace.
///
/// `entropy` caches `binary_entropy(confidence)` (computed in Rust; the bundled SQLite has no
/// math functions) so the workspace summary is one `GROUP BY` over the table. `source_nodes`
/// holds hyphenated UUIDs joined by `,`, in first-seen order.
pub const MIGRATION: &str = "
CREATE TABLE beliefs (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    normalised_target  TEXT    NOT NULL UNIQUE,
    target             TEXT    NOT NULL,
    status             TEXT    NOT NULL
        CHECK (status IN ('active', 'hypothetical', 'verified', 'denied', 'retracted')),
    confidence         REAL    NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    entropy            REAL    NOT NULL,
    rationale          TEXT    NOT NULL,
    uncertainty_type   TEXT
        CHECK (uncertainty_type IS NULL OR uncertainty_type IN ('epistemic', 'aleatory', 'mixed')),
    source_nodes       TEXT    NOT NULL,
    created_us         INTEGER NOT NULL,
    updated_us         INTEGER NOT NULL
) STRICT;
CREATE INDEX beliefs_status ON beliefs (status);

CREATE TABLE belief_events (
    seq                INTEGER PRIMARY KEY,
    belief_seq         INTEGER NOT NULL REFERENCES beliefs (seq),
    action             TEXT    NOT NULL,
    input_confidence   REAL    NOT NULL,
    status_before      TEXT,
    status_after       TEXT    NOT NULL,
    confidence_before  REAL,
    confidence_after   REAL    NOT NULL,
    rationale          TEXT    NOT NULL,
    at_us              INTEGER NOT NULL
) STRICT;
CREATE INDEX belief_events_belief ON belief_events (belief_seq, seq);
";

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
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

fn raw_belief(r: &Row<'_>) -> rusqlite::Result<RawBelief> {
    Ok(RawBelief {
        seq: r.get(0)?,
        id: r.get(1)?,
        normalised_target: r.get(2)?,
        target: r.get(3)?,
        status: r.get(4)?,
        confidence: r.get(5)?,
        rationale: r.get(6)?,
        uncertainty_type: r.get(7)?,
        source_nodes: r.get(8)?,
        created_us: r.get(9)?,
        updated_us: r.get(10)?,
    })
}

/// The belief stored under a normalised target, with its full history (oldest first).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn find(db: &Db<'_>, normalised_target: &str) -> Result<Option<Belief>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::beliefs::find(pg, normalised_target));
    let raw = conn
        .prepare_cached(
            "SELECT seq, id, normalised_target, target, status, confidence, rationale,
                    uncertainty_type, source_nodes, created_us, updated_us
             FROM beliefs WHERE normalised_target = ?1",
        )?
        .query_row([normalised_target], raw_belief)
        .optional()?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(
        "SELECT action, input_confidence, status_before, status_after, confidence_before,
                confidence_after, rationale, at_us
         FROM belief_events WHERE belief_seq = ?1 ORDER BY seq",
    )?;
    let history = stmt
        .query_map([raw.seq], |r| RawEvent::try_from(r))?
        .map(|row| event_from_raw(row?))
        .collect::<Result<_, _>>()?;
    belief_from_raw(raw, history).map(Some)
}

/// Writes a belief's current state (insert or update by id) and appends one history event.
/// Call inside a write transaction.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure (including a second belief for the same normalised
/// target under another id).
pub fn save(db: &Db<'_>, b: &Belief, event: &BeliefEvent) -> Result<(), StoreError> {
    let seq = put_row(db, b)?;
    append_event(db, seq, event)
}

/// Insert or update (by id) a belief's row; returns its `seq`.
fn put_row(db: &Db<'_>, b: &Belief) -> Result<i64, StoreError> {
    let conn = sqlite_or!(db, pg => pg::beliefs::put_row(pg, b));
    let sources = sources_text(b);
    Ok(conn
        .prepare_cached(
            "INSERT INTO beliefs (id, normalised_target, target, status, confidence, entropy,
                                  rationale, uncertainty_type, source_nodes, created_us, updated_us)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT (id) DO UPDATE SET
                 status = excluded.status, confidence = excluded.confidence,
                 entropy = excluded.entropy, rationale = excluded.rationale,
                 uncertainty_type = excluded.uncertainty_type,
                 source_nodes = excluded.source_nodes, updated_us = excluded.updated_us
             RETURNING seq",
        )?
        .query_row(
            params![
                b.id.to_string(),
                b.normalised_target,
                b.target,
                b.status.as_str(),
                b.confidence,
                binary_entropy(b.confidence),
                b.rationale,
                b.uncertainty_type.map(UncertaintyType::as_str),
                sources,
                to_us(b.created_at),
                to_us(b.updated_at),
            ],
            |r| r.get(0),
        )?)
}

/// Append one history event to the belief of row `seq`.
fn append_event(db: &Db<'_>, seq: i64, event: &BeliefEvent) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::beliefs::append_event(pg, seq, event));
    conn.prepare_cached(
        "INSERT INTO belief_events (belief_seq, action, input_confidence, status_before,
                                        status_after, confidence_before, confidence_after,
                                        rationale, at_us)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        seq,
        event.action.as_str(),
        event.input_confidence,
        event.status_before.map(BeliefStatus::as_str),
        event.status_after.as_str(),
        event.confidence_before,
        event.confidence_after,
        event.rationale,
        to_us(event.at),
    ])?;
    Ok(())
}

/// Every belief with its history, in creation order.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn all(db: &Db<'_>) -> Result<Vec<Belief>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::beliefs::all(pg));
    let targets = conn
        .prepare_cached("SELECT normalised_target FROM beliefs ORDER BY seq")?
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        out.extend(find(db, &t)?);
    }
    Ok(out)
}

/// What [`merge`] did with one belief.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Merged {
    /// The belief was not present (by normalised target) and was created.
    pub created: bool,
    /// History events appended (those not already present).
    pub events_added: usize,
}

/// Merge a belief exported from another database into the workspace, keyed by its normalised
/// target. A new target is stored whole (its id, times and history). For a target present,
/// the history events not already present (same time, action, rationale and confidence after)
/// are appended, the source nodes are united, and the current state (status, confidence,
/// rationale, uncertainty type, updated time) is the incoming one when it changed later than
/// the stored one. Merging the same belief twice changes nothing the second time. Call inside
/// a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row (an incoming id already used by another
/// target is an SQL failure).
pub fn merge(db: &Db<'_>, incoming: &Belief) -> Result<Merged, StoreError> {
    let Some(mut local) = find(db, &incoming.normalised_target)? else {
        let seq = put_row(db, incoming)?;
        for e in &incoming.history {
            append_event(db, seq, e)?;
        }
        return Ok(Merged {
            created: true,
            events_added: incoming.history.len(),
        });
    };
    let same = |a: &BeliefEvent, b: &BeliefEvent| {
        a.at == b.at
            && a.action == b.action
            && a.rationale == b.rationale
            && a.confidence_after.to_bits() == b.confidence_after.to_bits()
    };
    let fresh: Vec<&BeliefEvent> = incoming
        .history
        .iter()
        .filter(|e| !local.history.iter().any(|l| same(l, e)))
        .collect();
    let mut changed = !fresh.is_empty();
    for n in &incoming.source_nodes {
        if !local.source_nodes.contains(n) {
            local.source_nodes.push(*n);
            changed = true;
        }
    }
    if incoming.updated_at > local.updated_at {
        local.status = incoming.status;
        local.confidence = incoming.confidence;
        local.rationale = incoming.rationale.clone();
        local.uncertainty_type = incoming.uncertainty_type.or(local.uncertainty_type);
        local.updated_at = incoming.updated_at;
        changed = true;
    }
    if changed {
        let seq = put_row(db, &local)?;
        for e in &fresh {
            append_event(db, seq, e)?;
        }
    }
    Ok(Merged {
        created: false,
        events_added: fresh.len(),
    })
}

/// Counts per status and the sums behind the mean confidence and mean entropy.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unknown stored status.
pub fn summary(db: &Db<'_>) -> Result<WorkspaceSummary, StoreError> {
    let conn = sqlite_or!(db, pg => pg::beliefs::summary(pg));
    let mut stmt = conn.prepare_cached(
        "SELECT status, count(*), total(confidence), total(entropy) FROM beliefs GROUP BY status",
    )?;
    let rows = stmt.query_map([], |r| <(String, i64, f64, f64)>::try_from(r))?;
    let mut s = WorkspaceSummary::default();
    for row in rows {
        let (st, n, c, h) = row?;
        s.add_group(status(&st)?, n as u64, c, h);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::epistemic::{ActionRequest, apply_action};
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;
    use chrono::{DateTime, Utc};

    const TOL: f64 = 1e-12;

    fn at(us: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(us).unwrap()
    }

    fn step(db: &Db<'_>, action: &str, target: &str, c: Option<f64>, us: i64) -> Belief {
        let n1 = "550e8400-e29b-41d4-a716-446655440000";
        let req = ActionRequest::validate(action, target, c, "why", Some("mixed"), &[n1]).unwrap();
        let existing = find(db, &req.normalised_target).unwrap();
        let r = apply_action(existing, &req, Uuid::from_u128(us as u128), at(us)).unwrap();
        let b = r.belief.unwrap();
        save(db, &b, &r.event.unwrap()).unwrap();
        b
    }

    fn beliefs_and_history_round_trip_exactly(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                step(db, "hypothesize", "Ünïcödé target", Some(0.6), 1);
                step(db, "verify", "ünïcödé TARGET", Some(0.9), 2);
                let b = step(db, "verify", "Ünïcödé target", Some(0.9), 3);
                let stored = find(db, &b.normalised_target)?.expect("stored");
                assert_eq!(
                    stored, b,
                    "every field, history included, reads back bit-exactly"
                );
                assert_eq!(stored.history.len(), 3);
                assert_eq!(stored.confidence.to_bits(), b.confidence.to_bits());
                assert!(find(db, "absent")?.is_none());
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        beliefs_and_history_round_trip_exactly,
        round_trip_on_sqlite,
        round_trip_on_postgres
    );

    fn summary_aggregates_per_status(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                step(db, "assert", "a", Some(0.5), 1);
                step(db, "assert", "b", Some(0.25), 2);
                step(db, "assert", "c", Some(0.9), 3);
                step(db, "retract", "c", None, 4);
                let s = summary(db)?;
                assert_eq!(s.count(BeliefStatus::Active), 2);
                assert_eq!(s.count(BeliefStatus::Retracted), 1);
                assert_eq!(s.total(), 3);
                assert!((s.mean_confidence().unwrap() - 0.375).abs() < TOL);
                let want = WorkspaceSummary::from_beliefs([
                    (BeliefStatus::Active, 0.5),
                    (BeliefStatus::Active, 0.25),
                    (BeliefStatus::Retracted, 0.0),
                ]);
                assert!((s.mean_entropy().unwrap() - want.mean_entropy().unwrap()).abs() < TOL);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        summary_aggregates_per_status,
        summary_on_sqlite,
        summary_on_postgres
    );

    fn merging_twice_changes_nothing_the_second_time(store: &Store) {
        let (b, other) = store
            .write(|db| -> Result<_, StoreError> {
                step(db, "hypothesize", "merged", Some(0.6), 10);
                Ok((
                    step(db, "verify", "merged", Some(0.9), 20),
                    step(db, "assert", "x", Some(0.5), 5),
                ))
            })
            .unwrap();
        // Another database's version of the belief: one event in common, one later.
        let mut incoming = b.clone();
        incoming.history.remove(1);
        let later = apply_action(
            Some(b.clone()),
            &ActionRequest::validate("retract", "merged", None, "no", None, &[]).unwrap(),
            Uuid::from_u128(99),
            at(30),
        )
        .unwrap();
        incoming.history.push(later.event.clone().unwrap());
        let later = later.belief.unwrap();
        incoming.status = later.status;
        incoming.confidence = later.confidence;
        incoming.updated_at = later.updated_at;
        incoming.source_nodes.push(Uuid::from_u128(7));
        store
            .write(|db| -> Result<(), StoreError> {
                let m = merge(db, &incoming)?;
                assert_eq!((m.created, m.events_added), (false, 1));
                assert_eq!(merge(db, &incoming)?, Merged::default());
                let stored = find(db, "merged")?.expect("kept");
                assert_eq!(stored.history.len(), 3);
                assert_eq!(stored.status, BeliefStatus::Retracted);
                assert_eq!(stored.source_nodes.len(), 2);
                let ids: Vec<Uuid> = all(db)?.iter().map(|b| b.id).collect();
                assert_eq!(ids, [b.id, other.id], "creation order");
                let mut fresh = other.clone();
                fresh.id = Uuid::from_u128(1000);
                fresh.normalised_target = "new one".into();
                let m = merge(db, &fresh)?;
                assert_eq!((m.created, m.events_added), (true, 1));
                assert_eq!(
                    find(db, "new one")?.expect("created").history,
                    other.history
                );
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        merging_twice_changes_nothing_the_second_time,
        merge_on_sqlite,
        merge_on_postgres
    );
}

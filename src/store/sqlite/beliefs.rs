//! The SQLite side of [`crate::store::beliefs`]: its SQL, the family's migrations and their
//! data steps.

use rusqlite::{Connection, OptionalExtension, params};

use crate::service::epistemic::{
    Belief, BeliefEvent, BeliefStatus, UncertaintyType, WorkspaceSummary, binary_entropy,
};
use crate::store::rows::beliefs::{
    RawBelief, RawEvent, belief_from_raw, event_from_raw, sources_text, status,
};
use crate::store::{StoreError, to_us};

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

/// Migration 15: every belief belongs to a project ([`crate::project`]); a target is unique per
/// project, not in the whole database. SQLite cannot drop the column's `UNIQUE`, so both tables
/// are rebuilt (the events' copy refers to the new beliefs table, and the renames carry that
/// reference over; foreign keys stay on throughout). Rows keep their `seq`s and get the project
/// [`crate::project::UNASSIGNED`].
pub const MIGRATION_PROJECT: &str = "
CREATE TABLE beliefs_v15 (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    project            TEXT    NOT NULL DEFAULT '',
    normalised_target  TEXT    NOT NULL,
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
    updated_us         INTEGER NOT NULL,
    UNIQUE (project, normalised_target)
) STRICT;
INSERT INTO beliefs_v15 (seq, id, project, normalised_target, target, status, confidence,
                         entropy, rationale, uncertainty_type, source_nodes, created_us,
                         updated_us)
SELECT seq, id, '', normalised_target, target, status, confidence, entropy, rationale,
       uncertainty_type, source_nodes, created_us, updated_us
FROM beliefs;
CREATE TABLE belief_events_v15 (
    seq                INTEGER PRIMARY KEY,
    belief_seq         INTEGER NOT NULL REFERENCES beliefs_v15 (seq),
    action             TEXT    NOT NULL,
    input_confidence   REAL    NOT NULL,
    status_before      TEXT,
    status_after       TEXT    NOT NULL,
    confidence_before  REAL,
    confidence_after   REAL    NOT NULL,
    rationale          TEXT    NOT NULL,
    at_us              INTEGER NOT NULL
) STRICT;
INSERT INTO belief_events_v15 SELECT * FROM belief_events;
DROP TABLE belief_events;
DROP TABLE beliefs;
ALTER TABLE beliefs_v15 RENAME TO beliefs;
ALTER TABLE belief_events_v15 RENAME TO belief_events;
CREATE INDEX beliefs_status ON beliefs (project, status);
CREATE INDEX belief_events_belief ON belief_events (belief_seq, seq);
";

/// [`crate::store::beliefs::find`] on SQLite.
pub(crate) fn find(
    conn: &Connection,
    project: &str,
    normalised_target: &str,
) -> Result<Option<Belief>, StoreError> {
    let raw = conn
        .prepare_cached(
            "SELECT seq, id, normalised_target, target, status, confidence, rationale,
                    uncertainty_type, source_nodes, created_us, updated_us
             FROM beliefs WHERE project = ?2 AND normalised_target = ?1",
        )?
        .query_row(params![normalised_target, project], |r| RawBelief::read(r))
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
        .query_map([raw.seq], |r| RawEvent::read(r))?
        .map(|row| event_from_raw(row?))
        .collect::<Result<_, _>>()?;
    belief_from_raw(raw, history).map(Some)
}

/// [`crate::store::beliefs::put_row`] on SQLite.
pub(crate) fn put_row(conn: &Connection, project: &str, b: &Belief) -> Result<i64, StoreError> {
    let sources = sources_text(b);
    Ok(conn
        .prepare_cached(
            "INSERT INTO beliefs (id, normalised_target, target, status, confidence, entropy,
                                  rationale, uncertainty_type, source_nodes, created_us, updated_us,
                                  project)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (id) DO UPDATE SET
                 status = excluded.status, confidence = excluded.confidence,
                 entropy = excluded.entropy, rationale = excluded.rationale,
                 uncertainty_type = excluded.uncertainty_type,
                 source_nodes = excluded.source_nodes, updated_us = excluded.updated_us
             WHERE beliefs.project = excluded.project
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
                project,
            ],
            |r| r.get(0),
        )?)
}

/// [`crate::store::beliefs::append_event`] on SQLite.
pub(crate) fn append_event(
    conn: &Connection,
    seq: i64,
    event: &BeliefEvent,
) -> Result<(), StoreError> {
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

/// [`crate::store::beliefs::all`] on SQLite.
pub(crate) fn all(conn: &Connection, project: &str) -> Result<Vec<Belief>, StoreError> {
    let targets = conn
        .prepare_cached("SELECT normalised_target FROM beliefs WHERE project = ?1 ORDER BY seq")?
        .query_map([project], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        out.extend(find(conn, project, &t)?);
    }
    Ok(out)
}

/// [`crate::store::beliefs::summary`] on SQLite.
pub(crate) fn summary(conn: &Connection, project: &str) -> Result<WorkspaceSummary, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT status, count(*), total(confidence), total(entropy) FROM beliefs
         WHERE project = ?1 GROUP BY status",
    )?;
    let rows = stmt.query_map([project], |r| <(String, i64, f64, f64)>::try_from(r))?;
    let mut s = WorkspaceSummary::default();
    for row in rows {
        let (st, n, c, h) = row?;
        s.add_group(status(&st)?, n as u64, c, h);
    }
    Ok(s)
}

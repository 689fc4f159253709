//! The SQLite side of [`crate::store::recurrences`]: its SQL and migration.

use rusqlite::{Connection, OptionalExtension, params};
use uuid::Uuid;

use crate::store::rows::recurrences::{COLUMNS, RawRecurrence, Recurrence, recurrence_from_raw};
use crate::store::{StoreError, to_us};

/// Migration 18: the recurrences of a lesson, per project: reworded repeats of an active
/// lesson that `log_lesson_learned` merged into it, each with the whole call.
pub const MIGRATION: &str = "
CREATE TABLE lesson_recurrences (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT    NOT NULL UNIQUE,
    project               TEXT    NOT NULL,
    lesson_id             TEXT    NOT NULL,
    task_id               TEXT    NOT NULL,
    strategy_description  TEXT    NOT NULL,
    rca_summary           TEXT    NOT NULL,
    failure_type          TEXT    NOT NULL,
    source_agent          TEXT    NOT NULL,
    match_type            TEXT    NOT NULL
        CHECK (match_type IN ('contains', 'contained_in', 'similar')),
    score                 REAL    NOT NULL CHECK (score BETWEEN 0.0 AND 1.0),
    recorded_us           INTEGER NOT NULL
) STRICT;
CREATE INDEX lesson_recurrences_lesson ON lesson_recurrences (project, lesson_id, seq);
";

fn decode(r: rusqlite::Result<RawRecurrence>) -> Result<Recurrence, StoreError> {
    recurrence_from_raw(r?)
}

/// [`crate::store::recurrences::insert`] on SQLite: `false` when a recurrence with this id is
/// already stored (nothing is written).
pub(crate) fn insert(conn: &Connection, project: &str, r: &Recurrence) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached(&format!(
            "INSERT INTO lesson_recurrences (project, {COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT (id) DO NOTHING"
        ))?
        .execute(params![
            project,
            r.id.to_string(),
            r.lesson_id.to_string(),
            r.task_id,
            r.strategy_description,
            r.rca_summary,
            r.failure_type.as_str(),
            r.source_agent,
            r.match_type.as_str(),
            r.score,
            to_us(r.recorded_at),
        ])?;
    Ok(n == 1)
}

/// [`crate::store::recurrences::of_lesson`] on SQLite.
pub(crate) fn of_lesson(
    conn: &Connection,
    project: &str,
    lesson: Uuid,
) -> Result<Vec<Recurrence>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM lesson_recurrences WHERE project = ?1 AND lesson_id = ?2
         ORDER BY seq"
    ))?;
    let rows = stmt.query_map(params![project, lesson.to_string()], |r| {
        RawRecurrence::read(r)
    })?;
    rows.map(decode).collect()
}

/// [`crate::store::recurrences::all`] on SQLite.
pub(crate) fn all(conn: &Connection, project: &str) -> Result<Vec<Recurrence>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM lesson_recurrences WHERE project = ?1 ORDER BY seq"
    ))?;
    let rows = stmt.query_map([project], |r| RawRecurrence::read(r))?;
    rows.map(decode).collect()
}

/// [`crate::store::recurrences::get`] on SQLite.
pub(crate) fn get(
    conn: &Connection,
    project: &str,
    id: Uuid,
) -> Result<Option<Recurrence>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM lesson_recurrences WHERE project = ?1 AND id = ?2"
    ))?
    .query_row(params![project, id.to_string()], |r| RawRecurrence::read(r))
    .optional()?
    .map(recurrence_from_raw)
    .transpose()
}

/// [`crate::store::recurrences::counts`] on SQLite.
pub(crate) fn counts(conn: &Connection, project: &str) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT lesson_id, count(*) FROM lesson_recurrences WHERE project = ?1
         GROUP BY lesson_id",
    )?;
    let rows = stmt.query_map([project], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`crate::store::recurrences::count_of`] on SQLite.
pub(crate) fn count_of(conn: &Connection, project: &str, lesson: Uuid) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM lesson_recurrences WHERE project = ?1 AND lesson_id = ?2",
        )?
        .query_row(params![project, lesson.to_string()], |r| r.get(0))?)
}

/// [`crate::store::recurrences::delete`] on SQLite.
pub(crate) fn delete(conn: &Connection, project: &str, id: Uuid) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached("DELETE FROM lesson_recurrences WHERE project = ?1 AND id = ?2")?
        .execute(params![project, id.to_string()])?;
    Ok(n == 1)
}

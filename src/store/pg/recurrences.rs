//! PostgreSQL twin of `store/sqlite/recurrences.rs`.

use uuid::Uuid;

use super::{Pg, get};
use crate::store::rows::recurrences::{RawRecurrence, Recurrence, recurrence_from_raw};
use crate::store::{StoreError, to_us};

/// PostgreSQL twin of [`crate::store::recurrences::insert`].
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn insert(pg: &Pg, project: &str, r: &Recurrence) -> Result<bool, StoreError> {
    let n = pg.execute(
        "INSERT INTO lesson_recurrences (project, id, lesson_id, task_id, strategy_description,
             rca_summary, failure_type, source_agent, match_type, score, recorded_us)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (id) DO NOTHING",
        &[
            &project,
            &r.id.to_string(),
            &r.lesson_id.to_string(),
            &r.task_id,
            &r.strategy_description,
            &r.rca_summary,
            &r.failure_type.as_str(),
            &r.source_agent,
            &r.match_type.as_str(),
            &r.score,
            &to_us(r.recorded_at),
        ],
    )?;
    Ok(n == 1)
}

/// PostgreSQL twin of [`crate::store::recurrences::of_lesson`].
///
/// # Errors
/// As [`insert`], or [`StoreError::Corrupt`] for an unreadable row.
pub fn of_lesson(pg: &Pg, project: &str, lesson: Uuid) -> Result<Vec<Recurrence>, StoreError> {
    let rows = pg.query(
        "SELECT id, lesson_id, task_id, strategy_description, rca_summary, failure_type,
                source_agent, match_type, score, recorded_us
         FROM lesson_recurrences WHERE project = $1 AND lesson_id = $2 ORDER BY seq",
        &[&project, &lesson.to_string()],
    )?;
    rows.iter()
        .map(|r| recurrence_from_raw(RawRecurrence::read(r)?))
        .collect()
}

/// PostgreSQL twin of [`crate::store::recurrences::all`].
///
/// # Errors
/// As [`of_lesson`].
pub fn all(pg: &Pg, project: &str) -> Result<Vec<Recurrence>, StoreError> {
    let rows = pg.query(
        "SELECT id, lesson_id, task_id, strategy_description, rca_summary, failure_type,
                source_agent, match_type, score, recorded_us
         FROM lesson_recurrences WHERE project = $1 ORDER BY seq",
        &[&project],
    )?;
    rows.iter()
        .map(|r| recurrence_from_raw(RawRecurrence::read(r)?))
        .collect()
}

/// PostgreSQL twin of [`crate::store::recurrences::get`].
///
/// # Errors
/// As [`of_lesson`].
pub fn get_one(pg: &Pg, project: &str, id: Uuid) -> Result<Option<Recurrence>, StoreError> {
    let row = pg.query_opt(
        "SELECT id, lesson_id, task_id, strategy_description, rca_summary, failure_type,
                source_agent, match_type, score, recorded_us
         FROM lesson_recurrences WHERE project = $1 AND id = $2",
        &[&project, &id.to_string()],
    )?;
    row.map(|r| recurrence_from_raw(RawRecurrence::read(&r)?))
        .transpose()
}

/// PostgreSQL twin of [`crate::store::recurrences::counts`].
///
/// # Errors
/// As [`insert`].
pub fn counts(pg: &Pg, project: &str) -> Result<Vec<(String, i64)>, StoreError> {
    let rows = pg.query(
        "SELECT lesson_id, count(*) FROM lesson_recurrences WHERE project = $1
         GROUP BY lesson_id",
        &[&project],
    )?;
    rows.iter().map(|r| Ok((get(r, 0)?, get(r, 1)?))).collect()
}

/// PostgreSQL twin of [`crate::store::recurrences::count_of`].
///
/// # Errors
/// As [`insert`].
pub fn count_of(pg: &Pg, project: &str, lesson: Uuid) -> Result<i64, StoreError> {
    let row = pg.query_one(
        "SELECT count(*) FROM lesson_recurrences WHERE project = $1 AND lesson_id = $2",
        &[&project, &lesson.to_string()],
    )?;
    get(&row, 0)
}

/// PostgreSQL twin of [`crate::store::recurrences::delete`].
///
/// # Errors
/// As [`insert`].
pub fn delete(pg: &Pg, project: &str, id: Uuid) -> Result<bool, StoreError> {
    let n = pg.execute(
        "DELETE FROM lesson_recurrences WHERE project = $1 AND id = $2",
        &[&project, &id.to_string()],
    )?;
    Ok(n == 1)
}

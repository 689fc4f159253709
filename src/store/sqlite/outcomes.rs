//! The SQLite side of [`crate::store::outcomes`]: its SQL and migration.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use uuid::Uuid;

use crate::service::outcomes::Source;
use crate::store::rows::outcomes::{
    CHECK_COLUMNS, CheckPrediction, ClosedBy, SourceTemperature, check_prediction,
    source_temperature,
};
use crate::store::{StoreError, to_us};

/// Migration 19: blacklist checks kept as predictions until their outcome is known, and each
/// project's fitted temperature per calibration source (issue 31).
pub const MIGRATION: &str = "
CREATE TABLE check_predictions (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    project      TEXT    NOT NULL,
    task_id      TEXT    NOT NULL,
    lesson_id    TEXT    NOT NULL,
    strategy     TEXT    NOT NULL,
    raw          REAL    NOT NULL,
    probability  REAL    NOT NULL,
    blacklisted  INTEGER NOT NULL,
    created_us   INTEGER NOT NULL,
    closed_us    INTEGER,
    actual       INTEGER,
    closed_by    TEXT
) STRICT;
CREATE INDEX check_predictions_open ON check_predictions (project, strategy, created_us);
CREATE INDEX check_predictions_closed ON check_predictions (project, closed_us);
CREATE TABLE outcome_temperatures (
    project      TEXT    NOT NULL,
    source       TEXT    NOT NULL,
    temperature  REAL    NOT NULL,
    outcomes     INTEGER NOT NULL,
    fitted_us    INTEGER NOT NULL,
    PRIMARY KEY (project, source)
) STRICT;
";

/// Migration 20: the index of closed checks also orders open ones by age, so that dropping
/// the project's expired open checks at each check reads only those (before, every open check
/// of the project was read: a check took 0.3 ms longer per thousand open checks).
pub const MIGRATION_EXPIRY_INDEX: &str = "
DROP INDEX check_predictions_closed;
CREATE INDEX check_predictions_closed ON check_predictions (project, closed_us, created_us);
";

fn read(r: &Row<'_>) -> rusqlite::Result<Result<CheckPrediction, StoreError>> {
    let id: String = r.get(0)?;
    let lesson: String = r.get(2)?;
    Ok(check_prediction(
        &id,
        r.get(1)?,
        &lesson,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        (r.get(8)?, r.get(9)?, r.get(10)?),
    ))
}

/// [`crate::store::outcomes::insert_check`] on SQLite.
pub(crate) fn insert_check(
    conn: &Connection,
    project: &str,
    p: &CheckPrediction,
    expired_before: DateTime<Utc>,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "DELETE FROM check_predictions
         WHERE project = ?1 AND closed_us IS NULL AND created_us < ?2",
    )?
    .execute(params![project, to_us(expired_before)])?;
    conn.prepare_cached(&format!(
        "INSERT INTO check_predictions (project, {CHECK_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, NULL, NULL)"
    ))?
    .execute(params![
        project,
        p.id.to_string(),
        p.task_id,
        p.lesson_id.to_string(),
        p.strategy,
        p.raw,
        p.probability,
        p.blacklisted,
        to_us(p.created_at),
    ])?;
    Ok(())
}

/// [`crate::store::outcomes::get_check`] on SQLite.
pub(crate) fn get_check(
    conn: &Connection,
    project: &str,
    id: Uuid,
) -> Result<Option<CheckPrediction>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {CHECK_COLUMNS} FROM check_predictions WHERE project = ?1 AND id = ?2"
    ))?
    .query_row(params![project, id.to_string()], read)
    .optional()?
    .transpose()
}

/// [`crate::store::outcomes::close_check`] on SQLite: sets the outcome of an open prediction;
/// whether a row changed.
pub(crate) fn close_check(
    conn: &Connection,
    project: &str,
    id: Uuid,
    actual: bool,
    by: ClosedBy,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let by: &str = by.into();
    let n = conn
        .prepare_cached(
            "UPDATE check_predictions SET closed_us = ?3, actual = ?4, closed_by = ?5
             WHERE project = ?1 AND id = ?2 AND closed_us IS NULL",
        )?
        .execute(params![project, id.to_string(), to_us(now), actual, by])?;
    Ok(n == 1)
}

/// [`crate::store::outcomes::close_unblocked`] on SQLite.
pub(crate) fn close_unblocked(
    conn: &Connection,
    project: &str,
    strategy: &str,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let by: &str = ClosedBy::Lesson.into();
    Ok(conn
        .prepare_cached(
            "UPDATE check_predictions SET closed_us = ?4, actual = 1, closed_by = ?5
             WHERE project = ?1 AND strategy = ?2 AND created_us >= ?3 AND closed_us IS NULL
               AND blacklisted = 0",
        )?
        .execute(params![project, strategy, to_us(since), to_us(now), by])?)
}

/// [`crate::store::outcomes::closed_checks`] on SQLite: the newest `limit` closed at or after
/// `since`, oldest first.
pub(crate) fn closed_checks(
    conn: &Connection,
    project: &str,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<CheckPrediction>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT * FROM (SELECT {CHECK_COLUMNS}, seq FROM check_predictions
                        WHERE project = ?1 AND closed_us >= ?2
                        ORDER BY closed_us DESC, seq DESC LIMIT ?3)
         ORDER BY closed_us, seq"
    ))?;
    let rows = stmt.query_map(params![project, to_us(since), limit as i64], read)?;
    rows.map(|r| r?).collect()
}

/// [`crate::store::outcomes::temperature`] on SQLite.
pub(crate) fn temperature(
    conn: &Connection,
    project: &str,
    source: Source,
) -> Result<Option<SourceTemperature>, StoreError> {
    conn.prepare_cached(
        "SELECT source, temperature, outcomes, fitted_us FROM outcome_temperatures
         WHERE project = ?1 AND source = ?2",
    )?
    .query_row(params![project, source.as_str()], |r| {
        let s: String = r.get(0)?;
        Ok(source_temperature(&s, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .optional()?
    .transpose()
}

/// [`crate::store::outcomes::set_temperature`] on SQLite.
pub(crate) fn set_temperature(
    conn: &Connection,
    project: &str,
    t: &SourceTemperature,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO outcome_temperatures (project, source, temperature, outcomes, fitted_us)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (project, source) DO UPDATE SET temperature = excluded.temperature,
             outcomes = excluded.outcomes, fitted_us = excluded.fitted_us",
    )?
    .execute(params![
        project,
        t.source.as_str(),
        t.temperature,
        t.outcomes as i64,
        to_us(t.fitted_at),
    ])?;
    Ok(())
}

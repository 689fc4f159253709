//! PostgreSQL twin of `store/sqlite/outcomes.rs`.

use chrono::{DateTime, Utc};
use postgres::Row;
use uuid::Uuid;

use super::{Pg, get};
use crate::service::outcomes::Source;
use crate::store::rows::outcomes::{
    CheckPrediction, ClosedBy, SourceTemperature, check_prediction, source_temperature,
};
use crate::store::{StoreError, to_us};

fn read(r: &Row) -> Result<CheckPrediction, StoreError> {
    check_prediction(
        &get::<String>(r, 0)?,
        get(r, 1)?,
        &get::<String>(r, 2)?,
        get(r, 3)?,
        get(r, 4)?,
        get(r, 5)?,
        get(r, 6)?,
        get(r, 7)?,
        (get(r, 8)?, get(r, 9)?, get(r, 10)?),
    )
}

/// PostgreSQL twin of [`crate::store::outcomes::insert_check`].
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn insert_check(
    pg: &Pg,
    project: &str,
    p: &CheckPrediction,
    expired_before: DateTime<Utc>,
) -> Result<(), StoreError> {
    pg.execute(
        "DELETE FROM check_predictions
         WHERE project = $1 AND closed_us IS NULL AND created_us < $2",
        &[&project, &to_us(expired_before)],
    )?;
    pg.execute(
        "INSERT INTO check_predictions (project, id, task_id, lesson_id, strategy, raw,
                                        probability, blacklisted, created_us)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &project,
            &p.id.to_string(),
            &p.task_id,
            &p.lesson_id.to_string(),
            &p.strategy,
            &p.raw,
            &p.probability,
            &p.blacklisted,
            &to_us(p.created_at),
        ],
    )?;
    Ok(())
}

/// PostgreSQL twin of [`crate::store::outcomes::get_check`].
///
/// # Errors
/// As [`insert_check`], or [`StoreError::Corrupt`] for an unreadable row.
pub fn get_check(pg: &Pg, project: &str, id: Uuid) -> Result<Option<CheckPrediction>, StoreError> {
    pg.query_opt(
        "SELECT id, task_id, lesson_id, strategy, raw, probability, blacklisted, created_us,
                closed_us, actual, closed_by
         FROM check_predictions WHERE project = $1 AND id = $2",
        &[&project, &id.to_string()],
    )?
    .map(|r| read(&r))
    .transpose()
}

/// PostgreSQL twin of [`crate::store::outcomes::close_check`].
///
/// # Errors
/// As [`insert_check`].
pub fn close_check(
    pg: &Pg,
    project: &str,
    id: Uuid,
    actual: bool,
    by: ClosedBy,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let by: &str = by.into();
    let n = pg.execute(
        "UPDATE check_predictions SET closed_us = $3, actual = $4, closed_by = $5
         WHERE project = $1 AND id = $2 AND closed_us IS NULL",
        &[&project, &id.to_string(), &to_us(now), &actual, &by],
    )?;
    Ok(n == 1)
}

/// PostgreSQL twin of [`crate::store::outcomes::close_unblocked`].
///
/// # Errors
/// As [`insert_check`].
pub fn close_unblocked(
    pg: &Pg,
    project: &str,
    strategy: &str,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let by: &str = ClosedBy::Lesson.into();
    let n = pg.execute(
        "UPDATE check_predictions SET closed_us = $4, actual = TRUE, closed_by = $5
         WHERE project = $1 AND strategy = $2 AND created_us >= $3 AND closed_us IS NULL
           AND NOT blacklisted",
        &[&project, &strategy, &to_us(since), &to_us(now), &by],
    )?;
    Ok(n as usize)
}

/// PostgreSQL twin of [`crate::store::outcomes::closed_checks`].
///
/// # Errors
/// As [`get_check`].
pub fn closed_checks(
    pg: &Pg,
    project: &str,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<CheckPrediction>, StoreError> {
    let rows = pg.query(
        "SELECT id, task_id, lesson_id, strategy, raw, probability, blacklisted, created_us,
                closed_us, actual, closed_by
         FROM (SELECT * FROM check_predictions
               WHERE project = $1 AND closed_us >= $2
               ORDER BY closed_us DESC, seq DESC LIMIT $3) AS newest
         ORDER BY closed_us, seq",
        &[&project, &to_us(since), &(limit as i64)],
    )?;
    rows.iter().map(read).collect()
}

/// PostgreSQL twin of [`crate::store::outcomes::temperature`].
///
/// # Errors
/// As [`get_check`].
pub fn temperature(
    pg: &Pg,
    project: &str,
    source: Source,
) -> Result<Option<SourceTemperature>, StoreError> {
    pg.query_opt(
        "SELECT source, temperature, outcomes, fitted_us FROM outcome_temperatures
         WHERE project = $1 AND source = $2",
        &[&project, &source.as_str()],
    )?
    .map(|r| {
        source_temperature(
            &get::<String>(&r, 0)?,
            get(&r, 1)?,
            get(&r, 2)?,
            get(&r, 3)?,
        )
    })
    .transpose()
}

/// PostgreSQL twin of [`crate::store::outcomes::set_temperature`].
///
/// # Errors
/// As [`insert_check`].
pub fn set_temperature(pg: &Pg, project: &str, t: &SourceTemperature) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO outcome_temperatures (project, source, temperature, outcomes, fitted_us)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (project, source) DO UPDATE SET temperature = EXCLUDED.temperature,
             outcomes = EXCLUDED.outcomes, fitted_us = EXCLUDED.fitted_us",
        &[
            &project,
            &t.source.as_str(),
            &t.temperature,
            &(t.outcomes as i64),
            &to_us(t.fitted_at),
        ],
    )?;
    Ok(())
}

//! Outcomes of the memory's own judgements (issue 31): blacklist checks kept as predictions
//! until `record_prediction` (or a lesson logged for the same strategy) closes them, and each
//! project's fitted temperature per calibration source. The beliefs source needs no table of
//! its own: a resolved belief is its outcome ([`crate::service::outcomes::belief_outcomes`]).

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::{Backend, pg, sqlite};
use crate::service::outcomes::{Outcome, Source, TEMPERATURE_RANGE};
pub use crate::store::rows::outcomes::{CheckPrediction, Closed, ClosedBy, SourceTemperature};
use crate::store::{Db, StoreError};

/// An open check prediction can be closed this many days after the check; older open ones are
/// dropped when the project's next check is recorded.
pub const CHECK_PREDICTION_TTL_DAYS: i64 = 30;

/// A lesson logged for a strategy closes the checks of that strategy the project made this
/// many days before and did not block ([`close_unblocked`]).
pub const AUTO_CLOSE_DAYS: i64 = 7;

/// At most this many closed checks (the newest) are a project's lessons outcomes: the size of
/// an embedder's observation window ([`crate::service::atc::state::WINDOW_CAPACITY`]).
pub const OUTCOME_WINDOW: usize = crate::service::atc::state::WINDOW_CAPACITY;

/// Store check prediction `p` in this project, and drop the project's open predictions older
/// than [`CHECK_PREDICTION_TTL_DAYS`]. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn insert_check(db: &Db<'_>, p: &CheckPrediction) -> Result<(), StoreError> {
    let expired = p.created_at - Duration::days(CHECK_PREDICTION_TTL_DAYS);
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::outcomes::insert_check(conn, db.project(), p, expired),
        Backend::Postgres(pg) => pg::outcomes::insert_check(pg, db.project(), p, expired),
    }
}

/// Check prediction `id` of this project, open or closed.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get_check(db: &Db<'_>, id: Uuid) -> Result<Option<CheckPrediction>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::outcomes::get_check(conn, db.project(), id),
        Backend::Postgres(pg) => pg::outcomes::get_check(pg, db.project(), id),
    }
}

/// Why a check prediction could not be closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseCheckError {
    /// No check of this project gave this id.
    Unknown,
    /// It was closed before.
    AlreadyClosed(ClosedBy),
    /// It is older than [`CHECK_PREDICTION_TTL_DAYS`].
    Expired,
}

/// Close check prediction `id` with `actual` (true: the strategy repeated the failed approach),
/// at `now`, by `by`. A prediction closes once. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn close_check(
    db: &Db<'_>,
    id: Uuid,
    actual: bool,
    by: ClosedBy,
    now: DateTime<Utc>,
) -> Result<Result<CheckPrediction, CloseCheckError>, StoreError> {
    let Some(mut p) = get_check(db, id)? else {
        return Ok(Err(CloseCheckError::Unknown));
    };
    if let Some(c) = p.closed {
        return Ok(Err(CloseCheckError::AlreadyClosed(c.by)));
    }
    if p.created_at < now - Duration::days(CHECK_PREDICTION_TTL_DAYS) {
        return Ok(Err(CloseCheckError::Expired));
    }
    let changed = match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::outcomes::close_check(conn, db.project(), id, actual, by, now)?
        }
        Backend::Postgres(pg) => pg::outcomes::close_check(pg, db.project(), id, actual, by, now)?,
    };
    if !changed {
        return Ok(Err(CloseCheckError::AlreadyClosed(by)));
    }
    p.closed = Some(Closed {
        at: now,
        actual,
        by,
    });
    Ok(Ok(p))
}

/// A lesson was logged at `now` for normalised strategy `strategy`: close with 1 (it was the
/// failed approach) every open check of this project for that strategy made in the
/// [`AUTO_CLOSE_DAYS`] before that did not block it. Returns how many. Call inside a write
/// transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn close_unblocked(
    db: &Db<'_>,
    strategy: &str,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let since = now - Duration::days(AUTO_CLOSE_DAYS);
    match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::outcomes::close_unblocked(conn, db.project(), strategy, since, now)
        }
        Backend::Postgres(pg) => {
            pg::outcomes::close_unblocked(pg, db.project(), strategy, since, now)
        }
    }
}

/// The newest [`OUTCOME_WINDOW`] checks of this project closed at or after `since` (all when
/// `None`), oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn closed_checks(
    db: &Db<'_>,
    since: Option<DateTime<Utc>>,
) -> Result<Vec<CheckPrediction>, StoreError> {
    let since = since.unwrap_or(DateTime::UNIX_EPOCH);
    match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::outcomes::closed_checks(conn, db.project(), since, OUTCOME_WINDOW)
        }
        Backend::Postgres(pg) => {
            pg::outcomes::closed_checks(pg, db.project(), since, OUTCOME_WINDOW)
        }
    }
}

/// The outcomes of source `source` of this project resolved at or after `since` (all when
/// `None`), oldest first: closed checks for [`Source::Lessons`], resolved beliefs for
/// [`Source::Beliefs`]; [`Source::Observations`] live in the ATC windows, not here (empty).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn outcomes(
    db: &Db<'_>,
    source: Source,
    since: Option<DateTime<Utc>>,
) -> Result<Vec<Outcome>, StoreError> {
    Ok(match source {
        Source::Observations => Vec::new(),
        // Filtered by time in the query.
        Source::Lessons => closed_checks(db, since)?
            .iter()
            .filter_map(CheckPrediction::outcome)
            .collect(),
        Source::Beliefs => {
            let mut out =
                crate::service::outcomes::belief_outcomes(&crate::store::beliefs::all(db)?);
            out.retain(|o| since.is_none_or(|s| o.at >= s));
            out
        }
    })
}

/// Source `source`'s temperature in this project: as last fitted, else the default (1).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn temperature(db: &Db<'_>, source: Source) -> Result<f64, StoreError> {
    Ok(stored_temperature(db, source)?.map_or(TEMPERATURE_RANGE.default, |t| t.temperature))
}

/// Source `source`'s last fitted temperature in this project, if any.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn stored_temperature(
    db: &Db<'_>,
    source: Source,
) -> Result<Option<SourceTemperature>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::outcomes::temperature(conn, db.project(), source),
        Backend::Postgres(pg) => pg::outcomes::temperature(pg, db.project(), source),
    }
}

/// Store a fitted temperature for this project. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn set_temperature(db: &Db<'_>, t: &SourceTemperature) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::outcomes::set_temperature(conn, db.project(), t),
        Backend::Postgres(pg) => pg::outcomes::set_temperature(pg, db.project(), t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;

    fn check(n: u128, strategy: &str, blacklisted: bool, at: DateTime<Utc>) -> CheckPrediction {
        CheckPrediction {
            id: Uuid::from_u128(n),
            task_id: "task".into(),
            lesson_id: Uuid::from_u128(1000 + n),
            strategy: strategy.into(),
            raw: 0.25,
            probability: 0.3,
            blacklisted,
            created_at: at,
            closed: None,
        }
    }

    fn checks_close_once_and_by_lesson(store: &Store) {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        store
            .write(|db| -> Result<(), StoreError> {
                let a = db.scoped("a");
                insert_check(&a, &check(1, "retry the call", false, now))?;
                insert_check(&a, &check(2, "retry the call", true, now))?;
                insert_check(&a, &check(3, "pin the version", false, now))?;
                insert_check(&db.scoped("b"), &check(4, "retry the call", false, now))?;
                let old = now - Duration::days(AUTO_CLOSE_DAYS + 1);
                insert_check(&a, &check(5, "retry the call", false, old))?;
                // Another project does not see a's predictions.
                assert!(get_check(&db.scoped("b"), Uuid::from_u128(1))?.is_none());
                let later = now + Duration::seconds(5);
                let closed = close_check(&a, Uuid::from_u128(3), false, ClosedBy::Agent, later)?;
                assert!(!closed.unwrap().outcome().unwrap().correct);
                assert_eq!(
                    close_check(&a, Uuid::from_u128(3), true, ClosedBy::Agent, later)?,
                    Err(CloseCheckError::AlreadyClosed(ClosedBy::Agent))
                );
                assert_eq!(
                    close_check(&a, Uuid::from_u128(99), true, ClosedBy::Agent, later)?,
                    Err(CloseCheckError::Unknown)
                );
                // Only the recent, unblocked, open check of the strategy, in this project.
                let latest = later + Duration::seconds(1);
                assert_eq!(close_unblocked(&a, "retry the call", latest)?, 1);
                assert_eq!(
                    get_check(&a, Uuid::from_u128(1))?
                        .unwrap()
                        .closed
                        .unwrap()
                        .by,
                    ClosedBy::Lesson
                );
                assert!(get_check(&a, Uuid::from_u128(2))?.unwrap().closed.is_none());
                let o = outcomes(&a, Source::Lessons, None)?;
                assert_eq!(o.len(), 2);
                assert_eq!((o[0].correct, o[1].correct), (false, true), "oldest first");
                assert_eq!(o[0].stated, 0.3);
                assert!(
                    outcomes(&a, Source::Lessons, Some(latest + Duration::seconds(1)))?.is_empty()
                );
                // Expiry: a check older than the TTL cannot be closed, and goes at the next insert.
                let expired = now - Duration::days(CHECK_PREDICTION_TTL_DAYS + 1);
                insert_check(&a, &check(6, "x", false, expired))?;
                assert_eq!(
                    close_check(&a, Uuid::from_u128(6), true, ClosedBy::Agent, now)?,
                    Err(CloseCheckError::Expired)
                );
                insert_check(&a, &check(7, "y", false, now))?;
                assert!(get_check(&a, Uuid::from_u128(6))?.is_none());
                // Temperatures.
                assert_eq!(temperature(&a, Source::Lessons)?, 1.0);
                let t = SourceTemperature {
                    source: Source::Lessons,
                    temperature: 1.75,
                    outcomes: 40,
                    fitted_at: now,
                };
                set_temperature(&a, &t)?;
                set_temperature(
                    &a,
                    &SourceTemperature {
                        temperature: 2.5,
                        ..t
                    },
                )?;
                assert_eq!(
                    stored_temperature(&a, Source::Lessons)?
                        .unwrap()
                        .temperature,
                    2.5
                );
                assert_eq!(temperature(&a, Source::Beliefs)?, 1.0);
                assert_eq!(temperature(&db.scoped("b"), Source::Lessons)?, 1.0);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        checks_close_once_and_by_lesson,
        outcomes_on_sqlite,
        outcomes_on_postgres
    );
}

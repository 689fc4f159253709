//! The recurrences of a lesson: reworded repeats of an active lesson of the task that
//! `log_lesson_learned` merged into it ([`crate::ops::lessons::log`]) instead of storing a
//! second lesson, each kept whole as evidence; the console shows them with the lesson and can
//! split one back into a lesson of its own ([`crate::ops::lessons::split`]). Rows carry their
//! project and move with their lesson ([`crate::store::projects::move_rows`]).

use std::collections::HashMap;

use uuid::Uuid;

use super::{Backend, lessons, pg, sqlite};
use crate::service::lessons::{MatchType, NewLesson, TaskKey};
pub use crate::store::rows::recurrences::Recurrence;
use crate::store::rows::recurrences::counts_from_raw;
use crate::store::{Db, StoreError};

/// Store `r` in this project; `false` when a recurrence with its id is already stored (nothing
/// is written: an import run again). Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn insert(db: &Db<'_>, r: &Recurrence) -> Result<bool, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::insert(conn, db.project(), r),
        Backend::Postgres(pg) => pg::recurrences::insert(pg, db.project(), r),
    }
}

/// The recurrences of lesson `lesson` in this project, oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn of_lesson(db: &Db<'_>, lesson: Uuid) -> Result<Vec<Recurrence>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::of_lesson(conn, db.project(), lesson),
        Backend::Postgres(pg) => pg::recurrences::of_lesson(pg, db.project(), lesson),
    }
}

/// Every recurrence of this project, oldest first (`export`).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn all(db: &Db<'_>) -> Result<Vec<Recurrence>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::all(conn, db.project()),
        Backend::Postgres(pg) => pg::recurrences::all(pg, db.project()),
    }
}

/// The recurrence `id` of this project, if any.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get(db: &Db<'_>, id: Uuid) -> Result<Option<Recurrence>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::get(conn, db.project(), id),
        Backend::Postgres(pg) => pg::recurrences::get_one(pg, db.project(), id),
    }
}

/// How many recurrences each lesson of this project has; lessons without any are absent.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn counts(db: &Db<'_>) -> Result<HashMap<Uuid, u64>, StoreError> {
    counts_from_raw(match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::counts(conn, db.project())?,
        Backend::Postgres(pg) => pg::recurrences::counts(pg, db.project())?,
    })
}

/// How many recurrences lesson `lesson` of this project has.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn count_of(db: &Db<'_>, lesson: Uuid) -> Result<u64, StoreError> {
    let n = match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::count_of(conn, db.project(), lesson)?,
        Backend::Postgres(pg) => pg::recurrences::count_of(pg, db.project(), lesson)?,
    };
    Ok(n.max(0) as u64)
}

/// Remove recurrence `id` of this project; `false` when there is none. Call inside a write
/// transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn delete(db: &Db<'_>, id: Uuid) -> Result<bool, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::recurrences::delete(conn, db.project(), id),
        Backend::Postgres(pg) => pg::recurrences::delete(pg, db.project(), id),
    }
}

/// The match type a recurrence may have, by its wire name (`contains`, `contained_in`,
/// `similar`); `None` for any other name, `exact` included.
pub fn match_type_named(name: &str) -> Option<MatchType> {
    crate::store::rows::recurrences::match_type(name)
}

/// What [`import`] did with one recurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Import {
    /// Stored as a recurrence of its lesson (or of the lesson here with its lesson's task and
    /// normalised strategy).
    Added,
    /// Already present (the same id, as a recurrence or as a lesson): left as it is.
    Skipped,
    /// Its lesson is neither here nor in the export: stored as a lesson of its own (active,
    /// under the recurrence's id and time), so that nothing exported is lost.
    AsLesson,
}

/// Store a recurrence exported from another database, keeping its id and time, unless it is
/// already present. It joins lesson `r.lesson_id` when this project has it, else the lesson
/// here of `exported_lesson` (the task key and normalised strategy of its lesson in the
/// export), else it becomes a lesson of its own ([`Import::AsLesson`]). Call inside a write
/// transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure; [`StoreError::Corrupt`] when the recurrence is not a valid
/// lesson.
pub fn import(
    db: &Db<'_>,
    r: &Recurrence,
    exported_lesson: Option<(&TaskKey, &str)>,
) -> Result<Import, StoreError> {
    if get(db, r.id)?.is_some() {
        return Ok(Import::Skipped);
    }
    let here = match lessons::get(db, r.lesson_id)? {
        Some(l) => Some(l.id),
        None => match exported_lesson {
            Some((key, normalised)) => {
                lessons::find_by_strategy(db, key, normalised)?.map(|l| l.id)
            }
            None => None,
        },
    };
    if let Some(lesson_id) = here {
        let joined = Recurrence {
            lesson_id,
            ..r.clone()
        };
        return Ok(if insert(db, &joined)? {
            Import::Added
        } else {
            Import::Skipped
        });
    }
    let own = NewLesson::new(
        &r.task_id,
        &r.strategy_description,
        &r.rca_summary,
        r.failure_type,
        &r.source_agent,
    )
    .map_err(|e| StoreError::Corrupt(format!("recurrence {}: {e}", r.id)))?;
    Ok(
        match lessons::import(db, &own, r.id, true, r.recorded_at)? {
            lessons::Import::Added => Import::AsLesson,
            lessons::Import::Skipped => Import::Skipped,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lessons::FailureType;
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;
    use chrono::DateTime;

    fn recurrence(n: u128, lesson: u128, us: i64) -> Recurrence {
        Recurrence {
            id: Uuid::from_u128(n),
            lesson_id: Uuid::from_u128(lesson),
            task_id: "T-1".into(),
            strategy_description: format!("mock the whole database layer #{n}"),
            rca_summary: "mocks hid the migration bug".into(),
            failure_type: FailureType::LogicError,
            source_agent: "agent".into(),
            match_type: MatchType::Similar,
            score: 0.8125,
            recorded_at: DateTime::from_timestamp_micros(us).unwrap(),
        }
    }

    fn recurrences_are_kept_per_lesson_and_project(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                let a = db.scoped("a");
                let b = db.scoped("b");
                assert!(insert(&a, &recurrence(1, 10, 100))?);
                assert!(insert(&a, &recurrence(2, 10, 200))?);
                assert!(insert(&a, &recurrence(3, 11, 300))?);
                assert!(insert(&b, &recurrence(4, 10, 400))?);
                assert!(
                    !insert(&a, &recurrence(1, 10, 100))?,
                    "an id is stored once"
                );
                let of = of_lesson(&a, Uuid::from_u128(10))?;
                assert_eq!(of, [recurrence(1, 10, 100), recurrence(2, 10, 200)]);
                assert_eq!(count_of(&a, Uuid::from_u128(10))?, 2);
                assert_eq!(count_of(&b, Uuid::from_u128(10))?, 1, "b's own");
                let counts = counts(&a)?;
                assert_eq!(counts.len(), 2);
                assert_eq!(counts[&Uuid::from_u128(11)], 1);
                assert_eq!(all(&a)?.len(), 3);
                assert_eq!(get(&a, Uuid::from_u128(3))?, Some(recurrence(3, 11, 300)));
                assert_eq!(get(&b, Uuid::from_u128(3))?, None, "another project's");
                assert!(!delete(&b, Uuid::from_u128(3))?);
                assert!(delete(&a, Uuid::from_u128(3))?);
                assert_eq!(get(&a, Uuid::from_u128(3))?, None);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        recurrences_are_kept_per_lesson_and_project,
        recurrences_on_sqlite,
        recurrences_on_postgres
    );
}

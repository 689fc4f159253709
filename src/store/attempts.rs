//! Failed attempts the Claude Code plugin recorded (issue 29): evidence beside the lessons of a
//! project. A lesson logged in the project links the attempts of the hours before it that no
//! lesson claimed yet ([`link_recent`]); the console shows them with the lesson.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Backend, pg, sqlite};
pub use crate::store::rows::attempts::{Attempt, MAX_ERROR_CHARS, MAX_SUBJECT_CHARS};
use crate::store::{Db, StoreError};

/// A lesson claims the unclaimed attempts of its project recorded this many hours before it
/// ([`link_recent`]): long enough for a debugging session, short enough that yesterday's
/// failures of another task stay unclaimed.
pub const LINK_WINDOW_HOURS: i64 = 2;

/// Store `a` in this project. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn insert(db: &Db<'_>, a: &Attempt) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::attempts::insert(conn, db.project(), a),
        Backend::Postgres(pg) => pg::attempts::insert(pg, db.project(), a),
    }
}

/// Link to lesson `lesson` every attempt of this project recorded at or after `since` that no
/// lesson claimed yet; returns how many. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn link_recent(db: &Db<'_>, lesson: Uuid, since: DateTime<Utc>) -> Result<usize, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::attempts::link_recent(conn, db.project(), lesson, since),
        Backend::Postgres(pg) => pg::attempts::link_recent(pg, db.project(), lesson, since),
    }
}

/// The attempts linked to `lesson`, oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn of_lesson(db: &Db<'_>, lesson: Uuid) -> Result<Vec<Attempt>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::attempts::of_lesson(conn, db.project(), lesson),
        Backend::Postgres(pg) => pg::attempts::of_lesson(pg, db.project(), lesson),
    }
}

/// How many attempts of `session` no lesson claimed and no end-of-turn reminder named yet; then
/// marks them reminded (so a session is reminded once per failure, never in a loop). Call
/// inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn take_unreminded(
    db: &Db<'_>,
    session: &str,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::attempts::take_unreminded(conn, db.project(), session, now)
        }
        Backend::Postgres(pg) => pg::attempts::take_unreminded(pg, db.project(), session, now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;

    fn attempt(n: u128, session: &str, us: i64) -> Attempt {
        Attempt {
            id: Uuid::from_u128(n),
            session_id: session.into(),
            tool: "Bash".into(),
            subject: format!("npm test #{n}"),
            exit_status: Some(1),
            error_head: "1 failing".into(),
            created_at: DateTime::from_timestamp_micros(us).unwrap(),
            lesson_id: None,
        }
    }

    fn attempts_are_linked_and_reminded_once(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                let a = db.scoped("a");
                insert(&a, &attempt(1, "s1", 10))?;
                insert(&a, &attempt(2, "s1", 20))?;
                insert(&a, &attempt(3, "s2", 30))?;
                insert(&db.scoped("b"), &attempt(4, "s1", 25))?;
                assert_eq!(take_unreminded(&a, "s1", chrono::Utc::now())?, 2);
                assert_eq!(take_unreminded(&a, "s1", chrono::Utc::now())?, 0, "once");
                let lesson = Uuid::from_u128(99);
                let since = DateTime::from_timestamp_micros(15).unwrap();
                assert_eq!(link_recent(&a, lesson, since)?, 2, "2 and 3, not 1 nor b's");
                let linked = of_lesson(&a, lesson)?;
                let ids: Vec<u128> = linked.iter().map(|x| x.id.as_u128()).collect();
                assert_eq!(ids, [2, 3]);
                assert_eq!(linked[0].lesson_id, Some(lesson));
                assert_eq!(linked[0].error_head, "1 failing");
                assert!(of_lesson(&db.scoped("b"), lesson)?.is_empty());
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        attempts_are_linked_and_reminded_once,
        attempts_on_sqlite,
        attempts_on_postgres
    );
}

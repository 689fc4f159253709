//! Directive history: human and operator interventions (manual fixes, feedback, overrides,
//! escalations), written by every family and listed by `list_directive_history`.

use super::{Backend, pg, sqlite};
use crate::service::lessons::TaskKey;
pub use crate::store::rows::directives::{Directive, InterventionType, SERVER_ACTOR};
use crate::store::{Db, StoreError};

/// Append an entry (with its task's [`TaskKey`]).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert(db: &Db<'_>, d: &Directive) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::directives::insert(conn, db.project(), d),
        Backend::Postgres(pg) => pg::directives::insert(pg, db.project(), d),
    }
}

/// Append an entry exported from another database unless one with its id is present;
/// returns whether it was appended.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn import(db: &Db<'_>, d: &Directive) -> Result<bool, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::directives::import(conn, db.project(), d),
        Backend::Postgres(pg) => pg::directives::import(pg, db.project(), d),
    }
}

/// One page of entries (of task `key` when given), newest first (ties: latest inserted first),
/// and the total number matching.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn list(
    db: &Db<'_>,
    key: Option<&TaskKey>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Directive>, usize), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::directives::list(conn, db.project(), key, limit, offset),
        Backend::Postgres(pg) => pg::directives::list(pg, db.project(), key, limit, offset),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;
    use chrono::{DateTime, Utc};
    use uuid::Uuid;

    fn at(us: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(us).unwrap()
    }

    fn entry(task: Option<&str>, kind: InterventionType, n: u128, us: i64) -> Directive {
        Directive {
            id: Uuid::from_u128(n),
            task_id: task.map(str::to_owned),
            intervention_type: kind,
            description: format!("entry {n}: Ünïcödé 'quoted'"),
            actor: "USER".into(),
            created_at: at(us),
        }
    }

    fn pages_newest_first_by_folded_task(store: &Store) {
        let entries = [
            entry(Some("TASK-1"), InterventionType::ManualFix, 1, 10),
            entry(None, InterventionType::Escalation, 2, 30),
            entry(Some(" task-1 "), InterventionType::Feedback, 3, 20),
            entry(Some("ＴＡＳＫ－１"), InterventionType::Override, 4, 20),
            entry(Some("other"), InterventionType::Feedback, 5, 40),
        ];
        store
            .write(|db| -> Result<(), StoreError> {
                for e in &entries {
                    insert(db, e)?;
                }
                Ok(())
            })
            .unwrap();
        store
            .write(|db| -> Result<(), StoreError> {
                let ids = |page: &[Directive]| -> Vec<u128> {
                    page.iter().map(|d| d.id.as_u128()).collect()
                };
                let (all, total) = list(db, None, 10, 0)?;
                // Newest first; 3 and 4 share a time: the later inserted first.
                assert_eq!((ids(&all), total), (vec![5, 2, 4, 3, 1], 5));
                assert_eq!(all[2], entries[3], "round trip");
                let key = TaskKey::of("task-1");
                let (page, total) = list(db, Some(&key), 2, 1)?;
                assert_eq!((ids(&page), total), (vec![3, 1], 3));
                let (page, total) = list(db, Some(&key), usize::MAX, usize::MAX)?;
                assert_eq!((page.len(), total), (0, 3));
                assert_eq!(list(db, Some(&TaskKey::of("none")), 5, 0)?, (vec![], 0));
                // Import skips an id present, appends one absent.
                assert!(!import(db, &entries[0])?);
                assert!(import(
                    db,
                    &entry(Some("Task-1"), InterventionType::Feedback, 6, 50)
                )?);
                assert_eq!(list(db, Some(&key), 1, 0)?.0[0].id, Uuid::from_u128(6));
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        pages_newest_first_by_folded_task,
        directives_on_sqlite,
        directives_on_postgres
    );
}

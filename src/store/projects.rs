//! Projects as the operator sees them: the projects the database holds rows of, with counts,
//! and moving every row of one project to another (`console projects`). The only store
//! functions that look past [`crate::store::Db::project`].

use super::{Backend, pg, sqlite};
pub use crate::store::rows::projects::{Moved, ProjectCounts};
use crate::store::{Db, StoreError};

/// Every project with a lesson, directive or belief, by name, with its counts.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn list(db: &Db<'_>) -> Result<Vec<ProjectCounts>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::projects::list(conn),
        Backend::Postgres(pg) => pg::projects::list(pg),
    }
}

/// Move the lessons (with their vectors and recurrences), directives and beliefs (with their
/// history) of project `from` to project `to`, except the lessons and beliefs `to` already
/// holds (same task and normalised strategy; same normalised target), which stay in `from`
/// with their recurrences and are counted. Moved lessons with a vector get a new vector revision, so that a running server
/// of `to` adds them to its related-lessons index. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn move_rows(db: &Db<'_>, from: &str, to: &str) -> Result<Moved, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::projects::move_rows(conn, from, to),
        Backend::Postgres(pg) => pg::projects::move_rows(pg, from, to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lessons::{NewLesson, TaskKey, search_terms};
    use crate::store::pg::testing::both_backends;
    use crate::store::{Store, lessons, outcomes, recurrences};
    use uuid::Uuid;

    fn log(db: &Db<'_>, task: &str, strategy: &str) -> Result<Uuid, StoreError> {
        let l = NewLesson::validate(task, strategy, "why", "UNKNOWN", "agent").expect("valid");
        let terms = search_terms(&l.strategy_description, &l.rca_summary);
        match lessons::insert(db, &l, Uuid::new_v4(), &terms, chrono::Utc::now())? {
            lessons::Inserted::New(l) | lessons::Inserted::Exists(l) => Ok(l.id),
        }
    }

    /// A recurrence of lesson `lesson` in `db`'s project.
    fn recur(db: &Db<'_>, lesson: Uuid, strategy: &str) -> Result<(), StoreError> {
        let r = recurrences::Recurrence {
            id: Uuid::new_v4(),
            lesson_id: lesson,
            task_id: "t1".into(),
            strategy_description: strategy.into(),
            rca_summary: "why again".into(),
            failure_type: crate::service::lessons::FailureType::Unknown,
            source_agent: "agent".into(),
            match_type: crate::service::lessons::MatchType::Contains,
            score: 0.5,
            recorded_at: chrono::Utc::now(),
        };
        assert!(recurrences::insert(db, &r)?);
        Ok(())
    }

    fn projects_are_listed_and_moved(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                let a = db.scoped("github.com/acme/a");
                let b = db.scoped("github.com/acme/b");
                let left = log(&a, "t1", "mock the database")?;
                let moving = log(&a, "t1", "raise the timeout")?;
                log(&b, "t1", "mock the database")?;
                recur(&a, left, "mock the whole database")?;
                recur(&a, moving, "raise the timeout again")?;
                log(&b, "t2", "pin serde to 1.0.100")?;
                let checked = |n: u128, lesson: Uuid| outcomes::CheckPrediction {
                    id: Uuid::from_u128(n),
                    task_id: "t1".into(),
                    lesson_id: lesson,
                    strategy: "raise the deadline".into(),
                    raw: 0.4,
                    probability: 0.4,
                    blacklisted: false,
                    created_at: chrono::Utc::now(),
                    closed: None,
                };
                outcomes::insert_check(&a, &checked(1, left))?;
                outcomes::insert_check(&a, &checked(2, moving))?;
                // The same task and strategy live once per project.
                assert_eq!(lessons::list(&a, None, true)?.len(), 2);
                assert_eq!(lessons::list(&b, None, true)?.len(), 2);
                assert_eq!(
                    lessons::active_strategies(&a, &TaskKey::of("t1"))?.len(),
                    2,
                    "another project's lesson of the same task is not read"
                );
                let names: Vec<_> = list(db)?.into_iter().map(|p| p.name).collect();
                assert_eq!(names, ["github.com/acme/a", "github.com/acme/b"]);
                let moved = move_rows(db, "github.com/acme/a", "github.com/acme/b")?;
                assert_eq!((moved.lessons, moved.lessons_left), (1, 1), "{moved:?}");
                assert_eq!(moved.recurrences, 1, "only the moved lesson's");
                assert_eq!(moved.checks, 1, "the check about the moved lesson");
                assert!(outcomes::get_check(&b, Uuid::from_u128(2))?.is_some());
                assert!(outcomes::get_check(&a, Uuid::from_u128(1))?.is_some());
                assert_eq!(
                    recurrences::count_of(&b, moving)?,
                    1,
                    "it went with its lesson"
                );
                assert_eq!(recurrences::count_of(&a, moving)?, 0);
                assert_eq!(
                    recurrences::count_of(&a, left)?,
                    1,
                    "the lesson left keeps its own"
                );
                assert_eq!(lessons::list(&b, None, true)?.len(), 3);
                let counts = list(db)?;
                assert_eq!(counts[0].name, "github.com/acme/a");
                assert_eq!((counts[0].lessons, counts[1].lessons), (1, 3));
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        projects_are_listed_and_moved,
        projects_on_sqlite,
        projects_on_postgres
    );
}

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
    use crate::store::{Store, lessons};
    use uuid::Uuid;

    fn log(db: &Db<'_>, task: &str, strategy: &str) -> Result<(), StoreError> {
        let l = NewLesson::validate(task, strategy, "why", "UNKNOWN", "agent").expect("valid");
        let terms = search_terms(&l.strategy_description, &l.rca_summary);
        lessons::insert(db, &l, Uuid::new_v4(), &terms, chrono::Utc::now())?;
        Ok(())
    }

    fn projects_are_listed_and_moved(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                let a = db.scoped("github.com/acme/a");
                let b = db.scoped("github.com/acme/b");
                log(&a, "t1", "mock the database")?;
                log(&a, "t1", "raise the timeout")?;
                log(&b, "t1", "mock the database")?;
                log(&b, "t2", "pin serde to 1.0.100")?;
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

//! PostgreSQL twin of `store/sqlite/projects.rs`.

use super::{Pg, get};
use crate::store::StoreError;
use crate::store::rows::projects::{Moved, ProjectCounts};

/// PostgreSQL twin of [`crate::store::projects::list`].
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn list(pg: &Pg) -> Result<Vec<ProjectCounts>, StoreError> {
    let rows = pg.query(
        "SELECT project, sum(l)::bigint, sum(a)::bigint, sum(d)::bigint, sum(b)::bigint FROM (
             SELECT project, count(*) AS l, count(*) FILTER (WHERE is_active) AS a, 0 AS d,
                    0 AS b
             FROM lessons GROUP BY project
             UNION ALL SELECT project, 0, 0, count(*), 0 FROM directive_history GROUP BY project
             UNION ALL SELECT project, 0, 0, 0, count(*) FROM beliefs GROUP BY project) AS c
         GROUP BY project ORDER BY project COLLATE \"C\"",
        &[],
    )?;
    let n = |r: &postgres::Row, i: usize| -> Result<u64, StoreError> {
        Ok(get::<i64>(r, i)?.max(0) as u64)
    };
    rows.iter()
        .map(|r| {
            Ok(ProjectCounts {
                name: get(r, 0)?,
                lessons: n(r, 1)?,
                active_lessons: n(r, 2)?,
                directives: n(r, 3)?,
                beliefs: n(r, 4)?,
            })
        })
        .collect()
}

/// PostgreSQL twin of [`crate::store::projects::move_rows`].
///
/// # Errors
/// As [`list`].
pub fn move_rows(pg: &Pg, from: &str, to: &str) -> Result<Moved, StoreError> {
    let lessons = pg.execute(
        "UPDATE lessons SET project = $2,
             embedding_rev = CASE WHEN embedding_rev IS NULL THEN NULL
                 ELSE (SELECT coalesce(max(embedding_rev), 0) FROM lessons
                       WHERE embedding_rev IS NOT NULL) + seq END
         WHERE project = $1 AND NOT EXISTS (
             SELECT 1 FROM lessons t WHERE t.project = $2 AND t.task_key = lessons.task_key
                 AND t.normalised_strategy = lessons.normalised_strategy)",
        &[&from, &to],
    )?;
    // A recurrence goes where its lesson went (the lessons left behind keep theirs).
    let recurrences = pg.execute(
        "UPDATE lesson_recurrences SET project = $2 WHERE project = $1 AND lesson_id IN (
             SELECT id FROM lessons WHERE project = $2)",
        &[&from, &to],
    )?;
    // A check's prediction goes where the lesson it is about went (its outcome calibrates the
    // project that holds the lesson).
    let checks = pg.execute(
        "UPDATE check_predictions SET project = $2 WHERE project = $1 AND lesson_id IN (
             SELECT id FROM lessons WHERE project = $2)",
        &[&from, &to],
    )?;
    let directives = pg.execute(
        "UPDATE directive_history SET project = $2 WHERE project = $1",
        &[&from, &to],
    )?;
    let beliefs = pg.execute(
        "UPDATE beliefs SET project = $2 WHERE project = $1 AND normalised_target NOT IN (
             SELECT normalised_target FROM beliefs WHERE project = $2)",
        &[&from, &to],
    )?;
    let left = |sql: &'static str| -> Result<u64, StoreError> {
        Ok(get::<i64>(&pg.query_one(sql, &[&from])?, 0)?.max(0) as u64)
    };
    Ok(Moved {
        lessons,
        lessons_left: left("SELECT count(*) FROM lessons WHERE project = $1")?,
        recurrences,
        checks,
        directives,
        beliefs,
        beliefs_left: left("SELECT count(*) FROM beliefs WHERE project = $1")?,
    })
}

//! The SQLite side of [`crate::store::projects`].

use rusqlite::{Connection, params};

use crate::store::StoreError;
use crate::store::rows::projects::{Moved, ProjectCounts};

/// [`crate::store::projects::list`] on SQLite.
pub(crate) fn list(conn: &Connection) -> Result<Vec<ProjectCounts>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT project, sum(l), sum(a), sum(d), sum(b) FROM (
             SELECT project, count(*) AS l, total(is_active) AS a, 0 AS d, 0 AS b
             FROM lessons GROUP BY project
             UNION ALL SELECT project, 0, 0, count(*), 0 FROM directive_history GROUP BY project
             UNION ALL SELECT project, 0, 0, 0, count(*) FROM beliefs GROUP BY project)
         GROUP BY project ORDER BY project",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(ProjectCounts {
            name: r.get(0)?,
            lessons: r.get::<_, i64>(1)?.max(0) as u64,
            active_lessons: r.get::<_, f64>(2)?.max(0.0) as u64,
            directives: r.get::<_, i64>(3)?.max(0) as u64,
            beliefs: r.get::<_, i64>(4)?.max(0) as u64,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`crate::store::projects::move_rows`] on SQLite.
pub(crate) fn move_rows(conn: &Connection, from: &str, to: &str) -> Result<Moved, StoreError> {
    let lessons = conn.execute(
        "UPDATE lessons SET project = ?2,
             embedding_rev = CASE WHEN embedding_rev IS NULL THEN NULL
                 ELSE (SELECT coalesce(max(embedding_rev), 0) FROM lessons
                       WHERE embedding_rev IS NOT NULL) + seq END
         WHERE project = ?1 AND NOT EXISTS (
             SELECT 1 FROM lessons t WHERE t.project = ?2 AND t.task_key = lessons.task_key
                 AND t.normalised_strategy = lessons.normalised_strategy)",
        params![from, to],
    )?;
    // A recurrence goes where its lesson went (the lessons left behind keep theirs).
    let recurrences = conn.execute(
        "UPDATE lesson_recurrences SET project = ?2 WHERE project = ?1 AND lesson_id IN (
             SELECT id FROM lessons WHERE project = ?2)",
        params![from, to],
    )?;
    // A check's prediction goes where the lesson it is about went (its outcome calibrates the
    // project that holds the lesson).
    let checks = conn.execute(
        "UPDATE check_predictions SET project = ?2 WHERE project = ?1 AND lesson_id IN (
             SELECT id FROM lessons WHERE project = ?2)",
        params![from, to],
    )?;
    let directives = conn.execute(
        "UPDATE directive_history SET project = ?2 WHERE project = ?1",
        params![from, to],
    )?;
    let beliefs = conn.execute(
        "UPDATE beliefs SET project = ?2 WHERE project = ?1 AND normalised_target NOT IN (
             SELECT normalised_target FROM beliefs WHERE project = ?2)",
        params![from, to],
    )?;
    let left = |table: &str| -> Result<u64, StoreError> {
        let n: i64 = conn.query_row(
            &format!("SELECT count(*) FROM {table} WHERE project = ?1"),
            [from],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as u64)
    };
    Ok(Moved {
        lessons: lessons as u64,
        lessons_left: left("lessons")?,
        recurrences: recurrences as u64,
        checks: checks as u64,
        directives: directives as u64,
        beliefs: beliefs as u64,
        beliefs_left: left("beliefs")?,
    })
}

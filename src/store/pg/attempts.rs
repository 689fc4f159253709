//! PostgreSQL twin of `store/sqlite/attempts.rs`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Pg, get};
use crate::store::rows::attempts::Attempt;
use crate::store::{StoreError, from_us, to_us};

fn uuid(what: &str, s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("{what} {s:?}: {e}")))
}

/// PostgreSQL twin of [`crate::store::attempts::insert`].
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn insert(pg: &Pg, project: &str, a: &Attempt) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO attempts (project, id, session_id, tool, subject, exit_status, error_head,
                               created_us, lesson_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &project,
            &a.id.to_string(),
            &a.session_id,
            &a.tool,
            &a.subject,
            &a.exit_status,
            &a.error_head,
            &to_us(a.created_at),
            &a.lesson_id.map(|l| l.to_string()),
        ],
    )?;
    Ok(())
}

/// PostgreSQL twin of [`crate::store::attempts::link_recent`].
///
/// # Errors
/// As [`insert`].
pub fn link_recent(
    pg: &Pg,
    project: &str,
    lesson: Uuid,
    since: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let n = pg.execute(
        "UPDATE attempts SET lesson_id = $2
         WHERE project = $1 AND lesson_id IS NULL AND created_us >= $3",
        &[&project, &lesson.to_string(), &to_us(since)],
    )?;
    Ok(n as usize)
}

/// PostgreSQL twin of [`crate::store::attempts::of_lesson`].
///
/// # Errors
/// As [`insert`], or [`StoreError::Corrupt`] for an unreadable row.
pub fn of_lesson(pg: &Pg, project: &str, lesson: Uuid) -> Result<Vec<Attempt>, StoreError> {
    let rows = pg.query(
        "SELECT id, session_id, tool, subject, exit_status, error_head, created_us, lesson_id
         FROM attempts WHERE project = $1 AND lesson_id = $2 ORDER BY seq",
        &[&project, &lesson.to_string()],
    )?;
    rows.iter()
        .map(|r| {
            let linked: Option<String> = get(r, 7)?;
            Ok(Attempt {
                id: uuid("attempt id", &get::<String>(r, 0)?)?,
                session_id: get(r, 1)?,
                tool: get(r, 2)?,
                subject: get(r, 3)?,
                exit_status: get(r, 4)?,
                error_head: get(r, 5)?,
                created_at: from_us(get(r, 6)?)?,
                lesson_id: linked.map(|l| uuid("attempt lesson_id", &l)).transpose()?,
            })
        })
        .collect()
}

/// PostgreSQL twin of [`crate::store::attempts::take_unreminded`].
///
/// # Errors
/// As [`insert`].
pub fn take_unreminded(
    pg: &Pg,
    project: &str,
    session: &str,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let n = pg.execute(
        "UPDATE attempts SET reminded_us = $3
         WHERE project = $1 AND session_id = $2 AND lesson_id IS NULL AND reminded_us IS NULL",
        &[&project, &session, &to_us(now)],
    )?;
    Ok(n as usize)
}

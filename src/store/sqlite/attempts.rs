//! The SQLite side of [`crate::store::attempts`]: its SQL and migration.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};
use uuid::Uuid;

use crate::store::rows::attempts::Attempt;
use crate::store::{StoreError, from_us, to_us};

/// Migration 17: the failed attempts the Claude Code plugin records, per project; a lesson
/// links them (`lesson_id`), the end-of-turn reminder marks them (`reminded_us`).
pub const MIGRATION: &str = "
CREATE TABLE attempts (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    project      TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    exit_status  INTEGER,
    error_head   TEXT    NOT NULL,
    created_us   INTEGER NOT NULL,
    lesson_id    TEXT,
    reminded_us  INTEGER
) STRICT;
CREATE INDEX attempts_open ON attempts (project, lesson_id, created_us);
CREATE INDEX attempts_session ON attempts (project, session_id);
";

const COLUMNS: &str =
    "id, session_id, tool, subject, exit_status, error_head, created_us, lesson_id";

fn attempt(r: &Row<'_>) -> rusqlite::Result<(String, Attempt, i64, Option<String>)> {
    let id: String = r.get(0)?;
    Ok((
        id,
        Attempt {
            id: Uuid::nil(),
            session_id: r.get(1)?,
            tool: r.get(2)?,
            subject: r.get(3)?,
            exit_status: r.get(4)?,
            error_head: r.get(5)?,
            created_at: DateTime::UNIX_EPOCH,
            lesson_id: None,
        },
        r.get(6)?,
        r.get(7)?,
    ))
}

fn uuid(what: &str, s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("{what} {s:?}: {e}")))
}

/// [`crate::store::attempts::insert`] on SQLite.
pub(crate) fn insert(conn: &Connection, project: &str, a: &Attempt) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "INSERT INTO attempts (project, {COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))?
    .execute(params![
        project,
        a.id.to_string(),
        a.session_id,
        a.tool,
        a.subject,
        a.exit_status,
        a.error_head,
        to_us(a.created_at),
        a.lesson_id.map(|l| l.to_string()),
    ])?;
    Ok(())
}

/// [`crate::store::attempts::link_recent`] on SQLite.
pub(crate) fn link_recent(
    conn: &Connection,
    project: &str,
    lesson: Uuid,
    since: DateTime<Utc>,
) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE attempts SET lesson_id = ?2
             WHERE project = ?1 AND lesson_id IS NULL AND created_us >= ?3",
        )?
        .execute(params![project, lesson.to_string(), to_us(since)])?)
}

/// [`crate::store::attempts::of_lesson`] on SQLite.
pub(crate) fn of_lesson(
    conn: &Connection,
    project: &str,
    lesson: Uuid,
) -> Result<Vec<Attempt>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM attempts WHERE project = ?1 AND lesson_id = ?2 ORDER BY seq"
    ))?;
    let rows = stmt.query_map(params![project, lesson.to_string()], attempt)?;
    rows.map(|r| {
        let (id, mut a, us, linked) = r?;
        a.id = uuid("attempt id", &id)?;
        a.created_at = from_us(us)?;
        a.lesson_id = linked.map(|l| uuid("attempt lesson_id", &l)).transpose()?;
        Ok(a)
    })
    .collect()
}

/// [`crate::store::attempts::take_unreminded`] on SQLite.
pub(crate) fn take_unreminded(
    conn: &Connection,
    project: &str,
    session: &str,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE attempts SET reminded_us = ?3
             WHERE project = ?1 AND session_id = ?2 AND lesson_id IS NULL
               AND reminded_us IS NULL",
        )?
        .execute(params![project, session, to_us(now)])?)
}

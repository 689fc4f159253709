//! The SQLite side of [`crate::store::directives`]: its SQL, the family's migrations and their
//! data steps.

use rusqlite::{Connection, params};

use crate::service::lessons::TaskKey;
use crate::store::rows::directives::{Directive, DirectiveRow, directive_from_row, task_key};
use crate::store::{StoreError, to_us};

/// Schema of the directive history (migration 2).
pub const MIGRATION: &str = "
CREATE TABLE directive_history (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    task_id            TEXT,
    intervention_type  TEXT    NOT NULL
        CHECK (intervention_type IN ('MANUAL_FIX', 'FEEDBACK', 'OVERRIDE', 'ESCALATION')),
    description        TEXT    NOT NULL,
    actor              TEXT    NOT NULL,
    created_us         INTEGER NOT NULL
) STRICT;
CREATE INDEX directive_history_task ON directive_history (task_id, created_us);
CREATE INDEX directive_history_created ON directive_history (created_us);
";

/// Migration 11: entries are filtered by folded task id ([`TaskKey`]), like lessons. Each entry
/// keeps its task's key in `task_key` (null without a task); [`fill_task_keys`] fills it for the
/// entries stored before and replaces the index on `task_id` by one on `task_key`.
pub const MIGRATION_TASK_KEY: &str = "
ALTER TABLE directive_history ADD COLUMN task_key TEXT;
";

/// Migration 16: every directive belongs to a project ([`crate::project`]); entries stored
/// before get [`crate::project::UNASSIGNED`]. The per-task index leads with the project, and
/// `directive_history_project` serves a project's history, newest first.
pub const MIGRATION_PROJECT: &str = "
ALTER TABLE directive_history ADD COLUMN project TEXT NOT NULL DEFAULT '';
DROP INDEX directive_history_task_key;
CREATE INDEX directive_history_task_key ON directive_history (project, task_key, created_us);
CREATE INDEX directive_history_project ON directive_history (project, created_us);
";

/// Data step of migration 11: the [`TaskKey`] of every stored entry's task, then the index
/// `directive_history_task_key (task_key, created_us)` in place of `directive_history_task`.
///
/// # Errors
/// SQL failure.
pub fn fill_task_keys(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT seq, task_id FROM directive_history WHERE task_id IS NOT NULL")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut update = conn.prepare("UPDATE directive_history SET task_key = ?2 WHERE seq = ?1")?;
    for (seq, task_id) in rows {
        update.execute(params![seq, TaskKey::of(&task_id).as_str()])?;
    }
    conn.execute_batch(
        "CREATE INDEX directive_history_task_key ON directive_history (task_key, created_us);
         DROP INDEX directive_history_task;",
    )
}

/// [`crate::store::directives::insert`] on SQLite.
pub(crate) fn insert(conn: &Connection, project: &str, d: &Directive) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO directive_history (id, task_id, intervention_type, description, actor,
                                            created_us, task_key, project)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        d.id.to_string(),
        d.task_id,
        d.intervention_type.as_str(),
        d.description,
        d.actor,
        to_us(d.created_at),
        task_key(d),
        project,
    ])?;
    Ok(())
}

/// [`crate::store::directives::import`] on SQLite.
pub(crate) fn import(conn: &Connection, project: &str, d: &Directive) -> Result<bool, StoreError> {
    let present: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM directive_history WHERE id = ?1)")?
        .query_row([d.id.to_string()], |r| r.get(0))?;
    if present {
        return Ok(false);
    }
    insert(conn, project, d)?;
    Ok(true)
}

/// [`crate::store::directives::list`] on SQLite.
pub(crate) fn list(
    conn: &Connection,
    project: &str,
    key: Option<&TaskKey>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Directive>, usize), StoreError> {
    // Only the filter in use appears in the SQL so the (project, task_key, created) index is
    // used for a task's entries, and (project, created) for the project's.
    let filter = if key.is_some() {
        "WHERE project = ? AND task_key = ?"
    } else {
        "WHERE project = ?"
    };
    let mut values: Vec<rusqlite::types::Value> = vec![project.to_owned().into()];
    values.extend(key.map(|k| k.as_str().to_owned().into()));
    let total: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM directive_history {filter}"))?
        .query_row(rusqlite::params_from_iter(values.iter()), |r| r.get(0))?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, task_id, intervention_type, description, actor, created_us
         FROM directive_history {filter}
         ORDER BY created_us DESC, seq DESC LIMIT ? OFFSET ?"
    ))?;
    values.push((limit.min(i64::MAX as usize) as i64).into());
    values.push((offset.min(i64::MAX as usize) as i64).into());
    let rows = stmt.query_map(rusqlite::params_from_iter(values.iter()), |r| {
        Ok(DirectiveRow {
            id: r.get(0)?,
            task_id: r.get(1)?,
            intervention_type: r.get(2)?,
            description: r.get(3)?,
            actor: r.get(4)?,
            created_us: r.get(5)?,
        })
    })?;
    let out = rows
        .map(|row| directive_from_row(row?))
        .collect::<Result<_, StoreError>>()?;
    Ok((out, total as usize))
}

//! PostgreSQL twin of `store/directives.rs`.

use super::{Pg, get};
use crate::service::lessons::TaskKey;
use crate::store::rows::directives::{Directive, DirectiveRow, directive_from_row, task_key};
use crate::store::{StoreError, count, to_us};

/// PostgreSQL twin of [`crate::store::directives::insert`].
///
/// # Errors
/// [`StoreError::Postgres`] (an id already present among them) or
/// [`StoreError::ConnectionLost`].
pub fn insert(pg: &Pg, project: &str, d: &Directive) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO directive_history (id, task_id, intervention_type, description, actor,
                                        created_us, task_key, project)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            &d.id.to_string(),
            &d.task_id,
            &d.intervention_type.as_str(),
            &d.description,
            &d.actor,
            &to_us(d.created_at),
            &task_key(d),
            &project,
        ],
    )?;
    Ok(())
}

/// PostgreSQL twin of [`crate::store::directives::import`].
///
/// # Errors
/// As [`insert`].
pub fn import(pg: &Pg, project: &str, d: &Directive) -> Result<bool, StoreError> {
    let present: bool = get(
        &pg.query_one(
            "SELECT EXISTS (SELECT 1 FROM directive_history WHERE id = $1)",
            &[&d.id.to_string()],
        )?,
        0,
    )?;
    if present {
        return Ok(false);
    }
    insert(pg, project, d)?;
    Ok(true)
}

/// PostgreSQL twin of [`crate::store::directives::list`]: newest first, ties latest inserted
/// first (`seq` grows in commit order: every write holds the write lock).
///
/// # Errors
/// As [`insert`], or [`StoreError::Corrupt`] for an unreadable row.
pub fn list(
    pg: &Pg,
    project: &str,
    key: Option<&TaskKey>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Directive>, usize), StoreError> {
    let limit = limit.min(i64::MAX as usize) as i64;
    let offset = offset.min(i64::MAX as usize) as i64;
    // One statement per filter, so that the (task_key, created_us) index serves a task's.
    let (total, rows) = match key {
        Some(k) => (
            pg.query_one(
                "SELECT count(*) FROM directive_history WHERE project = $2 AND task_key = $1",
                &[&k.as_str(), &project],
            )?,
            pg.query(
                "SELECT id, task_id, intervention_type, description, actor, created_us
                 FROM directive_history WHERE project = $4 AND task_key = $1
                 ORDER BY created_us DESC, seq DESC LIMIT $2 OFFSET $3",
                &[&k.as_str(), &limit, &offset, &project],
            )?,
        ),
        None => (
            pg.query_one(
                "SELECT count(*) FROM directive_history WHERE project = $1",
                &[&project],
            )?,
            pg.query(
                "SELECT id, task_id, intervention_type, description, actor, created_us
                 FROM directive_history WHERE project = $3
                 ORDER BY created_us DESC, seq DESC LIMIT $1 OFFSET $2",
                &[&limit, &offset, &project],
            )?,
        ),
    };
    let total: usize = count("directive count", get(&total, 0)?)?;
    let out = rows
        .iter()
        .map(|r| {
            directive_from_row(DirectiveRow {
                id: get(r, 0)?,
                task_id: get(r, 1)?,
                intervention_type: get(r, 2)?,
                description: get(r, 3)?,
                actor: get(r, 4)?,
                created_us: get(r, 5)?,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((out, total))
}

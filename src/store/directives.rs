//! Directive history: human and operator interventions (manual fixes, feedback, overrides,
//! escalations), written by every family and listed by `list_directive_history`.

use chrono::{DateTime, Utc};
use rusqlite::params;
use uuid::Uuid;

use super::{Db, StoreError, from_us, to_us};
use super::{pg, sqlite_or};
use crate::service::lessons::TaskKey;

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

/// The actor of the entries the server writes itself (its escalations, the merges of a
/// migration), beside `service::lessons::DEFAULT_ACTOR` for a person.
pub const SERVER_ACTOR: &str = "meta-utl-mcp";

/// Migration 11: entries are filtered by folded task id ([`TaskKey`]), like lessons. Each entry
/// keeps its task's key in `task_key` (null without a task); [`fill_task_keys`] fills it for the
/// entries stored before and replaces the index on `task_id` by one on `task_key`.
pub const MIGRATION_TASK_KEY: &str = "
ALTER TABLE directive_history ADD COLUMN task_key TEXT;
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

/// The kinds of intervention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterventionType {
    /// A human fixed something by hand.
    ManualFix,
    /// A human's feedback on the agent's work.
    Feedback,
    /// A human or operator overrode stored state (a lesson lifted, λ reset).
    Override,
    /// The server or an agent escalated to a human.
    Escalation,
}

impl InterventionType {
    /// Every type, in schema order.
    pub const ALL: [InterventionType; 4] = [
        InterventionType::ManualFix,
        InterventionType::Feedback,
        InterventionType::Override,
        InterventionType::Escalation,
    ];

    /// UPPER_SNAKE name as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            InterventionType::ManualFix => "MANUAL_FIX",
            InterventionType::Feedback => "FEEDBACK",
            InterventionType::Override => "OVERRIDE",
            InterventionType::Escalation => "ESCALATION",
        }
    }

    /// Parse an UPPER_SNAKE name (exact).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// One directive-history entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Directive {
    /// Entry id.
    pub id: Uuid,
    /// The task it concerns, as given (compared by its [`TaskKey`]); `None` for the whole server.
    pub task_id: Option<String>,
    /// What kind of intervention.
    pub intervention_type: InterventionType,
    /// What happened, in words.
    pub description: String,
    /// Who intervened; `service::lessons::DEFAULT_ACTOR` ("USER") by default, [`SERVER_ACTOR`]
    /// for the server's own entries.
    pub actor: String,
    /// When (UTC, whole microseconds).
    pub created_at: DateTime<Utc>,
}

impl Directive {
    /// A new entry with a fresh id.
    pub fn new(
        task_id: Option<String>,
        intervention_type: InterventionType,
        description: impl Into<String>,
        actor: impl Into<String>,
        created_at: DateTime<Utc>,
    ) -> Self {
        Directive {
            id: Uuid::new_v4(),
            task_id,
            intervention_type,
            description: description.into(),
            actor: actor.into(),
            created_at,
        }
    }
}

/// Append an entry (with its task's [`TaskKey`]).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert(db: &Db<'_>, d: &Directive) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::directives::insert(pg, d));
    conn.prepare_cached(
        "INSERT INTO directive_history (id, task_id, intervention_type, description, actor,
                                            created_us, task_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        d.id.to_string(),
        d.task_id,
        d.intervention_type.as_str(),
        d.description,
        d.actor,
        to_us(d.created_at),
        task_key(d),
    ])?;
    Ok(())
}

/// Append an entry exported from another database unless one with its id is present;
/// returns whether it was appended.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn import(db: &Db<'_>, d: &Directive) -> Result<bool, StoreError> {
    let conn = sqlite_or!(db, pg => pg::directives::import(pg, d));
    let present: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM directive_history WHERE id = ?1)")?
        .query_row([d.id.to_string()], |r| r.get(0))?;
    if present {
        return Ok(false);
    }
    insert(db, d)?;
    Ok(true)
}

/// A directive row as stored: id, task id, intervention type, description, actor, created
/// time (µs). Both backends decode it with [`directive_from_raw`].
pub(crate) type RawDirective = (String, Option<String>, String, String, String, i64);

/// The entry of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an id that is not a UUID, an unknown intervention type, or a
/// time outside chrono's range.
pub(crate) fn directive_from_raw(raw: RawDirective) -> Result<Directive, StoreError> {
    let (id, task_id, kind, description, actor, created) = raw;
    Ok(Directive {
        id: Uuid::parse_str(&id)
            .map_err(|e| StoreError::Corrupt(format!("directive id {id:?}: {e}")))?,
        task_id,
        intervention_type: InterventionType::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("intervention type {kind:?}")))?,
        description,
        actor,
        created_at: from_us(created)?,
    })
}

/// The stored `task_key` of an entry: its task's [`TaskKey`], `None` without a task.
pub(crate) fn task_key(d: &Directive) -> Option<String> {
    d.task_id
        .as_deref()
        .map(|t| TaskKey::of(t).as_str().to_owned())
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
    let conn = sqlite_or!(db, pg => pg::directives::list(pg, key, limit, offset));
    // Only the filter in use appears in the SQL so the (task_key, created) index is used.
    let filter = if key.is_some() {
        "WHERE task_key = ?"
    } else {
        ""
    };
    let mut values: Vec<rusqlite::types::Value> = key
        .map(|k| k.as_str().to_owned().into())
        .into_iter()
        .collect();
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
        RawDirective::try_from(r)
    })?;
    let out = rows
        .map(|row| directive_from_raw(row?))
        .collect::<Result<_, StoreError>>()?;
    Ok((out, total as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;

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

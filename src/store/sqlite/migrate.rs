//! The SQLite schema's history: numbered migrations keyed by `PRAGMA user_version`, and the
//! step that applies the missing ones at start-up. A new file starts from the snapshot in
//! `create.rs`, which a test holds equal to what these migrations make.

use rusqlite::Connection;

use super::super::{APPLICATION_ID, family_key};
use super::{atc, beliefs, directives, lesson_vectors, lessons, meta, request_keys, vertices};
use crate::service::Family;

/// Schema migrations in order: entry `i` moves the schema from `user_version = i` to `i + 1`.
///
/// Append new entries at the end; never edit an entry that has shipped.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration::sql(meta::MIGRATION),
    Migration::sql(directives::MIGRATION),
    Migration::sql(atc::MIGRATION),
    Migration::sql(beliefs::MIGRATION),
    Migration::sql(lessons::MIGRATION),
    Migration::sql(vertices::MIGRATION),
    Migration {
        sql: meta::MIGRATION_WINDOWS,
        data: Some(meta::split_windows),
    },
    Migration::sql(atc::MIGRATION_DROP_TS_INDEX),
    Migration {
        sql: lessons::MIGRATION_SPANS,
        data: Some(lessons::fill_strategy_spans),
    },
    Migration {
        sql: lessons::MIGRATION_TASK_KEY,
        data: Some(lessons::fill_task_keys),
    },
    Migration {
        sql: directives::MIGRATION_TASK_KEY,
        data: Some(directives::fill_task_keys),
    },
    Migration::sql(lesson_vectors::MIGRATION_VECTORS),
    Migration::sql(request_keys::MIGRATION),
];

/// One schema step: SQL, then optionally a data step in Rust (for conversions SQL cannot
/// express), both inside the migration transaction.
pub(crate) struct Migration {
    pub(crate) sql: &'static str,
    data: Option<fn(&Connection) -> rusqlite::Result<()>>,
}

impl Migration {
    const fn sql(sql: &'static str) -> Self {
        Migration { sql, data: None }
    }
}

/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Bring `conn` to [`SCHEMA_VERSION`]: every migration it lacks, the `family_version` rows,
/// and the [`APPLICATION_ID`] mark, in one `BEGIN IMMEDIATE` transaction.
///
/// # Errors
/// SQLite's error; the transaction is then rolled back.
pub(crate) fn migrate(conn: &Connection) -> Result<(), rusqlite::Error> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for (i, m) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
            conn.execute_batch(m.sql)?;
            if let Some(data) = m.data {
                data(conn)?;
            }
            conn.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS family_version (
                 family  TEXT PRIMARY KEY,
                 version INTEGER NOT NULL
             ) STRICT;",
        )?;
        for f in Family::ALL {
            conn.execute(
                "INSERT OR IGNORE INTO family_version (family, version) VALUES (?1, 0)",
                [family_key(f)],
            )?;
        }
        // Mark the file as ours (new files, and ours from before the mark; open::validate
        // refused every other).
        let id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        if id != APPLICATION_ID {
            conn.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

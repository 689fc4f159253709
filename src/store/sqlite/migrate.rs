//! The SQLite schema's history: numbered migrations keyed by `PRAGMA user_version`, and the
//! step that applies the missing ones at start-up. A new file starts from the snapshot in
//! `create.rs`, which a test holds equal to what these migrations make.

use rusqlite::Connection;

use super::super::{APPLICATION_ID, family_key};
use super::{
    atc, attempts, beliefs, delta_sc, directives, lesson_vectors, lessons, meta, outcomes,
    recurrences, request_keys,
};
use crate::service::CachedFamily;

/// Schema migrations in order: entry `i` moves the schema from `user_version = i` to `i + 1`.
///
/// Append new entries at the end; never edit an entry that has shipped.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration::sql(meta::MIGRATION),
    Migration::sql(directives::MIGRATION),
    Migration::sql(atc::MIGRATION),
    Migration::sql(beliefs::MIGRATION),
    Migration::sql(lessons::MIGRATION),
    Migration::sql(delta_sc::MIGRATION),
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
    Migration {
        sql: lessons::MIGRATION_PROJECT,
        data: Some(lessons::fill_task_words),
    },
    Migration::sql(beliefs::MIGRATION_PROJECT),
    Migration::sql(directives::MIGRATION_PROJECT),
    Migration::sql(attempts::MIGRATION),
    Migration::sql(recurrences::MIGRATION),
    Migration::sql(outcomes::MIGRATION),
    Migration::sql(outcomes::MIGRATION_EXPIRY_INDEX),
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
        for f in CachedFamily::ALL {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A database at user_version 13 (before projects) with a lesson, a belief with two
    /// events and a directive: migrations 14-16 keep every row, under the unassigned project,
    /// with the full-text entry still the lesson's, and the foreign key still enforced.
    #[test]
    fn a_database_from_before_projects_keeps_its_rows_unassigned() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA foreign_keys=ON").unwrap();
        for m in &MIGRATIONS[..13] {
            conn.execute_batch(m.sql).unwrap();
            if let Some(data) = m.data {
                data(&conn).unwrap();
            }
        }
        conn.execute_batch(
            "PRAGMA user_version = 13;
             INSERT INTO lessons (seq, id, task_id, strategy_description, normalised_strategy,
                                  rca_summary, failure_type, source_agent, created_us, task_key)
             VALUES (7, 'l1', 'T-1', 'Mock the DB', 'mock the db', 'why', 'UNKNOWN', 'a', 1,
                     't-1');
             INSERT INTO lessons_fts (rowid, terms) VALUES (7, 'mock db why');
             INSERT INTO beliefs (seq, id, normalised_target, target, status, confidence,
                                  entropy, rationale, source_nodes, created_us, updated_us)
             VALUES (3, 'b1', 'cache', 'Cache', 'active', 0.5, 1.0, 'r', '', 1, 2);
             INSERT INTO belief_events (belief_seq, action, input_confidence, status_after,
                                        confidence_after, rationale, at_us)
             VALUES (3, 'assert', 0.5, 'active', 0.5, 'r', 1), (3, 'update', 0.6, 'active',
                     0.6, 'r', 2);
             INSERT INTO directive_history (id, task_id, intervention_type, description, actor,
                                            created_us, task_key)
             VALUES ('d1', 'T-1', 'FEEDBACK', 'note', 'USER', 1, 't-1');",
        )
        .unwrap();
        migrate(&conn).unwrap();
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let projects: Vec<(String, i64)> = conn
            .prepare(
                "SELECT project, count(*) FROM (SELECT project FROM lessons
                 UNION ALL SELECT project FROM beliefs
                 UNION ALL SELECT project FROM directive_history) GROUP BY project",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(projects, [(crate::project::UNASSIGNED.to_owned(), 3)]);
        let fts: i64 = conn
            .query_row(
                "SELECT l.seq FROM lessons_fts f JOIN lessons l ON l.seq = f.rowid
                 WHERE lessons_fts MATCH 'mock'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(fts, 7);
        let words: String = conn
            .query_row("SELECT task_words FROM lessons WHERE seq = 7", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(words, "t 1", "the data step fills the task's words");
        let events: i64 = conn
            .query_row(
                "SELECT count(*) FROM belief_events WHERE belief_seq = 3",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(events, 2);
        let orphan = conn.execute(
            "INSERT INTO belief_events (belief_seq, action, input_confidence, status_after,
                                        confidence_after, rationale, at_us)
             VALUES (99, 'assert', 0.5, 'active', 0.5, 'r', 3)",
            [],
        );
        assert!(orphan.is_err(), "the events still refer to the beliefs");
        // The same task and strategy may now live once per project.
        conn.execute(
            "INSERT INTO lessons (id, project, task_id, strategy_description,
                                  normalised_strategy, rca_summary, failure_type, source_agent,
                                  created_us, task_key)
             VALUES ('l2', 'github.com/acme/shop', 'T-1', 'Mock the DB', 'mock the db', 'why',
                     'UNKNOWN', 'a', 1, 't-1')",
            [],
        )
        .unwrap();
    }
}

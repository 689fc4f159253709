//! Lessons learned: the lesson table (unique per task and normalised strategy) and its FTS5
//! index for related-lesson search.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Backend, pg, sqlite};
use crate::service::lessons::{Lesson, NewLesson, TaskKey, search_terms};
pub use crate::store::rows::lessons::{
    ActiveStrategy, COMMON_TERM_FRACTION, COMMON_TERM_MAX_DOCS, COMMON_TERM_MIN_DOCS, Import,
    Inserted, RAREST_KEPT, RELATED_CANDIDATES, common_term_cutoff, tokens_from_spans,
};
use crate::store::{Db, StoreError};

/// Runs `f` inside a savepoint: its writes are kept when it returns `Ok` and undone when it
/// returns `Err`, so a handler that turns an error into a structured result (which commits the
/// surrounding transaction) never leaves half its writes behind.
///
/// # Errors
/// `f`'s error, or the store error of creating or releasing the savepoint.
pub fn atomically<T, E: From<StoreError>>(
    db: &Db<'_>,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    db.control("SAVEPOINT lessons_op").map_err(E::from)?;
    match f() {
        Ok(v) => {
            db.control("RELEASE lessons_op").map_err(E::from)?;
            Ok(v)
        }
        Err(e) => {
            let _ = db.control("ROLLBACK TO lessons_op");
            let _ = db.control("RELEASE lessons_op");
            Err(e)
        }
    }
}

/// Stores a lesson unless its task (by [`TaskKey`]) already has one with the same normalised
/// strategy. Call inside a write transaction (`BEGIN IMMEDIATE` serialises concurrent loggers;
/// the unique index is the backstop). `now` is stored in whole microseconds, as the caller
/// passes it (the dispatcher truncates the call's time).
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn insert(
    db: &Db<'_>,
    l: &NewLesson,
    id: Uuid,
    search_terms: &str,
    now: DateTime<Utc>,
) -> Result<Inserted, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::lessons::insert(conn, db.project(), l, id, search_terms, now)
        }
        Backend::Postgres(pg) => pg::lessons::insert(pg, db.project(), l, id, search_terms, now),
    }
}

/// The lesson of task `key` with this normalised strategy, active or not.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn find_by_strategy(
    db: &Db<'_>,
    key: &TaskKey,
    normalised_strategy: &str,
) -> Result<Option<Lesson>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::lessons::find_by_strategy(conn, db.project(), key, normalised_strategy)
        }
        Backend::Postgres(pg) => {
            pg::lessons::find_by_strategy(pg, db.project(), key, normalised_strategy)
        }
    }
}

/// The lesson with this id.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get(db: &Db<'_>, id: Uuid) -> Result<Option<Lesson>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::get(conn, db.project(), id),
        Backend::Postgres(pg) => pg::lessons::get(pg, db.project(), id),
    }
}

/// The normalised strategies of one task's active lessons with their row keys, oldest first
/// (index `lessons_active_by_key`; other tasks' lessons are never read, and no summary text is
/// loaded).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn active_strategies(db: &Db<'_>, key: &TaskKey) -> Result<Vec<ActiveStrategy>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::active_strategies(conn, db.project(), key),
        Backend::Postgres(pg) => pg::lessons::active_strategies(pg, db.project(), key),
    }
}

/// The active strategies of this project's other tasks whose ids have the same words as
/// `key`'s ([`TaskKey::words_key`]; `fix-login-redirect` for "Fix login redirect"), oldest
/// first: one lookup in index `lessons_task_words`. Empty for a key without words.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn same_words_strategies(
    db: &Db<'_>,
    key: &TaskKey,
) -> Result<Vec<ActiveStrategy>, StoreError> {
    if key.words().is_empty() {
        return Ok(Vec::new());
    }
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::same_words_strategies(conn, db.project(), key),
        Backend::Postgres(pg) => pg::lessons::same_words_strategies(pg, db.project(), key),
    }
}

/// The lesson with this row key (from [`active_strategies`]).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get_by_seq(db: &Db<'_>, seq: i64) -> Result<Option<Lesson>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::get_by_seq(conn, db.project(), seq),
        Backend::Postgres(pg) => pg::lessons::get_by_seq(pg, db.project(), seq),
    }
}

/// The lessons of this project with the store sequence numbers `seqs`, by seq (missing ones
/// are absent): one query on PostgreSQL, where each is a round trip (a check with twenty near
/// misses read them one by one in 8 ms).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get_by_seqs(
    db: &Db<'_>,
    seqs: &[i64],
) -> Result<std::collections::HashMap<i64, Lesson>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => {
            let mut out = std::collections::HashMap::with_capacity(seqs.len());
            for &seq in seqs {
                if let Some(l) = sqlite::lessons::get_by_seq(conn, db.project(), seq)? {
                    out.insert(seq, l);
                }
            }
            Ok(out)
        }
        Backend::Postgres(pg) => Ok(pg::lessons::get_by_seqs(pg, db.project(), seqs)?
            .into_iter()
            .collect()),
    }
}

/// Sets a lesson's `is_active`; returns the lesson as it was before, or `None` if there is no
/// such lesson.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn set_active(db: &Db<'_>, id: Uuid, active: bool) -> Result<Option<Lesson>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::set_active(conn, db.project(), id, active),
        Backend::Postgres(pg) => pg::lessons::set_active(pg, db.project(), id, active),
    }
}

/// Every lesson (of task `key` when given; only the active ones unless `include_inactive`),
/// oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn list(
    db: &Db<'_>,
    key: Option<&TaskKey>,
    include_inactive: bool,
) -> Result<Vec<Lesson>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::list(conn, db.project(), key, include_inactive),
        Backend::Postgres(pg) => pg::lessons::list(pg, db.project(), key, include_inactive),
    }
}

/// Store a lesson exported from another database, keeping its id, creation time and
/// `is_active`, unless it is already present (by id, or by task key and normalised strategy):
/// [`insert`] (the same row and search index as `log_lesson_learned`), then [`set_active`]
/// for an inactive one. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn import(
    db: &Db<'_>,
    l: &NewLesson,
    id: Uuid,
    active: bool,
    created: DateTime<Utc>,
) -> Result<Import, StoreError> {
    if get(db, id)?.is_some() {
        return Ok(Import::Skipped);
    }
    let terms = search_terms(&l.strategy_description, &l.rca_summary);
    match insert(db, l, id, &terms, created)? {
        Inserted::Exists(_) => Ok(Import::Skipped),
        Inserted::New(_) => {
            if !active {
                set_active(db, id, false)?;
            }
            Ok(Import::Added)
        }
    }
}

/// Up to `limit` active lessons of tasks other than `key`'s whose search terms share a term
/// with `terms`, best first by FTS5 bm25 (ties: oldest first). Returns each lesson with its
/// bm25 score (lower is more relevant; SQLite's sign convention). Empty `terms` → empty.
///
/// Cost is bounded: terms present in more lessons than [`common_term_cutoff`] allows are
/// dropped (if all are common, the [`RAREST_KEPT`] rarest stay), and only the best 64
/// full-text candidates are joined and filtered, so a check is never a scan of every lesson.
/// A term's document frequency is counted from the full-text index only up to the cutoff
/// (at most 2,001 entries of its posting list; `fts5vocab` would read all of it, about 1 ms
/// per term found in a quarter of 10⁵ lessons); exact counts are read only when every term is
/// common, to choose the rarest. If most of the 64 candidates belong to the task or are
/// inactive, fewer than `limit` lessons come back.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn related(
    db: &Db<'_>,
    key: &TaskKey,
    terms: &[String],
    limit: usize,
) -> Result<Vec<(Lesson, f64)>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lessons::related(conn, db.project(), key, terms, limit),
        Backend::Postgres(pg) => pg::lessons::related(pg, db.project(), key, terms, limit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lessons::text::word_tokens;
    use crate::service::lessons::{normalise_strategy, search_terms};
    use crate::store::pg::testing::both_backends;
    use crate::store::rows::lessons::ranked_terms;
    use crate::store::{DbPath, Store};
    use rusqlite::params;

    fn new_lesson(task: &str, strategy: &str, rca: &str) -> NewLesson {
        NewLesson::validate(task, strategy, rca, "TOOL_MISUSE", "agent").expect("valid")
    }

    fn add(db: &Db<'_>, task: &str, strategy: &str, rca: &str, n: u128) -> Inserted {
        let l = new_lesson(task, strategy, rca);
        let terms = search_terms(strategy, rca);
        let now = DateTime::from_timestamp_micros(1_700_000_000_000_000 + n as i64).unwrap();
        insert(db, &l, Uuid::from_u128(n), &terms, now).expect("insert")
    }

    /// Strategies whose tokens are easy to get wrong: Unicode, punctuation only, control
    /// characters, apostrophes and dotted numbers, emoji sequences.
    const TRICKY: &[&str] = &[
        "Use the Cache",
        "don't retry v1.2, pin it",
        "重写解析器 then deploy 🚀👍🏽 now",
        "fix — … — now",
        "a\u{1f}b\u{0}c",
        "Straße ΟΔΥΣΣΕΥΣ ﬁle",
    ];

    fn stored_token_spans_give_the_tokens_of_the_strategy(store: &Store) {
        // PostgreSQL text cannot hold U+0000 (`pg::lessons` tests that it is refused).
        let tricky: Vec<&str> = TRICKY
            .iter()
            .filter(|s| !(store.is_postgres() && s.contains('\0')))
            .copied()
            .collect();
        store
            .write(|db| -> Result<(), StoreError> {
                for (n, s) in tricky.iter().enumerate() {
                    add(db, "t", s, "why", n as u128 + 1);
                }
                let stored = active_strategies(db, &TaskKey::of("t"))?;
                assert_eq!(stored.len(), tricky.len());
                for (c, s) in stored.iter().zip(&tricky) {
                    let normalised = normalise_strategy(s);
                    assert_eq!(c.tokens()?, word_tokens(&normalised), "{s:?}");
                }
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        stored_token_spans_give_the_tokens_of_the_strategy,
        spans_give_tokens_on_sqlite,
        spans_give_tokens_on_postgres
    );

    #[test]
    fn spans_that_do_not_fit_the_strategy_are_refused() {
        assert!(matches!(
            tokens_from_spans("abc", &[0, 0, 0, 0, 9, 0, 0, 0]),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(
            tokens_from_spans("é", &[1, 0, 0, 0, 2, 0, 0, 0]),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn migration_9_fills_the_spans_of_lessons_stored_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            for m in &crate::store::sqlite::migrate::MIGRATIONS[..8] {
                conn.execute_batch(m.sql).unwrap();
            }
            conn.execute_batch("PRAGMA user_version = 8").unwrap();
            for (n, s) in TRICKY.iter().enumerate() {
                conn.execute(
                    "INSERT INTO lessons (id, task_id, strategy_description, normalised_strategy,
                         rca_summary, failure_type, source_agent, is_active, created_us)
                     VALUES (?1, 't', ?2, ?3, 'why', 'LOGIC_ERROR', 'agent', 1, 0)",
                    params![
                        Uuid::from_u128(n as u128).to_string(),
                        s,
                        normalise_strategy(s)
                    ],
                )
                .unwrap();
            }
        }
        let store = Store::open(&DbPath::File(path)).unwrap();
        let stored = store
            .read(|db| active_strategies(db, &TaskKey::of("t")))
            .unwrap();
        assert_eq!(stored.len(), TRICKY.len());
        for (c, s) in stored.iter().zip(TRICKY) {
            assert_eq!(
                c.tokens().unwrap(),
                word_tokens(&normalise_strategy(s)),
                "{s:?}"
            );
        }
    }

    #[test]
    fn migrations_10_and_11_key_tasks_and_merge_lessons_that_became_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v9.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            for m in &crate::store::sqlite::migrate::MIGRATIONS[..9] {
                conn.execute_batch(m.sql).unwrap();
            }
            conn.execute_batch("PRAGMA user_version = 9").unwrap();
            // (seq, task, strategy, active): 2 duplicates 1, 5 duplicates 4 (which is inactive).
            let lessons = [
                (1, "TASK-42", "use the cache", 1),
                (2, " task-42 ", "use the cache", 1),
                (3, "ＴＡＳＫ－４２", "pin the compiler", 1),
                (4, "T-7", "retry", 0),
                (5, "t-7", "retry", 1),
                (6, "other", "use the cache", 1),
            ];
            for (seq, task, strategy, active) in lessons {
                conn.execute(
                    "INSERT INTO lessons (seq, id, task_id, strategy_description,
                         normalised_strategy, rca_summary, failure_type, source_agent, is_active,
                         created_us)
                     VALUES (?1, ?2, ?3, ?4, ?4, 'why ' || ?1, 'LOGIC_ERROR', 'agent', ?5, 0)",
                    params![
                        seq,
                        Uuid::from_u128(seq as u128).to_string(),
                        task,
                        strategy,
                        active
                    ],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO lessons_fts (rowid, terms) VALUES (?1, ?2)",
                    params![seq, strategy],
                )
                .unwrap();
            }
            for (n, task) in [Some("Task-42"), None, Some("other ")]
                .into_iter()
                .enumerate()
            {
                conn.execute(
                    "INSERT INTO directive_history (id, task_id, intervention_type, description,
                         actor, created_us)
                     VALUES (?1, ?2, 'FEEDBACK', 'd', 'USER', ?3)",
                    params![Uuid::from_u128(100 + n as u128).to_string(), task, n as i64],
                )
                .unwrap();
            }
        }
        let store = Store::open(&DbPath::File(path)).unwrap();
        store
            .read(|db| -> Result<(), StoreError> {
                let rows: Vec<(i64, String, String, i64)> = db
                    .conn()
                    .prepare("SELECT seq, task_id, task_key, is_active FROM lessons ORDER BY seq")?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect::<Result<_, _>>()?;
                let want = [
                    (1, "TASK-42", "task-42", 1),
                    (3, "ＴＡＳＫ－４２", "task-42", 1),
                    // Kept inactive, merged with an active duplicate: active.
                    (4, "T-7", "t-7", 1),
                    (6, "other", "other", 1),
                ];
                let got: Vec<(i64, &str, &str, i64)> = rows
                    .iter()
                    .map(|(s, t, k, a)| (*s, t.as_str(), k.as_str(), *a))
                    .collect();
                assert_eq!(got, want);
                let fts: Vec<i64> = db
                    .conn()
                    .prepare("SELECT rowid FROM lessons_fts ORDER BY rowid")?
                    .query_map([], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                assert_eq!(fts, [1, 3, 4, 6], "merged lessons leave the search index");
                // One merge note per deleted lesson, keeping what it said.
                let notes: Vec<(Option<String>, String, String)> = db
                    .conn()
                    .prepare(
                        "SELECT task_id, description, actor FROM directive_history
                         WHERE intervention_type = 'OVERRIDE' ORDER BY seq",
                    )?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<Result<_, _>>()?;
                assert_eq!(notes.len(), 2);
                assert_eq!(notes[0].0.as_deref(), Some("TASK-42"));
                assert!(
                    notes[0].1.contains(&Uuid::from_u128(2).to_string()),
                    "{}",
                    notes[0].1
                );
                assert!(notes[0].1.contains("why 2"), "{}", notes[0].1);
                assert!(
                    notes[1].1.contains("strategy \"retry\", active)"),
                    "{}",
                    notes[1].1
                );
                assert_eq!(notes[0].2, "meta-utl-mcp");
                let keys: Vec<Option<String>> = db
                    .conn()
                    .prepare("SELECT task_key FROM directive_history ORDER BY seq")?
                    .query_map([], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                let keys: Vec<Option<&str>> = keys.iter().map(Option::as_deref).collect();
                assert_eq!(
                    keys,
                    [
                        Some("task-42"),
                        None,
                        Some("other"),
                        Some("task-42"),
                        Some("t-7")
                    ]
                );
                let indexes: Vec<String> = db
                    .conn()
                    .prepare(
                        "SELECT name FROM sqlite_schema WHERE type = 'index'
                         AND tbl_name IN ('lessons', 'directive_history') AND sql IS NOT NULL
                         ORDER BY name",
                    )?
                    .query_map([], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                assert_eq!(
                    indexes,
                    [
                        "directive_history_created",
                        "directive_history_project",
                        "directive_history_task_key",
                        "lessons_active_by_key",
                        "lessons_embedding_rev",
                        "lessons_project_active",
                        "lessons_project_task_strategy",
                        "lessons_task_words"
                    ]
                );
                Ok(())
            })
            .unwrap();
        // New rows are keyed, and the unique index refuses a duplicate under another spelling
        // even without the check that comes first in `insert`.
        store
            .write(|db| -> Result<(), StoreError> {
                assert!(matches!(
                    add(db, "Ｔ-7", "Retry!", "x", 7),
                    Inserted::Exists(l) if l.id == Uuid::from_u128(4)
                ));
                let dup = db.conn().execute(
                    "INSERT INTO lessons (id, task_id, strategy_description, normalised_strategy,
                         rca_summary, failure_type, source_agent, created_us, task_key)
                     VALUES ('x', 'TASK-42!', 's', 'use the cache', 'r', 'UNKNOWN', 'a', 0,
                             'task-42')",
                    [],
                );
                assert!(dup.is_err());
                Ok(())
            })
            .unwrap();
    }

    fn insert_round_trips_and_duplicates_return_the_existing_lesson(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                let Inserted::New(first) = add(db, "t", "Use the Cache", "why", 1) else {
                    panic!("first insert is new");
                };
                let got = get(db, first.id)?.expect("stored");
                assert_eq!(got, first, "row maps back to the same lesson");
                let Inserted::Exists(existing) = add(db, "t", " use THE cache! ", "other", 2)
                else {
                    panic!("duplicate is detected");
                };
                assert_eq!(existing.id, first.id);
                assert!(matches!(
                    add(db, "u", "use the cache", "x", 3),
                    Inserted::New(_)
                ));
                let strategies = active_strategies(db, &TaskKey::of("t"))?;
                assert_eq!(strategies.len(), 1);
                assert_eq!(
                    strategies[0].normalised,
                    normalise_strategy("Use the Cache")
                );
                // Deactivated lessons are not candidates; set_active reports the old state.
                let before = set_active(db, first.id, false)?.expect("exists");
                assert!(before.is_active);
                assert!(active_strategies(db, &TaskKey::of("t"))?.is_empty());
                assert_eq!(set_active(db, Uuid::from_u128(99), true)?, None);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        insert_round_trips_and_duplicates_return_the_existing_lesson,
        insert_round_trips_on_sqlite,
        insert_round_trips_on_postgres
    );

    #[test]
    fn common_term_cutoff_is_five_percent_between_100_and_2000_lessons() {
        assert_eq!(common_term_cutoff(0), 100.0);
        assert_eq!(common_term_cutoff(1_000), 100.0);
        assert_eq!(common_term_cutoff(10_000), 500.0);
        assert_eq!(common_term_cutoff(40_000), 2_000.0);
        assert_eq!(common_term_cutoff(100_000), 2_000.0);
        assert_eq!(common_term_cutoff(10_000_000), 2_000.0);
        // The cutoff itself is rare, one more is common.
        let with_df = vec![("at", 500), ("over", 501)];
        assert_eq!(ranked_terms(with_df, 10_000), vec!["at"]);
    }

    fn related_skips_stop_words_and_other_filters(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                // 150 lessons share "the" and "cache" (common: in more than 100 lessons).
                for i in 0..150u128 {
                    add(
                        db,
                        &format!("bulk-{i}"),
                        &format!("the cache plan {i}"),
                        "the cache",
                        i + 10,
                    );
                }
                add(db, "a", "shard the zookeeper ensemble", "the cache", 1000);
                add(db, "b", "zookeeper quorum tuning", "timeouts", 1001);
                add(db, "mine", "zookeeper in my own task", "x", 1002);
                let Inserted::New(off) = add(db, "c", "zookeeper off", "x", 1003) else {
                    panic!()
                };
                set_active(db, off.id, false)?;
                let terms: Vec<String> = ["the", "cache", "zookeeper"].map(String::from).into();
                let got = related(db, &TaskKey::of("mine"), &terms, 5)?;
                let tasks: Vec<&str> = got.iter().map(|(l, _)| l.task_id.as_str()).collect();
                // Only "zookeeper" is ranked (the others are stop words here); the caller's
                // own task and inactive lessons are excluded.
                assert_eq!(tasks.len(), 2, "{tasks:?}");
                assert!(tasks.contains(&"a") && tasks.contains(&"b"), "{tasks:?}");
                assert!(got[0].1 <= got[1].1, "bm25 ascending");
                // All terms common: the two rarest are kept, so something is still found.
                let common: Vec<String> = ["the", "cache"].map(String::from).into();
                assert_eq!(related(db, &TaskKey::of("mine"), &common, 5)?.len(), 5);
                assert!(related(db, &TaskKey::of("mine"), &[], 5)?.is_empty());
                // Quotes cannot break the query syntax.
                let odd: Vec<String> = vec!["\"zookeeper\" OR".into()];
                related(db, &TaskKey::of("mine"), &odd, 5)?;
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        related_skips_stop_words_and_other_filters,
        related_skips_stop_words_on_sqlite,
        related_skips_stop_words_on_postgres
    );

    fn atomically_undoes_a_failed_operation_only(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                let r: Result<(), StoreError> = atomically(db, || {
                    add(db, "t", "kept out", "x", 1);
                    Err(StoreError::Corrupt("boom".into()))
                });
                assert!(r.is_err());
                assert!(
                    active_strategies(db, &TaskKey::of("t"))?.is_empty(),
                    "rolled back"
                );
                atomically(db, || -> Result<(), StoreError> {
                    add(db, "t", "kept in", "x", 2);
                    Ok(())
                })?;
                assert_eq!(active_strategies(db, &TaskKey::of("t"))?.len(), 1);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        atomically_undoes_a_failed_operation_only,
        atomically_undoes_on_sqlite,
        atomically_undoes_on_postgres
    );
}

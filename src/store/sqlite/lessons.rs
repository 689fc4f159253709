//! The SQLite side of [`crate::store::lessons`]: its SQL, the family's migrations and their
//! data steps.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use uuid::Uuid;

use crate::service::lessons::{Lesson, NewLesson, TaskKey};
use crate::store::rows::lessons::{
    ActiveStrategy, Inserted, RELATED_CANDIDATES, RawLesson, common_term_cutoff, encode_spans,
    lesson_from_raw, ranked_terms, stored,
};
use crate::store::{StoreError, to_us};

/// Schema of the lesson store.
///
/// - `UNIQUE (task_id, normalised_strategy)` makes duplicate lessons impossible even when
///   several processes log at once; its index also serves every per-task lookup.
/// - `lessons_active` serves the blacklist check: the active lessons of one task, oldest first.
/// - `lessons_fts` (FTS5, `unicode61`) indexes [`crate::service::lessons::search_terms`] with
///   `rowid = lessons.seq`, ranked by bm25 for `include_related`; `lessons_fts_vocab` gives
///   each term's document frequency so that stop words can be left out of a query.
pub const MIGRATION: &str = "
CREATE TABLE lessons (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT    NOT NULL UNIQUE,
    task_id               TEXT    NOT NULL,
    strategy_description  TEXT    NOT NULL,
    normalised_strategy   TEXT    NOT NULL,
    rca_summary           TEXT    NOT NULL,
    failure_type          TEXT    NOT NULL CHECK (failure_type IN ('ARCHITECTURAL_MISUNDERSTANDING',
                              'TOOL_MISUSE', 'DEPENDENCY_CONFLICT', 'LOGIC_ERROR', 'UNKNOWN')),
    source_agent          TEXT    NOT NULL,
    is_active             INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    created_us            INTEGER NOT NULL,
    UNIQUE (task_id, normalised_strategy)
) STRICT;
CREATE INDEX lessons_active ON lessons (task_id, is_active, seq);
CREATE VIRTUAL TABLE lessons_fts USING fts5(terms, tokenize = 'unicode61');
CREATE VIRTUAL TABLE lessons_fts_vocab USING fts5vocab(lessons_fts, 'row');
";

/// Migration 9: each lesson keeps the byte ranges of its strategy's word tokens
/// ([`crate::service::lessons::word_spans`]), as `(start, end)` pairs of little-endian `u32`,
/// so that a blacklist check reads them instead of running Unicode word segmentation over every
/// stored strategy of the task (four fifths of its time). [`fill_strategy_spans`] fills the
/// column for lessons stored before.
pub const MIGRATION_SPANS: &str = "
ALTER TABLE lessons ADD COLUMN strategy_spans BLOB NOT NULL DEFAULT x'';
";

/// Data step of migration 9: compute the token spans of every stored lesson.
///
/// # Errors
/// SQL failure.
pub fn fill_strategy_spans(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT seq, normalised_strategy FROM lessons")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut update = conn.prepare("UPDATE lessons SET strategy_spans = ?2 WHERE seq = ?1")?;
    for (seq, normalised) in rows {
        update.execute(params![seq, encode_spans(&normalised)])?;
    }
    Ok(())
}

/// Migration 10: task ids are compared folded ([`TaskKey`]: case, width, surrounding spaces),
/// so `"TASK-42"` and `" task-42 "` are one task. Each lesson keeps its key in `task_key`;
/// [`fill_task_keys`] fills it for lessons stored before, merges lessons that become duplicates,
/// and then builds the indexes of [`TASK_KEY_INDEXES`].
pub const MIGRATION_TASK_KEY: &str = "
ALTER TABLE lessons ADD COLUMN task_key TEXT NOT NULL DEFAULT '';
";

/// The indexes over `task_key`, built by [`fill_task_keys`] once every key is known:
///
/// - `lessons_task_key_strategy`, unique: one lesson per (task key, normalised strategy), which
///   makes concurrent duplicates resolve to one row; it also serves every per-task lookup. (The
///   table's original `UNIQUE (task_id, normalised_strategy)` stays: SQLite cannot drop a table
///   constraint, and equal ids have equal keys, so it never refuses what this one allows.)
/// - `lessons_active_by_key` replaces `lessons_active`: the active lessons of one task, oldest
///   first, for the blacklist check.
pub const TASK_KEY_INDEXES: &str = "
CREATE UNIQUE INDEX lessons_task_key_strategy ON lessons (task_key, normalised_strategy);
CREATE INDEX lessons_active_by_key ON lessons (task_key, is_active, seq);
DROP INDEX lessons_active;
";

/// Data step of migration 10: the [`TaskKey`] of every stored lesson.
///
/// Lessons whose task ids differ only in case, width or surrounding spaces, and whose normalised
/// strategies are equal, were logged twice because of the case-sensitive comparison; they
/// become one. The oldest is kept (its id, text and summary), active if any of them was (a
/// strategy that was blocked under one spelling stays blocked); each later one is deleted, with
/// its search terms, and an `OVERRIDE` entry in the directive history (by
/// [`crate::store::rows::directives::SERVER_ACTOR`])
/// keeps its id, task id, strategy and root-cause summary. Then [`TASK_KEY_INDEXES`] are built.
///
/// # Errors
/// SQL failure.
pub fn fill_task_keys(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    type Row = (i64, String, String, String, String, String, bool);
    let rows: Vec<Row> = conn
        .prepare(
            "SELECT seq, id, task_id, normalised_strategy, strategy_description, rca_summary,
                    is_active
             FROM lessons ORDER BY seq",
        )?
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get::<_, i64>(6)? != 0,
            ))
        })?
        .collect::<Result<_, _>>()?;
    // (key, normalised strategy) → index in `rows` of the lesson kept.
    let mut kept: std::collections::HashMap<(String, String), usize> = Default::default();
    let mut set_key = conn.prepare("UPDATE lessons SET task_key = ?2 WHERE seq = ?1")?;
    let mut merges: Vec<(usize, usize)> = Vec::new();
    for (i, (seq, _, task_id, normalised, ..)) in rows.iter().enumerate() {
        let key = TaskKey::of(task_id).as_str().to_owned();
        match kept.entry((key, normalised.clone())) {
            std::collections::hash_map::Entry::Occupied(k) => merges.push((i, *k.get())),
            std::collections::hash_map::Entry::Vacant(v) => {
                set_key.execute(params![seq, v.key().0])?;
                v.insert(i);
            }
        }
    }
    let now = to_us(chrono::Utc::now());
    for (dup, keep) in merges {
        let (seq, id, task_id, _, strategy, rca, active) = &rows[dup];
        let (keep_seq, keep_id, keep_task, ..) = &rows[keep];
        if *active {
            conn.execute(
                "UPDATE lessons SET is_active = 1 WHERE seq = ?1",
                [keep_seq],
            )?;
        }
        conn.execute("DELETE FROM lessons WHERE seq = ?1", [seq])?;
        conn.execute("DELETE FROM lessons_fts WHERE rowid = ?1", [seq])?;
        let note = format!(
            "lesson {id} (task {task_id:?}, strategy {strategy:?}, {state}) merged into lesson \
             {keep_id} (task {keep_task:?}): task ids that differ only in case, width or \
             surrounding spaces name one task. Its root-cause summary: {rca}",
            state = if *active { "active" } else { "inactive" },
        );
        conn.execute(
            "INSERT INTO directive_history (id, task_id, intervention_type, description, actor,
                                            created_us)
             VALUES (?1, ?2, 'OVERRIDE', ?3, ?4, ?5)",
            params![
                Uuid::new_v4().to_string(),
                keep_task,
                note,
                crate::store::rows::directives::SERVER_ACTOR,
                now
            ],
        )?;
    }
    conn.execute_batch(TASK_KEY_INDEXES)
}

/// Migration 14: every lesson belongs to a project ([`crate::project`]), and one project's
/// lessons never block another's, so the table is rebuilt without the original
/// `UNIQUE (task_id, normalised_strategy)` (SQLite cannot drop a table constraint): the same
/// task id and strategy may now be stored once per project. Rows keep their `seq` (the rowid of
/// their `lessons_fts` entry) and get the project [`crate::project::UNASSIGNED`], which the
/// operator reassigns with `console projects move`. The indexes lead with the project:
///
/// - `lessons_project_task_strategy`, unique: one lesson per (project, task key, normalised
///   strategy); it serves every per-task lookup;
/// - `lessons_active_by_key`: a task's active lessons, oldest first, for the blacklist check;
/// - `lessons_project_active`: a project's active lessons (the other tasks a check consults);
/// - `lessons_task_words`: a project's lessons by task words ([`TaskKey::words_key`], filled by
///   [`fill_task_words`]), for a check of a task id the project has not used.
pub const MIGRATION_PROJECT: &str = "
CREATE TABLE lessons_v14 (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT    NOT NULL UNIQUE,
    project               TEXT    NOT NULL DEFAULT '',
    task_id               TEXT    NOT NULL,
    task_key              TEXT    NOT NULL,
    task_words            TEXT    NOT NULL DEFAULT '',
    strategy_description  TEXT    NOT NULL,
    normalised_strategy   TEXT    NOT NULL,
    strategy_spans        BLOB    NOT NULL DEFAULT x'',
    rca_summary           TEXT    NOT NULL,
    failure_type          TEXT    NOT NULL CHECK (failure_type IN ('ARCHITECTURAL_MISUNDERSTANDING',
                              'TOOL_MISUSE', 'DEPENDENCY_CONFLICT', 'LOGIC_ERROR', 'UNKNOWN')),
    source_agent          TEXT    NOT NULL,
    is_active             INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    created_us            INTEGER NOT NULL,
    embedding             BLOB,
    embedding_model       TEXT,
    embedding_dim         INTEGER,
    embedding_rev         INTEGER
) STRICT;
INSERT INTO lessons_v14 (seq, id, project, task_id, task_key, strategy_description,
                         normalised_strategy, strategy_spans, rca_summary, failure_type,
                         source_agent, is_active, created_us, embedding, embedding_model,
                         embedding_dim, embedding_rev)
SELECT seq, id, '', task_id, task_key, strategy_description, normalised_strategy,
       strategy_spans, rca_summary, failure_type, source_agent, is_active, created_us,
       embedding, embedding_model, embedding_dim, embedding_rev
FROM lessons;
DROP TABLE lessons;
ALTER TABLE lessons_v14 RENAME TO lessons;
CREATE UNIQUE INDEX lessons_project_task_strategy
    ON lessons (project, task_key, normalised_strategy);
CREATE INDEX lessons_active_by_key ON lessons (project, task_key, is_active, seq);
CREATE INDEX lessons_project_active ON lessons (project, is_active, seq);
CREATE INDEX lessons_task_words ON lessons (project, task_words, is_active);
CREATE INDEX lessons_embedding_rev ON lessons (embedding_rev) WHERE embedding_rev IS NOT NULL;
";

/// Data step of migration 14: each lesson's `task_words` ([`TaskKey::words_key`] of its key).
///
/// # Errors
/// SQL failure.
pub fn fill_task_words(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT seq, task_key FROM lessons")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut update = conn.prepare("UPDATE lessons SET task_words = ?2 WHERE seq = ?1")?;
    for (seq, key) in rows {
        update.execute(params![seq, TaskKey::from_stored(key).words_key()])?;
    }
    Ok(())
}

const COLUMNS: &str = "l.id, l.task_id, l.strategy_description, l.normalised_strategy, \
                       l.rca_summary, l.failure_type, l.source_agent, l.is_active, l.created_us";

fn raw_lesson(r: &Row<'_>) -> rusqlite::Result<RawLesson> {
    RawLesson::read(r)
}

/// [`crate::store::lessons::insert`] on SQLite.
pub(crate) fn insert(
    conn: &Connection,
    project: &str,
    l: &NewLesson,
    id: Uuid,
    search_terms: &str,
    now: DateTime<Utc>,
) -> Result<Inserted, StoreError> {
    if let Some(existing) = find_by_strategy(conn, project, &l.task_key, &l.normalised_strategy)? {
        return Ok(Inserted::Exists(existing));
    }
    let seq: Option<i64> = conn
        .prepare_cached(
            "INSERT INTO lessons (id, task_id, strategy_description, normalised_strategy,
                                  rca_summary, failure_type, source_agent, is_active, created_us,
                                  strategy_spans, task_key, project, task_words)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT DO NOTHING
             RETURNING seq",
        )?
        .query_row(
            params![
                id.to_string(),
                l.task_id,
                l.strategy_description,
                l.normalised_strategy,
                l.rca_summary,
                l.failure_type.as_str(),
                l.source_agent,
                to_us(now),
                encode_spans(&l.normalised_strategy),
                l.task_key.as_str(),
                project,
                l.task_key.words_key(),
            ],
            |r| r.get(0),
        )
        .optional()?;
    let Some(seq) = seq else {
        let existing = find_by_strategy(conn, project, &l.task_key, &l.normalised_strategy)?
            .ok_or_else(|| StoreError::Corrupt("lesson conflict without a row".into()))?;
        return Ok(Inserted::Exists(existing));
    };
    conn.prepare_cached("INSERT INTO lessons_fts (rowid, terms) VALUES (?1, ?2)")?
        .execute(params![seq, search_terms])?;
    Ok(Inserted::New(stored(l, id, now)))
}

/// [`crate::store::lessons::find_by_strategy`] on SQLite.
pub(crate) fn find_by_strategy(
    conn: &Connection,
    project: &str,
    key: &TaskKey,
    normalised_strategy: &str,
) -> Result<Option<Lesson>, StoreError> {
    one(
        conn,
        "l.project = ?3 AND l.task_key = ?1 AND l.normalised_strategy = ?2",
        params![key.as_str(), normalised_strategy, project],
    )
}

/// The lesson matching `filter` (SQL over `lessons l`, with `args`), if any.
fn one(
    conn: &Connection,
    filter: &str,
    args: impl rusqlite::Params,
) -> Result<Option<Lesson>, StoreError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM lessons l WHERE {filter}"))?
        .query_row(args, raw_lesson)
        .optional()?
        .map(lesson_from_raw)
        .transpose()
}

/// [`crate::store::lessons::get`] on SQLite.
pub(crate) fn get(
    conn: &Connection,
    project: &str,
    id: Uuid,
) -> Result<Option<Lesson>, StoreError> {
    one(
        conn,
        "l.id = ?1 AND l.project = ?2",
        params![id.to_string(), project],
    )
}

/// [`crate::store::lessons::active_strategies`] on SQLite.
pub(crate) fn active_strategies(
    conn: &Connection,
    project: &str,
    key: &TaskKey,
) -> Result<Vec<ActiveStrategy>, StoreError> {
    strategies(
        conn,
        "task_key = ?1 AND project = ?2",
        params![key.as_str(), project],
    )
}

/// The active strategies of `lessons` rows matching `filter` (with `args`), oldest first.
fn strategies(
    conn: &Connection,
    filter: &str,
    args: impl rusqlite::Params,
) -> Result<Vec<ActiveStrategy>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT seq, normalised_strategy, strategy_spans, embedding_model, embedding,
                embedding_dim
         FROM lessons WHERE {filter} AND is_active = 1 ORDER BY seq"
    ))?;
    let rows = stmt.query_map(args, |r| {
        Ok(ActiveStrategy {
            seq: r.get(0)?,
            normalised: r.get(1)?,
            spans: r.get(2)?,
            vector: match (r.get::<_, Option<String>>(3)?, r.get(4)?, r.get(5)?) {
                (Some(model), Some(blob), Some(dim)) => Some((model, blob, dim)),
                _ => None,
            },
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`crate::store::lessons::same_words_strategies`] on SQLite.
pub(crate) fn same_words_strategies(
    conn: &Connection,
    project: &str,
    key: &TaskKey,
) -> Result<Vec<ActiveStrategy>, StoreError> {
    strategies(
        conn,
        "project = ?1 AND task_words = ?2 AND task_key <> ?3",
        params![project, key.words_key(), key.as_str()],
    )
}

/// [`crate::store::lessons::get_by_seq`] on SQLite.
pub(crate) fn get_by_seq(
    conn: &Connection,
    project: &str,
    seq: i64,
) -> Result<Option<Lesson>, StoreError> {
    one(conn, "l.seq = ?1 AND l.project = ?2", params![seq, project])
}

/// [`crate::store::lessons::set_active`] on SQLite.
pub(crate) fn set_active(
    conn: &Connection,
    project: &str,
    id: Uuid,
    active: bool,
) -> Result<Option<Lesson>, StoreError> {
    let Some(before) = get(conn, project, id)? else {
        return Ok(None);
    };
    conn.prepare_cached("UPDATE lessons SET is_active = ?2 WHERE id = ?1")?
        .execute(params![id.to_string(), i64::from(active)])?;
    Ok(Some(before))
}

/// [`crate::store::lessons::list`] on SQLite.
pub(crate) fn list(
    conn: &Connection,
    project: &str,
    key: Option<&TaskKey>,
    include_inactive: bool,
) -> Result<Vec<Lesson>, StoreError> {
    // Only the filter in use appears in the SQL, so that a task's lessons are found through
    // the (project, task_key, …) index instead of a scan of the project's lessons (an
    // `?1 IS NULL OR task_key = ?1` defeats the index: 6 ms a check at 2·10⁴ lessons).
    let task = if key.is_some() {
        "AND l.task_key = ?3"
    } else {
        "AND ?3 IS NULL"
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM lessons l
         WHERE l.project = ?1 {task} AND (?2 OR l.is_active = 1)
         ORDER BY l.seq"
    ))?;
    let rows = stmt.query_map(
        params![project, include_inactive, key.map(TaskKey::as_str)],
        raw_lesson,
    )?;
    rows.map(|r| lesson_from_raw(r?)).collect()
}

/// [`crate::store::lessons::related`] on SQLite.
pub(crate) fn related(
    conn: &Connection,
    project: &str,
    key: &TaskKey,
    terms: &[String],
    limit: usize,
) -> Result<Vec<(Lesson, f64)>, StoreError> {
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let total: i64 = conn
        .prepare_cached("SELECT coalesce(max(seq), 0) FROM lessons")?
        .query_row([], |r| r.get(0))?;
    // Each term becomes an FTS5 string ("…" with inner quotes doubled), so no term can inject
    // query syntax.
    let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    // Counted up to one past the cutoff: enough to tell rare from common. A term the index
    // splits differently (e.g. "don't") counts what its phrase matches.
    let cap = common_term_cutoff(total) as i64 + 1;
    let mut capped = conn.prepare_cached(
        "SELECT count(*) FROM (SELECT rowid FROM lessons_fts WHERE lessons_fts MATCH ?1 LIMIT ?2)",
    )?;
    let mut with_df: Vec<(&String, i64)> = Vec::with_capacity(terms.len());
    for t in terms {
        let df: i64 = capped.query_row(params![quoted(t), cap], |r| r.get(0))?;
        with_df.push((t, df));
    }
    if with_df.iter().all(|&(_, df)| df >= cap) {
        // Every term is common: the rarest are chosen by their exact counts.
        let mut exact = conn.prepare_cached("SELECT doc FROM lessons_fts_vocab WHERE term = ?1")?;
        for (t, df) in &mut with_df {
            *df = exact
                .query_row([t.as_str()], |r| r.get(0))
                .optional()?
                .unwrap_or(*df);
        }
    }
    let kept = ranked_terms(with_df, total);
    let query = kept
        .iter()
        .map(|t| quoted(t))
        .collect::<Vec<_>>()
        .join(" OR ");
    // CROSS JOIN keeps the join order: the 64 full-text candidates first, then their rows.
    // With a plain JOIN the planner starts from `lessons` through the project index and probes
    // the full-text result for every lesson of the project (3.4 ms a check at 2·10⁴ lessons,
    // against 0.4 ms).
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, c.rank
         FROM (SELECT rowid, bm25(lessons_fts) AS rank FROM lessons_fts
               WHERE lessons_fts MATCH ?1 ORDER BY rank LIMIT {RELATED_CANDIDATES}) AS c
         CROSS JOIN lessons l ON l.seq = c.rowid
         WHERE l.project = ?4 AND l.task_key <> ?2 AND l.is_active = 1
         ORDER BY c.rank, l.seq LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![query, key.as_str(), limit as i64, project], |r| {
        Ok((raw_lesson(r)?, r.get::<_, f64>(9)?))
    })?;
    rows.map(|r| {
        let (raw, rank) = r?;
        Ok((lesson_from_raw(raw)?, rank))
    })
    .collect()
}

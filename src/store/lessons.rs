//! Lessons learned: the lesson table (unique per task and normalised strategy) and its FTS5
//! index for related-lesson search.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};
use uuid::Uuid;

use super::{Db, StoreError, from_us, to_us};
use super::{pg, sqlite_or};
use crate::service::lessons::{
    Activation, FailureType, Lesson, NewLesson, TaskKey, activation, search_terms, word_spans,
};
use crate::store::directives::{self, Directive, InterventionType};

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

/// The stored `strategy_spans` of a normalised strategy: `(start, end)` byte offsets of its
/// word tokens as little-endian `u32` pairs (both backends store the same bytes).
pub(crate) fn encode_spans(normalised: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for (start, end) in word_spans(normalised) {
        // A strategy is at most 4,096 characters (16 KiB), far inside u32.
        out.extend_from_slice(&(start as u32).to_le_bytes());
        out.extend_from_slice(&(end as u32).to_le_bytes());
    }
    out
}

/// The word tokens of a stored strategy, read from its stored spans.
///
/// # Errors
/// [`StoreError::Corrupt`] when the spans do not cut `normalised` at character boundaries.
pub fn tokens_from_spans<'a>(
    normalised: &'a str,
    spans: &[u8],
) -> Result<Vec<&'a str>, StoreError> {
    let corrupt = || StoreError::Corrupt(format!("token spans of lesson strategy {normalised:?}"));
    if !spans.len().is_multiple_of(8) {
        return Err(corrupt());
    }
    spans
        .chunks_exact(8)
        .map(|c| {
            let start = u32::from_le_bytes(c[..4].try_into().expect("4 bytes")) as usize;
            let end = u32::from_le_bytes(c[4..].try_into().expect("4 bytes")) as usize;
            normalised.get(start..end).ok_or_else(corrupt)
        })
        .collect()
}

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
/// [`super::directives::SERVER_ACTOR`])
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
                super::directives::SERVER_ACTOR,
                now
            ],
        )?;
    }
    conn.execute_batch(TASK_KEY_INDEXES)
}

const COLUMNS: &str = "l.id, l.task_id, l.strategy_description, l.normalised_strategy, \
                       l.rca_summary, l.failure_type, l.source_agent, l.is_active, l.created_us";

/// A lesson row as stored, in [`COLUMNS`] order (both backends decode it with
/// [`lesson_from_raw`]).
pub(crate) type RawLesson = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    bool,
    i64,
);

fn raw_lesson(r: &Row<'_>) -> rusqlite::Result<RawLesson> {
    RawLesson::try_from(r)
}

/// The lesson of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an id that is not a UUID, an unknown failure type, or a time
/// outside chrono's range.
pub(crate) fn lesson_from_raw(raw: RawLesson) -> Result<Lesson, StoreError> {
    let (id, task_id, strategy, normalised, rca, failure, agent, active, created) = raw;
    Ok(Lesson {
        id: Uuid::parse_str(&id)
            .map_err(|e| StoreError::Corrupt(format!("lesson id {id:?}: {e}")))?,
        task_id,
        strategy_description: strategy,
        normalised_strategy: normalised,
        rca_summary: rca,
        failure_type: FailureType::parse(&failure)
            .map_err(|e| StoreError::Corrupt(format!("lesson failure type: {e}")))?,
        source_agent: agent,
        is_active: active,
        created_at: from_us(created)?,
    })
}

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

/// What [`insert`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    /// A new lesson was stored.
    New(Lesson),
    /// The task already had a lesson with this normalised strategy (active or not).
    Exists(Lesson),
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
    let conn = sqlite_or!(db, pg => pg::lessons::insert(pg, l, id, search_terms, now));
    if let Some(existing) = find_by_strategy(db, &l.task_key, &l.normalised_strategy)? {
        return Ok(Inserted::Exists(existing));
    }
    let seq: Option<i64> = conn
        .prepare_cached(
            "INSERT INTO lessons (id, task_id, strategy_description, normalised_strategy,
                                  rca_summary, failure_type, source_agent, is_active, created_us,
                                  strategy_spans, task_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10)
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
            ],
            |r| r.get(0),
        )
        .optional()?;
    let Some(seq) = seq else {
        let existing = find_by_strategy(db, &l.task_key, &l.normalised_strategy)?
            .ok_or_else(|| StoreError::Corrupt("lesson conflict without a row".into()))?;
        return Ok(Inserted::Exists(existing));
    };
    conn.prepare_cached("INSERT INTO lessons_fts (rowid, terms) VALUES (?1, ?2)")?
        .execute(params![seq, search_terms])?;
    Ok(Inserted::New(stored(l, id, now)))
}

/// The lesson [`insert`] stored: `l`, active, with its id and time.
pub(crate) fn stored(l: &NewLesson, id: Uuid, now: DateTime<Utc>) -> Lesson {
    Lesson {
        id,
        task_id: l.task_id.clone(),
        strategy_description: l.strategy_description.clone(),
        normalised_strategy: l.normalised_strategy.clone(),
        rca_summary: l.rca_summary.clone(),
        failure_type: l.failure_type,
        source_agent: l.source_agent.clone(),
        is_active: true,
        created_at: now,
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
    let conn = sqlite_or!(db, pg => pg::lessons::find_by_strategy(pg, key, normalised_strategy));
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM lessons l WHERE l.task_key = ?1 AND l.normalised_strategy = ?2"
    ))?
    .query_row(params![key.as_str(), normalised_strategy], raw_lesson)
    .optional()?
    .map(lesson_from_raw)
    .transpose()
}

/// The lesson with this id.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get(db: &Db<'_>, id: Uuid) -> Result<Option<Lesson>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lessons::get(pg, id));
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM lessons l WHERE l.id = ?1"))?
        .query_row([id.to_string()], raw_lesson)
        .optional()?
        .map(lesson_from_raw)
        .transpose()
}

/// The normalised strategies of one task's active lessons with their row keys, oldest first
/// (index `lessons_active_by_key`; other tasks' lessons are never read, and no summary text is
/// loaded).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn active_strategies(db: &Db<'_>, key: &TaskKey) -> Result<Vec<ActiveStrategy>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lessons::active_strategies(pg, key));
    let mut stmt = conn.prepare_cached(
        "SELECT seq, normalised_strategy, strategy_spans, embedding_model, embedding,
                embedding_dim
         FROM lessons WHERE task_key = ?1 AND is_active = 1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([key.as_str()], |r| {
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

/// One active lesson's strategy, as the blacklist check reads it.
#[derive(Debug, Clone)]
pub struct ActiveStrategy {
    /// Row key, for [`get_by_seq`].
    pub seq: i64,
    /// The normalised strategy.
    pub normalised: String,
    /// Its word tokens' byte ranges; read them with [`ActiveStrategy::tokens`].
    pub(crate) spans: Vec<u8>,
    /// The stored vector: model, BLOB, dimension (see [`super::lesson_vectors`]).
    pub(crate) vector: Option<(String, Vec<u8>, i64)>,
}

impl ActiveStrategy {
    /// The strategy's word tokens, from the stored spans.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored spans do not fit the strategy.
    pub fn tokens(&self) -> Result<Vec<&str>, StoreError> {
        tokens_from_spans(&self.normalised, &self.spans)
    }

    /// The lesson's stored vector when `model` produced it; `None` when it has none or another
    /// model's.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored vector is damaged.
    pub fn vector(&self, model: &str) -> Result<Option<Vec<f32>>, StoreError> {
        match &self.vector {
            Some((m, blob, dim)) if m == model => {
                super::lesson_vectors::decode(blob, *dim).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// The lesson with this row key (from [`active_strategies`]).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn get_by_seq(db: &Db<'_>, seq: i64) -> Result<Option<Lesson>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lessons::get_by_seq(pg, seq));
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM lessons l WHERE l.seq = ?1"))?
        .query_row([seq], raw_lesson)
        .optional()?
        .map(lesson_from_raw)
        .transpose()
}

/// Sets a lesson's `is_active`; returns the lesson as it was before, or `None` if there is no
/// such lesson.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn set_active(db: &Db<'_>, id: Uuid, active: bool) -> Result<Option<Lesson>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lessons::set_active(pg, id, active));
    let Some(before) = get(db, id)? else {
        return Ok(None);
    };
    conn.prepare_cached("UPDATE lessons SET is_active = ?2 WHERE id = ?1")?
        .execute(params![id.to_string(), i64::from(active)])?;
    Ok(Some(before))
}

/// What [`set_active_recorded`] did: the lesson as it was, the change, and the `OVERRIDE`
/// entry written to the directive history.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The lesson before the change.
    pub before: Lesson,
    /// The lesson after, whether `is_active` changed, and the note.
    pub change: Activation,
    /// The directive-history entry recording it.
    pub directive: Directive,
}

/// Lift (`active = false`) or restore (`true`) lesson `id` and record it in the directive
/// history as an `OVERRIDE` by `actor`, with the note of
/// [`crate::service::lessons::activation`] (which lesson, what happened, and
/// `rationale`). This is all of `set_lesson_active`'s effect, shared with the operator's
/// console; call inside a write transaction. `None` when there is no such lesson (nothing is
/// written).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn set_active_recorded(
    db: &Db<'_>,
    id: Uuid,
    active: bool,
    rationale: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Option<Recorded>, StoreError> {
    let Some(before) = set_active(db, id, active)? else {
        return Ok(None);
    };
    let change = activation(&before, active, rationale);
    let directive = Directive::new(
        Some(before.task_id.clone()),
        InterventionType::Override,
        change.note.clone(),
        actor,
        now,
    );
    directives::insert(db, &directive)?;
    Ok(Some(Recorded {
        before,
        change,
        directive,
    }))
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
    let conn = sqlite_or!(db, pg => pg::lessons::list(pg, key, include_inactive));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM lessons l
         WHERE (?1 IS NULL OR l.task_key = ?1) AND (?2 OR l.is_active = 1)
         ORDER BY l.seq"
    ))?;
    let rows = stmt.query_map(
        params![key.map(TaskKey::as_str), include_inactive],
        raw_lesson,
    )?;
    rows.map(|r| lesson_from_raw(r?)).collect()
}

/// What [`import`] did with one lesson.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Import {
    /// Stored, with its id, time and state.
    Added,
    /// Already present (the same id, or the same task and normalised strategy): left as it is.
    Skipped,
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

/// A term found in more than this fraction of all lessons (and in more than
/// [`COMMON_TERM_MIN_DOCS`]) is too common to rank by (a stop word such as "the"); it is left
/// out of the related-lessons query.
pub const COMMON_TERM_FRACTION: f64 = 0.05;
/// Below this many lessons containing it, no term counts as common (small stores rank by every
/// term; bm25's IDF already discounts stop words).
pub const COMMON_TERM_MIN_DOCS: f64 = 100.0;
/// Whatever the store's size, a term found in more than this many lessons is common: ranking
/// by it would score thousands of lessons for one check, and a term that frequent says little
/// about which lessons are related. Also bounds the work of finding out (see [`related`]).
pub const COMMON_TERM_MAX_DOCS: f64 = 2000.0;
/// When every term is common, this many of the rarest are kept.
pub const RAREST_KEPT: usize = 2;
/// Candidates ranked by the full-text index before the task and activity filters apply.
pub const RELATED_CANDIDATES: usize = 64;

/// The most lessons a term may be found in and still rank related lessons, among `total`:
/// [`COMMON_TERM_FRACTION`] of `total`, at least [`COMMON_TERM_MIN_DOCS`] and at most
/// [`COMMON_TERM_MAX_DOCS`] (100 up to 2,000 lessons, then 5 %, then 2,000 from 40,000 on).
pub fn common_term_cutoff(total: i64) -> f64 {
    (total as f64 * COMMON_TERM_FRACTION).clamp(COMMON_TERM_MIN_DOCS, COMMON_TERM_MAX_DOCS)
}

/// The terms [`related`] ranks by, given each term's document frequency and the number of
/// lessons `total`: those in at most [`common_term_cutoff`]`(total)` lessons, in the order
/// given; when none is, the [`RAREST_KEPT`] rarest (ties in the order given). Shared by both
/// backends.
pub(crate) fn ranked_terms<T: Copy>(mut with_df: Vec<(T, i64)>, total: i64) -> Vec<T> {
    let cutoff = common_term_cutoff(total);
    let kept: Vec<T> = with_df
        .iter()
        .filter(|(_, df)| (*df as f64) <= cutoff)
        .map(|(t, _)| *t)
        .collect();
    if !kept.is_empty() {
        return kept;
    }
    with_df.sort_by_key(|(_, df)| *df);
    with_df.iter().take(RAREST_KEPT).map(|(t, _)| *t).collect()
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
    let conn = sqlite_or!(db, pg => pg::lessons::related(pg, key, terms, limit));
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
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, c.rank
         FROM (SELECT rowid, bm25(lessons_fts) AS rank FROM lessons_fts
               WHERE lessons_fts MATCH ?1 ORDER BY rank LIMIT {RELATED_CANDIDATES}) AS c
         JOIN lessons l ON l.seq = c.rowid
         WHERE l.task_key <> ?2 AND l.is_active = 1
         ORDER BY c.rank, l.seq LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![query, key.as_str(), limit as i64], |r| {
        Ok((raw_lesson(r)?, r.get::<_, f64>(9)?))
    })?;
    rows.map(|r| {
        let (raw, rank) = r?;
        Ok((lesson_from_raw(raw)?, rank))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lessons::text::word_tokens;
    use crate::service::lessons::{normalise_strategy, search_terms};
    use crate::store::pg::testing::both_backends;
    use crate::store::{DbPath, Store};

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
                        "directive_history_task_key",
                        "lessons_active_by_key",
                        "lessons_embedding_rev",
                        "lessons_task_key_strategy"
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

//! PostgreSQL twin of `store/lessons.rs`: the `lessons` table, its `terms` tsvector (GIN
//! index) for related-lesson search, and `lesson_terms`, each term's document frequency.
//!
//! A lesson's search terms ([`crate::service::lessons::search_terms`], already folded and split
//! into words) are stored exactly as lexemes with `array_to_tsvector` (no dictionary, no
//! stemming), and queried with a `tsquery` of quoted lexemes (`'` doubled, `\` escaped), so that no
//! term can inject query syntax. Terms longer than [`MAX_TERM_BYTES`] (PostgreSQL's limit
//! for a lexeme) are left out of both.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use postgres::Row;
use uuid::Uuid;

use super::Pg;
use crate::service::lessons::{Lesson, NewLesson, TaskKey};
use crate::store::rows::lessons::{
    ActiveStrategy, Inserted, RELATED_CANDIDATES, RawLesson, encode_spans, lesson_from_raw,
    ranked_terms, stored,
};
use crate::store::{StoreError, to_us};

/// The longest term, in UTF-8 bytes, that a `tsvector` or `tsquery` lexeme can hold
/// (PostgreSQL's 2,047); longer terms are not indexed nor queried.
pub const MAX_TERM_BYTES: usize = 2047;

/// The distinct terms of a whitespace-separated term list that can be lexemes, in first-seen
/// order.
fn lexemes(terms: &str) -> Vec<&str> {
    let mut seen = HashSet::new();
    terms
        .split_whitespace()
        .filter(|t| t.len() <= MAX_TERM_BYTES && seen.insert(*t))
        .collect()
}

/// A term as a `tsquery` lexeme: quoted, with `'` doubled and `\` escaped, so that it is
/// only ever a lexeme, whatever it holds (`|`, `!`, `:*`…).
fn quote(term: &str) -> String {
    format!("'{}'", term.replace('\\', "\\\\").replace('\'', "''"))
}

fn lesson(row: Option<Row>) -> Result<Option<Lesson>, StoreError> {
    row.map(|r| lesson_from_raw(RawLesson::read(&r)?))
        .transpose()
}

/// PostgreSQL twin of [`crate::store::lessons::insert`]: the same checks and answers; the
/// lesson's distinct terms go to its `terms` tsvector and each adds one to its document
/// frequency in `lesson_terms`, in the same transaction.
///
/// # Errors
/// [`StoreError::Postgres`], [`StoreError::ConnectionLost`], or [`StoreError::Corrupt`] as
/// the SQLite function.
pub fn insert(
    pg: &Pg,
    project: &str,
    l: &NewLesson,
    id: Uuid,
    search_terms: &str,
    now: DateTime<Utc>,
) -> Result<Inserted, StoreError> {
    if let Some(existing) = find_by_strategy(pg, project, &l.task_key, &l.normalised_strategy)? {
        return Ok(Inserted::Exists(existing));
    }
    let terms = lexemes(search_terms);
    let row = pg.query_opt(
        "INSERT INTO lessons (id, task_id, strategy_description, normalised_strategy,
                              rca_summary, failure_type, source_agent, is_active, created_us,
                              strategy_spans, task_key, terms, project, task_words)
         VALUES ($1, $2, $3, $4, $5, $6, $7, TRUE, $8, $9, $10, array_to_tsvector($11::text[]),
                 $12, $13)
         ON CONFLICT DO NOTHING
         RETURNING seq",
        &[
            &id.to_string(),
            &l.task_id,
            &l.strategy_description,
            &l.normalised_strategy,
            &l.rca_summary,
            &l.failure_type.as_str(),
            &l.source_agent,
            &to_us(now),
            &encode_spans(&l.normalised_strategy),
            &l.task_key.as_str(),
            &terms,
            &project,
            &l.task_key.words_key(),
        ],
    )?;
    if row.is_none() {
        let existing = find_by_strategy(pg, project, &l.task_key, &l.normalised_strategy)?
            .ok_or_else(|| StoreError::Corrupt("lesson conflict without a row".into()))?;
        return Ok(Inserted::Exists(existing));
    }
    pg.execute(
        "INSERT INTO lesson_terms (term, docs) SELECT t, 1 FROM unnest($1::text[]) AS t
         ON CONFLICT (term) DO UPDATE SET docs = lesson_terms.docs + 1",
        &[&terms],
    )?;
    Ok(Inserted::New(stored(l, id, now)))
}

/// Data step of migration 3: each lesson's `task_words` ([`TaskKey::words_key`] of its key),
/// computed in Rust so that it equals what [`insert`] stores for every script.
///
/// # Errors
/// SQL failure.
pub(crate) fn fill_task_words(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    let rows = tx.query("SELECT seq, task_key FROM lessons", &[])?;
    let update = tx.prepare("UPDATE lessons SET task_words = $2 WHERE seq = $1")?;
    for r in rows {
        let key: String = r.get(1);
        tx.execute(
            &update,
            &[&r.get::<_, i64>(0), &TaskKey::from_stored(key).words_key()],
        )?;
    }
    Ok(())
}

/// PostgreSQL twin of [`crate::store::lessons::find_by_strategy`].
///
/// # Errors
/// As [`insert`].
pub fn find_by_strategy(
    pg: &Pg,
    project: &str,
    key: &TaskKey,
    normalised_strategy: &str,
) -> Result<Option<Lesson>, StoreError> {
    lesson(pg.query_opt(
        "SELECT id, task_id, strategy_description, normalised_strategy, rca_summary,
                failure_type, source_agent, is_active, created_us
         FROM lessons WHERE project = $3 AND task_key = $1 AND normalised_strategy = $2",
        &[&key.as_str(), &normalised_strategy, &project],
    )?)
}

/// PostgreSQL twin of [`crate::store::lessons::get`].
///
/// # Errors
/// As [`insert`].
pub fn get(pg: &Pg, project: &str, id: Uuid) -> Result<Option<Lesson>, StoreError> {
    lesson(pg.query_opt(
        "SELECT id, task_id, strategy_description, normalised_strategy, rca_summary,
                failure_type, source_agent, is_active, created_us
         FROM lessons WHERE id = $1 AND project = $2",
        &[&id.to_string(), &project],
    )?)
}

/// PostgreSQL twin of [`crate::store::lessons::active_strategies`] (index
/// `lessons_active_by_key`).
///
/// # Errors
/// As [`insert`].
pub fn active_strategies(
    pg: &Pg,
    project: &str,
    key: &TaskKey,
) -> Result<Vec<ActiveStrategy>, StoreError> {
    strategies(pg.query(
        "SELECT seq, normalised_strategy, strategy_spans, embedding_model, embedding,
                embedding_dim
         FROM lessons WHERE project = $2 AND task_key = $1 AND is_active ORDER BY seq",
        &[&key.as_str(), &project],
    )?)
}

/// Active strategies from rows of `seq, normalised_strategy, strategy_spans, embedding_model,
/// embedding, embedding_dim`.
fn strategies(rows: Vec<Row>) -> Result<Vec<ActiveStrategy>, StoreError> {
    rows.iter()
        .map(|r| {
            let model: Option<String> = super::get(r, 3)?;
            let blob: Option<Vec<u8>> = super::get(r, 4)?;
            let dim: Option<i64> = super::get(r, 5)?;
            Ok(ActiveStrategy {
                seq: super::get(r, 0)?,
                normalised: super::get(r, 1)?,
                spans: super::get(r, 2)?,
                vector: match (model, blob, dim) {
                    (Some(model), Some(blob), Some(dim)) => Some((model, blob, dim)),
                    _ => None,
                },
            })
        })
        .collect()
}

/// PostgreSQL twin of [`crate::store::lessons::same_words_strategies`] (index
/// `lessons_task_words`).
///
/// # Errors
/// As [`insert`].
pub fn same_words_strategies(
    pg: &Pg,
    project: &str,
    key: &TaskKey,
) -> Result<Vec<ActiveStrategy>, StoreError> {
    strategies(pg.query(
        "SELECT seq, normalised_strategy, strategy_spans, embedding_model, embedding,
                embedding_dim
         FROM lessons WHERE project = $1 AND task_words = $2 AND task_key <> $3 AND is_active
         ORDER BY seq",
        &[&project, &key.words_key(), &key.as_str()],
    )?)
}

/// PostgreSQL twin of [`crate::store::lessons::get_by_seq`].
///
/// # Errors
/// As [`insert`].
pub fn get_by_seq(pg: &Pg, project: &str, seq: i64) -> Result<Option<Lesson>, StoreError> {
    lesson(pg.query_opt(
        "SELECT id, task_id, strategy_description, normalised_strategy, rca_summary,
                failure_type, source_agent, is_active, created_us
         FROM lessons WHERE seq = $1 AND project = $2",
        &[&seq, &project],
    )?)
}

/// PostgreSQL twin of [`crate::store::lessons::get_by_seqs`]: one query.
///
/// # Errors
/// As [`insert`].
pub fn get_by_seqs(pg: &Pg, project: &str, seqs: &[i64]) -> Result<Vec<(i64, Lesson)>, StoreError> {
    let rows = pg.query(
        "SELECT id, task_id, strategy_description, normalised_strategy, rca_summary,
                failure_type, source_agent, is_active, created_us, seq
         FROM lessons WHERE seq = ANY($1) AND project = $2",
        &[&seqs.to_vec(), &project],
    )?;
    rows.iter()
        .map(|r| {
            Ok((
                super::get::<i64>(r, 9)?,
                lesson_from_raw(RawLesson::read(r)?)?,
            ))
        })
        .collect()
}

/// PostgreSQL twin of [`crate::store::lessons::set_active`].
///
/// # Errors
/// As [`insert`].
pub fn set_active(
    pg: &Pg,
    project: &str,
    id: Uuid,
    active: bool,
) -> Result<Option<Lesson>, StoreError> {
    let Some(before) = get(pg, project, id)? else {
        return Ok(None);
    };
    pg.execute(
        "UPDATE lessons SET is_active = $2 WHERE id = $1",
        &[&id.to_string(), &active],
    )?;
    Ok(Some(before))
}

/// PostgreSQL twin of [`crate::store::lessons::list`].
///
/// # Errors
/// As [`insert`].
pub fn list(
    pg: &Pg,
    project: &str,
    key: Option<&TaskKey>,
    include_inactive: bool,
) -> Result<Vec<Lesson>, StoreError> {
    // One statement per filter, so that a task's lessons come through its index (a prepared
    // `$1 IS NULL OR task_key = $1` gets a generic plan that scans the project).
    let rows = match key {
        Some(k) => pg.query(
            "SELECT id, task_id, strategy_description, normalised_strategy, rca_summary,
                    failure_type, source_agent, is_active, created_us
             FROM lessons WHERE project = $3 AND task_key = $1 AND ($2 OR is_active)
             ORDER BY seq",
            &[&k.as_str(), &include_inactive, &project],
        )?,
        None => pg.query(
            "SELECT id, task_id, strategy_description, normalised_strategy, rca_summary,
                    failure_type, source_agent, is_active, created_us
             FROM lessons WHERE project = $2 AND ($1 OR is_active)
             ORDER BY seq",
            &[&include_inactive, &project],
        )?,
    };
    rows.iter()
        .map(|r| lesson_from_raw(RawLesson::read(r)?))
        .collect()
}

/// PostgreSQL twin of [`crate::store::lessons::related`]: the same terms are dropped as
/// common (document frequencies from `lesson_terms`; the number of lessons is `max(seq)`,
/// which also counts the numbers of rolled-back inserts), and at most
/// [`RELATED_CANDIDATES`] lessons matching a kept term (GIN index on `terms`) are ranked
/// before the task and activity filters apply.
///
/// The rank is bm25 without term frequency nor length normalisation (a lexeme is stored once
/// per lesson, without positions): the sum, over the kept terms a lesson holds, of
/// `ln(1 + (N − df + 0.5) / (df + 0.5))`. The number returned with each lesson is that sum
/// **negated**, so that lower is more relevant as with SQLite's bm25; ties: oldest first.
///
/// # Errors
/// As [`insert`].
pub fn related(
    pg: &Pg,
    project: &str,
    key: &TaskKey,
    terms: &[String],
    limit: usize,
) -> Result<Vec<(Lesson, f64)>, StoreError> {
    let mut seen = HashSet::new();
    let terms: Vec<&str> = terms
        .iter()
        .map(String::as_str)
        .filter(|t| !t.is_empty() && t.len() <= MAX_TERM_BYTES && seen.insert(*t))
        .collect();
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let total: i64 = super::get(
        &pg.query_one("SELECT coalesce(max(seq), 0) FROM lessons", &[])?,
        0,
    )?;
    let rows = pg.query(
        "SELECT term, docs FROM lesson_terms WHERE term = ANY($1::text[])",
        &[&terms],
    )?;
    let mut docs = std::collections::HashMap::with_capacity(rows.len());
    for r in &rows {
        docs.insert(super::get::<String>(r, 0)?, super::get::<i64>(r, 1)?);
    }
    // A term no lesson holds has no row: it is rare.
    let with_df: Vec<(&str, i64)> = terms
        .iter()
        .map(|t| (*t, docs.get(*t).copied().unwrap_or(0)))
        .collect();
    let kept = ranked_terms(with_df, total);
    let n = total as f64;
    let weights: Vec<f64> = kept
        .iter()
        .map(|t| {
            let df = docs.get(*t).copied().unwrap_or(0) as f64;
            (1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)).ln()
        })
        .collect();
    let quoted: Vec<String> = kept.iter().map(|t| quote(t)).collect();
    let query = quoted.join(" | ");
    let rows = pg.query(
        "SELECT l.id, l.task_id, l.strategy_description, l.normalised_strategy, l.rca_summary,
                l.failure_type, l.source_agent, l.is_active, l.created_us, c.rank
         FROM (SELECT seq,
                      -(SELECT sum(k.w) FROM unnest($2::text[], $3::float8[]) AS k(q, w)
                        WHERE terms @@ k.q::tsquery) AS rank
               FROM lessons WHERE terms @@ $1::text::tsquery AND project = $7
               ORDER BY rank, seq LIMIT $4) AS c
         JOIN lessons l ON l.seq = c.seq
         WHERE l.task_key <> $5 AND l.is_active
         ORDER BY c.rank, l.seq LIMIT $6",
        &[
            &query,
            &quoted,
            &weights,
            &(RELATED_CANDIDATES as i64),
            &key.as_str(),
            &(limit.min(i64::MAX as usize) as i64),
            &project,
        ],
    )?;
    rows.iter()
        .map(|r| Ok((lesson_from_raw(RawLesson::read(r)?)?, super::get(r, 9)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lessons::search_terms;
    use crate::store::lessons::{self as store_lessons, Import};
    use crate::store::pg::testing::fresh;
    use crate::store::{Backend, Db};

    fn add(db: &Db<'_>, task: &str, strategy: &str, rca: &str, n: u128) -> Inserted {
        let l = NewLesson::validate(task, strategy, rca, "LOGIC_ERROR", "agent").expect("valid");
        let now = DateTime::from_timestamp_micros(1_700_000_000_000_000 + n as i64).unwrap();
        store_lessons::insert(
            db,
            &l,
            Uuid::from_u128(n),
            &search_terms(strategy, rca),
            now,
        )
        .expect("insert")
    }

    fn pg<'a>(db: &Db<'a>) -> &'a Pg {
        match db.backend() {
            Backend::Postgres(pg) => pg,
            Backend::Sqlite(_) => panic!("a PostgreSQL store was expected"),
        }
    }

    /// Terms and their document frequencies, by term.
    type Frequencies = Vec<(String, i64)>;

    /// `lesson_terms` as stored, and as counted from the lessons' `terms`.
    fn document_frequencies(db: &Db<'_>) -> (Frequencies, Frequencies) {
        let read = |sql: &'static str| -> Frequencies {
            let rows = pg(db).query(sql, &[]).unwrap();
            rows.iter().map(|r| (r.get(0), r.get(1))).collect()
        };
        (
            read("SELECT term, docs FROM lesson_terms ORDER BY term"),
            read(
                "SELECT t, count(*) FROM lessons, unnest(tsvector_to_array(terms)) AS t
                 GROUP BY t ORDER BY t",
            ),
        )
    }

    #[test]
    fn document_frequencies_follow_inserts_and_imports() {
        let Some(store) = fresh("pg_lesson_terms") else {
            return;
        };
        store
            .write(|db| -> Result<(), StoreError> {
                add(db, "a", "use the cache", "the cache was stale", 1);
                add(db, "b", "Use the CACHE", "stale", 2);
                // A duplicate (same task, same normalised strategy) adds nothing.
                assert!(matches!(
                    add(db, "A", "use the cache!", "other words", 3),
                    Inserted::Exists(_)
                ));
                let l = NewLesson::validate("c", "pin the compiler", "drift", "UNKNOWN", "x")
                    .expect("valid");
                let created = DateTime::from_timestamp_micros(5).unwrap();
                let id = Uuid::from_u128(4);
                assert_eq!(
                    store_lessons::import(db, &l, id, false, created)?,
                    Import::Added
                );
                assert_eq!(
                    store_lessons::import(db, &l, id, true, created)?,
                    Import::Skipped
                );
                let (stored, counted) = document_frequencies(db);
                assert_eq!(stored, counted);
                let docs = |t: &str| stored.iter().find(|(s, _)| s == t).map(|(_, n)| *n);
                assert_eq!(docs("cache"), Some(2));
                assert_eq!(docs("stale"), Some(2));
                assert_eq!(docs("compiler"), Some(1));
                assert_eq!(docs("other"), None);
                let imported = store_lessons::get(db, id)?.expect("imported");
                assert!(!imported.is_active);
                assert_eq!(imported.created_at, created);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn query_syntax_in_terms_is_only_text() {
        let Some(store) = fresh("pg_lesson_query_syntax") else {
            return;
        };
        store
            .write(|db| -> Result<(), StoreError> {
                add(db, "a", "don't retry", "x", 1);
                add(db, "b", "xylophone tuning", "y", 2);
                add(db, "c", "back\\slash | pipe", "z", 3);
                let key = TaskKey::of("mine");
                let found = |terms: &[&str]| -> Vec<String> {
                    let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
                    store_lessons::related(db, &key, &terms, 10)
                        .unwrap()
                        .into_iter()
                        .map(|(l, _)| l.task_id)
                        .collect()
                };
                assert_eq!(found(&["don't"]), ["a"]);
                assert!(found(&["x:*", "!xylophone", "xylophone & tuning"]).is_empty());
                assert!(found(&["'", "\\", "(", "''"]).is_empty());
                let c = search_terms("back\\slash | pipe", "z");
                let terms: Vec<&str> = c.split(' ').collect();
                assert_eq!(found(&terms), ["c"], "{terms:?}");
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn rarer_terms_rank_first_and_scores_are_negated() {
        let Some(store) = fresh("pg_lesson_rank") else {
            return;
        };
        store
            .write(|db| -> Result<(), StoreError> {
                for n in 0..5u128 {
                    add(
                        db,
                        &format!("common-{n}"),
                        &format!("retry plan {n}"),
                        "x",
                        n,
                    );
                }
                add(db, "rare", "zookeeper quorum", "x", 10);
                add(db, "both", "zookeeper retry", "x", 11);
                let terms: Vec<String> = ["retry", "zookeeper"].map(String::from).into();
                let got = store_lessons::related(db, &TaskKey::of("mine"), &terms, 3)?;
                let tasks: Vec<&str> = got.iter().map(|(l, _)| l.task_id.as_str()).collect();
                // Both terms, then the rare term alone, then the oldest common one.
                assert_eq!(tasks, ["both", "rare", "common-0"]);
                assert!(got.iter().all(|(_, r)| *r < 0.0), "{got:?}");
                assert!(got[0].1 < got[1].1 && got[1].1 < got[2].1, "{got:?}");
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn text_with_nul_is_refused_and_nothing_is_kept() {
        let Some(store) = fresh("pg_lesson_nul") else {
            return;
        };
        let l = NewLesson::validate("t", "a\u{0}b", "why", "UNKNOWN", "x").expect("valid");
        let now = DateTime::from_timestamp_micros(0).unwrap();
        let r = store.write(|db| store_lessons::insert(db, &l, Uuid::from_u128(1), "a b", now));
        assert!(matches!(r, Err(StoreError::Postgres(_))), "{r:?}");
        let left = store
            .read(|db| store_lessons::list(db, None, true))
            .unwrap();
        assert!(left.is_empty());
    }

    #[test]
    fn terms_become_quoted_lexemes_only() {
        let quoted: Vec<String> = ["don't", "a\\b", "x:*", "|"].map(quote).into();
        assert_eq!(quoted, ["'don''t'", "'a\\\\b'", "'x:*'", "'|'"]);
        let long = format!("{} b", "é".repeat(1024));
        assert_eq!(lexemes(&long), ["b"], "a 2,048-byte term is left out");
        assert_eq!(lexemes(" a  b a\tc "), ["a", "b", "c"]);
    }
}

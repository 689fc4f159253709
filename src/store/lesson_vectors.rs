//! Lessons' sentence-embedding vectors (issue 15): stored beside each lesson, with the model
//! that produced them, so that a blacklist check embeds only the proposal.
//!
//! A vector is `dimension` little-endian `f32`s in the `embedding` BLOB of its lesson row,
//! with `embedding_model` (the model's id, e.g. `all-MiniLM-L6-v2`) and `embedding_dim`.
//! `embedding_rev` orders the moments vectors were set (1, 2, 3, … over the whole table), so
//! that an in-memory index catches up with [`vectors_since`] instead of reading every vector
//! again. A lesson logged without a model, or under another model, has no vector for the
//! current one until [`set_vector`] gives it one (the server's back-fill).

use rusqlite::{OptionalExtension, params};

use super::{Db, StoreError};
use super::{pg, sqlite_or};

/// Migration 12: the vector columns, and the index that finds vectors set since a revision.
pub const MIGRATION_VECTORS: &str = "
ALTER TABLE lessons ADD COLUMN embedding BLOB;
ALTER TABLE lessons ADD COLUMN embedding_model TEXT;
ALTER TABLE lessons ADD COLUMN embedding_dim INTEGER;
ALTER TABLE lessons ADD COLUMN embedding_rev INTEGER;
CREATE INDEX lessons_embedding_rev ON lessons (embedding_rev) WHERE embedding_rev IS NOT NULL;
";

/// The largest dimension accepted (BERT-large has 1,024; this leaves room for larger models).
pub const MAX_DIMENSION: usize = 8192;

/// Encodes a vector as its stored BLOB (little-endian `f32`s).
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a stored BLOB of `dimension` `f32`s.
///
/// # Errors
/// [`StoreError::Corrupt`] when the length does not match `dimension`, the dimension is out of
/// 1..=[`MAX_DIMENSION`], or a component is not finite.
pub fn decode(blob: &[u8], dimension: i64) -> Result<Vec<f32>, StoreError> {
    let dim = usize::try_from(dimension)
        .ok()
        .filter(|d| (1..=MAX_DIMENSION).contains(d))
        .ok_or_else(|| StoreError::Corrupt(format!("lesson vector dimension {dimension}")))?;
    if blob.len() != dim * 4 {
        return Err(StoreError::Corrupt(format!(
            "lesson vector of {} bytes for dimension {dim}",
            blob.len()
        )));
    }
    let v: Vec<f32> = blob
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if v.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Corrupt(
            "lesson vector with a non-finite component".into(),
        ));
    }
    Ok(v)
}

/// Stores `vector` as lesson `seq`'s vector under `model`, replacing any other, with the next
/// revision. Does nothing when the lesson is gone. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn set_vector(db: &Db<'_>, seq: i64, model: &str, vector: &[f32]) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::lesson_vectors::set_vector(pg, seq, model, vector));
    conn.prepare_cached(&format!("{SET_VECTOR} WHERE seq = ?1"))?
        .execute(params![seq, encode(vector), model, vector.len() as i64])?;
    Ok(())
}

/// [`set_vector`] for the lesson with this id (as [`super::lessons::insert`] returns it).
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn set_vector_of(
    db: &Db<'_>,
    id: uuid::Uuid,
    model: &str,
    vector: &[f32],
) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::lesson_vectors::set_vector_of(pg, id, model, vector));
    conn.prepare_cached(&format!("{SET_VECTOR} WHERE id = ?1"))?
        .execute(params![
            id.to_string(),
            encode(vector),
            model,
            vector.len() as i64
        ])?;
    Ok(())
}

/// The next revision comes from the partial index `lessons_embedding_rev` (one B-tree
/// descent): without its `IS NOT NULL`, SQLite cannot use that index for `max()` and scans
/// every lesson, which made storing 10⁵ vectors quadratic.
const SET_VECTOR: &str = "UPDATE lessons SET embedding = ?2, embedding_model = ?3, \
     embedding_dim = ?4, \
     embedding_rev = (SELECT coalesce(max(embedding_rev), 0) + 1 FROM lessons \
                      WHERE embedding_rev IS NOT NULL)";

/// Up to `limit` lessons (active or not) without a vector of `model`, oldest first: their row
/// keys and strategies as logged.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn without_vector(
    db: &Db<'_>,
    model: &str,
    limit: usize,
) -> Result<Vec<(i64, String)>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lesson_vectors::without_vector(pg, model, limit));
    let mut stmt = conn.prepare_cached(
        "SELECT seq, strategy_description FROM lessons
         WHERE embedding_model IS NULL OR embedding_model <> ?1 ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![model, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Lesson `seq`'s vector under `model`, if it has one.
///
/// # Errors
/// [`StoreError`] on SQL failure or a damaged vector.
pub fn vector(db: &Db<'_>, seq: i64, model: &str) -> Result<Option<Vec<f32>>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lesson_vectors::vector(pg, seq, model));
    let row: Option<(Vec<u8>, i64)> = conn
        .prepare_cached(
            "SELECT embedding, embedding_dim FROM lessons
             WHERE seq = ?1 AND embedding_model = ?2 AND embedding IS NOT NULL",
        )?
        .query_row(params![seq, model], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    row.map(|(blob, dim)| decode(&blob, dim)).transpose()
}

/// A vector set after some revision, as [`vectors_since`] returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRow {
    /// The lesson's row key.
    pub seq: i64,
    /// The lesson's task key (the folded task id).
    pub task_key: String,
    /// When the vector was set, in the table's revision order.
    pub rev: i64,
    /// The vector.
    pub vector: Vec<f32>,
}

/// The vectors of `model` set after revision `rev` (all of them for `rev = 0`), in revision
/// order, at most `limit`. Lessons active or not: the caller filters on the lessons it keeps.
///
/// # Errors
/// [`StoreError`] on SQL failure or a damaged vector.
pub fn vectors_since(
    db: &Db<'_>,
    model: &str,
    rev: i64,
    limit: usize,
) -> Result<Vec<VectorRow>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::lesson_vectors::vectors_since(pg, model, rev, limit));
    let mut stmt = conn.prepare_cached(
        "SELECT seq, task_key, embedding_rev, embedding, embedding_dim FROM lessons
         WHERE embedding_rev > ?1 AND embedding_model = ?2 AND embedding IS NOT NULL
         ORDER BY embedding_rev LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![rev, model, limit as i64], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Vec<u8>>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    rows.map(|r| {
        let (seq, task_key, rev, blob, dim) = r?;
        Ok(VectorRow {
            seq,
            task_key,
            rev,
            vector: decode(&blob, dim)?,
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lessons::{NewLesson, TaskKey};
    use crate::store::lessons;
    use crate::store::pg::testing::both_backends;
    use crate::store::{Store, StoreError};
    use uuid::Uuid;

    fn vectors_round_trip_and_revisions_grow(store: &Store) {
        let (one, two) = store
            .write(|db| -> Result<(i64, i64), StoreError> {
                for (i, s) in ["mock the db", "raise the timeout"].iter().enumerate() {
                    let l = NewLesson::validate("t", s, "r", "UNKNOWN", "a").expect("valid");
                    let now = chrono::DateTime::from_timestamp_micros(0).unwrap();
                    lessons::insert(db, &l, Uuid::from_u128(i as u128 + 1), s, now)?;
                }
                let seqs = lessons::active_strategies(db, &TaskKey::of("t"))?;
                Ok((seqs[0].seq, seqs[1].seq))
            })
            .unwrap();
        store
            .write(|db| -> Result<(), StoreError> {
                assert_eq!(without_vector(db, "m", 10)?.len(), 2);
                set_vector(db, one, "m", &[0.6, 0.8])?;
                assert_eq!(
                    without_vector(db, "m", 10)?,
                    vec![(two, "raise the timeout".into())]
                );
                set_vector_of(db, Uuid::from_u128(2), "m", &[1.0, 0.0])?;
                // Re-embedding lesson 1 moves it after lesson 2 in revision order.
                set_vector(db, one, "m", &[0.0, 1.0])?;
                let all = vectors_since(db, "m", 0, 10)?;
                let order: Vec<(i64, i64)> = all.iter().map(|r| (r.seq, r.rev)).collect();
                assert_eq!(order, [(two, 2), (one, 3)]);
                assert_eq!(all[1].vector, [0.0, 1.0]);
                assert_eq!(all[1].task_key, "t");
                assert_eq!(vectors_since(db, "m", 2, 10)?.len(), 1);
                assert_eq!(vectors_since(db, "m", 0, 1)?.len(), 1);
                assert!(vectors_since(db, "other", 0, 10)?.is_empty());
                assert_eq!(vector(db, two, "m")?, Some(vec![1.0, 0.0]));
                assert_eq!(vector(db, two, "other")?, None);
                // Another model's vectors do not count as this model's.
                assert_eq!(without_vector(db, "other", 10)?.len(), 2);
                assert_eq!(without_vector(db, "other", 1)?.len(), 1);
                // The blacklist check reads the same vector with the lesson's strategy.
                let active = lessons::active_strategies(db, &TaskKey::of("t"))?;
                assert_eq!(active[0].vector("m")?, Some(vec![0.0, 1.0]));
                assert_eq!(active[0].vector("other")?, None);
                // A lesson that is gone: nothing happens.
                set_vector(db, two + 100, "m", &[1.0])?;
                assert_eq!(vectors_since(db, "m", 0, 10)?.len(), 2);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        vectors_round_trip_and_revisions_grow,
        vectors_on_sqlite,
        vectors_on_postgres
    );

    #[test]
    fn damaged_vectors_are_refused() {
        assert!(decode(&[0; 7], 2).is_err());
        assert!(decode(&[0; 8], 0).is_err());
        assert!(decode(&f32::NAN.to_le_bytes(), 1).is_err());
        assert_eq!(decode(&encode(&[0.25, -1.5]), 2).unwrap(), [0.25, -1.5]);
    }
}

//! Lessons' sentence-embedding vectors (issue 15): stored beside each lesson, with the model
//! that produced them, so that a blacklist check embeds only the proposal.
//!
//! A vector is `dimension` little-endian `f32`s in the `embedding` BLOB of its lesson row,
//! with `embedding_model` (the model's id, e.g. `all-MiniLM-L6-v2`) and `embedding_dim`.
//! `embedding_rev` orders the moments vectors were set (1, 2, 3, … over the whole table), so
//! that an in-memory index catches up with [`vectors_since`] instead of reading every vector
//! again. A lesson logged without a model, or under another model, has no vector for the
//! current one until [`set_vector`] gives it one (the server's back-fill).

use super::{Backend, pg, sqlite};
pub use crate::store::rows::lesson_vectors::{MAX_DIMENSION, VectorRow, decode, encode};
use crate::store::{Db, StoreError};

/// Stores `vector` as lesson `seq`'s vector under `model`, replacing any other, with the next
/// revision. Does nothing when the lesson is gone. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn set_vector(db: &Db<'_>, seq: i64, model: &str, vector: &[f32]) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lesson_vectors::set_vector(conn, seq, model, vector),
        Backend::Postgres(pg) => pg::lesson_vectors::set_vector(pg, seq, model, vector),
    }
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
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lesson_vectors::set_vector_of(conn, id, model, vector),
        Backend::Postgres(pg) => pg::lesson_vectors::set_vector_of(pg, id, model, vector),
    }
}

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
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lesson_vectors::without_vector(conn, model, limit),
        Backend::Postgres(pg) => pg::lesson_vectors::without_vector(pg, model, limit),
    }
}

/// Lesson `seq`'s vector under `model`, if it has one.
///
/// # Errors
/// [`StoreError`] on SQL failure or a damaged vector.
pub fn vector(db: &Db<'_>, seq: i64, model: &str) -> Result<Option<Vec<f32>>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::lesson_vectors::vector(conn, seq, model),
        Backend::Postgres(pg) => pg::lesson_vectors::vector(pg, seq, model),
    }
}

/// The vectors of `model` of this project's lessons ([`Db::project`]) set after revision `rev`
/// (all of them for `rev = 0`), in revision order, at most `limit`. Lessons active or not: the
/// caller filters on the lessons it keeps. A lesson moved into the project gets a new revision
/// ([`crate::store::projects::move_rows`]).
///
/// # Errors
/// [`StoreError`] on SQL failure or a damaged vector.
pub fn vectors_since(
    db: &Db<'_>,
    model: &str,
    rev: i64,
    limit: usize,
) -> Result<Vec<VectorRow>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => {
            sqlite::lesson_vectors::vectors_since(conn, db.project(), model, rev, limit)
        }
        Backend::Postgres(pg) => {
            pg::lesson_vectors::vectors_since(pg, db.project(), model, rev, limit)
        }
    }
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

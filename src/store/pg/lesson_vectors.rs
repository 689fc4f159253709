//! PostgreSQL twin of `store/lesson_vectors.rs`: the same little-endian `f32` bytes in the
//! `embedding` BYTEA of the lesson row, decoded by the same
//! [`crate::store::lesson_vectors::decode`].

use uuid::Uuid;

use super::{Pg, get};
use crate::store::StoreError;
use crate::store::rows::lesson_vectors::{VectorRow, decode, encode};

/// The statement storing a vector (`$2` blob, `$3` model, `$4` dimension) in the lesson
/// `$where` selects by `$1`.
macro_rules! set_vector_sql {
    ($where:literal) => {
        concat!(
            "UPDATE lessons SET embedding = $2, embedding_model = $3, embedding_dim = $4,
                 embedding_rev = (SELECT coalesce(max(embedding_rev), 0) + 1 FROM lessons
                                  WHERE embedding_rev IS NOT NULL) ",
            $where
        )
    };
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::set_vector`]. The next revision is
/// `max(embedding_rev) + 1`, read under the write lock every write holds, so revisions grow
/// in commit order across servers.
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn set_vector(pg: &Pg, seq: i64, model: &str, vector: &[f32]) -> Result<(), StoreError> {
    pg.execute(
        set_vector_sql!("WHERE seq = $1"),
        &[&seq, &encode(vector), &model, &(vector.len() as i64)],
    )?;
    Ok(())
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::set_vector_of`].
///
/// # Errors
/// As [`set_vector`].
pub fn set_vector_of(pg: &Pg, id: Uuid, model: &str, vector: &[f32]) -> Result<(), StoreError> {
    pg.execute(
        set_vector_sql!("WHERE id = $1"),
        &[
            &id.to_string(),
            &encode(vector),
            &model,
            &(vector.len() as i64),
        ],
    )?;
    Ok(())
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::without_vector`].
///
/// # Errors
/// As [`set_vector`].
pub fn without_vector(
    pg: &Pg,
    model: &str,
    limit: usize,
) -> Result<Vec<(i64, String)>, StoreError> {
    let rows = pg.query(
        "SELECT seq, strategy_description FROM lessons
         WHERE embedding_model IS NULL OR embedding_model <> $1 ORDER BY seq LIMIT $2",
        &[&model, &(limit.min(i64::MAX as usize) as i64)],
    )?;
    rows.iter().map(super::columns).collect()
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::vector`].
///
/// # Errors
/// As [`set_vector`], or [`StoreError::Corrupt`] for a damaged vector.
pub fn vector(pg: &Pg, seq: i64, model: &str) -> Result<Option<Vec<f32>>, StoreError> {
    let row = pg.query_opt(
        "SELECT embedding, embedding_dim FROM lessons
         WHERE seq = $1 AND embedding_model = $2 AND embedding IS NOT NULL",
        &[&seq, &model],
    )?;
    row.map(|r| {
        let blob: Vec<u8> = get(&r, 0)?;
        let dim: Option<i64> = get(&r, 1)?;
        decode(&blob, dim.unwrap_or(0))
    })
    .transpose()
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::vectors_since`].
///
/// # Errors
/// As [`vector`].
pub fn vectors_since(
    pg: &Pg,
    project: &str,
    model: &str,
    rev: i64,
    limit: usize,
) -> Result<Vec<VectorRow>, StoreError> {
    let rows = pg.query(
        "SELECT seq, task_key, embedding_rev, embedding, embedding_dim FROM lessons
         WHERE embedding_rev > $1 AND embedding_model = $2 AND embedding IS NOT NULL
               AND project = $4
         ORDER BY embedding_rev LIMIT $3",
        &[
            &rev,
            &model,
            &(limit.min(i64::MAX as usize) as i64),
            &project,
        ],
    )?;
    rows.iter()
        .map(|r| {
            let blob: Vec<u8> = get(r, 3)?;
            let dim: Option<i64> = get(r, 4)?;
            Ok(VectorRow {
                seq: get(r, 0)?,
                task_key: get(r, 1)?,
                rev: get(r, 2)?,
                vector: decode(&blob, dim.unwrap_or(0))?,
            })
        })
        .collect()
}

//! The SQLite side of [`crate::store::lesson_vectors`]: its SQL, the family's migrations and their
//! data steps.

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::StoreError;
use crate::store::rows::lesson_vectors::{VectorRow, decode, encode};

/// Migration 12: the vector columns, and the index that finds vectors set since a revision.
pub const MIGRATION_VECTORS: &str = "
ALTER TABLE lessons ADD COLUMN embedding BLOB;
ALTER TABLE lessons ADD COLUMN embedding_model TEXT;
ALTER TABLE lessons ADD COLUMN embedding_dim INTEGER;
ALTER TABLE lessons ADD COLUMN embedding_rev INTEGER;
CREATE INDEX lessons_embedding_rev ON lessons (embedding_rev) WHERE embedding_rev IS NOT NULL;
";

/// [`crate::store::lesson_vectors::set_vector`] on SQLite.
pub(crate) fn set_vector(
    conn: &Connection,
    seq: i64,
    model: &str,
    vector: &[f32],
) -> Result<(), StoreError> {
    conn.prepare_cached(&format!("{SET_VECTOR} WHERE seq = ?1"))?
        .execute(params![seq, encode(vector), model, vector.len() as i64])?;
    Ok(())
}

/// [`crate::store::lesson_vectors::set_vector_of`] on SQLite.
pub(crate) fn set_vector_of(
    conn: &Connection,
    id: uuid::Uuid,
    model: &str,
    vector: &[f32],
) -> Result<(), StoreError> {
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

/// [`crate::store::lesson_vectors::without_vector`] on SQLite.
pub(crate) fn without_vector(
    conn: &Connection,
    model: &str,
    limit: usize,
) -> Result<Vec<(i64, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, strategy_description FROM lessons
         WHERE embedding_model IS NULL OR embedding_model <> ?1 ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![model, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`crate::store::lesson_vectors::vector`] on SQLite.
pub(crate) fn vector(
    conn: &Connection,
    seq: i64,
    model: &str,
) -> Result<Option<Vec<f32>>, StoreError> {
    let row: Option<(Vec<u8>, i64)> = conn
        .prepare_cached(
            "SELECT embedding, embedding_dim FROM lessons
             WHERE seq = ?1 AND embedding_model = ?2 AND embedding IS NOT NULL",
        )?
        .query_row(params![seq, model], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    row.map(|(blob, dim)| decode(&blob, dim)).transpose()
}

/// [`crate::store::lesson_vectors::vectors_since`] on SQLite.
pub(crate) fn vectors_since(
    conn: &Connection,
    project: &str,
    model: &str,
    rev: i64,
    limit: usize,
) -> Result<Vec<VectorRow>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, task_key, embedding_rev, embedding, embedding_dim FROM lessons
         WHERE embedding_rev > ?1 AND embedding_model = ?2 AND embedding IS NOT NULL
               AND project = ?4
         ORDER BY embedding_rev LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![rev, model, limit as i64, project], |r| {
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

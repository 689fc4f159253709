//! PostgreSQL twin of `store/lesson_vectors.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::store::lesson_vectors::*;
use crate::store::{Db, StoreError};

/// PostgreSQL twin of [`crate::store::lesson_vectors::set_vector`].
///
/// # Errors
/// As the SQLite function.
pub fn set_vector(pg: &Pg, seq: i64, model: &str, vector: &[f32]) -> Result<(), StoreError> {
    Err(super::unported("lesson_vectors::set_vector"))
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::set_vector_of`].
///
/// # Errors
/// As the SQLite function.
pub fn set_vector_of(
    pg: &Pg,
    id: uuid::Uuid,
    model: &str,
    vector: &[f32],
) -> Result<(), StoreError> {
    Err(super::unported("lesson_vectors::set_vector_of"))
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::without_vector`].
///
/// # Errors
/// As the SQLite function.
pub fn without_vector(
    pg: &Pg,
    model: &str,
    limit: usize,
) -> Result<Vec<(i64, String)>, StoreError> {
    Err(super::unported("lesson_vectors::without_vector"))
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::vector`].
///
/// # Errors
/// As the SQLite function.
pub fn vector(pg: &Pg, seq: i64, model: &str) -> Result<Option<Vec<f32>>, StoreError> {
    Err(super::unported("lesson_vectors::vector"))
}

/// PostgreSQL twin of [`crate::store::lesson_vectors::vectors_since`].
///
/// # Errors
/// As the SQLite function.
pub fn vectors_since(
    pg: &Pg,
    model: &str,
    rev: i64,
    limit: usize,
) -> Result<Vec<VectorRow>, StoreError> {
    Err(super::unported("lesson_vectors::vectors_since"))
}

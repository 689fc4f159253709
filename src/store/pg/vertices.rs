//! PostgreSQL twin of `store/vertices.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::delta_sc::{
    E1Index, EmbedderKind, EmbedderRef, Fingerprint, FingerprintBuilder, Hit, NearbyVertex,
    StoredContext, StoredVertex, SurpriseNormalizer, TOKEN_DIM, VertexCache, VertexWrite,
    surprise::HISTOGRAM_BINS,
};
use crate::service::vocab::{EmbedderId, NUM_EMBEDDERS};
use crate::store::vertices::*;
use crate::store::{Db, StoreError, to_us};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// PostgreSQL twin of [`crate::store::vertices::refresh`].
///
/// # Errors
/// As the SQLite function.
pub fn refresh(pg: &Pg, cache: &mut VertexCache) -> Result<(), StoreError> {
    Err(super::unported("vertices::refresh"))
}

/// PostgreSQL twin of [`crate::store::vertices::load_normalizer`].
///
/// # Errors
/// As the SQLite function.
pub fn load_normalizer(pg: &Pg) -> Result<SurpriseNormalizer, StoreError> {
    Err(super::unported("vertices::load_normalizer"))
}

/// PostgreSQL twin of [`crate::store::vertices::save_normalizer`].
///
/// # Errors
/// As the SQLite function.
pub fn save_normalizer(pg: &Pg, n: &SurpriseNormalizer) -> Result<(), StoreError> {
    Err(super::unported("vertices::save_normalizer"))
}

/// PostgreSQL twin of [`crate::store::vertices::load_vertex`].
///
/// # Errors
/// As the SQLite function.
pub fn load_vertex(pg: &Pg, id: Uuid) -> Result<Option<StoredVertex>, StoreError> {
    Err(super::unported("vertices::load_vertex"))
}

/// PostgreSQL twin of [`crate::store::vertices::load_current`].
///
/// # Errors
/// As the SQLite function.
pub fn load_current(pg: &Pg, id: Uuid) -> Result<Option<Fingerprint>, StoreError> {
    Err(super::unported("vertices::load_current"))
}

/// PostgreSQL twin of [`crate::store::vertices::persist`].
///
/// # Errors
/// As the SQLite function.
pub fn persist(pg: &Pg, write: &VertexWrite<'_>, now: DateTime<Utc>) -> Result<i64, StoreError> {
    Err(super::unported("vertices::persist"))
}

/// PostgreSQL twin of [`crate::store::vertices::put_current`].
///
/// # Errors
/// As the SQLite function.
pub fn put_current(
    pg: &Pg,
    id: Uuid,
    fp: &Fingerprint,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    Err(super::unported("vertices::put_current"))
}

/// PostgreSQL twin of [`crate::store::vertices::count`].
///
/// # Errors
/// As the SQLite function.
pub fn count(pg: &Pg) -> Result<usize, StoreError> {
    Err(super::unported("vertices::count"))
}

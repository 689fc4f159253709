//! PostgreSQL twin of `store/directives.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::lessons::TaskKey;
use crate::store::directives::*;
use crate::store::{Db, StoreError, from_us, to_us};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// PostgreSQL twin of [`crate::store::directives::insert`].
///
/// # Errors
/// As the SQLite function.
pub fn insert(pg: &Pg, d: &Directive) -> Result<(), StoreError> {
    Err(super::unported("directives::insert"))
}

/// PostgreSQL twin of [`crate::store::directives::import`].
///
/// # Errors
/// As the SQLite function.
pub fn import(pg: &Pg, d: &Directive) -> Result<bool, StoreError> {
    Err(super::unported("directives::import"))
}

/// PostgreSQL twin of [`crate::store::directives::list`].
///
/// # Errors
/// As the SQLite function.
pub fn list(
    pg: &Pg,
    key: Option<&TaskKey>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Directive>, usize), StoreError> {
    Err(super::unported("directives::list"))
}

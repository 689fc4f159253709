//! PostgreSQL twin of `store/lessons.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::lessons::{
    Activation, FailureType, Lesson, NewLesson, TaskKey, activation, search_terms, word_spans,
};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::lessons::*;
use crate::store::{Db, StoreError, from_us, to_us};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// PostgreSQL twin of [`crate::store::lessons::insert`].
///
/// # Errors
/// As the SQLite function.
pub fn insert(
    pg: &Pg,
    l: &NewLesson,
    id: Uuid,
    search_terms: &str,
    now: DateTime<Utc>,
) -> Result<Inserted, StoreError> {
    Err(super::unported("lessons::insert"))
}

/// PostgreSQL twin of [`crate::store::lessons::find_by_strategy`].
///
/// # Errors
/// As the SQLite function.
pub fn find_by_strategy(
    pg: &Pg,
    key: &TaskKey,
    normalised_strategy: &str,
) -> Result<Option<Lesson>, StoreError> {
    Err(super::unported("lessons::find_by_strategy"))
}

/// PostgreSQL twin of [`crate::store::lessons::get`].
///
/// # Errors
/// As the SQLite function.
pub fn get(pg: &Pg, id: Uuid) -> Result<Option<Lesson>, StoreError> {
    Err(super::unported("lessons::get"))
}

/// PostgreSQL twin of [`crate::store::lessons::active_strategies`].
///
/// # Errors
/// As the SQLite function.
pub fn active_strategies(pg: &Pg, key: &TaskKey) -> Result<Vec<ActiveStrategy>, StoreError> {
    Err(super::unported("lessons::active_strategies"))
}

/// PostgreSQL twin of [`crate::store::lessons::get_by_seq`].
///
/// # Errors
/// As the SQLite function.
pub fn get_by_seq(pg: &Pg, seq: i64) -> Result<Option<Lesson>, StoreError> {
    Err(super::unported("lessons::get_by_seq"))
}

/// PostgreSQL twin of [`crate::store::lessons::set_active`].
///
/// # Errors
/// As the SQLite function.
pub fn set_active(pg: &Pg, id: Uuid, active: bool) -> Result<Option<Lesson>, StoreError> {
    Err(super::unported("lessons::set_active"))
}

/// PostgreSQL twin of [`crate::store::lessons::list`].
///
/// # Errors
/// As the SQLite function.
pub fn list(
    pg: &Pg,
    key: Option<&TaskKey>,
    include_inactive: bool,
) -> Result<Vec<Lesson>, StoreError> {
    Err(super::unported("lessons::list"))
}

/// PostgreSQL twin of [`crate::store::lessons::related`].
///
/// # Errors
/// As the SQLite function.
pub fn related(
    pg: &Pg,
    key: &TaskKey,
    terms: &[String],
    limit: usize,
) -> Result<Vec<(Lesson, f64)>, StoreError> {
    Err(super::unported("lessons::related"))
}

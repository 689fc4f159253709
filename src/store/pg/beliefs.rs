//! PostgreSQL twin of `store/beliefs.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::epistemic::{
    ActionType, Belief, BeliefEvent, BeliefStatus, UncertaintyType, WorkspaceSummary,
    binary_entropy,
};
use crate::store::beliefs::*;
use crate::store::{Db, StoreError, from_us, in_range, to_us};
use uuid::Uuid;

/// PostgreSQL twin of [`crate::store::beliefs::find`].
///
/// # Errors
/// As the SQLite function.
pub fn find(pg: &Pg, normalised_target: &str) -> Result<Option<Belief>, StoreError> {
    Err(super::unported("beliefs::find"))
}

/// PostgreSQL twin of [`crate::store::beliefs::put_row`].
///
/// # Errors
/// As the SQLite function.
pub fn put_row(pg: &Pg, b: &Belief) -> Result<i64, StoreError> {
    Err(super::unported("beliefs::put_row"))
}

/// PostgreSQL twin of [`crate::store::beliefs::append_event`].
///
/// # Errors
/// As the SQLite function.
pub fn append_event(pg: &Pg, seq: i64, event: &BeliefEvent) -> Result<(), StoreError> {
    Err(super::unported("beliefs::append_event"))
}

/// PostgreSQL twin of [`crate::store::beliefs::all`].
///
/// # Errors
/// As the SQLite function.
pub fn all(pg: &Pg) -> Result<Vec<Belief>, StoreError> {
    Err(super::unported("beliefs::all"))
}

/// PostgreSQL twin of [`crate::store::beliefs::summary`].
///
/// # Errors
/// As the SQLite function.
pub fn summary(pg: &Pg) -> Result<WorkspaceSummary, StoreError> {
    Err(super::unported("beliefs::summary"))
}

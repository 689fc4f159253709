//! PostgreSQL twin of `store/meta.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::meta::{Event, EventType, MetaState, Prediction, ResetScope, WINDOW, Window};
use crate::service::vocab::{Domain, Lambdas, NUM_EMBEDDERS};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::meta::*;
use crate::store::{Db, StoreError, count as stored_count, from_us, in_range, to_us};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// PostgreSQL twin of [`crate::store::meta::load`].
///
/// # Errors
/// As the SQLite function.
pub fn load(pg: &Pg) -> Result<MetaState, StoreError> {
    Err(super::unported("meta::load"))
}

/// PostgreSQL twin of [`crate::store::meta::save`].
///
/// # Errors
/// As the SQLite function.
pub fn save(pg: &Pg, m: &MetaState, windows: Windows) -> Result<(), StoreError> {
    Err(super::unported("meta::save"))
}

/// PostgreSQL twin of [`crate::store::meta::insert_events`].
///
/// # Errors
/// As the SQLite function.
pub fn insert_events(pg: &Pg, events: &[Event]) -> Result<(), StoreError> {
    Err(super::unported("meta::insert_events"))
}

/// PostgreSQL twin of [`crate::store::meta::import_events`].
///
/// # Errors
/// As the SQLite function.
pub fn import_events(pg: &Pg, events: &[Event]) -> Result<usize, StoreError> {
    Err(super::unported("meta::import_events"))
}

/// PostgreSQL twin of [`crate::store::meta::query_events`].
///
/// # Errors
/// As the SQLite function.
pub fn query_events(pg: &Pg, q: &EventQuery) -> Result<(Vec<Event>, usize), StoreError> {
    Err(super::unported("meta::query_events"))
}

/// PostgreSQL twin of [`crate::store::meta::count_events_between`].
///
/// # Errors
/// As the SQLite function.
pub fn count_events_between(
    pg: &Pg,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Result<usize, StoreError> {
    Err(super::unported("meta::count_events_between"))
}

/// PostgreSQL twin of [`crate::store::meta::delete_events_before`].
///
/// # Errors
/// As the SQLite function.
pub fn delete_events_before(pg: &Pg, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
    Err(super::unported("meta::delete_events_before"))
}

/// PostgreSQL twin of [`crate::store::meta::insert_prediction`].
///
/// # Errors
/// As the SQLite function.
pub fn insert_prediction(pg: &Pg, p: &Prediction, source: Option<Uuid>) -> Result<(), StoreError> {
    Err(super::unported("meta::insert_prediction"))
}

/// PostgreSQL twin of [`crate::store::meta::replay_window`].
///
/// # Errors
/// As the SQLite function.
pub fn replay_window(pg: &Pg, domain: Option<Domain>) -> Result<Vec<Prediction>, StoreError> {
    Err(super::unported("meta::replay_window"))
}

/// PostgreSQL twin of [`crate::store::meta::open_prediction`].
///
/// # Errors
/// As the SQLite function.
pub fn open_prediction(pg: &Pg, p: &OpenPrediction) -> Result<(), StoreError> {
    Err(super::unported("meta::open_prediction"))
}

/// PostgreSQL twin of [`crate::store::meta::close_prediction`].
///
/// # Errors
/// As the SQLite function.
pub fn close_prediction(
    pg: &Pg,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    Err(super::unported("meta::close_prediction"))
}

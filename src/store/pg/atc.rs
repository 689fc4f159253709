//! PostgreSQL twin of `store/atc.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::atc::bandit::ThompsonBandit;
use crate::service::atc::drift::DriftTracker;
use crate::service::atc::state::{AtcState, Observation, WINDOW_CAPACITY};
use crate::service::atc::thresholds::{THRESHOLD_COUNT, ThresholdName, ThresholdSet};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::atc::*;
use crate::store::{Db, StoreError, count as stored_count, from_us, in_range, to_us};
use std::collections::VecDeque;

/// PostgreSQL twin of [`crate::store::atc::insert_observations`].
///
/// # Errors
/// As the SQLite function.
pub fn insert_observations(pg: &Pg, observations: &[Observation]) -> Result<(), StoreError> {
    Err(super::unported("atc::insert_observations"))
}

/// PostgreSQL twin of [`crate::store::atc::save`].
///
/// # Errors
/// As the SQLite function.
pub fn save(pg: &Pg, s: &AtcState) -> Result<(), StoreError> {
    Err(super::unported("atc::save"))
}

/// PostgreSQL twin of [`crate::store::atc::load`].
///
/// # Errors
/// As the SQLite function.
pub fn load(pg: &Pg) -> Result<AtcState, StoreError> {
    Err(super::unported("atc::load"))
}

//! PostgreSQL twin of `store/admin.rs`.
#![allow(unused_imports, unused_variables)]
use super::Pg;
use crate::service::MetaLearningService;
use crate::store::admin::*;
use crate::store::open::{self, Found};
use crate::store::{BUSY_TIMEOUT, Db, DbPath, StoreError, from_us};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

/// PostgreSQL twin of [`crate::store::admin::stats`].
///
/// # Errors
/// As the SQLite function.
pub fn stats(pg: &Pg) -> Result<Stats, StoreError> {
    Err(super::unported("admin::stats"))
}

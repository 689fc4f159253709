//! The backend-neutral part of the admin family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use chrono::{DateTime, Utc};

/// Row counts and the time of the newest row, for `status`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    /// `PRAGMA user_version`.
    pub schema_version: i64,
    /// Lessons stored, active or not.
    pub lessons: u64,
    /// Of which active (blacklisting their strategy).
    pub active_lessons: u64,
    /// Beliefs in the workspace.
    pub beliefs: u64,
    /// Directive-history entries.
    pub directives: u64,
    /// Meta-learning events in the log.
    pub events: u64,
    /// Calibration observations kept (the per-embedder windows).
    pub observations: u64,
    /// Recorded predictions.
    pub predictions: u64,
    /// Vertices with a stored fingerprint.
    pub vertices: u64,
    /// Bytes the data takes when the backend says (PostgreSQL: the `meta_utl` tables with their
    /// indexes and TOAST); `None` on SQLite, whose size is its file's.
    pub bytes: Option<u64>,
    /// The newest time written by any tool (lesson, directive, belief change, event,
    /// prediction or vertex version); `None` on an empty database.
    pub last_activity: Option<DateTime<Utc>>,
}

//! The backend-neutral half of [`crate::store::projects`]: what a listing and a move report.

/// One project's rows (`console projects`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProjectCounts {
    /// The project's name ([`crate::project::UNASSIGNED`] for rows stored before projects).
    pub name: String,
    /// Lessons, active or not.
    pub lessons: u64,
    /// Active lessons (those that block).
    pub active_lessons: u64,
    /// Directive-history entries.
    pub directives: u64,
    /// Beliefs.
    pub beliefs: u64,
}

/// What [`crate::store::projects::move_rows`] moved, and what it left because the target
/// project already holds the same row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Moved {
    /// Lessons moved.
    pub lessons: u64,
    /// Lessons left in the source: the target already has a lesson of the same task with the
    /// same normalised strategy.
    pub lessons_left: u64,
    /// Recurrences moved: those of the lessons moved (a lesson left keeps its own).
    pub recurrences: u64,
    /// Blacklist checks (predictions) moved: those about the lessons moved. The source
    /// project's fitted temperatures stay (each project calibrates its own outcomes).
    pub checks: u64,
    /// Directive-history entries moved (all of them).
    pub directives: u64,
    /// Beliefs moved.
    pub beliefs: u64,
    /// Beliefs left in the source: the target already has a belief about the same target.
    pub beliefs_left: u64,
}

//! The backend-neutral half of [`crate::store::attempts`]: a recorded failed attempt.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A failed tool call the plugin's hook recorded (a command that exited non-zero, a failing
/// test run), kept as evidence beside the lessons of its project.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Attempt {
    /// Its id.
    pub id: Uuid,
    /// The Claude Code session it happened in.
    pub session_id: String,
    /// The tool (`Bash`, `Edit`, …).
    pub tool: String,
    /// What was run or changed: the command, or the file path (at most
    /// [`MAX_SUBJECT_CHARS`]; secrets redacted).
    pub subject: String,
    /// The exit status, when the tool reported one.
    pub exit_status: Option<i64>,
    /// The first lines of the error (at most [`MAX_ERROR_CHARS`]; secrets redacted).
    pub error_head: String,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// The lesson logged in the project after it, once linked.
    pub lesson_id: Option<Uuid>,
}

/// Longest stored subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 1_000;

/// Longest stored error head, in characters.
pub const MAX_ERROR_CHARS: usize = 1_500;

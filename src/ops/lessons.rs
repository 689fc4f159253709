//! Operations on lessons.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::service::lessons::{Activation, Lesson, activation};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::lessons as lesson_store;
use crate::store::{Db, StoreError};

/// What [`set_active`] did: the lesson as it was, the change, and the `OVERRIDE` entry written
/// to the directive history.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The lesson before the change.
    pub before: Lesson,
    /// The lesson after, whether `is_active` changed, and the note.
    pub change: Activation,
    /// The directive-history entry recording it.
    pub directive: Directive,
}

/// Lift (`active = false`) or restore (`true`) lesson `id` and record it in the directive
/// history as an `OVERRIDE` by `actor`, with the note of
/// [`crate::service::lessons::activation`] (which lesson, what happened, and
/// `rationale`). This is all of `set_lesson_active`'s effect, shared with the operator's
/// console; call inside a write transaction. `None` when there is no such lesson (nothing is
/// written).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn set_active(
    db: &Db<'_>,
    id: Uuid,
    active: bool,
    rationale: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Option<Recorded>, StoreError> {
    let Some(before) = lesson_store::set_active(db, id, active)? else {
        return Ok(None);
    };
    let change = activation(&before, active, rationale);
    let directive = Directive::new(
        Some(before.task_id.clone()),
        InterventionType::Override,
        change.note.clone(),
        actor,
        now,
    );
    directives::insert(db, &directive)?;
    Ok(Some(Recorded {
        before,
        change,
        directive,
    }))
}

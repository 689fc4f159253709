//! Operations on projects.

use chrono::{DateTime, Utc};

use crate::project::label;
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::projects::{self, Moved};
use crate::store::{Db, StoreError};

/// Move every lesson, directive and belief of project `from` to project `to`
/// ([`projects::move_rows`]; rows `to` already holds stay) and record it in `to`'s directive
/// history as an `OVERRIDE` by `actor`, saying how many rows moved and stayed. Nothing is
/// recorded when nothing moved. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn move_rows(
    db: &Db<'_>,
    from: &str,
    to: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Moved, StoreError> {
    let moved = projects::move_rows(db, from, to)?;
    if moved.lessons + moved.directives + moved.beliefs == 0 {
        return Ok(moved);
    }
    let mut note = format!(
        "moved from project {}: {} lessons, {} directives, {} beliefs",
        label(from),
        moved.lessons,
        moved.directives,
        moved.beliefs
    );
    if moved.recurrences > 0 {
        note.push_str(&format!(
            " ({} recurrences with their lessons)",
            moved.recurrences
        ));
    }
    if moved.lessons_left + moved.beliefs_left > 0 {
        note.push_str(&format!(
            "; {} lessons and {} beliefs stayed there because this project already holds them",
            moved.lessons_left, moved.beliefs_left
        ));
    }
    let entry = Directive::new(None, InterventionType::Override, note, actor, now);
    directives::insert(&db.scoped(to), &entry)?;
    Ok(moved)
}

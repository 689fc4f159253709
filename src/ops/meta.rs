//! Operations on the meta-learning state.

use chrono::{DateTime, Utc};

use crate::service::meta::{Event, MetaState, ResetScope};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::meta as meta_store;
use crate::store::{Db, StoreError};

/// The operator's reset of `scope` (`reset_meta_learning`, and `escalations ack` of the
/// console): [`MetaState::reset`], an `OVERRIDE` directive-history entry by `actor` naming the
/// scope and `rationale`, the state saved (with every accuracy window when the scope
/// [empties them](ResetScope::empties_windows)), and the `self_healing` event appended.
/// Returns the event and the entry. Call inside a write transaction and bump
/// the `Meta` family, as the tool does.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure (then `m` is ahead of the store: mark it stale).
pub fn reset(
    db: &Db<'_>,
    m: &mut MetaState,
    scope: ResetScope,
    rationale: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<(Event, Directive), StoreError> {
    let event = m.reset(scope, rationale, now);
    let directive = Directive::new(
        None,
        InterventionType::Override,
        format!("reset_meta_learning ({scope}): {rationale}"),
        actor,
        now,
    );
    directives::insert(db, &directive)?;
    let windows = if scope.empties_windows() {
        meta_store::Windows::All
    } else {
        meta_store::Windows::None
    };
    meta_store::save(db, m, windows)?;
    meta_store::insert_events(db, std::slice::from_ref(&event))?;
    Ok((event, directive))
}

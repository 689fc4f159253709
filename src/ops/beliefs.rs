//! Operations on beliefs.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::service::epistemic::{
    ActionRequest, ActionResult, EpistemicError, WorkspaceSummary, apply_action,
};
use crate::store::beliefs;
use crate::store::{Db, StoreError};

/// What [`act`] did: the action's result, or why the belief refused it, and the workspace
/// after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Acted {
    /// The result of [`apply_action`], saved when it changed the belief.
    pub result: Result<ActionResult, EpistemicError>,
    /// The whole workspace after the action.
    pub summary: WorkspaceSummary,
}

/// One epistemic action (`epistemic_action`): the belief under `req.normalised_target`
/// loaded, [`apply_action`] (a belief it creates gets a new id, at `now`), the belief and its
/// new history event saved when the action changed it, then the workspace summarised. A
/// refused action (`verify` or `retract` of no belief) writes nothing. Call inside a write
/// transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn act(db: &Db<'_>, req: &ActionRequest, now: DateTime<Utc>) -> Result<Acted, StoreError> {
    let existing = beliefs::find(db, &req.normalised_target)?;
    let result = apply_action(existing, req, Uuid::new_v4(), now);
    if let Ok(ActionResult {
        belief: Some(belief),
        event: Some(event),
        ..
    }) = &result
    {
        beliefs::save(db, belief, event)?;
    }
    let summary = beliefs::summary(db)?;
    Ok(Acted { result, summary })
}

//! Belief workspace persistence: one row per belief (keyed by normalised target) and its
//! append-only action history.

use super::{Backend, pg, sqlite};
use crate::service::epistemic::{Belief, BeliefEvent, WorkspaceSummary};
pub use crate::store::rows::beliefs::Merged;
use crate::store::{Db, StoreError};

/// The belief stored under a normalised target, with its full history (oldest first).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn find(db: &Db<'_>, normalised_target: &str) -> Result<Option<Belief>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::beliefs::find(conn, db.project(), normalised_target),
        Backend::Postgres(pg) => pg::beliefs::find(pg, db.project(), normalised_target),
    }
}

/// Writes a belief's current state (insert or update by id) and appends one history event.
/// Call inside a write transaction.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure (including a second belief for the same normalised
/// target under another id).
pub fn save(db: &Db<'_>, b: &Belief, event: &BeliefEvent) -> Result<(), StoreError> {
    let seq = put_row(db, b)?;
    append_event(db, seq, event)
}

/// Insert or update (by id) a belief's row; returns its `seq`.
fn put_row(db: &Db<'_>, b: &Belief) -> Result<i64, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::beliefs::put_row(conn, db.project(), b),
        Backend::Postgres(pg) => pg::beliefs::put_row(pg, db.project(), b),
    }
}

/// Append one history event to the belief of row `seq`.
fn append_event(db: &Db<'_>, seq: i64, event: &BeliefEvent) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::beliefs::append_event(conn, seq, event),
        Backend::Postgres(pg) => pg::beliefs::append_event(pg, seq, event),
    }
}

/// Every belief with its history, in creation order.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn all(db: &Db<'_>) -> Result<Vec<Belief>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::beliefs::all(conn, db.project()),
        Backend::Postgres(pg) => pg::beliefs::all(pg, db.project()),
    }
}

/// Merge a belief exported from another database into the workspace, keyed by its normalised
/// target. A new target is stored whole (its id, times and history). For a target present,
/// the history events not already present (same time, action, rationale and confidence after)
/// are appended, the source nodes are united, and the current state (status, confidence,
/// rationale, uncertainty type, updated time) is the incoming one when it changed later than
/// the stored one. Merging the same belief twice changes nothing the second time. Call inside
/// a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row (an incoming id already used by another
/// target is an SQL failure).
pub fn merge(db: &Db<'_>, incoming: &Belief) -> Result<Merged, StoreError> {
    let Some(mut local) = find(db, &incoming.normalised_target)? else {
        let seq = put_row(db, incoming)?;
        for e in &incoming.history {
            append_event(db, seq, e)?;
        }
        return Ok(Merged {
            created: true,
            events_added: incoming.history.len(),
        });
    };
    let same = |a: &BeliefEvent, b: &BeliefEvent| {
        a.at == b.at
            && a.action == b.action
            && a.rationale == b.rationale
            && a.confidence_after.to_bits() == b.confidence_after.to_bits()
    };
    let fresh: Vec<&BeliefEvent> = incoming
        .history
        .iter()
        .filter(|e| !local.history.iter().any(|l| same(l, e)))
        .collect();
    let mut changed = !fresh.is_empty();
    for n in &incoming.source_nodes {
        if !local.source_nodes.contains(n) {
            local.source_nodes.push(*n);
            changed = true;
        }
    }
    if incoming.updated_at > local.updated_at {
        local.status = incoming.status;
        local.confidence = incoming.confidence;
        local.rationale = incoming.rationale.clone();
        local.uncertainty_type = incoming.uncertainty_type.or(local.uncertainty_type);
        local.updated_at = incoming.updated_at;
        changed = true;
    }
    if changed {
        let seq = put_row(db, &local)?;
        for e in &fresh {
            append_event(db, seq, e)?;
        }
    }
    Ok(Merged {
        created: false,
        events_added: fresh.len(),
    })
}

/// Counts per status and the sums behind the mean confidence and mean entropy.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unknown stored status.
pub fn summary(db: &Db<'_>) -> Result<WorkspaceSummary, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::beliefs::summary(conn, db.project()),
        Backend::Postgres(pg) => pg::beliefs::summary(pg, db.project()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::epistemic::BeliefStatus;
    use crate::service::epistemic::{ActionRequest, apply_action};
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;
    use chrono::{DateTime, Utc};
    use uuid::Uuid;

    const TOL: f64 = 1e-12;

    fn at(us: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(us).unwrap()
    }

    fn step(db: &Db<'_>, action: &str, target: &str, c: Option<f64>, us: i64) -> Belief {
        let n1 = "550e8400-e29b-41d4-a716-446655440000";
        let req = ActionRequest::validate(action, target, c, "why", Some("mixed"), &[n1]).unwrap();
        let existing = find(db, &req.normalised_target).unwrap();
        let r = apply_action(existing, &req, Uuid::from_u128(us as u128), at(us)).unwrap();
        let b = r.belief.unwrap();
        save(db, &b, &r.event.unwrap()).unwrap();
        b
    }

    fn beliefs_and_history_round_trip_exactly(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                step(db, "hypothesize", "Ünïcödé target", Some(0.6), 1);
                step(db, "verify", "ünïcödé TARGET", Some(0.9), 2);
                let b = step(db, "verify", "Ünïcödé target", Some(0.9), 3);
                let stored = find(db, &b.normalised_target)?.expect("stored");
                assert_eq!(
                    stored, b,
                    "every field, history included, reads back bit-exactly"
                );
                assert_eq!(stored.history.len(), 3);
                assert_eq!(stored.confidence.to_bits(), b.confidence.to_bits());
                assert!(find(db, "absent")?.is_none());
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        beliefs_and_history_round_trip_exactly,
        round_trip_on_sqlite,
        round_trip_on_postgres
    );

    fn summary_aggregates_per_status(store: &Store) {
        store
            .write(|db| -> Result<(), StoreError> {
                step(db, "assert", "a", Some(0.5), 1);
                step(db, "assert", "b", Some(0.25), 2);
                step(db, "assert", "c", Some(0.9), 3);
                step(db, "retract", "c", None, 4);
                let s = summary(db)?;
                assert_eq!(s.count(BeliefStatus::Active), 2);
                assert_eq!(s.count(BeliefStatus::Retracted), 1);
                assert_eq!(s.total(), 3);
                assert!((s.mean_confidence().unwrap() - 0.375).abs() < TOL);
                let want = WorkspaceSummary::from_beliefs([
                    (BeliefStatus::Active, 0.5),
                    (BeliefStatus::Active, 0.25),
                    (BeliefStatus::Retracted, 0.0),
                ]);
                assert!((s.mean_entropy().unwrap() - want.mean_entropy().unwrap()).abs() < TOL);
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        summary_aggregates_per_status,
        summary_on_sqlite,
        summary_on_postgres
    );

    fn merging_twice_changes_nothing_the_second_time(store: &Store) {
        let (b, other) = store
            .write(|db| -> Result<_, StoreError> {
                step(db, "hypothesize", "merged", Some(0.6), 10);
                Ok((
                    step(db, "verify", "merged", Some(0.9), 20),
                    step(db, "assert", "x", Some(0.5), 5),
                ))
            })
            .unwrap();
        // Another database's version of the belief: one event in common, one later.
        let mut incoming = b.clone();
        incoming.history.remove(1);
        let later = apply_action(
            Some(b.clone()),
            &ActionRequest::validate("retract", "merged", None, "no", None, &[]).unwrap(),
            Uuid::from_u128(99),
            at(30),
        )
        .unwrap();
        incoming.history.push(later.event.clone().unwrap());
        let later = later.belief.unwrap();
        incoming.status = later.status;
        incoming.confidence = later.confidence;
        incoming.updated_at = later.updated_at;
        incoming.source_nodes.push(Uuid::from_u128(7));
        store
            .write(|db| -> Result<(), StoreError> {
                let m = merge(db, &incoming)?;
                assert_eq!((m.created, m.events_added), (false, 1));
                assert_eq!(merge(db, &incoming)?, Merged::default());
                let stored = find(db, "merged")?.expect("kept");
                assert_eq!(stored.history.len(), 3);
                assert_eq!(stored.status, BeliefStatus::Retracted);
                assert_eq!(stored.source_nodes.len(), 2);
                let ids: Vec<Uuid> = all(db)?.iter().map(|b| b.id).collect();
                assert_eq!(ids, [b.id, other.id], "creation order");
                let mut fresh = other.clone();
                fresh.id = Uuid::from_u128(1000);
                fresh.normalised_target = "new one".into();
                let m = merge(db, &fresh)?;
                assert_eq!((m.created, m.events_added), (true, 1));
                assert_eq!(
                    find(db, "new one")?.expect("created").history,
                    other.history
                );
                Ok(())
            })
            .unwrap();
    }
    both_backends!(
        merging_twice_changes_nothing_the_second_time,
        merge_on_sqlite,
        merge_on_postgres
    );
}

//! Meta-learning persistence: the state row, the event log, recorded predictions (the replay
//! window) and open predictions issued by `gwt_compute_delta_sc`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Backend, pg, sqlite};
use crate::service::meta::{Event, MetaState, Prediction};
use crate::service::vocab::Domain;
pub use crate::store::rows::meta::{
    CloseError, EventQuery, OPEN_PREDICTION_TTL_DAYS, OpenPrediction, Windows,
};
use crate::store::{Db, StoreError};

/// Load the meta-learning state; the default state when none is stored yet.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn load(db: &Db<'_>) -> Result<MetaState, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::load(conn),
        Backend::Postgres(pg) => pg::meta::load(pg),
    }
}

/// Store the meta-learning state: the scalar row, and the accuracy windows `windows` names
/// (one row each in `meta_windows`).
///
/// Writing fewer windows than changed would lose data: pass [`Windows::All`] unless the
/// change is exactly one recorded prediction ([`Windows::Prediction`]) or left the windows
/// alone ([`Windows::None`]).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn save(db: &Db<'_>, m: &MetaState, windows: Windows) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::save(conn, m, windows),
        Backend::Postgres(pg) => pg::meta::save(pg, m, windows),
    }
}

/// Append events to the log.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert_events(db: &Db<'_>, events: &[Event]) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::insert_events(conn, events),
        Backend::Postgres(pg) => pg::meta::insert_events(pg, events),
    }
}

/// Append the events not yet in the log (an event is present when one of the same time, type
/// and detail is), as [`insert_events`] does; returns how many were appended. Used to import
/// another database's log, so that importing it twice appends nothing.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn import_events(db: &Db<'_>, events: &[Event]) -> Result<usize, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::import_events(conn, events),
        Backend::Postgres(pg) => pg::meta::import_events(pg, events),
    }
}

/// Every event of the log, oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn all_events(db: &Db<'_>) -> Result<Vec<Event>, StoreError> {
    let (mut events, _) = query_events(
        db,
        &EventQuery {
            limit: i64::MAX as usize,
            ..EventQuery::default()
        },
    )?;
    events.reverse();
    Ok(events)
}

/// One page of events, newest first, and the total number matching the filters.
///
/// Runs in SQL on the `(event_type|domain, ts)` indexes; nothing beyond the page is loaded.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn query_events(db: &Db<'_>, q: &EventQuery) -> Result<(Vec<Event>, usize), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::query_events(conn, q),
        Backend::Postgres(pg) => pg::meta::query_events(pg, q),
    }
}

/// Number of events at or after `since`.
///
/// Whole hours come from the hourly counts; only the first, partial hour is counted row by
/// row, so the cost does not grow with the number of events in the window.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn count_events_since(db: &Db<'_>, since: DateTime<Utc>) -> Result<usize, StoreError> {
    count_events_between(db, Some(since), None)
}

/// Number of events with `start <= timestamp <= end` (either bound optional), from the hourly
/// counts plus a row count of at most the two partial hours at the edges.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn count_events_between(
    db: &Db<'_>,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Result<usize, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::count_events_between(conn, start, end),
        Backend::Postgres(pg) => pg::meta::count_events_between(pg, start, end),
    }
}

/// Delete events strictly older than `cutoff`; returns how many.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn delete_events_before(db: &Db<'_>, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::delete_events_before(conn, cutoff),
        Backend::Postgres(pg) => pg::meta::delete_events_before(pg, cutoff),
    }
}

/// Append a recorded prediction (the replay window is the newest [`WINDOW`](crate::service::meta::WINDOW) of these).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert_prediction(
    db: &Db<'_>,
    p: &Prediction,
    source: Option<Uuid>,
) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::insert_prediction(conn, p, source),
        Backend::Postgres(pg) => pg::meta::insert_prediction(pg, p, source),
    }
}

/// The replay window: the newest [`WINDOW`](crate::service::meta::WINDOW) recorded predictions (of `domain` when given),
/// oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn replay_window(db: &Db<'_>, domain: Option<Domain>) -> Result<Vec<Prediction>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::replay_window(conn, domain),
        Backend::Postgres(pg) => pg::meta::replay_window(pg, domain),
    }
}

/// Record a new open prediction.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn open_prediction(db: &Db<'_>, p: &OpenPrediction) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::open_prediction(conn, p),
        Backend::Postgres(pg) => pg::meta::open_prediction(pg, p),
    }
}

/// Close an open prediction at `now`, returning it; it can be closed once.
///
/// # Errors
/// `Ok(Err(CloseError))` when unknown, closed or expired; [`StoreError`] on SQL failure.
pub fn close_prediction(
    db: &Db<'_>,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::meta::close_prediction(conn, id, now),
        Backend::Postgres(pg) => pg::meta::close_prediction(pg, id, now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::meta::EventType;
    use crate::service::meta::ResetScope;
    use crate::service::vocab::Lambdas;
    use crate::store::rows::meta::encode_f64s;
    use crate::store::to_us;
    use crate::store::{DbPath, Store};
    use rusqlite::params;

    fn event_at(t: DateTime<Utc>) -> Event {
        let l = Lambdas::pair(0.5, 0.5);
        Event {
            timestamp: t,
            event_type: EventType::LambdaAdjustment,
            prediction_error: None,
            lambda_before: l,
            lambda_after: l,
            accuracy_avg: None,
            escalated: false,
            domain: None,
            embedder_index: None,
            detail: String::new(),
        }
    }

    fn brute_count(db: &Db<'_>, since: DateTime<Utc>) -> usize {
        db.conn()
            .query_row(
                "SELECT count(*) FROM meta_events WHERE ts_us >= ?1",
                [to_us(since)],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as usize
    }

    /// Predictions over every embedder and none, with varied outcomes.
    fn predictions(n: usize) -> Vec<Prediction> {
        let t = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        (0..n)
            .map(|k| Prediction {
                timestamp: t + chrono::Duration::seconds(k as i64),
                embedder_index: (k % 14 != 13).then_some((k % 14) as u8),
                predicted: (k % 10) as f64 / 10.0,
                actual: (k % 7) as f64 / 7.0,
                delta_s: Some(0.5),
                delta_c: Some(0.25),
                domain: None,
                ach_level: 0.001,
            })
            .collect()
    }

    /// `m` as stored: only λ_s is kept, and λ_c is read back as 1 − λ_s (which can differ from
    /// a computed λ_c in the last bit).
    fn as_stored(m: &MetaState) -> MetaState {
        let mut m = m.clone();
        m.lambdas = Lambdas::new(m.lambdas.s()).unwrap();
        m
    }

    #[test]
    fn state_saved_one_prediction_at_a_time_loads_back_exactly() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let mut m = MetaState::default();
        // 350 predictions: every window fills past its 100 values and wraps.
        for (k, p) in predictions(350).iter().enumerate() {
            m.record_prediction(p, p.timestamp);
            store
                .write(|db| save(db, &m, Windows::Prediction(p.embedder_index)))
                .unwrap();
            if k % 97 == 0 || k == 349 {
                assert_eq!(store.read(load).unwrap(), as_stored(&m), "after {k}");
            }
        }
        // A reset empties every window; Windows::All writes them all.
        m.reset(ResetScope::All, "test", Utc::now());
        store.write(|db| save(db, &m, Windows::All)).unwrap();
        assert_eq!(store.read(load).unwrap(), as_stored(&m));
    }

    #[test]
    fn every_reset_scope_leaves_the_stored_state_equal_to_the_state_in_memory() {
        for scope in ResetScope::ALL {
            let store = Store::open(&DbPath::Memory).unwrap();
            let mut m = MetaState::default();
            for p in predictions(150) {
                m.record_prediction(&p, p.timestamp);
                store
                    .write(|db| save(db, &m, Windows::Prediction(p.embedder_index)))
                    .unwrap();
            }
            let before = m.global.len();
            store
                .write(|db| {
                    crate::ops::meta::reset(db, &mut m, scope, "test", "operator", Utc::now())
                })
                .unwrap();
            // Only `all` empties the windows; the others keep them, stored as they were.
            assert_eq!(m.global.is_empty(), scope == ResetScope::All, "{scope:?}");
            assert!(before > 0);
            assert_eq!(store.read(load).unwrap(), as_stored(&m), "{scope:?}");
        }
    }

    #[test]
    fn migration_7_moves_schema_6_windows_into_their_own_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v6.db");
        let mut m = MetaState::default();
        for p in predictions(250) {
            m.record_prediction(&p, p.timestamp);
        }
        {
            // A database as schema 6 wrote it: windows as blobs in the state row.
            let conn = rusqlite::Connection::open(&path).unwrap();
            for sql in &crate::store::sqlite::migrate::MIGRATIONS[..6] {
                conn.execute_batch(sql.sql).unwrap();
            }
            conn.execute_batch("PRAGMA user_version = 6").unwrap();
            let per: Vec<f64> = m
                .embedders
                .iter()
                .flat_map(|w| std::iter::once(w.len() as f64).chain(w.values()))
                .collect();
            conn.execute(
                "INSERT INTO meta_state VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    m.lambdas.s(),
                    m.interaction_count as i64,
                    i64::from(m.consecutive_low),
                    m.alert_active,
                    i64::from(m.bayesian_failures),
                    m.human_review_required,
                    m.adjustment_count as i64,
                    m.last_adjustment_at.map(to_us),
                    encode_f64s(m.global.values()),
                    encode_f64s(per.into_iter()),
                ],
            )
            .unwrap();
        }
        let store = Store::open(&DbPath::File(path)).unwrap();
        assert_eq!(store.read(load).unwrap(), as_stored(&m));
        let emptied: i64 = store
            .read(|db| {
                Ok::<_, StoreError>(db.conn().query_row(
                    "SELECT length(global_window) + length(embedder_windows) FROM meta_state",
                    [],
                    |r| r.get(0),
                )?)
            })
            .unwrap();
        assert_eq!(emptied, 0, "the old columns are emptied");
    }

    #[test]
    fn time_range_counts_agree_with_a_row_count() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let base = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        // Events every 13 minutes over 30 hours, some on exact hour edges, some doubled.
        let events: Vec<Event> = (0..140)
            .flat_map(|k| {
                let t = base + chrono::Duration::minutes(13 * k);
                std::iter::repeat_n(event_at(t), 1 + (k as usize % 2))
            })
            .collect();
        store.write(|db| insert_events(db, &events)).unwrap();
        let at = |m: i64| Some(base + chrono::Duration::minutes(m));
        let edges = [
            None,
            at(-5),
            at(0),
            at(1),
            at(59),
            at(60),
            at(65),
            at(13 * 37),
            at(600),
            at(1819),
            at(5000),
        ];
        store
            .read(|db| {
                for start in edges {
                    for end in edges {
                        let brute: i64 = db.conn().query_row(
                            "SELECT count(*) FROM meta_events WHERE ts_us >= ?1 AND ts_us <= ?2",
                            params![start.map_or(i64::MIN, to_us), end.map_or(i64::MAX, to_us)],
                            |r| r.get(0),
                        )?;
                        assert_eq!(
                            count_events_between(db, start, end)? as i64,
                            brute,
                            "{start:?}..={end:?}"
                        );
                    }
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
    }

    #[test]
    fn hourly_counts_agree_with_a_row_count_before_and_after_retention() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let base = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        // 7 events every 17 minutes over 40 hours, some on exact hour edges.
        let events: Vec<Event> = (0..141)
            .flat_map(|k| {
                let t = base + chrono::Duration::minutes(17 * k);
                std::iter::repeat_n(event_at(t), 1 + (k as usize % 7))
            })
            .collect();
        store.write(|db| insert_events(db, &events)).unwrap();
        store
            .read(|db| {
                for minutes in [0, 1, 59, 60, 61, 17 * 40, 24 * 60, 30 * 60 + 7, 41 * 60] {
                    let since = base + chrono::Duration::minutes(minutes);
                    assert_eq!(
                        count_events_since(db, since)?,
                        brute_count(db, since),
                        "{since}"
                    );
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
        let cutoff = base + chrono::Duration::minutes(17 * 60 + 5);
        store.write(|db| delete_events_before(db, cutoff)).unwrap();
        store
            .read(|db| {
                for minutes in [0, 17 * 60, 17 * 60 + 5, 18 * 60, 30 * 60] {
                    let since = base + chrono::Duration::minutes(minutes);
                    assert_eq!(
                        count_events_since(db, since)?,
                        brute_count(db, since),
                        "{since}"
                    );
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
    }
}

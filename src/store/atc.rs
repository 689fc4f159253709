//! ATC persistence: calibration observations (the per-embedder windows), thresholds per domain,
//! temperatures, bandit statistics, drift trackers and per-domain Level 3/4 bookkeeping.
//!
//! Observations are kept as a bounded window: after each insert, every touched embedder keeps only
//! its newest [`WINDOW_CAPACITY`](crate::service::atc::state::WINDOW_CAPACITY) rows (by insertion order), matching [`AtcState::ingest`].
//! Everything else is small and saved whole by [`save`].
//!
//! Index: `(embedder_id, seq)` serves the trim. There is deliberately no time or domain index:
//! every ATC query (time ranges included) filters the cached windows in memory, and each index
//! is one more B-tree that every one of 10,000 inserted (and trimmed) rows must update. The
//! `ts_us` index of the first schema was never read; `sqlite::atc::MIGRATION_DROP_TS_INDEX` drops it.

use super::{Backend, pg, sqlite};
use crate::service::atc::state::{AtcState, Observation};
use crate::store::{Db, StoreError};

/// Append observations (in order) and trim each touched embedder's rows to its newest
/// [`WINDOW_CAPACITY`](crate::service::atc::state::WINDOW_CAPACITY).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert_observations(db: &Db<'_>, observations: &[Observation]) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::atc::insert_observations(conn, observations),
        Backend::Postgres(pg) => pg::atc::insert_observations(pg, observations),
    }
}

/// Save everything but the observations (thresholds, temperatures, bandits, drift, per-domain
/// bookkeeping), replacing what was stored.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn save(db: &Db<'_>, s: &AtcState) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::atc::save(conn, s),
        Backend::Postgres(pg) => pg::atc::save(pg, s),
    }
}

/// Load the ATC state; defaults for whatever is not stored yet (a fresh database).
///
/// # Errors
/// [`StoreError`] on SQL failure, or [`StoreError::Corrupt`] when stored values break the
/// state's invariants (out-of-range or out-of-order thresholds, bad temperatures, …).
pub fn load(db: &Db<'_>) -> Result<AtcState, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::atc::load(conn),
        Backend::Postgres(pg) => pg::atc::load(pg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::atc::RunMode;
    use crate::service::atc::state::WINDOW_CAPACITY;
    use crate::service::atc::thresholds::ThresholdName;
    use crate::service::vocab::Domain;
    use crate::store::{DbPath, Store};
    use chrono::DateTime;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn obs(i: usize, embedder_id: u8) -> Observation {
        Observation {
            timestamp: DateTime::from_timestamp_micros(1_700_000_000_000_000 + i as i64).unwrap(),
            embedder_id,
            confidence: (i % 97) as f64 / 96.0,
            correct: !i.is_multiple_of(3),
            domain: if i.is_multiple_of(2) {
                Domain::Code
            } else {
                Domain::General
            },
            threshold_name: i.is_multiple_of(5).then_some(ThresholdName::ThetaAcc),
            threshold_used: i.is_multiple_of(5).then_some(0.75),
        }
    }

    #[test]
    fn state_round_trips_exactly() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let mut s = AtcState::new();
        let batch: Vec<Observation> = (0..300).map(|i| obs(i, (i % 13) as u8 + 1)).collect();
        for o in &batch {
            s.ingest(*o).unwrap();
        }
        s.run_level2(RunMode::Apply);
        s.run_level3(
            Domain::Code,
            false,
            RunMode::Apply,
            &mut StdRng::seed_from_u64(1),
        );
        s.thresholds[0]
            .set(ThresholdName::ThetaDup, 0.8123456789)
            .unwrap();
        s.last_level4[5] = Some(DateTime::from_timestamp_micros(1_700_000_123_456_789).unwrap());
        store
            .write(|db| {
                insert_observations(db, &batch)?;
                save(db, &s)
            })
            .unwrap();
        let loaded = store.read(load).unwrap();
        assert_eq!(loaded, s);
    }

    #[test]
    fn fresh_database_loads_defaults() {
        let store = Store::open(&DbPath::Memory).unwrap();
        assert_eq!(store.read(load).unwrap(), AtcState::new());
    }

    #[test]
    fn observations_are_trimmed_to_the_window() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let batch: Vec<Observation> = (0..WINDOW_CAPACITY + 7).map(|i| obs(i, 2)).collect();
        store.write(|db| insert_observations(db, &batch)).unwrap();
        let mut expected = AtcState::new();
        for o in &batch {
            expected.ingest(*o).unwrap();
        }
        let loaded = store.read(load).unwrap();
        assert_eq!(loaded.windows, expected.windows);
        let rows: i64 = store
            .read(|db| -> Result<i64, StoreError> {
                Ok(db
                    .conn()
                    .query_row("SELECT count(*) FROM atc_observations", [], |r| r.get(0))?)
            })
            .unwrap();
        assert_eq!(rows, WINDOW_CAPACITY as i64);
    }

    #[test]
    fn every_observation_is_stored_in_order_whatever_the_batch_size() {
        // Sizes around the 64-row INSERT chunk, over several embedders.
        let store = Store::open(&DbPath::Memory).unwrap();
        let mut expected = AtcState::new();
        let mut i = 0;
        for size in [0, 1, 63, 64, 65, 129, 200] {
            let batch: Vec<Observation> =
                (i..i + size).map(|k| obs(k, (k % 13) as u8 + 1)).collect();
            i += size;
            store.write(|db| insert_observations(db, &batch)).unwrap();
            for o in &batch {
                expected.ingest(*o).unwrap();
            }
            assert_eq!(
                store.read(load).unwrap().windows,
                expected.windows,
                "after {size}"
            );
        }
    }

    #[test]
    fn invalid_stored_thresholds_are_reported_as_corrupt() {
        let store = Store::open(&DbPath::Memory).unwrap();
        store
            .write(|db| -> Result<(), StoreError> {
                save(db, &AtcState::new())?;
                db.conn().execute(
                    "UPDATE atc_thresholds SET value = 0.99 WHERE domain = 'code' AND name = 'theta_acc'",
                    [],
                )?;
                Ok(())
            })
            .unwrap();
        assert!(matches!(store.read(load), Err(StoreError::Corrupt(_))));
    }
}

//! ATC persistence: calibration observations (the per-embedder windows), thresholds per domain,
//! temperatures, bandit statistics, drift trackers and per-domain Level 3/4 bookkeeping.
//!
//! Observations are kept as a bounded window: after each insert, every touched embedder keeps only
//! its newest [`WINDOW_CAPACITY`] rows (by insertion order), matching [`AtcState::ingest`].
//! Everything else is small and saved whole by [`save`].
//!
//! Index: `(embedder_id, seq)` serves the trim. There is deliberately no time or domain index:
//! every ATC query (time ranges included) filters the cached windows in memory, and each index
//! is one more B-tree that every one of 10,000 inserted (and trimmed) rows must update. The
//! `ts_us` index of the first schema was never read; [`MIGRATION_DROP_TS_INDEX`] drops it.

use std::collections::VecDeque;

use rusqlite::params;

use super::{Db, StoreError, count as stored_count, from_us, in_range, to_us};
use super::{pg, sqlite_or};
use crate::service::atc::bandit::ThompsonBandit;
use crate::service::atc::drift::DriftTracker;
use crate::service::atc::state::{AtcState, Observation, WINDOW_CAPACITY};
use crate::service::atc::thresholds::{THRESHOLD_COUNT, ThresholdName, ThresholdSet};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};

/// Migration 8: drop the `ts_us` index, which no query used and which cost a third of the
/// B-tree work of every observation inserted.
pub const MIGRATION_DROP_TS_INDEX: &str = "DROP INDEX IF EXISTS atc_observations_ts;";

/// Schema of the ATC family.
pub const MIGRATION: &str = "
CREATE TABLE atc_observations (
    seq             INTEGER PRIMARY KEY,
    ts_us           INTEGER NOT NULL,
    embedder_id     INTEGER NOT NULL CHECK (embedder_id BETWEEN 1 AND 13),
    confidence      REAL    NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    correct         INTEGER NOT NULL CHECK (correct IN (0, 1)),
    domain          TEXT    NOT NULL,
    threshold_name  TEXT,
    threshold_used  REAL
) STRICT;
CREATE INDEX atc_observations_ts ON atc_observations (ts_us);
CREATE INDEX atc_observations_embedder ON atc_observations (embedder_id, seq);

CREATE TABLE atc_thresholds (
    domain  TEXT NOT NULL,
    name    TEXT NOT NULL,
    value   REAL NOT NULL,
    PRIMARY KEY (domain, name)
) STRICT;

CREATE TABLE atc_temperatures (
    embedder_id  INTEGER PRIMARY KEY CHECK (embedder_id BETWEEN 1 AND 13),
    temperature  REAL    NOT NULL
) STRICT;

CREATE TABLE atc_bandit_arms (
    domain           TEXT    NOT NULL,
    candidate_index  INTEGER NOT NULL,
    candidate        REAL    NOT NULL,
    successes        INTEGER NOT NULL,
    failures         INTEGER NOT NULL,
    PRIMARY KEY (domain, candidate_index)
) STRICT;

CREATE TABLE atc_domains (
    domain              TEXT PRIMARY KEY,
    selected_threshold  REAL,
    last_level4_us      INTEGER
) STRICT;

CREATE TABLE atc_threshold_drift (
    domain    TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    alpha     REAL    NOT NULL,
    mean      REAL    NOT NULL,
    variance  REAL    NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (domain, name)
) STRICT;

CREATE TABLE atc_gap_drift (
    embedder_id  INTEGER PRIMARY KEY,
    alpha        REAL    NOT NULL,
    mean         REAL    NOT NULL,
    variance     REAL    NOT NULL,
    count        INTEGER NOT NULL
) STRICT;
";

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("ATC: {what}"))
}

fn parse_domain(s: &str) -> Result<Domain, StoreError> {
    Domain::parse(s).ok_or_else(|| corrupt(format!("unknown domain {s:?}")))
}

fn parse_name(s: &str) -> Result<ThresholdName, StoreError> {
    ThresholdName::parse(s).ok_or_else(|| corrupt(format!("unknown threshold {s:?}")))
}

/// Append observations (in order) and trim each touched embedder's rows to its newest
/// [`WINDOW_CAPACITY`].
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert_observations(db: &Db<'_>, observations: &[Observation]) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::atc::insert_observations(pg, observations));
    // Rows go in INSERT statements of INSERT_CHUNK rows each (the remainder one by one):
    // one statement step per 64 rows instead of per row.
    const INSERT_CHUNK: usize = 64;
    const INSERT: &str = "INSERT INTO atc_observations
             (ts_us, embedder_id, confidence, correct, domain, threshold_name, threshold_used)
         VALUES ";
    static CHUNK_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let row = "(?, ?, ?, ?, ?, ?, ?)";
        format!("{INSERT}{}", vec![row; INSERT_CHUNK].join(", "))
    });
    let bind = |stmt: &mut rusqlite::CachedStatement<'_>, rows: &[Observation]| {
        let mut k = 1;
        for o in rows {
            stmt.raw_bind_parameter(k, to_us(o.timestamp))?;
            stmt.raw_bind_parameter(k + 1, o.embedder_id)?;
            stmt.raw_bind_parameter(k + 2, o.confidence)?;
            stmt.raw_bind_parameter(k + 3, o.correct)?;
            stmt.raw_bind_parameter(k + 4, o.domain.as_str())?;
            stmt.raw_bind_parameter(k + 5, o.threshold_name.map(ThresholdName::as_str))?;
            stmt.raw_bind_parameter(k + 6, o.threshold_used)?;
            k += 7;
        }
        stmt.raw_execute()
    };
    let mut chunks = observations.chunks_exact(INSERT_CHUNK);
    let mut many = conn.prepare_cached(&CHUNK_SQL)?;
    for chunk in &mut chunks {
        bind(&mut many, chunk)?;
    }
    let mut one = conn.prepare_cached(&format!("{INSERT}(?, ?, ?, ?, ?, ?, ?)"))?;
    for o in chunks.remainder() {
        bind(&mut one, std::slice::from_ref(o))?;
    }
    let mut touched = [false; NUM_EMBEDDERS];
    for o in observations {
        if let Some(t) = touched.get_mut(usize::from(o.embedder_id).wrapping_sub(1)) {
            *t = true;
        }
    }
    let mut trim = conn.prepare_cached(
        "DELETE FROM atc_observations
         WHERE embedder_id = ?1
           AND seq < (SELECT seq FROM atc_observations WHERE embedder_id = ?1
                      ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
    )?;
    for (i, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
        trim.execute(params![i as i64 + 1, WINDOW_CAPACITY as i64 - 1])?;
    }
    Ok(())
}

/// Save everything but the observations (thresholds, temperatures, bandits, drift, per-domain
/// bookkeeping), replacing what was stored.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn save(db: &Db<'_>, s: &AtcState) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::atc::save(pg, s));
    let c = conn;
    let rows = SavedRows::of(s);
    let mut thr = c.prepare_cached(
        "INSERT OR REPLACE INTO atc_thresholds (domain, name, value) VALUES (?1, ?2, ?3)",
    )?;
    for (domain, name, value) in &rows.thresholds {
        thr.execute(params![domain, name, value])?;
    }
    let mut drift = c.prepare_cached(
        "INSERT OR REPLACE INTO atc_threshold_drift (domain, name, alpha, mean, variance, count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (domain, name, alpha, mean, variance, count) in &rows.threshold_drift {
        drift.execute(params![domain, name, alpha, mean, variance, count])?;
    }
    let mut clear = c.prepare_cached("DELETE FROM atc_bandit_arms WHERE domain = ?1")?;
    for domain in Domain::ALL {
        clear.execute([domain.as_str()])?;
    }
    let mut arms = c.prepare_cached(
        "INSERT OR REPLACE INTO atc_bandit_arms
             (domain, candidate_index, candidate, successes, failures)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (domain, k, candidate, successes, failures) in &rows.arms {
        arms.execute(params![domain, k, candidate, successes, failures])?;
    }
    let mut dom = c.prepare_cached(
        "INSERT OR REPLACE INTO atc_domains (domain, selected_threshold, last_level4_us)
         VALUES (?1, ?2, ?3)",
    )?;
    for (domain, selected, last) in &rows.domains {
        dom.execute(params![domain, selected, last])?;
    }
    let mut temp = c.prepare_cached(
        "INSERT OR REPLACE INTO atc_temperatures (embedder_id, temperature) VALUES (?1, ?2)",
    )?;
    for (e, t) in &rows.temperatures {
        temp.execute(params![e, t])?;
    }
    let mut gap = c.prepare_cached(
        "INSERT OR REPLACE INTO atc_gap_drift (embedder_id, alpha, mean, variance, count)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (e, alpha, mean, variance, count) in &rows.gap_drift {
        gap.execute(params![e, alpha, mean, variance, count])?;
    }
    Ok(())
}

/// The ATC state (all but the observations) as table rows, for both backends: what [`save`]
/// writes and [`load`] reads back.
#[derive(Debug, Default)]
pub(crate) struct SavedRows {
    /// `atc_thresholds`: domain, name, value.
    pub thresholds: Vec<(&'static str, &'static str, f64)>,
    /// `atc_threshold_drift`: domain, name, α, mean, variance, count.
    pub threshold_drift: Vec<(&'static str, &'static str, f64, f64, f64, i64)>,
    /// `atc_bandit_arms`: domain, candidate index, candidate, successes, failures.
    pub arms: Vec<(&'static str, i64, f64, i64, i64)>,
    /// `atc_domains`: domain, selected threshold, last Level-4 time.
    pub domains: Vec<(&'static str, Option<f64>, Option<i64>)>,
    /// `atc_temperatures`: embedder id (1–13), temperature.
    pub temperatures: Vec<(i64, f64)>,
    /// `atc_gap_drift`: embedder id, α, mean, variance, count.
    pub gap_drift: Vec<(i64, f64, f64, f64, i64)>,
}

impl SavedRows {
    /// The rows of `s`.
    pub(crate) fn of(s: &AtcState) -> Self {
        let mut rows = SavedRows::default();
        for domain in Domain::ALL {
            let d = domain.index();
            for name in ThresholdName::ALL {
                rows.thresholds
                    .push((domain.as_str(), name.as_str(), s.thresholds[d].get(name)));
                let t = &s.threshold_drift[d * THRESHOLD_COUNT + name.index()];
                rows.threshold_drift.push((
                    domain.as_str(),
                    name.as_str(),
                    t.alpha(),
                    t.mean(),
                    t.variance(),
                    t.count() as i64,
                ));
            }
            let b = &s.bandits[d];
            for (k, &candidate) in b.candidates().iter().enumerate() {
                rows.arms.push((
                    domain.as_str(),
                    k as i64,
                    candidate,
                    b.successes()[k] as i64,
                    b.failures()[k] as i64,
                ));
            }
            rows.domains
                .push((domain.as_str(), s.selected[d], s.last_level4[d].map(to_us)));
        }
        for e in 0..NUM_EMBEDDERS {
            rows.temperatures.push((e as i64 + 1, s.temperatures[e]));
            let t = &s.gap_drift[e];
            rows.gap_drift.push((
                e as i64 + 1,
                t.alpha(),
                t.mean(),
                t.variance(),
                t.count() as i64,
            ));
        }
        rows
    }
}

fn tracker(alpha: f64, mean: f64, variance: f64, count: i64) -> Result<DriftTracker, StoreError> {
    let count = stored_count("ATC: drift sample count", count)?;
    DriftTracker::from_parts(alpha, mean, variance, count).map_err(corrupt)
}

/// Load the ATC state; defaults for whatever is not stored yet (a fresh database).
///
/// # Errors
/// [`StoreError`] on SQL failure, or [`StoreError::Corrupt`] when stored values break the
/// state's invariants (out-of-range or out-of-order thresholds, bad temperatures, …).
pub fn load(db: &Db<'_>) -> Result<AtcState, StoreError> {
    let conn = sqlite_or!(db, pg => pg::atc::load(pg));
    fn all<T>(
        c: &rusqlite::Connection,
        sql: &str,
        f: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = c.prepare_cached(sql)?;
        let rows = stmt.query_map([], f)?;
        Ok(rows.collect::<Result<Vec<T>, _>>()?)
    }
    state_from_rows(LoadedRows {
        thresholds: all(conn, LOAD_THRESHOLDS, |r| r.try_into())?,
        temperatures: all(conn, LOAD_TEMPERATURES, |r| r.try_into())?,
        arms: all(conn, LOAD_ARMS, |r| r.try_into())?,
        domains: all(conn, LOAD_DOMAINS, |r| r.try_into())?,
        threshold_drift: all(conn, LOAD_THRESHOLD_DRIFT, |r| r.try_into())?,
        gap_drift: all(conn, LOAD_GAP_DRIFT, |r| r.try_into())?,
        observations: all(conn, LOAD_OBSERVATIONS, |r| r.try_into())?,
    })
}

// The queries of [`load`], valid SQL on both backends.
pub(crate) const LOAD_THRESHOLDS: &str = "SELECT domain, name, value FROM atc_thresholds";
pub(crate) const LOAD_TEMPERATURES: &str = "SELECT embedder_id, temperature FROM atc_temperatures";
pub(crate) const LOAD_ARMS: &str =
    "SELECT domain, candidate_index, candidate, successes, failures FROM atc_bandit_arms
     ORDER BY domain, candidate_index";
pub(crate) const LOAD_DOMAINS: &str =
    "SELECT domain, selected_threshold, last_level4_us FROM atc_domains";
pub(crate) const LOAD_THRESHOLD_DRIFT: &str =
    "SELECT domain, name, alpha, mean, variance, count FROM atc_threshold_drift";
pub(crate) const LOAD_GAP_DRIFT: &str =
    "SELECT embedder_id, alpha, mean, variance, count FROM atc_gap_drift";
pub(crate) const LOAD_OBSERVATIONS: &str =
    "SELECT ts_us, embedder_id, confidence, correct, domain, threshold_name, threshold_used
     FROM atc_observations ORDER BY seq";

/// An `atc_observations` row as read: time, embedder, confidence, correct, domain, threshold
/// name, threshold used.
pub(crate) type RawObservation = (i64, i64, f64, bool, String, Option<String>, Option<f64>);

/// The ATC tables as read by [`load`] (each field the rows of one `LOAD_*` query).
pub(crate) struct LoadedRows {
    pub thresholds: Vec<(String, String, f64)>,
    pub temperatures: Vec<(i64, f64)>,
    pub arms: Vec<(String, i64, f64, i64, i64)>,
    pub domains: Vec<(String, Option<f64>, Option<i64>)>,
    pub threshold_drift: Vec<(String, String, f64, f64, f64, i64)>,
    pub gap_drift: Vec<(i64, f64, f64, f64, i64)>,
    pub observations: Vec<RawObservation>,
}

/// The ATC state from its rows; defaults for whatever is missing.
///
/// # Errors
/// [`StoreError::Corrupt`] when stored values break the state's invariants.
pub(crate) fn state_from_rows(rows: LoadedRows) -> Result<AtcState, StoreError> {
    let mut s = AtcState::new();

    let mut values: Vec<[f64; THRESHOLD_COUNT]> =
        s.thresholds.iter().map(|t| *t.values()).collect();
    for (domain, name, value) in rows.thresholds {
        values[parse_domain(&domain)?.index()][parse_name(&name)?.index()] = value;
    }
    s.thresholds = Domain::ALL
        .into_iter()
        .zip(values)
        .map(|(d, v)| ThresholdSet::from_values(d, v).map_err(corrupt))
        .collect::<Result<_, _>>()?;

    for (e, t) in rows.temperatures {
        *s.temperatures
            .get_mut((e - 1) as usize)
            .ok_or_else(|| corrupt(format!("embedder {e}")))? = t;
    }

    let mut arms: Vec<Vec<(i64, f64, i64, i64)>> = vec![Vec::new(); Domain::COUNT];
    for (domain, k, cand, succ, fail) in rows.arms {
        arms[parse_domain(&domain)?.index()].push((k, cand, succ, fail));
    }
    for (d, list) in arms.into_iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        let counts = |k: fn(&(i64, f64, i64, i64)) -> i64| {
            list.iter()
                .map(|a| stored_count("ATC: bandit count", k(a)))
                .collect::<Result<Vec<u64>, _>>()
        };
        s.bandits[d] = ThompsonBandit::from_parts(
            list.iter().map(|a| a.1).collect(),
            counts(|a| a.2)?,
            counts(|a| a.3)?,
        )
        .map_err(corrupt)?;
    }

    for (domain, selected, last) in rows.domains {
        let d = parse_domain(&domain)?.index();
        s.selected[d] = selected
            .map(|t| in_range("ATC: selected threshold", t, 0.0, 1.0))
            .transpose()?;
        s.last_level4[d] = last.map(from_us).transpose()?;
    }

    for (domain, name, alpha, mean, var, count) in rows.threshold_drift {
        let i = parse_domain(&domain)?.index() * THRESHOLD_COUNT + parse_name(&name)?.index();
        s.threshold_drift[i] = tracker(alpha, mean, var, count)?;
    }

    for (e, alpha, mean, var, count) in rows.gap_drift {
        *s.gap_drift
            .get_mut((e - 1) as usize)
            .ok_or_else(|| corrupt(format!("embedder {e}")))? = tracker(alpha, mean, var, count)?;
    }

    s.windows = vec![VecDeque::new(); NUM_EMBEDDERS];
    for (ts, e, confidence, correct, domain, name, used) in rows.observations {
        let o = Observation {
            timestamp: from_us(ts)?,
            embedder_id: u8::try_from(e).map_err(|_| corrupt(format!("embedder {e}")))?,
            confidence,
            correct,
            domain: parse_domain(&domain)?,
            threshold_name: name.as_deref().map(parse_name).transpose()?,
            threshold_used: used,
        };
        let w = s
            .windows
            .get_mut(usize::from(o.embedder_id).wrapping_sub(1))
            .ok_or_else(|| corrupt(format!("embedder {e}")))?;
        w.push_back(o);
        if w.len() > WINDOW_CAPACITY {
            w.pop_front();
        }
    }
    s.validate().map_err(corrupt)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::atc::RunMode;
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

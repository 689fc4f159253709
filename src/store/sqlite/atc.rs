//! The SQLite side of [`crate::store::atc`]: its SQL, the family's migrations and their
//! data steps.

use rusqlite::{Connection, params};

use crate::service::atc::state::{AtcState, Observation, WINDOW_CAPACITY};
use crate::service::atc::thresholds::ThresholdName;
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::rows::atc::{
    LOAD_ARMS, LOAD_DOMAINS, LOAD_GAP_DRIFT, LOAD_OBSERVATIONS, LOAD_TEMPERATURES,
    LOAD_THRESHOLD_DRIFT, LOAD_THRESHOLDS, LoadedRows, RawObservation, SavedRows, state_from_rows,
};
use crate::store::{StoreError, to_us};

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

/// [`crate::store::atc::insert_observations`] on SQLite.
pub(crate) fn insert_observations(
    conn: &Connection,
    observations: &[Observation],
) -> Result<(), StoreError> {
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

/// [`crate::store::atc::save`] on SQLite.
pub(crate) fn save(conn: &Connection, s: &AtcState) -> Result<(), StoreError> {
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

/// [`crate::store::atc::load`] on SQLite.
pub(crate) fn load(conn: &Connection) -> Result<AtcState, StoreError> {
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
        observations: all(conn, LOAD_OBSERVATIONS, |r| RawObservation::read(r))?,
    })
}

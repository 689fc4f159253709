//! PostgreSQL twin of `store/atc.rs`: calibration observations (a window per embedder) and
//! the rest of the ATC state, as the same rows (`rows/atc.rs`) that SQLite writes and checks.

use super::{Columns, Pg, columns};
use crate::service::atc::state::{AtcState, Observation, WINDOW_CAPACITY};
use crate::service::atc::thresholds::ThresholdName;
use crate::service::vocab::NUM_EMBEDDERS;
use crate::store::rows::atc::{
    LOAD_ARMS, LOAD_DOMAINS, LOAD_GAP_DRIFT, LOAD_OBSERVATIONS, LOAD_TEMPERATURES,
    LOAD_THRESHOLD_DRIFT, LOAD_THRESHOLDS, LoadedRows, RawObservation, SavedRows, state_from_rows,
};
use crate::store::{StoreError, to_us};

/// [`crate::store::atc::insert_observations`] on PostgreSQL: one multi-row `INSERT … SELECT
/// FROM unnest(…)` for all the observations, then each touched embedder's window trimmed to
/// its newest [`WINDOW_CAPACITY`] rows.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn insert_observations(pg: &Pg, observations: &[Observation]) -> Result<(), StoreError> {
    if observations.is_empty() {
        return Ok(());
    }
    let ts: Vec<i64> = observations.iter().map(|o| to_us(o.timestamp)).collect();
    let embedder: Vec<i64> = observations
        .iter()
        .map(|o| i64::from(o.embedder_id))
        .collect();
    let confidence: Vec<f64> = observations.iter().map(|o| o.confidence).collect();
    let correct: Vec<bool> = observations.iter().map(|o| o.correct).collect();
    let domain: Vec<&str> = observations.iter().map(|o| o.domain.as_str()).collect();
    let name: Vec<Option<&str>> = observations
        .iter()
        .map(|o| o.threshold_name.map(ThresholdName::as_str))
        .collect();
    let used: Vec<Option<f64>> = observations.iter().map(|o| o.threshold_used).collect();
    // WITH ORDINALITY keeps the order of the slice in the identity column.
    pg.execute(
        "INSERT INTO atc_observations
             (ts_us, embedder_id, confidence, correct, domain, threshold_name, threshold_used)
         SELECT t, e, c, k, d, n, u
         FROM unnest($1::BIGINT[], $2::BIGINT[], $3::DOUBLE PRECISION[], $4::BOOLEAN[],
                     $5::TEXT[], $6::TEXT[], $7::DOUBLE PRECISION[])
              WITH ORDINALITY AS o (t, e, c, k, d, n, u, i)
         ORDER BY i",
        &[&ts, &embedder, &confidence, &correct, &domain, &name, &used],
    )?;
    let mut touched = [false; NUM_EMBEDDERS];
    for o in observations {
        if let Some(t) = touched.get_mut(usize::from(o.embedder_id).wrapping_sub(1)) {
            *t = true;
        }
    }
    for (i, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
        pg.execute(
            "DELETE FROM atc_observations
             WHERE embedder_id = $1
               AND seq < (SELECT seq FROM atc_observations WHERE embedder_id = $1
                          ORDER BY seq DESC LIMIT 1 OFFSET $2)",
            &[&(i as i64 + 1), &(WINDOW_CAPACITY as i64 - 1)],
        )?;
    }
    Ok(())
}

/// [`crate::store::atc::save`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn save(pg: &Pg, s: &AtcState) -> Result<(), StoreError> {
    let rows = SavedRows::of(s);
    for (domain, name, value) in &rows.thresholds {
        pg.execute(
            "INSERT INTO atc_thresholds (domain, name, value) VALUES ($1, $2, $3)
             ON CONFLICT (domain, name) DO UPDATE SET value = EXCLUDED.value",
            &[domain, name, value],
        )?;
    }
    for (domain, name, alpha, mean, variance, count) in &rows.threshold_drift {
        pg.execute(
            "INSERT INTO atc_threshold_drift (domain, name, alpha, mean, variance, count)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (domain, name) DO UPDATE SET alpha = EXCLUDED.alpha,
                 mean = EXCLUDED.mean, variance = EXCLUDED.variance, count = EXCLUDED.count",
            &[domain, name, alpha, mean, variance, count],
        )?;
    }
    pg.execute("DELETE FROM atc_bandit_arms", &[])?;
    for (domain, k, candidate, successes, failures) in &rows.arms {
        pg.execute(
            "INSERT INTO atc_bandit_arms (domain, candidate_index, candidate, successes, failures)
             VALUES ($1, $2, $3, $4, $5)",
            &[domain, k, candidate, successes, failures],
        )?;
    }
    for (domain, selected, last) in &rows.domains {
        pg.execute(
            "INSERT INTO atc_domains (domain, selected_threshold, last_level4_us)
             VALUES ($1, $2, $3)
             ON CONFLICT (domain) DO UPDATE SET selected_threshold = EXCLUDED.selected_threshold,
                 last_level4_us = EXCLUDED.last_level4_us",
            &[domain, selected, last],
        )?;
    }
    for (e, t) in &rows.temperatures {
        pg.execute(
            "INSERT INTO atc_temperatures (embedder_id, temperature) VALUES ($1, $2)
             ON CONFLICT (embedder_id) DO UPDATE SET temperature = EXCLUDED.temperature",
            &[e, t],
        )?;
    }
    for (e, alpha, mean, variance, count) in &rows.gap_drift {
        pg.execute(
            "INSERT INTO atc_gap_drift (embedder_id, alpha, mean, variance, count)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (embedder_id) DO UPDATE SET alpha = EXCLUDED.alpha,
                 mean = EXCLUDED.mean, variance = EXCLUDED.variance, count = EXCLUDED.count",
            &[e, alpha, mean, variance, count],
        )?;
    }
    Ok(())
}

fn all<T: Columns>(pg: &Pg, sql: &'static str) -> Result<Vec<T>, StoreError> {
    pg.query(sql, &[])?.iter().map(columns).collect()
}

/// [`crate::store::atc::load`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure, or [`StoreError::Corrupt`] when stored values break the state's
/// invariants.
pub fn load(pg: &Pg) -> Result<AtcState, StoreError> {
    state_from_rows(LoadedRows {
        thresholds: all(pg, LOAD_THRESHOLDS)?,
        temperatures: all(pg, LOAD_TEMPERATURES)?,
        arms: all(pg, LOAD_ARMS)?,
        domains: all(pg, LOAD_DOMAINS)?,
        threshold_drift: all(pg, LOAD_THRESHOLD_DRIFT)?,
        gap_drift: all(pg, LOAD_GAP_DRIFT)?,
        observations: pg
            .query(LOAD_OBSERVATIONS, &[])?
            .iter()
            .map(RawObservation::read)
            .collect::<Result<_, _>>()?,
    })
}

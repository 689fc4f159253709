//! The backend-neutral part of the atc family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use std::collections::VecDeque;

use super::StoredRow;
use crate::service::atc::bandit::ThompsonBandit;
use crate::service::atc::drift::DriftTracker;
use crate::service::atc::state::{AtcState, Observation, WINDOW_CAPACITY};
use crate::service::atc::thresholds::{THRESHOLD_COUNT, ThresholdName, ThresholdSet};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::{StoreError, count as stored_count, from_us, in_range, to_us};

pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("ATC: {what}"))
}

pub(crate) fn parse_domain(s: &str) -> Result<Domain, StoreError> {
    Domain::parse(s).ok_or_else(|| corrupt(format!("unknown domain {s:?}")))
}

pub(crate) fn parse_name(s: &str) -> Result<ThresholdName, StoreError> {
    ThresholdName::parse(s).ok_or_else(|| corrupt(format!("unknown threshold {s:?}")))
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

pub(crate) fn tracker(
    alpha: f64,
    mean: f64,
    variance: f64,
    count: i64,
) -> Result<DriftTracker, StoreError> {
    let count = stored_count("ATC: drift sample count", count)?;
    DriftTracker::from_parts(alpha, mean, variance, count).map_err(corrupt)
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

/// An `atc_observations` row as read by [`LOAD_OBSERVATIONS`] (columns in field order; read
/// with [`RawObservation::read`], checked by [`state_from_rows`]).
pub(crate) struct RawObservation {
    /// When the outcome was observed: microseconds since the Unix epoch, UTC.
    pub(crate) ts_us: i64,
    /// Embedder id, `1..=13` (anything else is corrupt).
    pub(crate) embedder_id: i64,
    /// The reported (uncalibrated) confidence, in [0, 1].
    pub(crate) confidence: f64,
    /// Whether the prediction turned out correct.
    pub(crate) correct: bool,
    /// The domain's stored name (see `Domain::parse`).
    pub(crate) domain: String,
    /// The stored name of the threshold applied, if any (see `ThresholdName::parse`).
    pub(crate) threshold_name: Option<String>,
    /// The threshold value applied, if any, in [0, 1].
    pub(crate) threshold_used: Option<f64>,
}

impl RawObservation {
    /// The observation row `r`, in [`LOAD_OBSERVATIONS`] column order.
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawObservation {
            ts_us: r.int(0)?,
            embedder_id: r.int(1)?,
            confidence: r.real(2)?,
            correct: r.flag(3)?,
            domain: r.text(4)?,
            threshold_name: r.opt_text(5)?,
            threshold_used: r.opt_real(6)?,
        })
    }
}

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
    for raw in rows.observations {
        let e = raw.embedder_id;
        let o = Observation {
            timestamp: from_us(raw.ts_us)?,
            embedder_id: u8::try_from(e).map_err(|_| corrupt(format!("embedder {e}")))?,
            confidence: raw.confidence,
            correct: raw.correct,
            domain: parse_domain(&raw.domain)?,
            threshold_name: raw.threshold_name.as_deref().map(parse_name).transpose()?,
            threshold_used: raw.threshold_used,
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

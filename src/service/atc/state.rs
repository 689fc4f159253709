//! [`AtcState`]: the ATC aggregate (thresholds, temperatures, bandits, drift, observation windows)
//! and the four levels as pure methods returning measured before/after reports.
//!
//! SPEC §4 atc; issue 4. Time is passed in (`now`), randomness through an RNG argument.

use std::collections::VecDeque;

use chrono::{DateTime, Duration, Utc};
use rand::Rng;
use thiserror::Error;

use super::bandit::{Selection, ThompsonBandit};
use super::drift::{DEFAULT_ALPHA, DriftTracker, recommended_levels};
use super::level4::{self, Level4Error, ThetaOptimum};
use super::metrics::{CalibrationMetrics, CalibrationStatus};
use super::temperature::{
    self, CV_FOLDS, MATERIAL_CHANGE_FACTOR, RangeBound, SkipReason, TemperatureFit,
    TemperatureRange,
};
use super::thresholds::{THRESHOLD_COUNT, ThetaAccChange, ThresholdName, ThresholdSet};
use crate::service::gp::BoConfig;
use crate::service::vocab::{Domain, NUM_EMBEDDERS};

/// Observations kept per embedder (the most recently received): 10,000, in memory and in the
/// store, which trims to it. At least 1; memory and a reload grow with it. Source: commit
/// ededaad; equal to the largest `record_calibration_observations` call (SPEC: 1..10000 per
/// call).
pub const WINDOW_CAPACITY: usize = 10_000;

/// Level 4 is due again this long after its last run.
pub fn level4_interval() -> Duration {
    Duration::days(7)
}

/// One calibration observation: an embedder reported `confidence` and the outcome was `correct`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// When the outcome was observed (caller-supplied, default the time of recording).
    pub timestamp: DateTime<Utc>,
    /// Embedder id `1..=13`.
    pub embedder_id: u8,
    /// Reported (raw, uncalibrated) confidence in `[0, 1]`.
    pub confidence: f64,
    /// Whether the prediction turned out correct.
    pub correct: bool,
    /// Domain of the observation (default general).
    pub domain: Domain,
    /// Which threshold was applied, if any.
    pub threshold_name: Option<ThresholdName>,
    /// The threshold value that was applied, if any, in `[0, 1]`.
    pub threshold_used: Option<f64>,
}

/// Why an observation or stored part was refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AtcError {
    /// Embedder id outside `1..=13`.
    #[error("embedder_id {0} is outside 1..=13")]
    InvalidEmbedder(u8),
    /// Confidence NaN or outside `[0, 1]`.
    #[error("confidence {0} is not a number in [0, 1]")]
    InvalidConfidence(f64),
    /// `threshold_used` NaN or outside `[0, 1]`.
    #[error("threshold_used {0} is not a number in [0, 1]")]
    InvalidThresholdUsed(f64),
    /// Stored parts have the wrong shape.
    #[error("ATC state parts are inconsistent: {0}")]
    InvalidParts(String),
}

impl Observation {
    /// Checks the ranges documented on the fields.
    ///
    /// # Errors
    /// [`AtcError::InvalidEmbedder`], [`AtcError::InvalidConfidence`] or
    /// [`AtcError::InvalidThresholdUsed`].
    pub fn validate(&self) -> Result<(), AtcError> {
        if !(1..=NUM_EMBEDDERS as u8).contains(&self.embedder_id) {
            return Err(AtcError::InvalidEmbedder(self.embedder_id));
        }
        if !(0.0..=1.0).contains(&self.confidence) {
            return Err(AtcError::InvalidConfidence(self.confidence));
        }
        if let Some(t) = self.threshold_used
            && !(0.0..=1.0).contains(&t)
        {
            return Err(AtcError::InvalidThresholdUsed(t));
        }
        Ok(())
    }
}

/// What ingesting one observation changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestEffect {
    /// The domain's bandit candidate that was credited, if `threshold_used` matched one.
    pub bandit_candidate: Option<usize>,
    /// Whether a threshold drift tracker was updated (`threshold_name` and `threshold_used` set).
    pub threshold_tracked: bool,
    /// Whether the embedder's window was full and dropped its oldest observation.
    pub evicted: bool,
}

/// What ingesting a batch changed, summed over its observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestSummary {
    /// Observations taken in.
    pub accepted: usize,
    /// Observations that credited a bandit candidate.
    pub bandit_updates: usize,
    /// Observations that updated a threshold drift tracker.
    pub threshold_drift_updates: usize,
    /// Older observations dropped from full windows.
    pub evicted: usize,
}

/// An observation of a batch was refused.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("observation {index}: {error}")]
pub struct BatchError {
    /// Its position in the batch.
    pub index: usize,
    /// Why.
    pub error: AtcError,
}

/// Which observations to measure.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ObservationFilter {
    /// Only observations with `timestamp ≥ since`.
    pub since: Option<DateTime<Utc>>,
    /// Only this domain.
    pub domain: Option<Domain>,
    /// Only this embedder (`1..=13`).
    pub embedder_id: Option<u8>,
}

impl ObservationFilter {
    fn accepts(&self, o: &Observation) -> bool {
        self.since.is_none_or(|s| o.timestamp >= s)
            && self.domain.is_none_or(|d| o.domain == d)
            && self.embedder_id.is_none_or(|e| o.embedder_id == e)
    }
}

/// Calibration of one set of observations, raw and after temperature scaling. `None` when the
/// set is empty.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsPair {
    /// On the reported confidences.
    pub raw: Option<CalibrationMetrics>,
    /// On `σ(logit(p)/T_e)` with each observation's embedder temperature `T_e`.
    pub calibrated: Option<CalibrationMetrics>,
}

/// Level 1 drift of one threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdDrift {
    /// Threshold name.
    pub name: ThresholdName,
    /// Baseline: the domain's current value.
    pub baseline: f64,
    /// EWMA of `threshold_used`.
    pub ewma: f64,
    /// Exponentially weighted standard deviation.
    pub sigma: f64,
    /// `|ewma − baseline| / σ` (0 when σ = 0).
    pub score: f64,
    /// Observations tracked.
    pub count: u64,
    /// Levels recommended ([`recommended_levels`]).
    pub recommended_levels: Vec<u8>,
}

/// Level 1 drift of one embedder's calibration gap.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderDrift {
    /// Embedder id `1..=13`.
    pub embedder_id: u8,
    /// EWMA of `calibrated confidence − correct` (baseline 0).
    pub ewma: f64,
    /// Exponentially weighted standard deviation.
    pub sigma: f64,
    /// `|ewma| / σ` (0 when σ = 0).
    pub score: f64,
    /// Observations tracked.
    pub count: u64,
    /// Levels recommended ([`recommended_levels`]).
    pub recommended_levels: Vec<u8>,
}

/// Level 1 report for one domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Level1Report {
    /// Domain reported.
    pub domain: Domain,
    /// Calibrated status of the domain's observations (`None` without data), used for the
    /// Level 4 recommendation.
    pub status: Option<CalibrationStatus>,
    /// Thresholds of the domain that have tracked observations, in catalogue order.
    pub thresholds: Vec<ThresholdDrift>,
    /// Embedders that have observations, by id.
    pub embedders: Vec<EmbedderDrift>,
}

impl Level1Report {
    /// Every level some tracker recommends, ascending, without repeats.
    pub fn levels(&self) -> Vec<u8> {
        let mut levels: Vec<u8> = self
            .thresholds
            .iter()
            .flat_map(|t| t.recommended_levels.iter().copied())
            .chain(
                self.embedders
                    .iter()
                    .flat_map(|e| e.recommended_levels.iter().copied()),
            )
            .collect();
        levels.sort_unstable();
        levels.dedup();
        levels
    }

    fn level_lists_mut(&mut self) -> impl Iterator<Item = &mut Vec<u8>> {
        self.thresholds
            .iter_mut()
            .map(|t| &mut t.recommended_levels)
            .chain(self.embedders.iter_mut().map(|e| &mut e.recommended_levels))
    }
}

/// Level 2 result for one embedder.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderCalibration {
    /// Embedder id `1..=13`.
    pub embedder_id: u8,
    /// Observations in the embedder's window.
    pub samples: usize,
    /// Temperature before.
    pub temperature_before: f64,
    /// Temperature after (equal to before when skipped).
    pub temperature_after: f64,
    /// Mean NLL at the old temperature (`None` when the window is empty).
    pub nll_before: Option<f64>,
    /// Mean NLL at the new temperature.
    pub nll_after: Option<f64>,
    /// ECE of the window's calibrated confidences at the old temperature.
    pub ece_before: Option<f64>,
    /// ECE at the new temperature, measured on the same window the temperature was fitted on
    /// (in sample, so optimistic).
    pub ece_after: Option<f64>,
    /// ECE of the window out of sample: each of [`temperature::CV_FOLDS`] contiguous folds of
    /// the window (in the order received) calibrated with the temperature fitted on the other
    /// folds ([`temperature::fold_temperatures`]), pooled. `None` when nothing was fitted.
    pub ece_after_cross_validated: Option<f64>,
    /// `Some` when the optimum is a range bound.
    pub at_bound: Option<RangeBound>,
    /// `Some` when nothing was fitted.
    pub skipped: Option<SkipReason>,
}

/// Level 2 report: every embedder, by id, and the ECE of all windows together.
#[derive(Debug, Clone, PartialEq)]
pub struct Level2Report {
    /// One entry per embedder `1..=13`.
    pub embedders: Vec<EmbedderCalibration>,
    /// Whether the new temperatures were applied (false for a dry run).
    pub applied: bool,
    /// ECE of every window's observations at the new temperatures, measured on the data they
    /// were fitted on (equals the calibrated ECE of all observations after an applied run);
    /// `None` without observations.
    pub ece_after_in_sample: Option<f64>,
    /// ECE of every window's observations out of sample: a fitted embedder's observations are
    /// calibrated with their fold's temperature ([`EmbedderCalibration::ece_after_cross_validated`]),
    /// the others with their unchanged temperature; pooled into one ECE. `None` without
    /// observations.
    pub ece_after_cross_validated: Option<f64>,
}

/// Level 3 report.
#[derive(Debug, Clone, PartialEq)]
pub struct Level3Report {
    /// Domain of the bandit.
    pub domain: Domain,
    /// Whether the statistics were reset first.
    pub reset: bool,
    /// The Thompson draw.
    pub selection: Selection,
    /// The bandit after the call (statistics and candidates).
    pub bandit: ThompsonBandit,
    /// Whether the selection was stored as the domain's session threshold.
    pub applied: bool,
}

/// Level 4 outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Level4Outcome {
    /// The optimiser ran.
    Ran {
        /// What it found.
        optimum: ThetaOptimum,
        /// The change applied (`None` when not strictly better, or a dry run).
        applied: Option<ThetaAccChange>,
    },
    /// The optimiser did not run.
    Skipped(Level4Error),
}

/// Level 4 report.
#[derive(Debug, Clone, PartialEq)]
pub struct Level4Report {
    /// Domain optimised.
    pub domain: Domain,
    /// [`AtcState::should_optimize_level4`] before the run.
    pub should_optimize: bool,
    /// What happened.
    pub outcome: Level4Outcome,
}

/// Apply a level's result, or only compute it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Change the state.
    Apply,
    /// Compute and report; change nothing.
    DryRun,
}

/// The whole ATC state. Fields are plain so the store can persist and rebuild them exactly;
/// per-domain vectors are indexed by [`Domain::index`], per-embedder ones by `embedder_id − 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct AtcState {
    /// Current thresholds, one set per domain (6).
    pub thresholds: Vec<ThresholdSet>,
    /// Current temperature per embedder (13), each within its [`TemperatureRange`].
    pub temperatures: Vec<f64>,
    /// Level 3 bandit per domain (6).
    pub bandits: Vec<ThompsonBandit>,
    /// Last Level 3 selection per domain (6), the session threshold; `None` before any.
    pub selected: Vec<Option<f64>>,
    /// Level 1 tracker per domain and threshold (6 × 20, row-major by domain).
    pub threshold_drift: Vec<DriftTracker>,
    /// Level 1 calibration-gap tracker per embedder (13).
    pub gap_drift: Vec<DriftTracker>,
    /// Last [`WINDOW_CAPACITY`] observations per embedder (13), oldest first.
    pub windows: Vec<VecDeque<Observation>>,
    /// Time of the last applied Level 4 run per domain (6).
    pub last_level4: Vec<Option<DateTime<Utc>>>,
}

impl Default for AtcState {
    fn default() -> Self {
        AtcState::new()
    }
}

fn tracker() -> DriftTracker {
    DriftTracker::new(DEFAULT_ALPHA).expect("the default alpha is valid")
}

impl AtcState {
    /// Defaults: every domain's default thresholds, every embedder's default temperature, fresh
    /// bandits and trackers (α = 0.2), empty windows, Level 4 never run.
    pub fn new() -> AtcState {
        AtcState {
            thresholds: Domain::ALL.map(ThresholdSet::defaults).to_vec(),
            temperatures: (1..=NUM_EMBEDDERS as u8)
                .map(|e| TemperatureRange::for_embedder(e).map_or(1.0, |r| r.default))
                .collect(),
            bandits: vec![ThompsonBandit::new(); Domain::COUNT],
            selected: vec![None; Domain::COUNT],
            threshold_drift: vec![tracker(); Domain::COUNT * THRESHOLD_COUNT],
            gap_drift: vec![tracker(); NUM_EMBEDDERS],
            windows: vec![VecDeque::new(); NUM_EMBEDDERS],
            last_level4: vec![None; Domain::COUNT],
        }
    }

    /// Checks the shape of a state rebuilt from stored parts: vector lengths, domains of the
    /// threshold sets in order, temperatures within their ranges, windows within capacity and
    /// holding only their own embedder's valid observations.
    ///
    /// # Errors
    /// [`AtcError::InvalidParts`] describing the first problem.
    pub fn validate(&self) -> Result<(), AtcError> {
        let bad = |m: String| Err(AtcError::InvalidParts(m));
        let lens = [
            ("thresholds", self.thresholds.len(), Domain::COUNT),
            ("temperatures", self.temperatures.len(), NUM_EMBEDDERS),
            ("bandits", self.bandits.len(), Domain::COUNT),
            ("selected", self.selected.len(), Domain::COUNT),
            (
                "threshold_drift",
                self.threshold_drift.len(),
                Domain::COUNT * THRESHOLD_COUNT,
            ),
            ("gap_drift", self.gap_drift.len(), NUM_EMBEDDERS),
            ("windows", self.windows.len(), NUM_EMBEDDERS),
            ("last_level4", self.last_level4.len(), Domain::COUNT),
        ];
        for (what, have, want) in lens {
            if have != want {
                return bad(format!("{what} has {have} entries, expected {want}"));
            }
        }
        for (set, domain) in self.thresholds.iter().zip(Domain::ALL) {
            if set.domain() != domain {
                return bad(format!("threshold set for {} out of order", set.domain()));
            }
        }
        for (i, &t) in self.temperatures.iter().enumerate() {
            let range = TemperatureRange::for_embedder(i as u8 + 1).expect("1..=13");
            if !(range.lo..=range.hi).contains(&t) {
                return bad(format!(
                    "temperature {t} of E{} outside [{}, {}]",
                    i + 1,
                    range.lo,
                    range.hi
                ));
            }
        }
        for (i, w) in self.windows.iter().enumerate() {
            if w.len() > WINDOW_CAPACITY {
                return bad(format!("window of E{} holds {}", i + 1, w.len()));
            }
            for o in w {
                o.validate()?;
                if usize::from(o.embedder_id) != i + 1 {
                    return bad(format!(
                        "E{} observation in E{}'s window",
                        o.embedder_id,
                        i + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// Current thresholds of `domain`.
    pub fn thresholds(&self, domain: Domain) -> &ThresholdSet {
        &self.thresholds[domain.index()]
    }

    /// Current temperature of embedder `embedder_id ∈ 1..=13` (1.0 for any other id).
    pub fn temperature(&self, embedder_id: u8) -> f64 {
        usize::from(embedder_id)
            .checked_sub(1)
            .and_then(|i| self.temperatures.get(i))
            .copied()
            .unwrap_or(1.0)
    }

    /// `o.confidence` scaled by its embedder's current temperature.
    pub fn calibrated(&self, o: &Observation) -> f64 {
        temperature::calibrate(o.confidence, self.temperature(o.embedder_id))
    }

    /// Level 1 tracker of `(domain, name)`.
    pub fn threshold_tracker(&self, domain: Domain, name: ThresholdName) -> &DriftTracker {
        &self.threshold_drift[domain.index() * THRESHOLD_COUNT + name.index()]
    }

    /// Takes in one observation: appends it to its embedder's window (dropping the oldest beyond
    /// [`WINDOW_CAPACITY`]); updates the embedder's calibration-gap tracker with
    /// `calibrated confidence − correct`; with `threshold_name` and `threshold_used`, updates that
    /// threshold's drift tracker in the observation's domain; with a `threshold_used` within
    /// 1e-6 of a bandit candidate, credits the domain's bandit (success = `correct`).
    ///
    /// # Errors
    /// [`Observation::validate`]'s errors; the state is then unchanged.
    pub fn ingest(&mut self, o: Observation) -> Result<IngestEffect, AtcError> {
        o.validate()?;
        let mut effect = IngestEffect::default();
        let e = usize::from(o.embedder_id) - 1;
        let gap = self.calibrated(&o) - if o.correct { 1.0 } else { 0.0 };
        self.gap_drift[e].update(gap);
        let d = o.domain.index();
        if let (Some(name), Some(used)) = (o.threshold_name, o.threshold_used) {
            self.threshold_drift[d * THRESHOLD_COUNT + name.index()].update(used);
            effect.threshold_tracked = true;
        }
        if let Some(used) = o.threshold_used {
            effect.bandit_candidate = self.bandits[d].update(used, o.correct).ok();
        }
        let window = &mut self.windows[e];
        window.push_back(o);
        if window.len() > WINDOW_CAPACITY {
            window.pop_front();
            effect.evicted = true;
        }
        Ok(effect)
    }

    /// Takes in a batch ([`AtcState::ingest`] for each, in order) and sums the effects. Every
    /// observation is checked first, so a refused batch changes nothing.
    ///
    /// # Errors
    /// [`BatchError`] with the position and the reason of the first invalid observation.
    pub fn ingest_batch(
        &mut self,
        observations: &[Observation],
    ) -> Result<IngestSummary, BatchError> {
        let refused = |index: usize| move |error: AtcError| BatchError { index, error };
        for (index, o) in observations.iter().enumerate() {
            o.validate().map_err(refused(index))?;
        }
        let mut sum = IngestSummary::default();
        for (index, o) in observations.iter().enumerate() {
            let effect = self.ingest(*o).map_err(refused(index))?;
            sum.accepted += 1;
            sum.bandit_updates += usize::from(effect.bandit_candidate.is_some());
            sum.threshold_drift_updates += usize::from(effect.threshold_tracked);
            sum.evicted += usize::from(effect.evicted);
        }
        Ok(sum)
    }

    /// Observations held per embedder, by id − 1.
    pub fn window_sizes(&self) -> [usize; NUM_EMBEDDERS] {
        std::array::from_fn(|i| self.windows[i].len())
    }

    /// Observations in the windows that pass `filter`, grouped by embedder id.
    pub fn observations<'a>(
        &'a self,
        filter: &'a ObservationFilter,
    ) -> impl Iterator<Item = &'a Observation> + 'a {
        self.windows.iter().flatten().filter(|o| filter.accepts(o))
    }

    /// Raw and calibrated metrics of the observations passing `filter`.
    pub fn metrics(&self, filter: &ObservationFilter) -> MetricsPair {
        let raw = CalibrationMetrics::compute(
            self.observations(filter).map(|o| (o.confidence, o.correct)),
        )
        .ok();
        let calibrated = CalibrationMetrics::compute(
            self.observations(filter)
                .map(|o| (self.calibrated(o), o.correct)),
        )
        .ok();
        MetricsPair { raw, calibrated }
    }

    /// Calibrated status of `domain`'s observations; `None` without data.
    pub fn domain_status(&self, domain: Domain) -> Option<CalibrationStatus> {
        let filter = ObservationFilter {
            domain: Some(domain),
            ..ObservationFilter::default()
        };
        self.metrics(&filter).calibrated.map(|m| m.status())
    }

    /// Level 1: drift of `domain`'s tracked thresholds (baseline = current value) and of every
    /// embedder's calibration gap (baseline 0), with the levels each recommends
    /// ([`recommended_levels`]), except Level 2 when it would change no temperature
    /// ([`AtcState::level2_would_change`]). Reads only.
    pub fn run_level1(&self, domain: Domain) -> Level1Report {
        let status = self.domain_status(domain);
        let set = self.thresholds(domain);
        let thresholds = ThresholdName::ALL
            .into_iter()
            .filter_map(|name| {
                let t = self.threshold_tracker(domain, name);
                (t.count() > 0).then(|| {
                    let baseline = set.get(name);
                    let score = t.score(baseline);
                    ThresholdDrift {
                        name,
                        baseline,
                        ewma: t.mean(),
                        sigma: t.std_dev(),
                        score,
                        count: t.count(),
                        recommended_levels: recommended_levels(score, status),
                    }
                })
            })
            .collect();
        let embedders = self
            .gap_drift
            .iter()
            .enumerate()
            .filter(|(_, t)| t.count() > 0)
            .map(|(i, t)| {
                let score = t.score(0.0);
                EmbedderDrift {
                    embedder_id: i as u8 + 1,
                    ewma: t.mean(),
                    sigma: t.std_dev(),
                    score,
                    count: t.count(),
                    recommended_levels: recommended_levels(score, status),
                }
            })
            .collect();
        let mut report = Level1Report {
            domain,
            status,
            thresholds,
            embedders,
        };
        if report.levels().contains(&2) && !self.level2_would_change(None) {
            for levels in report.level_lists_mut() {
                levels.retain(|&l| l != 2);
            }
        }
        report
    }

    /// Level 2: fits every embedder's temperature on its window ([`temperature::fit_temperature`]
    /// within [`TemperatureRange::for_embedder`]), reporting T, NLL and ECE before and after,
    /// measured on the window, and the ECE after cross-validated over
    /// [`temperature::CV_FOLDS`] folds of the window, per embedder and pooled over all windows.
    /// With [`RunMode::Apply`] the fitted temperatures replace the current ones; skipped
    /// embedders keep theirs.
    pub fn run_level2(&mut self, mode: RunMode) -> Level2Report {
        let mut embedders = Vec::with_capacity(NUM_EMBEDDERS);
        // (calibrated confidence, correct) of every observation, in sample and out of fold.
        let mut in_sample: Vec<(f64, bool)> = Vec::new();
        let mut out_of_fold: Vec<(f64, bool)> = Vec::new();
        for e in 1..=NUM_EMBEDDERS as u8 {
            let range = TemperatureRange::for_embedder(e).expect("1..=13");
            let window = &self.windows[usize::from(e) - 1];
            // Signed logits t = ±logit(p), computed once and shared by the fit and the
            // before/after measurements (logit(p) = t for correct, −t otherwise).
            let t: Vec<f64> = window
                .iter()
                .map(|o| temperature::signed_logit(o.confidence, o.correct))
                .collect();
            let before = self.temperature(e);
            // z = logit(p) = ±t; the calibrated confidence at T is σ(z / T).
            let scaled = |temp: f64| {
                window.iter().zip(&t).map(move |(o, &ti)| {
                    let z = if o.correct { ti } else { -ti };
                    (temperature::sigmoid(z / temp), o.correct)
                })
            };
            let ece = |pairs: &[(f64, bool)]| {
                CalibrationMetrics::compute(pairs.iter().copied())
                    .ok()
                    .map(|m| m.ece)
            };
            let nll = |temp: f64| (!t.is_empty()).then(|| temperature::nll_signed(&t, temp));
            let nll_before = nll(before);
            let ece_before = ece(&scaled(before).collect::<Vec<_>>());
            // Started from the current temperature, which is usually near the optimum.
            let fit = temperature::fit_signed_logits_from(&t, range, before);
            let (after, nll_after, at_bound, skipped) = match fit {
                TemperatureFit::Fitted(f) => (f.temperature, Some(f.nll), f.at_bound, None),
                TemperatureFit::Skipped(why) => (before, nll_before, None, Some(why)),
            };
            let after_pairs: Vec<(f64, bool)> = scaled(after).collect();
            let ece_after = ece(&after_pairs);
            in_sample.extend_from_slice(&after_pairs);
            let ece_after_cross_validated = if skipped.is_none() {
                let start = out_of_fold.len();
                let per_fold = temperature::fold_temperatures(&t, range, after, before, CV_FOLDS);
                for (fold, temp) in per_fold {
                    let held_out = fold.map(|i| {
                        let z = if window[i].correct { t[i] } else { -t[i] };
                        (temperature::sigmoid(z / temp), window[i].correct)
                    });
                    out_of_fold.extend(held_out);
                }
                ece(&out_of_fold[start..])
            } else {
                out_of_fold.extend_from_slice(&after_pairs);
                None
            };
            if mode == RunMode::Apply {
                self.temperatures[usize::from(e) - 1] = after;
            }
            embedders.push(EmbedderCalibration {
                embedder_id: e,
                samples: t.len(),
                temperature_before: before,
                temperature_after: after,
                nll_before,
                nll_after,
                ece_before,
                ece_after,
                ece_after_cross_validated,
                at_bound,
                skipped,
            });
        }
        let ece = |pairs: Vec<(f64, bool)>| CalibrationMetrics::compute(pairs).ok().map(|m| m.ece);
        Level2Report {
            embedders,
            applied: mode == RunMode::Apply,
            ece_after_in_sample: ece(in_sample),
            ece_after_cross_validated: ece(out_of_fold),
        }
    }

    /// Whether Level 2 would move some temperature materially
    /// ([`temperature::refit_would_move`] with [`MATERIAL_CHANGE_FACTOR`]): of embedder
    /// `embedder_id`, or of any embedder when `None`. False right after Level 2 ran on the same
    /// windows, which is when recommending it again would be noise.
    pub fn level2_would_change(&self, embedder_id: Option<u8>) -> bool {
        (1..=NUM_EMBEDDERS as u8)
            .filter(|&e| embedder_id.is_none_or(|only| only == e))
            .any(|e| {
                let range = TemperatureRange::for_embedder(e).expect("1..=13");
                let t: Vec<f64> = self.windows[usize::from(e) - 1]
                    .iter()
                    .map(|o| temperature::signed_logit(o.confidence, o.correct))
                    .collect();
                temperature::refit_would_move(
                    &t,
                    range,
                    self.temperature(e),
                    MATERIAL_CHANGE_FACTOR,
                )
            })
    }

    /// Level 3: Thompson selection from `domain`'s bandit (after forgetting its statistics when
    /// `reset`). With [`RunMode::Apply`] the reset is kept and the selection stored as the
    /// domain's session threshold ([`AtcState::selected`]); a dry run draws from a copy.
    pub fn run_level3<R: Rng + ?Sized>(
        &mut self,
        domain: Domain,
        reset: bool,
        mode: RunMode,
        rng: &mut R,
    ) -> Level3Report {
        let d = domain.index();
        let mut bandit = self.bandits[d].clone();
        if reset {
            bandit.reset();
        }
        let selection = bandit.select(rng);
        if mode == RunMode::Apply {
            self.bandits[d] = bandit.clone();
            self.selected[d] = Some(selection.threshold);
        }
        Level3Report {
            domain,
            reset,
            selection,
            bandit,
            applied: mode == RunMode::Apply,
        }
    }

    /// `(calibrated confidence, correct)` of `domain`'s observations in the windows.
    pub fn domain_samples(&self, domain: Domain) -> Vec<(f64, bool)> {
        let filter = ObservationFilter {
            domain: Some(domain),
            ..ObservationFilter::default()
        };
        self.observations(&filter)
            .map(|o| (self.calibrated(o), o.correct))
            .collect()
    }

    /// Whether Level 4 should run for `domain` at `now`: the domain has at least
    /// [`level4::MIN_OBSERVATIONS`] observations, and either its calibrated status is Poor or
    /// Critical, or Level 4 has never run for it, or its last run is at least
    /// [`level4_interval`] (7 days) old.
    pub fn should_optimize_level4(&self, domain: Domain, now: DateTime<Utc>) -> bool {
        let filter = ObservationFilter {
            domain: Some(domain),
            ..ObservationFilter::default()
        };
        if self.observations(&filter).count() < level4::MIN_OBSERVATIONS {
            return false;
        }
        let poor = self
            .domain_status(domain)
            .is_some_and(CalibrationStatus::needs_level4);
        let due =
            self.last_level4[domain.index()].is_none_or(|last| now - last >= level4_interval());
        poor || due
    }

    /// Level 4: maximises the balanced accuracy of `calibrated confidence ≥ θ` on `domain`'s
    /// observations over `theta_acc`'s range ([`level4::optimize_theta_acc`] with `cfg`). With
    /// [`RunMode::Apply`], a strictly better θ is applied through
    /// [`ThresholdSet::apply_theta_acc`] (moving `theta_opt`/`theta_warn` only as needed) and
    /// the run time is recorded as the domain's last Level 4 run.
    pub fn run_level4(
        &mut self,
        domain: Domain,
        now: DateTime<Utc>,
        mode: RunMode,
        cfg: &BoConfig,
    ) -> Level4Report {
        let should_optimize = self.should_optimize_level4(domain, now);
        let samples = self.domain_samples(domain);
        let d = domain.index();
        let current = self.thresholds[d].get(ThresholdName::ThetaAcc);
        let outcome = match level4::optimize_theta_acc(&samples, current, cfg) {
            Err(e) => Level4Outcome::Skipped(e),
            Ok(optimum) => {
                let mut applied = None;
                if mode == RunMode::Apply {
                    if optimum.improves {
                        // θ comes from theta_acc's own range, so this cannot be refused.
                        applied = self.thresholds[d].apply_theta_acc(optimum.theta).ok();
                    }
                    self.last_level4[d] = Some(now);
                }
                Level4Outcome::Ran { optimum, applied }
            }
        };
        Level4Report {
            domain,
            should_optimize,
            outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::atc::level4::level4_bo_config;
    use crate::service::atc::temperature::sigmoid;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use rand_distr::{Distribution, Normal};

    const TOL: f64 = 1e-12;

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    fn obs(embedder_id: u8, confidence: f64, correct: bool) -> Observation {
        Observation {
            timestamp: t0(),
            embedder_id,
            confidence,
            correct,
            domain: Domain::General,
            threshold_name: None,
            threshold_used: None,
        }
    }

    /// Over-confident observations: z ~ N(1, 1.5²), correct ~ Bernoulli(σ(z)), reported σ(2z).
    fn overconfident(embedder_id: u8, n: usize, seed: u64) -> Vec<Observation> {
        let mut rng = StdRng::seed_from_u64(seed);
        let normal = Normal::new(1.0, 1.5).unwrap();
        (0..n)
            .map(|_| {
                let z: f64 = normal.sample(&mut rng);
                let u: f64 = rng.random();
                obs(embedder_id, sigmoid(2.0 * z), u < sigmoid(z))
            })
            .collect()
    }

    #[test]
    fn defaults_are_valid() {
        let s = AtcState::new();
        s.validate().unwrap();
        assert_eq!(s.temperature(5), 1.2);
        assert_eq!(s.temperature(9), 1.5);
        assert_eq!(s.temperature(0), 1.0);
        assert!(!s.should_optimize_level4(Domain::General, t0()));
    }

    #[test]
    fn ingest_validates_and_feeds_every_consumer() {
        let mut s = AtcState::new();
        for bad in [
            obs(0, 0.5, true),
            obs(14, 0.5, true),
            obs(1, f64::NAN, true),
            obs(1, 1.5, true),
            Observation {
                threshold_used: Some(-0.1),
                ..obs(1, 0.5, true)
            },
        ] {
            assert!(s.ingest(bad).is_err());
        }
        assert_eq!(s, AtcState::new());

        let o = Observation {
            domain: Domain::Code,
            threshold_name: Some(ThresholdName::ThetaAcc),
            threshold_used: Some(0.75),
            ..obs(3, 0.9, true)
        };
        let effect = s.ingest(o).unwrap();
        assert_eq!(
            effect,
            IngestEffect {
                bandit_candidate: Some(2),
                threshold_tracked: true,
                evicted: false
            }
        );
        assert_eq!(s.bandits[Domain::Code.index()].successes()[2], 1);
        assert_eq!(
            s.threshold_tracker(Domain::Code, ThresholdName::ThetaAcc)
                .count(),
            1
        );
        assert_eq!(s.gap_drift[2].count(), 1);
        // E3's default T = 1, so the gap is 0.9 − 1 (up to the logit round trip).
        assert!((s.gap_drift[2].mean() - (0.9 - 1.0)).abs() < 1e-9);
        assert_eq!(s.windows[2].len(), 1);
        s.validate().unwrap();
    }

    #[test]
    fn windows_are_bounded() {
        let mut s = AtcState::new();
        for i in 0..WINDOW_CAPACITY + 5 {
            let effect = s
                .ingest(obs(1, (i % 100) as f64 / 100.0, i % 2 == 0))
                .unwrap();
            assert_eq!(effect.evicted, i >= WINDOW_CAPACITY);
        }
        assert_eq!(s.windows[0].len(), WINDOW_CAPACITY);
        // The five oldest (confidences 0.00..0.04) were dropped.
        assert_eq!(s.windows[0].front().unwrap().confidence, 0.05);
    }

    #[test]
    fn metrics_filter_by_time_domain_and_embedder() {
        let mut s = AtcState::new();
        let early = Observation {
            timestamp: t0() - Duration::hours(30),
            ..obs(1, 0.9, false)
        };
        let late = Observation {
            domain: Domain::Medical,
            ..obs(2, 0.6, true)
        };
        s.ingest(early).unwrap();
        s.ingest(late).unwrap();
        let all = s.metrics(&ObservationFilter::default());
        assert_eq!(all.raw.as_ref().unwrap().count, 2);
        let last_day = ObservationFilter {
            since: Some(t0() - Duration::hours(24)),
            ..ObservationFilter::default()
        };
        let m = s.metrics(&last_day).raw.unwrap();
        // Only (0.6, correct): ECE = |1 − 0.6| = 0.4, Brier = 0.16.
        assert_eq!(m.count, 1);
        assert!((m.ece - 0.4).abs() < TOL);
        assert!((m.brier - 0.16).abs() < TOL);
        let general = ObservationFilter {
            domain: Some(Domain::General),
            ..ObservationFilter::default()
        };
        assert_eq!(s.metrics(&general).raw.unwrap().count, 1);
        let e5 = ObservationFilter {
            embedder_id: Some(5),
            ..ObservationFilter::default()
        };
        assert_eq!(
            s.metrics(&e5),
            MetricsPair {
                raw: None,
                calibrated: None
            }
        );
    }

    #[test]
    fn level2_lowers_ece_of_overconfident_data_and_dry_run_changes_nothing() {
        let mut s = AtcState::new();
        for o in overconfident(1, 2000, 5) {
            s.ingest(o).unwrap();
        }
        for o in overconfident(2, 5, 6) {
            s.ingest(o).unwrap();
        }
        let before = s.clone();
        let dry = s.run_level2(RunMode::DryRun);
        assert_eq!(s, before);
        assert!(!dry.applied);
        let report = s.run_level2(RunMode::Apply);
        assert_eq!(report.embedders.len(), 13);
        let e1 = &report.embedders[0];
        assert_eq!(e1.samples, 2000);
        assert!(e1.temperature_after > 1.5, "{e1:?}");
        assert!(e1.nll_after.unwrap() < e1.nll_before.unwrap());
        assert!(e1.ece_after.unwrap() < e1.ece_before.unwrap());
        assert_eq!(s.temperature(1), e1.temperature_after);
        assert_eq!(dry.embedders[0], *e1);
        let e2 = &report.embedders[1];
        assert_eq!(
            e2.skipped,
            Some(SkipReason::TooFewSamples { have: 5, need: 10 })
        );
        assert_eq!(e2.temperature_after, e2.temperature_before);
        let e3 = &report.embedders[2];
        assert_eq!((e3.samples, e3.nll_before, e3.ece_before), (0, None, None));
        let m = s.metrics(&ObservationFilter {
            embedder_id: Some(1),
            ..ObservationFilter::default()
        });
        assert!(m.calibrated.unwrap().ece < m.raw.unwrap().ece);
    }

    #[test]
    fn level3_keeps_statistics_unless_reset() {
        let mut s = AtcState::new();
        for i in 0..10 {
            let o = Observation {
                threshold_used: Some(0.77),
                ..obs(1, 0.8, i < 9)
            };
            s.ingest(o).unwrap();
        }
        let mut rng = StdRng::seed_from_u64(1);
        let r = s.run_level3(Domain::General, false, RunMode::Apply, &mut rng);
        assert_eq!(r.bandit.successes()[3], 9);
        assert_eq!(s.bandits[5].total_pulls(), 10);
        assert_eq!(s.selected[5], Some(r.selection.threshold));
        let dry = s.run_level3(Domain::General, true, RunMode::DryRun, &mut rng);
        assert_eq!(dry.bandit.total_pulls(), 0);
        assert_eq!(s.bandits[5].total_pulls(), 10);
        let reset = s.run_level3(Domain::General, true, RunMode::Apply, &mut rng);
        assert!(reset.reset);
        assert_eq!(s.bandits[5].total_pulls(), 0);
    }

    #[test]
    fn level4_applies_a_better_theta_and_records_the_run() {
        let mut s = AtcState::new();
        // Correct answers at confidences ≥ 0.66, wrong ones ≤ 0.64: the best θ is in (0.64, 0.66].
        for i in 0..40 {
            let o = Observation {
                domain: Domain::Legal,
                ..obs(7, 0.66 + 0.3 * f64::from(i) / 40.0, true)
            };
            s.ingest(o).unwrap();
            let o = Observation {
                domain: Domain::Legal,
                ..obs(7, 0.64 - 0.3 * f64::from(i) / 40.0, false)
            };
            s.ingest(o).unwrap();
        }
        // Use T = 1 for E7 so calibrated = raw (E7's default is 0.9).
        s.temperatures[6] = 1.0;
        assert!(s.should_optimize_level4(Domain::Legal, t0()));
        let dry = s.run_level4(Domain::Legal, t0(), RunMode::DryRun, &level4_bo_config());
        assert_eq!(s.last_level4[2], None);
        let report = s.run_level4(Domain::Legal, t0(), RunMode::Apply, &level4_bo_config());
        assert_eq!(dry.outcome, report.outcome.clone().map_applied_none());
        let Level4Outcome::Ran { optimum, applied } = report.outcome else {
            panic!("skipped");
        };
        assert!((optimum.balanced_accuracy - 1.0).abs() < TOL);
        assert!(optimum.theta > 0.64 && optimum.theta <= 0.66, "{optimum:?}");
        let change = applied.unwrap();
        assert_eq!(change.theta_acc.1, optimum.theta);
        let set = s.thresholds(Domain::Legal);
        assert_eq!(set.get(ThresholdName::ThetaAcc), optimum.theta);
        assert!(set.get(ThresholdName::ThetaWarn) < optimum.theta);
        assert_eq!(s.last_level4[2], Some(t0()));
        // These separable data are badly calibrated (every wrong answer ≥ 0.34, every right one
        // ≤ 0.96 …), so Level 4 stays recommended regardless of the 7-day rule.
        assert!(s.domain_status(Domain::Legal).unwrap().needs_level4());
        assert!(s.should_optimize_level4(Domain::Legal, t0() + Duration::days(1)));
        // Too few observations elsewhere.
        let r = s.run_level4(Domain::Code, t0(), RunMode::Apply, &level4_bo_config());
        assert!(matches!(
            r.outcome,
            Level4Outcome::Skipped(Level4Error::TooFewObservations { have: 0, need: 20 })
        ));
    }

    #[test]
    fn level4_is_due_weekly_when_calibration_is_fine() {
        let mut s = AtcState::new();
        // 25 observations at 0.8 with 20 correct: every bin exact, ECE 0 (E1, T = 1).
        for i in 0..25 {
            s.ingest(obs(1, 0.8, i % 5 != 0)).unwrap();
        }
        assert_eq!(
            s.domain_status(Domain::General),
            Some(CalibrationStatus::Excellent)
        );
        assert!(s.should_optimize_level4(Domain::General, t0()));
        s.run_level4(Domain::General, t0(), RunMode::Apply, &level4_bo_config());
        assert!(!s.should_optimize_level4(Domain::General, t0() + Duration::days(6)));
        assert!(s.should_optimize_level4(Domain::General, t0() + Duration::days(7)));
    }

    impl Level4Outcome {
        fn map_applied_none(self) -> Level4Outcome {
            match self {
                Level4Outcome::Ran { optimum, .. } => Level4Outcome::Ran {
                    optimum,
                    applied: None,
                },
                other => other,
            }
        }
    }

    #[test]
    fn level1_reports_drift_of_used_thresholds() {
        let mut s = AtcState::new();
        // General theta_acc is 0.74; observations report 0.80 ± 0.01.
        for i in 0..60 {
            let o = Observation {
                threshold_name: Some(ThresholdName::ThetaAcc),
                threshold_used: Some(0.80 + if i % 2 == 0 { 0.01 } else { -0.01 }),
                ..obs(4, 0.7, i % 3 != 0)
            };
            s.ingest(o).unwrap();
        }
        let r = s.run_level1(Domain::General);
        assert_eq!(r.thresholds.len(), 1);
        let t = &r.thresholds[0];
        assert_eq!(t.name, ThresholdName::ThetaAcc);
        assert!((t.baseline - 0.74).abs() < TOL);
        assert!(t.score > 3.0, "{t:?}");
        assert!(t.recommended_levels.starts_with(&[2, 3]));
        assert_eq!(r.embedders.len(), 1);
        assert_eq!(r.embedders[0].embedder_id, 4);
        assert_eq!(r.embedders[0].count, 60);
    }
}

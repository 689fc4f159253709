//! Calibration of the memory's own judgements from their outcomes (issue 31): the blacklist's
//! "this repeats the failed approach" (source [`Source::Lessons`]) and the agent's stated
//! confidence in a hypothesis (source [`Source::Beliefs`]), beside the observations that
//! external pipelines record (source [`Source::Observations`], the per-embedder windows of
//! [`super::atc`]).
//!
//! An [`Outcome`] is one resolved judgement: the confidence stated at the time, the raw signal
//! behind it (the matcher's probability for a check; the stated confidence for a belief), and
//! whether it turned out right. Each source of a project has one temperature `T` (level 2:
//! temperature scaling, Guo et al. 2017 §4.2, fitted by [`crate::service::atc::temperature`]),
//! which maps a raw signal `r` to the calibrated probability `σ(logit(r)/T)`; level 1 is the
//! EWMA of the calibrated gap over the outcomes in order ([`drift`]). Everything here is a pure
//! function of the outcomes, so a report is reproducible from the store.

use chrono::{DateTime, Utc};

use super::atc::drift::{DEFAULT_ALPHA, DriftTracker, recommended_levels};
use super::atc::metrics::{CalibrationMetrics, CalibrationStatus};
use super::atc::state::MetricsPair;
use super::atc::temperature::{
    self, MATERIAL_CHANGE_FACTOR, TemperatureFit, TemperatureRange, signed_logit,
};
use crate::service::epistemic::{ActionType, Belief, BeliefStatus, WorkspaceSummary};

/// Where calibration outcomes come from.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Source {
    /// `record_calibration_observations`: embedders' confidences from external pipelines.
    Observations,
    /// Closed blacklist checks: the probability that a proposal repeats a lesson's approach.
    Lessons,
    /// Resolved beliefs: the confidence stated at `hypothesize` or `assert`.
    Beliefs,
}

impl Source {
    /// Every source, in the order reports list them.
    pub const ALL: [Source; 3] = [Source::Observations, Source::Lessons, Source::Beliefs];

    /// The wire name: `observations`, `lessons` or `beliefs`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One resolved judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// When it was resolved (UTC).
    pub at: DateTime<Utc>,
    /// The raw signal the stated confidence came from, in [0, 1]: what the temperature maps.
    pub raw: f64,
    /// The confidence stated at the time, in [0, 1].
    pub stated: f64,
    /// Whether it turned out right.
    pub correct: bool,
}

/// Resolved outcomes a source needs before answers show a calibrated confidence beside the
/// stated one (fewer say little about a temperature).
pub const MIN_CALIBRATION_OUTCOMES: usize = 20;

/// The temperature range of the lessons and beliefs sources: default 1 (the stated confidence
/// as is), fitted within [0.25, 4] (a quarter to four times the log-odds). Wider than the
/// embedders' ranges: a matcher's or a person's confidence has no prior scale.
pub const TEMPERATURE_RANGE: TemperatureRange = TemperatureRange {
    default: 1.0,
    lo: 0.25,
    hi: 4.0,
};

/// The calibrated probability of raw signal `raw` under temperature `temperature`:
/// `σ(logit(raw)/T)` ([`temperature::calibrate`]); exactly `raw` when `T = 1` (no rounding
/// through the logit, so an uncalibrated source decides as it always did).
pub fn calibrated(raw: f64, temperature: f64) -> f64 {
    if temperature == 1.0 {
        raw
    } else {
        temperature::calibrate(raw, temperature)
    }
}

/// Calibration of `outcomes`: `raw` on the stated confidences, `calibrated` on the raw signals
/// mapped by `temperature` (what the source would state now). Both `None` without outcomes.
pub fn metrics(outcomes: &[Outcome], temperature: f64) -> MetricsPair {
    let raw = CalibrationMetrics::compute(outcomes.iter().map(|o| (o.stated, o.correct))).ok();
    let calibrated = CalibrationMetrics::compute(
        outcomes
            .iter()
            .map(|o| (calibrated(o.raw, temperature), o.correct)),
    )
    .ok();
    MetricsPair { raw, calibrated }
}

/// Level 1 for a source: the EWMA ([`DEFAULT_ALPHA`]) of `calibrated − correct` over the
/// outcomes in the order given (oldest first), against a baseline of 0.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceDrift {
    /// EWMA of the gap.
    pub ewma: f64,
    /// Exponentially weighted standard deviation.
    pub sigma: f64,
    /// `|ewma| / σ` (0 when σ = 0).
    pub score: f64,
    /// Outcomes tracked.
    pub count: u64,
    /// Levels recommended ([`recommended_levels`]).
    pub recommended_levels: Vec<u8>,
}

/// [`SourceDrift`] of `outcomes` under `temperature`; `status` is the calibrated status band
/// (for the level recommendation).
pub fn drift(
    outcomes: &[Outcome],
    temperature: f64,
    status: Option<CalibrationStatus>,
) -> SourceDrift {
    let mut t = DriftTracker::new(DEFAULT_ALPHA).expect("DEFAULT_ALPHA is in range");
    for o in outcomes {
        let y = if o.correct { 1.0 } else { 0.0 };
        t.update(calibrated(o.raw, temperature) - y);
    }
    let score = t.score(0.0);
    SourceDrift {
        ewma: t.mean(),
        sigma: t.std_dev(),
        score,
        count: t.count(),
        recommended_levels: recommended_levels(score, status),
    }
}

/// Whether refitting the temperature on `outcomes` would move it by more than
/// [`MATERIAL_CHANGE_FACTOR`] from `current` (the level-2 recommendation).
pub fn refit_would_move(outcomes: &[Outcome], current: f64) -> bool {
    let t: Vec<f64> = outcomes
        .iter()
        .map(|o| signed_logit(o.raw, o.correct))
        .collect();
    temperature::refit_would_move(&t, TEMPERATURE_RANGE, current, MATERIAL_CHANGE_FACTOR)
}

/// Level 2 for a source: the NLL-minimising temperature of `outcomes` within
/// [`TEMPERATURE_RANGE`] ([`temperature::fit_temperature`] on `(raw, correct)`), or why none
/// was fitted (fewer than [`temperature::MIN_SAMPLES`] outcomes, or all raw signals 0.5).
pub fn fit(outcomes: &[Outcome]) -> TemperatureFit {
    let samples: Vec<(f64, bool)> = outcomes.iter().map(|o| (o.raw, o.correct)).collect();
    temperature::fit_temperature(&samples, TEMPERATURE_RANGE)
        .expect("outcomes hold confidences in [0, 1] and the range is valid")
}

/// How many beliefs of a workspace are resolved (verified, denied or retracted), from the
/// status counts alone: the length of [`belief_outcomes`] for beliefs made through the tools
/// (each has the `hypothesize` or `assert` that stated its confidence).
pub fn resolved_beliefs(summary: &WorkspaceSummary) -> u64 {
    [
        BeliefStatus::Verified,
        BeliefStatus::Denied,
        BeliefStatus::Retracted,
    ]
    .into_iter()
    .map(|s| summary.count(s))
    .sum()
}

/// The outcomes of resolved beliefs, oldest resolution first: a belief is resolved when it is
/// `verified` (correct) or `denied` or `retracted` (not correct); its stated confidence (and
/// raw signal) is the one given with its latest `hypothesize` or `assert`, and it was resolved
/// when it last changed. Beliefs still active or hypothetical, or never hypothesized nor
/// asserted (not possible through the tools), are left out.
pub fn belief_outcomes(beliefs: &[Belief]) -> Vec<Outcome> {
    let mut out: Vec<Outcome> = beliefs
        .iter()
        .filter_map(|b| {
            let correct = match b.status {
                BeliefStatus::Verified => true,
                BeliefStatus::Denied | BeliefStatus::Retracted => false,
                BeliefStatus::Active | BeliefStatus::Hypothetical => return None,
            };
            let stated = b
                .history
                .iter()
                .rev()
                .find(|e| matches!(e.action, ActionType::Hypothesize | ActionType::Assert))?
                .input_confidence;
            Some(Outcome {
                at: b.updated_at,
                raw: stated,
                stated,
                correct,
            })
        })
        .collect();
    out.sort_by_key(|o| o.at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(i: i64, raw: f64, correct: bool) -> Outcome {
        Outcome {
            at: DateTime::from_timestamp(1_700_000_000 + i, 0).unwrap(),
            raw,
            stated: raw,
            correct,
        }
    }

    /// ECE and Brier against a hand computation (10 equal-width bins).
    #[test]
    fn metrics_equal_a_hand_computation() {
        let o = [
            outcome(0, 0.95, true),
            outcome(1, 0.95, false),
            outcome(2, 0.15, false),
            outcome(3, 0.55, true),
        ];
        let m = metrics(&o, 1.0);
        let raw = m.raw.unwrap();
        // Bins: [0.9,1.0]: conf 0.95, acc 0.5 (2); [0.1,0.2): 0.15, 0 (1); [0.5,0.6): 0.55, 1 (1).
        let ece = (2.0 * 0.45 + 0.15 + 0.45) / 4.0;
        let brier = (0.05f64.powi(2) + 0.95f64.powi(2) + 0.15f64.powi(2) + 0.45f64.powi(2)) / 4.0;
        assert!((raw.ece - ece).abs() < 1e-12, "{} vs {ece}", raw.ece);
        assert!((raw.brier - brier).abs() < 1e-12);
        assert!(
            (m.calibrated.unwrap().ece - ece).abs() < 1e-9,
            "T = 1 maps p to p"
        );
    }

    #[test]
    fn an_overconfident_source_fits_a_temperature_above_one() {
        // Says 0.9, right 70 % of the time: T > 1 pulls it toward 0.5.
        let o: Vec<Outcome> = (0..50).map(|i| outcome(i, 0.9, i % 10 < 7)).collect();
        let TemperatureFit::Fitted(f) = fit(&o) else {
            panic!("50 outcomes are enough")
        };
        // The NLL optimum puts σ(logit(0.9)/T) at the observed rate 0.7.
        let expected = (0.9f64 / 0.1).ln() / (0.7f64 / 0.3).ln();
        assert!((f.temperature - expected).abs() < 1e-6, "{}", f.temperature);
        assert!((calibrated(0.9, f.temperature) - 0.7).abs() < 1e-6);
        assert!(refit_would_move(&o, 1.0));
        assert!(!refit_would_move(&o, f.temperature));
        let d = drift(&o, 1.0, None);
        assert_eq!(d.count, 50);
        assert!(d.ewma > 0.0, "confidence above accuracy: {}", d.ewma);
    }

    #[test]
    fn too_few_outcomes_fit_nothing() {
        let o: Vec<Outcome> = (0..3).map(|i| outcome(i, 0.9, false)).collect();
        assert!(matches!(fit(&o), TemperatureFit::Skipped(_)));
        assert!(metrics(&[], 1.0).raw.is_none());
    }
}

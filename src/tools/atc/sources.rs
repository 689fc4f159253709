//! The calibration tools by outcome source (issue 31): `lessons` (closed blacklist checks) and
//! `beliefs` (resolved hypotheses) beside `observations` (the embedders' windows). A source of
//! the memory's own judgements has one temperature per project ([`outcome_store`]); level 1 is
//! its drift, level 2 refits its temperature; levels 3 and 4 tune the embedders' thresholds and
//! do not apply to it (the lessons' cut moves through the temperature).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::output::{MetricsOut, MetricsPairOut, recommendations};
use super::{LevelNo, level_list};
use crate::service::atc::metrics::CalibrationStatus;
use crate::service::atc::state::MetricsPair;
use crate::service::atc::temperature::{RangeBound, TemperatureFit};
use crate::service::outcomes::{self, Outcome, Source, SourceDrift};
use crate::store::outcomes::{self as outcome_store, SourceTemperature};
use crate::store::{Db, StoreError};
use crate::tools::wire::{Choice, OneOf};

impl Choice for Source {
    const ALL: &'static [Self] = &Source::ALL;
    const CASE_INSENSITIVE: bool = true;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// The sentence every answer about the lessons or beliefs source carries on levels 3 and 4.
pub const NO_THRESHOLD_LEVELS: &str = "Levels 3 and 4 tune the embedders' thresholds and do \
     not apply to this source: level 2 (its temperature) is what moves its probabilities, and \
     for lessons what gets blocked.";

/// One source's calibration in a project, at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// The source.
    pub source: Source,
    /// Its outcomes in the period, oldest first.
    pub outcomes: Vec<Outcome>,
    /// Its current temperature (1 until fitted).
    pub temperature: f64,
    /// Calibration: as stated, and under the current temperature.
    pub metrics: MetricsPair,
    /// Level 1.
    pub drift: SourceDrift,
    /// Status band of the calibrated metrics; `None` without outcomes.
    pub status: Option<CalibrationStatus>,
    /// Levels worth running: 2 while a refit would move the temperature by more than 1 %.
    pub levels: Vec<u8>,
}

/// The [`Assessment`] of `source` (lessons or beliefs) over the outcomes resolved since `since`
/// (all when `None`).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn assess(
    db: &Db<'_>,
    source: Source,
    since: Option<DateTime<Utc>>,
) -> Result<Assessment, StoreError> {
    let outcomes = outcome_store::outcomes(db, source, since)?;
    let temperature = outcome_store::temperature(db, source)?;
    let metrics = outcomes::metrics(&outcomes, temperature);
    let status = metrics.calibrated.as_ref().map(|m| m.status());
    let drift = outcomes::drift(&outcomes, temperature, status);
    let levels = if outcomes::refit_would_move(&outcomes, temperature) {
        vec![2]
    } else {
        Vec::new()
    };
    Ok(Assessment {
        source,
        outcomes,
        temperature,
        metrics,
        drift,
        status,
        levels,
    })
}

impl Assessment {
    /// What the status means, one sentence per level worth running, and why levels 3 and 4
    /// do not apply.
    pub fn recommendations(&self) -> Vec<String> {
        let mut out = recommendations(self.status, &self.levels);
        if self.status.is_none() {
            out.insert(0, no_outcomes(self.source).to_string());
        }
        out.push(NO_THRESHOLD_LEVELS.to_string());
        out
    }
}

/// What to do when a source has no outcomes yet.
pub fn no_outcomes(source: Source) -> &'static str {
    match source {
        Source::Observations => "No observations: record some with record_calibration_observations.",
        Source::Lessons => {
            "No closed checks: close check_strategy_blacklist predictions with record_prediction."
        }
        Source::Beliefs => "No resolved beliefs: verify, refute or retract hypotheses.",
    }
}

/// One source's calibration, as `get_calibration_metrics` lists it under `by_source`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceOut {
    /// `observations`, `lessons` or `beliefs`.
    pub source: OneOf<Source>,
    /// Outcomes measured.
    pub observation_count: usize,
    /// Calibration after temperature scaling; null without outcomes.
    pub metrics: Option<MetricsOut>,
    /// Calibration of the confidences as stated; null without outcomes.
    pub raw_metrics: Option<MetricsOut>,
    /// The source's temperature (lessons and beliefs; null for observations, which have one
    /// per embedder).
    pub temperature: Option<f64>,
}

impl SourceOut {
    /// The entry of one source.
    pub fn new(source: Source, m: &MetricsPair, temperature: Option<f64>) -> Self {
        SourceOut {
            source: OneOf(source),
            observation_count: m.raw.as_ref().map_or(0, |r| r.count),
            metrics: m.calibrated.as_ref().map(MetricsOut::from),
            raw_metrics: m.raw.as_ref().map(MetricsOut::from),
            temperature,
        }
    }
}

/// Level 1 or 2 of a lessons or beliefs source.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceDetail {
    /// `lessons` or `beliefs`.
    pub source: OneOf<Source>,
    /// Outcomes the level looked at (every resolved one kept).
    pub outcomes: usize,
    /// The temperature before the run.
    pub temperature_before: f64,
    /// The temperature after (equal to before for level 1 and a dry run).
    pub temperature_after: f64,
    /// Level 2: which bound the fit ended at (`lower`, `upper`); null inside the range or
    /// when nothing was fitted.
    pub at_bound: Option<&'static str>,
    /// Level 1: EWMA of calibrated confidence − outcome (0 is calibrated).
    pub drift_ewma: f64,
    /// Level 1: |EWMA| / σ.
    pub drift_score: f64,
}

/// What a level-1 or level-2 run on a lessons or beliefs source found and did.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRun {
    /// Before the run.
    pub before: Assessment,
    /// The new temperature, when level 2 fitted one (stored unless dry run).
    pub fitted: Option<(f64, Option<RangeBound>)>,
    /// Why level 2 fitted nothing.
    pub skipped: Option<String>,
    /// Calibration of the same outcomes after the run.
    pub after: MetricsPair,
    /// Levels still worth running.
    pub levels: Vec<u8>,
}

/// Run level `level` (1 or 2) on `source` of this project; level 2 stores the fitted
/// temperature unless `dry_run`. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn run(
    db: &Db<'_>,
    source: Source,
    level: u8,
    dry_run: bool,
    now: DateTime<Utc>,
) -> Result<SourceRun, StoreError> {
    let before = assess(db, source, None)?;
    if level != 2 {
        return Ok(SourceRun {
            after: before.metrics.clone(),
            levels: before.levels.clone(),
            before,
            fitted: None,
            skipped: None,
        });
    }
    let (fitted, skipped) = match outcomes::fit(&before.outcomes) {
        TemperatureFit::Fitted(f) => (Some((f.temperature, f.at_bound)), None),
        TemperatureFit::Skipped(why) => (None, Some(why.message())),
    };
    let mut after = before.metrics.clone();
    let mut levels = before.levels.clone();
    if let Some((t, _)) = fitted {
        let moved = outcomes::metrics(&before.outcomes, t);
        if dry_run {
            after = before.metrics.clone();
        } else {
            outcome_store::set_temperature(
                db,
                &SourceTemperature {
                    source,
                    temperature: t,
                    outcomes: before.outcomes.len() as u64,
                    fitted_at: now,
                },
            )?;
            after = moved;
            levels = if outcomes::refit_would_move(&before.outcomes, t) {
                vec![2]
            } else {
                Vec::new()
            };
        }
    }
    Ok(SourceRun {
        before,
        fitted,
        skipped,
        after,
        levels,
    })
}

impl SourceRun {
    /// The level's detail for the answer.
    pub fn detail(&self, dry_run: bool) -> SourceDetail {
        let b = &self.before;
        SourceDetail {
            source: OneOf(b.source),
            outcomes: b.outcomes.len(),
            temperature_before: b.temperature,
            temperature_after: match self.fitted {
                Some((t, _)) if !dry_run => t,
                _ => b.temperature,
            },
            at_bound: self.fitted.and_then(|(_, bound)| bound).map(<&str>::from),
            drift_ewma: b.drift.ewma,
            drift_score: b.drift.score,
        }
    }

    /// Metrics before and after, for the answer.
    pub fn metrics(&self) -> (MetricsPairOut, MetricsPairOut) {
        ((&self.before.metrics).into(), (&self.after).into())
    }

    /// Levels still worth running, for the answer.
    pub fn recommended_levels(&self) -> Vec<LevelNo> {
        level_list(&self.levels)
    }
}

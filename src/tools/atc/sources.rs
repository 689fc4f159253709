//! The calibration tools by outcome source (issue 31): `lessons` (closed blacklist checks) and
//! `beliefs` (resolved hypotheses) beside `observations` (the embedders' windows). A source of
//! the memory's own judgements has one temperature per project ([`crate::store::outcomes`]); level 1 is
//! its drift, level 2 refits its temperature ([`crate::ops::outcomes`]); levels 3 and 4 tune
//! the embedders' thresholds and do not apply to it (the lessons' cut moves through the
//! temperature). This file shapes the answers.

use schemars::JsonSchema;
use serde::Serialize;

use super::output::{MetricsOut, MetricsPairOut, recommendations};
use super::{LevelNo, level_list};
pub use crate::ops::outcomes::{Assessment, SourceRun, assess, run};
use crate::service::atc::state::MetricsPair;
use crate::service::outcomes::Source;
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
        Source::Observations => {
            "No observations: record some with record_calibration_observations."
        }
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
    /// Level 2: the temperature the fit found (applied unless dry run); null when nothing was
    /// fitted.
    pub temperature_fitted: Option<f64>,
    /// Level 2: which bound the fit ended at (`lower`, `upper`); null inside the range or
    /// when nothing was fitted.
    pub at_bound: Option<&'static str>,
    /// Level 1: EWMA of calibrated confidence − outcome (0 is calibrated).
    pub drift_ewma: f64,
    /// Level 1: |EWMA| / σ.
    pub drift_score: f64,
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
            temperature_fitted: self.fitted.map(|(t, _)| t),
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

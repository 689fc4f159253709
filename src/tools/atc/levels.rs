//! The per-level part of `trigger_recalibration`'s answer: what each of the four levels
//! reports, shaped from the service's level reports.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::output::DriftOut;
use super::{LevelNo, level_list};
use crate::service::atc::recalibrate::{LevelReport, Recalibration};
use crate::service::atc::state::{EmbedderCalibration, Level2Report, Level4Outcome};
use crate::service::atc::temperature::{CV_FOLDS, RangeBound};
use crate::service::vocab::EMBEDDER_NAMES;

/// The fields of one level.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LevelDetail {
    /// Level 1.
    Drift(DriftDetail),
    /// Level 2.
    Temperature(TemperatureDetail),
    /// Level 3.
    Bandit(BanditDetail),
    /// Level 4.
    Optimizer(OptimizerDetail),
    /// Level 1 or 2 on the lessons or beliefs source.
    Source(super::sources::SourceDetail),
}

/// Level 1: drift of the domain's thresholds and of the embedders' calibration.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DriftDetail {
    /// The trackers.
    #[serde(flatten)]
    pub drift: DriftOut,
    /// Drift score per tracked threshold name.
    pub drift_scores: BTreeMap<&'static str, f64>,
    /// Every level some tracker calls for, ascending.
    pub recommended_levels: Vec<LevelNo>,
}

/// Level 2: the temperature fits.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TemperatureDetail {
    /// One entry per embedder, by id.
    pub temperatures: Vec<TemperatureOut>,
    /// Mean negative log-likelihood at the new temperature, per fitted embedder name.
    pub temperature_losses: BTreeMap<&'static str, f64>,
    /// Embedders fitted.
    pub fitted: usize,
    /// Folds of the cross-validation.
    pub cv_folds: usize,
    /// ECE of all observations at the new temperatures, measured on the observations they were
    /// fitted on (optimistic); null without observations.
    pub ece_after_in_sample: Option<f64>,
    /// ECE of all observations at temperatures fitted without them: each embedder's
    /// observations split into `cv_folds` consecutive folds in the order received, each fold
    /// scaled with the temperature fitted on the other folds, all pooled (unfitted embedders
    /// keep their temperature). The honest estimate for new observations; null without
    /// observations.
    pub ece_after_cross_validated: Option<f64>,
}

/// Level 2 for one embedder.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TemperatureOut {
    /// Embedder id, 1–13.
    pub embedder_id: u8,
    /// Embedder name.
    pub name: &'static str,
    /// Observations in its window.
    pub samples: usize,
    /// Temperature before.
    pub temperature_before: f64,
    /// Temperature after (the same when not fitted).
    pub temperature_after: f64,
    /// Mean negative log-likelihood before; null without observations.
    pub nll_before: Option<f64>,
    /// The same after.
    pub nll_after: Option<f64>,
    /// ECE of its observations before; null without observations.
    pub ece_before: Option<f64>,
    /// ECE after, in sample (same as `ece_after_in_sample`, kept under its old name).
    pub ece_after: Option<f64>,
    /// ECE after, measured on the observations the temperature was fitted on (optimistic).
    pub ece_after_in_sample: Option<f64>,
    /// ECE after, cross-validated over consecutive folds (see the level's field of that name);
    /// null when nothing was fitted.
    pub ece_after_cross_validated: Option<f64>,
    /// `lower` or `upper` when the fit stopped at the end of the embedder's range.
    pub at_bound: Option<Bound>,
    /// Why nothing was fitted; null when fitted.
    pub skipped: Option<String>,
}

/// The end of a temperature range a fit stopped at.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The lowest temperature (the data would sharpen further).
    Lower,
    /// The highest temperature (the data would soften further).
    Upper,
}

impl From<&EmbedderCalibration> for TemperatureOut {
    fn from(e: &EmbedderCalibration) -> Self {
        TemperatureOut {
            embedder_id: e.embedder_id,
            name: EMBEDDER_NAMES[usize::from(e.embedder_id) - 1],
            samples: e.samples,
            temperature_before: e.temperature_before,
            temperature_after: e.temperature_after,
            nll_before: e.nll_before,
            nll_after: e.nll_after,
            ece_before: e.ece_before,
            ece_after: e.ece_after,
            ece_after_in_sample: e.ece_after,
            ece_after_cross_validated: e.ece_after_cross_validated,
            at_bound: e.at_bound.map(|b| match b {
                RangeBound::Lower => Bound::Lower,
                RangeBound::Upper => Bound::Upper,
            }),
            skipped: e.skipped.map(|s| s.message()),
        }
    }
}

impl From<&Level2Report> for TemperatureDetail {
    fn from(r: &Level2Report) -> Self {
        TemperatureDetail {
            temperatures: r.embedders.iter().map(TemperatureOut::from).collect(),
            temperature_losses: r
                .embedders
                .iter()
                .filter(|e| e.skipped.is_none())
                .filter_map(|e| {
                    Some((EMBEDDER_NAMES[usize::from(e.embedder_id) - 1], e.nll_after?))
                })
                .collect(),
            fitted: r.fitted(),
            cv_folds: CV_FOLDS,
            ece_after_in_sample: r.ece_after_in_sample,
            ece_after_cross_validated: r.ece_after_cross_validated,
        }
    }
}

/// Level 3: the session-threshold draw.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BanditDetail {
    /// The candidate thresholds.
    pub threshold_candidates: Vec<f64>,
    /// The one selected, now the domain's session threshold (unless a dry run).
    pub selected_threshold: f64,
    /// The value drawn for each candidate from its posterior; the largest wins.
    pub sampled_values: Vec<f64>,
    /// Right outcomes per candidate.
    pub successes: Vec<u64>,
    /// Wrong outcomes per candidate.
    pub failures: Vec<u64>,
    /// Posterior mean success rate per candidate.
    pub posterior_means: Vec<f64>,
    /// Outcomes recorded in all.
    pub total_pulls: u64,
    /// Whether the statistics were forgotten first.
    pub reset: bool,
}

/// Level 4: the optimisation of theta_acc.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OptimizerDetail {
    /// Whether level 4 was due before this run.
    pub should_optimize: bool,
    /// Whether a new theta_acc was applied.
    pub applied: bool,
    /// What the optimiser found; absent when it did not run.
    #[serde(flatten)]
    pub run: Option<OptimizerRun>,
}

/// What a level 4 run found. Balanced accuracy is that of `calibrated confidence ≥ θ` as a
/// prediction of a right outcome.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OptimizerRun {
    /// Observations of the domain used.
    pub observations: usize,
    /// Objective evaluations of the optimiser.
    pub evaluations: usize,
    /// The optimiser's best θ before refinement.
    pub optimizer_best_theta: f64,
    /// The proposed theta_acc.
    pub proposed_theta_acc: f64,
    /// theta_acc before.
    pub theta_acc_before: f64,
    /// Balanced accuracy at theta_acc before.
    pub balanced_accuracy_before: f64,
    /// Balanced accuracy at the proposed theta_acc.
    pub balanced_accuracy_proposed: f64,
    /// theta_acc after.
    pub theta_acc_after: f64,
    /// Balanced accuracy at theta_acc after.
    pub balanced_accuracy_after: f64,
    /// theta_opt before and after, when applying moved it to stay above theta_acc.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theta_opt: Option<BeforeAfter>,
    /// theta_warn before and after, when applying moved it to stay below theta_acc.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theta_warn: Option<BeforeAfter>,
}

/// A value before and after.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BeforeAfter {
    /// Before.
    pub before: f64,
    /// After.
    pub after: f64,
}

/// The level's own fields of a recalibration report.
pub fn detail(r: &Recalibration) -> LevelDetail {
    match &r.report {
        LevelReport::Drift(d) => LevelDetail::Drift(DriftDetail {
            drift: d.into(),
            drift_scores: d
                .thresholds
                .iter()
                .map(|t| (t.name.as_str(), t.score))
                .collect(),
            recommended_levels: level_list(&d.levels()),
        }),
        LevelReport::Temperature(t) => LevelDetail::Temperature(t.into()),
        LevelReport::Bandit(b) => LevelDetail::Bandit(BanditDetail {
            threshold_candidates: b.bandit.candidates().to_vec(),
            selected_threshold: b.selection.threshold,
            sampled_values: b.selection.samples.clone(),
            successes: b.bandit.successes().to_vec(),
            failures: b.bandit.failures().to_vec(),
            posterior_means: b.bandit.posterior_means(),
            total_pulls: b.bandit.total_pulls(),
            reset: b.reset,
        }),
        LevelReport::Optimizer(o) => {
            let run = match &o.outcome {
                Level4Outcome::Skipped(_) => None,
                Level4Outcome::Ran {
                    optimum: m,
                    applied,
                } => Some(OptimizerRun {
                    observations: m.observations,
                    evaluations: m.evaluations,
                    optimizer_best_theta: m.optimizer_best_x,
                    proposed_theta_acc: m.theta,
                    theta_acc_before: m.current_theta,
                    balanced_accuracy_before: m.current_balanced_accuracy,
                    balanced_accuracy_proposed: m.balanced_accuracy,
                    theta_acc_after: applied.as_ref().map_or(m.current_theta, |c| c.theta_acc.1),
                    balanced_accuracy_after: if applied.is_some() {
                        m.balanced_accuracy
                    } else {
                        m.current_balanced_accuracy
                    },
                    theta_opt: applied.as_ref().map(|c| BeforeAfter {
                        before: c.theta_opt.0,
                        after: c.theta_opt.1,
                    }),
                    theta_warn: applied.as_ref().map(|c| BeforeAfter {
                        before: c.theta_warn.0,
                        after: c.theta_warn.1,
                    }),
                }),
            };
            LevelDetail::Optimizer(OptimizerDetail {
                should_optimize: o.should_optimize,
                applied: matches!(
                    o.outcome,
                    Level4Outcome::Ran {
                        applied: Some(_),
                        ..
                    }
                ),
                run,
            })
        }
    }
}

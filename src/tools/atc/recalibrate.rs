//! `trigger_recalibration`: run one level now. A thin handler over
//! [`AtcState::recalibrate`](crate::service::atc::state::AtcState), which returns the typed
//! report this file shapes; the handler persists the state and notes the change in the
//! directive history.

use rand::SeedableRng;
use rand::rngs::StdRng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::levels::{LevelDetail, detail};
use super::output::{MetricsPairOut, recommendations};
use super::sources;
use super::{AtcDomain, DEFAULT_DOMAIN, LEVEL_HINT, LevelNo, level_list};
use crate::service::CachedFamily;
use crate::service::atc::RunMode;
use crate::service::atc::recalibrate::{Action, Level, LevelReport, MetricsScope, Recalibration};
use crate::service::atc::state::Level4Outcome;
use crate::service::outcomes::Source;
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::atc as atc_store;
use crate::store::directives::{self, Directive, InterventionType};
use crate::tools::wire::{Int, OneOf, Validate};
use crate::tools::{Annotations, Answer, ToolDef, ToolError, WriteCtx, WriteTool};

/// Largest `seed`: 2^53 − 1, the largest integer every JSON reader keeps exactly.
pub const MAX_SEED: i64 = 9_007_199_254_740_991;

/// `trigger_recalibration`.
pub struct TriggerRecalibration;

/// Arguments of `trigger_recalibration`. `reset` and `seed` apply to level 3 only: stated in
/// their descriptions, not as a top-level `if`/`else` (a client's model API refuses one there),
/// and enforced by [`Validate`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("required" = ["level"]))]
pub struct RecalibrateInput {
    /// 1: drift report (changes nothing). 2: refit temperatures. 3: pick the session threshold
    /// (Thompson sampling). 4: optimise theta_acc.
    pub level: Option<LevelNo>,
    /// Used by levels 1, 3 and 4.
    #[schemars(extend("default" = DEFAULT_DOMAIN))]
    pub domain: Option<OneOf<AtcDomain>>,
    /// Compute and report without changing anything.
    pub dry_run: Option<bool>,
    /// Level 3 only: forget the bandit's statistics first.
    pub reset: Option<bool>,
    /// Level 3 only: a seed, for a reproducible draw.
    pub seed: Option<Int<0, MAX_SEED>>,
    /// Levels 1-2: this source (default observations).
    pub source: Option<OneOf<Source>>,
}

impl RecalibrateInput {
    /// The lessons or beliefs source asked for; `None` for the observations.
    fn own_source(&self) -> Option<Source> {
        self.source
            .map(OneOf::get)
            .filter(|s| *s != Source::Observations)
    }

    /// The level asked for, with the seed's message when it is missing.
    fn level(&self) -> Result<Level, ToolError> {
        match self.level {
            None => Err(ToolError::invalid(format!(
                "Missing required 'level' parameter. {LEVEL_HINT}"
            ))),
            Some(LevelNo(1)) => Ok(Level::Drift),
            Some(LevelNo(2)) => Ok(Level::Temperature),
            Some(LevelNo(3)) => Ok(Level::Bandit {
                reset: self.reset.unwrap_or(false),
            }),
            Some(_) => Ok(Level::Optimizer),
        }
    }
}

impl Validate for RecalibrateInput {
    fn validate(&self) -> Result<(), ToolError> {
        let level = self.level()?.number();
        for (field, given) in [
            ("reset", self.reset.is_some()),
            ("seed", self.seed.is_some()),
        ] {
            if given && level != 3 {
                return Err(ToolError::invalid(format!(
                    "field '{field}' applies to level 3 only, got level {level}"
                )));
            }
        }
        if let Some(source) = self.own_source() {
            if level > 2 {
                return Err(ToolError::invalid(format!(
                    "field 'source' {} runs levels 1 and 2 only, got level {level}. {}",
                    source.as_str(),
                    sources::NO_THRESHOLD_LEVELS
                )));
            }
            if self.domain.is_some() {
                return Err(ToolError::invalid(format!(
                    "field 'domain' applies to source observations only, got source {}",
                    source.as_str()
                )));
            }
        }
        Ok(())
    }
}

/// The answer of `trigger_recalibration`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecalibrationAnswer {
    /// False when the level could not do its work (`error` says why); nothing is then noted
    /// in the directive history.
    pub success: bool,
    /// What the level found and did.
    pub recalibration: RecalibrationOut,
    /// Which observations `metrics_before` and `metrics_after` cover: `all` (level 2) or the
    /// domain's (`domain`).
    pub metrics_scope: Scope,
    /// Calibration of those observations before the run.
    pub metrics_before: MetricsPairOut,
    /// The same, after the run (measured on the same observations, so level 2's figures are
    /// in sample; see `recalibration.ece_after_cross_validated`). Equal to `metrics_before`
    /// for a dry run.
    pub metrics_after: MetricsPairOut,
    /// Why the level could not do its work; null on success.
    pub error: Option<String>,
    /// The levels still worth running on the same observations after this run (for a dry run,
    /// nothing changed, so the current ones); level 2 only while a refit would change a
    /// temperature.
    pub recommended_levels: Vec<LevelNo>,
    /// What the status means and one sentence per level still worth running.
    pub recommendations: Vec<String>,
}

/// Which observations the metrics cover.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every observation (level 2 refits every embedder).
    All,
    /// The domain's observations.
    Domain,
    /// The outcomes of the lessons or beliefs source of this project.
    Source,
}

/// What the level did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionName {
    /// Level 1 reported drift.
    Reported,
    /// A dry run computed without changing anything (level 2, or level 4 that found no strict
    /// improvement).
    Computed,
    /// Level 2 replaced the temperatures.
    Recalibrated,
    /// Level 3 selected a session threshold.
    Selected,
    /// Level 4 did not run.
    Skipped,
    /// Level 4 applied a better theta_acc.
    Optimized,
    /// Level 4 ran and kept theta_acc.
    Unchanged,
}

impl From<Action> for ActionName {
    fn from(a: Action) -> Self {
        match a {
            Action::Reported => ActionName::Reported,
            Action::Computed => ActionName::Computed,
            Action::Recalibrated => ActionName::Recalibrated,
            Action::Selected => ActionName::Selected,
            Action::Skipped => ActionName::Skipped,
            Action::Optimized => ActionName::Optimized,
            Action::Unchanged => ActionName::Unchanged,
        }
    }
}

/// The level's report: the fields every level has, then its own.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecalibrationOut {
    /// The level run, 1–4.
    pub level: LevelNo,
    /// Its name.
    pub level_name: &'static str,
    /// What it did.
    pub action: ActionName,
    /// One sentence saying what happened.
    pub description: String,
    /// The domain.
    pub domain: OneOf<AtcDomain>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// The level's own fields.
    #[serde(flatten)]
    pub detail: LevelDetail,
}

/// One sentence saying what happened.
fn description(r: &Recalibration) -> String {
    let dry = r.mode == RunMode::DryRun;
    match &r.report {
        LevelReport::Drift(_) => {
            "Level 1 runs continuously on every observation; current drift scores reported."
                .to_string()
        }
        LevelReport::Temperature(t) => format!(
            "Temperature scaling fitted for {} of {NUM_EMBEDDERS} embedders (NLL minimised within each embedder's range).",
            t.fitted()
        ),
        LevelReport::Bandit(b) => format!(
            "Thompson sampling over the {} bandit selected {:.2} as the session threshold ({} outcomes recorded).",
            r.domain.display_name(),
            b.selection.threshold,
            b.bandit.total_pulls()
        ),
        LevelReport::Optimizer(o) => match &o.outcome {
            Level4Outcome::Skipped(_) => "Bayesian optimisation did not run.".to_string(),
            Level4Outcome::Ran {
                optimum: m,
                applied: Some(c),
            } => format!(
                "theta_acc {:.4} -> {:.4}: balanced accuracy {:.4} -> {:.4}.",
                c.theta_acc.0, c.theta_acc.1, m.current_balanced_accuracy, m.balanced_accuracy
            ),
            Level4Outcome::Ran { optimum: m, .. } => format!(
                "Best theta_acc {:.4} scores balanced accuracy {:.4} vs {:.4} at the current {:.4}; {}.",
                m.theta,
                m.balanced_accuracy,
                m.current_balanced_accuracy,
                m.current_theta,
                if dry {
                    "dry run, nothing applied"
                } else {
                    "not strictly better, kept"
                }
            ),
        },
    }
}

impl From<&Recalibration> for RecalibrationAnswer {
    fn from(r: &Recalibration) -> Self {
        let error = r.failure();
        let status = r.after.calibrated.as_ref().map(|m| m.status());
        RecalibrationAnswer {
            success: error.is_none(),
            recalibration: RecalibrationOut {
                level: LevelNo(r.level.number()),
                level_name: r.level.into(),
                action: r.action().into(),
                description: description(r),
                domain: OneOf(AtcDomain(r.domain)),
                dry_run: r.mode == RunMode::DryRun,
                detail: detail(r),
            },
            metrics_scope: match r.scope {
                MetricsScope::All => Scope::All,
                MetricsScope::Domain => Scope::Domain,
            },
            metrics_before: (&r.before).into(),
            metrics_after: (&r.after).into(),
            error,
            recommended_levels: level_list(&r.recommended_levels),
            recommendations: recommendations(status, &r.recommended_levels),
        }
    }
}

impl ToolDef for TriggerRecalibration {
    const NAME: &'static str = "trigger_recalibration";
    const TITLE: &'static str = "Trigger recalibration";
    fn description() -> String {
        String::from(
            "Run one calibration level now, usually one get_calibration_metrics recommends. \
             Levels 2-4 overwrite learned calibration unless dry_run: try dry_run first. \
             Returns metrics before and after and what changed.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: false,
    };
    type Input = RecalibrateInput;
    type Output = RecalibrationAnswer;

    fn example() -> Value {
        json!({"level": 2, "domain": "Code", "dry_run": true})
    }
}

impl WriteTool for TriggerRecalibration {
    const FAMILIES: &'static [CachedFamily] = &[CachedFamily::Atc];

    fn run(
        ctx: &mut WriteCtx<'_>,
        input: RecalibrateInput,
    ) -> Result<Answer<RecalibrationAnswer>, ToolError> {
        let level = input.level()?;
        if let Some(source) = input.own_source() {
            return source_run(ctx, source, level, input.dry_run.unwrap_or(false));
        }
        let domain = input.domain.map_or(Domain::General, |d| d.get().0);
        let mode = if input.dry_run.unwrap_or(false) {
            RunMode::DryRun
        } else {
            RunMode::Apply
        };
        let seed = input.seed.map_or_else(rand::random, |s| s.get() as u64);
        let mut rng = StdRng::seed_from_u64(seed);
        let r = ctx
            .svc
            .atc
            .recalibrate(level, domain, mode, ctx.now, &mut rng);
        if r.changed_state() {
            atc_store::save(ctx.db, &ctx.svc.atc)?;
        }
        if let Some(note) = r.note() {
            let d = Directive::new(
                None,
                InterventionType::Override,
                note,
                directives::SERVER_ACTOR,
                ctx.now,
            );
            directives::insert(ctx.db, &d)?;
        }
        Ok(Answer::ok((&r).into()))
    }
}

/// Level 1 or 2 on the lessons or beliefs source of this project (see [`sources::run`]); an
/// applied level 2 is noted in the directive history.
fn source_run(
    ctx: &mut WriteCtx<'_>,
    source: Source,
    level: Level,
    dry_run: bool,
) -> Result<Answer<RecalibrationAnswer>, ToolError> {
    let number = level.number();
    let r = sources::run(ctx.db, source, number, dry_run, ctx.now)?;
    let detail = r.detail(dry_run);
    let (action, description) = match (number, r.fitted) {
        (1, _) => (
            ActionName::Reported,
            format!(
                "Drift of the {} outcomes: EWMA of calibrated confidence − outcome {:.4}, score {:.2}.",
                source.as_str(),
                detail.drift_ewma,
                detail.drift_score
            ),
        ),
        (_, Some((t, _))) if !dry_run => (
            ActionName::Recalibrated,
            format!(
                "Temperature of the {} outcomes {:.4} -> {t:.4} (NLL minimised over {} outcomes).",
                source.as_str(),
                detail.temperature_before,
                detail.outcomes
            ),
        ),
        (_, Some((t, _))) => (
            ActionName::Computed,
            format!(
                "Dry run: the {} temperature would be {t:.4} (now {:.4}).",
                source.as_str(),
                detail.temperature_before
            ),
        ),
        (_, None) => (
            ActionName::Computed,
            format!(
                "No temperature fitted for the {} outcomes.",
                source.as_str()
            ),
        ),
    };
    if action == ActionName::Recalibrated {
        let note = format!("Level 2 recalibration: {description}");
        let d = Directive::new(
            None,
            InterventionType::Override,
            note,
            directives::SERVER_ACTOR,
            ctx.now,
        );
        directives::insert(ctx.db, &d)?;
    }
    let error = r.skipped.clone();
    let (before, after) = r.metrics();
    let status = r.after.calibrated.as_ref().map(|m| m.status());
    let mut recommendations = recommendations(status, &r.levels);
    recommendations.push(sources::NO_THRESHOLD_LEVELS.to_string());
    if let Some(advice) = &r.escalated {
        recommendations.push(format!("Escalated to a person: {advice}"));
    }
    Ok(Answer::ok(RecalibrationAnswer {
        success: error.is_none(),
        recalibration: RecalibrationOut {
            level: LevelNo(number),
            level_name: level.into(),
            action,
            description,
            domain: OneOf(AtcDomain(Domain::General)),
            dry_run,
            detail: LevelDetail::Source(detail),
        },
        metrics_scope: Scope::Source,
        metrics_before: before,
        metrics_after: after,
        error,
        recommended_levels: r.recommended_levels(),
        recommendations,
    }))
}

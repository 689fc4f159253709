//! `trigger_lambda_recalibration`: recalibrate λ from the replay window by a gradient step or
//! Bayesian optimisation; `dry_run` computes without changing anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{MetaDomain, Named, RecalibrationReport, domain, domain_of, persist};
use crate::service::CachedFamily;
use crate::service::meta::{EscalationStatus, RecalibrationRequest, WINDOW};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::meta::{self as meta_store, Windows};
use crate::tools::wire::{OneOf, Validate};
use crate::tools::{Annotations, Answer, ToolDef, ToolError, WriteCtx, WriteTool};

/// `trigger_lambda_recalibration`.
pub struct TriggerLambdaRecalibration;

/// Arguments of `trigger_lambda_recalibration`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecalibrateInput {
    /// Use Bayesian optimisation even when no escalation is pending.
    pub force_bayesian: Option<bool>,
    /// Only this domain's predictions (default all).
    pub domain: Option<OneOf<MetaDomain>>,
    /// Compute and report, change nothing.
    pub dry_run: Option<bool>,
}

impl Validate for RecalibrateInput {}

/// The answer of `trigger_lambda_recalibration`: the recalibration report with the domain and
/// the escalation state after the run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecalibrateAnswer {
    /// What the run found and (unless a dry run) applied.
    #[serde(flatten)]
    pub report: RecalibrationReport,
    /// The domain recalibrated on; null for all.
    pub domain: Option<Named<MetaDomain>>,
    /// Escalation state after the run.
    pub escalation_status: Named<EscalationStatus>,
}

impl ToolDef for TriggerLambdaRecalibration {
    const NAME: &'static str = "trigger_lambda_recalibration";
    const TITLE: &'static str = "Recalibrate the λ weights";
    fn description() -> String {
        format!(
            "Re-fit the λ weights to the last {WINDOW} predictions now: a gradient step, or \
             Bayesian optimisation when forced or escalated. Overwrites λ unless dry_run, and a \
             failed Bayesian run counts toward a human escalation: try dry_run first."
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: false,
    };
    type Input = RecalibrateInput;
    type Output = RecalibrateAnswer;

    fn example() -> Value {
        json!({"force_bayesian": false, "dry_run": true})
    }
}

impl WriteTool for TriggerLambdaRecalibration {
    const FAMILIES: &'static [CachedFamily] = &[CachedFamily::Meta];

    fn run(
        ctx: &mut WriteCtx<'_>,
        input: RecalibrateInput,
    ) -> Result<Answer<RecalibrateAnswer>, ToolError> {
        let req = RecalibrationRequest {
            force_bayesian: input.force_bayesian.unwrap_or(false),
            domain: domain_of(input.domain),
            dry_run: input.dry_run.unwrap_or(false),
        };
        let replay = meta_store::replay_window(ctx.db, req.domain)?;
        let done = ctx.svc.meta.recalibrate(&req, &replay, ctx.now);
        if let Some((before, after)) = done.lambda_change {
            let what = format!(
                "manual {} λ recalibration: λ_s {:.4} -> {:.4}",
                done.plan.method,
                before.s(),
                after.s()
            );
            let directive = Directive::new(
                None,
                InterventionType::Override,
                what,
                directives::SERVER_ACTOR,
                ctx.now,
            );
            directives::insert(ctx.db, &directive)?;
        }
        if !req.dry_run {
            persist(ctx, &done.events, Windows::None)?;
        }
        Ok(Answer::ok(RecalibrateAnswer {
            report: RecalibrationReport::new(&done.plan, req.dry_run),
            domain: req.domain.map(domain),
            escalation_status: Named(ctx.svc.meta.escalation_status()),
        }))
    }
}

//! `get_meta_learning_status`: the live self-correction state — accuracy, λ, escalation,
//! lifecycle — and on request the accuracy history and the per-embedder breakdown.

use chrono::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{LambdaPair, Named};
use crate::service::meta::{EscalationStatus, LifecycleStage, MetaState};
use crate::service::vocab::NUM_EMBEDDERS;
use crate::store::meta as meta_store;
use crate::tools::wire::{Timestamp, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// `get_meta_learning_status`.
pub struct GetMetaLearningStatus;

/// The window of `recent_events_count`, in hours.
pub const RECENT_EVENTS_HOURS: i64 = 24;

/// Arguments of `get_meta_learning_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {
    /// Include the rolling accuracy window, oldest first.
    pub include_accuracy_history: Option<bool>,
    /// Include each embedder's accuracy and weight.
    pub include_embedder_breakdown: Option<bool>,
}

impl Validate for StatusInput {}

/// The answer of `get_meta_learning_status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusAnswer {
    /// Self-correction is always on.
    pub enabled: bool,
    /// Rolling accuracy over the recent predictions; null before any.
    pub current_accuracy: Option<f64>,
    /// Consecutive predictions with rolling accuracy under the low-accuracy threshold.
    pub consecutive_low_count: u32,
    /// λ now.
    pub current_lambdas: LambdaPair,
    /// λ of the lifecycle stage, the starting point of learning.
    pub base_lambdas: LambdaPair,
    /// current − base, per component.
    pub lambda_deviation: LambdaDeviation,
    /// `normal`, `bayesian_pending` (a Bayesian run failed; the next recalibration is
    /// Bayesian) or `human_review_required` (acknowledge with reset_meta_learning).
    pub escalation_status: Named<EscalationStatus>,
    /// Consecutive failed Bayesian recalibrations.
    pub bayesian_failure_count: u32,
    /// λ adjustments applied so far.
    pub adjustment_count: u64,
    /// Events logged in the last day.
    pub recent_events_count: usize,
    /// When λ was last adjusted (UTC); null if never.
    pub last_adjustment_at: Option<Timestamp>,
    /// `infancy`, `growth` or `maturity`, by the number of predictions recorded.
    pub lifecycle_stage: Named<LifecycleStage>,
    /// Predictions recorded so far.
    pub interaction_count: u64,
    /// The database file (or `:memory:`).
    pub database: String,
    /// The rolling accuracy window, oldest first; only with include_accuracy_history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy_history: Option<Vec<f64>>,
    /// Rolling accuracy per embedder (null where an embedder has no data); only with
    /// include_embedder_breakdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder_accuracy: Option<[Option<f64>; NUM_EMBEDDERS]>,
    /// Weight per embedder, proportional to its accuracy, within fixed bounds, summing to 1;
    /// only with include_embedder_breakdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder_weights: Option<[f64; NUM_EMBEDDERS]>,
}

/// A difference of two λ pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct LambdaDeviation {
    /// Difference of λ_s.
    pub lambda_s: f64,
    /// Difference of λ_c (−lambda_s).
    pub lambda_c: f64,
}

impl StatusAnswer {
    fn new(m: &MetaState, recent_events_count: usize, database: &str) -> Self {
        let base = m.base_lambdas();
        StatusAnswer {
            enabled: true,
            current_accuracy: m.current_accuracy(),
            consecutive_low_count: m.consecutive_low,
            current_lambdas: m.lambdas.into(),
            base_lambdas: base.into(),
            lambda_deviation: LambdaDeviation {
                lambda_s: m.lambdas.s() - base.s(),
                lambda_c: m.lambdas.c() - base.c(),
            },
            escalation_status: Named(m.escalation_status()),
            bayesian_failure_count: m.bayesian_failures,
            adjustment_count: m.adjustment_count,
            recent_events_count,
            last_adjustment_at: m.last_adjustment_at.map(Timestamp),
            lifecycle_stage: Named(m.stage()),
            interaction_count: m.interaction_count,
            database: database.to_string(),
            accuracy_history: None,
            embedder_accuracy: None,
            embedder_weights: None,
        }
    }
}

impl ToolDef for GetMetaLearningStatus {
    const NAME: &'static str = "get_meta_learning_status";
    const TITLE: &'static str = "Meta-learning status";
    fn description() -> String {
        String::from(
            "How well the memory's learning signals predict outcomes: rolling accuracy, the λ \
             weights, a pending recalibration or human review, the lifecycle stage; optionally \
             per-embedder figures.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    type Input = StatusInput;
    type Output = StatusAnswer;

    fn example() -> Value {
        json!({"include_accuracy_history": true, "include_embedder_breakdown": true})
    }
}

impl ReadTool for GetMetaLearningStatus {
    fn run(ctx: &ReadCtx<'_>, input: StatusInput) -> Result<Answer<StatusAnswer>, ToolError> {
        let m = &ctx.svc.meta;
        let since = ctx.now - Duration::hours(RECENT_EVENTS_HOURS);
        let recent = meta_store::count_events_since(ctx.db, since)?;
        let mut out = StatusAnswer::new(m, recent, ctx.db_path);
        if input.include_accuracy_history.unwrap_or(false) {
            out.accuracy_history = Some(m.global.values().collect());
        }
        if input.include_embedder_breakdown.unwrap_or(false) {
            out.embedder_accuracy = Some(m.embedder_accuracy());
            out.embedder_weights = Some(m.embedder_weights());
        }
        Ok(Answer::ok(out))
    }
}

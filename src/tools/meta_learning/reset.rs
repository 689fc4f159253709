//! `reset_meta_learning`: the operator's reset of λ and/or the escalation state, which is how a
//! human escalation is acknowledged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{LambdaPair, Named};
use crate::service::CachedFamily;
use crate::service::lessons::DEFAULT_ACTOR;
use crate::service::meta::{EscalationStatus, ResetScope};
use crate::tools::wire::{NonBlank, OneOf, Validate, WireUuid};
use crate::tools::{Annotations, Answer, ToolDef, ToolError, WriteCtx, WriteTool};

/// `reset_meta_learning`.
pub struct ResetMetaLearning;

/// Longest rationale, in characters.
pub const MAX_RATIONALE_CHARS: usize = 1024;

/// Arguments of `reset_meta_learning`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetInput {
    /// lambdas: reset λ; escalation: clear the low-accuracy count, failed Bayesian runs and
    /// human review; all: both, and empty the accuracy windows.
    pub scope: OneOf<ResetScope>,
    /// Why; kept in the event log and the directive history.
    pub rationale: NonBlank<MAX_RATIONALE_CHARS>,
}

impl Validate for ResetInput {}

/// The answer of `reset_meta_learning`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResetAnswer {
    /// Always true.
    pub success: bool,
    /// The scope reset.
    pub scope: Named<ResetScope>,
    /// λ before the reset.
    pub previous_lambdas: LambdaPair,
    /// λ after the reset.
    pub current_lambdas: LambdaPair,
    /// Escalation state after the reset.
    pub escalation_status: Named<EscalationStatus>,
    /// Consecutive low-accuracy predictions after the reset.
    pub consecutive_low_count: u32,
    /// The id of the directive-history entry recording the reset.
    pub directive_id: WireUuid,
}

impl ToolDef for ResetMetaLearning {
    const NAME: &'static str = "reset_meta_learning";
    const TITLE: &'static str = "Reset meta-learning state";
    fn description() -> String {
        String::from(
            "Operator reset, and how to acknowledge a human review the status asks for. \
             Destructive: what was learned in the scope is lost (the event log and prediction \
             count stay); recorded with your rationale.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: false,
    };
    type Input = ResetInput;
    type Output = ResetAnswer;

    fn example() -> Value {
        json!({"scope": "escalation", "rationale": "Reviewed the escalation: the outcomes recorded yesterday were mislabelled"})
    }
}

impl WriteTool for ResetMetaLearning {
    const FAMILIES: &'static [CachedFamily] = &[CachedFamily::Meta];

    fn run(ctx: &mut WriteCtx<'_>, input: ResetInput) -> Result<Answer<ResetAnswer>, ToolError> {
        let scope = input.scope.get();
        let rationale = input.rationale.as_str().trim();
        let previous = ctx.svc.meta.lambdas;
        let (_, directive) = crate::ops::meta::reset(
            ctx.db,
            &mut ctx.svc.meta,
            scope,
            rationale,
            DEFAULT_ACTOR,
            ctx.now,
        )?;
        let m = &ctx.svc.meta;
        Ok(Answer::ok(ResetAnswer {
            success: true,
            scope: Named(scope),
            previous_lambdas: previous.into(),
            current_lambdas: m.lambdas.into(),
            escalation_status: Named(m.escalation_status()),
            consecutive_low_count: m.consecutive_low,
            directive_id: WireUuid(directive.id),
        }))
    }
}

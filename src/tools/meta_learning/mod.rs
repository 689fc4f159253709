//! The meta-learning tools: `record_prediction` (the data path in), `get_meta_learning_status`,
//! `trigger_lambda_recalibration`, `get_meta_learning_log` and `reset_meta_learning`.
//!
//! One file per tool; this file holds what they share: the enumerations on the wire (domains
//! answered in lowercase, event types, methods, statuses), the λ and recalibration answer
//! types, and [`persist`]. Contract: SPEC §4 meta_learning. The numerics are in
//! `service::meta`, persistence in `store::meta`.

mod log;
mod recalibrate;
mod record;
mod reset;
mod status;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

pub use log::{GetMetaLearningLog, LogAnswer, LogEvent, LogInput};
pub use recalibrate::{RecalibrateAnswer, RecalibrateInput, TriggerLambdaRecalibration};
pub use record::{RecordAnswer, RecordInput, RecordPrediction};
pub use reset::{ResetAnswer, ResetInput, ResetMetaLearning};
pub use status::{GetMetaLearningStatus, StatusAnswer, StatusInput};

use super::wire::{Choice, OneOf};
use super::{Tool, ToolError, WriteCtx};
use crate::service::meta::{
    Adjustment, EscalationStatus, Event, EventType, LifecycleStage, Method, RecalibrationPlan,
    ResetScope,
};
use crate::service::vocab::{Domain, Lambdas};
use crate::store::directives::SERVER_ACTOR;
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::meta::{self as meta_store, Windows};

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    Tool::write::<RecordPrediction>(),
    Tool::read::<GetMetaLearningStatus>(),
    Tool::write::<TriggerLambdaRecalibration>(),
    Tool::read::<GetMetaLearningLog>(),
    Tool::write::<ResetMetaLearning>(),
];

/// A [`Domain`] as the meta-learning tools spell it: accepted in any ASCII case, answered in
/// lowercase ([`Domain::as_str`]). A newtype because the ATC tools answer the same domains
/// capitalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaDomain(pub Domain);

impl Choice for MetaDomain {
    const ALL: &'static [Self] = &[
        MetaDomain(Domain::Code),
        MetaDomain(Domain::Medical),
        MetaDomain(Domain::Legal),
        MetaDomain(Domain::Creative),
        MetaDomain(Domain::Research),
        MetaDomain(Domain::General),
    ];
    const CASE_INSENSITIVE: bool = true;
    fn name(self) -> &'static str {
        self.0.as_str()
    }
}

/// A domain in an answer, lowercase.
pub fn domain(d: Domain) -> Named<MetaDomain> {
    Named(MetaDomain(d))
}

/// The domain of an optional wire value.
pub fn domain_of(d: Option<OneOf<MetaDomain>>) -> Option<Domain> {
    d.map(|d| d.get().0)
}

/// A [`Choice`] value in an answer: written by its canonical name and described as a plain
/// `enum` of the names. An answer is always canonical, so the any-case `pattern` that
/// [`OneOf`] publishes for a case-insensitive input would only add bytes to the output schema.
/// (A generic value type: it belongs in `wire.rs` beside [`OneOf`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named<T>(pub T);

impl<T: Choice> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<T: Choice> JsonSchema for Named<T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Name")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = T::ALL.iter().map(|c| c.name()).collect();
        json_schema!({"type": "string", "enum": names})
    }
}

impl Choice for EventType {
    const ALL: &'static [Self] = &EventType::ALL;
    const CASE_INSENSITIVE: bool = true;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for ResetScope {
    const ALL: &'static [Self] = &ResetScope::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.into()
    }
}

impl Choice for EscalationStatus {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for LifecycleStage {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for Method {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.into()
    }
}

/// A λ pair: λ_s weighs surprise (ΔS), λ_c coherence (ΔC); each in
/// [[`LAMBDA_MIN`](crate::service::vocab::LAMBDA_MIN),
/// [`LAMBDA_MAX`](crate::service::vocab::LAMBDA_MAX)] = [0.1, 0.9], summing to 1 (the service's
/// `Lambdas` holds them so). The schema says [0, 1]: λ_c = 1 − 0.9 rounds to just under 0.1.
/// The one λ type of every answer: the meta-learning tools' and `gwt_compute_delta_sc`'s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct LambdaPair {
    /// Weight of surprise.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub lambda_s: f64,
    /// Weight of coherence (1 − lambda_s).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub lambda_c: f64,
}

impl From<Lambdas> for LambdaPair {
    fn from(l: Lambdas) -> Self {
        LambdaPair {
            lambda_s: l.s(),
            lambda_c: l.c(),
        }
    }
}

/// A λ change and what caused it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct AdjustmentAnswer {
    /// Change of λ_s (after clamping).
    pub delta_s: f64,
    /// Change of λ_c (−delta_s).
    pub delta_c: f64,
    /// Learning rate (0 for a Bayesian move).
    pub alpha: f64,
    /// The error behind it (replay step: the mean error; Bayesian: 1 − replay accuracy).
    pub trigger_error: f64,
}

impl From<Adjustment> for AdjustmentAnswer {
    fn from(a: Adjustment) -> Self {
        AdjustmentAnswer {
            delta_s: a.delta_s,
            delta_c: a.delta_c,
            alpha: a.alpha,
            trigger_error: a.trigger_error,
        }
    }
}

/// The report of one λ recalibration (gradient step or Bayesian optimisation).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RecalibrationReport {
    /// Whether it found λ to apply; otherwise see error.
    pub success: bool,
    /// The λ change (applied unless dry_run); null when none.
    pub adjustment: Option<AdjustmentAnswer>,
    /// λ after (equal to previous_lambdas when nothing changed).
    pub new_lambdas: LambdaPair,
    /// λ before.
    pub previous_lambdas: LambdaPair,
    /// gradient, bayesian, or none (empty replay window).
    pub method: Named<Method>,
    /// Bayesian objective evaluations; null otherwise.
    pub bo_iterations: Option<usize>,
    /// Bayesian: largest expected improvement at the last proposal; null otherwise.
    pub expected_improvement: Option<f64>,
    /// Replay accuracy of the previous λ; null without ΔS/ΔC data.
    pub replay_accuracy_before: Option<f64>,
    /// Replay accuracy of the new λ; null without ΔS/ΔC data.
    pub replay_accuracy_after: Option<f64>,
    /// Predictions used (Bayesian: those carrying ΔS and ΔC).
    pub samples: usize,
    /// Whether nothing was applied.
    pub dry_run: bool,
    /// Why it failed; null on success.
    pub error: Option<String>,
}

impl RecalibrationReport {
    /// The report of `plan`.
    pub fn new(plan: &RecalibrationPlan, dry_run: bool) -> Self {
        RecalibrationReport {
            success: plan.success,
            adjustment: plan.adjustment.map(AdjustmentAnswer::from),
            new_lambdas: plan.new.into(),
            previous_lambdas: plan.previous.into(),
            method: Named(plan.method),
            bo_iterations: plan.bo_iterations,
            expected_improvement: plan.expected_improvement,
            replay_accuracy_before: plan.replay_accuracy_before,
            replay_accuracy_after: plan.replay_accuracy_after,
            samples: plan.samples,
            dry_run,
            error: plan.error.clone(),
        }
    }
}

/// Save the meta state (with the accuracy windows `windows` says changed), append the events,
/// and write an `ESCALATION` directive for each human escalation among them.
///
/// # Errors
/// [`ToolError::Internal`] when the store fails.
pub fn persist(ctx: &WriteCtx<'_>, events: &[Event], windows: Windows) -> Result<(), ToolError> {
    meta_store::save(ctx.db, &ctx.svc.meta, windows)?;
    meta_store::insert_events(ctx.db, events)?;
    for e in events
        .iter()
        .filter(|e| e.event_type == EventType::HumanEscalation)
    {
        directives::insert(
            ctx.db,
            &Directive::new(
                None,
                InterventionType::Escalation,
                format!("meta-learning: {}", e.detail),
                SERVER_ACTOR,
                ctx.now,
            ),
        )?;
    }
    Ok(())
}

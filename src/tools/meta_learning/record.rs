//! `record_prediction`: the data path in. Closes a ΔS/ΔC prediction or records a prediction
//! made elsewhere; the service updates accuracy and λ and runs the escalation it calls for.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    AdjustmentAnswer, LambdaPair, MetaDomain, Named, RecalibrationReport, domain_of, persist,
};
use crate::service::CachedFamily;
use crate::service::meta::{
    ACH_BASELINE, ACH_MAX, EscalationStatus, EventType, LifecycleStage, MAX_LEARNING_RATE,
    MetaState, Prediction, Recorded,
};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::meta::{self as meta_store, CloseError, OPEN_PREDICTION_TTL_DAYS, Windows};
use crate::store::outcomes::{
    self as outcome_store, CHECK_PREDICTION_TTL_DAYS, CloseCheckError, ClosedBy,
};
use crate::tools::wire::{Int, Num, OneOf, UnitInterval, Validate, WireUuid};
use crate::tools::{Annotations, Answer, ToolDef, ToolError, WriteCtx, WriteTool};

/// `record_prediction`.
pub struct RecordPrediction;

/// The largest `embedder_index`.
const LAST_EMBEDDER: i64 = NUM_EMBEDDERS as i64 - 1;

/// The fields a `{prediction_id, actual}` call must leave out: the stored prediction has them.
const STORED_FIELDS: [&str; 5] = [
    "embedder_index",
    "predicted",
    "delta_s",
    "delta_c",
    "domain",
];

/// Arguments of `record_prediction`, in one of two forms: `{prediction_id, actual,
/// ach_level?}` or `{embedder_index, predicted, actual, delta_s?, delta_c?, domain?,
/// ach_level?}` with `delta_s` and `delta_c` both or neither. The schema lists every field as
/// optional but `actual` and states the forms in the field descriptions: a client's model API
/// refuses `oneOf` at the top of a tool's input schema (and Claude Code then drops the tool).
/// Its [`Validate`] impl enforces them, naming the field.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// From gwt_compute_delta_sc or check_strategy_blacklist; then send only actual.
    pub prediction_id: Option<WireUuid>,
    /// Without prediction_id (then required, with predicted): the embedder.
    pub embedder_index: Option<Int<0, LAST_EMBEDDER>>,
    /// Without prediction_id: the predicted value.
    pub predicted: Option<Num<UnitInterval>>,
    /// The outcome, on the prediction's scale.
    pub actual: Num<UnitInterval>,
    /// With delta_c: the surprise ΔS behind it.
    pub delta_s: Option<Num<UnitInterval>>,
    /// The coherence ΔC behind it, with delta_s.
    pub delta_c: Option<Num<UnitInterval>>,
    /// Without prediction_id, optional.
    pub domain: Option<OneOf<MetaDomain>>,
    /// The acetylcholine level, a learning-rate modulator; the schema's description is
    /// `ach_level_description()`, which quotes the constants.
    #[schemars(description = ach_level_description(), extend("default" = ACH_BASELINE))]
    pub ach_level: Option<Num<UnitInterval>>,
}

/// The schema description of `ach_level`, quoting the learning-rate constants.
fn ach_level_description() -> String {
    format!(
        "Leave out unless this prediction should move λ faster (up to {MAX_LEARNING_RATE} \
         at {ACH_MAX})."
    )
}

/// A checked `record_prediction` call.
enum Form {
    /// Close the open prediction with this id.
    Close(Uuid),
    /// A prediction made elsewhere.
    Direct {
        embedder_index: u8,
        predicted: f64,
        signals: Option<(f64, f64)>,
        domain: Option<Domain>,
    },
}

impl RecordInput {
    /// Which form the call takes, or why it takes neither.
    fn form(&self) -> Result<Form, ToolError> {
        if let Some(id) = self.prediction_id {
            let given = [
                self.embedder_index.is_some(),
                self.predicted.is_some(),
                self.delta_s.is_some(),
                self.delta_c.is_some(),
                self.domain.is_some(),
            ];
            if let Some(k) = given.iter().position(|g| *g) {
                return Err(ToolError::invalid(format!(
                    "field '{}' cannot be combined with 'prediction_id': a prediction_id closes a prediction from gwt_compute_delta_sc, whose values are stored; send only prediction_id and actual",
                    STORED_FIELDS[k]
                )));
            }
            return Ok(Form::Close(id.0));
        }
        let embedder_index = self.embedder_index.ok_or_else(|| {
            ToolError::invalid(format!(
                "missing required field 'embedder_index' (an integer in 0..={LAST_EMBEDDER}); or send prediction_id and actual"
            ))
        })?;
        let predicted = self.predicted.ok_or_else(|| {
            ToolError::invalid(
                "missing required field 'predicted' (a number in [0, 1]); or send prediction_id and actual",
            )
        })?;
        let signals = match (self.delta_s, self.delta_c) {
            (Some(s), Some(c)) => Some((s.get(), c.get())),
            (None, None) => None,
            _ => {
                return Err(ToolError::invalid(
                    "fields 'delta_s' and 'delta_c' go together: send both or neither",
                ));
            }
        };
        Ok(Form::Direct {
            embedder_index: embedder_index.get() as u8,
            predicted: predicted.get(),
            signals,
            domain: domain_of(self.domain),
        })
    }
}

impl Validate for RecordInput {
    fn validate(&self) -> Result<(), ToolError> {
        self.form().map(drop)
    }
}

/// The answer of `record_prediction`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordAnswer {
    /// Always true.
    pub recorded: bool,
    /// The prediction closed; null for a prediction made elsewhere.
    pub prediction_id: Option<WireUuid>,
    /// The embedder, 0 to 12; null for a closed ΔS/ΔC prediction (it covers all embedders).
    pub embedder_index: Option<u8>,
    /// The predicted value (for a closed prediction, its learning score, clamped to [0, 1]).
    pub predicted: f64,
    /// The outcome given.
    pub actual: f64,
    /// predicted − actual.
    pub prediction_error: f64,
    /// 1 − min(|prediction_error|, 1).
    pub accuracy: f64,
    /// The λ adjustment this prediction made; null when the error was small.
    pub adjustment: Option<AdjustmentAnswer>,
    /// λ after this call.
    pub current_lambdas: LambdaPair,
    /// Rolling accuracy over the last predictions.
    pub current_accuracy: Option<f64>,
    /// Consecutive predictions with rolling accuracy under the low-accuracy threshold.
    pub consecutive_low_count: u32,
    /// Escalation state after this call.
    pub escalation_status: Named<EscalationStatus>,
    /// Lifecycle stage after this call.
    pub lifecycle_stage: Named<LifecycleStage>,
    /// Predictions recorded so far.
    pub interaction_count: u64,
    /// The types of the events this call logged, in order.
    pub events: Vec<Named<EventType>>,
    /// The automatic Bayesian recalibration this call started; null when none ran.
    pub bayesian_recalibration: Option<RecalibrationReport>,
    /// When prediction_id came from check_strategy_blacklist: the check closed (λ is left
    /// alone; the outcome is a calibration observation of source `lessons`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckClosed>,
}

/// A closed blacklist check.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckClosed {
    /// The lesson the check's probability was about.
    pub lesson_id: WireUuid,
    /// Whether the strategy turned out to repeat that lesson's failed approach (actual 1).
    pub repeat: bool,
}

impl RecordAnswer {
    fn new(p: &Prediction, id: Option<Uuid>, r: &Recorded, m: &MetaState) -> Self {
        RecordAnswer {
            recorded: true,
            prediction_id: id.map(WireUuid),
            embedder_index: p.embedder_index,
            predicted: p.predicted,
            actual: p.actual,
            prediction_error: r.error,
            accuracy: r.accuracy,
            adjustment: r.adjustment.map(AdjustmentAnswer::from),
            current_lambdas: m.lambdas.into(),
            current_accuracy: m.current_accuracy(),
            consecutive_low_count: m.consecutive_low,
            escalation_status: Named(m.escalation_status()),
            lifecycle_stage: Named(m.stage()),
            interaction_count: m.interaction_count,
            events: r.events.iter().map(|e| Named(e.event_type)).collect(),
            bayesian_recalibration: r
                .bayesian
                .as_ref()
                .map(|plan| RecalibrationReport::new(plan, false)),
            check: None,
        }
    }
}

impl ToolDef for RecordPrediction {
    const NAME: &'static str = "record_prediction";
    const TITLE: &'static str = "Record a prediction outcome";
    fn description() -> String {
        format!(
            "Report how a prediction turned out, so the memory recalibrates. Send \
             {{prediction_id, actual}} for a gwt_compute_delta_sc update (within \
             {OPEN_PREDICTION_TTL_DAYS} days) or a check_strategy_blacklist answer (actual 1: it \
             was the failed approach again, else 0), or {{embedder_index, predicted, actual}} \
             for one made elsewhere. Low accuracy of λ runs a Bayesian recalibration, then asks \
             for human review."
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = RecordInput;
    type Output = RecordAnswer;

    fn example() -> Value {
        json!({"embedder_index": 0, "predicted": 0.8, "actual": 0.5, "delta_s": 0.6, "delta_c": 0.4, "domain": "code"})
    }
}

impl WriteTool for RecordPrediction {
    const FAMILIES: &'static [CachedFamily] = &[CachedFamily::Meta];

    fn run(ctx: &mut WriteCtx<'_>, input: RecordInput) -> Result<Answer<RecordAnswer>, ToolError> {
        if let Form::Close(id) = input.form()?
            && let Some(answer) = close_check(ctx, id, &input)?
        {
            return Ok(Answer::ok(answer));
        }
        let (prediction, id) = prediction(ctx, &input)?;
        meta_store::insert_prediction(ctx.db, &prediction, id)?;
        let db = ctx.db;
        let recorded = ctx
            .svc
            .meta
            .record_and_escalate(&prediction, ctx.now, || meta_store::replay_window(db, None))?;
        // A Bayesian run re-weights λ but leaves the accuracy windows alone.
        persist(
            ctx,
            &recorded.events,
            Windows::Prediction(recorded.embedder_window),
        )?;
        Ok(Answer::ok(RecordAnswer::new(
            &prediction,
            id,
            &recorded,
            &ctx.svc.meta,
        )))
    }
}

/// Close the blacklist check `id` of this project with the call's `actual` (1: the strategy
/// was the failed approach again, 0: it was another approach); `None` when no check gave
/// this id (it may be a ΔS/ΔC prediction's). λ and the accuracy windows are left alone.
fn close_check(
    ctx: &WriteCtx<'_>,
    id: Uuid,
    input: &RecordInput,
) -> Result<Option<RecordAnswer>, ToolError> {
    if outcome_store::get_check(ctx.db, id)?.is_none() {
        return Ok(None);
    }
    let actual = input.actual.get();
    let repeat = match actual {
        1.0 => true,
        0.0 => false,
        _ => {
            return Err(ToolError::invalid(format!(
                "field 'actual' is {actual}: prediction_id {id} is a check_strategy_blacklist \
                 prediction, closed with 1 (the strategy was the failed approach again) or 0 \
                 (it was another approach)"
            )));
        }
    };
    if input.ach_level.is_some() {
        return Err(ToolError::invalid(
            "field 'ach_level' cannot be combined with a check_strategy_blacklist prediction_id: \
             a check's outcome does not move λ",
        ));
    }
    let closed = outcome_store::close_check(ctx.db, id, repeat, ClosedBy::Agent, ctx.now)?
        .map_err(|why| {
            let reason = match why {
                CloseCheckError::Unknown => "is unknown".to_string(),
                CloseCheckError::AlreadyClosed(ClosedBy::Agent) => {
                    "was already closed by an earlier record_prediction".into()
                }
                CloseCheckError::AlreadyClosed(ClosedBy::Lesson) => {
                    "was already closed as a repeat when a lesson was logged for its strategy"
                        .into()
                }
                CloseCheckError::Expired => format!(
                    "has expired (checks must be closed within {CHECK_PREDICTION_TTL_DAYS} days)"
                ),
            };
            ToolError::invalid(format!("prediction_id {id} {reason}"))
        })?;
    let m = &ctx.svc.meta;
    let error = closed.probability - actual;
    Ok(Some(RecordAnswer {
        recorded: true,
        prediction_id: Some(WireUuid(id)),
        embedder_index: None,
        predicted: closed.probability,
        actual,
        prediction_error: error,
        accuracy: 1.0 - error.abs().min(1.0),
        adjustment: None,
        current_lambdas: m.lambdas.into(),
        current_accuracy: m.current_accuracy(),
        consecutive_low_count: m.consecutive_low,
        escalation_status: Named(m.escalation_status()),
        lifecycle_stage: Named(m.stage()),
        interaction_count: m.interaction_count,
        events: Vec::new(),
        bayesian_recalibration: None,
        check: Some(CheckClosed {
            lesson_id: WireUuid(closed.lesson_id),
            repeat,
        }),
    }))
}

/// The prediction a call records, and the id of the open prediction it closes. Closing reads
/// and updates the store; an id that is unknown, closed or expired is refused.
fn prediction(
    ctx: &WriteCtx<'_>,
    input: &RecordInput,
) -> Result<(Prediction, Option<Uuid>), ToolError> {
    let base = Prediction {
        timestamp: ctx.now,
        embedder_index: None,
        predicted: 0.0,
        actual: input.actual.get(),
        delta_s: None,
        delta_c: None,
        domain: None,
        ach_level: input.ach_level.map_or(ACH_BASELINE, Num::get),
    };
    match input.form()? {
        Form::Close(id) => {
            let open = meta_store::close_prediction(ctx.db, id, ctx.now)?
                .map_err(|why| cannot_close(id, why))?;
            let closed = Prediction {
                predicted: open.learning_score.clamp(0.0, 1.0),
                delta_s: Some(open.delta_s),
                delta_c: Some(open.delta_c),
                domain: open.domain,
                ..base
            };
            Ok((closed, Some(id)))
        }
        Form::Direct {
            embedder_index,
            predicted,
            signals,
            domain,
        } => {
            let direct = Prediction {
                embedder_index: Some(embedder_index),
                predicted,
                delta_s: signals.map(|s| s.0),
                delta_c: signals.map(|s| s.1),
                domain,
                ..base
            };
            Ok((direct, None))
        }
    }
}

/// Why the open prediction `id` cannot be closed: a refusal that depends on the stored data,
/// answered like an argument error (the id is what is wrong).
fn cannot_close(id: Uuid, why: CloseError) -> ToolError {
    let reason = match why {
        CloseError::Unknown => {
            "is unknown (no gwt_compute_delta_sc or check_strategy_blacklist call of this project returned it)"
                .to_string()
        }
        CloseError::AlreadyClosed => "was already closed by an earlier record_prediction".into(),
        CloseError::Expired => format!(
            "has expired (predictions must be closed within {OPEN_PREDICTION_TTL_DAYS} days)"
        ),
    };
    ToolError::invalid(format!("prediction_id {id} {reason}"))
}

//! The `epistemic_action` tool: assert, hypothesize, verify, retract and query beliefs in a
//! persistent workspace keyed by normalised target.
//!
//! Contract: SPEC §4 epistemic, seeds/epistemic-action.md (its input fields and limits), issue 6
//! (`BELIEF_NOT_FOUND`, `workspace_state`). The numerics are in `service::epistemic`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::wire::{Choice, NonBlank, Num, OneOf, Timestamp, UnitInterval, Validate, WireUuid};
use super::{Annotations, Answer, Tool, ToolDef, ToolError, WriteCtx, WriteTool};
use crate::ops::beliefs::Acted;
use crate::service::CachedFamily;
use crate::service::atc::temperature::TemperatureFit;
use crate::service::epistemic::{
    ActionRequest, ActionType, Belief, BeliefEvent, BeliefStatus, DEFAULT_CONFIDENCE, DENIED_BELOW,
    MAX_RATIONALE_CHARS, MAX_TARGET_CHARS, Outcome as ActionOutcome, UncertaintyType,
    VERIFIED_ABOVE, WorkspaceSummary,
};
use crate::service::outcomes::{self, Source};
use crate::store::outcomes as outcome_store;

/// How many of the most recent history events a `query` returns (`history_length` is always
/// the full count).
pub const QUERY_HISTORY_EVENTS: usize = 50;

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[Tool::write::<EpistemicAction>()];

impl Choice for ActionType {
    const ALL: &'static [Self] = ActionType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for UncertaintyType {
    const ALL: &'static [Self] = UncertaintyType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for BeliefStatus {
    const ALL: &'static [Self] = BeliefStatus::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// `epistemic_action`.
pub struct EpistemicAction;

/// Arguments of `epistemic_action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionInput {
    /// hypothesize or assert a belief, verify it with evidence, retract it (history kept), or
    /// query it.
    pub action_type: OneOf<ActionType>,
    /// The belief, as a statement.
    pub target: NonBlank<MAX_TARGET_CHARS>,
    /// hypothesize, assert: your confidence. verify: how strongly the evidence supports the
    /// belief (0.5 neutral, 0.1 strong evidence against).
    #[schemars(extend("default" = DEFAULT_CONFIDENCE))]
    pub confidence: Option<Num<UnitInterval>>,
    /// The observation or reasoning behind this action.
    pub rationale: NonBlank<MAX_RATIONALE_CHARS>,
    /// Optional context.
    pub context: Option<ActionContext>,
}

/// Optional context of an epistemic action.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionContext {
    /// Ids of related stored items.
    pub source_nodes: Option<Vec<WireUuid>>,
    /// epistemic: more evidence would settle it; aleatory: inherent randomness (a flaky test).
    pub uncertainty_type: Option<OneOf<UncertaintyType>>,
}

impl Validate for ActionInput {}

/// The answer of `epistemic_action`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ActionAnswer {
    /// `false` only for `BELIEF_NOT_FOUND`.
    pub success: bool,
    /// The failure code, present when `success` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<FailureCode>,
    /// What failed, present when `success` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The action performed.
    pub action_type: OneOf<ActionType>,
    /// The target as given in this call.
    pub target: String,
    /// What the action did, present when `success` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<OutcomeName>,
    /// One sentence saying what happened.
    pub message: String,
    /// The belief after the action; null when there is none.
    pub belief_state: Option<BeliefState>,
    /// For query: whether the belief was found, its history length and its latest history
    /// events (oldest first, at most 50). Null for other actions.
    pub query_result: Option<QueryResult>,
    /// The whole workspace after the action.
    pub workspace_state: WorkspaceState,
    /// Once this project has resolved enough beliefs (verified, refuted or retracted; see
    /// `MIN_CALIBRATION_OUTCOMES`): the belief's confidence as your past outcomes calibrate it,
    /// σ(logit(confidence)/T) with the beliefs temperature T (refitted as beliefs resolve).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibrated_confidence: Option<f64>,
}

/// Why an epistemic action failed.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub enum FailureCode {
    /// verify or retract named a belief that does not exist.
    #[serde(rename = "BELIEF_NOT_FOUND")]
    BeliefNotFound,
}

/// What an action did.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeName {
    /// assert or hypothesize created the belief.
    Created,
    /// assert re-affirmed an existing belief.
    Reaffirmed,
    /// hypothesize found an existing belief and left it unchanged.
    AlreadyExists,
    /// verify updated the confidence.
    Verified,
    /// retract withdrew the belief.
    Retracted,
    /// query found the belief.
    Found,
    /// query found nothing.
    NotFound,
}

impl From<ActionOutcome> for OutcomeName {
    fn from(o: ActionOutcome) -> Self {
        match o {
            ActionOutcome::Created => OutcomeName::Created,
            ActionOutcome::Reaffirmed => OutcomeName::Reaffirmed,
            ActionOutcome::AlreadyExists => OutcomeName::AlreadyExists,
            ActionOutcome::Verified => OutcomeName::Verified,
            ActionOutcome::Retracted => OutcomeName::Retracted,
            ActionOutcome::Found => OutcomeName::Found,
            ActionOutcome::NotFound => OutcomeName::NotFound,
        }
    }
}

/// A belief as stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BeliefState {
    /// Belief id.
    pub id: WireUuid,
    /// The target as first given.
    pub target: String,
    /// The key the workspace matches on (case-folded, spaces collapsed).
    pub normalised_target: String,
    /// Current status.
    pub status: OneOf<BeliefStatus>,
    /// Current confidence, in [0, 1] (0 once retracted).
    pub confidence: f64,
    /// Rationale of the latest action that changed the belief.
    pub rationale: String,
    /// Kind of uncertainty, if ever given.
    pub uncertainty_type: Option<OneOf<UncertaintyType>>,
    /// Related ids, first-seen order.
    pub source_nodes: Vec<WireUuid>,
    /// When it was created (UTC).
    pub created_at: Timestamp,
    /// When it last changed (UTC).
    pub updated_at: Timestamp,
    /// Number of actions in its history.
    pub history_length: usize,
}

impl From<&Belief> for BeliefState {
    fn from(b: &Belief) -> Self {
        BeliefState {
            id: WireUuid(b.id),
            target: b.target.clone(),
            normalised_target: b.normalised_target.clone(),
            status: OneOf(b.status),
            confidence: b.confidence,
            rationale: b.rationale.clone(),
            uncertainty_type: b.uncertainty_type.map(OneOf),
            source_nodes: b.source_nodes.iter().copied().map(WireUuid).collect(),
            created_at: Timestamp(b.created_at),
            updated_at: Timestamp(b.updated_at),
            history_length: b.history.len(),
        }
    }
}

/// The result of a query.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QueryResult {
    /// Whether the belief exists.
    pub found: bool,
    /// Number of actions in its history.
    pub history_length: usize,
    /// The latest actions, oldest first (at most 50).
    pub history: Vec<HistoryEvent>,
}

/// One action in a belief's history.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HistoryEvent {
    /// The action.
    pub action_type: OneOf<ActionType>,
    /// The confidence given with it (the evidence, for verify).
    pub input_confidence: f64,
    /// Status before; null when the action created the belief.
    pub status_before: Option<OneOf<BeliefStatus>>,
    /// Status after.
    pub status_after: OneOf<BeliefStatus>,
    /// Confidence before; null when the action created the belief.
    pub confidence_before: Option<f64>,
    /// Confidence after.
    pub confidence_after: f64,
    /// The action's rationale.
    pub rationale: String,
    /// When (UTC).
    pub at: Timestamp,
}

impl From<&BeliefEvent> for HistoryEvent {
    fn from(e: &BeliefEvent) -> Self {
        HistoryEvent {
            action_type: OneOf(e.action),
            input_confidence: e.input_confidence,
            status_before: e.status_before.map(OneOf),
            status_after: OneOf(e.status_after),
            confidence_before: e.confidence_before,
            confidence_after: e.confidence_after,
            rationale: e.rationale.clone(),
            at: Timestamp(e.at),
        }
    }
}

/// Counts and means over the whole workspace. Means are over live (not retracted) beliefs and
/// null when there are none; entropy in bits (0 = certain, 1 = coin flip).
#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceState {
    /// All beliefs, retracted included.
    pub total_beliefs: u64,
    /// Beliefs not retracted.
    pub live_beliefs: u64,
    /// Beliefs per status.
    pub counts: StatusCounts,
    /// Mean confidence of live beliefs.
    pub mean_confidence: Option<f64>,
    /// Mean binary entropy of live beliefs, in bits.
    pub mean_entropy: Option<f64>,
}

/// Beliefs per status.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusCounts {
    /// Asserted.
    pub active: u64,
    /// Tentative, or verified evidence left it between 0.3 and 0.7.
    pub hypothetical: u64,
    /// Confidence above 0.7 after verification.
    pub verified: u64,
    /// Confidence below 0.3 after verification.
    pub denied: u64,
    /// Withdrawn.
    pub retracted: u64,
}

impl From<&WorkspaceSummary> for WorkspaceState {
    fn from(s: &WorkspaceSummary) -> Self {
        let [active, hypothetical, verified, denied, retracted] = s.counts;
        WorkspaceState {
            total_beliefs: s.total(),
            live_beliefs: s.live,
            counts: StatusCounts {
                active,
                hypothetical,
                verified,
                denied,
                retracted,
            },
            mean_confidence: s.mean_confidence(),
            mean_entropy: s.mean_entropy(),
        }
    }
}

impl ActionAnswer {
    /// The `BELIEF_NOT_FOUND` answer of a verify or retract of an unknown belief.
    fn not_found(
        req: ActionRequest,
        e: &crate::service::epistemic::EpistemicError,
        summary: &WorkspaceSummary,
    ) -> Self {
        ActionAnswer {
            success: false,
            error: Some(FailureCode::BeliefNotFound),
            detail: Some(e.to_string()),
            action_type: OneOf(req.action),
            target: req.target,
            outcome: None,
            message: format!("{}: {e}", e.code()),
            belief_state: None,
            query_result: None,
            workspace_state: summary.into(),
            calibrated_confidence: None,
        }
    }
}

impl ToolDef for EpistemicAction {
    const NAME: &'static str = "epistemic_action";
    const TITLE: &'static str = "Track a belief";
    fn description() -> String {
        format!(
            "Keep hypotheses and beliefs while you work (e.g. suspected causes of a bug) and \
             update them with evidence; they persist across sessions. verify applies Bayes' \
             rule in log-odds: verified above {VERIFIED_ABOVE}, denied below {DENIED_BELOW}. \
             Beliefs are matched by statement, ignoring case and spacing."
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = ActionInput;
    type Output = ActionAnswer;

    fn example() -> Value {
        json!({
            "action_type": "hypothesize",
            "target": "The login test fails because the session cookie expires before the redirect",
            "confidence": 0.6,
            "rationale": "The failure only appears when the test runs longer than 30 seconds",
            "context": {"uncertainty_type": "epistemic"}
        })
    }
}

impl WriteTool for EpistemicAction {
    const FAMILIES: &'static [CachedFamily] = &[];

    fn run(ctx: &mut WriteCtx<'_>, input: ActionInput) -> Result<Answer<ActionAnswer>, ToolError> {
        let context = input.context.unwrap_or(ActionContext {
            source_nodes: None,
            uncertainty_type: None,
        });
        let req = ActionRequest::new(
            input.action_type.get(),
            input.target.0,
            input.confidence.map(Num::get),
            input.rationale.0,
            context.uncertainty_type.map(OneOf::get),
            context
                .source_nodes
                .unwrap_or_default()
                .into_iter()
                .map(|u| u.0)
                .collect(),
        )
        .map_err(|e| ToolError::invalid(e.to_string()))?;
        let Acted { result, summary } = crate::ops::beliefs::act(ctx.db, &req, ctx.now)?;
        let result = match result {
            Ok(r) => r,
            Err(e) => return Ok(Answer::failed(ActionAnswer::not_found(req, &e, &summary))),
        };
        let calibrated_confidence = match &result.belief {
            Some(b) => calibrated_confidence(ctx, req.action, b.confidence, &summary)?,
            None => None,
        };
        let query_result = (req.action == ActionType::Query).then(|| {
            let history = result.belief.as_ref().map_or(&[][..], |b| &b.history[..]);
            let recent = &history[history.len().saturating_sub(QUERY_HISTORY_EVENTS)..];
            QueryResult {
                found: result.belief.is_some(),
                history_length: history.len(),
                history: recent.iter().map(HistoryEvent::from).collect(),
            }
        });
        Ok(Answer::ok(ActionAnswer {
            success: true,
            error: None,
            detail: None,
            action_type: OneOf(req.action),
            target: req.target,
            outcome: Some(result.outcome.into()),
            message: result.message,
            belief_state: result.belief.as_ref().map(BeliefState::from),
            query_result,
            workspace_state: (&summary).into(),
            calibrated_confidence,
        }))
    }
}

/// The calibrated `confidence` when the project has at least
/// [`outcomes::MIN_CALIBRATION_OUTCOMES`] resolved beliefs, else `None`. An action that may
/// resolve a belief (`verify`, `retract`) first refits the beliefs temperature when a refit
/// would move it by more than 1 % (level 2, automatically, as outcomes arrive). The count comes
/// from the workspace `summary` the action computed anyway; only a resolving action reads the
/// resolved beliefs themselves.
fn calibrated_confidence(
    ctx: &WriteCtx<'_>,
    action: ActionType,
    confidence: f64,
    summary: &WorkspaceSummary,
) -> Result<Option<f64>, ToolError> {
    if outcomes::resolved_beliefs(summary) < outcomes::MIN_CALIBRATION_OUTCOMES as u64 {
        return Ok(None);
    }
    let mut temperature = outcome_store::temperature(ctx.db, Source::Beliefs)?;
    if matches!(action, ActionType::Verify | ActionType::Retract) {
        let resolved = outcome_store::outcomes(ctx.db, Source::Beliefs, None)?;
        if outcomes::refit_would_move(&resolved, temperature)
            && let TemperatureFit::Fitted(f) = outcomes::fit(&resolved)
        {
            temperature = f.temperature;
            crate::ops::outcomes::refit(ctx.db, Source::Beliefs, &resolved, temperature, ctx.now)?;
        }
    }
    Ok(Some(outcomes::calibrated(confidence, temperature)))
}

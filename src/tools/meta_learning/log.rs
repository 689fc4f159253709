//! `get_meta_learning_log`: one page of the event log, newest first, filtered by time, event
//! type and domain.

use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{LambdaPair, MetaDomain, Named, domain, domain_of};
use crate::service::meta::{Event, EventType};
use crate::store::meta::{self as meta_store, EventQuery};
use crate::tools::wire::{Int, OneOf, Timestamp, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// `get_meta_learning_log`.
pub struct GetMetaLearningLog;

/// Default page size.
pub const DEFAULT_LIMIT: i64 = 100;
/// Largest page size.
pub const MAX_LIMIT: i64 = 1000;
/// Largest `offset`: far beyond any log, and below both 2^53 (every JSON number up to it is an
/// exact integer in every client) and the 9·10^15 up to which `wire::Int` reads an integral
/// float such as `1e15` as an integer. With `i64::MAX` the schema accepted `1e16` and the
/// parser refused it.
pub const MAX_OFFSET: i64 = 1_000_000_000_000_000;

/// Arguments of `get_meta_learning_log`. A `start_time` after `end_time` selects nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogInput {
    /// Only events at or after this time (RFC 3339).
    pub start_time: Option<Timestamp>,
    /// Only events at or before this time (RFC 3339).
    pub end_time: Option<Timestamp>,
    /// Only events of this type.
    pub event_type: Option<OneOf<EventType>>,
    /// Only events of this domain.
    pub domain: Option<OneOf<MetaDomain>>,
    /// Page size.
    #[schemars(extend("default" = DEFAULT_LIMIT))]
    pub limit: Option<Int<1, MAX_LIMIT>>,
    /// Events to skip, for the next page.
    #[schemars(extend("default" = 0))]
    pub offset: Option<Int<0, MAX_OFFSET>>,
}

impl Validate for LogInput {}

/// The answer of `get_meta_learning_log`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogAnswer {
    /// The page, newest first.
    pub events: Vec<LogEvent>,
    /// Events matching the filters, over all pages.
    pub total_count: usize,
    /// Whether more matching events follow this page.
    pub has_more: bool,
    /// How long the query took, in milliseconds.
    pub query_time_ms: f64,
}

/// One event of the meta-learning log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogEvent {
    /// When (UTC).
    pub timestamp: Timestamp,
    /// What happened.
    pub event_type: Named<EventType>,
    /// predicted − actual of the prediction that caused it; null when none did.
    pub prediction_error: Option<f64>,
    /// λ before.
    pub lambda_before: LambdaPair,
    /// λ after.
    pub lambda_after: LambdaPair,
    /// Rolling accuracy at the time; null before any prediction.
    pub accuracy_avg: Option<f64>,
    /// Whether it belongs to an escalation (Bayesian or human).
    pub escalated: bool,
    /// The domain of the prediction or recalibration; null when none.
    pub domain: Option<Named<MetaDomain>>,
    /// The embedder of the prediction, 0 to 12; null when none.
    pub embedder_index: Option<u8>,
    /// A sentence saying what happened and why.
    pub detail: String,
}

impl From<&Event> for LogEvent {
    fn from(e: &Event) -> Self {
        LogEvent {
            timestamp: Timestamp(e.timestamp),
            event_type: Named(e.event_type),
            prediction_error: e.prediction_error,
            lambda_before: e.lambda_before.into(),
            lambda_after: e.lambda_after.into(),
            accuracy_avg: e.accuracy_avg,
            escalated: e.escalated,
            domain: e.domain.map(domain),
            embedder_index: e.embedder_index,
            detail: e.detail.clone(),
        }
    }
}

impl ToolDef for GetMetaLearningLog {
    const NAME: &'static str = "get_meta_learning_log";
    const TITLE: &'static str = "Meta-learning event log";
    fn description() -> String {
        String::from(
            "What the memory's self-correction did and why, newest first (λ adjustments, \
             accuracy alerts, recalibrations, escalations, resets); filter by time, type and \
             domain.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    type Input = LogInput;
    type Output = LogAnswer;

    fn example() -> Value {
        json!({"event_type": "lambda_adjustment", "limit": 10, "offset": 0})
    }
}

impl ReadTool for GetMetaLearningLog {
    fn run(ctx: &ReadCtx<'_>, input: LogInput) -> Result<Answer<LogAnswer>, ToolError> {
        let started = Instant::now();
        let query = EventQuery {
            start: input.start_time.map(|t| t.0),
            end: input.end_time.map(|t| t.0),
            event_type: input.event_type.map(OneOf::get),
            domain: domain_of(input.domain),
            limit: input.limit.map_or(DEFAULT_LIMIT, Int::get) as usize,
            offset: input.offset.map_or(0, Int::get) as usize,
        };
        let (events, total) = meta_store::query_events(ctx.db, &query)?;
        Ok(Answer::ok(LogAnswer {
            has_more: query.offset.saturating_add(events.len()) < total,
            events: events.iter().map(LogEvent::from).collect(),
            total_count: total,
            query_time_ms: started.elapsed().as_secs_f64() * 1e3,
        }))
    }
}

//! `log_lesson_learned`: record that a strategy failed on a task, after its root-cause analysis,
//! so that the blacklist check refuses it from then on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Code, Failure, Flag, Reply};
use crate::ops::lessons::Logged;
use crate::semantic::Semantic;
use crate::service::CachedFamily;
use crate::service::lessons::{
    FailureType, LessonError, MAX_ID_CHARS, MAX_RCA_CHARS, MAX_STRATEGY_CHARS, MatchType, NewLesson,
};
use crate::tools::wire::{NonBlank, OneOf, Validate, WireUuid};
use crate::tools::{Annotations, Answer, ToolDef, ToolError, WriteCtx, WriteTool};

/// `log_lesson_learned`.
pub struct LogLessonLearned;

/// Arguments of `log_lesson_learned`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogInput {
    /// The task, as your project names it (e.g. a ticket id); matching ignores case, width and
    /// surrounding spaces.
    pub task_id: NonBlank<MAX_ID_CHARS>,
    /// The strategy that failed, in one sentence, as an agent would propose it.
    pub strategy_description: NonBlank<MAX_STRATEGY_CHARS>,
    /// Why this strategy cannot work here.
    pub rca_summary: NonBlank<MAX_RCA_CHARS>,
    /// The kind of cause.
    pub failure_type: OneOf<FailureType>,
    /// Your agent's name.
    pub source_agent: NonBlank<MAX_ID_CHARS>,
}

impl Validate for LogInput {}

/// A lesson was logged, or merged into the task's active lesson it rewords.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LoggedOut {
    /// Always true.
    pub success: Flag<true>,
    /// The new lesson; with `merged_into_existing`, the existing lesson.
    pub lesson_id: WireUuid,
    /// Present (always true) when the strategy rewords an active lesson of the task (the
    /// blacklist check blocks it against that lesson): no second lesson was made, and this
    /// call (strategy and root cause) is kept as that lesson's recurrence.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Flag<true>")]
    pub merged_into_existing: Option<Flag<true>>,
    /// With `merged_into_existing`: how the strategy matched the lesson's (`contains`,
    /// `contained_in` or `similar`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "OneOf<MatchType>")]
    pub match_type: Option<OneOf<MatchType>>,
    /// With `merged_into_existing`: the lesson's recurrences so far, this one included (1 or
    /// more).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(min = 1))]
    pub recurrences: Option<u64>,
}

/// Why a lesson was not logged.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub enum LogCode {
    /// The arguments are invalid; the detail names the field and what is allowed.
    #[serde(rename = "VALIDATION_ERROR")]
    Validation,
    /// The task already has a lesson for this strategy (active or not): `lesson_id` names it.
    #[serde(rename = "LESSON_ALREADY_EXISTS")]
    AlreadyExists,
    /// The store failed; nothing was logged.
    #[serde(rename = "INTERNAL_ERROR")]
    Internal,
}

impl Code for LogCode {
    const VALIDATION: Self = LogCode::Validation;
    const INTERNAL: Self = LogCode::Internal;
}

/// The lesson a `LESSON_ALREADY_EXISTS` failure names.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct ExistingLesson {
    /// With `LESSON_ALREADY_EXISTS`: the lesson the task already has.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WireUuid")]
    pub lesson_id: Option<WireUuid>,
    /// With `LESSON_ALREADY_EXISTS`: whether that lesson is active (re-activate it with
    /// `set_lesson_active` if not).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub is_active: Option<bool>,
}

/// The answer of `log_lesson_learned`.
pub type LogAnswer = Reply<LoggedOut, Failure<LogCode, ExistingLesson>>;

impl ToolDef for LogLessonLearned {
    const NAME: &'static str = "log_lesson_learned";
    const TITLE: &'static str = "Log a lesson learned";
    fn description() -> String {
        String::from(
            "Once you know why a strategy failed on a task, record it, so no agent tries it on \
             that task again: check_strategy_blacklist then blocks it and close rewordings. \
             Repeats name its lesson_id: LESSON_ALREADY_EXISTS, or merged if reworded.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = LogInput;
    type Output = LogAnswer;

    fn example() -> Value {
        json!({
            "task_id": "TASK-42",
            "strategy_description": "Mock the database layer in integration tests",
            "rca_summary": "Mocks hid a migration bug that only the real SQLite schema exposed.",
            "failure_type": "ARCHITECTURAL_MISUNDERSTANDING",
            "source_agent": "claude-code"
        })
    }

    fn prepare(semantic: &Semantic, args: &Value) {
        if let Some(strategy) = args.get("strategy_description").and_then(Value::as_str) {
            semantic.warm(strategy);
        }
    }
}

impl WriteTool for LogLessonLearned {
    const FAMILIES: &'static [CachedFamily] = &[];

    fn run(ctx: &mut WriteCtx<'_>, input: LogInput) -> Result<Answer<LogAnswer>, ToolError> {
        let lesson = NewLesson::new(
            input.task_id.as_str(),
            &input.strategy_description.0,
            input.rca_summary.as_str(),
            input.failure_type.get(),
            input.source_agent.as_str(),
        )
        .map_err(|e| ToolError::invalid(e.to_string()))?;
        match crate::ops::lessons::log(ctx.db, ctx.semantic, &lesson, ctx.now)? {
            Logged::New(l) => Ok(Reply::done(LoggedOut {
                success: Flag,
                lesson_id: WireUuid(l.id),
                merged_into_existing: None,
                match_type: None,
                recurrences: None,
            })),
            Logged::Recurred {
                lesson,
                recurrence,
                recurrences,
            } => Ok(Reply::done(LoggedOut {
                success: Flag,
                lesson_id: WireUuid(lesson.id),
                merged_into_existing: Some(Flag),
                match_type: Some(OneOf(recurrence.match_type)),
                recurrences: Some(recurrences),
            })),
            Logged::Exists(existing) => {
                let e = LessonError::AlreadyExists {
                    existing: existing.id,
                };
                let hint = if existing.is_active {
                    ""
                } else {
                    " (inactive; re-activate it with set_lesson_active)"
                };
                Ok(Reply::failed(Failure {
                    success: Flag,
                    error: LogCode::AlreadyExists,
                    detail: format!("{e}{hint}"),
                    more: ExistingLesson {
                        lesson_id: Some(WireUuid(existing.id)),
                        is_active: Some(existing.is_active),
                    },
                }))
            }
        }
    }
}

//! `set_lesson_active`: lift a lesson (its strategy may be tried again) or restore it, recorded
//! in the directive history.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Code, Failure, Flag, LessonOut, Reply};
use crate::service::CachedFamily;
use crate::service::lessons::{
    DEFAULT_ACTOR, LessonError, MAX_ID_CHARS, MAX_RATIONALE_CHARS, MAX_STRATEGY_CHARS, TaskKey,
    normalise_strategy,
};
use crate::store::lessons as lesson_store;
use crate::tools::wire::{NonBlank, Validate, WireUuid};
use crate::tools::{Annotations, Answer, ToolDef, ToolError, WriteCtx, WriteTool};

/// `set_lesson_active`.
pub struct SetLessonActive;

/// Arguments of `set_lesson_active`. The lesson is named by `lesson_id` alone, or by
/// `task_id` and `strategy` together: stated in the field descriptions, not as a top-level
/// `oneOf` (a client's model API refuses one there), and enforced by
/// its [`Validate`] impl.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetActiveInput {
    /// Send either this, or task_id and strategy.
    pub lesson_id: Option<WireUuid>,
    /// Instead of lesson_id, with strategy.
    pub task_id: Option<NonBlank<MAX_ID_CHARS>>,
    /// Instead of lesson_id, with task_id.
    pub strategy: Option<NonBlank<MAX_STRATEGY_CHARS>>,
    /// false lifts the lesson, true restores it.
    pub active: bool,
    /// Why, e.g. what changed since the lesson was logged.
    pub rationale: NonBlank<MAX_RATIONALE_CHARS>,
}

/// How a call names its lesson.
enum LessonRef<'a> {
    /// By id.
    Id(Uuid),
    /// By task and strategy.
    Strategy(&'a str, &'a str),
}

impl SetActiveInput {
    fn lesson_ref(&self) -> Result<LessonRef<'_>, ToolError> {
        match (&self.lesson_id, &self.task_id, &self.strategy) {
            (Some(id), None, None) => Ok(LessonRef::Id(id.0)),
            (None, Some(task), Some(strategy)) => {
                Ok(LessonRef::Strategy(task.as_str(), strategy.as_str()))
            }
            _ => Err(ToolError::invalid(
                "give either 'lesson_id', or both 'task_id' and 'strategy', to name the lesson",
            )),
        }
    }
}

impl Validate for SetActiveInput {
    fn validate(&self) -> Result<(), ToolError> {
        self.lesson_ref().map(drop)
    }
}

/// The lesson after the change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Changed {
    /// Always true.
    pub success: Flag<true>,
    /// The lesson, with its new `is_active`.
    pub lesson: LessonOut,
    /// `is_active` before the call.
    pub previous_is_active: bool,
    /// Whether `is_active` changed (setting the value it had is allowed, and recorded too).
    pub changed: bool,
    /// The `OVERRIDE` entry recorded in the directive history.
    pub directive_id: WireUuid,
}

/// Why a lesson was not changed.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub enum SetActiveCode {
    /// The arguments are invalid; the detail names the field and what is allowed.
    #[serde(rename = "VALIDATION_ERROR")]
    Validation,
    /// No such lesson (by id, or for this task and strategy).
    #[serde(rename = "LESSON_NOT_FOUND")]
    NotFound,
    /// The store failed; nothing was changed.
    #[serde(rename = "INTERNAL_ERROR")]
    Internal,
}

impl Code for SetActiveCode {
    const VALIDATION: Self = SetActiveCode::Validation;
    const INTERNAL: Self = SetActiveCode::Internal;
}

/// The lesson id a `LESSON_NOT_FOUND` failure names.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct MissingLesson {
    /// With `LESSON_NOT_FOUND` for a `lesson_id`: that id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WireUuid")]
    pub lesson_id: Option<WireUuid>,
}

/// The answer of `set_lesson_active`.
pub type SetActiveAnswer = Reply<Changed, Failure<SetActiveCode, MissingLesson>>;

impl ToolDef for SetLessonActive {
    const NAME: &'static str = "set_lesson_active";
    const TITLE: &'static str = "Activate or deactivate a lesson";
    fn description() -> String {
        String::from(
            "Lift a lesson when its strategy may be tried again (e.g. the code it was about \
             changed), or restore it. Recorded in the directive history as an OVERRIDE.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = SetActiveInput;
    type Output = SetActiveAnswer;

    fn example() -> Value {
        json!({
            "task_id": "TASK-42",
            "strategy": "Mock the database layer in integration tests",
            "active": false,
            "rationale": "The database layer was rewritten; mocking it is fine now."
        })
    }
}

impl WriteTool for SetLessonActive {
    const FAMILIES: &'static [CachedFamily] = &[];

    fn run(
        ctx: &mut WriteCtx<'_>,
        input: SetActiveInput,
    ) -> Result<Answer<SetActiveAnswer>, ToolError> {
        let id = match input.lesson_ref()? {
            LessonRef::Id(id) => id,
            LessonRef::Strategy(task, strategy) => {
                let key = TaskKey::of(task);
                let normalised = normalise_strategy(strategy);
                match lesson_store::find_by_strategy(ctx.db, &key, &normalised)? {
                    Some(l) => l.id,
                    None => {
                        let e = LessonError::NoLessonFor {
                            task_id: task.to_owned(),
                            strategy: strategy.to_owned(),
                        };
                        return Ok(not_found(&e, None));
                    }
                }
            }
        };
        let recorded = crate::ops::lessons::set_active(
            ctx.db,
            id,
            input.active,
            input.rationale.as_str(),
            DEFAULT_ACTOR,
            ctx.now,
        )?;
        let Some(crate::ops::lessons::Recorded {
            before,
            change,
            directive: d,
        }) = recorded
        else {
            return Ok(not_found(&LessonError::NotFound(id), Some(id)));
        };
        Ok(Reply::done(Changed {
            success: Flag,
            lesson: (&change.after).into(),
            previous_is_active: before.is_active,
            changed: change.changed,
            directive_id: WireUuid(d.id),
        }))
    }
}

fn not_found(e: &LessonError, id: Option<Uuid>) -> Answer<SetActiveAnswer> {
    Reply::failed(Failure {
        success: Flag,
        error: SetActiveCode::NotFound,
        detail: e.to_string(),
        more: MissingLesson {
            lesson_id: id.map(WireUuid),
        },
    })
}

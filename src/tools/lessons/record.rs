//! `record_directive`: record a human intervention in the directive history.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ArgumentCode, DirectiveOut, Failure, Flag, Reply};
use crate::service::CachedFamily;
use crate::service::lessons::{DEFAULT_ACTOR, MAX_DESCRIPTION_CHARS, MAX_ID_CHARS};
use crate::store::directives::{self, Directive, InterventionType};
use crate::tools::wire::{NonBlank, OneOf, Validate, WireUuid};
use crate::tools::{
    Annotations, Answer, REQUEST_KEY_DESCRIPTION, RequestKey, ToolDef, ToolError, WriteCtx,
    WriteTool,
};

/// `record_directive`.
pub struct RecordDirective;

/// Arguments of `record_directive`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// The task it concerns, if one.
    pub task_id: Option<NonBlank<MAX_ID_CHARS>>,
    /// The kind of intervention.
    pub intervention_type: OneOf<InterventionType>,
    /// What happened, in plain words.
    pub description: NonBlank<MAX_DESCRIPTION_CHARS>,
    /// Who intervened (default: the person you work with).
    #[schemars(extend("default" = DEFAULT_ACTOR))]
    pub actor: Option<NonBlank<MAX_ID_CHARS>>,
    /// See [`REQUEST_KEY_DESCRIPTION`].
    #[schemars(description = REQUEST_KEY_DESCRIPTION)]
    pub request_key: Option<RequestKey>,
}

impl Validate for RecordInput {}

/// The entry recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Recorded {
    /// Always true.
    pub success: Flag<true>,
    /// The new entry's id.
    pub directive_id: WireUuid,
    /// The entry as stored.
    pub entry: DirectiveOut,
}

/// The answer of `record_directive`.
pub type RecordAnswer = Reply<Recorded, Failure<ArgumentCode>>;

impl ToolDef for RecordDirective {
    const NAME: &'static str = "record_directive";
    const TITLE: &'static str = "Record a human intervention";
    fn description() -> String {
        String::from(
            "Record a human intervention so later sessions know what a person decided (a manual \
             fix, feedback, an override, an escalation).",
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
        json!({
            "task_id": "TASK-42",
            "intervention_type": "FEEDBACK",
            "description": "Use the real SQLite schema in integration tests."
        })
    }
}

impl WriteTool for RecordDirective {
    const FAMILIES: &'static [CachedFamily] = &[];

    fn request_key(input: &RecordInput) -> Option<&str> {
        input.request_key.as_ref().map(|k| k.0.as_str())
    }

    fn run(ctx: &mut WriteCtx<'_>, input: RecordInput) -> Result<Answer<RecordAnswer>, ToolError> {
        let d = Directive::new(
            input.task_id.map(|t| t.0),
            input.intervention_type.get(),
            input.description.0,
            input
                .actor
                .map_or_else(|| DEFAULT_ACTOR.to_owned(), |a| a.0),
            ctx.now,
        );
        directives::insert(ctx.db, &d)?;
        Ok(Reply::done(Recorded {
            success: Flag,
            directive_id: WireUuid(d.id),
            entry: (&d).into(),
        }))
    }
}

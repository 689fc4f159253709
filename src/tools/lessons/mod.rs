//! The lessons tools: `log_lesson_learned`, `check_strategy_blacklist`, `list_directive_history`,
//! `record_directive` and `set_lesson_active`, one file each, with what they share here.
//!
//! Unlike the other families, the failures of these tools are structured results
//! `{success: false, error: CODE, detail}` with `isError: true` (their contract requires it): a
//! failure of the store is `INTERNAL_ERROR`, and refusals that depend on the stored lessons have
//! their own codes (`LESSON_ALREADY_EXISTS`, `LESSON_NOT_FOUND`). So each tool's output is a
//! [`Reply`]: what it did, or a [`Failure`]; and the tools are registered by [`read()`] /
//! [`write()`] here. Invalid arguments take the path of every family (the server answers them by
//! the session's protocol revision, SEP-1303), with this family's `VALIDATION_ERROR` object as
//! `structuredContent` where the revision has one (`ToolFamily::argument_error`). A write tool
//! runs inside a savepoint, so an internal failure undoes its own writes before it is answered
//! (and the surrounding transaction commits).

pub mod check;
pub mod history;
pub mod log;
pub mod record;
pub mod set_active;
pub mod shapes;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::wire;
use super::{Answer, Handler, ReadCtx, ReadTool, Tool, ToolError, ToolResult};
use super::{WriteCtx, WriteTool};
use crate::store::lessons as lesson_store;
pub use shapes::{DirectiveOut, Flag, LessonOut};

/// The tools of this family, in `tools/list` order. `set_lesson_active`'s example names the
/// lesson that `log_lesson_learned`'s example creates, so it comes after it.
pub const TOOLS: &[Tool] = &[
    write::<log::LogLessonLearned>(),
    Tool::write_or_read::<check::CheckStrategyBlacklist>(),
    read::<history::ListDirectiveHistory>(),
    write::<record::RecordDirective>(),
    write::<set_active::SetLessonActive>(),
];

/// A lesson tool's answer: what it did, or a structured failure (`isError: true`). On the wire
/// the two shapes are told apart by their fields (`success: false` and `error` on a failure).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Reply<T, F> {
    /// What the tool did.
    Done(T),
    /// Why it did not.
    Failed(F),
}

/// A structured failure: `{success: false, error: CODE, detail}`, plus the fields of `X` for
/// codes that name a lesson.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Failure<C, X = NoMore> {
    /// Always false.
    pub success: Flag<false>,
    /// What failed.
    pub error: C,
    /// What went wrong, in words: which field and what is allowed, or which lesson.
    pub detail: String,
    /// Fields some codes add.
    #[serde(flatten)]
    pub more: X,
}

/// No further fields.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct NoMore {}

/// The failure codes every lesson tool can answer.
pub trait Code: Serialize + JsonSchema {
    /// `VALIDATION_ERROR`: the arguments are invalid (the detail names the field).
    const VALIDATION: Self;
    /// `INTERNAL_ERROR`: the store failed; nothing was changed.
    const INTERNAL: Self;
}

/// The codes of the tools that refuse nothing but invalid arguments.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub enum ArgumentCode {
    /// The arguments are invalid; the detail names the field and what is allowed.
    #[serde(rename = "VALIDATION_ERROR")]
    Validation,
    /// The store failed; nothing was changed.
    #[serde(rename = "INTERNAL_ERROR")]
    Internal,
}

impl Code for ArgumentCode {
    const VALIDATION: Self = ArgumentCode::Validation;
    const INTERNAL: Self = ArgumentCode::Internal;
}

/// An output whose failures [`read()`] / [`write()`] can build.
pub trait Structured {
    /// The structured failure for an argument error or an internal failure.
    fn failure(e: &ToolError) -> Self;
}

impl<T, C: Code, X: Default> Structured for Reply<T, Failure<C, X>> {
    fn failure(e: &ToolError) -> Self {
        let (error, detail) = match e {
            ToolError::InvalidParams(m) => (C::VALIDATION, m.clone()),
            ToolError::Internal(m) => (C::INTERNAL, m.clone()),
        };
        Reply::Failed(Failure {
            success: Flag,
            error,
            detail,
            more: X::default(),
        })
    }
}

impl<T, F> Reply<T, F> {
    /// A successful answer.
    pub fn done(out: T) -> Answer<Self> {
        Answer::ok(Reply::Done(out))
    }

    /// A structured failure (`isError: true`).
    pub fn failed(failure: F) -> Answer<Self> {
        Answer::failed(Reply::Failed(failure))
    }
}

/// The registry entry of a lesson read tool: as [`Tool::read`], with failures answered as
/// structured results.
pub const fn read<T: ReadTool>() -> Tool
where
    T::Output: Structured,
{
    Tool {
        handler: Handler::Read(read_handler::<T>),
        ..Tool::read::<T>()
    }
}

/// The registry entry of a lesson write tool: as [`Tool::write`], with failures answered as
/// structured results and the tool's writes inside a savepoint.
pub const fn write<T: WriteTool>() -> Tool
where
    T::Output: Structured,
{
    Tool {
        handler: Handler::Write(write_handler::<T>, T::FAMILIES),
        ..Tool::write::<T>()
    }
}

fn read_handler<T: ReadTool>(ctx: &ReadCtx<'_>, args: &Value) -> ToolResult
where
    T::Output: Structured,
{
    let answer = wire::parse::<T::Input>(args).and_then(|input| T::run(ctx, input));
    encode(T::NAME, answer)
}

fn write_handler<T: WriteTool>(ctx: &mut WriteCtx<'_>, args: &Value) -> ToolResult
where
    T::Output: Structured,
{
    let db = ctx.db;
    let input = match wire::parse::<T::Input>(args) {
        Ok(input) => input,
        Err(e) => return encode::<T::Output>(T::NAME, Err(e)),
    };
    crate::tools::keyed::<T>(ctx, args, input, |ctx, input| {
        encode(T::NAME, lesson_store::atomically(db, || T::run(ctx, input)))
    })
}

/// The family's one mapping from errors to structured failures, then to the handler's result.
fn encode<O: Serialize + Structured>(
    tool: &str,
    answer: Result<Answer<O>, ToolError>,
) -> ToolResult {
    let answer = match answer {
        Ok(a) => a,
        Err(e @ ToolError::InvalidParams(_)) => return Err(e),
        Err(e @ ToolError::Internal(_)) => {
            if let ToolError::Internal(m) = &e {
                tracing::error!(tool, error = %m, "lesson tool failed");
            }
            Answer::failed(O::failure(&e))
        }
    };
    crate::tools::encode(answer)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::ToolDef;

    /// Whether the published input schema of `T` and the server's parser agree on `args`
    /// (`wire::tests::assert_agree`).
    fn agree<T: ToolDef>(validator: &jsonschema::Validator, args: &Value) {
        let schema = wire::input_schema::<T::Input>();
        wire::tests::assert_agree::<T::Input>(&schema, validator, args);
    }

    /// Every property of `base` replaced by each edge value, each property left out, and an
    /// unknown property added: the schema and the parser give the same verdict.
    fn edges<T: ToolDef>(base: Value) {
        let validator = jsonschema::validator_for(&wire::input_schema::<T::Input>()).unwrap();
        let values = [
            json!(null),
            json!(""),
            json!("   "),
            json!("\u{3000}"),
            json!("\u{feff}"),
            json!("?!…"),
            json!("「」"),
            json!("‗"),
            json!("x"),
            json!("TASK-42"),
            json!("LOGIC_ERROR"),
            json!("logic_error"),
            json!("FEEDBACK"),
            json!("550e8400-e29b-41d4-a716-446655440000"),
            json!("策".repeat(4096)),
            json!("策".repeat(4097)),
            json!("t".repeat(256)),
            json!("t".repeat(257)),
            json!(0),
            json!(1),
            json!(-1),
            json!(1.5),
            json!(10.0),
            json!(1000),
            json!(1001),
            json!(1e16),
            json!(9_223_372_036_854_775_807_i64),
            json!(true),
            json!(false),
            json!([]),
            json!({}),
        ];
        agree::<T>(&validator, &base);
        let fields: Vec<String> = base.as_object().unwrap().keys().cloned().collect();
        let props = wire::input_schema::<T::Input>()["properties"].clone();
        for field in props.as_object().unwrap().keys() {
            for v in &values {
                let mut args = base.clone();
                args[field] = v.clone();
                agree::<T>(&validator, &args);
            }
        }
        for field in &fields {
            let mut args = base.clone();
            args.as_object_mut().unwrap().remove(field);
            agree::<T>(&validator, &args);
        }
        let mut args = base.clone();
        args["extra"] = json!(1);
        agree::<T>(&validator, &args);
    }

    #[test]
    fn the_input_schemas_and_the_parsers_agree_on_edge_values() {
        edges::<log::LogLessonLearned>(log::LogLessonLearned::example());
        edges::<check::CheckStrategyBlacklist>(check::CheckStrategyBlacklist::example());
        edges::<history::ListDirectiveHistory>(json!({"task_id": "T", "limit": 5, "offset": 2}));
        edges::<record::RecordDirective>(json!({
            "task_id": "T", "intervention_type": "FEEDBACK", "description": "d", "actor": "ops"
        }));
        edges::<set_active::SetLessonActive>(set_active::SetLessonActive::example());
        edges::<set_active::SetLessonActive>(json!({
            "lesson_id": "550e8400-e29b-41d4-a716-446655440000", "active": true, "rationale": "r"
        }));
    }

    /// The rule is the parser's; the schema states it in the fields' descriptions (a
    /// top-level `oneOf` is refused by clients).
    #[test]
    fn set_lesson_active_names_its_lesson_one_way_in_the_schema_and_the_parser() {
        type T = set_active::SetLessonActive;
        let validator =
            jsonschema::validator_for(&wire::input_schema::<<T as ToolDef>::Input>()).unwrap();
        let naming = [
            ("lesson_id", json!("550e8400-e29b-41d4-a716-446655440000")),
            ("task_id", json!("T")),
            ("strategy", json!("s")),
        ];
        // Every subset of the three naming fields; only {lesson_id} and {task_id, strategy}
        // name a lesson.
        for mask in 0..8 {
            let mut args = json!({"active": false, "rationale": "r"});
            for (bit, (k, v)) in naming.iter().enumerate() {
                if mask & (1 << bit) != 0 {
                    args[*k] = v.clone();
                }
            }
            agree::<T>(&validator, &args);
            let parsed = wire::parse::<<T as ToolDef>::Input>(&args);
            assert_eq!(parsed.is_ok(), mask == 1 || mask == 6, "{args}");
        }
        let props = &wire::input_schema::<<T as ToolDef>::Input>()["properties"];
        for (field, words) in [
            ("lesson_id", "or task_id and strategy"),
            ("task_id", "Instead of lesson_id, with strategy"),
            ("strategy", "Instead of lesson_id, with task_id"),
        ] {
            let d = props[field]["description"].as_str().unwrap();
            assert!(d.contains(words), "{field}: {d}");
        }
    }
}

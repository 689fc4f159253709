//! The lessons tools: `log_lesson_learned`, `check_strategy_blacklist`,
//! `list_directive_history`, `record_directive` and `set_lesson_active`.
//!
//! Contract: SPEC §4 lessons, seeds/lessons-blacklist.md and issue 7. Unlike the other families,
//! every failure here is a structured result `{success: false, error: CODE, detail}` with
//! `isError: true`, never a JSON-RPC error (the seed requires it): invalid arguments become
//! `VALIDATION_ERROR` (unknown fields included), store failures `INTERNAL_ERROR` (the tool's own
//! writes are undone by a savepoint). Only an unknown tool name, or a store that cannot even
//! begin a transaction, reaches the wire as a JSON-RPC error.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Annotations, Args, Handler, Outcome, ReadCtx, Tool, ToolError, ToolResult, WriteCtx};
use crate::service::lessons::{
    DEFAULT_ACTOR, DEFAULT_HISTORY_LIMIT, FailureType, FieldError, Lesson, LessonError,
    MAX_DESCRIPTION_CHARS, MAX_HISTORY_LIMIT, MAX_ID_CHARS, MAX_RATIONALE_CHARS, MAX_RCA_CHARS,
    MAX_STRATEGY_CHARS, NewLesson, RELATED_LESSONS, best_match_tokens, check_text,
    normalise_strategy, query_terms, search_terms,
};
use crate::store::Db;
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::lessons::{self as lesson_store, Inserted};

/// At most this many distinct terms of a proposal go into the related-lessons query.
const MAX_QUERY_TERMS: usize = 64;

const INTERVENTION_TYPES: [&str; 4] = ["MANUAL_FIX", "FEEDBACK", "OVERRIDE", "ESCALATION"];

const WRITE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
};
const READ: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
};

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "log_lesson_learned",
        aliases: &[],
        title: "Log a lesson learned",
        description: || {
            String::from(
                "Log a strategy failure as a Lesson Learned to prevent future agents from repeating the same mistake. Call it after a root-cause analysis. One lesson per task and strategy (compared after Unicode case folding, whitespace collapsing and stripping surrounding punctuation): a duplicate answers LESSON_ALREADY_EXISTS with the existing lesson_id. Failures are structured results {success: false, error, detail}.",
            )
        },
        input_schema: log_input_schema,
        output_schema: log_output_schema,
        annotations: WRITE,
        handler: Handler::Write(log_lesson_learned, &[]),
        example: || {
            json!({
                "task_id": "TASK-42",
                "strategy_description": "Mock the database layer in integration tests",
                "rca_summary": "Mocks hid a migration bug that only the real SQLite schema exposed.",
                "failure_type": "ARCHITECTURAL_MISUNDERSTANDING",
                "source_agent": "claude-code"
            })
        },
    },
    Tool {
        name: "check_strategy_blacklist",
        aliases: &[],
        title: "Check the strategy blacklist",
        description: || {
            String::from(
                "Check whether a proposed strategy is blacklisted for a given task before attempting it. Matches the task's active lessons by normalised equality (exact), whole-word containment either way (contains: the proposal contains a failed strategy; contained_in: a failed strategy contains the proposal), or word-multiset Sørensen–Dice similarity ≥ 0.8 (similar), and reports match_type and score. An empty strategy is never blacklisted. include_related adds up to 5 advisory lessons from other tasks ranked by full-text relevance (bm25).",
            )
        },
        input_schema: check_input_schema,
        output_schema: check_output_schema,
        annotations: READ,
        handler: Handler::Read(check_strategy_blacklist),
        example: || json!({"task_id": "TASK-42", "strategy": "Mock the database layer", "include_related": true}),
    },
    Tool {
        name: "list_directive_history",
        aliases: &[],
        title: "List the directive history",
        description: || {
            String::from(
                "Retrieve the log of all human interventions (MANUAL_FIX, FEEDBACK, OVERRIDE, ESCALATION), optionally filtered by task, newest first, with limit (1-1000, default 50) and offset (default 0) pagination, total_count and has_more.",
            )
        },
        input_schema: history_input_schema,
        output_schema: history_output_schema,
        annotations: READ,
        handler: Handler::Read(list_directive_history),
        example: || json!({"limit": 10, "offset": 0}),
    },
    Tool {
        name: "record_directive",
        aliases: &[],
        title: "Record a human intervention",
        description: || {
            String::from(
                "Record a human intervention in the directive history: a manual fix, feedback, an override or an escalation, optionally for one task. actor defaults to USER.",
            )
        },
        input_schema: record_input_schema,
        output_schema: record_output_schema,
        annotations: WRITE,
        handler: Handler::Write(record_directive, &[]),
        example: || {
            json!({
                "task_id": "TASK-42",
                "intervention_type": "FEEDBACK",
                "description": "Use the real SQLite schema in integration tests."
            })
        },
    },
    Tool {
        name: "set_lesson_active",
        aliases: &[],
        title: "Activate or deactivate a lesson",
        description: || {
            String::from(
                "Deactivate a lesson (its strategy is no longer blacklisted) or re-activate it, with a rationale. Name the lesson by lesson_id, or by task_id and strategy. Records an OVERRIDE entry in the directive history.",
            )
        },
        input_schema: set_active_input_schema,
        output_schema: set_active_output_schema,
        annotations: WRITE,
        handler: Handler::Write(set_lesson_active, &[]),
        // Names the lesson that log_lesson_learned's example creates (listed before this tool).
        example: || {
            json!({
                "task_id": "TASK-42",
                "strategy": "Mock the database layer in integration tests",
                "active": false,
                "rationale": "The database layer was rewritten; mocking it is fine now."
            })
        },
    },
];

// ---------------------------------------------------------------------------------------------
// Structured results

fn failure(code: &str, detail: impl Into<String>) -> Value {
    json!({"success": false, "error": code, "detail": detail.into()})
}

/// The family's one mapping from errors to structured failures.
fn structured(tool: &str, result: ToolResult) -> ToolResult {
    match result {
        Ok(o) => Ok(o),
        Err(ToolError::InvalidParams(m)) => Ok(Outcome::Failed(failure("VALIDATION_ERROR", m))),
        Err(ToolError::Internal(m)) => {
            tracing::error!(tool, error = %m, "lesson tool failed");
            Ok(Outcome::Failed(failure("INTERNAL_ERROR", m)))
        }
    }
}

fn field_error(e: FieldError) -> ToolError {
    ToolError::invalid(e.to_string())
}

fn required_str<'a>(args: &Args<'a>, name: &str) -> Result<&'a str, ToolError> {
    args.require(name)?;
    Ok(args.str(name)?.expect("required field is present"))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn lesson_json(l: &Lesson) -> Value {
    json!({
        "id": l.id.to_string(),
        "task_id": l.task_id,
        "strategy_description": l.strategy_description,
        "rca_summary": l.rca_summary,
        "failure_type": l.failure_type.as_str(),
        "source_agent": l.source_agent,
        "is_active": l.is_active,
        "created_at": rfc3339(l.created_at),
    })
}

fn lesson_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "task_id": {"type": "string"},
            "strategy_description": {"type": "string"},
            "rca_summary": {"type": "string"},
            "failure_type": {"type": "string", "enum": FailureType::NAMES},
            "source_agent": {"type": "string"},
            "is_active": {"type": "boolean"},
            "created_at": {"type": "string", "format": "date-time"}
        },
        "required": ["id", "task_id", "strategy_description", "rca_summary", "failure_type", "source_agent", "is_active", "created_at"]
    })
}

fn directive_json(d: &Directive) -> Value {
    json!({
        "id": d.id.to_string(),
        "task_id": d.task_id,
        "intervention_type": d.intervention_type.as_str(),
        "description": d.description,
        "actor": d.actor,
        "created_at": rfc3339(d.created_at),
    })
}

fn directive_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "task_id": {"type": ["string", "null"]},
            "intervention_type": {"type": "string", "enum": INTERVENTION_TYPES},
            "description": {"type": "string"},
            "actor": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"}
        },
        "required": ["id", "task_id", "intervention_type", "description", "actor", "created_at"]
    })
}

/// Properties shared by every output schema: the structured failure.
fn with_failure(mut properties: Value, codes: &[&str]) -> Value {
    let map = properties.as_object_mut().expect("properties object");
    map.insert("success".into(), json!({"type": "boolean"}));
    map.insert(
        "error".into(),
        json!({"type": "string", "enum": codes, "description": "Present when success is false."}),
    );
    map.insert(
        "detail".into(),
        json!({"type": "string", "description": "What went wrong (which field, which limit)."}),
    );
    json!({"type": "object", "properties": properties})
}

/// Micro-second resolution, as stored: the answer shows what a later read returns.
fn stored_now(now: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

// ---------------------------------------------------------------------------------------------
// log_lesson_learned

fn log_input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["task_id", "strategy_description", "rca_summary", "failure_type", "source_agent"],
        "properties": {
            "task_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS, "description": "Task the lesson belongs to."},
            "strategy_description": {"type": "string", "minLength": 1, "maxLength": MAX_STRATEGY_CHARS, "description": "The strategy that failed (1-4096 characters)."},
            "rca_summary": {"type": "string", "minLength": 1, "maxLength": MAX_RCA_CHARS, "description": "Root-cause analysis summary (1-16384 characters)."},
            "failure_type": {"type": "string", "enum": FailureType::NAMES},
            "source_agent": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS, "description": "Agent that logs the lesson."}
        },
        "additionalProperties": false
    })
}

fn log_output_schema() -> Value {
    with_failure(
        json!({
            "lesson_id": {"type": "string", "format": "uuid", "description": "The new lesson, or the existing one on LESSON_ALREADY_EXISTS."},
            "is_active": {"type": "boolean", "description": "On LESSON_ALREADY_EXISTS: whether the existing lesson is active."}
        }),
        &[
            "VALIDATION_ERROR",
            "LESSON_ALREADY_EXISTS",
            "INTERNAL_ERROR",
        ],
    )
}

fn log_lesson_learned(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    let (db, now) = (ctx.db, stored_now(ctx.now));
    structured(
        "log_lesson_learned",
        lesson_store::atomically(db, || log_inner(db, now, args)),
    )
}

fn log_inner(db: &Db<'_>, now: DateTime<Utc>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&[
        "task_id",
        "strategy_description",
        "rca_summary",
        "failure_type",
        "source_agent",
    ])?;
    let lesson = NewLesson::validate(
        required_str(args, "task_id")?,
        required_str(args, "strategy_description")?,
        required_str(args, "rca_summary")?,
        required_str(args, "failure_type")?,
        required_str(args, "source_agent")?,
    )
    .map_err(field_error)?;
    let terms = search_terms(&lesson.strategy_description, &lesson.rca_summary);
    match lesson_store::insert(db, &lesson, Uuid::new_v4(), &terms, now)? {
        Inserted::New(l) => Ok(Outcome::Ok(json!({
            "success": true,
            "lesson_id": l.id.to_string(),
        }))),
        Inserted::Exists(existing) => {
            let e = LessonError::AlreadyExists {
                existing: existing.id,
            };
            let hint = if existing.is_active {
                ""
            } else {
                " (inactive; re-activate it with set_lesson_active)"
            };
            Ok(Outcome::Failed(json!({
                "success": false,
                "error": e.code(),
                "detail": format!("{e}{hint}"),
                "lesson_id": existing.id.to_string(),
                "is_active": existing.is_active,
            })))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// check_strategy_blacklist

fn check_input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["task_id", "strategy"],
        "properties": {
            "task_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS},
            "strategy": {"type": "string", "maxLength": MAX_STRATEGY_CHARS, "description": "The proposed strategy. Empty or whitespace-only is never blacklisted."},
            "include_related": {"type": "boolean", "default": false, "description": "Also return up to 5 active lessons from other tasks that share words with the strategy (advisory, ranked by bm25)."}
        },
        "additionalProperties": false
    })
}

fn check_output_schema() -> Value {
    with_failure(
        json!({
            "blacklisted": {"type": "boolean"},
            "lesson": lesson_schema(),
            "match_type": {"type": "string", "enum": ["exact", "contains", "contained_in", "similar"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1, "description": "exact: 1; contains / contained_in: words of the shorter text / words of the longer; similar: Sørensen–Dice coefficient of the word multisets."},
            "related_lessons": {
                "type": "array",
                "description": "Advisory only: lessons of other tasks, most relevant first. They do not blacklist.",
                "items": {
                    "type": "object",
                    "properties": {
                        "lesson": lesson_schema(),
                        "bm25": {"type": "number", "description": "SQLite FTS5 bm25 (lower = more relevant)."},
                        "advisory": {"type": "boolean", "const": true}
                    },
                    "required": ["lesson", "bm25", "advisory"]
                }
            }
        }),
        &["VALIDATION_ERROR", "INTERNAL_ERROR"],
    )
}

fn check_strategy_blacklist(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    structured("check_strategy_blacklist", check_inner(ctx.db, args))
}

fn check_inner(db: &Db<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["task_id", "strategy", "include_related"])?;
    let task_id = required_str(args, "task_id")?;
    check_text("task_id", task_id, MAX_ID_CHARS).map_err(field_error)?;
    let strategy = required_str(args, "strategy")?;
    let include_related = args.bool_or("include_related", false)?;
    if strategy.trim().is_empty() {
        // The contract: no check performed, the store is not read.
        return Ok(Outcome::Ok(json!({"blacklisted": false})));
    }
    check_text("strategy", strategy, MAX_STRATEGY_CHARS).map_err(field_error)?;
    let proposal = normalise_strategy(strategy);
    if proposal.is_empty() {
        // Punctuation only: nothing to match, so no lesson can blacklist it.
        return Ok(Outcome::Ok(json!({"blacklisted": false})));
    }
    // Only the task's active strategies are read; the full lesson only for the match.
    let candidates = lesson_store::active_strategies(db, task_id)?;
    let tokenised = candidates
        .iter()
        .map(|c| Ok((c.normalised.as_str(), c.tokens()?)))
        .collect::<Result<Vec<_>, crate::store::StoreError>>()?;
    let hit = best_match_tokens(&proposal, tokenised);
    let mut out = match hit {
        None => json!({"blacklisted": false}),
        Some((i, matched)) => {
            let lesson = lesson_store::get_by_seq(db, candidates[i].seq)?.ok_or_else(|| {
                ToolError::Internal("a matched lesson vanished inside its transaction".into())
            })?;
            json!({
                "blacklisted": true,
                "lesson": lesson_json(&lesson),
                "match_type": matched.match_type.as_str(),
                "score": matched.score,
            })
        }
    };
    if include_related {
        let terms = query_terms(strategy, MAX_QUERY_TERMS);
        let related: Vec<Value> = lesson_store::related(db, task_id, &terms, RELATED_LESSONS)?
            .iter()
            .map(|(l, bm25)| json!({"lesson": lesson_json(l), "bm25": bm25, "advisory": true}))
            .collect();
        out["related_lessons"] = Value::Array(related);
    }
    Ok(Outcome::Ok(out))
}

// ---------------------------------------------------------------------------------------------
// list_directive_history

fn history_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS, "description": "Only entries of this task."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HISTORY_LIMIT, "default": DEFAULT_HISTORY_LIMIT},
            "offset": {"type": "integer", "minimum": 0, "default": 0}
        },
        "additionalProperties": false
    })
}

fn history_output_schema() -> Value {
    with_failure(
        json!({
            "entries": {"type": "array", "items": directive_schema(), "description": "Newest first (ties: latest recorded first)."},
            "total_count": {"type": "integer", "minimum": 0},
            "has_more": {"type": "boolean"},
            "limit": {"type": "integer"},
            "offset": {"type": "integer"}
        }),
        &["VALIDATION_ERROR", "INTERNAL_ERROR"],
    )
}

fn list_directive_history(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    structured("list_directive_history", history_inner(ctx.db, args))
}

fn history_inner(db: &Db<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["task_id", "limit", "offset"])?;
    let task_id = args.str("task_id")?;
    if let Some(t) = task_id {
        check_text("task_id", t, MAX_ID_CHARS).map_err(field_error)?;
    }
    let limit = args
        .int_in("limit", 1, i64::from(MAX_HISTORY_LIMIT))?
        .unwrap_or(i64::from(DEFAULT_HISTORY_LIMIT)) as usize;
    let offset = args.int_in("offset", 0, i64::MAX)?.unwrap_or(0) as usize;
    let (entries, total) = directives::list(db, task_id, limit, offset)?;
    let has_more = offset.saturating_add(entries.len()) < total;
    Ok(Outcome::Ok(json!({
        "entries": entries.iter().map(directive_json).collect::<Vec<_>>(),
        "total_count": total,
        "has_more": has_more,
        "limit": limit,
        "offset": offset,
    })))
}

// ---------------------------------------------------------------------------------------------
// record_directive

fn record_input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["intervention_type", "description"],
        "properties": {
            "task_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS},
            "intervention_type": {"type": "string", "enum": INTERVENTION_TYPES},
            "description": {"type": "string", "minLength": 1, "maxLength": MAX_DESCRIPTION_CHARS},
            "actor": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS, "default": DEFAULT_ACTOR}
        },
        "additionalProperties": false
    })
}

fn record_output_schema() -> Value {
    with_failure(
        json!({
            "directive_id": {"type": "string", "format": "uuid"},
            "entry": directive_schema()
        }),
        &["VALIDATION_ERROR", "INTERNAL_ERROR"],
    )
}

fn record_directive(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    let (db, now) = (ctx.db, stored_now(ctx.now));
    structured(
        "record_directive",
        lesson_store::atomically(db, || record_inner(db, now, args)),
    )
}

fn record_inner(db: &Db<'_>, now: DateTime<Utc>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["task_id", "intervention_type", "description", "actor"])?;
    let task_id = args.str("task_id")?;
    if let Some(t) = task_id {
        check_text("task_id", t, MAX_ID_CHARS).map_err(field_error)?;
    }
    args.require("intervention_type")?;
    let kind = args
        .enumeration(
            "intervention_type",
            &INTERVENTION_TYPES,
            InterventionType::parse,
        )?
        .expect("required field is present");
    let description = required_str(args, "description")?;
    check_text("description", description, MAX_DESCRIPTION_CHARS).map_err(field_error)?;
    let actor = args.str("actor")?.unwrap_or(DEFAULT_ACTOR);
    check_text("actor", actor, MAX_ID_CHARS).map_err(field_error)?;
    let d = Directive::new(task_id.map(str::to_owned), kind, description, actor, now);
    directives::insert(db, &d)?;
    Ok(Outcome::Ok(json!({
        "success": true,
        "directive_id": d.id.to_string(),
        "entry": directive_json(&d),
    })))
}

// ---------------------------------------------------------------------------------------------
// set_lesson_active

fn set_active_input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["active", "rationale"],
        "properties": {
            "lesson_id": {"type": "string", "format": "uuid", "description": "The lesson (as returned by log_lesson_learned). Give either lesson_id, or task_id and strategy."},
            "task_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS, "description": "With strategy: the task of the lesson."},
            "strategy": {"type": "string", "minLength": 1, "maxLength": MAX_STRATEGY_CHARS, "description": "With task_id: the lesson's strategy (matched after normalisation, like a duplicate)."},
            "active": {"type": "boolean", "description": "false: the lesson no longer blacklists its strategy; true: it does again."},
            "rationale": {"type": "string", "minLength": 1, "maxLength": MAX_RATIONALE_CHARS, "description": "Why (recorded in the directive history as an OVERRIDE)."}
        },
        "additionalProperties": false
    })
}

fn set_active_output_schema() -> Value {
    with_failure(
        json!({
            "lesson": lesson_schema(),
            "previous_is_active": {"type": "boolean"},
            "changed": {"type": "boolean"},
            "directive_id": {"type": "string", "format": "uuid"},
            "lesson_id": {"type": "string"}
        }),
        &["VALIDATION_ERROR", "LESSON_NOT_FOUND", "INTERNAL_ERROR"],
    )
}

fn set_lesson_active(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    let (db, now) = (ctx.db, stored_now(ctx.now));
    structured(
        "set_lesson_active",
        lesson_store::atomically(db, || set_active_inner(db, now, args)),
    )
}

fn set_active_inner(db: &Db<'_>, now: DateTime<Utc>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["lesson_id", "task_id", "strategy", "active", "rationale"])?;
    let by_id = args.uuid("lesson_id")?;
    let task_id = args.str("task_id")?;
    let strategy = args.str("strategy")?;
    args.require("active")?;
    let active = args.bool_or("active", true)?;
    let rationale = required_str(args, "rationale")?;
    check_text("rationale", rationale, MAX_RATIONALE_CHARS).map_err(field_error)?;
    let not_found = |detail: String, id: Option<Uuid>| {
        let mut v = failure(LessonError::NotFound(Uuid::nil()).code(), detail);
        if let Some(id) = id {
            v["lesson_id"] = json!(id.to_string());
        }
        Ok(Outcome::Failed(v))
    };
    let id = match (by_id, task_id, strategy) {
        (Some(id), None, None) => id,
        (None, Some(task), Some(strategy)) => {
            check_text("task_id", task, MAX_ID_CHARS).map_err(field_error)?;
            check_text("strategy", strategy, MAX_STRATEGY_CHARS).map_err(field_error)?;
            match lesson_store::find_by_strategy(db, task, &normalise_strategy(strategy))? {
                Some(l) => l.id,
                None => {
                    return not_found(
                        format!("task {task:?} has no lesson for strategy {strategy:?}"),
                        None,
                    );
                }
            }
        }
        _ => {
            return Err(ToolError::invalid(
                "give either 'lesson_id', or both 'task_id' and 'strategy', to name the lesson",
            ));
        }
    };
    let Some(before) = lesson_store::set_active(db, id, active)? else {
        return not_found(LessonError::NotFound(id).to_string(), Some(id));
    };
    let verb = if active {
        "re-activated"
    } else {
        "deactivated"
    };
    let d = Directive::new(
        Some(before.task_id.clone()),
        InterventionType::Override,
        format!(
            "lesson {id} {verb} (strategy: {:?}): {rationale}",
            before.strategy_description
        ),
        DEFAULT_ACTOR,
        now,
    );
    directives::insert(db, &d)?;
    let after = Lesson {
        is_active: active,
        ..before.clone()
    };
    Ok(Outcome::Ok(json!({
        "success": true,
        "lesson": lesson_json(&after),
        "previous_is_active": before.is_active,
        "changed": before.is_active != active,
        "directive_id": d.id.to_string(),
    })))
}

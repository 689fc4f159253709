//! The meta-learning tools: `record_prediction` (the data path in), `get_meta_learning_status`,
//! `trigger_lambda_recalibration`, `get_meta_learning_log` and `reset_meta_learning`.
//!
//! Contract: SPEC §4 meta_learning and seeds/meta-learning-tools.md.

use std::time::Instant;

use chrono::Duration;
use serde_json::{Value, json};

use super::{Annotations, Args, Handler, Outcome, ReadCtx, Tool, ToolError, ToolResult, WriteCtx};
use crate::service::Family;
use crate::service::meta::{Event, EventType, Method, Prediction, RecalibrationPlan, ResetScope};
use crate::service::vocab::{Domain, Lambdas, NUM_EMBEDDERS};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::meta::{self as meta_store, CloseError, EventQuery, Windows};

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "record_prediction",
        aliases: &[],
        title: "Record a prediction outcome",
        description: || {
            String::from(
                "Record what a learning signal predicted and what actually happened. Either {prediction_id, actual} to close a prediction returned by gwt_compute_delta_sc, or {embedder_index, predicted, actual, delta_s?, delta_c?, domain?, ach_level?}. Updates the rolling accuracy, adjusts the λ weights when |predicted − actual| > 0.2, and escalates to Bayesian recalibration after 10 consecutive low-accuracy cycles.",
            )
        },
        input_schema: record_input_schema,
        output_schema: record_output_schema,
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        handler: Handler::Write(record_prediction, &[Family::Meta]),
        example: || json!({"embedder_index": 0, "predicted": 0.8, "actual": 0.5, "delta_s": 0.6, "delta_c": 0.4, "domain": "code"}),
    },
    Tool {
        name: "get_meta_learning_status",
        aliases: &[],
        title: "Meta-learning status",
        description: || {
            String::from(
                "Get the current Meta-UTL self-correction status: rolling accuracy, λ weights and their deviation from the lifecycle base, escalation state, lifecycle stage, and optionally the accuracy history and per-embedder (E1-E13) accuracy and weights.",
            )
        },
        input_schema: status_input_schema,
        output_schema: status_output_schema,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        handler: Handler::Read(get_status),
        example: || json!({"include_accuracy_history": true, "include_embedder_breakdown": true}),
    },
    Tool {
        name: "trigger_lambda_recalibration",
        aliases: &[],
        title: "Recalibrate the λ weights",
        description: || {
            String::from(
                "Recalibrate the λ weights from the replay window (the last 100 recorded predictions, of one domain if given): a gradient step, or Bayesian optimisation (Gaussian process + Expected Improvement over λ_s in [0.1, 0.9]) when forced or when an escalation is pending. dry_run computes without changing anything.",
            )
        },
        input_schema: recalibrate_input_schema,
        output_schema: recalibrate_output_schema,
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        handler: Handler::Write(trigger_recalibration, &[Family::Meta]),
        example: || json!({"force_bayesian": false, "dry_run": true}),
    },
    Tool {
        name: "get_meta_learning_log",
        aliases: &[],
        title: "Meta-learning event log",
        description: || {
            String::from(
                "Query the meta-learning event log (newest first) with optional time range (RFC 3339), event type and domain filters, and limit/offset pagination.",
            )
        },
        input_schema: log_input_schema,
        output_schema: log_output_schema,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        handler: Handler::Read(get_log),
        example: || json!({"limit": 10, "offset": 0}),
    },
    Tool {
        name: "reset_meta_learning",
        aliases: &[],
        title: "Reset meta-learning state",
        description: || {
            String::from(
                "Operator reset: 'lambdas' returns λ to the lifecycle base, 'escalation' clears the low-accuracy count, Bayesian failures and a human-review escalation, 'all' does both and empties the rolling accuracy windows. The event log is kept; a self_healing event and a directive-history entry record the reset.",
            )
        },
        input_schema: reset_input_schema,
        output_schema: reset_output_schema,
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
        handler: Handler::Write(reset, &[Family::Meta]),
        example: || json!({"scope": "escalation", "rationale": "reviewed the escalation"}),
    },
];

const DOMAINS: [&str; 6] = [
    "code", "medical", "legal", "creative", "research", "general",
];
const EVENT_TYPES: [&str; 7] = [
    "lambda_adjustment",
    "bayesian_escalation",
    "accuracy_alert",
    "accuracy_recovery",
    "weight_clamped",
    "self_healing",
    "human_escalation",
];
const SCOPES: [&str; 3] = ["lambdas", "escalation", "all"];

fn lambdas_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "lambda_s": {"type": "number", "minimum": 0, "maximum": 1},
            "lambda_c": {"type": "number", "minimum": 0, "maximum": 1}
        },
        "required": ["lambda_s", "lambda_c"]
    })
}

fn lambdas_json(l: Lambdas) -> Value {
    json!({"lambda_s": l.s(), "lambda_c": l.c()})
}

fn nullable_number() -> Value {
    json!({"type": ["number", "null"]})
}

fn adjustment_schema() -> Value {
    json!({
        "type": ["object", "null"],
        "properties": {
            "delta_s": {"type": "number"},
            "delta_c": {"type": "number"},
            "alpha": {"type": "number"},
            "trigger_error": {"type": "number"}
        },
        "required": ["delta_s", "delta_c", "alpha", "trigger_error"]
    })
}

fn domain_of(args: &Args<'_>) -> Result<Option<Domain>, ToolError> {
    args.enumeration("domain", &DOMAINS, Domain::parse)
}

// ---------------------------------------------------------------- record_prediction

fn record_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prediction_id": {"type": "string", "format": "uuid", "description": "A prediction_id returned by gwt_compute_delta_sc; closes that prediction (then only 'actual' is needed)."},
            "embedder_index": {"type": "integer", "minimum": 0, "maximum": 12, "description": "Embedder E1..E13 as index 0..12."},
            "predicted": {"type": "number", "minimum": 0, "maximum": 1, "description": "The predicted learning value."},
            "actual": {"type": "number", "minimum": 0, "maximum": 1, "description": "The observed outcome."},
            "delta_s": {"type": "number", "minimum": 0, "maximum": 1, "description": "Surprise ΔS behind the prediction; with delta_c enables the delta rule on L = λ_s·ΔS + λ_c·ΔC."},
            "delta_c": {"type": "number", "minimum": 0, "maximum": 1, "description": "Coherence ΔC behind the prediction."},
            "domain": {"type": "string", "enum": DOMAINS, "description": "Domain of the prediction (case-insensitive)."},
            "ach_level": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.001, "description": "Acetylcholine level; the learning rate α grows from 0.05 at 0.001 to 0.1 at 0.002."}
        },
        "required": ["actual"],
        "additionalProperties": false
    })
}

fn record_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "recorded": {"type": "boolean"},
            "prediction_id": {"type": ["string", "null"]},
            "embedder_index": {"type": ["integer", "null"]},
            "predicted": {"type": "number"},
            "actual": {"type": "number"},
            "prediction_error": {"type": "number"},
            "accuracy": {"type": "number"},
            "adjustment": adjustment_schema(),
            "current_lambdas": lambdas_schema(),
            "current_accuracy": nullable_number(),
            "consecutive_low_count": {"type": "integer"},
            "escalation_status": {"type": "string"},
            "lifecycle_stage": {"type": "string", "enum": ["infancy", "growth", "maturity"]},
            "interaction_count": {"type": "integer"},
            "events": {"type": "array", "items": {"type": "string", "enum": EVENT_TYPES}},
            "bayesian_recalibration": {"type": ["object", "null"]}
        },
        "required": ["recorded", "prediction_error", "accuracy", "adjustment", "current_lambdas",
                     "consecutive_low_count", "escalation_status", "interaction_count", "events"]
    })
}

fn record_prediction(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&[
        "prediction_id",
        "embedder_index",
        "predicted",
        "actual",
        "delta_s",
        "delta_c",
        "domain",
        "ach_level",
    ])?;
    let actual = args.req_f64_in("actual", 0.0, 1.0)?;
    let ach_level = args.f64_in("ach_level", 0.0, 1.0)?.unwrap_or(0.001);
    let prediction_id = args.uuid("prediction_id")?;
    let prediction = if let Some(id) = prediction_id {
        for field in [
            "embedder_index",
            "predicted",
            "delta_s",
            "delta_c",
            "domain",
        ] {
            if args.get(field).is_some() {
                return Err(ToolError::invalid(format!(
                    "field '{field}' cannot be combined with 'prediction_id': a prediction_id closes a prediction from gwt_compute_delta_sc, whose values are stored; send only prediction_id and actual"
                )));
            }
        }
        let open = match meta_store::close_prediction(ctx.db, id, ctx.now)? {
            Ok(open) => open,
            Err(why) => {
                let reason = match why {
                    CloseError::Unknown => "is unknown (no gwt_compute_delta_sc call returned it)",
                    CloseError::AlreadyClosed => {
                        "was already closed by an earlier record_prediction"
                    }
                    CloseError::Expired => "has expired (predictions must be closed within 7 days)",
                };
                return Err(ToolError::invalid(format!("prediction_id {id} {reason}")));
            }
        };
        Prediction {
            timestamp: ctx.now,
            embedder_index: None,
            predicted: open.learning_score.clamp(0.0, 1.0),
            actual,
            delta_s: Some(open.delta_s),
            delta_c: Some(open.delta_c),
            domain: open.domain,
            ach_level,
        }
    } else {
        let embedder_index = args
            .int_in("embedder_index", 0, (NUM_EMBEDDERS - 1) as i64)?
            .ok_or_else(|| {
                ToolError::invalid(
                    "missing required field 'embedder_index' (an integer in 0..=12); or send prediction_id and actual",
                )
            })? as u8;
        let predicted = args.req_f64_in("predicted", 0.0, 1.0)?;
        let delta_s = args.f64_in("delta_s", 0.0, 1.0)?;
        let delta_c = args.f64_in("delta_c", 0.0, 1.0)?;
        if delta_s.is_some() != delta_c.is_some() {
            return Err(ToolError::invalid(
                "fields 'delta_s' and 'delta_c' go together: send both or neither",
            ));
        }
        Prediction {
            timestamp: ctx.now,
            embedder_index: Some(embedder_index),
            predicted,
            actual,
            delta_s,
            delta_c,
            domain: domain_of(args)?,
            ach_level,
        }
    };

    let meta = &mut ctx.svc.meta;
    let mut outcome = meta.record_prediction(&prediction, ctx.now);
    meta_store::insert_prediction(ctx.db, &prediction, prediction_id)?;
    let mut events = std::mem::take(&mut outcome.events);
    let mut bayes = None;
    if outcome.escalate {
        let replay = meta_store::replay_window(ctx.db, None)?;
        let plan = ctx.svc.meta.plan_bayesian(&replay);
        events.extend(
            ctx.svc
                .meta
                .apply_plan(&plan, true, prediction.domain, ctx.now),
        );
        bayes = Some(plan_json(&plan, false));
    }
    // A Bayesian run re-weights λ but leaves the windows alone.
    persist(ctx, &events, Windows::Prediction(prediction.embedder_index))?;
    let meta = &ctx.svc.meta;
    Ok(Outcome::Ok(json!({
        "recorded": true,
        "prediction_id": prediction_id.map(|u| u.to_string()),
        "embedder_index": prediction.embedder_index,
        "predicted": prediction.predicted,
        "actual": prediction.actual,
        "prediction_error": outcome.error,
        "accuracy": outcome.accuracy,
        "adjustment": outcome.adjustment.map(|a| json!({
            "delta_s": a.delta_s, "delta_c": a.delta_c, "alpha": a.alpha, "trigger_error": a.trigger_error
        })),
        "current_lambdas": lambdas_json(meta.lambdas),
        "current_accuracy": meta.current_accuracy(),
        "consecutive_low_count": meta.consecutive_low,
        "escalation_status": meta.escalation_status().as_str(),
        "lifecycle_stage": meta.stage().as_str(),
        "interaction_count": meta.interaction_count,
        "events": events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>(),
        "bayesian_recalibration": bayes,
    })))
}

/// Save the meta state, append the events, and write an ESCALATION directive for a human
/// escalation among them.
fn persist(ctx: &WriteCtx<'_>, events: &[Event], windows: Windows) -> Result<(), ToolError> {
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
                "meta-utl-mcp",
                ctx.now,
            ),
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------- status

fn status_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "include_accuracy_history": {"type": "boolean", "default": false, "description": "Include the global rolling accuracy window (oldest first)."},
            "include_embedder_breakdown": {"type": "boolean", "default": false, "description": "Include per-embedder (E1-E13) accuracy and weights."}
        },
        "additionalProperties": false
    })
}

fn status_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "enabled": {"type": "boolean"},
            "current_accuracy": {"type": ["number", "null"], "description": "Global rolling accuracy over the last 100 predictions; null before any."},
            "consecutive_low_count": {"type": "integer"},
            "current_lambdas": lambdas_schema(),
            "base_lambdas": lambdas_schema(),
            "lambda_deviation": {"type": "object", "properties": {"lambda_s": {"type": "number"}, "lambda_c": {"type": "number"}}, "required": ["lambda_s", "lambda_c"]},
            "escalation_status": {"type": "string", "enum": ["normal", "bayesian_pending", "human_review_required"]},
            "bayesian_failure_count": {"type": "integer"},
            "adjustment_count": {"type": "integer"},
            "recent_events_count": {"type": "integer"},
            "last_adjustment_at": {"type": ["string", "null"]},
            "lifecycle_stage": {"type": "string", "enum": ["infancy", "growth", "maturity"]},
            "interaction_count": {"type": "integer"},
            "database": {"type": "string"},
            "accuracy_history": {"type": "array", "items": {"type": "number"}},
            "embedder_accuracy": {"type": "array", "items": {"type": ["number", "null"]}, "minItems": 13, "maxItems": 13},
            "embedder_weights": {"type": "array", "items": {"type": "number"}, "minItems": 13, "maxItems": 13}
        },
        "required": ["enabled", "current_accuracy", "consecutive_low_count", "current_lambdas",
                     "base_lambdas", "lambda_deviation", "escalation_status", "adjustment_count",
                     "recent_events_count", "last_adjustment_at", "lifecycle_stage", "interaction_count"]
    })
}

fn get_status(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["include_accuracy_history", "include_embedder_breakdown"])?;
    let history = args.bool_or("include_accuracy_history", false)?;
    let breakdown = args.bool_or("include_embedder_breakdown", false)?;
    let m = &ctx.svc.meta;
    let base = m.base_lambdas();
    let recent = meta_store::count_events_since(ctx.db, ctx.now - Duration::hours(24))?;
    let mut out = json!({
        "enabled": true,
        "current_accuracy": m.current_accuracy(),
        "consecutive_low_count": m.consecutive_low,
        "current_lambdas": lambdas_json(m.lambdas),
        "base_lambdas": lambdas_json(base),
        "lambda_deviation": {"lambda_s": m.lambdas.s() - base.s(), "lambda_c": m.lambdas.c() - base.c()},
        "escalation_status": m.escalation_status().as_str(),
        "bayesian_failure_count": m.bayesian_failures,
        "adjustment_count": m.adjustment_count,
        "recent_events_count": recent,
        "last_adjustment_at": m.last_adjustment_at.map(|t| t.to_rfc3339()),
        "lifecycle_stage": m.stage().as_str(),
        "interaction_count": m.interaction_count,
        "database": ctx.db_path,
    });
    if history {
        out["accuracy_history"] = json!(m.global.values().collect::<Vec<_>>());
    }
    if breakdown {
        out["embedder_accuracy"] = json!(m.embedder_accuracy().to_vec());
        out["embedder_weights"] = json!(m.embedder_weights().to_vec());
    }
    Ok(Outcome::Ok(out))
}

// ---------------------------------------------------------------- recalibration

fn recalibrate_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "force_bayesian": {"type": "boolean", "default": false, "description": "Use Bayesian optimisation instead of a gradient step."},
            "domain": {"type": "string", "enum": DOMAINS, "description": "Recalibrate on this domain's predictions only."},
            "dry_run": {"type": "boolean", "default": false, "description": "Compute the adjustment but change nothing."}
        },
        "additionalProperties": false
    })
}

fn recalibrate_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "adjustment": adjustment_schema(),
            "new_lambdas": lambdas_schema(),
            "previous_lambdas": lambdas_schema(),
            "method": {"type": "string", "enum": ["gradient", "bayesian", "none"]},
            "bo_iterations": {"type": ["integer", "null"]},
            "expected_improvement": nullable_number(),
            "replay_accuracy_before": nullable_number(),
            "replay_accuracy_after": nullable_number(),
            "samples": {"type": "integer"},
            "domain": {"type": ["string", "null"]},
            "dry_run": {"type": "boolean"},
            "escalation_status": {"type": "string"},
            "error": {"type": ["string", "null"]}
        },
        "required": ["success", "adjustment", "new_lambdas", "previous_lambdas", "method",
                     "bo_iterations", "expected_improvement", "dry_run", "error"]
    })
}

fn plan_json(plan: &RecalibrationPlan, dry_run: bool) -> Value {
    json!({
        "success": plan.success,
        "adjustment": plan.adjustment.map(|a| json!({
            "delta_s": a.delta_s, "delta_c": a.delta_c, "alpha": a.alpha, "trigger_error": a.trigger_error
        })),
        "new_lambdas": lambdas_json(plan.new),
        "previous_lambdas": lambdas_json(plan.previous),
        "method": plan.method.as_str(),
        "bo_iterations": plan.bo_iterations,
        "expected_improvement": plan.expected_improvement,
        "replay_accuracy_before": plan.replay_accuracy_before,
        "replay_accuracy_after": plan.replay_accuracy_after,
        "samples": plan.samples,
        "dry_run": dry_run,
        "error": plan.error,
    })
}

fn trigger_recalibration(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["force_bayesian", "domain", "dry_run"])?;
    let force = args.bool_or("force_bayesian", false)?;
    let dry_run = args.bool_or("dry_run", false)?;
    let domain = domain_of(args)?;
    let replay = meta_store::replay_window(ctx.db, domain)?;
    let meta = &mut ctx.svc.meta;
    let pending = meta.escalation_status() != crate::service::meta::EscalationStatus::Normal
        || meta.consecutive_low >= crate::service::meta::ESCALATION_CYCLES;
    let plan = if force || pending {
        meta.plan_bayesian(&replay)
    } else {
        meta.plan_gradient(&replay)
    };
    if !dry_run {
        let before = meta.lambdas;
        let events = meta.apply_plan(&plan, false, domain, ctx.now);
        if meta.lambdas != before {
            directives::insert(
                ctx.db,
                &Directive::new(
                    None,
                    InterventionType::Override,
                    format!(
                        "manual {} λ recalibration: λ_s {:.4} -> {:.4}",
                        plan.method.as_str(),
                        before.s(),
                        ctx.svc.meta.lambdas.s()
                    ),
                    "USER",
                    ctx.now,
                ),
            )?;
        }
        persist(ctx, &events, Windows::None)?;
    }
    let mut out = plan_json(&plan, dry_run);
    out["domain"] = json!(domain.map(Domain::as_str));
    out["escalation_status"] = json!(ctx.svc.meta.escalation_status().as_str());
    if plan.method == Method::None {
        out["bo_iterations"] = Value::Null;
    }
    Ok(Outcome::Ok(out))
}

// ---------------------------------------------------------------- log

fn log_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "start_time": {"type": "string", "format": "date-time", "description": "Inclusive start (RFC 3339, e.g. 2024-01-01T00:00:00Z)."},
            "end_time": {"type": "string", "format": "date-time", "description": "Inclusive end (RFC 3339)."},
            "event_type": {"type": "string", "enum": EVENT_TYPES, "description": "Only events of this type."},
            "domain": {"type": "string", "enum": DOMAINS, "description": "Only events of this domain."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "description": "Page size."},
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Events to skip (newest first)."}
        },
        "additionalProperties": false
    })
}

fn log_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "events": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "timestamp": {"type": "string"},
                    "event_type": {"type": "string", "enum": EVENT_TYPES},
                    "prediction_error": nullable_number(),
                    "lambda_before": lambdas_schema(),
                    "lambda_after": lambdas_schema(),
                    "accuracy_avg": nullable_number(),
                    "escalated": {"type": "boolean"},
                    "domain": {"type": ["string", "null"]},
                    "embedder_index": {"type": ["integer", "null"]},
                    "detail": {"type": "string"}
                },
                "required": ["timestamp", "event_type", "lambda_before", "lambda_after", "escalated", "domain"]
            }},
            "total_count": {"type": "integer"},
            "has_more": {"type": "boolean"},
            "query_time_ms": {"type": "number"}
        },
        "required": ["events", "total_count", "has_more", "query_time_ms"]
    })
}

fn get_log(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    let started = Instant::now();
    args.deny_unknown(&[
        "start_time",
        "end_time",
        "event_type",
        "domain",
        "limit",
        "offset",
    ])?;
    let start = args.timestamp("start_time")?;
    let end = args.timestamp("end_time")?;
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        return Err(ToolError::invalid(format!(
            "start_time {} is after end_time {}",
            s.to_rfc3339(),
            e.to_rfc3339()
        )));
    }
    let query = EventQuery {
        start,
        end,
        event_type: args.enumeration("event_type", &EVENT_TYPES, EventType::parse)?,
        domain: domain_of(args)?,
        limit: args.int_in("limit", 1, 1000)?.unwrap_or(100) as usize,
        offset: args.int_in("offset", 0, i64::MAX)?.unwrap_or(0) as usize,
    };
    let (events, total) = meta_store::query_events(ctx.db, &query)?;
    let has_more = query.offset.saturating_add(events.len()) < total;
    let events: Vec<Value> = events
        .iter()
        .map(|e| {
            json!({
                "timestamp": e.timestamp.to_rfc3339(),
                "event_type": e.event_type.as_str(),
                "prediction_error": e.prediction_error,
                "lambda_before": lambdas_json(e.lambda_before),
                "lambda_after": lambdas_json(e.lambda_after),
                "accuracy_avg": e.accuracy_avg,
                "escalated": e.escalated,
                "domain": e.domain.map(Domain::as_str),
                "embedder_index": e.embedder_index,
                "detail": e.detail,
            })
        })
        .collect();
    Ok(Outcome::Ok(json!({
        "events": events,
        "total_count": total,
        "has_more": has_more,
        "query_time_ms": started.elapsed().as_secs_f64() * 1e3,
    })))
}

// ---------------------------------------------------------------- reset

fn reset_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "scope": {"type": "string", "enum": SCOPES, "description": "lambdas | escalation | all"},
            "rationale": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "Why the operator resets (recorded in the log and the directive history)."}
        },
        "required": ["scope", "rationale"],
        "additionalProperties": false
    })
}

fn reset_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "scope": {"type": "string", "enum": SCOPES},
            "previous_lambdas": lambdas_schema(),
            "current_lambdas": lambdas_schema(),
            "escalation_status": {"type": "string"},
            "consecutive_low_count": {"type": "integer"},
            "directive_id": {"type": "string"}
        },
        "required": ["success", "scope", "previous_lambdas", "current_lambdas", "escalation_status", "directive_id"]
    })
}

fn reset(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["scope", "rationale"])?;
    let parse_scope = |s: &str| ResetScope::ALL.into_iter().find(|x| x.as_str() == s);
    let scope = args
        .enumeration("scope", &SCOPES, parse_scope)?
        .ok_or_else(|| {
            ToolError::invalid("missing required field 'scope' (lambdas, escalation or all)")
        })?;
    let rationale = args
        .str("rationale")?
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            ToolError::invalid("missing required field 'rationale' (1 to 1024 characters)")
        })?;
    if rationale.chars().count() > 1024 {
        return Err(ToolError::invalid(format!(
            "field 'rationale' must be at most 1024 characters, got {}",
            rationale.chars().count()
        )));
    }
    let previous = ctx.svc.meta.lambdas;
    let event = ctx.svc.meta.reset(scope, rationale, ctx.now);
    let directive = Directive::new(
        None,
        InterventionType::Override,
        format!("reset_meta_learning ({}): {rationale}", scope.as_str()),
        "USER",
        ctx.now,
    );
    directives::insert(ctx.db, &directive)?;
    persist(ctx, &[event], Windows::All)?;
    let m = &ctx.svc.meta;
    Ok(Outcome::Ok(json!({
        "success": true,
        "scope": scope.as_str(),
        "previous_lambdas": lambdas_json(previous),
        "current_lambdas": lambdas_json(m.lambdas),
        "escalation_status": m.escalation_status().as_str(),
        "consecutive_low_count": m.consecutive_low,
        "directive_id": directive.id.to_string(),
    })))
}

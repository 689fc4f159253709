//! The ATC tools: `record_calibration_observations` (the data path in), `get_threshold_status`,
//! `get_calibration_metrics` and `trigger_recalibration` (levels 1–4).
//!
//! Contract: SPEC §4 atc, issue 4, and seeds/atc-trigger-recalibration.md (the `level` error
//! messages are the seed's, verbatim). Domains are answered in the seed's capitalised casing and
//! accepted in any casing.

use std::sync::LazyLock;

use chrono::{DateTime, Duration, SubsecRound, Utc};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};

use super::{Annotations, Args, Handler, Outcome, ReadCtx, Tool, ToolError, ToolResult, WriteCtx};
use crate::service::Family;
use crate::service::atc::level4::level4_bo_config;
use crate::service::atc::metrics::{CalibrationMetrics, CalibrationStatus};
use crate::service::atc::state::{
    AtcState, IngestEffect, Level1Report, Level2Report, Level3Report, Level4Outcome, Level4Report,
    MetricsPair,
};
use crate::service::atc::temperature::TemperatureRange;
use crate::service::atc::thresholds::{ThresholdName, strictness};
use crate::service::atc::{Observation, ObservationFilter, RunMode};
use crate::service::vocab::Domain;
use crate::service::vocab::{EMBEDDER_NAMES, NUM_EMBEDDERS};
use crate::store::atc as atc_store;
use crate::store::directives::{self, Directive, InterventionType};

/// Most observations accepted in one `record_calibration_observations` call.
pub const MAX_OBSERVATIONS_PER_CALL: usize = 10_000;

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "record_calibration_observations",
        aliases: &[],
        title: "Record calibration observations",
        description: || {
            String::from(
                "The ATC data path in: record 1..10000 observations of an embedder's reported confidence and whether it turned out correct ({embedder_id 1..13, confidence 0..1, correct, domain?, threshold_name?, threshold_used?, timestamp? RFC 3339}). Feeds the per-embedder windows (last 10,000 each), the Level 1 drift trackers and, when threshold_used is one of the bandit candidates (0.70, 0.72, 0.75, 0.77, 0.80), the domain's Level 3 bandit. Returns the counts and the calibration metrics after.",
            )
        },
        input_schema: record_input_schema,
        output_schema: record_output_schema,
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        handler: Handler::Write(record_observations, &[Family::Atc]),
        example: || json!({"observations": [{"embedder_id": 1, "confidence": 0.9, "correct": true, "domain": "Code", "threshold_name": "theta_acc", "threshold_used": 0.75}]}),
    },
    Tool {
        name: "get_threshold_status",
        aliases: &[],
        title: "ATC threshold status",
        description: || {
            String::from(
                "Current adaptive thresholds of a domain (all 20, with defaults and valid ranges), per-embedder temperatures (or one embedder's), the domain's Thompson-sampling bandit statistics and session threshold, Level 1 drift, calibration status and whether Level 4 optimisation is due.",
            )
        },
        input_schema: status_input_schema,
        output_schema: status_output_schema,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        handler: Handler::Read(get_threshold_status),
        example: || json!({"domain": "General"}),
    },
    Tool {
        name: "get_calibration_metrics",
        aliases: &[],
        title: "ATC calibration metrics",
        description: || {
            String::from(
                "ECE, MCE (10 equal-width bins, right-closed) and Brier score of the recorded observations whose timestamp falls in the timeframe (1h, 24h, 7d, 30d; default 24h), raw and after per-embedder temperature scaling, with the status band (Excellent < 0.05, Good < 0.10, Acceptable < 0.15, Poor < 0.25, else Critical), recommendations, and per-bin reliability data on request.",
            )
        },
        input_schema: metrics_input_schema,
        output_schema: metrics_output_schema,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        handler: Handler::Read(get_calibration_metrics),
        example: || json!({"timeframe": "24h", "include_bins": true}),
    },
    Tool {
        name: "trigger_recalibration",
        aliases: &[],
        title: "Trigger ATC recalibration",
        description: || {
            String::from(
                "Manually run one ATC level. 1: report EWMA drift scores. 2: refit every embedder's temperature by minimising NLL on its window. 3: Thompson-sampling selection of the domain's session threshold from [0.70, 0.72, 0.75, 0.77, 0.80] (statistics persist; reset=true forgets them). 4: Gaussian process + Expected Improvement over theta_acc maximising balanced accuracy on the domain's observations, applied when strictly better. Returns metrics measured before and after; dry_run computes without changing anything.",
            )
        },
        input_schema: trigger_input_schema,
        output_schema: trigger_output_schema,
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
        handler: Handler::Write(trigger_recalibration, &[Family::Atc]),
        example: || json!({"level": 2, "domain": "General", "dry_run": true}),
    },
];

const DOMAINS: [&str; 6] = [
    "Code", "Medical", "Legal", "Creative", "Research", "General",
];
const TIMEFRAMES: [&str; 4] = ["1h", "24h", "7d", "30d"];

static THRESHOLD_NAMES: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| ThresholdName::ALL.iter().map(|n| n.as_str()).collect());

fn threshold_names() -> Vec<&'static str> {
    THRESHOLD_NAMES.clone()
}

fn domain_of(args: &Args<'_>) -> Result<Domain, ToolError> {
    Ok(args
        .enumeration("domain", &DOMAINS, Domain::parse)?
        .unwrap_or(Domain::General))
}

fn embedder_of(args: &Args<'_>) -> Result<Option<u8>, ToolError> {
    Ok(args
        .int_in("embedder_id", 1, NUM_EMBEDDERS as i64)?
        .map(|e| e as u8))
}

fn timeframe_duration(s: &str) -> Option<Duration> {
    match s {
        "1h" => Some(Duration::hours(1)),
        "24h" => Some(Duration::hours(24)),
        "7d" => Some(Duration::days(7)),
        "30d" => Some(Duration::days(30)),
        _ => None,
    }
}

// ---------------------------------------------------------------- shared JSON pieces

fn metrics_schema() -> Value {
    json!({
        "type": ["object", "null"],
        "description": "null when no observation matches.",
        "properties": {
            "count": {"type": "integer"},
            "ece": {"type": "number"},
            "mce": {"type": "number"},
            "brier": {"type": "number"},
            "accuracy": {"type": "number"},
            "mean_confidence": {"type": "number"},
            "status": {"type": "string", "enum": ["Excellent", "Good", "Acceptable", "Poor", "Critical"]},
            "description": {"type": "string"}
        },
        "required": ["count", "ece", "mce", "brier", "status"]
    })
}

fn metrics_json(m: Option<&CalibrationMetrics>) -> Value {
    match m {
        None => Value::Null,
        Some(m) => json!({
            "count": m.count,
            "ece": m.ece,
            "mce": m.mce,
            "brier": m.brier,
            "accuracy": m.accuracy,
            "mean_confidence": m.mean_confidence,
            "status": m.status().as_str(),
            "description": m.status().description(),
        }),
    }
}

fn bins_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "lower": {"type": "number"},
                "upper": {"type": "number"},
                "count": {"type": "integer"},
                "mean_confidence": {"type": ["number", "null"]},
                "accuracy": {"type": ["number", "null"]}
            },
            "required": ["lower", "upper", "count", "mean_confidence", "accuracy"]
        }
    })
}

fn bins_json(m: Option<&CalibrationMetrics>) -> Value {
    json!(
        m.map(|m| m
            .bins
            .iter()
            .map(|b| json!({
                "lower": b.lower,
                "upper": b.upper,
                "count": b.count,
                "mean_confidence": b.mean_confidence,
                "accuracy": b.accuracy,
            }))
            .collect::<Vec<_>>())
            .unwrap_or_default()
    )
}

fn pair_json(p: &MetricsPair) -> Value {
    json!({
        "raw": metrics_json(p.raw.as_ref()),
        "calibrated": metrics_json(p.calibrated.as_ref()),
    })
}

fn pair_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"raw": metrics_schema(), "calibrated": metrics_schema()},
        "required": ["raw", "calibrated"]
    })
}

fn level_list_schema() -> Value {
    json!({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 4}})
}

fn level1_json(r: &Level1Report) -> Value {
    json!({
        "thresholds": r.thresholds.iter().map(|t| json!({
            "name": t.name.as_str(),
            "baseline": t.baseline,
            "ewma": t.ewma,
            "sigma": t.sigma,
            "drift_score": t.score,
            "count": t.count,
            "recommended_levels": t.recommended_levels,
        })).collect::<Vec<_>>(),
        "embedders": r.embedders.iter().map(|e| json!({
            "embedder_id": e.embedder_id,
            "name": EMBEDDER_NAMES[usize::from(e.embedder_id) - 1],
            "ewma_gap": e.ewma,
            "sigma": e.sigma,
            "drift_score": e.score,
            "count": e.count,
            "recommended_levels": e.recommended_levels,
        })).collect::<Vec<_>>(),
    })
}

fn level1_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "thresholds": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "baseline": {"type": "number"}, "ewma": {"type": "number"},
                "sigma": {"type": "number"}, "drift_score": {"type": "number"}, "count": {"type": "integer"},
                "recommended_levels": level_list_schema()
            }, "required": ["name", "baseline", "ewma", "sigma", "drift_score", "count", "recommended_levels"]}},
            "embedders": {"type": "array", "items": {"type": "object", "properties": {
                "embedder_id": {"type": "integer"}, "name": {"type": "string"}, "ewma_gap": {"type": "number"},
                "sigma": {"type": "number"}, "drift_score": {"type": "number"}, "count": {"type": "integer"},
                "recommended_levels": level_list_schema()
            }, "required": ["embedder_id", "name", "ewma_gap", "sigma", "drift_score", "count", "recommended_levels"]}}
        },
        "required": ["thresholds", "embedders"]
    })
}

/// Union of the levels a Level 1 report recommends, ascending.
fn drift_levels(r: &Level1Report) -> Vec<u8> {
    let mut levels: Vec<u8> = r
        .thresholds
        .iter()
        .flat_map(|t| t.recommended_levels.iter().copied())
        .chain(
            r.embedders
                .iter()
                .flat_map(|e| e.recommended_levels.iter().copied()),
        )
        .collect();
    levels.sort_unstable();
    levels.dedup();
    levels
}

// ---------------------------------------------------------------- record_calibration_observations

fn record_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "observations": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_OBSERVATIONS_PER_CALL,
                "items": {
                    "type": "object",
                    "properties": {
                        "embedder_id": {"type": "integer", "minimum": 1, "maximum": 13, "description": "Embedder E1..E13 as id 1..13."},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "The confidence the embedder reported (raw, before temperature scaling)."},
                        "correct": {"type": "boolean", "description": "Whether the outcome proved the embedder right."},
                        "domain": {"type": "string", "enum": DOMAINS, "default": "General", "description": "Domain (case-insensitive)."},
                        "threshold_name": {"type": "string", "enum": threshold_names(), "description": "The threshold that was applied; with threshold_used feeds its Level 1 drift tracker."},
                        "threshold_used": {"type": "number", "minimum": 0, "maximum": 1, "description": "The threshold value applied; a bandit candidate (within 1e-6) credits that arm of the domain's Level 3 bandit."},
                        "timestamp": {"type": "string", "format": "date-time", "description": "When it was observed (RFC 3339); default now."}
                    },
                    "required": ["embedder_id", "confidence", "correct"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["observations"],
        "additionalProperties": false
    })
}

fn record_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "accepted": {"type": "integer"},
            "bandit_updates": {"type": "integer"},
            "threshold_drift_updates": {"type": "integer"},
            "evicted": {"type": "integer", "description": "Older observations dropped from full windows."},
            "window_sizes": {"type": "array", "items": {"type": "integer"}, "minItems": 13, "maxItems": 13},
            "metrics_after": pair_schema(),
            "status": {"type": ["string", "null"]}
        },
        "required": ["accepted", "bandit_updates", "threshold_drift_updates", "evicted", "window_sizes", "metrics_after", "status"]
    })
}

const OBSERVATION_FIELDS: [&str; 7] = [
    "embedder_id",
    "confidence",
    "correct",
    "domain",
    "threshold_name",
    "threshold_used",
    "timestamp",
];

fn parse_observation(v: &Value, now: DateTime<Utc>) -> Result<Observation, ToolError> {
    if !v.is_object() {
        return Err(ToolError::invalid(
            "must be an object {embedder_id, confidence, correct, ...}",
        ));
    }
    let a = Args::new(v)?;
    a.deny_unknown(&OBSERVATION_FIELDS)?;
    let embedder_id = a
        .int_in("embedder_id", 1, NUM_EMBEDDERS as i64)?
        .ok_or_else(|| {
            ToolError::invalid("missing required field 'embedder_id' (an integer in 1..=13)")
        })? as u8;
    let confidence = a.req_f64_in("confidence", 0.0, 1.0)?;
    a.require("correct")?;
    let correct = a.bool_or("correct", false)?;
    let domain = domain_of(&a)?;
    let threshold_name = a.enumeration("threshold_name", &THRESHOLD_NAMES, ThresholdName::parse)?;
    let threshold_used = a.f64_in("threshold_used", 0.0, 1.0)?;
    // The store keeps microseconds; truncate so memory equals what a restart reads back.
    let timestamp = a
        .timestamp("timestamp")?
        .map_or(now, |t| t.trunc_subsecs(6));
    Ok(Observation {
        timestamp,
        embedder_id,
        confidence,
        correct,
        domain,
        threshold_name,
        threshold_used,
    })
}

fn record_observations(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["observations"])?;
    let list = args.require("observations")?.as_array().ok_or_else(|| {
        ToolError::invalid(format!(
            "field 'observations' must be an array of 1..={MAX_OBSERVATIONS_PER_CALL} observation objects"
        ))
    })?;
    if list.is_empty() || list.len() > MAX_OBSERVATIONS_PER_CALL {
        return Err(ToolError::invalid(format!(
            "field 'observations' must hold 1..={MAX_OBSERVATIONS_PER_CALL} observations, got {}",
            list.len()
        )));
    }
    let observations = list
        .iter()
        .enumerate()
        .map(|(i, v)| {
            parse_observation(v, ctx.now).map_err(|e| match e {
                ToolError::InvalidParams(m) => {
                    ToolError::InvalidParams(format!("observations[{i}]: {m}"))
                }
                other => other,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let atc = &mut ctx.svc.atc;
    let (mut bandit, mut drift, mut evicted) = (0usize, 0usize, 0usize);
    for (i, o) in observations.iter().enumerate() {
        let IngestEffect {
            bandit_candidate,
            threshold_tracked,
            evicted: dropped,
        } = atc
            .ingest(*o)
            .map_err(|e| ToolError::invalid(format!("observations[{i}]: {e}")))?;
        bandit += usize::from(bandit_candidate.is_some());
        drift += usize::from(threshold_tracked);
        evicted += usize::from(dropped);
    }
    atc_store::insert_observations(ctx.db, &observations)?;
    atc_store::save(ctx.db, &ctx.svc.atc)?;
    let atc = &ctx.svc.atc;
    let after = atc.metrics(&ObservationFilter::default());
    Ok(Outcome::Ok(json!({
        "accepted": observations.len(),
        "bandit_updates": bandit,
        "threshold_drift_updates": drift,
        "evicted": evicted,
        "window_sizes": atc.windows.iter().map(|w| w.len()).collect::<Vec<_>>(),
        "status": after.calibrated.as_ref().map(|m| m.status().as_str()),
        "metrics_after": pair_json(&after),
    })))
}

// ---------------------------------------------------------------- get_threshold_status

fn status_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "domain": {"type": "string", "enum": DOMAINS, "default": "General", "description": "Domain whose thresholds and bandit to show (case-insensitive)."},
            "embedder_id": {"type": "integer", "minimum": 1, "maximum": 13, "description": "Show only this embedder's temperature and calibration."}
        },
        "additionalProperties": false
    })
}

fn status_output_schema() -> Value {
    let threshold = json!({
        "type": "object",
        "properties": {
            "value": {"type": "number"}, "default": {"type": "number"},
            "min": {"type": "number"}, "max": {"type": "number"}
        },
        "required": ["value", "default", "min", "max"]
    });
    let names = threshold_names();
    let mut props = Map::new();
    for n in &names {
        props.insert((*n).to_string(), threshold.clone());
    }
    json!({
        "type": "object",
        "properties": {
            "domain": {"type": "string", "enum": DOMAINS},
            "strictness": {"type": "number"},
            "thresholds": {"type": "object", "properties": props, "required": names},
            "embedders": {"type": "array", "items": {"type": "object", "properties": {
                "embedder_id": {"type": "integer"}, "name": {"type": "string"},
                "temperature": {"type": "number"}, "default_temperature": {"type": "number"},
                "min_temperature": {"type": "number"}, "max_temperature": {"type": "number"},
                "samples": {"type": "integer"}, "metrics": pair_schema()
            }, "required": ["embedder_id", "name", "temperature", "default_temperature", "min_temperature", "max_temperature", "samples", "metrics"]}},
            "bandit": {"type": "object", "properties": {
                "candidates": {"type": "array", "items": {"type": "number"}},
                "successes": {"type": "array", "items": {"type": "integer"}},
                "failures": {"type": "array", "items": {"type": "integer"}},
                "posterior_means": {"type": "array", "items": {"type": "number"}},
                "total_pulls": {"type": "integer"},
                "selected_threshold": {"type": ["number", "null"]}
            }, "required": ["candidates", "successes", "failures", "posterior_means", "total_pulls", "selected_threshold"]},
            "drift": level1_schema(),
            "calibration_status": {"type": ["string", "null"]},
            "last_level4_run": {"type": ["string", "null"]},
            "should_optimize_level4": {"type": "boolean"}
        },
        "required": ["domain", "strictness", "thresholds", "embedders", "bandit", "drift",
                     "calibration_status", "last_level4_run", "should_optimize_level4"]
    })
}

fn get_threshold_status(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["domain", "embedder_id"])?;
    let domain = domain_of(args)?;
    let embedder = embedder_of(args)?;
    let atc = &ctx.svc.atc;
    let set = atc.thresholds(domain);
    let mut thresholds = Map::new();
    for name in ThresholdName::ALL {
        let (lo, hi) = name.range();
        thresholds.insert(
            name.as_str().to_string(),
            json!({"value": set.get(name), "default": name.default_at(strictness(domain)), "min": lo, "max": hi}),
        );
    }
    let ids: Vec<u8> = match embedder {
        Some(e) => vec![e],
        None => (1..=NUM_EMBEDDERS as u8).collect(),
    };
    let embedders: Vec<Value> = ids
        .into_iter()
        .map(|e| {
            let range = TemperatureRange::for_embedder(e).expect("1..=13");
            let filter = ObservationFilter {
                embedder_id: Some(e),
                ..ObservationFilter::default()
            };
            json!({
                "embedder_id": e,
                "name": EMBEDDER_NAMES[usize::from(e) - 1],
                "temperature": atc.temperature(e),
                "default_temperature": range.default,
                "min_temperature": range.lo,
                "max_temperature": range.hi,
                "samples": atc.windows[usize::from(e) - 1].len(),
                "metrics": pair_json(&atc.metrics(&filter)),
            })
        })
        .collect();
    let d = domain.index();
    let b = &atc.bandits[d];
    Ok(Outcome::Ok(json!({
        "domain": domain.display_name(),
        "strictness": strictness(domain),
        "thresholds": thresholds,
        "embedders": embedders,
        "bandit": {
            "candidates": b.candidates(),
            "successes": b.successes(),
            "failures": b.failures(),
            "posterior_means": b.posterior_means(),
            "total_pulls": b.total_pulls(),
            "selected_threshold": atc.selected[d],
        },
        "drift": level1_json(&atc.run_level1(domain)),
        "calibration_status": atc.domain_status(domain).map(CalibrationStatus::as_str),
        "last_level4_run": atc.last_level4[d].map(|t| t.to_rfc3339()),
        "should_optimize_level4": atc.should_optimize_level4(domain, ctx.now),
    })))
}

// ---------------------------------------------------------------- get_calibration_metrics

fn metrics_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "timeframe": {"type": "string", "enum": TIMEFRAMES, "default": "24h", "description": "Only observations whose timestamp is within this window before now."},
            "domain": {"type": "string", "enum": DOMAINS, "description": "Only this domain's observations (case-insensitive); also the domain whose drift and Level 4 schedule are reported (default General)."},
            "embedder_id": {"type": "integer", "minimum": 1, "maximum": 13, "description": "Only this embedder's observations."},
            "include_bins": {"type": "boolean", "default": false, "description": "Include the 10 reliability bins, raw and calibrated."}
        },
        "additionalProperties": false
    })
}

fn metrics_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "timeframe": {"type": "string", "enum": TIMEFRAMES},
            "since": {"type": "string"},
            "domain": {"type": ["string", "null"]},
            "embedder_id": {"type": ["integer", "null"]},
            "observation_count": {"type": "integer"},
            "metrics": metrics_schema(),
            "raw_metrics": metrics_schema(),
            "status": {"type": ["string", "null"]},
            "should_recalibrate": {"type": "boolean"},
            "recommended_levels": level_list_schema(),
            "recommendations": {"type": "array", "items": {"type": "string"}},
            "should_optimize_level4": {"type": "boolean"},
            "reliability": {"type": "object", "properties": {"raw": bins_schema(), "calibrated": bins_schema()}, "required": ["raw", "calibrated"]}
        },
        "required": ["timeframe", "since", "observation_count", "metrics", "raw_metrics", "status",
                     "should_recalibrate", "recommended_levels", "recommendations", "should_optimize_level4"]
    })
}

/// Levels recommended by a calibrated status: Good → 2; Acceptable → 2, 3; Poor, Critical → 2, 4
/// (seed's "Level Selection Guide").
fn status_levels(status: Option<CalibrationStatus>) -> Vec<u8> {
    match status {
        None | Some(CalibrationStatus::Excellent) => vec![],
        Some(CalibrationStatus::Good) => vec![2],
        Some(CalibrationStatus::Acceptable) => vec![2, 3],
        Some(CalibrationStatus::Poor | CalibrationStatus::Critical) => vec![2, 4],
    }
}

fn level_advice(level: u8) -> &'static str {
    match level {
        2 => "Run trigger_recalibration level 2: refit per-embedder temperatures.",
        3 => "Run trigger_recalibration level 3: select a session threshold by Thompson sampling.",
        _ => {
            "Run trigger_recalibration level 4: optimise theta_acc by Bayesian optimisation (and review by hand if Critical)."
        }
    }
}

fn get_calibration_metrics(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["timeframe", "domain", "embedder_id", "include_bins"])?;
    let timeframe = args
        .enumeration("timeframe", &TIMEFRAMES, |s| {
            TIMEFRAMES
                .iter()
                .copied()
                .find(|t| t.eq_ignore_ascii_case(s))
        })?
        .unwrap_or("24h");
    let domain = args.enumeration("domain", &DOMAINS, Domain::parse)?;
    let embedder = embedder_of(args)?;
    let include_bins = args.bool_or("include_bins", false)?;
    let since = ctx.now - timeframe_duration(timeframe).expect("validated timeframe");
    let filter = ObservationFilter {
        since: Some(since),
        domain,
        embedder_id: embedder,
    };
    let atc = &ctx.svc.atc;
    let pair = atc.metrics(&filter);
    let status = pair.calibrated.as_ref().map(CalibrationMetrics::status);
    let report_domain = domain.unwrap_or(Domain::General);
    let mut levels = status_levels(status);
    levels.extend(drift_levels(&atc.run_level1(report_domain)));
    levels.sort_unstable();
    levels.dedup();
    let mut recommendations: Vec<String> = Vec::new();
    match status {
        None => recommendations.push(format!(
            "No observations in the last {timeframe}: record some with record_calibration_observations."
        )),
        Some(s) => recommendations.push(s.description().to_string()),
    }
    recommendations.extend(levels.iter().map(|&l| level_advice(l).to_string()));
    let mut out = json!({
        "timeframe": timeframe,
        "since": since.to_rfc3339(),
        "domain": domain.map(Domain::display_name),
        "embedder_id": embedder,
        "observation_count": pair.raw.as_ref().map_or(0, |m| m.count),
        "metrics": metrics_json(pair.calibrated.as_ref()),
        "raw_metrics": metrics_json(pair.raw.as_ref()),
        "status": status.map(CalibrationStatus::as_str),
        "should_recalibrate": !levels.is_empty(),
        "recommended_levels": levels,
        "recommendations": recommendations,
        "should_optimize_level4": atc.should_optimize_level4(report_domain, ctx.now),
    });
    if include_bins {
        out["reliability"] = json!({
            "raw": bins_json(pair.raw.as_ref()),
            "calibrated": bins_json(pair.calibrated.as_ref()),
        });
    }
    Ok(Outcome::Ok(out))
}

// ---------------------------------------------------------------- trigger_recalibration

fn trigger_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "level": {"type": "integer", "minimum": 1, "maximum": 4, "description": "ATC level to trigger (1=EWMA drift, 2=temperature scaling, 3=Thompson-sampling bandit, 4=Bayesian optimisation of theta_acc)."},
            "domain": {"type": "string", "enum": DOMAINS, "default": "General", "description": "Domain context (case-insensitive): whose thresholds, bandit and observations levels 1, 3 and 4 use."},
            "dry_run": {"type": "boolean", "default": false, "description": "Compute and report, change nothing."},
            "reset": {"type": "boolean", "default": false, "description": "Level 3 only: forget the bandit's statistics before selecting."},
            "seed": {"type": "integer", "minimum": 0, "maximum": 9007199254740991u64, "description": "Level 3 only: seed of the Thompson draw (reproducible selection); default random."}
        },
        "required": ["level"],
        "additionalProperties": false
    })
}

fn trigger_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "recalibration": {
                "type": "object",
                "properties": {
                    "level": {"type": "integer", "minimum": 1, "maximum": 4},
                    "level_name": {"type": "string"},
                    "action": {"type": "string"},
                    "description": {"type": "string"},
                    "domain": {"type": "string", "enum": DOMAINS},
                    "dry_run": {"type": "boolean"}
                },
                "required": ["level", "level_name", "action", "description", "domain", "dry_run"]
            },
            "metrics_scope": {"type": "string", "enum": ["all", "domain"], "description": "Which observations metrics_before/after cover: every window (level 2) or the domain's."},
            "metrics_before": pair_schema(),
            "metrics_after": pair_schema(),
            "error": {"type": ["string", "null"]}
        },
        "required": ["success", "recalibration", "metrics_scope", "metrics_before", "metrics_after", "error"]
    })
}

const LEVEL_HINT: &str = "Must be 1, 2, 3, or 4.";

fn level_of(args: &Args<'_>) -> Result<u8, ToolError> {
    let Some(v) = args.get("level") else {
        return Err(ToolError::invalid(format!(
            "Missing required 'level' parameter. {LEVEL_HINT}"
        )));
    };
    let level = v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
    });
    match level {
        Some(l @ 1..=4) => Ok(l as u8),
        _ => Err(ToolError::invalid(format!(
            "Invalid level {v}. {LEVEL_HINT}"
        ))),
    }
}

fn level2_json(r: &Level2Report) -> (Value, usize) {
    let mut losses = Map::new();
    let mut fitted = 0;
    let rows: Vec<Value> = r
        .embedders
        .iter()
        .map(|e| {
            let name = EMBEDDER_NAMES[usize::from(e.embedder_id) - 1];
            if e.skipped.is_none() {
                fitted += 1;
                if let Some(nll) = e.nll_after {
                    losses.insert(name.to_string(), json!(nll));
                }
            }
            json!({
                "embedder_id": e.embedder_id,
                "name": name,
                "samples": e.samples,
                "temperature_before": e.temperature_before,
                "temperature_after": e.temperature_after,
                "nll_before": e.nll_before,
                "nll_after": e.nll_after,
                "ece_before": e.ece_before,
                "ece_after": e.ece_after,
                "at_bound": e.at_bound.map(|b| b.as_str()),
                "skipped": e.skipped.map(|s| s.message()),
            })
        })
        .collect();
    (
        json!({"temperatures": rows, "temperature_losses": losses, "fitted": fitted}),
        fitted,
    )
}

fn level3_json(r: &Level3Report) -> Value {
    json!({
        "threshold_candidates": r.bandit.candidates(),
        "selected_threshold": r.selection.threshold,
        "sampled_values": r.selection.samples,
        "successes": r.bandit.successes(),
        "failures": r.bandit.failures(),
        "posterior_means": r.bandit.posterior_means(),
        "total_pulls": r.bandit.total_pulls(),
        "reset": r.reset,
    })
}

fn level4_json(r: &Level4Report) -> (Value, Option<String>) {
    let mut out = json!({"should_optimize": r.should_optimize});
    match &r.outcome {
        Level4Outcome::Skipped(e) => {
            out["applied"] = json!(false);
            (out, Some(e.to_string()))
        }
        Level4Outcome::Ran { optimum, applied } => {
            out["observations"] = json!(optimum.observations);
            out["evaluations"] = json!(optimum.evaluations);
            out["optimizer_best_theta"] = json!(optimum.optimizer_best_x);
            out["proposed_theta_acc"] = json!(optimum.theta);
            out["theta_acc_before"] = json!(optimum.current_theta);
            out["balanced_accuracy_before"] = json!(optimum.current_balanced_accuracy);
            out["balanced_accuracy_proposed"] = json!(optimum.balanced_accuracy);
            out["applied"] = json!(applied.is_some());
            if let Some(c) = applied {
                out["theta_acc_after"] = json!(c.theta_acc.1);
                out["theta_opt"] = json!({"before": c.theta_opt.0, "after": c.theta_opt.1});
                out["theta_warn"] = json!({"before": c.theta_warn.0, "after": c.theta_warn.1});
                out["balanced_accuracy_after"] = json!(optimum.balanced_accuracy);
            } else {
                out["theta_acc_after"] = json!(optimum.current_theta);
                out["balanced_accuracy_after"] = json!(optimum.current_balanced_accuracy);
            }
            (out, None)
        }
    }
}

fn trigger_recalibration(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    args.deny_unknown(&["level", "domain", "dry_run", "reset", "seed"])?;
    let level = level_of(args)?;
    let domain = domain_of(args)?;
    let dry_run = args.bool_or("dry_run", false)?;
    let reset = args.bool_or("reset", false)?;
    let seed = args.int_in("seed", 0, 9_007_199_254_740_991)?;
    for (field, given) in [
        ("reset", args.get("reset").is_some()),
        ("seed", seed.is_some()),
    ] {
        if given && level != 3 {
            return Err(ToolError::invalid(format!(
                "field '{field}' applies to level 3 only, got level {level}"
            )));
        }
    }
    let mode = if dry_run {
        RunMode::DryRun
    } else {
        RunMode::Apply
    };
    let scope = if level == 2 {
        ObservationFilter::default()
    } else {
        ObservationFilter {
            domain: Some(domain),
            ..ObservationFilter::default()
        }
    };
    let atc: &mut AtcState = &mut ctx.svc.atc;
    let before = atc.metrics(&scope);
    let name = domain.display_name();
    let (level_name, action, description, mut detail, error, change): (
        &str,
        &str,
        String,
        Value,
        Option<String>,
        Option<String>,
    ) = match level {
        1 => {
            let r = atc.run_level1(domain);
            let mut detail = level1_json(&r);
            let scores: Map<String, Value> = r
                .thresholds
                .iter()
                .map(|t| (t.name.as_str().to_string(), json!(t.score)))
                .collect();
            detail["drift_scores"] = json!(scores);
            detail["recommended_levels"] = json!(drift_levels(&r));
            (
                "EWMA Drift Tracker",
                "reported",
                "Level 1 runs continuously on every observation; current drift scores reported."
                    .to_string(),
                detail,
                None,
                None,
            )
        }
        2 => {
            let r = atc.run_level2(mode);
            let (detail, fitted) = level2_json(&r);
            let changed: Vec<String> = r
                .embedders
                .iter()
                .filter(|e| e.temperature_after != e.temperature_before)
                .map(|e| {
                    format!(
                        "E{} T {:.4} -> {:.4}",
                        e.embedder_id, e.temperature_before, e.temperature_after
                    )
                })
                .collect();
            let error = (fitted == 0).then(|| {
                format!(
                    "no embedder has at least {} observations",
                    crate::service::atc::temperature::MIN_SAMPLES
                )
            });
            (
                "Temperature Scaling",
                if dry_run { "computed" } else { "recalibrated" },
                format!(
                    "Temperature scaling fitted for {fitted} of 13 embedders (NLL minimised within each embedder's range)."
                ),
                detail,
                error,
                Some(if changed.is_empty() {
                    "no temperature changed".to_string()
                } else {
                    changed.join(", ")
                }),
            )
        }
        3 => {
            let r = match seed {
                Some(s) => {
                    atc.run_level3(domain, reset, mode, &mut StdRng::seed_from_u64(s as u64))
                }
                None => atc.run_level3(domain, reset, mode, &mut rand::rng()),
            };
            let change = format!(
                "session threshold {:.2} selected{}",
                r.selection.threshold,
                if reset {
                    " after resetting the bandit"
                } else {
                    ""
                }
            );
            (
                "Thompson Sampling Bandit",
                "selected",
                format!(
                    "Thompson sampling over the {name} bandit selected {:.2} as the session threshold ({} outcomes recorded).",
                    r.selection.threshold,
                    r.bandit.total_pulls()
                ),
                level3_json(&r),
                None,
                Some(change),
            )
        }
        _ => {
            let r = atc.run_level4(domain, ctx.now, mode, &level4_bo_config());
            let (detail, error) = level4_json(&r);
            let (action, description, change) = match &r.outcome {
                Level4Outcome::Skipped(_) => (
                    "skipped",
                    "Bayesian optimisation did not run.".to_string(),
                    None,
                ),
                Level4Outcome::Ran {
                    optimum,
                    applied: Some(c),
                } => (
                    "optimized",
                    format!(
                        "theta_acc {:.4} -> {:.4}: balanced accuracy {:.4} -> {:.4}.",
                        c.theta_acc.0,
                        c.theta_acc.1,
                        optimum.current_balanced_accuracy,
                        optimum.balanced_accuracy
                    ),
                    Some(format!(
                        "theta_acc {:.4} -> {:.4}",
                        c.theta_acc.0, c.theta_acc.1
                    )),
                ),
                Level4Outcome::Ran { optimum, .. } => (
                    if dry_run { "computed" } else { "unchanged" },
                    format!(
                        "Best theta_acc {:.4} scores balanced accuracy {:.4} vs {:.4} at the current {:.4}; {}.",
                        optimum.theta,
                        optimum.balanced_accuracy,
                        optimum.current_balanced_accuracy,
                        optimum.current_theta,
                        if dry_run {
                            "dry run, nothing applied"
                        } else {
                            "not strictly better, kept"
                        }
                    ),
                    Some("theta_acc kept; Level 4 run recorded".to_string()),
                ),
            };
            (
                "Bayesian Meta-Optimizer",
                action,
                description,
                detail,
                error,
                change,
            )
        }
    };
    let after = ctx.svc.atc.metrics(&scope);
    if !dry_run && level != 1 {
        atc_store::save(ctx.db, &ctx.svc.atc)?;
        if let Some(change) = change.filter(|_| error.is_none()) {
            directives::insert(
                ctx.db,
                &Directive::new(
                    None,
                    InterventionType::Override,
                    format!("manual ATC level {level} recalibration ({name}): {change}"),
                    "USER",
                    ctx.now,
                ),
            )?;
        }
    }
    let base = json!({
        "level": level,
        "level_name": level_name,
        "action": action,
        "description": description,
        "domain": name,
        "dry_run": dry_run,
    });
    if let (Value::Object(d), Value::Object(b)) = (&mut detail, base) {
        for (k, v) in b {
            d.insert(k, v);
        }
    }
    Ok(Outcome::Ok(json!({
        "success": error.is_none(),
        "recalibration": detail,
        "metrics_scope": if level == 2 { "all" } else { "domain" },
        "metrics_before": pair_json(&before),
        "metrics_after": pair_json(&after),
        "error": error,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<u8, ToolError>) -> String {
        match r {
            Err(ToolError::InvalidParams(m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn level_errors_use_the_seed_messages() {
        let cases = [
            (
                json!({}),
                "Missing required 'level' parameter. Must be 1, 2, 3, or 4.",
            ),
            (
                json!({"level": null}),
                "Missing required 'level' parameter. Must be 1, 2, 3, or 4.",
            ),
            (
                json!({"level": 5}),
                "Invalid level 5. Must be 1, 2, 3, or 4.",
            ),
            (
                json!({"level": 0}),
                "Invalid level 0. Must be 1, 2, 3, or 4.",
            ),
            (
                json!({"level": 2.5}),
                "Invalid level 2.5. Must be 1, 2, 3, or 4.",
            ),
            (
                json!({"level": "2"}),
                "Invalid level \"2\". Must be 1, 2, 3, or 4.",
            ),
        ];
        for (args, expected) in cases {
            let a = Args::new(&args).unwrap();
            assert_eq!(message(level_of(&a)), expected, "{args}");
        }
        for (v, l) in [(json!(1), 1), (json!(4.0), 4)] {
            let args = json!({ "level": v });
            assert_eq!(level_of(&Args::new(&args).unwrap()), Ok(l));
        }
    }

    #[test]
    fn observation_parsing() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let v = json!({"embedder_id": 5, "confidence": 0.25, "correct": false, "domain": "legal",
                       "threshold_name": "theta_warn", "threshold_used": 0.6,
                       "timestamp": "2024-01-15T10:30:00.1234567Z"});
        let o = parse_observation(&v, now).unwrap();
        assert_eq!(o.embedder_id, 5);
        assert_eq!(o.domain, Domain::Legal);
        assert_eq!(o.threshold_name, Some(ThresholdName::ThetaWarn));
        assert_eq!(o.timestamp.timestamp_subsec_nanos(), 123_456_000);
        let o = parse_observation(
            &json!({"embedder_id": 1, "confidence": 1, "correct": true}),
            now,
        )
        .unwrap();
        assert_eq!((o.timestamp, o.domain), (now, Domain::General));
        let bad = [
            json!({"confidence": 0.5, "correct": true}),
            json!({"embedder_id": 14, "confidence": 0.5, "correct": true}),
            json!({"embedder_id": 1, "confidence": 1.5, "correct": true}),
            json!({"embedder_id": 1, "confidence": 0.5}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": "yes"}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": true, "threshold_name": "theta_x"}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": true, "timestamp": "now"}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": true, "extra": 1}),
            json!(7),
        ];
        for v in bad {
            assert!(parse_observation(&v, now).is_err(), "{v}");
        }
    }
}

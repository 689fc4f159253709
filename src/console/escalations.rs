//! `escalations [--json]`: the escalation state and the events that led to it since the last
//! acknowledgement; `escalations ack --rationale R`: `reset_meta_learning` with scope
//! `escalation` ([`crate::ops::meta::reset`]), recorded as an `OVERRIDE` directive.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::out::{Out, Paint, safe, when};
use super::{ActorArg, ConsoleError, rationale};
use crate::service::CachedFamily;
use crate::service::meta::{EscalationStatus, Event, EventType, ResetScope};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::meta::{self as meta_store, EventQuery};
use crate::tools::App;

/// Events shown at most.
const MAX_EVENTS: usize = 200;

/// `escalations …`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EscalationsArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(subcommand)]
    action: Option<EscalationAction>,
}

/// `escalations ack`.
#[derive(Subcommand, Debug)]
pub enum EscalationAction {
    /// Acknowledge the escalation: clears the low-accuracy count, the failed Bayesian runs
    /// and the human-review flag (reset_meta_learning, scope escalation), recorded as an
    /// OVERRIDE directive and a self_healing event.
    Ack {
        /// What was reviewed and decided (1 to 1024 characters).
        #[arg(long)]
        rationale: String,
        #[command(flatten)]
        actor: ActorArg,
    },
}

/// One event as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct EventJson {
    /// When (RFC 3339).
    pub timestamp: String,
    /// The event type.
    pub event_type: &'static str,
    /// λ_s after it.
    pub lambda_s: f64,
    /// Rolling accuracy then; null before any prediction.
    pub accuracy: Option<f64>,
    /// What happened.
    pub detail: String,
}

impl From<&Event> for EventJson {
    fn from(e: &Event) -> Self {
        EventJson {
            timestamp: e.timestamp.to_rfc3339(),
            event_type: e.event_type.as_str(),
            lambda_s: e.lambda_after.s(),
            accuracy: e.accuracy_avg,
            detail: e.detail.clone(),
        }
    }
}

/// The escalation and what led to it.
struct Pending {
    status: EscalationStatus,
    consecutive_low: u32,
    bayesian_failures: u32,
    since: Option<chrono::DateTime<chrono::Utc>>,
    events: Vec<Event>,
    directives: Vec<Directive>,
    /// The calibration sources of the project's own outcomes that stay miscalibrated after
    /// recalibration (issue 31), with what a person should look at.
    sources: Vec<(&'static str, String)>,
}

/// The kinds of event that make up an escalation.
fn leads_to_escalation(t: EventType) -> bool {
    matches!(
        t,
        EventType::AccuracyAlert
            | EventType::AccuracyRecovery
            | EventType::BayesianEscalation
            | EventType::HumanEscalation
    )
}

fn pending(app: &App) -> Result<Pending, ConsoleError> {
    Ok(app.read_with(|ctx| {
        let m = &ctx.svc.meta;
        // Since the last acknowledgement (a self_healing event), else the whole log.
        let (last_ack, _) = meta_store::query_events(
            ctx.db,
            &EventQuery {
                event_type: Some(EventType::SelfHealing),
                limit: 1,
                ..EventQuery::default()
            },
        )?;
        let since = last_ack.first().map(|e| e.timestamp);
        let mut events = Vec::new();
        for t in EventType::ALL
            .into_iter()
            .filter(|t| leads_to_escalation(*t))
        {
            let (found, _) = meta_store::query_events(
                ctx.db,
                &EventQuery {
                    start: since,
                    event_type: Some(t),
                    limit: MAX_EVENTS,
                    ..EventQuery::default()
                },
            )?;
            events.extend(found);
        }
        events.sort_by_key(|e| e.timestamp);
        if events.len() > MAX_EVENTS {
            events.drain(..events.len() - MAX_EVENTS);
        }
        let (entries, _) = directives::list(ctx.db, None, 1000, 0)?;
        let directives = entries
            .into_iter()
            .filter(|d| {
                d.intervention_type == InterventionType::Escalation
                    && since.is_none_or(|s| d.created_at >= s)
            })
            .collect();
        let sources = crate::ops::outcomes::assess_own(ctx.db)?
            .into_iter()
            .filter_map(|a| Some((a.source.as_str(), a.escalation()?)))
            .collect();
        Ok(Pending {
            sources,
            status: m.escalation_status(),
            consecutive_low: m.consecutive_low,
            bayesian_failures: m.bayesian_failures,
            since,
            events,
            directives,
        })
    })?)
}

/// Run `escalations` or `escalations ack`.
///
/// # Errors
/// [`ConsoleError`] when an argument is invalid or the store or stdout fails.
pub fn run(app: &App, args: EscalationsArgs, out: &mut Out) -> Result<(), ConsoleError> {
    match args.action {
        Some(EscalationAction::Ack {
            rationale: r,
            actor,
        }) => ack(app, rationale(&r)?, &actor, out),
        None => show(app, args.json, out),
    }
}

fn show(app: &App, json: bool, out: &mut Out) -> Result<(), ConsoleError> {
    let p = pending(app)?;
    if json {
        let events: Vec<EventJson> = p.events.iter().map(EventJson::from).collect();
        let directives: Vec<_> = p
            .directives
            .iter()
            .map(super::history::DirectiveJson::from)
            .collect();
        return out.json(&serde_json::json!({
            "escalation_status": p.status.as_str(),
            "consecutive_low_count": p.consecutive_low,
            "bayesian_failures": p.bayesian_failures,
            "since_last_ack": p.since.map(|t| t.to_rfc3339()),
            "events": events,
            "directives": directives,
            "sources": p.sources.iter().map(|(source, advice)| serde_json::json!({
                "source": source, "advice": advice,
            })).collect::<Vec<_>>(),
        }));
    }
    let (paint, what) = match p.status {
        EscalationStatus::Normal => (Paint::Good, "no escalation pending"),
        EscalationStatus::BayesianPending => (
            Paint::Warn,
            "a Bayesian recalibration failed; it will be retried by itself",
        ),
        EscalationStatus::HumanReviewRequired => (
            Paint::Bad,
            "a person must review: three Bayesian recalibrations failed in a row",
        ),
    };
    out.field(
        "Escalation",
        &format!("{}: {what}", out.paint(paint, p.status.as_str())),
    )?;
    out.field(
        "Counters",
        &format!(
            "{} consecutive low-accuracy predictions, {} failed Bayesian runs",
            p.consecutive_low, p.bayesian_failures
        ),
    )?;
    if let Some(s) = p.since {
        out.field("Since", &format!("the last acknowledgement, {}", when(s)))?;
    }
    if p.events.is_empty() {
        out.field("Events", "none")?;
    } else {
        out.field("Events", "")?;
        let mut t = out.table(&["when", "event", "λ_s", "accuracy", "detail"]);
        for e in &p.events {
            t.add_row(vec![
                when(e.timestamp),
                e.event_type.as_str().to_string(),
                format!("{:.3}", e.lambda_after.s()),
                e.accuracy_avg.map_or("—".into(), |a| format!("{a:.3}")),
                safe(&e.detail).into_owned(),
            ]);
        }
        out.print_table(&t)?;
    }
    for (source, advice) in &p.sources {
        let label = out.paint(Paint::Bad, "escalated");
        out.field("Calibration", &format!("{label} ({source}): {advice}"))?;
    }
    if !p.directives.is_empty() {
        out.field("Directives", "")?;
        super::history::print(&p.directives, out)?;
    }
    if p.status == EscalationStatus::HumanReviewRequired {
        out.line(
            "Review the events above, then: meta-utl-mcp escalations ack --rationale \"what you \
             found and decided\"",
        )?;
    }
    Ok(())
}

fn ack(app: &App, rationale: &str, actor: &ActorArg, out: &mut Out) -> Result<(), ConsoleError> {
    let actor = actor.resolve()?;
    let rationale = rationale.trim();
    let nothing = "No escalation is pending (status normal): nothing to acknowledge, and \
                   nothing was recorded.";
    // Read first, so that nothing at all is written when nothing is pending.
    if app.read_with(|ctx| Ok(ctx.svc.meta.escalation_status()))? == EscalationStatus::Normal {
        return out.line(nothing);
    }
    let done = app.write_with(&[CachedFamily::Meta], |ctx| {
        let before = ctx.svc.meta.escalation_status();
        // Nothing pending: nothing to acknowledge, and nothing is recorded.
        if before == EscalationStatus::Normal {
            return Ok(None);
        }
        let (_, directive) = crate::ops::meta::reset(
            ctx.db,
            &mut ctx.svc.meta,
            ResetScope::Escalation,
            rationale,
            &actor,
            ctx.now,
        )?;
        Ok(Some((before, ctx.svc.meta.escalation_status(), directive)))
    })?;
    let Some((before, after, directive)) = done else {
        return out.line(nothing);
    };
    out.line(&format!(
        "Acknowledged: escalation {} → {}.",
        before.as_str(),
        after.as_str()
    ))?;
    out.line(&format!(
        "Recorded as OVERRIDE {} by {}.",
        directive.id,
        safe(&actor)
    ))
}

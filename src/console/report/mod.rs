//! `report --out FILE.html`: one self-contained page (inline SVG drawn by plotters, a style
//! sheet in the page, no scripts, nothing fetched) with the plots a practitioner looks at:
//! a reliability diagram per embedder with data (raw and temperature-calibrated, bin counts),
//! ECE over time, λ_s over time with the escalations marked, the Thompson arms' posteriors
//! per domain, lessons per failure type over time, and the directive timeline.

pub mod plots;

use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};

use super::ConsoleError;
use super::out::Out;
use crate::service::atc::metrics::CalibrationMetrics;
use crate::service::atc::state::{AtcState, ObservationFilter};
use crate::service::epistemic::Belief;
use crate::service::lessons::{FailureType, Lesson};
use crate::service::meta::{Event, EventType};
use crate::service::outcomes::Source;
use crate::service::vocab::{Domain, EmbedderId};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::{beliefs as belief_store, lessons as lesson_store, meta as meta_store};
use crate::tools::App;
use plots::{MarkerKind, Series, YAxis, secs};

/// Time buckets of the ECE-over-time plot.
pub const ECE_BUCKETS: usize = 12;

/// Fewest observations a time bucket needs for its ECE to be plotted (an ECE of a handful of
/// samples is noise).
pub const MIN_BUCKET_SAMPLES: usize = 10;

/// [`plots::PALETTE`] index of raw confidences (vermillion) in every plot.
pub const RAW_COLOR: usize = 5;

/// [`plots::PALETTE`] index of temperature-calibrated confidences (blue) in every plot.
pub const CALIBRATED_COLOR: usize = 0;

/// Everything the report draws, read in one transaction.
pub struct ReportData {
    /// The database, as shown.
    pub database: String,
    /// When the report was made.
    pub made_at: DateTime<Utc>,
    /// The ATC state (observation windows, temperatures, bandits).
    pub atc: AtcState,
    /// The meta-learning log, oldest first.
    pub events: Vec<Event>,
    /// λ_s now.
    pub lambda_s: f64,
    /// Every lesson, oldest first.
    pub lessons: Vec<Lesson>,
    /// The failed attempts the plugin recorded before each lesson (by lesson id; lessons
    /// without any are absent).
    pub attempts: std::collections::HashMap<uuid::Uuid, Vec<crate::store::attempts::Attempt>>,
    /// How many reworded repeats were merged into each lesson (by lesson id; lessons without
    /// any are absent).
    pub recurrences: std::collections::HashMap<uuid::Uuid, u64>,
    /// Every directive, oldest first.
    pub directives: Vec<Directive>,
    /// The escalation status now.
    pub escalation: &'static str,
    /// Every belief with its history, oldest first.
    pub beliefs: Vec<Belief>,
    /// The project's lessons and beliefs sources: calibration of its own judgements.
    pub sources: Vec<crate::ops::outcomes::Assessment>,
}

/// Read what the report draws.
///
/// # Errors
/// [`ConsoleError::Tool`] when the store fails.
pub fn gather(app: &App) -> Result<ReportData, ConsoleError> {
    Ok(app.read_with(|ctx| {
        let (mut ds, _) = directives::list(ctx.db, None, usize::MAX, 0)?;
        ds.reverse();
        let lessons = lesson_store::list(ctx.db, None, true)?;
        let mut attempts = std::collections::HashMap::new();
        for l in &lessons {
            let tried = crate::store::attempts::of_lesson(ctx.db, l.id)?;
            if !tried.is_empty() {
                attempts.insert(l.id, tried);
            }
        }
        Ok(ReportData {
            database: ctx.db_path.to_string(),
            made_at: ctx.now,
            atc: ctx.svc.atc.clone(),
            events: meta_store::all_events(ctx.db)?,
            lambda_s: ctx.svc.meta.lambdas.s(),
            lessons,
            attempts,
            recurrences: crate::store::recurrences::counts(ctx.db)?,
            directives: ds,
            escalation: ctx.svc.meta.escalation_status().as_str(),
            beliefs: belief_store::all(ctx.db)?,
            sources: crate::ops::outcomes::assess_own(ctx.db)?,
        })
    })?)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn bins_of(m: &CalibrationMetrics) -> Vec<plots::Bin> {
    m.bins
        .iter()
        .filter_map(|b| Some((b.mean_confidence?, b.accuracy?, b.count)))
        .collect()
}

/// The reliability diagrams, one per embedder with observations.
fn reliability(d: &ReportData) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for e in EmbedderId::ALL {
        let filter = ObservationFilter {
            embedder_id: Some(e.id()),
            ..ObservationFilter::default()
        };
        let pair = d.atc.metrics(&filter);
        let (Some(raw), Some(cal)) = (pair.raw, pair.calibrated) else {
            continue;
        };
        let title = format!(
            "{} · T = {:.2} · n = {}",
            e.name(),
            d.atc.temperature(e.id()),
            raw.count
        );
        out.push(diagram(&title, "raw", &raw, &cal)?);
    }
    Ok(out)
}

/// One reliability diagram: `raw` (labelled `raw_name`) and `cal` (temperature-calibrated)
/// accuracy against confidence, with the bin counts of `raw`.
fn diagram(
    title: &str,
    raw_name: &str,
    raw: &CalibrationMetrics,
    cal: &CalibrationMetrics,
) -> Result<String, String> {
    let names = [
        format!("{raw_name} · ECE {:.3}", raw.ece),
        format!("temperature-calibrated · ECE {:.3}", cal.ece),
    ];
    let counts: Vec<(f64, f64, usize)> = raw
        .bins
        .iter()
        .map(|b| (b.lower, b.upper, b.count))
        .collect();
    plots::reliability(
        title,
        [&names[0], &names[1]],
        &bins_of(raw),
        &bins_of(cal),
        &counts,
    )
}

/// The reliability diagrams of the project's own judgements, one per source with outcomes:
/// blacklist checks (probability stated against whether the strategy was a repeat) and beliefs
/// (confidence stated against whether the hypothesis was verified).
fn source_reliability(d: &ReportData) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for a in &d.sources {
        let (Some(raw), Some(cal)) = (&a.metrics.raw, &a.metrics.calibrated) else {
            continue;
        };
        let what = match a.source {
            Source::Lessons => "blacklist checks",
            _ => "beliefs",
        };
        let title = format!("{what} · T = {:.2} · n = {}", a.temperature, raw.count);
        out.push(diagram(&title, "as stated", raw, cal)?);
    }
    Ok(out)
}

/// ECE of the observations in equal time buckets, raw and with today's temperatures.
fn ece_over_time(d: &ReportData) -> Result<Option<String>, String> {
    let everything = ObservationFilter::default();
    let all: Vec<_> = d.atc.observations(&everything).collect();
    let (Some(lo), Some(hi)) = (
        all.iter().map(|o| o.timestamp).min(),
        all.iter().map(|o| o.timestamp).max(),
    ) else {
        return Ok(None);
    };
    let width = ((hi - lo).num_microseconds().unwrap_or(i64::MAX) / ECE_BUCKETS as i64).max(1);
    let mut buckets: Vec<Vec<(f64, f64, bool)>> = vec![Vec::new(); ECE_BUCKETS];
    for o in &all {
        let k = ((o.timestamp - lo).num_microseconds().unwrap_or(0) / width) as usize;
        buckets[k.min(ECE_BUCKETS - 1)].push((o.confidence, d.atc.calibrated(o), o.correct));
    }
    let mut raw = Vec::new();
    let mut cal = Vec::new();
    for (k, b) in buckets.iter().enumerate() {
        if b.len() < MIN_BUCKET_SAMPLES {
            continue;
        }
        let mid = secs(lo) + (k as f64 + 0.5) * width as f64 / 1e6;
        if let Ok(m) = CalibrationMetrics::compute(b.iter().map(|s| (s.0, s.2))) {
            raw.push((mid, m.ece));
        }
        if let Ok(m) = CalibrationMetrics::compute(b.iter().map(|s| (s.1, s.2))) {
            cal.push((mid, m.ece));
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    let top = raw.iter().chain(&cal).map(|p| p.1).fold(0.05f64, f64::max) * 1.15;
    let series = [
        Series {
            name: "raw".into(),
            points: raw,
            steps: false,
            color: RAW_COLOR,
        },
        Series {
            name: "temperature-calibrated (current T)".into(),
            points: cal,
            steps: false,
            color: CALIBRATED_COLOR,
        },
    ];
    let y = YAxis {
        desc: "ECE",
        range: 0.0..top,
        counts: false,
    };
    plots::over_time("ECE over time (all embedders)", &y, &series, &[]).map(Some)
}

/// λ_s after every event, with escalations and acknowledgements marked.
fn lambda_over_time(d: &ReportData) -> Result<Option<String>, String> {
    let Some(first) = d.events.first() else {
        return Ok(None);
    };
    let mut points = vec![(secs(first.timestamp), first.lambda_before.s())];
    points.extend(
        d.events
            .iter()
            .map(|e| (secs(e.timestamp), e.lambda_after.s())),
    );
    points.push((secs(d.made_at), d.lambda_s));
    // Drawn in this order: the human escalation last, on top.
    let marks = [
        (EventType::SelfHealing, 2usize),
        (EventType::BayesianEscalation, 1),
        (EventType::HumanEscalation, 5),
    ];
    let kinds: Vec<MarkerKind> = marks
        .iter()
        .map(|&(t, color)| MarkerKind {
            name: t.as_str().to_string(),
            color,
            at: d
                .events
                .iter()
                .filter(|e| e.event_type == t)
                .map(|e| secs(e.timestamp))
                .collect(),
        })
        .filter(|k| !k.at.is_empty())
        .collect();
    let series = [Series {
        name: "λ_s".into(),
        points,
        steps: true,
        color: 0,
    }];
    let y = YAxis {
        desc: "λ_s",
        range: 0.0..1.0,
        counts: false,
    };
    plots::over_time("λ_s over time", &y, &series, &kinds).map(Some)
}

/// The Thompson arms of every domain that has pulls.
fn arms(d: &ReportData) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for domain in Domain::ALL {
        let b = &d.atc.bandits[domain.index()];
        if b.total_pulls() == 0 {
            continue;
        }
        let arms: Vec<(f64, u64, u64)> = b
            .candidates()
            .iter()
            .zip(b.successes().iter().zip(b.failures()))
            .map(|(&c, (&s, &f))| (c, s, f))
            .collect();
        let title = format!("{} · {} pulls", domain.display_name(), b.total_pulls());
        out.push(plots::arms(&title, &arms)?);
    }
    Ok(out)
}

/// Lessons logged so far, per failure type, as steps over time.
fn lessons_over_time(d: &ReportData) -> Result<Option<String>, String> {
    if d.lessons.is_empty() {
        return Ok(None);
    }
    let mut series = Vec::new();
    for (i, ft) in FailureType::ALL.into_iter().enumerate() {
        let mut n = 0.0;
        let points: Vec<(f64, f64)> = d
            .lessons
            .iter()
            .filter(|l| l.failure_type == ft)
            .map(|l| {
                n += 1.0;
                (secs(l.created_at), n)
            })
            .collect();
        if !points.is_empty() {
            series.push(Series {
                name: ft.as_str().into(),
                points,
                steps: true,
                color: i,
            });
        }
    }
    let top = series
        .iter()
        .filter_map(|s| s.points.last().map(|p| p.1))
        .fold(1.0f64, f64::max)
        + 1.0;
    let y = YAxis {
        desc: "lessons",
        range: 0.0..top,
        counts: true,
    };
    plots::over_time("Lessons per failure type (cumulative)", &y, &series, &[]).map(Some)
}

/// The directive history as dots on one row per intervention type.
fn directive_timeline(d: &ReportData) -> Result<Option<String>, String> {
    if d.directives.is_empty() {
        return Ok(None);
    }
    let rows: Vec<&str> = InterventionType::ALL.iter().map(|t| t.as_str()).collect();
    let points: Vec<(f64, usize)> = d
        .directives
        .iter()
        .map(|x| {
            let row = InterventionType::ALL
                .iter()
                .position(|t| *t == x.intervention_type)
                .unwrap_or(0);
            (secs(x.created_at), row)
        })
        .collect();
    plots::timeline("Directive timeline", &rows, &points).map(Some)
}

const STYLE: &str = "
body { font-family: sans-serif; margin: 16px auto; padding: 0 12px; max-width: 1160px;
       color: #222; font-size: 15px; line-height: 1.4; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; margin-top: 30px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; font-size: 14px; }
.grid { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; max-width: 100%; overflow-x: auto; }
figure svg { display: block; border: 1px solid #eee; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 14px; }
td, th { padding: 4px 12px 4px 0; text-align: left; vertical-align: top; }
table.list th { border-bottom: 1px solid #ccc; }
table.list td { border-bottom: 1px solid #eee; }
table.list td.text { min-width: 14em; max-width: 32em; }
td.nowrap { white-space: nowrap; }
code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
pre { background: #f3f3f3; padding: 8px 10px; border-radius: 4px; white-space: pre-wrap;
      word-break: break-all; font-size: 14px; }
.empty { color: #777; font-style: italic; }
.escalated { color: #b00; font-weight: bold; }
.attention { border: 2px solid #b00; border-radius: 6px; padding: 4px 16px; margin: 16px 0;
             background: #fff6f6; }
.pending { border-color: #c80; background: #fffaf0; }
.blocks { color: #b00; }
@media (max-width: 700px) {
  table.list, table.list tbody, table.list tr, table.list td { display: block; }
  table.list tr:first-child { display: none; }
  table.list tr { border-bottom: 1px solid #ccc; padding: 6px 0; }
  table.list td, table.list td.text { border: none; padding: 1px 0; min-width: 0; }
  table.list td::before { content: attr(data-label) \": \"; color: #666; }
}
.lifted { color: #777; }
";

/// Lessons the report lists at most (the newest; `lessons list` shows them all).
pub const MAX_LESSON_ROWS: usize = 200;

/// Beliefs the report lists at most (the most recently changed).
pub const MAX_BELIEF_ROWS: usize = 100;

/// History entries shown per belief at most (the newest).
pub const MAX_BELIEF_HISTORY: usize = 8;

/// `s` as one shell word: as it is when it holds only safe characters, else in single quotes.
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What to check and the command that acknowledges, for an escalation that is not normal.
fn escalation_advice(d: &ReportData) -> Option<String> {
    let ack = format!(
        "meta-utl-mcp --db {} escalations ack --rationale \"what you found and decided\"",
        shell_word(&d.database)
    );
    let show = format!("meta-utl-mcp --db {} escalations", shell_word(&d.database));
    match d.escalation {
        "human_review_required" => Some(format!(
            "<div class=\"attention\"><h2>A person must review: human_review_required</h2>\n\
             <p>Three Bayesian recalibrations of λ in a row could not bring the prediction \
             accuracy back up, so the server stopped trying and waits for you. Check the \
             predictions behind it: are the recorded outcomes right (a mislabelled \
             <code>actual</code> looks exactly like this), did the kind of task change, did an \
             embedder change? The events are listed by</p>\n<pre>{}</pre>\n<p>When you have \
             decided, acknowledge it: this clears the counters and the flag and records your \
             rationale in the directive history.</p>\n<pre>{}</pre></div>\n",
            escape(&show),
            escape(&ack)
        )),
        "bayesian_pending" => Some(format!(
            "<div class=\"attention pending\"><h2>A recalibration failed: bayesian_pending</h2>\n\
             <p>A Bayesian recalibration of λ could not improve the accuracy; the server retries \
             by itself, and asks for a person only after three failures in a row. Nothing to do \
             yet; <code>{}</code> shows the events.</p></div>\n",
            escape(&show)
        )),
        _ => None,
    }
}

/// The lessons as a table: active first, then the newest; with their recurrences (the
/// reworded repeats merged into each, and the tasks where the same strategy failed too).
fn lessons_table(d: &ReportData) -> String {
    if d.lessons.is_empty() {
        return "<p class=\"empty\">No lessons yet (log_lesson_learned).</p>\n".into();
    }
    let mut tasks_of: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for l in &d.lessons {
        tasks_of
            .entry(l.normalised_strategy.as_str())
            .or_default()
            .push(l.task_id.as_str());
    }
    let mut rows: Vec<&Lesson> = d.lessons.iter().collect();
    rows.sort_by(|a, b| {
        b.is_active
            .cmp(&a.is_active)
            .then(b.created_at.cmp(&a.created_at))
    });
    let mut h = String::from(
        "<div class=\"scroll\"><table class=\"list\">\n<tr><th>id</th><th>state</th>\
         <th>project (task)</th><th>strategy that failed</th><th>root cause</th>\
         <th>failure type</th><th>recurrences</th><th>failed attempts</th><th>logged</th></tr>\n",
    );
    for l in rows.iter().take(MAX_LESSON_ROWS) {
        let others: Vec<&str> = tasks_of
            .get(l.normalised_strategy.as_str())
            .map(|t| t.iter().copied().filter(|t| *t != l.task_id).collect())
            .unwrap_or_default();
        let merged = d.recurrences.get(&l.id).map(|n| match n {
            1 => "1 reworded repeat merged".to_string(),
            n => format!("{n} reworded repeats merged"),
        });
        let elsewhere = (!others.is_empty()).then(|| {
            format!(
                "also in {}: {}",
                if others.len() == 1 {
                    "1 other task".to_string()
                } else {
                    format!("{} other tasks", others.len())
                },
                escape(
                    &others
                        .iter()
                        .take(5)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            )
        });
        let recurrences = match [merged, elsewhere]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
        {
            found if found.is_empty() => "—".to_string(),
            found => found.join("; "),
        };
        let tried = d.attempts.get(&l.id).map_or("—".to_string(), |a| {
            let shown: Vec<String> = a
                .iter()
                .take(3)
                .map(|a| {
                    format!(
                        "<code>{}</code>{}",
                        escape(&a.subject.chars().take(80).collect::<String>()),
                        a.exit_status
                            .map(|s| format!(" (exit {s})"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            format!("{}: {}", a.len(), shown.join("; "))
        });
        let (class, state) = if l.is_active {
            ("blocks", "blocks")
        } else {
            ("lifted", "lifted")
        };
        let id = l.id.to_string();
        let _ = writeln!(
            h,
            "<tr><td data-label=\"id\"><code>{}</code></td>\
             <td data-label=\"state\" class=\"{class}\">{state}</td>\
             <td data-label=\"task\" class=\"nowrap\">{}</td>\
             <td data-label=\"strategy\" class=\"text\">{}</td>\
             <td data-label=\"root cause\" class=\"text\">{}</td>\
             <td data-label=\"failure type\">{}</td><td data-label=\"recurrences\">{recurrences}</td>\
             <td data-label=\"failed attempts\" class=\"text\">{tried}</td>\
             <td data-label=\"logged\" class=\"nowrap\">{}</td></tr>",
            &id[..super::lessons::SHORT_ID],
            escape(&l.task_id),
            escape(&l.strategy_description),
            escape(&l.rca_summary),
            l.failure_type.as_str(),
            l.created_at.format("%Y-%m-%d")
        );
    }
    h.push_str("</table></div>\n");
    if d.lessons.len() > MAX_LESSON_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"meta\">{MAX_LESSON_ROWS} of {} lessons shown; \
             <code>meta-utl-mcp lessons list --all</code> lists them all.</p>",
            d.lessons.len()
        );
    }
    h
}

/// The beliefs with their history, the most recently changed first.
fn beliefs_table(d: &ReportData) -> String {
    if d.beliefs.is_empty() {
        return "<p class=\"empty\">No beliefs yet (epistemic_action).</p>\n".into();
    }
    let mut rows: Vec<&Belief> = d.beliefs.iter().collect();
    rows.sort_by_key(|b| std::cmp::Reverse(b.updated_at));
    let mut h = String::from(
        "<div class=\"scroll\"><table class=\"list\">\n<tr><th>belief</th><th>status</th>\
         <th>confidence</th><th>history (oldest first)</th></tr>\n",
    );
    for b in rows.iter().take(MAX_BELIEF_ROWS) {
        let skipped = b.history.len().saturating_sub(MAX_BELIEF_HISTORY);
        let mut history: Vec<String> = b
            .history
            .iter()
            .skip(skipped)
            .map(|e| {
                format!(
                    "{} <b>{}</b> {:.2} → {} {:.2}: {}",
                    e.at.format("%Y-%m-%d %H:%M"),
                    e.action.as_str(),
                    e.input_confidence,
                    e.status_after.as_str(),
                    e.confidence_after,
                    escape(&e.rationale)
                )
            })
            .collect();
        if skipped > 0 {
            history.insert(0, format!("… {skipped} earlier"));
        }
        let _ = writeln!(
            h,
            "<tr><td data-label=\"belief\" class=\"text\">{}</td><td data-label=\"status\">{}</td>\
             <td data-label=\"confidence\">{:.2}</td>\
             <td data-label=\"history\" class=\"text\">{}</td></tr>",
            escape(&b.target),
            b.status.as_str(),
            b.confidence,
            history.join("<br>")
        );
    }
    h.push_str("</table></div>\n");
    if d.beliefs.len() > MAX_BELIEF_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"meta\">{MAX_BELIEF_ROWS} of {} beliefs shown (the most recently \
             changed).</p>",
            d.beliefs.len()
        );
    }
    h
}

/// The page for `d`.
///
/// # Errors
/// A message when a plot cannot be drawn.
pub fn html(d: &ReportData) -> Result<String, String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>meta-utl-mcp report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>meta-utl-mcp report</h1>\n<p class=\"meta\">{} · made {}</p>\n",
        escape(&d.database),
        d.made_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    let esc_class = if d.escalation == "normal" {
        ""
    } else {
        " class=\"escalated\""
    };
    let active = d.lessons.iter().filter(|l| l.is_active).count();
    let everything = ObservationFilter::default();
    let observations = d.atc.observations(&everything).count();
    let _ = write!(
        h,
        "<table>\n<tr><th>λ_s</th><td>{:.3}</td></tr>\n<tr><th>escalation</th><td{esc_class}>{}</td></tr>\n\
         <tr><th>lessons</th><td>{} ({active} active)</td></tr>\n\
         <tr><th>beliefs</th><td>{}</td></tr>\n<tr><th>directives</th><td>{}</td></tr>\n<tr><th>events</th><td>{}</td></tr>\n\
         <tr><th>calibration observations</th><td>{observations}</td></tr>\n</table>\n",
        d.lambda_s,
        d.escalation,
        d.lessons.len(),
        d.beliefs.len(),
        d.directives.len(),
        d.events.len(),
    );
    if let Some(advice) = escalation_advice(d) {
        h.push_str(&advice);
    }
    let _ = write!(
        h,
        "<h2>Lessons</h2>\n<p class=\"meta\">What the agents learned not to do again: an active \
         lesson blocks its strategy for its task (<code>lessons lift ID</code> unblocks it). \
         Recurrences are other tasks where the same strategy failed.</p>\n{}",
        lessons_table(d)
    );
    let _ = write!(
        h,
        "<h2>Beliefs</h2>\n<p class=\"meta\">The agents' shared beliefs, with each action that \
         changed them: the confidence given, and the status and confidence after.</p>\n{}",
        beliefs_table(d)
    );
    let section = |h: &mut String, title: &str, note: &str, figs: Vec<String>, empty: &str| {
        let _ = write!(h, "<h2>{title}</h2>\n<p class=\"meta\">{note}</p>\n");
        if figs.is_empty() {
            let _ = writeln!(h, "<p class=\"empty\">{empty}</p>");
        } else {
            h.push_str("<div class=\"grid\">\n");
            for f in figs {
                let _ = writeln!(h, "<figure>{f}</figure>");
            }
            h.push_str("</div>\n");
        }
    };
    section(
        &mut h,
        "Reliability per embedder",
        "Accuracy against mean confidence in 10 equal-width bins, raw (orange) and after \
         temperature scaling (blue); grey bars and numbers are the bin counts. On the diagonal \
         confidence matches accuracy.",
        reliability(d)?,
        "No calibration observations yet (record_calibration_observations).",
    );
    section(
        &mut h,
        "Reliability of the memory's own judgements",
        "The blacklist's stated probability that a strategy repeats a failed one, against how \
         often it did (checks closed by record_prediction or by a lesson logged after them), \
         and the agents' stated confidence in hypotheses against how often they were verified; \
         as stated (orange) and under the project's temperature for the source (blue).",
        source_reliability(d)?,
        "No closed checks or resolved beliefs yet (close checks with record_prediction).",
    );
    section(
        &mut h,
        "ECE over time",
        &format!(
            "Expected calibration error of the observations in {ECE_BUCKETS} equal time \
             buckets (buckets with fewer than {MIN_BUCKET_SAMPLES} observations left out)."
        ),
        ece_over_time(d)?.into_iter().collect(),
        "Not enough calibration observations yet.",
    );
    section(
        &mut h,
        "λ_s over time",
        "The weight of surprise after each meta-learning event; vertical lines mark operator \
         acknowledgements (self_healing), Bayesian escalations and human escalations, each kind \
         with its own symbol and height near the top.",
        lambda_over_time(d)?.into_iter().collect(),
        "No meta-learning events yet (record_prediction).",
    );
    section(
        &mut h,
        "Thompson arms per domain",
        "Posterior Beta(1 + successes, 1 + failures) of each Level 3 candidate threshold.",
        arms(d)?,
        "No bandit pulls yet (observations with threshold_used).",
    );
    section(
        &mut h,
        "Lessons per failure type",
        "Lessons logged so far, by failure type.",
        lessons_over_time(d)?.into_iter().collect(),
        "No lessons yet (log_lesson_learned).",
    );
    section(
        &mut h,
        "Directive timeline",
        "Every directive-history entry, by intervention type.",
        directive_timeline(d)?.into_iter().collect(),
        "No directives yet.",
    );
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

/// `report --out FILE.html [--force]`: the page, replaced whole ([`crate::files`]).
///
/// # Errors
/// [`ConsoleError`] when the store fails, a plot cannot be drawn, or the file cannot be
/// written.
pub fn run(
    app: &App,
    file: &Path,
    existing: crate::files::Existing,
    database: Option<&Path>,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let d = gather(app)?;
    let page = html(&d).map_err(ConsoleError::Format)?;
    crate::files::replace_whole(file, database, existing, page.as_bytes())?;
    out.line(&format!(
        "Wrote {} ({} KiB): open it in a browser.",
        file.display(),
        page.len().div_ceil(1024)
    ))
}

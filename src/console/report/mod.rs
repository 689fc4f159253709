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
use crate::service::lessons::{FailureType, Lesson};
use crate::service::meta::{Event, EventType};
use crate::service::vocab::{Domain, EmbedderId};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::{lessons as lesson_store, meta as meta_store};
use crate::tools::App;
use plots::{Marker, Series, secs};

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
    /// Every directive, oldest first.
    pub directives: Vec<Directive>,
    /// The escalation status now.
    pub escalation: &'static str,
}

/// Read what the report draws.
///
/// # Errors
/// [`ConsoleError::Tool`] when the store fails.
pub fn gather(app: &App) -> Result<ReportData, ConsoleError> {
    Ok(app.read_with(|ctx| {
        let (mut ds, _) = directives::list(ctx.db, None, usize::MAX, 0)?;
        ds.reverse();
        Ok(ReportData {
            database: ctx.db_path.to_string(),
            made_at: ctx.now,
            atc: ctx.svc.atc.clone(),
            events: meta_store::all_events(ctx.db)?,
            lambda_s: ctx.svc.meta.lambdas.s(),
            lessons: lesson_store::list(ctx.db, None, true)?,
            directives: ds,
            escalation: ctx.svc.meta.escalation_status().as_str(),
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
            "{} · T = {:.2} · n = {} · ECE {:.3} → {:.3}",
            e.name(),
            d.atc.temperature(e.id()),
            raw.count,
            raw.ece,
            cal.ece
        );
        let counts: Vec<(f64, f64, usize)> = raw
            .bins
            .iter()
            .map(|b| (b.lower, b.upper, b.count))
            .collect();
        out.push(plots::reliability(
            &title,
            &bins_of(&raw),
            &bins_of(&cal),
            &counts,
        )?);
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
    plots::over_time(
        "ECE over time (all embedders)",
        "ECE",
        0.0..top,
        &series,
        &[],
        &[],
    )
    .map(Some)
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
    let marks = [
        (EventType::BayesianEscalation, 1usize),
        (EventType::HumanEscalation, 3),
        (EventType::SelfHealing, 2),
    ];
    let markers: Vec<Marker> = d
        .events
        .iter()
        .filter_map(|e| {
            marks.iter().find(|m| m.0 == e.event_type).map(|m| Marker {
                at: secs(e.timestamp),
                color: m.1,
            })
        })
        .collect();
    let legend: Vec<(&str, usize)> = marks
        .iter()
        .filter(|m| d.events.iter().any(|e| e.event_type == m.0))
        .map(|m| (m.0.as_str(), m.1))
        .collect();
    let series = [Series {
        name: "λ_s".into(),
        points,
        steps: true,
        color: 0,
    }];
    plots::over_time("λ_s over time", "λ_s", 0.0..1.0, &series, &markers, &legend).map(Some)
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
    plots::over_time(
        "Lessons per failure type (cumulative)",
        "lessons",
        0.0..top,
        &series,
        &[],
        &[],
    )
    .map(Some)
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
body { font-family: sans-serif; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #666; font-size: 13px; }
.grid { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; }
figure svg { display: block; border: 1px solid #eee; }
table { border-collapse: collapse; font-size: 14px; }
td, th { padding: 3px 12px 3px 0; text-align: left; }
.empty { color: #888; font-style: italic; }
.escalated { color: #b00; font-weight: bold; }
";

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
         <tr><th>directives</th><td>{}</td></tr>\n<tr><th>events</th><td>{}</td></tr>\n\
         <tr><th>calibration observations</th><td>{observations}</td></tr>\n</table>\n",
        d.lambda_s,
        d.escalation,
        d.lessons.len(),
        d.directives.len(),
        d.events.len(),
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
        "The weight of surprise after each meta-learning event; vertical lines mark Bayesian \
         escalations, human escalations and operator resets.",
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

//! `status`: one screen on the database, λ and the lifecycle, the escalation state and what to
//! do about it, calibration per domain, counts and the last activity.

use serde::Serialize;

use super::ConsoleError;
use super::out::{Out, Paint, bytes, safe, when};
use crate::service::atc::state::ObservationFilter;
use crate::service::meta::EscalationStatus;
use crate::service::vocab::Domain;
use crate::store::admin::{self, Stats};
use crate::tools::App;

/// The `status --json` object.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The database file as given (`:memory:` for none).
    pub database: String,
    /// Its size in bytes (a file with its `-wal`; PostgreSQL: the tables with their indexes);
    /// null for `:memory:`.
    pub bytes: Option<u64>,
    /// `sqlite` or `postgresql`: each backend numbers its own schema versions.
    pub backend: &'static str,
    /// The schema version of that backend: SQLite's `PRAGMA user_version` (12 today),
    /// PostgreSQL's `meta_utl.schema_version` (1 today).
    pub schema_version: i64,
    /// The project this console works in, and its rows.
    pub project: ProjectStatus,
    /// λ_s, the weight of surprise, in [0.1, 0.9].
    pub lambda_s: f64,
    /// λ_c = 1 − λ_s.
    pub lambda_c: f64,
    /// infancy, growth or maturity.
    pub lifecycle_stage: &'static str,
    /// Recorded predictions.
    pub interaction_count: u64,
    /// Rolling accuracy of the last 100 predictions; null before any.
    pub accuracy: Option<f64>,
    /// normal, bayesian_pending or human_review_required.
    pub escalation_status: &'static str,
    /// What to do about it, one sentence.
    pub escalation_advice: String,
    /// Calibration per domain with observations.
    pub calibration: Vec<DomainCalibration>,
    /// Calibration of this project's own judgements: the lessons and beliefs sources.
    pub sources: Vec<SourceCalibration>,
    /// Row counts.
    pub counts: Counts,
    /// The newest time any tool wrote (RFC 3339); null on an empty database.
    pub last_activity: Option<String>,
}

/// Calibration of one domain's observations.
#[derive(Debug, Serialize)]
pub struct DomainCalibration {
    /// The domain (lowercase).
    pub domain: &'static str,
    /// Observations of the domain in the windows.
    pub observations: usize,
    /// ECE of the reported confidences.
    pub ece_raw: f64,
    /// ECE after temperature scaling.
    pub ece_calibrated: f64,
    /// The band of the calibrated ECE: Excellent < 0.05, Good < 0.10, Acceptable < 0.15,
    /// Poor < 0.25, else Critical.
    pub band: &'static str,
}

/// Calibration of one source of this project's outcomes (issue 31).
#[derive(Debug, Serialize)]
pub struct SourceCalibration {
    /// `lessons` (closed blacklist checks) or `beliefs` (resolved hypotheses).
    pub source: &'static str,
    /// Resolved outcomes.
    pub outcomes: usize,
    /// ECE of the confidences as stated; null without outcomes.
    pub ece_stated: Option<f64>,
    /// ECE under the source's temperature; null without outcomes.
    pub ece_calibrated: Option<f64>,
    /// The source's temperature (1 until recalibrated).
    pub temperature: f64,
    /// The band of the calibrated ECE; null without outcomes.
    pub band: Option<&'static str>,
    /// When the source stays miscalibrated after recalibration: what a person should look at.
    pub escalation: Option<String>,
}

/// Row counts of `status`.
#[derive(Debug, Serialize)]
pub struct Counts {
    /// Lessons, active or not.
    pub lessons: u64,
    /// Active lessons (blacklisting).
    pub active_lessons: u64,
    /// Beliefs.
    pub beliefs: u64,
    /// Directive-history entries.
    pub directives: u64,
    /// Meta-learning events.
    pub events: u64,
    /// Calibration observations kept.
    pub observations: u64,
    /// Recorded predictions.
    pub predictions: u64,
    /// Vertices.
    pub vertices: u64,
}

fn advice(s: EscalationStatus) -> String {
    match s {
        EscalationStatus::Normal => "nothing to do".into(),
        EscalationStatus::BayesianPending => {
            "a Bayesian recalibration failed; the next one runs by itself (or run \
             trigger_lambda_recalibration); no action needed yet"
                .into()
        }
        EscalationStatus::HumanReviewRequired => {
            "three Bayesian recalibrations failed: review `meta-utl-mcp escalations`, then \
             acknowledge with `meta-utl-mcp escalations ack --rationale \"…\"`"
                .into()
        }
    }
}

/// The console's project in [`Status`].
#[derive(Debug, Serialize)]
pub struct ProjectStatus {
    /// Its name (`(unassigned)` for rows stored before projects).
    pub name: String,
    /// Its lessons, active or not.
    pub lessons: u64,
    /// Its active lessons.
    pub active_lessons: u64,
    /// Its beliefs.
    pub beliefs: u64,
    /// Its directive-history entries.
    pub directives: u64,
    /// Other projects in the database (`console projects` lists them).
    pub other_projects: usize,
    /// Lessons, beliefs and directives stored before projects existed, when this is not that
    /// project: `projects move` gives them one.
    pub unassigned_rows: u64,
}

/// Gather the status.
///
/// # Errors
/// [`ConsoleError::Tool`] when the store fails.
pub fn gather(app: &App) -> Result<Status, ConsoleError> {
    Ok(app.read_with(|ctx| {
        let stats: Stats = admin::stats(ctx.db)?;
        let here = ctx.db.project();
        let projects = crate::store::projects::list(ctx.db)?;
        let mine = projects
            .iter()
            .find(|p| p.name == here)
            .cloned()
            .unwrap_or_default();
        let unassigned = projects
            .iter()
            .find(|p| p.name == crate::project::UNASSIGNED && here != crate::project::UNASSIGNED)
            .map_or(0, |p| p.lessons + p.beliefs + p.directives);
        let project = ProjectStatus {
            name: crate::project::label(here).to_owned(),
            lessons: mine.lessons,
            active_lessons: mine.active_lessons,
            beliefs: mine.beliefs,
            directives: mine.directives,
            other_projects: projects.iter().filter(|p| p.name != here).count(),
            unassigned_rows: unassigned,
        };
        let m = &ctx.svc.meta;
        let calibration = Domain::ALL
            .into_iter()
            .filter_map(|d| {
                let pair = ctx.svc.atc.metrics(&ObservationFilter {
                    domain: Some(d),
                    ..ObservationFilter::default()
                });
                let (raw, cal) = (pair.raw?, pair.calibrated?);
                Some(DomainCalibration {
                    domain: d.as_str(),
                    observations: raw.count,
                    ece_raw: raw.ece,
                    ece_calibrated: cal.ece,
                    band: cal.status().as_str(),
                })
            })
            .collect();
        let mut sources = Vec::new();
        for a in crate::ops::outcomes::assess_own(ctx.db)? {
            sources.push(SourceCalibration {
                source: a.source.as_str(),
                outcomes: a.outcomes.len(),
                ece_stated: a.metrics.raw.as_ref().map(|m| m.ece),
                ece_calibrated: a.metrics.calibrated.as_ref().map(|m| m.ece),
                temperature: a.temperature,
                band: a.status.map(|b| b.as_str()),
                escalation: a.escalation(),
            });
        }
        let path = ctx.db_path.to_string();
        let bytes = stats.bytes.or_else(|| {
            (path != ":memory:").then(|| {
                std::fs::metadata(&path).map_or(0, |m| m.len())
                    + std::fs::metadata(format!("{path}-wal")).map_or(0, |m| m.len())
            })
        });
        let backend = if path.starts_with("postgres://") {
            "postgresql"
        } else {
            "sqlite"
        };
        Ok(Status {
            backend,
            database: path,
            bytes,
            schema_version: stats.schema_version,
            project,
            lambda_s: m.lambdas.s(),
            lambda_c: m.lambdas.c(),
            lifecycle_stage: m.stage().as_str(),
            interaction_count: m.interaction_count,
            accuracy: m.current_accuracy(),
            escalation_status: m.escalation_status().as_str(),
            escalation_advice: advice(m.escalation_status()),
            calibration,
            sources,
            counts: Counts {
                lessons: stats.lessons,
                active_lessons: stats.active_lessons,
                beliefs: stats.beliefs,
                directives: stats.directives,
                events: stats.events,
                observations: stats.observations,
                predictions: stats.predictions,
                vertices: stats.vertices,
            },
            last_activity: stats.last_activity.map(|t| t.to_rfc3339()),
        })
    })?)
}

/// `status`.
///
/// # Errors
/// [`ConsoleError`] when the store or stdout fails.
pub fn run(app: &App, json: bool, out: &mut Out) -> Result<(), ConsoleError> {
    let s = gather(app)?;
    if json {
        return out.json(&s);
    }
    let size = s
        .bytes
        .map(|b| format!("{}, ", bytes(b)))
        .unwrap_or_default();
    out.field(
        "Database",
        &format!(
            "{} ({size}{} schema version {})",
            safe(&s.database),
            if s.backend == "sqlite" {
                "SQLite"
            } else {
                "PostgreSQL"
            },
            s.schema_version
        ),
    )?;
    let p = &s.project;
    out.field(
        "Project",
        &format!(
            "{}: {} lessons ({} active), {} beliefs, {} directives; {} other project{}",
            safe(&p.name),
            p.lessons,
            p.active_lessons,
            p.beliefs,
            p.directives,
            p.other_projects,
            if p.other_projects == 1 { "" } else { "s" }
        ),
    )?;
    if p.unassigned_rows > 0 {
        let warn = out.paint(
            Paint::Warn,
            &format!(
                "{} rows were stored before projects existed and no server sees them",
                p.unassigned_rows
            ),
        );
        out.field(
            "Unassigned",
            &format!(
                "{warn}: meta-utl-mcp projects move --from {:?} --to {:?}",
                crate::project::UNASSIGNED_LABEL,
                safe(&p.name)
            ),
        )?;
    }
    out.field(
        "λ",
        &format!(
            "λ_s {:.3} · λ_c {:.3} ({} stage, {} interactions)",
            s.lambda_s, s.lambda_c, s.lifecycle_stage, s.interaction_count
        ),
    )?;
    let accuracy = s.accuracy.map_or("no predictions yet".to_string(), |a| {
        format!("{a:.3} (last 100 predictions)")
    });
    out.field("Accuracy", &accuracy)?;
    let paint = match s.escalation_status {
        "normal" => Paint::Good,
        "bayesian_pending" => Paint::Warn,
        _ => Paint::Bad,
    };
    let status = out.paint(paint, s.escalation_status);
    out.field("Escalation", &format!("{status}: {}", s.escalation_advice))?;
    if s.calibration.is_empty() {
        out.field("Calibration", "no observations yet")?;
    } else {
        out.field("Calibration", "")?;
        let mut t = out.table(&[
            "domain",
            "observations",
            "ECE raw",
            "ECE calibrated",
            "band",
        ]);
        for c in &s.calibration {
            let paint = match c.band {
                "Excellent" | "Good" => Paint::Good,
                "Acceptable" => Paint::Warn,
                _ => Paint::Bad,
            };
            t.add_row(vec![
                c.domain.to_string(),
                c.observations.to_string(),
                format!("{:.3}", c.ece_raw),
                format!("{:.3}", c.ece_calibrated),
                out.paint(paint, c.band),
            ]);
        }
        out.print_table(&t)?;
    }
    // The project's own judgements (issue 31), in a table like the domains'.
    out.field("Outcomes", "")?;
    let mut t = out.table(&[
        "source",
        "outcomes",
        "ECE stated",
        "ECE calibrated",
        "T",
        "band",
    ]);
    for c in &s.sources {
        let shown = |e: Option<f64>| e.map_or("-".to_string(), |e| format!("{e:.3}"));
        let band = c.band.map_or("-".to_string(), |band| {
            let paint = match band {
                "Excellent" | "Good" => Paint::Good,
                "Acceptable" => Paint::Warn,
                _ => Paint::Bad,
            };
            out.paint(paint, band)
        });
        t.add_row(vec![
            c.source.to_string(),
            c.outcomes.to_string(),
            shown(c.ece_stated),
            shown(c.ece_calibrated),
            format!("{:.2}", c.temperature),
            band,
        ]);
    }
    out.print_table(&t)?;
    for c in &s.sources {
        if let Some(advice) = &c.escalation {
            let warn = out.paint(Paint::Bad, "escalated");
            out.field(c.source, &format!("{warn}: {advice}"))?;
        }
    }
    let c = &s.counts;
    out.field(
        "Counts",
        &format!(
            "{} lessons ({} active), {} beliefs, {} directives, {} events, {} observations, \
             {} predictions, {} vertices",
            c.lessons,
            c.active_lessons,
            c.beliefs,
            c.directives,
            c.events,
            c.observations,
            c.predictions,
            c.vertices
        ),
    )?;
    let last = match &s.last_activity {
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map(|t| when(t.to_utc()))
            .unwrap_or_else(|_| t.clone()),
        None => "none".into(),
    };
    out.field("Last activity", &last)
}

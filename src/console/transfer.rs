//! `export` and `import`: what the agents learned, as JSON Lines, moved between databases.
//!
//! The format (version [`FORMAT_VERSION`]): the first line is a [`Header`]; every other line is
//! one [`Record`], tagged by `type`: `lambda_state` (informational), `lesson` (with its state),
//! `directive`, `belief` (with its whole history), `observation` (a calibration observation
//! of the ATC windows) and `event` (the meta-learning log). Times are RFC 3339 in UTC with
//! microseconds; floats round-trip bit-exactly.
//!
//! Import runs in one write transaction (all or nothing) through the store functions the tools
//! use, and is idempotent: a lesson already present (same id, or same task and normalised
//! strategy) is skipped, a directive by id, an observation equal to one in the windows, an
//! event of the same time, type and detail; a belief merges its history
//! ([`crate::store::beliefs::merge`]). The λ state is not imported: λ on the target is learned
//! from the target's own predictions (a `backup` moves a whole database instead). Recorded
//! predictions, vertices and open predictions are not exported (they are per-machine working
//! state that the target rebuilds from its own traffic).

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::ConsoleError;
use super::out::{Out, progress};
use crate::service::Family;
use crate::service::atc::state::{Observation, ObservationFilter};
use crate::service::atc::thresholds::ThresholdName;
use crate::service::epistemic::{ActionType, Belief, BeliefEvent, BeliefStatus, UncertaintyType};
use crate::service::lessons::{NewLesson, fold_text};
use crate::service::meta::{Event, EventType};
use crate::service::vocab::{Domain, Lambdas};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::{atc as atc_store, beliefs, lessons as lesson_store, meta as meta_store};
use crate::tools::App;

/// The `format` value of the header line.
pub const FORMAT: &str = "meta-utl-mcp-export";

/// The format version this binary writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of an export.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// Always `"header"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version ([`FORMAT_VERSION`]); an import refuses a newer one.
    pub version: u32,
    /// When the export was made.
    pub exported_at: DateTime<Utc>,
    /// The schema version of the database exported (informational).
    pub schema_version: i64,
    /// The program version that wrote it (informational).
    pub generator: String,
}

/// One line after the header.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    /// The source's λ, for reading; never imported.
    LambdaState {
        /// λ_s in [0.1, 0.9].
        lambda_s: f64,
        /// Recorded predictions.
        interaction_count: u64,
        /// infancy, growth or maturity.
        lifecycle_stage: String,
        /// normal, bayesian_pending or human_review_required.
        escalation_status: String,
    },
    /// A lesson with its state.
    Lesson {
        /// Lesson id (kept on import).
        id: Uuid,
        /// Task id as given.
        task_id: String,
        /// The failed strategy.
        strategy: String,
        /// Root-cause summary.
        rca_summary: String,
        /// Failure type (UPPER_SNAKE).
        failure_type: String,
        /// Agent that logged it.
        source_agent: String,
        /// Whether it blocks its strategy.
        is_active: bool,
        /// When it was logged.
        created_at: DateTime<Utc>,
    },
    /// A directive-history entry.
    Directive {
        /// Entry id (kept on import).
        id: Uuid,
        /// The task, or null for the whole server.
        task_id: Option<String>,
        /// MANUAL_FIX, FEEDBACK, OVERRIDE or ESCALATION.
        intervention_type: String,
        /// What happened.
        description: String,
        /// Who.
        actor: String,
        /// When.
        created_at: DateTime<Utc>,
    },
    /// A belief with its history.
    Belief {
        /// Belief id (kept when the target is new here).
        id: Uuid,
        /// The target as first given (its folded form is the key).
        target: String,
        /// active, hypothetical, verified, denied or retracted.
        status: String,
        /// Confidence in [0, 1].
        confidence: f64,
        /// Rationale of the latest change.
        rationale: String,
        /// epistemic, aleatory or mixed; null if never given.
        uncertainty_type: Option<String>,
        /// Related source nodes.
        source_nodes: Vec<Uuid>,
        /// When it was created.
        created_at: DateTime<Utc>,
        /// When it last changed.
        updated_at: DateTime<Utc>,
        /// Every change, oldest first.
        history: Vec<HistoryEvent>,
    },
    /// A calibration observation.
    Observation {
        /// When the outcome was observed.
        timestamp: DateTime<Utc>,
        /// Embedder id 1..=13.
        embedder_id: u8,
        /// Reported confidence in [0, 1].
        confidence: f64,
        /// Whether it was correct.
        correct: bool,
        /// Domain (lowercase).
        domain: String,
        /// The threshold applied, if any.
        threshold_name: Option<String>,
        /// Its value, if any.
        threshold_used: Option<f64>,
    },
    /// A meta-learning event.
    Event {
        /// When.
        timestamp: DateTime<Utc>,
        /// The event type.
        event_type: String,
        /// λ_s before.
        lambda_s_before: f64,
        /// λ_s after.
        lambda_s_after: f64,
        /// predicted − actual of the prediction behind it, if any.
        prediction_error: Option<f64>,
        /// Rolling accuracy then.
        accuracy_avg: Option<f64>,
        /// Part of an escalation.
        escalated: bool,
        /// Domain, if any.
        domain: Option<String>,
        /// Embedder index 0..=12, if any.
        embedder_index: Option<u8>,
        /// What happened.
        detail: String,
    },
}

/// One change in a belief's history.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryEvent {
    /// assert, hypothesize, verify, retract or query.
    pub action: String,
    /// The confidence given with the request.
    pub input_confidence: f64,
    /// Status before; null when the action created the belief.
    pub status_before: Option<String>,
    /// Status after.
    pub status_after: String,
    /// Confidence before; null when the action created the belief.
    pub confidence_before: Option<f64>,
    /// Confidence after.
    pub confidence_after: f64,
    /// The request's rationale.
    pub rationale: String,
    /// When.
    pub at: DateTime<Utc>,
}

fn lesson_record(l: &crate::service::lessons::Lesson) -> Record {
    Record::Lesson {
        id: l.id,
        task_id: l.task_id.clone(),
        strategy: l.strategy_description.clone(),
        rca_summary: l.rca_summary.clone(),
        failure_type: l.failure_type.as_str().into(),
        source_agent: l.source_agent.clone(),
        is_active: l.is_active,
        created_at: l.created_at,
    }
}

fn belief_record(b: &Belief) -> Record {
    Record::Belief {
        id: b.id,
        target: b.target.clone(),
        status: b.status.as_str().into(),
        confidence: b.confidence,
        rationale: b.rationale.clone(),
        uncertainty_type: b.uncertainty_type.map(|u| u.as_str().into()),
        source_nodes: b.source_nodes.clone(),
        created_at: b.created_at,
        updated_at: b.updated_at,
        history: b
            .history
            .iter()
            .map(|e| HistoryEvent {
                action: e.action.as_str().into(),
                input_confidence: e.input_confidence,
                status_before: e.status_before.map(|s| s.as_str().into()),
                status_after: e.status_after.as_str().into(),
                confidence_before: e.confidence_before,
                confidence_after: e.confidence_after,
                rationale: e.rationale.clone(),
                at: e.at,
            })
            .collect(),
    }
}

fn observation_record(o: &Observation) -> Record {
    Record::Observation {
        timestamp: o.timestamp,
        embedder_id: o.embedder_id,
        confidence: o.confidence,
        correct: o.correct,
        domain: o.domain.as_str().into(),
        threshold_name: o.threshold_name.map(|t| t.as_str().into()),
        threshold_used: o.threshold_used,
    }
}

fn event_record(e: &Event) -> Record {
    Record::Event {
        timestamp: e.timestamp,
        event_type: e.event_type.as_str().into(),
        lambda_s_before: e.lambda_before.s(),
        lambda_s_after: e.lambda_after.s(),
        prediction_error: e.prediction_error,
        accuracy_avg: e.accuracy_avg,
        escalated: e.escalated,
        domain: e.domain.map(|d| d.as_str().into()),
        embedder_index: e.embedder_index,
        detail: e.detail.clone(),
    }
}

/// The header and every record of the database, read in one transaction.
///
/// # Errors
/// [`ConsoleError::Tool`] when the store fails.
pub fn collect(app: &App) -> Result<(Header, Vec<Record>), ConsoleError> {
    Ok(app.read_with(|ctx| {
        let stats = crate::store::admin::stats(ctx.db)?;
        let m = &ctx.svc.meta;
        let mut records = vec![Record::LambdaState {
            lambda_s: m.lambdas.s(),
            interaction_count: m.interaction_count,
            lifecycle_stage: m.stage().as_str().into(),
            escalation_status: m.escalation_status().as_str().into(),
        }];
        records.extend(
            lesson_store::list(ctx.db, None, true)?
                .iter()
                .map(lesson_record),
        );
        let (mut entries, _) = directives::list(ctx.db, None, usize::MAX, 0)?;
        entries.reverse();
        records.extend(entries.into_iter().map(|d| Record::Directive {
            id: d.id,
            task_id: d.task_id,
            intervention_type: d.intervention_type.as_str().into(),
            description: d.description,
            actor: d.actor,
            created_at: d.created_at,
        }));
        records.extend(beliefs::all(ctx.db)?.iter().map(belief_record));
        let everything = ObservationFilter::default();
        let mut obs: Vec<&Observation> = ctx.svc.atc.observations(&everything).collect();
        obs.sort_by_key(|o| o.timestamp);
        records.extend(obs.into_iter().map(observation_record));
        records.extend(meta_store::all_events(ctx.db)?.iter().map(event_record));
        let header = Header {
            kind: "header".into(),
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            exported_at: ctx.now,
            schema_version: stats.schema_version,
            generator: format!("meta-utl-mcp {}", env!("CARGO_PKG_VERSION")),
        };
        Ok((header, records))
    })?)
}

/// `export [--out FILE]`: the JSON Lines on stdout or into FILE; a progress bar on stderr
/// when it is a terminal.
///
/// # Errors
/// [`ConsoleError`] when the store or the output fails.
pub fn export(app: &App, file: Option<PathBuf>, out: &mut Out) -> Result<(), ConsoleError> {
    let (header, records) = collect(app)?;
    let bar = progress(records.len() as u64 + 1, "export");
    let write = |w: &mut dyn FnMut(&[u8]) -> Result<(), ConsoleError>| {
        let mut line = serde_json::to_vec(&header).map_err(encode)?;
        line.push(b'\n');
        w(&line)?;
        bar.inc(1);
        for r in &records {
            let mut line = serde_json::to_vec(r).map_err(encode)?;
            line.push(b'\n');
            w(&line)?;
            bar.inc(1);
        }
        Ok::<(), ConsoleError>(())
    };
    let written = file.clone();
    match file {
        None => write(&mut |b| out.raw(b))?,
        Some(path) => {
            let what = format!("writing {}", path.display());
            let f = std::fs::File::create(&path).map_err(ConsoleError::io(&what))?;
            let mut w = std::io::BufWriter::new(f);
            write(&mut |b| w.write_all(b).map_err(ConsoleError::io(&what)))?;
            w.flush().map_err(ConsoleError::io(&what))?;
            w.get_ref().sync_all().map_err(ConsoleError::io(&what))?;
        }
    }
    bar.finish_and_clear();
    match written {
        // On stdout the records are the answer; a file gets a line saying it was written.
        None => Ok(()),
        Some(path) => {
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            out.line(&format!(
                "Wrote {} lines to {} ({}).",
                records.len() + 1,
                path.display(),
                super::out::bytes(size)
            ))
        }
    }
}

fn encode(e: serde_json::Error) -> ConsoleError {
    ConsoleError::Format(format!("cannot encode a record: {e}"))
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// The format version read.
    pub format_version: u32,
    /// Lessons stored.
    pub lessons_added: usize,
    /// Lessons already present (by id, or by task and normalised strategy).
    pub lessons_skipped: usize,
    /// Directive entries appended.
    pub directives_added: usize,
    /// Directive entries already present (by id).
    pub directives_skipped: usize,
    /// Beliefs created.
    pub beliefs_created: usize,
    /// Beliefs already present whose history was merged.
    pub beliefs_merged: usize,
    /// History events appended to beliefs (new and merged).
    pub belief_events_added: usize,
    /// Calibration observations taken in.
    pub observations_added: usize,
    /// Observations already in the windows.
    pub observations_skipped: usize,
    /// Events appended to the log.
    pub events_added: usize,
    /// Events already in the log.
    pub events_skipped: usize,
}

/// The records of an export after validation, ready to store.
#[derive(Default)]
struct Parsed {
    lessons: Vec<(NewLesson, Uuid, bool, DateTime<Utc>)>,
    directives: Vec<Directive>,
    beliefs: Vec<Belief>,
    observations: Vec<Observation>,
    events: Vec<Event>,
}

/// Read an export: the header first (refusing another format or a newer version), then every
/// record, each validated as the tools validate their input.
///
/// # Errors
/// [`ConsoleError::Format`] naming the line and what is wrong.
fn parse(lines: &[String]) -> Result<(u32, Parsed), ConsoleError> {
    let mut numbered = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let Some((n, first)) = numbered.next() else {
        return Err(ConsoleError::Format(
            "the input is empty: an export starts with its header line".into(),
        ));
    };
    let header: Header = serde_json::from_str(first).map_err(|e| {
        ConsoleError::Format(format!(
            "line {n}: not an export header ({e}); an export starts with \
             {{\"type\":\"header\",\"format\":\"{FORMAT}\",\"version\":…}}"
        ))
    })?;
    if header.kind != "header" || header.format != FORMAT {
        return Err(ConsoleError::Format(format!(
            "line {n}: not a {FORMAT} header (type {:?}, format {:?})",
            header.kind, header.format
        )));
    }
    if header.version > FORMAT_VERSION || header.version == 0 {
        return Err(ConsoleError::Format(format!(
            "line {n}: export format version {} is not supported: this binary reads versions 1 \
             to {FORMAT_VERSION}; upgrade meta-utl-mcp to import it",
            header.version
        )));
    }
    let mut p = Parsed::default();
    for (n, line) in numbered {
        let record: Record = serde_json::from_str(line)
            .map_err(|e| ConsoleError::Format(format!("line {n}: {e}")))?;
        add(&mut p, record).map_err(|e| ConsoleError::Format(format!("line {n}: {e}")))?;
    }
    Ok((header.version, p))
}

fn unit(what: &str, v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{what} {v} is outside [0, 1]"))
    }
}

fn domain(s: &str) -> Result<Domain, String> {
    Domain::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Domain::ALL.iter().map(|d| d.as_str()).collect();
        format!("domain {s:?} is not one of {}", names.join(", "))
    })
}

fn lambdas(what: &str, s: f64) -> Result<Lambdas, String> {
    Lambdas::new(s).map_err(|e| format!("{what}: {e}"))
}

fn add(p: &mut Parsed, r: Record) -> Result<(), String> {
    match r {
        Record::LambdaState { .. } => {}
        Record::Lesson {
            id,
            task_id,
            strategy,
            rca_summary,
            failure_type,
            source_agent,
            is_active,
            created_at,
        } => {
            let l = NewLesson::validate(
                &task_id,
                &strategy,
                &rca_summary,
                &failure_type,
                &source_agent,
            )
            .map_err(|e| format!("lesson: {e}"))?;
            p.lessons.push((l, id, is_active, created_at));
        }
        Record::Directive {
            id,
            task_id,
            intervention_type,
            description,
            actor,
            created_at,
        } => {
            let kind = InterventionType::parse(&intervention_type).ok_or_else(|| {
                format!(
                    "directive: intervention_type {intervention_type:?} is not one of \
                     MANUAL_FIX, FEEDBACK, OVERRIDE, ESCALATION"
                )
            })?;
            p.directives.push(Directive {
                id,
                task_id,
                intervention_type: kind,
                description,
                actor,
                created_at,
            });
        }
        Record::Belief {
            id,
            target,
            status,
            confidence,
            rationale,
            uncertainty_type,
            source_nodes,
            created_at,
            updated_at,
            history,
        } => {
            let normalised_target = fold_text(&target);
            if normalised_target.is_empty() {
                return Err("belief: target must not be blank".into());
            }
            let st = |s: &str| BeliefStatus::parse(s).map_err(|e| format!("belief: {e}"));
            let history = history
                .into_iter()
                .map(|e| {
                    Ok(BeliefEvent {
                        action: ActionType::parse(&e.action).map_err(|e| format!("belief: {e}"))?,
                        input_confidence: unit("belief input_confidence", e.input_confidence)?,
                        status_before: e.status_before.as_deref().map(st).transpose()?,
                        status_after: st(&e.status_after)?,
                        confidence_before: e
                            .confidence_before
                            .map(|c| unit("belief confidence_before", c))
                            .transpose()?,
                        confidence_after: unit("belief confidence_after", e.confidence_after)?,
                        rationale: e.rationale,
                        at: e.at,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            p.beliefs.push(Belief {
                id,
                target,
                normalised_target,
                status: st(&status)?,
                confidence: unit("belief confidence", confidence)?,
                rationale,
                uncertainty_type: uncertainty_type
                    .as_deref()
                    .map(UncertaintyType::parse)
                    .transpose()
                    .map_err(|e| format!("belief: {e}"))?,
                source_nodes,
                created_at,
                updated_at,
                history,
            });
        }
        Record::Observation {
            timestamp,
            embedder_id,
            confidence,
            correct,
            domain: d,
            threshold_name,
            threshold_used,
        } => {
            let o = Observation {
                timestamp,
                embedder_id,
                confidence,
                correct,
                domain: domain(&d)?,
                threshold_name: threshold_name
                    .as_deref()
                    .map(|t| {
                        ThresholdName::parse(t)
                            .ok_or_else(|| format!("observation: unknown threshold_name {t:?}"))
                    })
                    .transpose()?,
                threshold_used,
            };
            o.validate().map_err(|e| format!("observation: {e}"))?;
            p.observations.push(o);
        }
        Record::Event {
            timestamp,
            event_type,
            lambda_s_before,
            lambda_s_after,
            prediction_error,
            accuracy_avg,
            escalated,
            domain: d,
            embedder_index,
            detail,
        } => {
            let event_type = EventType::parse(&event_type)
                .ok_or_else(|| format!("event: unknown event_type {event_type:?}"))?;
            if embedder_index
                .is_some_and(|e| usize::from(e) >= crate::service::vocab::NUM_EMBEDDERS)
            {
                return Err("event: embedder_index is outside 0..=12".into());
            }
            p.events.push(Event {
                timestamp,
                event_type,
                prediction_error: prediction_error.filter(|e| e.is_finite()),
                lambda_before: lambdas("event lambda_s_before", lambda_s_before)?,
                lambda_after: lambdas("event lambda_s_after", lambda_s_after)?,
                accuracy_avg: accuracy_avg
                    .map(|a| unit("event accuracy_avg", a))
                    .transpose()?,
                escalated,
                domain: d.as_deref().map(domain).transpose()?,
                embedder_index,
                detail,
            });
        }
    }
    Ok(())
}

/// The bits that make two observations the same, for skipping what is already present.
fn observation_key(
    o: &Observation,
) -> (
    i64,
    u8,
    u64,
    bool,
    &'static str,
    Option<&'static str>,
    Option<u64>,
) {
    (
        o.timestamp.timestamp_micros(),
        o.embedder_id,
        o.confidence.to_bits(),
        o.correct,
        o.domain.as_str(),
        o.threshold_name.map(ThresholdName::as_str),
        o.threshold_used.map(f64::to_bits),
    )
}

/// Store parsed records in one write transaction; returns the counts.
fn store(app: &App, version: u32, p: &Parsed) -> Result<ImportReport, ConsoleError> {
    let total = (p.lessons.len()
        + p.directives.len()
        + p.beliefs.len()
        + p.observations.len()
        + p.events.len()) as u64;
    let bar = progress(total, "import");
    let report = app.write_with(&[Family::Atc], |ctx| {
        let mut r = ImportReport {
            format_version: version,
            ..ImportReport::default()
        };
        for (l, id, active, created) in &p.lessons {
            match lesson_store::import(ctx.db, l, *id, *active, *created)? {
                lesson_store::Import::Added => r.lessons_added += 1,
                lesson_store::Import::Skipped => r.lessons_skipped += 1,
            }
            bar.inc(1);
        }
        for d in &p.directives {
            if directives::import(ctx.db, d)? {
                r.directives_added += 1;
            } else {
                r.directives_skipped += 1;
            }
            bar.inc(1);
        }
        for b in &p.beliefs {
            let m = beliefs::merge(ctx.db, b)?;
            if m.created {
                r.beliefs_created += 1;
            } else {
                r.beliefs_merged += 1;
            }
            r.belief_events_added += m.events_added;
            bar.inc(1);
        }
        let mut present: HashSet<_> = ctx
            .svc
            .atc
            .observations(&ObservationFilter::default())
            .map(observation_key)
            .collect();
        let fresh: Vec<Observation> = p
            .observations
            .iter()
            .filter(|o| present.insert(observation_key(o)))
            .copied()
            .collect();
        r.observations_added = fresh.len();
        r.observations_skipped = p.observations.len() - fresh.len();
        if !fresh.is_empty() {
            ctx.svc
                .atc
                .ingest_batch(&fresh)
                .map_err(|e| crate::tools::ToolError::Internal(e.error.to_string()))?;
            atc_store::insert_observations(ctx.db, &fresh)?;
            atc_store::save(ctx.db, &ctx.svc.atc)?;
        }
        bar.inc(p.observations.len() as u64);
        r.events_added = meta_store::import_events(ctx.db, &p.events)?;
        r.events_skipped = p.events.len() - r.events_added;
        bar.inc(p.events.len() as u64);
        Ok(r)
    })?;
    bar.finish_and_clear();
    Ok(report)
}

/// Read the lines of `file` (`-` for stdin).
fn read_lines(file: &str) -> Result<Vec<String>, ConsoleError> {
    let what = if file == "-" {
        "reading stdin".to_string()
    } else {
        format!("reading {file}")
    };
    let reader: Box<dyn BufRead> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(file).map_err(ConsoleError::io(&what))?,
        ))
    };
    reader
        .lines()
        .collect::<Result<_, _>>()
        .map_err(ConsoleError::io(&what))
}

/// `import FILE|-`: validate the whole export, then store it in one transaction, and report
/// the counts.
///
/// # Errors
/// [`ConsoleError::Format`] for an input that is not a valid export of a supported version
/// (nothing is stored), or the store's failure (nothing is stored).
pub fn import(app: &App, file: &str, json: bool, out: &mut Out) -> Result<(), ConsoleError> {
    let lines = read_lines(file)?;
    let (version, parsed) = parse(&lines)?;
    let r = store(app, version, &parsed)?;
    let records = parsed.lessons.len()
        + parsed.directives.len()
        + parsed.beliefs.len()
        + parsed.observations.len()
        + parsed.events.len();
    let nothing = nothing_imported(&r, records, file);
    if json {
        if let Some(why) = &nothing {
            eprintln!("meta-utl-mcp: {why}");
        }
        return out.json(&r);
    }
    let mut t = out.table(&["records", "added", "already present"]);
    t.add_row(vec![
        "lessons".into(),
        r.lessons_added.to_string(),
        r.lessons_skipped.to_string(),
    ]);
    t.add_row(vec![
        "directives".into(),
        r.directives_added.to_string(),
        r.directives_skipped.to_string(),
    ]);
    t.add_row(vec![
        "beliefs".into(),
        format!(
            "{} (+{} history events)",
            r.beliefs_created, r.belief_events_added
        ),
        format!("{} (merged)", r.beliefs_merged),
    ]);
    t.add_row(vec![
        "observations".into(),
        r.observations_added.to_string(),
        r.observations_skipped.to_string(),
    ]);
    t.add_row(vec![
        "events".into(),
        r.events_added.to_string(),
        r.events_skipped.to_string(),
    ]);
    out.line(&format!("Imported (export format version {version}):"))?;
    out.print_table(&t)?;
    match nothing {
        Some(why) => out.line(&why),
        None => Ok(()),
    }
}

/// Why nothing was imported, when nothing was: the export held no records (made from an
/// empty or mistyped database), or all of them were here already.
fn nothing_imported(r: &ImportReport, records: usize, file: &str) -> Option<String> {
    let added = r.lessons_added
        + r.directives_added
        + r.beliefs_created
        + r.belief_events_added
        + r.observations_added
        + r.events_added;
    if added > 0 {
        return None;
    }
    let source = if file == "-" { "the input" } else { file };
    Some(if records == 0 {
        format!(
            "Nothing was imported: {source} holds no lessons, directives, beliefs, observations \
             or events (an export of an empty database: was `export` given the right --db?)."
        )
    } else {
        format!("Nothing was imported: all {records} records of {source} are here already.")
    })
}

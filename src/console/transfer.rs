//! `export` and `import`: what the agents learned, as JSON Lines, moved between databases.
//!
//! The format (version [`FORMAT_VERSION`]): the first line is a [`Header`], the last a
//! [`Trailer`] (record counts and the sha256 of every byte before it); every line between is
//! one [`Record`], tagged by `type`: `lambda_state` (informational), `lesson` (with its state),
//! `recurrence` (a reworded repeat merged into a lesson, after the lessons), `directive`, `belief` (with its whole history), `observation` (a calibration observation
//! of the ATC windows) and `event` (the meta-learning log). Times are RFC 3339 in UTC with
//! microseconds; floats round-trip bit-exactly.
//!
//! Import reads and validates the whole file first (records as the tools check their input;
//! the trailer, without which the file is refused unless `--partial`), then stores it in
//! transactions of at most [`IMPORT_STEP`] through the store functions the tools use, and is
//! idempotent (so an interrupted import is completed by running it again): a lesson already present (same id, or same task and normalised
//! strategy) is skipped, a recurrence by id (it joins its lesson, or the lesson here of the
//! same task and strategy, else becomes a lesson of its own), a directive by id, an observation equal to one in the windows, an
//! event of the same time, type and detail; a belief merges its history
//! ([`crate::store::beliefs::merge`]). The λ state is not imported: λ on the target is learned
//! from the target's own predictions (a `backup` moves a whole database instead). Recorded
//! predictions, vertices and open predictions are not exported (they are per-machine working
//! state that the target rebuilds from its own traffic), nor are blacklist checks kept as
//! predictions and the lessons and beliefs sources' temperatures (issue 31), for the same reason
//! as λ: the target calibrates from its own outcomes. Resolved beliefs travel with the beliefs,
//! so the beliefs source is whole on the target.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use sha2::{Digest, Sha256};

use super::ConsoleError;
use super::out::{Out, progress};
use crate::files::{Existing, Staged};
use crate::service::CachedFamily;
use crate::service::atc::state::{Observation, ObservationFilter};
use crate::service::atc::thresholds::ThresholdName;
use crate::service::epistemic::{ActionType, Belief, BeliefEvent, BeliefStatus, UncertaintyType};
use crate::service::lessons::{NewLesson, TaskKey, fold_text};
use crate::service::meta::{Event, EventType};
use crate::service::vocab::{Domain, Lambdas};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::recurrences::{self, Recurrence};
use crate::store::{Db, atc as atc_store, beliefs, lessons as lesson_store, meta as meta_store};
use crate::tools::App;

/// The `format` value of the header line.
pub const FORMAT: &str = "meta-utl-mcp-export";

/// The format version this binary writes and the newest it reads. Version 2 added the
/// [`Trailer`]; a version 1 export has none, so it is read only with `--partial`. Version 3
/// added each lesson's, directive's and belief's `project`. Version 4 added `recurrence`
/// records; older exports have none and are read as before.
pub const FORMAT_VERSION: u32 = 4;

/// The longest line an import reads, as the server's longest request line.
pub const MAX_LINE_BYTES: usize = crate::server::MAX_LINE_BYTES;

/// The last line of an export (format version 2): how many records precede it and the
/// sha256 of every byte before it, so that an import knows the file is whole.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trailer {
    /// Always `"trailer"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The record lines between the header and the trailer.
    pub records: u64,
    /// The records per `type`.
    pub counts: BTreeMap<String, u64>,
    /// sha256 (lowercase hex) of every byte before the trailer line, header included.
    pub sha256: String,
}

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
        /// The project it belongs to (`""`: stored before projects existed). Absent in
        /// exports before format version 3: imported into the importing console's project.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
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
    /// A recurrence: a reworded repeat of a lesson, merged into it (format version 4).
    Recurrence {
        /// The project it belongs to, its lesson's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
        /// Recurrence id (kept on import).
        id: Uuid,
        /// The lesson it was merged into.
        lesson_id: Uuid,
        /// Task id as that call gave it.
        task_id: String,
        /// The strategy as that call gave it.
        strategy: String,
        /// That call's root-cause summary.
        rca_summary: String,
        /// That call's failure type (UPPER_SNAKE).
        failure_type: String,
        /// Agent that logged it.
        source_agent: String,
        /// contains, contained_in or similar.
        match_type: String,
        /// The matcher's score, in [0, 1].
        score: f64,
        /// When it was logged.
        recorded_at: DateTime<Utc>,
    },
    /// A directive-history entry.
    Directive {
        /// The project it belongs to (`""`: stored before projects existed). Absent in
        /// exports before format version 3: imported into the importing console's project.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
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
        /// The project it belongs to (`""`: stored before projects existed). Absent in
        /// exports before format version 3: imported into the importing console's project.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
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

impl Record {
    /// The record's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::LambdaState { .. } => "lambda_state",
            Record::Lesson { .. } => "lesson",
            Record::Recurrence { .. } => "recurrence",
            Record::Directive { .. } => "directive",
            Record::Belief { .. } => "belief",
            Record::Observation { .. } => "observation",
            Record::Event { .. } => "event",
        }
    }
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

fn lesson_record(project: &str, l: &crate::service::lessons::Lesson) -> Record {
    Record::Lesson {
        project: Some(project.to_owned()),
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

fn recurrence_record(project: &str, r: &Recurrence) -> Record {
    Record::Recurrence {
        project: Some(project.to_owned()),
        id: r.id,
        lesson_id: r.lesson_id,
        task_id: r.task_id.clone(),
        strategy: r.strategy_description.clone(),
        rca_summary: r.rca_summary.clone(),
        failure_type: r.failure_type.as_str().into(),
        source_agent: r.source_agent.clone(),
        match_type: r.match_type.as_str().into(),
        score: r.score,
        recorded_at: r.recorded_at,
    }
}

fn belief_record(project: &str, b: &Belief) -> Record {
    Record::Belief {
        project: Some(project.to_owned()),
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
        // Every project's rows, each record naming its project.
        for project in crate::store::projects::list(ctx.db)? {
            let name = project.name.as_str();
            let db = ctx.db.scoped(name);
            records.extend(
                lesson_store::list(&db, None, true)?
                    .iter()
                    .map(|l| lesson_record(name, l)),
            );
            records.extend(
                recurrences::all(&db)?
                    .iter()
                    .map(|r| recurrence_record(name, r)),
            );
            let (mut entries, _) = directives::list(&db, None, usize::MAX, 0)?;
            entries.reverse();
            records.extend(entries.into_iter().map(|d| Record::Directive {
                project: Some(name.to_owned()),
                id: d.id,
                task_id: d.task_id,
                intervention_type: d.intervention_type.as_str().into(),
                description: d.description,
                actor: d.actor,
                created_at: d.created_at,
            }));
            records.extend(beliefs::all(&db)?.iter().map(|b| belief_record(name, b)));
        }
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

/// `export [--out FILE] [--force]`: the JSON Lines on stdout or into FILE, ending with the
/// [`Trailer`]; a progress bar on stderr when it is a terminal. FILE is replaced whole
/// ([`crate::files`]): refused when it is the database (`database`) or one of its files, an
/// SQLite file or a symbolic link, or exists without `force`.
///
/// # Errors
/// [`ConsoleError`] when the store or the output fails, or FILE is refused.
pub fn export(
    app: &App,
    file: Option<PathBuf>,
    existing: Existing,
    database: Option<&Path>,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let mut staged = file
        .as_deref()
        .map(|f| Staged::create(f, database, existing))
        .transpose()?;
    let (header, records) = collect(app)?;
    let bar = progress(records.len() as u64 + 2, "export");
    let mut hasher = Sha256::new();
    let mut counts = BTreeMap::new();
    let mut emit = |bytes: &[u8]| -> Result<(), ConsoleError> {
        match staged.as_mut() {
            Some(s) => s.write_all(bytes).map_err(ConsoleError::from),
            None => out.raw(bytes),
        }
    };
    let mut line = serde_json::to_vec(&header).map_err(encode)?;
    line.push(b'\n');
    hasher.update(&line);
    emit(&line)?;
    bar.inc(1);
    for r in &records {
        let mut line = json_line(r)?;
        line.push(b'\n');
        hasher.update(&line);
        emit(&line)?;
        *counts.entry(r.kind().to_string()).or_insert(0u64) += 1;
        bar.inc(1);
    }
    let trailer = Trailer {
        kind: "trailer".into(),
        records: records.len() as u64,
        counts,
        sha256: crate::files::hex(&hasher.finalize()),
    };
    let mut line = serde_json::to_vec(&trailer).map_err(encode)?;
    line.push(b'\n');
    emit(&line)?;
    if let Some(s) = staged {
        s.commit(database, existing)?;
    }
    bar.finish_and_clear();
    match file {
        // On stdout the records are the answer; a file gets a line saying it was written.
        None => Ok(()),
        Some(path) => {
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            out.line(&format!(
                "Wrote {} lines to {} ({}).",
                records.len() + 2,
                path.display(),
                super::out::bytes(size)
            ))
        }
    }
}

/// A record as one line of JSON, with the C1 controls (U+0080–U+009F) and DEL escaped as
/// `\u00XX`: still the same JSON, but safe to print on a terminal (serde_json escapes only
/// U+0000–U+001F).
fn json_line(r: &Record) -> Result<Vec<u8>, ConsoleError> {
    let text = serde_json::to_string(r).map_err(encode)?;
    Ok(super::out::escape_json_controls(&text)
        .into_owned()
        .into_bytes())
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
    /// Recurrences stored with their lesson.
    pub recurrences_added: usize,
    /// Recurrences already present (by id).
    pub recurrences_skipped: usize,
    /// Recurrences whose lesson is neither here nor in the export, stored as lessons of their
    /// own.
    pub recurrences_as_lessons: usize,
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
    /// Secrets found in the records' text and replaced by `[REDACTED:kind]` markers before
    /// anything was stored (as the tools do).
    pub secrets_redacted: usize,
}

/// The `import --json` object: the counts, and whether the export was whole.
#[derive(Serialize)]
struct ImportJson<'a> {
    #[serde(flatten)]
    report: &'a ImportReport,
    #[serde(flatten)]
    completeness: &'a Completeness,
}

/// The records of an export after validation, ready to store.
#[derive(Default)]
struct Parsed {
    lessons: Vec<(Scope, ImportedLesson)>,
    recurrences: Vec<(Scope, Recurrence)>,
    directives: Vec<(Scope, Directive)>,
    beliefs: Vec<(Scope, Belief)>,
    observations: Vec<Observation>,
    events: Vec<Event>,
    /// Secrets replaced in the records' text, as the tools replace them in a call.
    redacted: usize,
}

/// A lesson record as imported: the lesson, its id, whether it is active, when it was logged.
type ImportedLesson = (NewLesson, Uuid, bool, DateTime<Utc>);

/// The project a record names (`None`: an export from before projects, stored in the
/// importing console's project).
type Scope = Option<String>;

/// A record's `project`, checked as a project name (`""` is the unassigned project).
fn scope(project: Option<String>) -> Result<Scope, String> {
    match project {
        None => Ok(None),
        Some(p) if p.is_empty() => Ok(Some(p)),
        Some(p) if p.trim() != p => Err(format!(
            "project {p:?} has surrounding spaces; names are stored trimmed"
        )),
        Some(p) => crate::project::check_name(&p)
            .map(Some)
            .map_err(|e| format!("project: {e}")),
    }
}

/// How much of an export was read, and whether it is known to be whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Completeness {
    /// Whether the trailer was found and matched (counts and checksum).
    pub complete: bool,
    /// The record lines read (the λ state line included).
    pub records_read: u64,
    /// Why the export is not known to be whole, when it is not (read with `--partial`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
}

/// Read an export from `reader`: the header first (refusing another format, a newer version or
/// a newer schema), then every record, each validated as the tools validate their input, then
/// the trailer, whose counts and checksum must match what was read. Without a trailer (a file
/// cut short, or an export of format version 1) the export is refused unless `partial`; an
/// incomplete last line is then left out. Lines are at most [`MAX_LINE_BYTES`] long.
///
/// # Errors
/// [`ConsoleError::Format`] naming the line and what is wrong; [`ConsoleError::Io`].
fn parse(
    reader: &mut dyn BufRead,
    what: &str,
    partial: bool,
    now: DateTime<Utc>,
) -> Result<(u32, Parsed, Completeness), ConsoleError> {
    let bad = |n: usize, m: String| ConsoleError::Format(format!("line {n}: {m}"));
    let mut hasher = Sha256::new();
    let mut buf = Vec::new();
    let mut n = 0usize;
    let mut header: Option<Header> = None;
    let mut p = Parsed::default();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut records = 0u64;
    let mut trailer: Option<(usize, Trailer, String)> = None;
    let mut cut_short = None;
    loop {
        buf.clear();
        let got = (&mut *reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(ConsoleError::io(what))?;
        if got == 0 {
            break;
        }
        n += 1;
        let whole = buf.last() == Some(&b'\n');
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if body.len() > MAX_LINE_BYTES {
            return Err(bad(
                n,
                format!(
                    "the line is longer than {} MiB, the longest an export line may be; \
                     this is not an export of meta-utl-mcp",
                    MAX_LINE_BYTES / (1024 * 1024)
                ),
            ));
        }
        let before = hasher.clone();
        hasher.update(&buf);
        let text = std::str::from_utf8(body)
            .map_err(|_| bad(n, "the line is not valid UTF-8".into()))?
            .trim();
        if text.is_empty() {
            continue;
        }
        if let Some((t, _, _)) = &trailer {
            return Err(bad(
                n,
                format!("text after the trailer of line {t}; an export ends with its trailer"),
            ));
        }
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) if !whole => {
                cut_short = Some(n);
                break;
            }
            Err(e) => return Err(bad(n, e.to_string())),
        };
        let Some(h) = &header else {
            header = Some(read_header(n, value)?);
            continue;
        };
        if value.get("type").and_then(|t| t.as_str()) == Some("trailer") {
            let t: Trailer = serde_json::from_value(value)
                .map_err(|e| bad(n, format!("not a valid trailer ({e})")))?;
            trailer = Some((n, t, crate::files::hex(&before.finalize())));
            continue;
        }
        let _ = h;
        if let Some(field) = nul_field(&value, &mut Vec::new()) {
            return Err(bad(
                n,
                format!(
                    "field '{field}' contains the NUL character (U+0000), which no text field \
                     may hold"
                ),
            ));
        }
        // What the tools would never have stored: secrets, replaced by their markers.
        let (cleaned, found) = crate::tools::redaction::redact_value(&value);
        p.redacted += found.len();
        let value = cleaned.unwrap_or(value);
        let record: Record = serde_json::from_value(value).map_err(|e| bad(n, e.to_string()))?;
        *counts.entry(record.kind().to_string()).or_insert(0) += 1;
        records += 1;
        add(&mut p, record, now).map_err(|e| bad(n, e))?;
    }
    let Some(header) = header else {
        return Err(ConsoleError::Format(
            "the input is empty: an export starts with its header line".into(),
        ));
    };
    let reason = match (&trailer, cut_short) {
        (Some((t, trailer, sha)), _) => {
            if trailer.records != records || trailer.counts != counts {
                return Err(bad(
                    *t,
                    format!(
                        "the trailer counts {} records ({:?}) but {records} were read ({counts:?}): \
                         the file was changed after it was exported",
                        trailer.records, trailer.counts
                    ),
                ));
            }
            if !trailer.sha256.eq_ignore_ascii_case(sha) {
                return Err(bad(
                    *t,
                    "the checksum in the trailer does not match the lines before it: the file \
                     was changed after it was exported; export it again"
                        .into(),
                ));
            }
            None
        }
        (None, Some(cut)) => Some(format!(
            "it ends in the middle of line {cut} (the file was cut short); that line was left out"
        )),
        (None, None) if header.version < 2 => Some(format!(
            "it is an export of format version {}, written before exports ended with a \
             trailer, so whether it is whole cannot be known",
            header.version
        )),
        (None, None) => Some(
            "it has no trailer line: the file was cut short, or it was not written whole".into(),
        ),
    };
    if let Some(reason) = &reason
        && !partial
    {
        return Err(ConsoleError::Format(format!(
            "{what}: not known to be a whole export: {reason}. Nothing was imported. If you \
             know it is what you want, import it with --partial ({records} records would be read)"
        )));
    }
    Ok((
        header.version,
        p,
        Completeness {
            complete: reason.is_none(),
            records_read: records,
            partial_reason: reason,
        },
    ))
}

/// The header line: our format, a version this binary reads, a schema not newer than ours.
fn read_header(n: usize, value: serde_json::Value) -> Result<Header, ConsoleError> {
    let header: Header = serde_json::from_value(value).map_err(|e| {
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
    let supported = crate::store::SCHEMA_VERSION;
    if !(1..=supported).contains(&header.schema_version) {
        return Err(ConsoleError::Format(format!(
            "line {n}: the export claims database schema version {}, but this binary knows \
             versions 1 to {supported}; upgrade meta-utl-mcp to import it",
            header.schema_version
        )));
    }
    Ok(header)
}

/// The path of the first string in `v` holding U+0000, if any.
fn nul_field(v: &serde_json::Value, path: &mut Vec<String>) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) if s.contains('\0') => Some(path.join(".")),
        Value::Object(m) => m.iter().find_map(|(k, x)| {
            path.push(k.clone());
            let found = nul_field(x, path);
            path.pop();
            found
        }),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| {
            let last = path.pop().unwrap_or_default();
            path.push(format!("{last}[{i}]"));
            let found = nul_field(x, path);
            path.pop();
            path.push(last);
            found
        }),
        _ => None,
    }
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

/// How far ahead of this machine's clock a stored time may be, as the tools allow an
/// observation's timestamp.
const MAX_SKEW: chrono::TimeDelta =
    chrono::TimeDelta::seconds(crate::tools::atc::MAX_CLOCK_SKEW_SECONDS);

/// A time the server could have written: not after `now` (plus the tools' clock skew), and
/// for the times the server takes from its own clock (`since_epoch`), not before 1970.
fn time(what: &str, t: DateTime<Utc>, now: DateTime<Utc>, since_epoch: bool) -> Result<(), String> {
    if t > now + MAX_SKEW {
        return Err(format!(
            "{what} {} is in the future (this machine's clock reads {})",
            t.to_rfc3339(),
            now.to_rfc3339()
        ));
    }
    if since_epoch && t < DateTime::UNIX_EPOCH {
        return Err(format!("{what} {} is before 1970", t.to_rfc3339()));
    }
    Ok(())
}

/// A text field as the tools accept it: 1 to `max` characters, not only whitespace.
fn text(what: &'static str, v: &str, max: usize) -> Result<(), String> {
    crate::service::lessons::check_text(what, v, max).map_err(|e| e.to_string())
}

/// A belief's history as the tools write it (also after merges): not empty; an event's status
/// and confidence before are both given or both absent (the event that created it); at least
/// one created it; the latest event leads to the belief's status and confidence at its
/// `updated_at`, not before `created_at`.
fn belief_history(b: &Belief) -> Result<(), String> {
    let Some(last_at) = b.history.iter().map(|e| e.at).max() else {
        return Err("belief: history is empty; every belief has the event that created it".into());
    };
    if let Some(i) = b
        .history
        .iter()
        .position(|e| e.status_before.is_some() != e.confidence_before.is_some())
    {
        return Err(format!(
            "belief: history[{i}] gives only one of status_before and confidence_before"
        ));
    }
    if !b.history.iter().any(|e| e.status_before.is_none()) {
        return Err("belief: history has no event that created the belief".into());
    }
    if b.created_at > b.updated_at || b.updated_at != last_at {
        return Err(format!(
            "belief: created_at {} / updated_at {} do not match its history (latest event at {})",
            b.created_at.to_rfc3339(),
            b.updated_at.to_rfc3339(),
            last_at.to_rfc3339()
        ));
    }
    let leads_to_state = b.history.iter().filter(|e| e.at == last_at).any(|e| {
        e.status_after == b.status && e.confidence_after.to_bits() == b.confidence.to_bits()
    });
    if !leads_to_state {
        return Err(format!(
            "belief: its status {} and confidence {} are not where its latest event leads",
            b.status.as_str(),
            b.confidence
        ));
    }
    Ok(())
}

fn add(p: &mut Parsed, r: Record, now: DateTime<Utc>) -> Result<(), String> {
    use crate::service::epistemic::{MAX_RATIONALE_CHARS, MAX_TARGET_CHARS};
    use crate::service::lessons::{MAX_DESCRIPTION_CHARS, MAX_ID_CHARS};
    match r {
        Record::LambdaState { .. } => {}
        Record::Lesson {
            project,
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
            time("lesson created_at", created_at, now, true)?;
            let project = scope(project).map_err(|e| format!("lesson: {e}"))?;
            p.lessons.push((project, (l, id, is_active, created_at)));
        }
        Record::Recurrence {
            project,
            id,
            lesson_id,
            task_id,
            strategy,
            rca_summary,
            failure_type,
            source_agent,
            match_type,
            score,
            recorded_at,
        } => {
            let l = NewLesson::validate(
                &task_id,
                &strategy,
                &rca_summary,
                &failure_type,
                &source_agent,
            )
            .map_err(|e| format!("recurrence: {e}"))?;
            let match_type = recurrences::match_type_named(&match_type).ok_or_else(|| {
                format!(
                    "recurrence: match_type {match_type:?} is not one of contains, \
                     contained_in, similar"
                )
            })?;
            let score = unit("recurrence score", score)?;
            time("recurrence recorded_at", recorded_at, now, true)?;
            let project = scope(project).map_err(|e| format!("recurrence: {e}"))?;
            p.recurrences.push((
                project,
                Recurrence {
                    id,
                    lesson_id,
                    task_id: l.task_id,
                    strategy_description: l.strategy_description,
                    rca_summary: l.rca_summary,
                    failure_type: l.failure_type,
                    source_agent: l.source_agent,
                    match_type,
                    score,
                    recorded_at,
                },
            ));
        }
        Record::Directive {
            project,
            id,
            task_id,
            intervention_type,
            description,
            actor,
            created_at,
        } => {
            let kind = InterventionType::parse(&intervention_type).ok_or_else(|| {
                format!(
                    "directive: intervention_type {intervention_type:?} is not one of {}",
                    <InterventionType as strum::VariantNames>::VARIANTS.join(", ")
                )
            })?;
            if let Some(t) = &task_id {
                text("task_id", t, MAX_ID_CHARS).map_err(|e| format!("directive: {e}"))?;
            }
            text("description", &description, MAX_DESCRIPTION_CHARS)
                .map_err(|e| format!("directive: {e}"))?;
            text("actor", &actor, MAX_ID_CHARS).map_err(|e| format!("directive: {e}"))?;
            time("directive created_at", created_at, now, true)?;
            let project = scope(project).map_err(|e| format!("directive: {e}"))?;
            p.directives.push((
                project,
                Directive {
                    id,
                    task_id,
                    intervention_type: kind,
                    description,
                    actor,
                    created_at,
                },
            ));
        }
        Record::Belief {
            project,
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
            text("target", &target, MAX_TARGET_CHARS).map_err(|e| format!("belief: {e}"))?;
            text("rationale", &rationale, MAX_RATIONALE_CHARS)
                .map_err(|e| format!("belief: {e}"))?;
            time("belief created_at", created_at, now, true)?;
            time("belief updated_at", updated_at, now, true)?;
            for (i, e) in history.iter().enumerate() {
                text("history rationale", &e.rationale, MAX_RATIONALE_CHARS)
                    .map_err(|m| format!("belief: history[{i}]: {m}"))?;
                time("belief history at", e.at, now, true)?;
            }
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
            let b = Belief {
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
            };
            belief_history(&b)?;
            let project = scope(project).map_err(|e| format!("belief: {e}"))?;
            p.beliefs.push((project, b));
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
            time("observation timestamp", timestamp, now, false)?;
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
            time("event timestamp", timestamp, now, true)?;
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

/// How long one of an import's write transactions may run: a server writing meanwhile waits
/// at most about this long (plus the commit) for each.
pub const IMPORT_STEP: std::time::Duration = std::time::Duration::from_millis(25);

/// The pause after each of an import's transactions. Without it a server waiting for the lock
/// (SQLite's busy handler sleeps between attempts, up to 100 ms) lost the race to the import's
/// next transaction again and again: 5.8 s of waiting during a 10^5-row import.
pub const IMPORT_PAUSE: std::time::Duration = std::time::Duration::from_millis(25);

/// Observations or events stored per step of an import's batch loop.
const CHUNK: usize = 500;

/// One unit of an import's work, stored inside one transaction.
enum Item<'a> {
    Lesson(&'a (Scope, ImportedLesson)),
    /// A recurrence, with its lesson's task key and normalised strategy in the export.
    Recurrence(&'a (Scope, Recurrence), Option<(&'a TaskKey, &'a str)>),
    Directive(&'a (Scope, Directive)),
    Belief(&'a (Scope, Belief)),
    Observations(&'a [Observation]),
    Events(&'a [Event]),
}

impl Item<'_> {
    fn size(&self) -> u64 {
        match self {
            Item::Observations(o) => o.len() as u64,
            Item::Events(e) => e.len() as u64,
            _ => 1,
        }
    }
}

/// Store one item inside the transaction of `ctx`, counting it in `r`.
fn store_item(
    ctx: &mut crate::tools::WriteCtx<'_>,
    item: &Item<'_>,
    r: &mut ImportReport,
) -> Result<(), crate::tools::ToolError> {
    // A record without a project goes to the importing console's (the app's store's).
    let here = ctx.db.project();
    let db = ctx.db;
    fn in_project<'a>(db: &Db<'a>, here: &'a str, p: &'a Scope) -> Db<'a> {
        db.scoped(p.as_deref().unwrap_or(here))
    }
    match item {
        Item::Lesson((p, (l, id, active, created))) => {
            match lesson_store::import(&in_project(db, here, p), l, *id, *active, *created)? {
                lesson_store::Import::Added => r.lessons_added += 1,
                lesson_store::Import::Skipped => r.lessons_skipped += 1,
            }
        }
        Item::Recurrence((p, rec), lesson) => {
            match recurrences::import(&in_project(db, here, p), rec, *lesson)? {
                recurrences::Import::Added => r.recurrences_added += 1,
                recurrences::Import::Skipped => r.recurrences_skipped += 1,
                recurrences::Import::AsLesson => r.recurrences_as_lessons += 1,
            }
        }
        Item::Directive((p, d)) => {
            if directives::import(&in_project(db, here, p), d)? {
                r.directives_added += 1;
            } else {
                r.directives_skipped += 1;
            }
        }
        Item::Belief((p, b)) => {
            let m = beliefs::merge(&in_project(db, here, p), b)?;
            if m.created {
                r.beliefs_created += 1;
            } else {
                r.beliefs_merged += 1;
            }
            r.belief_events_added += m.events_added;
        }
        Item::Observations(chunk) => {
            let mut present: HashSet<_> = ctx
                .svc
                .atc
                .observations(&ObservationFilter::default())
                .map(observation_key)
                .collect();
            let fresh: Vec<Observation> = chunk
                .iter()
                .filter(|o| present.insert(observation_key(o)))
                .copied()
                .collect();
            r.observations_added += fresh.len();
            r.observations_skipped += chunk.len() - fresh.len();
            if !fresh.is_empty() {
                ctx.svc
                    .atc
                    .ingest_batch(&fresh)
                    .map_err(|e| crate::tools::ToolError::Internal(e.error.to_string()))?;
                atc_store::insert_observations(ctx.db, &fresh)?;
                atc_store::save(ctx.db, &ctx.svc.atc)?;
            }
        }
        Item::Events(chunk) => {
            let added = meta_store::import_events(ctx.db, chunk)?;
            r.events_added += added;
            r.events_skipped += chunk.len() - added;
        }
    }
    Ok(())
}

/// Store parsed records in write transactions of at most about [`IMPORT_STEP`] each (so that
/// servers writing meanwhile are not locked out); returns the counts. Interrupted, the import
/// keeps what its finished transactions stored, and running it again skips that.
fn store(app: &App, version: u32, p: &Parsed) -> Result<ImportReport, ConsoleError> {
    // A recurrence's lesson in the export, by project and id: the lesson here of the same
    // task and strategy takes the recurrence when that lesson was skipped as present.
    let exported: std::collections::HashMap<(&Scope, Uuid), (&TaskKey, &str)> = p
        .lessons
        .iter()
        .map(|(s, (l, id, ..))| ((s, *id), (&l.task_key, l.normalised_strategy.as_str())))
        .collect();
    let items: Vec<Item<'_>> = p
        .lessons
        .iter()
        .map(Item::Lesson)
        .chain(p.recurrences.iter().map(|rec| {
            let lesson = exported.get(&(&rec.0, rec.1.lesson_id)).copied();
            Item::Recurrence(rec, lesson)
        }))
        .chain(p.directives.iter().map(Item::Directive))
        .chain(p.beliefs.iter().map(Item::Belief))
        .chain(p.observations.chunks(CHUNK).map(Item::Observations))
        .chain(p.events.chunks(CHUNK).map(Item::Events))
        .collect();
    let bar = progress(items.iter().map(Item::size).sum(), "import");
    let mut report = ImportReport {
        format_version: version,
        ..ImportReport::default()
    };
    let mut next = 0;
    while next < items.len() {
        let (r, done) = app.write_with(&[CachedFamily::Atc], |ctx| {
            let started = std::time::Instant::now();
            let mut r = report.clone();
            let mut i = next;
            while i < items.len() && (i == next || started.elapsed() < IMPORT_STEP) {
                store_item(ctx, &items[i], &mut r)?;
                i += 1;
            }
            Ok((r, i))
        })?;
        bar.inc(items[next..done].iter().map(Item::size).sum());
        report = r;
        next = done;
        if next < items.len() {
            app.settle_wal()?;
            std::thread::sleep(IMPORT_PAUSE);
        }
    }
    bar.finish_and_clear();
    Ok(report)
}

/// `import FILE|- [--partial]`: read and validate the whole export (refusing one not known
/// to be whole unless `partial`), then open the database (`open`, which `--create` lets make
/// it) and store the export in short transactions, and report the counts.
///
/// # Errors
/// [`ConsoleError::Format`] for an input that is not a valid, whole export of a supported
/// version (nothing is stored), or the store's failure (what earlier transactions stored is
/// kept; importing again skips it).
pub fn import(
    open: impl FnOnce() -> Result<App, ConsoleError>,
    file: &str,
    partial: bool,
    json: bool,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let (what, mut reader): (String, Box<dyn BufRead>) = if file == "-" {
        ("reading stdin".into(), Box::new(std::io::stdin().lock()))
    } else {
        let what = format!("reading {file}");
        let f = std::fs::File::open(file).map_err(ConsoleError::io(&what))?;
        (what, Box::new(std::io::BufReader::new(f)))
    };
    let (version, parsed, complete) = parse(&mut reader, &what, partial, Utc::now())?;
    // Opened (with `--create`, made) only once the file is known good: a refused import never
    // leaves a new empty database behind.
    let app = open()?;
    let mut r = store(&app, version, &parsed)?;
    r.secrets_redacted = parsed.redacted;
    let records = parsed.lessons.len()
        + parsed.recurrences.len()
        + parsed.directives.len()
        + parsed.beliefs.len()
        + parsed.observations.len()
        + parsed.events.len();
    let nothing = nothing_imported(&r, records, file);
    if json {
        if let Some(why) = &nothing {
            eprintln!("meta-utl-mcp: {why}");
        }
        return out.json(&ImportJson {
            report: &r,
            completeness: &complete,
        });
    }
    let mut t = out.table(&["records", "added", "already present"]);
    t.add_row(vec![
        "lessons".into(),
        r.lessons_added.to_string(),
        r.lessons_skipped.to_string(),
    ]);
    t.add_row(vec![
        "recurrences".into(),
        match r.recurrences_as_lessons {
            0 => r.recurrences_added.to_string(),
            n => format!(
                "{} (+{n} as lessons of their own: their lesson was missing)",
                r.recurrences_added
            ),
        },
        r.recurrences_skipped.to_string(),
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
    match &complete.partial_reason {
        None => out.line(&format!(
            "Imported a whole export (format version {version}, {} records, checksum verified):",
            complete.records_read
        ))?,
        Some(reason) => out.line(&format!(
            "Imported {} records of a PARTIAL export (--partial; format version {version}): \
             {reason}.",
            complete.records_read
        ))?,
    }
    out.print_table(&t)?;
    if r.secrets_redacted > 0 {
        let (what, were) = if r.secrets_redacted == 1 {
            ("secret", "was")
        } else {
            ("secrets", "were")
        };
        out.line(&format!(
            "{} {what} in the records' text {were} replaced by [REDACTED:kind] markers before \
             anything was stored.",
            r.secrets_redacted
        ))?;
    }
    match nothing {
        Some(why) => out.line(&why),
        None => Ok(()),
    }
}

/// Why nothing was imported, when nothing was: the export held no records (made from an
/// empty or mistyped database), or all of them were here already.
fn nothing_imported(r: &ImportReport, records: usize, file: &str) -> Option<String> {
    let added = r.lessons_added
        + r.recurrences_added
        + r.recurrences_as_lessons
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

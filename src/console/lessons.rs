//! `lessons list|show|lift|restore|split`: the strategy blacklist as a person sees and changes
//! it. Lift and restore are `set_lesson_active`'s own effect
//! ([`crate::ops::lessons::set_active`]): the lesson's state and an `OVERRIDE`
//! directive, in one write transaction. Split turns a recurrence (a reworded repeat that
//! `log_lesson_learned` merged into a lesson) into a lesson of its own
//! ([`crate::ops::lessons::split`]), also recorded as an `OVERRIDE`.

use clap::Subcommand;
use serde::Serialize;
use uuid::Uuid;

use super::out::{Out, Paint, clip, safe, when};
use super::{ActorArg, ConsoleError, rationale};
use crate::service::lessons::{Lesson, TaskKey};
use crate::store::directives;
use crate::store::lessons as lesson_store;
use crate::store::recurrences::{self, Recurrence};
use crate::tools::App;

/// `lessons …`.
#[derive(Subcommand, Debug)]
pub enum LessonsCommand {
    /// The active lessons (all with --all), oldest first.
    List {
        /// Only this task's lessons (case, width and surrounding spaces ignored).
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// Include lifted (inactive) lessons.
        #[arg(long)]
        all: bool,
        /// Only lessons whose task, strategy, root cause, failure type or agent contains
        /// this text (case ignored).
        #[arg(long, value_name = "TEXT")]
        search: Option<String>,
        /// How many lessons to show at most (1 to 100000).
        #[arg(long, default_value_t = 100, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
        /// Skip this many lessons first (with --limit, pages through a long list).
        #[arg(long, default_value_t = 0, value_name = "N")]
        offset: u32,
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One lesson in full, with its recurrences and the directive-history entries that name
    /// it.
    Show {
        /// The lesson id, or any unique start of it (as `lessons list` shows it).
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Deactivate a lesson: its strategy may be tried again. Recorded as an OVERRIDE.
    Lift {
        /// The lesson id, or any unique start of it.
        id: String,
        /// Why (1 to 1024 characters), recorded in the directive history.
        #[arg(long)]
        rationale: String,
        #[command(flatten)]
        actor: ActorArg,
    },
    /// Re-activate a lifted lesson: its strategy is blocked again. Recorded as an OVERRIDE.
    Restore {
        /// The lesson id, or any unique start of it.
        id: String,
        /// Why (1 to 1024 characters), recorded in the directive history.
        #[arg(long)]
        rationale: String,
        #[command(flatten)]
        actor: ActorArg,
    },
    /// Turn a recurrence that was merged into a lesson by mistake into a lesson of its own, of
    /// the same task and active; the recurrence is removed. Recorded as an OVERRIDE.
    #[command(
        after_help = "A recurrence is a reworded repeat of an active lesson that \
                      log_lesson_learned kept with that lesson instead of making a second \
                      lesson; `lessons show LESSON` lists them with their ids. Split one when \
                      it is another approach after all: both lessons then block their own \
                      strategies."
    )]
    Split {
        /// The recurrence id, or any unique start of it (as `lessons show` lists it).
        id: String,
        /// Why (1 to 1024 characters), recorded in the directive history.
        #[arg(long)]
        rationale: Option<String>,
        #[command(flatten)]
        actor: ActorArg,
    },
}

/// A lesson as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct LessonJson {
    /// Lesson id.
    pub id: String,
    /// Task id as given.
    pub task_id: String,
    /// The failed strategy.
    pub strategy: String,
    /// Root-cause summary.
    pub rca_summary: String,
    /// ARCHITECTURAL_MISUNDERSTANDING, TOOL_MISUSE, DEPENDENCY_CONFLICT, LOGIC_ERROR or UNKNOWN.
    pub failure_type: &'static str,
    /// Agent that logged it.
    pub source_agent: String,
    /// Whether it blocks its strategy.
    pub is_active: bool,
    /// When it was logged (RFC 3339).
    pub created_at: String,
    /// Reworded repeats merged into it (`lessons show` lists them).
    pub recurrences: u64,
}

/// A recurrence as `lessons show --json` prints it.
#[derive(Debug, Serialize)]
pub struct RecurrenceJson {
    /// Recurrence id (`lessons split` takes it).
    pub id: String,
    /// Task id as that call gave it.
    pub task_id: String,
    /// The strategy as that call gave it.
    pub strategy: String,
    /// That call's root-cause summary.
    pub rca_summary: String,
    /// That call's failure type.
    pub failure_type: &'static str,
    /// Agent that logged it.
    pub source_agent: String,
    /// How it matched the lesson: contains, contained_in or similar.
    pub match_type: &'static str,
    /// The matcher's score, in [0, 1].
    pub score: f64,
    /// When it was logged (RFC 3339).
    pub recorded_at: String,
}

impl From<&Recurrence> for RecurrenceJson {
    fn from(r: &Recurrence) -> Self {
        RecurrenceJson {
            id: r.id.to_string(),
            task_id: r.task_id.clone(),
            strategy: r.strategy_description.clone(),
            rca_summary: r.rca_summary.clone(),
            failure_type: r.failure_type.as_str(),
            source_agent: r.source_agent.clone(),
            match_type: r.match_type.as_str(),
            score: r.score,
            recorded_at: r.recorded_at.to_rfc3339(),
        }
    }
}

impl LessonJson {
    /// `l` with its count of `recurrences`.
    pub fn new(l: &Lesson, recurrences: u64) -> Self {
        LessonJson {
            id: l.id.to_string(),
            task_id: l.task_id.clone(),
            strategy: l.strategy_description.clone(),
            rca_summary: l.rca_summary.clone(),
            failure_type: l.failure_type.as_str(),
            source_agent: l.source_agent.clone(),
            is_active: l.is_active,
            created_at: l.created_at.to_rfc3339(),
            recurrences,
        }
    }
}

/// The lesson `id` names: a full UUID, or the start of exactly one lesson's id (as the
/// tables show them, shortened). Hyphens and case are as `lessons list` prints them.
///
/// # Errors
/// [`ConsoleError::Usage`] when no lesson's id starts so, or several do (listing them).
fn lesson_id(app: &App, id: &str) -> Result<Uuid, ConsoleError> {
    let given = id.trim().to_ascii_lowercase();
    if let Ok(full) = Uuid::parse_str(&given) {
        return Ok(full);
    }
    if given.is_empty() || !given.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(ConsoleError::Usage(format!(
            "ID {id:?} is not a lesson id: give the id, or its first characters, as \
             `lessons list --all` shows it"
        )));
    }
    let lessons = app.read_with(|ctx| Ok(lesson_store::list(ctx.db, None, true)?))?;
    let matches: Vec<&Lesson> = lessons
        .iter()
        .filter(|l| l.id.to_string().starts_with(&given))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.id),
        [] => Err(ConsoleError::Usage(format!(
            "no lesson id starts with {id:?}; `lessons list --all` shows them"
        ))),
        many => {
            let listed: Vec<String> = many
                .iter()
                .take(10)
                .map(|l| format!("  {}  {}", l.id, clip(&l.strategy_description, 50)))
                .collect();
            let more = match many.len() {
                n if n > 10 => format!("\n  … and {} more", n - 10),
                _ => String::new(),
            };
            Err(ConsoleError::Usage(format!(
                "{} lessons have ids starting with {id:?}; give more characters:\n{}{more}",
                many.len(),
                listed.join("\n")
            )))
        }
    }
}

/// Shortest id prefixes, at least [`SHORT_ID`] characters, that tell `ids` apart.
pub fn short_ids(ids: &[Uuid]) -> Vec<String> {
    let full: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    let mut len = SHORT_ID;
    while len < 36 {
        let mut seen = std::collections::HashSet::new();
        if full.iter().all(|f| seen.insert(&f[..len])) {
            break;
        }
        len += 1;
    }
    full.iter().map(|f| f[..len].to_string()).collect()
}

/// Characters of an id the tables show (any unique start of an id is accepted back).
pub const SHORT_ID: usize = 8;

/// Run a `lessons` command.
///
/// # Errors
/// [`ConsoleError`] when an argument is invalid, the lesson does not exist, or the store or
/// stdout fails.
pub fn run(app: &App, cmd: LessonsCommand, out: &mut Out) -> Result<(), ConsoleError> {
    match cmd {
        LessonsCommand::List {
            task,
            all,
            search,
            limit,
            offset,
            json,
        } => {
            let page = Page {
                search: search.as_deref(),
                limit: limit as usize,
                offset: offset as usize,
            };
            list(app, task.as_deref(), all, &page, json, out)
        }
        LessonsCommand::Show { id, json } => show(app, lesson_id(app, &id)?, json, out),
        LessonsCommand::Lift {
            id,
            rationale: r,
            actor,
        } => {
            let r = rationale(&r)?;
            set_active(app, lesson_id(app, &id)?, false, r, &actor, out)
        }
        LessonsCommand::Restore {
            id,
            rationale: r,
            actor,
        } => {
            let r = rationale(&r)?;
            set_active(app, lesson_id(app, &id)?, true, r, &actor, out)
        }
        LessonsCommand::Split {
            id,
            rationale: r,
            actor,
        } => {
            let r = r.as_deref().map(rationale).transpose()?;
            split(app, recurrence_id(app, &id)?, r, &actor, out)
        }
    }
}

/// Which part of the list `lessons list` shows.
struct Page<'a> {
    search: Option<&'a str>,
    limit: usize,
    offset: usize,
}

impl Page<'_> {
    /// Whether `l` matches `--search` (case ignored).
    fn matches(&self, l: &Lesson) -> bool {
        let Some(s) = self.search.map(str::to_lowercase) else {
            return true;
        };
        [
            l.task_id.as_str(),
            &l.strategy_description,
            &l.rca_summary,
            l.failure_type.as_str(),
            &l.source_agent,
        ]
        .iter()
        .any(|f| f.to_lowercase().contains(&s))
    }
}

fn list(
    app: &App,
    task: Option<&str>,
    all: bool,
    page: &Page<'_>,
    json: bool,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let key = task.map(TaskKey::of);
    let (lessons, counts) = app.read_with(|ctx| {
        Ok((
            lesson_store::list(ctx.db, key.as_ref(), all)?,
            recurrences::counts(ctx.db)?,
        ))
    })?;
    let count = |l: &Lesson| counts.get(&l.id).copied().unwrap_or(0);
    let found: Vec<&Lesson> = lessons.iter().filter(|l| page.matches(l)).collect();
    let shown: Vec<&Lesson> = found
        .iter()
        .copied()
        .skip(page.offset)
        .take(page.limit)
        .collect();
    if json {
        let v: Vec<LessonJson> = shown.iter().map(|l| LessonJson::new(l, count(l))).collect();
        return out.json(&v);
    }
    if shown.is_empty() {
        let what = if all { "lessons" } else { "active lessons" };
        let mut said = match task {
            Some(t) => format!("No {what} for task {t:?}"),
            None => format!("No {what}"),
        };
        if let Some(s) = page.search {
            said.push_str(&format!(" matching {s:?}"));
        }
        if page.offset > 0 && !found.is_empty() {
            said.push_str(&format!(
                " past --offset {} (there are {})",
                page.offset,
                found.len()
            ));
        }
        return out.line(&format!("{said}."));
    }
    let ids = short_ids(&shown.iter().map(|l| l.id).collect::<Vec<_>>());
    let mut t = out.table(&[
        "id",
        "task",
        "failure type",
        "state",
        "logged",
        "recurred",
        "strategy",
    ]);
    for (l, id) in shown.iter().zip(ids) {
        let state = if l.is_active {
            out.paint(Paint::Bad, "blocks")
        } else {
            out.paint(Paint::Dim, "lifted")
        };
        t.add_row(vec![
            id,
            clip(&l.task_id, 24),
            l.failure_type.as_str().to_string(),
            state,
            l.created_at.format("%Y-%m-%d").to_string(),
            match count(l) {
                0 => "—".to_string(),
                n => format!("{n}×"),
            },
            clip(&l.strategy_description, 60),
        ]);
    }
    out.print_table(&t)?;
    if shown.len() < found.len() {
        let first = page.offset + 1;
        let last = page.offset + shown.len();
        let next = if last < found.len() {
            format!("; --offset {last} shows the next")
        } else {
            String::new()
        };
        out.line(&out.paint(
            Paint::Dim,
            &format!("{first}–{last} of {} shown{next}", found.len()),
        ))?;
    }
    Ok(())
}

fn show(app: &App, id: Uuid, json: bool, out: &mut Out) -> Result<(), ConsoleError> {
    let found = app.read_with(|ctx| {
        let Some(l) = lesson_store::get(ctx.db, id)? else {
            return Ok(None);
        };
        let key = TaskKey::of(&l.task_id);
        let (entries, _) = directives::list(ctx.db, Some(&key), usize::MAX, 0)?;
        let id = l.id.to_string();
        let named: Vec<_> = entries
            .into_iter()
            .filter(|d| d.description.contains(&id))
            .collect();
        let tried = crate::store::attempts::of_lesson(ctx.db, l.id)?;
        let recurred = recurrences::of_lesson(ctx.db, l.id)?;
        Ok(Some((l, named, tried, recurred)))
    })?;
    let Some((l, entries, tried, recurred)) = found else {
        return Err(ConsoleError::Usage(format!("no lesson {id}")));
    };
    if json {
        let history: Vec<_> = entries
            .iter()
            .map(super::history::DirectiveJson::from)
            .collect();
        let again: Vec<_> = recurred.iter().map(RecurrenceJson::from).collect();
        let lesson = LessonJson::new(&l, recurred.len() as u64);
        return out.json(&serde_json::json!({"lesson": lesson, "recurrences": again,
                                            "directives": history, "attempts": tried}));
    }
    out.field("Lesson", &l.id.to_string())?;
    out.field("Task", &safe(&l.task_id))?;
    let state = if l.is_active {
        out.paint(Paint::Bad, "active: blocks its strategy")
    } else {
        out.paint(Paint::Dim, "lifted: its strategy may be tried")
    };
    out.field("State", &state)?;
    out.field("Strategy", &safe(&l.strategy_description))?;
    out.field("Root cause", &safe(&l.rca_summary))?;
    out.field("Failure type", l.failure_type.as_str())?;
    out.field(
        "Logged",
        &format!("{} by {}", when(l.created_at), safe(&l.source_agent)),
    )?;
    if tried.is_empty() {
        out.field("Attempts", "none recorded before it")?;
    } else {
        out.field(
            "Attempts",
            "failed calls the plugin recorded before it was logged",
        )?;
        let mut t = out.table(&["when", "tool", "exit", "what", "error"]);
        for a in &tried {
            t.add_row(vec![
                when(a.created_at),
                safe(&a.tool).into_owned(),
                a.exit_status.map_or("—".into(), |s| s.to_string()),
                safe(&a.subject).into_owned(),
                safe(
                    a.error_head
                        .lines()
                        .nth(1)
                        .or(a.error_head.lines().next())
                        .unwrap_or(""),
                )
                .into_owned(),
            ]);
        }
        out.print_table(&t)?;
    }
    print_recurrences(&recurred, out)?;
    if entries.is_empty() {
        return out.field("Directives", "none name this lesson");
    }
    out.field("Directives", "")?;
    super::history::print(&entries, out)
}

fn set_active(
    app: &App,
    id: Uuid,
    active: bool,
    rationale: &str,
    actor: &ActorArg,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let actor = actor.resolve()?;
    let recorded = app.write_with(&[], |ctx| {
        Ok(crate::ops::lessons::set_active(
            ctx.db, id, active, rationale, &actor, ctx.now,
        )?)
    })?;
    let Some(r) = recorded else {
        return Err(ConsoleError::Usage(format!("no lesson {id}")));
    };
    let verb = if active { "Restored" } else { "Lifted" };
    let effect = if active {
        "its strategy is blocked again"
    } else {
        "its strategy may be tried again"
    };
    let unchanged = if r.change.changed {
        ""
    } else {
        " (it already was; recorded anyway)"
    };
    out.line(&format!(
        "{verb} lesson {id} (task {:?}): {effect}{unchanged}.",
        r.before.task_id
    ))?;
    out.line(&format!(
        "Recorded as OVERRIDE {} by {}.",
        r.directive.id,
        safe(&actor)
    ))
}

/// The recurrences of a lesson, as `lessons show` prints them (oldest first).
fn print_recurrences(recurred: &[Recurrence], out: &mut Out) -> Result<(), ConsoleError> {
    if recurred.is_empty() {
        return out.field("Recurrences", "none: no reworded repeat was merged into it");
    }
    out.field(
        "Recurrences",
        &format!(
            "{} reworded repeats merged into it (`lessons split ID` makes one a lesson)",
            recurred.len()
        ),
    )?;
    let mut t = out.table(&["id", "when", "match", "strategy", "root cause"]);
    for r in recurred {
        t.add_row(vec![
            r.id.to_string(),
            when(r.recorded_at),
            format!("{} {:.2}", r.match_type.as_str(), r.score),
            safe(&r.strategy_description).into_owned(),
            safe(&r.rca_summary).into_owned(),
        ]);
    }
    out.print_table(&t)
}

/// The recurrence `id` names: a full UUID, or the start of exactly one recurrence's id in this
/// project.
///
/// # Errors
/// [`ConsoleError::Usage`] naming `id` when it is not an id, no recurrence's id starts so, or
/// several do.
fn recurrence_id(app: &App, id: &str) -> Result<Uuid, ConsoleError> {
    let given = id.trim().to_ascii_lowercase();
    if let Ok(full) = Uuid::parse_str(&given) {
        return Ok(full);
    }
    if given.is_empty() || !given.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(ConsoleError::Usage(format!(
            "ID {id:?} is not a recurrence id: give the id, or its first characters, as \
             `lessons show LESSON` lists it"
        )));
    }
    let all = app.read_with(|ctx| Ok(recurrences::all(ctx.db)?))?;
    let matches: Vec<&Recurrence> = all
        .iter()
        .filter(|r| r.id.to_string().starts_with(&given))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.id),
        [] => Err(ConsoleError::Usage(format!(
            "no recurrence id starts with {id:?}; `lessons show LESSON` lists a lesson's \
             recurrences"
        ))),
        many => Err(ConsoleError::Usage(format!(
            "{} recurrences have ids starting with {id:?}; give more characters",
            many.len()
        ))),
    }
}

fn split(
    app: &App,
    id: Uuid,
    rationale: Option<&str>,
    actor: &ActorArg,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    use crate::ops::lessons::SplitError;
    let actor = actor.resolve()?;
    let done = app.write_with(&[], |ctx| {
        match crate::ops::lessons::split(ctx.db, ctx.semantic, id, rationale, &actor, ctx.now) {
            Ok(s) => Ok(Ok(s)),
            Err(SplitError::Store(e)) => Err(e.into()),
            Err(refused) => Ok(Err(refused)),
        }
    })?;
    let s = done.map_err(|e| ConsoleError::Usage(e.to_string()))?;
    out.line(&format!(
        "Split recurrence {id} of lesson {} into lesson {} (task {:?}): both block their own \
         strategies.",
        s.recurrence.lesson_id, s.lesson.id, s.lesson.task_id
    ))?;
    out.line(&format!(
        "Recorded as OVERRIDE {} by {}.",
        s.directive.id,
        safe(&actor)
    ))
}

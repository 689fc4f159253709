//! `lessons list|show|lift|restore`: the strategy blacklist as a person sees and changes it.
//! Lift and restore are `set_lesson_active`'s own effect
//! ([`crate::store::lessons::set_active_recorded`]): the lesson's state and an `OVERRIDE`
//! directive, in one write transaction.

use clap::Subcommand;
use serde::Serialize;
use uuid::Uuid;

use super::out::{Out, Paint, clip, safe, when};
use super::{ActorArg, ConsoleError, rationale};
use crate::service::lessons::{Lesson, TaskKey};
use crate::store::directives;
use crate::store::lessons as lesson_store;
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
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One lesson in full, with the directive-history entries that name it.
    Show {
        /// The lesson id (a UUID, as `lessons list` shows it).
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Deactivate a lesson: its strategy may be tried again. Recorded as an OVERRIDE.
    Lift {
        /// The lesson id.
        id: String,
        /// Why (1 to 1024 characters), recorded in the directive history.
        #[arg(long)]
        rationale: String,
        #[command(flatten)]
        actor: ActorArg,
    },
    /// Re-activate a lifted lesson: its strategy is blocked again. Recorded as an OVERRIDE.
    Restore {
        /// The lesson id.
        id: String,
        /// Why (1 to 1024 characters), recorded in the directive history.
        #[arg(long)]
        rationale: String,
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
}

impl From<&Lesson> for LessonJson {
    fn from(l: &Lesson) -> Self {
        LessonJson {
            id: l.id.to_string(),
            task_id: l.task_id.clone(),
            strategy: l.strategy_description.clone(),
            rca_summary: l.rca_summary.clone(),
            failure_type: l.failure_type.as_str(),
            source_agent: l.source_agent.clone(),
            is_active: l.is_active,
            created_at: l.created_at.to_rfc3339(),
        }
    }
}

fn lesson_id(id: &str) -> Result<Uuid, ConsoleError> {
    Uuid::parse_str(id.trim()).map_err(|_| {
        ConsoleError::Usage(format!(
            "ID {id:?} is not a lesson id: give the UUID that `lessons list` shows"
        ))
    })
}

/// Run a `lessons` command.
///
/// # Errors
/// [`ConsoleError`] when an argument is invalid, the lesson does not exist, or the store or
/// stdout fails.
pub fn run(app: &App, cmd: LessonsCommand, out: &mut Out) -> Result<(), ConsoleError> {
    match cmd {
        LessonsCommand::List { task, all, json } => list(app, task.as_deref(), all, json, out),
        LessonsCommand::Show { id, json } => show(app, lesson_id(&id)?, json, out),
        LessonsCommand::Lift {
            id,
            rationale: r,
            actor,
        } => set_active(app, lesson_id(&id)?, false, rationale(&r)?, &actor, out),
        LessonsCommand::Restore {
            id,
            rationale: r,
            actor,
        } => set_active(app, lesson_id(&id)?, true, rationale(&r)?, &actor, out),
    }
}

fn list(
    app: &App,
    task: Option<&str>,
    all: bool,
    json: bool,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let key = task.map(TaskKey::of);
    let lessons = app.read_with(|ctx| Ok(lesson_store::list(ctx.db, key.as_ref(), all)?))?;
    if json {
        let v: Vec<LessonJson> = lessons.iter().map(LessonJson::from).collect();
        return out.json(&v);
    }
    if lessons.is_empty() {
        let what = if all { "lessons" } else { "active lessons" };
        return out.line(&match task {
            Some(t) => format!("No {what} for task {t:?}."),
            None => format!("No {what}."),
        });
    }
    let mut t = out.table(&["id", "task", "failure type", "state", "logged", "strategy"]);
    for l in &lessons {
        let state = if l.is_active {
            out.paint(Paint::Bad, "blocks")
        } else {
            out.paint(Paint::Dim, "lifted")
        };
        t.add_row(vec![
            l.id.to_string(),
            clip(&l.task_id, 24),
            l.failure_type.as_str().to_string(),
            state,
            l.created_at.format("%Y-%m-%d").to_string(),
            clip(&l.strategy_description, 60),
        ]);
    }
    out.print_table(&t)
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
        Ok(Some((l, named)))
    })?;
    let Some((l, entries)) = found else {
        return Err(ConsoleError::Usage(format!("no lesson {id}")));
    };
    if json {
        let history: Vec<_> = entries
            .iter()
            .map(super::history::DirectiveJson::from)
            .collect();
        return out
            .json(&serde_json::json!({"lesson": LessonJson::from(&l), "directives": history}));
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
        Ok(lesson_store::set_active_recorded(
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

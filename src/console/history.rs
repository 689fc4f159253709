//! `directives`: the directive history, newest first, as a table or JSON.

use serde::Serialize;

use super::ConsoleError;
use super::out::{Out, Paint, safe, when};
use crate::service::lessons::TaskKey;
use crate::store::directives::{self, Directive, InterventionType};
use crate::tools::App;

/// A directive-history entry as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct DirectiveJson {
    /// Entry id.
    pub id: String,
    /// The task, as given; null for the whole server.
    pub task_id: Option<String>,
    /// MANUAL_FIX, FEEDBACK, OVERRIDE or ESCALATION.
    pub intervention_type: &'static str,
    /// What happened.
    pub description: String,
    /// Who.
    pub actor: String,
    /// When (RFC 3339).
    pub created_at: String,
}

impl From<&Directive> for DirectiveJson {
    fn from(d: &Directive) -> Self {
        DirectiveJson {
            id: d.id.to_string(),
            task_id: d.task_id.clone(),
            intervention_type: d.intervention_type.as_str(),
            description: d.description.clone(),
            actor: d.actor.clone(),
            created_at: d.created_at.to_rfc3339(),
        }
    }
}

/// Print entries as a table.
///
/// # Errors
/// As [`Out::line`].
pub fn print(entries: &[Directive], out: &mut Out) -> Result<(), ConsoleError> {
    let mut t = out.table(&["when", "type", "actor", "task", "description"]);
    for d in entries {
        let paint = match d.intervention_type {
            InterventionType::Escalation => Paint::Bad,
            InterventionType::Override => Paint::Warn,
            _ => Paint::Good,
        };
        t.add_row(vec![
            when(d.created_at),
            out.paint(paint, d.intervention_type.as_str()),
            safe(&d.actor).into_owned(),
            d.task_id
                .as_deref()
                .map_or("—".into(), |t| safe(t).into_owned()),
            safe(&d.description).into_owned(),
        ]);
    }
    out.print_table(&t)
}

/// `directives [--task T] [--limit N] [--json]`.
///
/// # Errors
/// [`ConsoleError`] when the store or stdout fails.
pub fn run(
    app: &App,
    task: Option<&str>,
    limit: u32,
    json: bool,
    out: &mut Out,
) -> Result<(), ConsoleError> {
    let key = task.map(TaskKey::of);
    let (entries, total) =
        app.read_with(|ctx| Ok(directives::list(ctx.db, key.as_ref(), limit as usize, 0)?))?;
    if json {
        let v: Vec<DirectiveJson> = entries.iter().map(DirectiveJson::from).collect();
        return out.json(&v);
    }
    if entries.is_empty() {
        return out.line("No directives.");
    }
    print(&entries, out)?;
    if total > entries.len() {
        out.line(&out.paint(
            Paint::Dim,
            &format!("{} of {total} shown; --limit N shows more", entries.len()),
        ))?;
    }
    Ok(())
}

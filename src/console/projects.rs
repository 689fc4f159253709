//! `projects`: the projects the database holds rows of, with their counts, and `projects
//! move`, which gives one project's rows to another (rows stored before projects existed, or
//! a repository that changed its remote).

use clap::{Args, Subcommand};
use serde::Serialize;

use super::out::{Out, safe};
use super::{ActorArg, ConsoleError};
use crate::project::{UNASSIGNED_LABEL, check_name, label};
use crate::store::projects::{self, ProjectCounts};
use crate::tools::App;

/// `projects [move …]`.
#[derive(Args, Debug)]
pub struct ProjectsArgs {
    /// Without an action: list the projects.
    #[command(subcommand)]
    action: Option<ProjectsAction>,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

/// What to do with projects.
#[derive(Subcommand, Debug)]
pub enum ProjectsAction {
    /// Give every lesson, directive and belief of project FROM to project TO, recorded in TO's
    /// directive history. Lessons and beliefs TO already holds (same task and strategy; same
    /// target) stay in FROM. Running servers of TO see the rows on their next call.
    Move {
        /// The project whose rows move; "(unassigned)" names rows stored before projects.
        #[arg(long, value_name = "NAME")]
        from: String,
        /// The project that receives them (as `status` and `projects` show names).
        #[arg(long, value_name = "NAME")]
        to: String,
        /// Who moves them (`--actor`), recorded in the directive history.
        #[command(flatten)]
        actor: ActorArg,
    },
}

/// One project as `--json` prints it.
#[derive(Debug, Serialize)]
struct ProjectJson<'a> {
    /// The name, `(unassigned)` for rows stored before projects.
    name: &'a str,
    /// Whether the console works in it (`--project`, or the working directory's).
    current: bool,
    #[serde(flatten)]
    counts: &'a ProjectCounts,
}

/// Run `projects`.
///
/// # Errors
/// [`ConsoleError`] for a bad name, a store failure or stdout.
pub fn run(app: &App, args: ProjectsArgs, out: &mut Out) -> Result<(), ConsoleError> {
    match args.action {
        None => list(app, args.json, out),
        Some(ProjectsAction::Move { from, to, actor }) => {
            let usage =
                |flag: &'static str| move |e: String| ConsoleError::Usage(format!("{flag}: {e}"));
            let from = check_name(&from).map_err(usage("--from"))?;
            let to = check_name(&to).map_err(usage("--to"))?;
            if from == to {
                return Err(ConsoleError::Usage(
                    "--from and --to name the same project; nothing to move".into(),
                ));
            }
            let actor = actor.resolve()?;
            let known = app.read_with(|ctx| Ok(projects::list(ctx.db)?))?;
            if !known.iter().any(|p| p.name == from) {
                let names: Vec<&str> = known.iter().map(|p| label(&p.name)).collect();
                return Err(ConsoleError::Usage(format!(
                    "--from: the database holds no rows of project {:?}; its projects: {}",
                    label(&from),
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            let moved = app.write_with(&[], |ctx| {
                Ok(crate::ops::projects::move_rows(
                    ctx.db, &from, &to, &actor, ctx.now,
                )?)
            })?;
            if args.json {
                return out.json(&moved);
            }
            out.line(&format!(
                "Moved {} lessons, {} directives and {} beliefs from {} to {}.",
                moved.lessons,
                moved.directives,
                moved.beliefs,
                safe(label(&from)),
                safe(label(&to))
            ))?;
            if moved.recurrences > 0 {
                out.line(&format!(
                    "The moved lessons took their {} recurrences with them.",
                    moved.recurrences
                ))?;
            }
            if moved.lessons_left + moved.beliefs_left > 0 {
                out.line(&format!(
                    "{} lessons and {} beliefs stayed in {}: {} already holds the same.",
                    moved.lessons_left,
                    moved.beliefs_left,
                    safe(label(&from)),
                    safe(label(&to))
                ))?;
            }
            Ok(())
        }
    }
}

fn list(app: &App, json: bool, out: &mut Out) -> Result<(), ConsoleError> {
    let (here, all) =
        app.read_with(|ctx| Ok((ctx.db.project().to_owned(), projects::list(ctx.db)?)))?;
    if json {
        let rows: Vec<ProjectJson<'_>> = all
            .iter()
            .map(|p| ProjectJson {
                name: label(&p.name),
                current: p.name == here,
                counts: p,
            })
            .collect();
        return out.json(&rows);
    }
    if all.is_empty() {
        return out.line(&format!(
            "No project has rows yet. This console works in {}.",
            safe(label(&here))
        ));
    }
    let mut t = out.table(&["", "project", "lessons", "active", "directives", "beliefs"]);
    for p in &all {
        t.add_row(vec![
            if p.name == here {
                "*".into()
            } else {
                String::new()
            },
            safe(label(&p.name)).into_owned(),
            p.lessons.to_string(),
            p.active_lessons.to_string(),
            p.directives.to_string(),
            p.beliefs.to_string(),
        ]);
    }
    out.print_table(&t)?;
    if all.iter().any(|p| p.name.is_empty()) {
        out.line(&format!(
            "{UNASSIGNED_LABEL}: rows stored before projects existed; no server sees them until \
             `meta-utl-mcp projects move --from {UNASSIGNED_LABEL:?} --to NAME` gives them a project."
        ))?;
    }
    Ok(())
}

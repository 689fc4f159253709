//! The operator's console: subcommands of the same binary with which a person sees what the
//! agents learned, acts on it and moves it (`status`, `lessons`, `directives`, `escalations`,
//! `export`, `import`, `backup`, `check`, `report`, `projects`). Each works in one project
//! (`--project`, else the working directory's; [`crate::project`]), as a server there would;
//! `projects`, `export`, `import` and `check` see every project.
//!
//! Every read goes through [`App::read_with`] and every write through [`App::write_with`], the
//! transaction the tools run in: the console works while MCP servers use the same database, a
//! running server sees a lift, restore or ack on its next call (the family versions), and the
//! SQL is the store's own (`src/store/`). One file per command group; [`out`] is the one place
//! that writes to stdout (tables, colour only on a terminal, `NO_COLOR` honoured).

mod escalations;
mod history;
mod lessons;
mod maintenance;
pub mod out;
pub mod projects;
pub mod report;
mod status;
pub mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::files::{Existing, FileError};
use crate::project::Project;
use crate::store::{DbPath, Store, StoreError};
use crate::tools::{App, ToolError};
use out::Out;

/// The console's subcommands (flattened into the binary's command list by `main.rs`).
#[derive(Subcommand, Debug)]
pub enum Command {
    /// One screen: the database, λ and lifecycle stage, escalation state and what to do about
    /// it, calibration per domain, counts and last activity.
    Status {
        /// Print one JSON object instead of the screen.
        #[arg(long)]
        json: bool,
    },
    /// The projects the database holds rows of, with counts; `projects move` gives one
    /// project's rows to another.
    Projects(projects::ProjectsArgs),
    /// List, show, lift, restore or split lessons (the strategy blacklist).
    #[command(subcommand)]
    Lessons(lessons::LessonsCommand),
    /// The directive history (manual fixes, feedback, overrides, escalations), newest first.
    Directives {
        /// Only this task's entries (case, width and surrounding spaces ignored).
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// How many entries to show (1 to 10000).
        #[arg(long, default_value_t = 20, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The pending human escalation and the events that led to it; `ack` acknowledges it.
    Escalations(escalations::EscalationsArgs),
    /// Write lessons, directives, beliefs with their history, calibration observations and
    /// the meta-learning event log as JSON Lines (see docs/CONSOLE.md for the format).
    Export {
        /// File to write, replaced whole (written beside it, then renamed); never the
        /// database, an SQLite file or a symbolic link. [default: stdout]
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace FILE when it exists.
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// Read an export (a file, or `-` for stdin) into this database: validated whole first,
    /// then stored in short transactions. Idempotent: what is already present is skipped and
    /// counted, so an interrupted import can be run again.
    Import {
        /// The export file, or `-` to read stdin.
        #[arg(value_name = "FILE")]
        file: String,
        /// Import an export not known to be whole (no trailer: cut short, or written before
        /// exports had one), saying how many records were read.
        #[arg(long)]
        partial: bool,
        /// Print the counts as JSON.
        #[arg(long)]
        json: bool,
        /// Create the database when it does not exist yet (a new SQLite file, its folder
        /// included); without it a missing file is refused, so that a mistyped --db never
        /// receives an import.
        #[arg(long)]
        create: bool,
    },
    /// Copy the database to DEST (a new file) with SQLite's online backup API, while servers
    /// run; the copy is checked before it gets its name.
    Backup {
        /// The copy to create; an existing file is never overwritten.
        #[arg(value_name = "DEST")]
        dest: PathBuf,
    },
    /// Integrity check plus the range validation of stored values, without writing anything.
    /// Exit 0 healthy, 1 damaged.
    Check {
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write one self-contained HTML page of plots (reliability diagrams, ECE and λ_s over
    /// time, Thompson arms, lessons and directives over time).
    Report {
        /// The HTML file to write, replaced whole (written beside it, then renamed); never the
        /// database, an SQLite file or a symbolic link.
        #[arg(long, value_name = "FILE.html")]
        out: PathBuf,
        /// Replace FILE.html when it exists.
        #[arg(long)]
        force: bool,
    },
}

/// `--actor` of the commands that record a directive.
#[derive(Args, Debug, Clone)]
pub struct ActorArg {
    /// Who acts, recorded in the directive history. [default: $USER, else USER]
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
}

impl ActorArg {
    /// The actor: `--actor`, else `$USER`, else `USER` (the tools' default actor).
    pub fn resolve(&self) -> Result<String, ConsoleError> {
        let actor = self
            .actor
            .clone()
            .or_else(|| std::env::var("USER").ok().filter(|u| !u.trim().is_empty()))
            .unwrap_or_else(|| crate::service::lessons::DEFAULT_ACTOR.to_string());
        if actor.trim().is_empty() || actor.chars().count() > MAX_ACTOR_CHARS {
            return Err(ConsoleError::Usage(format!(
                "--actor must be 1 to {MAX_ACTOR_CHARS} characters, not only whitespace"
            )));
        }
        Ok(actor)
    }
}

/// Longest `--actor`, in characters (as `record_directive`'s `actor`).
pub const MAX_ACTOR_CHARS: usize = 256;

/// Longest `--rationale`, in characters (as the tools' `rationale`).
pub const MAX_RATIONALE_CHARS: usize = crate::service::lessons::MAX_RATIONALE_CHARS;

/// A `--rationale` as the tools accept it: 1 to [`MAX_RATIONALE_CHARS`] characters, not only
/// whitespace.
///
/// # Errors
/// [`ConsoleError::Usage`] naming `--rationale` otherwise.
pub fn rationale(r: &str) -> Result<&str, ConsoleError> {
    if r.trim().is_empty() || r.chars().count() > MAX_RATIONALE_CHARS {
        return Err(ConsoleError::Usage(format!(
            "--rationale must be 1 to {MAX_RATIONALE_CHARS} characters, not only whitespace"
        )));
    }
    Ok(r)
}

/// Why a console command failed.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The database could not be opened or used.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A store operation failed inside a tool transaction.
    #[error("{0}")]
    Tool(String),
    /// The arguments are wrong (names the flag and what is allowed), or what they name does
    /// not exist.
    #[error("{0}")]
    Usage(String),
    /// Reading or writing a file or stdout failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// The failure.
        source: std::io::Error,
    },
    /// An import file is not a valid export (names the line and what is wrong).
    #[error("{0}")]
    Format(String),
}

impl From<FileError> for ConsoleError {
    fn from(e: FileError) -> Self {
        ConsoleError::Usage(e.to_string())
    }
}

impl From<ToolError> for ConsoleError {
    fn from(e: ToolError) -> Self {
        ConsoleError::Tool(e.to_string())
    }
}

impl ConsoleError {
    /// An I/O failure while doing `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ConsoleError {
        let what = what.into();
        move |source| ConsoleError::Io { what, source }
    }
}

/// The database a console command works on: `--db` / `META_UTL_DB` (empty = not given), else
/// the default location.
///
/// # Errors
/// [`ConsoleError::Usage`] when there is no default location (neither HOME nor XDG_DATA_HOME);
/// [`ConsoleError::Store`] for a PostgreSQL URL that cannot be used.
pub fn db_path(db: Option<&str>) -> Result<DbPath, ConsoleError> {
    match db.filter(|p| !p.is_empty()) {
        Some(p) => Ok(DbPath::parse(p)?),
        None => DbPath::default_location().ok_or_else(|| {
            ConsoleError::Usage(
                "neither HOME nor XDG_DATA_HOME is set, so there is no default database \
                 location; choose one with --db PATH or META_UTL_DB"
                    .into(),
            )
        }),
    }
}

/// Open the database as a server does (validated, migrated) and load the service over it.
///
/// # Errors
/// [`ConsoleError::Store`] with the server's own refusal (foreign, damaged, too new, …).
pub fn open_app(path: &DbPath, project: &Project) -> Result<App, ConsoleError> {
    let store = Store::open(path)?.with_project(project.name.clone());
    App::new(store).map_err(|e| match e {
        StoreError::Corrupt(reason) => ConsoleError::Store(StoreError::Damaged {
            path: path.display(),
            reason,
        }),
        other => ConsoleError::Store(other),
    })
}

/// Run one console command on the database `db` (`--db`), writing to stdout; errors go to
/// stderr. Exit status: 0 done, 1 `check` found damage, 2 failure (the message says why).
pub fn run(cmd: Command, db: Option<&str>, project: &Project) -> ExitCode {
    let mut out = Out::standard();
    let result = db_path(db).and_then(|path| dispatch(cmd, &path, project, &mut out));
    let flushed = out.flush();
    match result.and_then(|code| flushed.map(|()| code)) {
        Ok(code) => code,
        Err(e) => {
            // Messages may quote the input (an import line, a path): shown escaped.
            eprintln!("meta-utl-mcp: {}", out::safe(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// Refuse a database file that does not exist, unless the command may create it: only the
/// server and `import --create` make a database, so that a mistyped `--db` never reads as an
/// empty database that "has no lessons". Names the path, a near file name in its folder when
/// there is one, or the missing folder.
///
/// # Errors
/// [`ConsoleError::Usage`] for a missing file (exit 2).
pub fn require_existing(path: &DbPath) -> Result<(), ConsoleError> {
    let DbPath::File(p) = path else {
        return Ok(());
    };
    // `metadata` follows symbolic links: a dangling link is missing too.
    if std::fs::metadata(p).is_ok() || p.to_string_lossy().starts_with("file:") {
        return Ok(());
    }
    let shown = p.display();
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (folder, near) = if dir.is_dir() {
        match near_names(&dir, p) {
            names if names.is_empty() => (String::new(), String::new()),
            names => (
                String::new(),
                format!(" Did you mean {}?", names.join(" or ")),
            ),
        }
    } else {
        let folder = format!(" (the folder {} does not exist either)", dir.display());
        (folder, String::new())
    };
    let default = DbPath::default_location().is_some_and(|d| &d == path);
    let how = if default {
        "The server creates it when an MCP client first starts meta-utl-mcp"
    } else {
        "A database is created only by the server (an MCP client starting meta-utl-mcp with \
         this --db) or by `meta-utl-mcp import FILE --create`"
    };
    Err(ConsoleError::Usage(format!(
        "there is no database at {shown}{folder}; nothing was created.{near} {how}."
    )))
}

/// Up to three files in `dir` whose names are near `p`'s (a typo away), as paths like `p`.
fn near_names(dir: &std::path::Path, p: &std::path::Path) -> Vec<String> {
    let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut near: Vec<(usize, String)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !n.ends_with("-wal") && !n.ends_with("-shm"))
        .filter_map(|n| {
            let d = strsim::damerau_levenshtein(&name, &n);
            let close = d <= 2 && d < name.chars().count().max(3) / 2 + 1;
            close.then_some((d, n))
        })
        .collect();
    near.sort();
    near.into_iter()
        .take(3)
        .map(|(_, n)| p.with_file_name(n).display().to_string())
        .collect()
}

/// The database file `path` names, symbolic links resolved (never written over by a file a
/// command writes); `None` for PostgreSQL and `:memory:`.
fn database_file(path: &DbPath) -> Option<PathBuf> {
    match path {
        DbPath::File(p) => Some(crate::store::resolve_path(p).unwrap_or_else(|_| p.clone())),
        DbPath::Memory | DbPath::Postgres(_) => None,
    }
}

fn dispatch(
    cmd: Command,
    path: &DbPath,
    project: &Project,
    out: &mut Out,
) -> Result<ExitCode, ConsoleError> {
    let open_app = |path: &DbPath| open_app(path, project);
    let ok = |()| ExitCode::SUCCESS;
    if !matches!(cmd, Command::Import { create: true, .. }) {
        require_existing(path)?;
    }
    match cmd {
        Command::Status { json } => status::run(&open_app(path)?, json, out).map(ok),
        Command::Projects(args) => projects::run(&open_app(path)?, args, out).map(ok),
        Command::Lessons(c) => lessons::run(&open_app(path)?, c, out).map(ok),
        Command::Directives { task, limit, json } => {
            history::run(&open_app(path)?, task.as_deref(), limit, json, out).map(ok)
        }
        Command::Escalations(args) => escalations::run(&open_app(path)?, args, out).map(ok),
        Command::Export { out: file, force } => {
            let database = database_file(path);
            if let Some(f) = &file {
                crate::files::check_destination(f, database.as_deref(), Existing::force(force))?;
            }
            let app = open_app(path)?;
            transfer::export(&app, file, Existing::force(force), database.as_deref(), out).map(ok)
        }
        Command::Import {
            file,
            partial,
            json,
            ..
        } => transfer::import(|| open_app(path), &file, partial, json, out).map(ok),
        Command::Backup { dest } => maintenance::backup(path, &dest, out).map(ok),
        Command::Check { json } => maintenance::check(path, json, out),
        Command::Report { out: file, force } => {
            let database = database_file(path);
            let existing = Existing::force(force);
            crate::files::check_destination(&file, database.as_deref(), existing)?;
            report::run(&open_app(path)?, &file, existing, database.as_deref(), out).map(ok)
        }
    }
}

//! The Claude Code plugin's hooks (issue 29): `meta-utl-mcp hook EVENT` reads the hook's JSON
//! on stdin, speaks from the current project's memory, and answers on stdout with the JSON
//! Claude Code reads (`hookSpecificOutput.additionalContext`, or a permission decision).
//! Written against Claude Code 2.1.330 (its hooks reference and the input it sends:
//! `session_id`, `cwd`, `hook_event_name`, `prompt`, `source`, `tool_name`, `tool_input`,
//! `error`, `is_interrupt`, `stop_hook_active`).
//!
//! | event | what it says |
//! |---|---|
//! | `session-start` | a digest of the project's memory: active lessons (newest first), open hypotheses, recent directions from people, a pending escalation; at most [`SESSION_CHARS`] characters |
//! | `user-prompt-submit` | the project's lessons relevant to the prompt ([`crate::service::lessons::recall::relevance`]), with their root cause; at most [`PROMPT_CHARS`]; nothing when none clears the bar |
//! | `pre-tool-use` | for `Bash`, `Edit`, `Write`, `MultiEdit`: the active lessons whose strategy the command or edit carries out ([`crate::service::lessons::recall::carries_out`]), before it runs; with the plugin option `block_repeats`, a `deny` naming them |
//! | `post-tool-use-failure` | records the failed call as an attempt of the project (secrets redacted) and reminds the model once to log a lesson when it knows why |
//! | `stop` | once per failure: if failed attempts of the session have no lesson, one reminder; never again while `stop_hook_active` |
//! | `pre-compact` | the same reminder (once per failure, shared with `stop`), as instructions for the compaction's summary; after it, `session-start` (source `compact`) brings the digest back |
//!
//! Every hook is a fresh process without the embedding model (the lexical rules only), so it
//! starts in milliseconds (docs/PERFORMANCE.md). A hook never breaks a session: a database
//! that does not exist yet is silence; any failure is one line on stderr and exit status 1,
//! which Claude Code logs and passes over.
//!
//! Options (the plugin's `userConfig`, which Claude Code hands to hooks as
//! `CLAUDE_PLUGIN_OPTION_<KEY>`): `session_chars`, `prompt_chars` (100 to 20,000) and
//! `block_repeats` (`true` to deny instead of warn).

mod speak;

use std::io::{Read, Write};
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::Value;

use crate::project::Project;
use crate::store::{DbPath, Store};

/// Default budget of the session-start digest, in characters.
pub const SESSION_CHARS: usize = 4_000;

/// Default budget of the per-prompt recall, in characters.
pub const PROMPT_CHARS: usize = 2_000;

/// The range a budget option may take, in characters.
pub const BUDGET_RANGE: std::ops::RangeInclusive<usize> = 100..=20_000;

/// The longest hook input read, in bytes (a tool's input or error beyond it is cut).
pub const MAX_INPUT_BYTES: usize = 8 << 20;

/// Which hook is running (`meta-utl-mcp hook EVENT`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `SessionStart`: the project's digest.
    SessionStart,
    /// `UserPromptSubmit`: lessons relevant to the prompt.
    UserPromptSubmit,
    /// `PreToolUse`: lessons the command or edit repeats.
    PreToolUse,
    /// `PostToolUseFailure`: record the failed attempt, remind once.
    PostToolUseFailure,
    /// `Stop`: one reminder when failures of the session have no lesson.
    Stop,
    /// `PreCompact`: the same reminder, as instructions for the compaction's summary (the
    /// hook's plain stdout), so that it survives the compaction.
    PreCompact,
}

impl Event {
    /// The `hookEventName` Claude Code expects back.
    fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::Stop => "Stop",
            Event::PreCompact => "PreCompact",
        }
    }
}

/// The fields of Claude Code's hook input this reads (others are ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookInput {
    /// The session.
    pub session_id: String,
    /// The session's working directory: the project is found from it.
    pub cwd: Option<String>,
    /// `UserPromptSubmit`: the user's prompt.
    pub prompt: Option<String>,
    /// `SessionStart`: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// Tool events: the tool.
    pub tool_name: Option<String>,
    /// Tool events: its input.
    pub tool_input: Value,
    /// `PostToolUseFailure`: the error text.
    pub error: Option<Value>,
    /// `PostToolUseFailure`: whether the user interrupted the call.
    pub is_interrupt: Option<bool>,
    /// `Stop`: whether this stop follows a stop hook's continuation.
    pub stop_hook_active: Option<bool>,
}

/// The plugin options a hook reads (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Budget of the session digest, in characters.
    pub session_chars: usize,
    /// Budget of the per-prompt recall, in characters.
    pub prompt_chars: usize,
    /// Deny a tool call that repeats a failed strategy instead of warning.
    pub block_repeats: bool,
}

impl Options {
    /// From the environment (`CLAUDE_PLUGIN_OPTION_*`); an unset, unreadable or out-of-range
    /// value takes its default (with a line on stderr for a bad one).
    pub fn from_env() -> Options {
        let budget = |key: &str, default: usize| {
            let Ok(v) = std::env::var(format!("CLAUDE_PLUGIN_OPTION_{key}")) else {
                return default;
            };
            match v.trim().parse::<usize>() {
                Ok(n) if BUDGET_RANGE.contains(&n) => n,
                _ => {
                    eprintln!(
                        "meta-utl-mcp hook: option {} = {v:?} is not a number from {} to {}; \
                         using {default}",
                        key.to_ascii_lowercase(),
                        BUDGET_RANGE.start(),
                        BUDGET_RANGE.end()
                    );
                    default
                }
            }
        };
        Options {
            session_chars: budget("SESSION_CHARS", SESSION_CHARS),
            prompt_chars: budget("PROMPT_CHARS", PROMPT_CHARS),
            block_repeats: std::env::var("CLAUDE_PLUGIN_OPTION_BLOCK_REPEATS")
                .is_ok_and(|v| matches!(v.trim(), "true" | "1" | "yes")),
        }
    }
}

/// Run hook `event`: read stdin, answer on stdout. `db` and `project` are `--db` and
/// `--project` (or their variables); without `--project` the project is the hook input's `cwd`.
/// Exit status 0, or 1 with one line on stderr when something failed (the session goes on).
pub fn run(event: Event, db: Option<&str>, project: Option<&str>) -> ExitCode {
    match answer(event, db, project) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(out)) => {
            let out = match out {
                Value::String(text) => text,
                json => json.to_string(),
            };
            let mut stdout = std::io::stdout().lock();
            match writeln!(stdout, "{out}").and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!(
                        "meta-utl-mcp hook {}: cannot write the answer: {e}",
                        event.name()
                    );
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            eprintln!("meta-utl-mcp hook {}: {e}", event.name());
            ExitCode::from(1)
        }
    }
}

fn answer(event: Event, db: Option<&str>, project: Option<&str>) -> Result<Option<Value>, String> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES as u64)
        .read_to_end(&mut raw)
        .map_err(|e| format!("cannot read the hook input: {e}"))?;
    let input: HookInput = if raw.iter().all(u8::is_ascii_whitespace) {
        HookInput::default()
    } else {
        serde_json::from_slice(&raw).map_err(|e| format!("the hook input is not JSON: {e}"))?
    };
    let project = match project.filter(|p| !p.is_empty()) {
        Some(name) => Project::named(name)?,
        None => {
            let cwd = input
                .cwd
                .clone()
                .map(std::path::PathBuf::from)
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_else(|| ".".into());
            Project::detect(&cwd)
        }
    };
    let path = match db.filter(|d| !d.is_empty()) {
        Some(d) => DbPath::parse(d).map_err(|e| e.to_string())?,
        None => DbPath::default_location()
            .ok_or("neither HOME nor XDG_DATA_HOME is set; give --db or META_UTL_DB")?,
    };
    // No database yet: nothing learned, nothing to say (and a hook never creates one).
    if let DbPath::File(p) = &path
        && std::fs::metadata(p).is_err()
    {
        return Ok(None);
    }
    // The integrity check runs beside the hook, not before it: a hook that only reads does
    // not wait for it (at 2·10⁴ lessons it took about 85 ms of every hook), and one that writes
    // waits for it to pass, as the server's writes do.
    let background_check = crate::store::OpenOptions {
        inline_check_max_bytes: 0,
    };
    let store = Store::open_with(&path, &background_check)
        .map_err(|e| e.to_string())?
        .with_project(project.name.clone());
    let options = Options::from_env();
    let said = speak::speak(event, &input, &store, &options, chrono::Utc::now())
        .map_err(|e| e.to_string())?;
    Ok(said.map(|s| s.into_output(event)))
}

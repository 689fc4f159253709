//! The Claude Code plugin (issue 29) in the real client: `claude -p --plugin-dir plugin/`
//! against a scripted model, the plugin's MCP server and hooks being this binary (put first on
//! `PATH`, as `cargo install` would). Several sessions in two git repositories share one
//! database, as a developer's sessions do:
//!
//! - a failed command is recorded and the model reminded; the lesson it then logs through the
//!   plugin's MCP server links the attempt, and a reminder at the end of the turn comes once;
//! - later sessions of the same repository get the lesson in the session digest and with a
//!   related prompt (not with an unrelated one), and before a Bash command that carries it out;
//!   `block_repeats` turns that into a refusal;
//! - the other repository never sees it; budgets hold with 45 lessons stored;
//! - a hook that fails (a database that is not one) leaves the session running.

mod common;

use std::path::{Path, PathBuf};

use common::claude::{ClaudeCode, Reply, Run, ScriptedModel, context_text, tool_results};
use serde_json::{Value, json};

/// The plugin's MCP server as Claude Code names it (`plugin:PLUGIN:SERVER`), and the prefix of
/// its tools' names.
const SERVER_PREFIX: &str = "mcp__plugin_meta-utl_meta-utl__";

const TASK: &str = "lodash prototype pollution warning";
const STRATEGY: &str = "Pin `lodash` to 4.17.15 with `npm install lodash@4.17.15`";
const RCA: &str =
    "4.17.15 is the version with the prototype pollution advisory; only 4.17.21 fixes it";

/// The client, the two repositories and the shared database.
struct World {
    claude: ClaudeCode,
    shop: PathBuf,
    api: PathBuf,
    db: PathBuf,
}

/// A folder that is a git repository with `origin` at `url` (its `.git/config` as git writes
/// it).
fn repository(claude: &ClaudeCode, name: &str, url: &str) -> PathBuf {
    let dir = claude.folder(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(
        dir.join(".git/config"),
        format!("[core]\n\tbare = false\n[remote \"origin\"]\n\turl = {url}\n"),
    )
    .unwrap();
    dir
}

impl World {
    fn new(test: &str) -> Option<World> {
        let claude = ClaudeCode::new(test)?;
        let shop = repository(&claude, "shop", "git@github.com:acme/shop.git");
        let api = repository(&claude, "api", "https://github.com/acme/api.git");
        let db = claude.folder("data").join("state.db");
        Some(World {
            claude,
            shop,
            api,
            db,
        })
    }

    /// `claude -p PROMPT` in `cwd` with the plugin, Bash and the plugin's tools allowed, every
    /// tool definition in every request; `env` on top.
    fn session(
        &self,
        model: &ScriptedModel,
        cwd: &Path,
        prompt: &str,
        db: &Path,
        env: &[(&str, &str)],
    ) -> Run {
        let bin_dir = Path::new(common::bin()).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin");
        let allowed = format!("Bash,{}", SERVER_PREFIX.trim_end_matches("__"));
        let mut vars = vec![
            ("PATH", path.as_str()),
            ("META_UTL_DB", db.to_str().unwrap()),
            ("META_UTL_EMBEDDING_MODEL", "off"),
            ("ENABLE_TOOL_SEARCH", "false"),
            ("RUST_LOG", "warn"),
        ];
        vars.extend_from_slice(env);
        let run = self.claude.run_with_env(
            model,
            cwd,
            prompt,
            &[
                "--plugin-dir",
                plugin.to_str().unwrap(),
                "--allowedTools",
                &allowed,
            ],
            &vars,
        );
        assert!(
            run.status.success(),
            "claude -p failed ({}): {}",
            run.status,
            run.stderr
        );
        run
    }
}

/// What a hook of `event` answered in `run`: its `additionalContext` (or denial reason), one
/// per run of the hook, in order.
fn hook_said(run: &Run, event: &str) -> Vec<String> {
    run.events
        .iter()
        .filter(|e| e["subtype"] == "hook_response" && e["hook_event"] == event)
        .map(|e| {
            let out: Value =
                serde_json::from_str(e["stdout"].as_str().unwrap_or("")).unwrap_or(Value::Null);
            let h = &out["hookSpecificOutput"];
            h["additionalContext"]
                .as_str()
                .or(h["permissionDecisionReason"].as_str())
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// The exit codes of the hooks of `event` in `run`.
fn hook_exits(run: &Run, event: &str) -> Vec<i64> {
    run.events
        .iter()
        .filter(|e| e["subtype"] == "hook_response" && e["hook_event"] == event)
        .map(|e| e["exit_code"].as_i64().unwrap_or(-1))
        .collect()
}

/// Everything the model was sent in the session, as one text.
fn everything(model: &ScriptedModel) -> String {
    model
        .main_requests()
        .iter()
        .map(context_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn log_call() -> Reply {
    Reply::tool(
        &format!("{SERVER_PREFIX}log_lesson_learned"),
        json!({"task_id": TASK, "strategy_description": STRATEGY, "rca_summary": RCA,
               "failure_type": "DEPENDENCY_CONFLICT", "source_agent": "claude"}),
    )
}

#[test]
fn the_plugin_recalls_a_projects_lessons_at_the_moment_of_action() {
    let Some(w) = World::new(module_path!()) else {
        return;
    };

    // Session 1 (shop): a command fails, the model is reminded, logs the lesson through the
    // plugin's server; the end of the turn reminds nothing more (the failure has its lesson).
    let model = ScriptedModel::steps(vec![
        Reply::tool(
            "Bash",
            json!({"command": "echo 'npm ERR! lodash advisory'; exit 3", "description": "audit"}),
        ),
        log_call(),
    ]);
    let run = w.session(
        &model,
        &w.shop,
        "Make the lodash audit warning go away",
        &w.db,
        &[],
    );
    let failure = hook_said(&run, "PostToolUseFailure");
    assert_eq!(failure.len(), 1, "{:?}", run.events);
    assert!(failure[0].contains("log_lesson_learned"), "{failure:?}");
    assert!(everything(&model).contains("meta-utl recorded this failed attempt"));
    let requests = model.main_requests();
    let logged = tool_results(requests.last().unwrap());
    let logged = logged.last().expect("the log call's result");
    assert!(!logged.is_error, "{}", logged.text);
    assert!(logged.text.contains("lesson_id"), "{}", logged.text);
    assert_eq!(
        hook_said(&run, "Stop")
            .iter()
            .filter(|s| !s.is_empty())
            .count(),
        0,
        "the failure has its lesson: no reminder"
    );
    // The lesson carries the recorded attempt (the console shows it).
    let lesson_id: Value = serde_json::from_str(&logged.text).unwrap();
    let lesson_id = lesson_id["lesson_id"].as_str().unwrap().to_owned();
    let shown = common::run_with(
        &w.db,
        &["lessons", "show", &lesson_id, "--json"],
        b"",
        |c| {
            c.current_dir(&w.shop).env_remove("META_UTL_PROJECT");
        },
    );
    let shown: Value = serde_json::from_slice(&shown.stdout).expect("lessons show --json");
    let tried = shown["attempts"].as_array().unwrap();
    assert_eq!(tried.len(), 1, "{shown}");
    assert_eq!(tried[0]["exit_status"], 3);
    assert!(tried[0]["subject"].as_str().unwrap().contains("exit 3"));

    // An unrelated lesson of shop, logged by a server there.
    const OTHER: &str = "Render the settings page on the server to fix the dark mode flicker";
    let mut server = common::Server::start_with(&w.db, &[], |c| {
        c.current_dir(&w.shop).env_remove("META_UTL_PROJECT");
    });
    server.tool_ok(
        "log_lesson_learned",
        json!({"task_id": "dark mode flicker", "strategy_description": OTHER,
               "rca_summary": "The flicker comes from the theme script loading late",
               "failure_type": "LOGIC_ERROR", "source_agent": "claude"}),
    );
    drop(server);

    // Session 2 (shop): the digest and the related prompt bring the lesson (and only the
    // related one with the prompt); the Bash command that carries it out brings it again
    // before it runs.
    let model = ScriptedModel::steps(vec![Reply::tool(
        "Bash",
        json!({"command": "npm install lodash@4.17.15", "description": "pin"}),
    )]);
    let run = w.session(
        &model,
        &w.shop,
        "The lodash prototype pollution warning is back in the audit",
        &w.db,
        &[],
    );
    let digest = hook_said(&run, "SessionStart").join("\n");
    assert!(
        digest.contains(STRATEGY) && digest.contains(RCA),
        "{digest}"
    );
    let recall = hook_said(&run, "UserPromptSubmit").join("\n");
    assert!(
        recall.contains(STRATEGY) && recall.contains(RCA),
        "{recall}"
    );
    assert!(!recall.contains(OTHER), "{recall}");
    assert!(
        digest.contains(OTHER),
        "the digest holds every active lesson that fits"
    );
    let before = hook_said(&run, "PreToolUse").join("\n");
    assert!(
        before.contains("carries out an approach that already failed"),
        "{before}"
    );
    let seen = everything(&model);
    for part in [RCA, "carries out an approach that already failed"] {
        assert!(seen.contains(part), "{part} did not reach the model");
    }

    // Session 3 (shop), an unrelated prompt: the digest, but no prompt recall.
    let model = ScriptedModel::steps(vec![]);
    let run = w.session(
        &model,
        &w.shop,
        "Update the copyright year in the footer",
        &w.db,
        &[],
    );
    assert_eq!(hook_exits(&run, "UserPromptSubmit"), [0]);
    assert!(
        hook_said(&run, "UserPromptSubmit")
            .iter()
            .all(String::is_empty)
    );
    assert!(!hook_said(&run, "SessionStart").join("").is_empty());

    // Session 4 (api): another repository on the same database sees nothing of shop's.
    let model = ScriptedModel::steps(vec![Reply::tool(
        "Bash",
        json!({"command": "npm install lodash@4.17.15", "description": "pin"}),
    )]);
    let run = w.session(
        &model,
        &w.api,
        "The lodash prototype pollution warning is back in the audit",
        &w.db,
        &[],
    );
    for event in ["SessionStart", "UserPromptSubmit", "PreToolUse"] {
        assert_eq!(hook_exits(&run, event), [0], "{event} ran and succeeded");
        assert!(
            hook_said(&run, event).iter().all(String::is_empty),
            "{event}: {:?}",
            hook_said(&run, event)
        );
    }
    assert!(!everything(&model).contains(RCA));

    // Session 5 (shop) with block_repeats: the command is refused with the lesson as reason.
    let model = ScriptedModel::steps(vec![Reply::tool(
        "Bash",
        json!({"command": "npm install lodash@4.17.15", "description": "pin"}),
    )]);
    w.session(
        &model,
        &w.shop,
        "Pin lodash",
        &w.db,
        &[("CLAUDE_PLUGIN_OPTION_BLOCK_REPEATS", "true")],
    );
    let requests = model.main_requests();
    let results = tool_results(requests.last().unwrap());
    let refused = results.last().expect("the Bash call's result");
    assert!(refused.is_error, "{}", refused.text);
    assert!(refused.text.contains(RCA), "{}", refused.text);
}

#[test]
fn budgets_hold_with_many_lessons_and_reminders_come_once() {
    let Some(w) = World::new(module_path!()) else {
        return;
    };
    // 45 lessons in shop, logged by a server there.
    let mut server = common::Server::start_with(&w.db, &[], |c| {
        c.current_dir(&w.shop).env_remove("META_UTL_PROJECT");
    });
    for i in 0..45 {
        server.tool_ok(
            "log_lesson_learned",
            json!({"task_id": format!("checkout flake {i}"),
                   "strategy_description": format!("Raise the checkout integration test timeout to {} seconds and retry the payment webhook {i} times", 30 + i),
                   "rca_summary": format!("The checkout test waits on a payment webhook that never arrives in CI (case {i}); a longer timeout only delays the failure"),
                   "failure_type": "LOGIC_ERROR", "source_agent": "claude"}),
        );
    }
    drop(server);
    let model = ScriptedModel::steps(vec![
        Reply::tool("Bash", json!({"command": "exit 1", "description": "a"})),
        Reply::tool("Bash", json!({"command": "exit 2", "description": "b"})),
    ]);
    let run = w.session(
        &model,
        &w.shop,
        "The checkout integration test times out waiting for the payment webhook",
        &w.db,
        &[],
    );
    let digest = hook_said(&run, "SessionStart").join("");
    assert!(
        digest.chars().count() <= 4_000 && digest.contains("more;"),
        "{} characters",
        digest.chars().count()
    );
    let recall = hook_said(&run, "UserPromptSubmit").join("");
    assert!(
        !recall.is_empty() && recall.chars().count() <= 2_000,
        "{} characters: {recall}",
        recall.chars().count()
    );
    // Two failures, no lesson: one reminder at the first stop, none at the next.
    let stops: Vec<String> = hook_said(&run, "Stop");
    assert!(stops.len() >= 2, "{stops:?}");
    assert!(stops[0].contains("2 failed attempts"), "{stops:?}");
    assert!(stops[1..].iter().all(String::is_empty), "{stops:?}");
    // A smaller budget from the plugin's options.
    let model = ScriptedModel::steps(vec![]);
    let run = w.session(
        &model,
        &w.shop,
        "Hello",
        &w.db,
        &[("CLAUDE_PLUGIN_OPTION_SESSION_CHARS", "1000")],
    );
    let digest = hook_said(&run, "SessionStart").join("");
    assert!(
        !digest.is_empty() && digest.chars().count() <= 1_000,
        "{}",
        digest.chars().count()
    );
}

#[test]
fn a_failing_hook_leaves_the_session_running() {
    let Some(w) = World::new(module_path!()) else {
        return;
    };
    // A "database" that is not one: every hook fails, the plugin's server refuses to start,
    // and the session still answers.
    let broken = w.claude.folder("broken").join("state.db");
    std::fs::write(
        &broken,
        b"this is not an SQLite database, it is a text file",
    )
    .unwrap();
    let model = ScriptedModel::steps(vec![Reply::tool(
        "Bash",
        json!({"command": "exit 1", "description": "a"}),
    )]);
    let run = w.session(&model, &w.shop, "Fix the build", &broken, &[]);
    assert_eq!(hook_exits(&run, "SessionStart"), [1], "{:?}", run.events);
    assert_eq!(hook_exits(&run, "UserPromptSubmit"), [1]);
    assert!(
        run.result().is_some(),
        "the session finished: {:?}",
        run.events
    );
    assert_eq!(
        std::fs::read(&broken).unwrap(),
        b"this is not an SQLite database, it is a text file",
        "a file that is not ours is never written"
    );
}

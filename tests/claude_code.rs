//! What Claude Code's model is offered and sees of our server, with the real client (the pinned
//! CLI) against a scripted model (`tests/common/claude.rs`): every tool reaches the model, at
//! a budgeted number of bytes, with schemas the Anthropic API accepts; argument errors reach it
//! as error tool results naming the field; the server's instructions reach its context whole.
//!
//! The client is found through `META_UTL_CLAUDE` (`scripts/fetch_claude.sh`); without it these
//! tests say they are skipped, unless `META_UTL_REQUIRE_CLAUDE=1` (CI), which fails them.
//! `UPDATE_README=1` rewrites the README's table of bytes per profile from what the client
//! sends.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::claude::{
    ClaudeCode, PINNED_VERSION, Reply, Run, ScriptedModel, context_text, mcp_tools, short_name,
    tool_bytes, tool_results, tool_uses,
};
use serde_json::{Value, json};

/// The server's name in the MCP configuration, as the README's `claude mcp add` names it.
const SERVER: &str = "meta-utl";
/// All 16 tools together, in bytes as Claude Code sends them to its model: 20,000 (issue 32;
/// commit 81f485a). The README's bytes-per-profile table shows what they take today.
const ALL_TOOLS_BUDGET: usize = 20_000;
/// Any one tool, in bytes as Claude Code sends it: 4,000 (issue 32).
const TOOL_BUDGET: usize = 4_000;
/// The agent profile `lessons,epistemic`, in bytes as Claude Code sends it: 7,000 (issue 32).
const AGENT_PROFILE_BUDGET: usize = 7_000;
/// The `instructions`; Claude Code keeps at most 2 KB of a server's.
const INSTRUCTIONS_BUDGET: usize = 2_048;
/// The profiles of the README's table, as `--tools` takes them (`None`: the default, all).
const PROFILES: &[Option<&str>] = &[
    None,
    Some("lessons,epistemic"),
    Some("lessons"),
    Some("epistemic"),
    Some("meta_learning"),
    Some("atc"),
    Some("utl"),
];

/// The tools the server lists under `profile`, in order, and its `instructions`.
fn listed(profile: Option<&str>) -> (Vec<String>, String) {
    let mut args = vec![];
    if let Some(p) = profile {
        args.extend(["--tools", p]);
    }
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n";
    let out = common::run(":memory:", &args, input);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let init: Value = serde_json::from_str(lines[0]).unwrap();
    let list: Value = serde_json::from_str(lines[1]).unwrap();
    let names = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let instructions = init["result"]["instructions"].as_str().unwrap().to_string();
    (names, instructions)
}

/// A session of the real client with our server (lexical matcher, a database in the client's
/// throwaway folder) under `profile`.
struct Session {
    claude: ClaudeCode,
    config: PathBuf,
    project: PathBuf,
}

impl Session {
    fn new(test: &str, profile: Option<&str>) -> Option<Session> {
        Session::on(test, profile, None)
    }

    /// A session on the database `db` (a path or URL), or a new file in the throwaway folder.
    fn on(test: &str, profile: Option<&str>, db: Option<&str>) -> Option<Session> {
        let claude = ClaudeCode::new(test)?;
        let project = claude.folder("project");
        let file = claude.folder("data").join("state.db");
        let db = db.unwrap_or(file.to_str().unwrap()).to_string();
        let mut env = vec![("META_UTL_EMBEDDING_MODEL", "off"), ("RUST_LOG", "warn")];
        if let Some(p) = profile {
            env.push(("META_UTL_TOOLS", p));
        }
        let config = claude.mcp_config(SERVER, common::bin(), &["--db", &db], &env);
        Some(Session {
            claude,
            config,
            project,
        })
    }

    /// `claude -p PROMPT` with our server, its tools allowed; `tool_search` false turns the
    /// client's deferred tool loading off (`ENABLE_TOOL_SEARCH=false`), so that every tool
    /// definition is in every request, as clients without tool search send them.
    fn run(&self, model: &ScriptedModel, tool_search: bool) -> Run {
        let allowed = format!("mcp__{SERVER}");
        let mut env = vec![];
        if !tool_search {
            env.push(("ENABLE_TOOL_SEARCH", "false"));
        }
        let run = self.claude.run_with_env(
            model,
            &self.project,
            "Work on the task.",
            &[
                "--mcp-config",
                self.config.to_str().unwrap(),
                "--strict-mcp-config",
                "--allowedTools",
                &allowed,
            ],
            &env,
        );
        assert!(
            run.status.success(),
            "claude -p failed ({}): {}\n{:?}",
            run.status,
            run.stderr,
            run.result()
        );
        let servers = &run.init().expect("an init event")["mcp_servers"];
        assert_eq!(
            servers,
            &json!([{"name": SERVER, "status": "connected", "source": "dynamic"}]),
            "{}",
            run.stderr
        );
        run
    }
}

fn tool_name(short: &str) -> String {
    format!("mcp__{SERVER}__{short}")
}

/// Our tools in a request, by short name, with their bytes; checks the top of each schema.
fn offered(request: &Value) -> BTreeMap<String, usize> {
    mcp_tools(request, SERVER)
        .into_iter()
        .map(|t| {
            let schema = t["input_schema"].as_object().expect("an input_schema");
            assert_eq!(schema["type"], "object", "{}", t["name"]);
            for key in schema.keys() {
                assert!(
                    common::TOP_LEVEL_KEYS.contains(&key.as_str()),
                    "{}: input_schema has '{key}' at the top",
                    t["name"]
                );
            }
            (short_name(t).to_string(), tool_bytes(t))
        })
        .collect()
}

fn check_budget(label: &str, tools: &BTreeMap<String, usize>, total_budget: usize) {
    let total: usize = tools.values().sum();
    let report: Vec<String> = tools.iter().map(|(n, b)| format!("{n} {b}")).collect();
    eprintln!("{label}: {total} bytes: {}", report.join(", "));
    assert!(
        total <= total_budget,
        "{label}: {total} bytes > {total_budget}"
    );
    for (name, bytes) in tools {
        assert!(
            *bytes <= TOOL_BUDGET,
            "{name}: {bytes} bytes > {TOOL_BUDGET}"
        );
    }
}

/// As users run it, with the client's tool search on: the model is told every tool's name,
/// loads them all with ToolSearch, and is then sent all 16 definitions; the server's
/// instructions reach its context whole.
#[test]
fn every_tool_reaches_the_model_through_tool_search() {
    let Some(session) = Session::new(module_path!(), None) else {
        return;
    };
    let version = session.claude.version();
    assert!(
        version.starts_with(&format!("{PINNED_VERSION} ")),
        "Claude Code {version}, not the pinned {PINNED_VERSION} (scripts/fetch_claude.sh)"
    );
    let (names, instructions) = listed(None);
    assert_eq!(names.len(), 16);
    let select: Vec<String> = names.iter().map(|n| tool_name(n)).collect();
    let model = ScriptedModel::steps(vec![Reply::tool(
        "ToolSearch",
        json!({"query": format!("select:{}", select.join(",")), "max_results": 20}),
    )]);
    session.run(&model, true);
    let requests = model.main_requests();
    assert!(requests.len() >= 2, "{} main requests", requests.len());
    let first = context_text(&requests[0]);
    for n in &select {
        assert!(first.contains(n.as_str()), "{n} is not named to the model");
    }
    assert!(
        instructions.len() <= INSTRUCTIONS_BUDGET,
        "instructions: {} bytes",
        instructions.len()
    );
    // The last sentence names the database, which differs between the two servers.
    let (guidance, _) = instructions
        .rsplit_once(" Data is stored in ")
        .expect("the instructions name the database");
    assert!(
        first.contains(&format!("## {SERVER}\n{guidance} Data is stored in ")),
        "the instructions do not reach the model whole"
    );
    let last = requests.last().unwrap();
    let tools = offered(last);
    assert_eq!(tools.keys().collect::<Vec<_>>(), {
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        sorted
    });
    check_budget("all tools, loaded by ToolSearch", &tools, ALL_TOOLS_BUDGET);
}

/// With tool search off, every definition is in every request: the default profile and the
/// agent profile, each within its budget.
#[test]
fn every_tool_is_offered_in_every_request_within_budget() {
    for (profile, budget) in [
        (None, ALL_TOOLS_BUDGET),
        (Some("lessons,epistemic"), AGENT_PROFILE_BUDGET),
    ] {
        let Some(session) = Session::new(module_path!(), profile) else {
            return;
        };
        let model = ScriptedModel::steps(vec![]);
        session.run(&model, false);
        let requests = model.main_requests();
        let tools = offered(&requests[0]);
        let (names, _) = listed(profile);
        let mut names: Vec<&String> = names.iter().collect();
        names.sort();
        assert_eq!(tools.keys().collect::<Vec<_>>(), names, "{profile:?}");
        check_budget(profile.unwrap_or("all"), &tools, budget);
    }
}

/// One invalid call per family (`common::invalid_calls`), and two of the rules between fields
/// that the schemas state only in descriptions, each with the word its message must contain.
fn invalid_calls() -> Vec<(&'static str, Value, &'static str)> {
    let mut calls = common::invalid_calls();
    calls.extend([
        (
            "set_lesson_active",
            json!({"task_id": "T", "active": false, "rationale": "r"}),
            "lesson_id",
        ),
        (
            "record_prediction",
            json!({"prediction_id": "550e8400-e29b-41d4-a716-446655440000", "actual": 0.5,
                   "predicted": 0.2}),
            "predicted",
        ),
    ]);
    calls
}

/// The model calls one tool of each family with invalid arguments (and one valid call): each
/// invalid call comes back to it as an error tool result naming the field; the valid one as a
/// result it can read.
#[test]
fn argument_errors_reach_the_model_naming_the_field() {
    let Some(session) = Session::new(module_path!(), None) else {
        return;
    };
    let mut calls: Vec<(String, Value)> = invalid_calls()
        .into_iter()
        .map(|(tool, args, _)| (tool_name(tool), args))
        .collect();
    calls.push((
        tool_name("check_strategy_blacklist"),
        json!({"task_id": "T", "strategy": "Retry the flaky test"}),
    ));
    let model = ScriptedModel::steps(vec![Reply::ToolUse(calls.clone())]);
    session.run(&model, false);
    let requests = model.main_requests();
    let last = requests.last().unwrap();
    let uses = tool_uses(last);
    let results = tool_results(last);
    assert_eq!(results.len(), calls.len(), "{results:?}");
    let by_id: BTreeMap<&str, _> = results
        .iter()
        .map(|r| (r.tool_use_id.as_str(), r))
        .collect();
    for ((id, name), k) in uses.iter().zip(0..) {
        let r = by_id[id.as_str()];
        if k < invalid_calls().len() {
            let (tool, _, word) = invalid_calls()[k];
            assert_eq!(name, &tool_name(tool));
            assert!(r.is_error, "{tool}: not an error result: {}", r.text);
            assert!(
                r.text.contains(word),
                "{tool}: {} does not name {word}",
                r.text
            );
        } else {
            assert!(!r.is_error, "{name}: {}", r.text);
            let answer: Value = serde_json::from_str(&r.text).expect("the answer as JSON");
            assert_eq!(answer["blacklisted"], false, "{answer}");
        }
    }
}

/// A team database that cannot be reached when the session starts: the server still connects
/// (before, it exited and Claude Code showed only "tools fetch failed"), and the model is told
/// why at its first call, with the fix, so it can tell the user.
#[test]
fn an_unreachable_database_is_explained_to_the_model() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("postgres://agents@127.0.0.1:{port}/team_memory");
    let Some(session) = Session::on(module_path!(), None, Some(&url)) else {
        return;
    };
    let model = ScriptedModel::steps(vec![Reply::tool(
        &tool_name("check_strategy_blacklist"),
        json!({"task_id": "T", "strategy": "Retry the flaky test"}),
    )]);
    session.run(&model, false);
    let requests = model.main_requests();
    let results = tool_results(requests.last().unwrap());
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    assert!(r.is_error, "{}", r.text);
    for part in [
        "cannot connect to PostgreSQL",
        &port.to_string(),
        "PGPASSWORD",
        "tell the user",
    ] {
        assert!(r.text.contains(part), "{part}: {}", r.text);
    }
}

/// The README's table of bytes per profile is what Claude Code sends (tool search off: every
/// definition in every request); `UPDATE_README=1` rewrites it.
#[test]
fn the_readme_table_of_bytes_per_profile_is_what_claude_code_sends() {
    let mut rows = vec![
        "| profile | tools | bytes per request (all definitions) | largest tool |".to_string(),
        "|---|---|---|---|".to_string(),
    ];
    for profile in PROFILES {
        let Some(session) = Session::new(module_path!(), *profile) else {
            return;
        };
        let model = ScriptedModel::steps(vec![]);
        session.run(&model, false);
        let tools = offered(&model.main_requests()[0]);
        let total: usize = tools.values().sum();
        let (largest, bytes) = tools.iter().max_by_key(|(_, b)| **b).unwrap();
        let label = profile.map_or("all (default)".to_string(), |p| format!("`{p}`"));
        rows.push(format!(
            "| {label} | {} | {} | `{largest}` {} |",
            tools.len(),
            thousands(total),
            thousands(*bytes)
        ));
    }
    let table = rows.join("\n") + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- tool-bytes -->\n", "<!-- /tool-bytes -->");
    let a = readme
        .find(start)
        .expect("README has a <!-- tool-bytes --> marker")
        + start.len();
    let b = a + readme[a..].find(end).expect("and its end marker");
    // The first paragraph of the block says which client measured it and when.
    let (note, current) = readme[a..b].split_once("\n\n").unwrap_or(("", ""));
    let stamp = format!("Claude Code {PINNED_VERSION}");
    if current != table || !note.contains(&stamp) {
        assert!(
            std::env::var_os("UPDATE_README").is_some(),
            "the README's table of bytes per profile differs from what Claude Code sends; run \
             `UPDATE_README=1 cargo test --test claude_code readme` and review the diff.\n{table}"
        );
        let date = chrono::Utc::now().format("%Y-%m-%d");
        readme.replace_range(
            a..b,
            &format!(
                "Measured with {stamp} on {date} by `tests/claude_code.rs` (bytes of name, \
                 description and input schema as the client sends them):\n\n{table}"
            ),
        );
        std::fs::write(&path, readme).unwrap();
    }
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

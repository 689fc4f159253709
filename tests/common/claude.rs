//! The real Claude Code CLI against a scripted model, so that what reaches the model's context
//! is a fact a test can assert.
//!
//! [`ScriptedModel`] is an HTTP server on 127.0.0.1 that speaks the Anthropic Messages API
//! (`POST /v1/messages`; server-sent events when the request asks for `stream`): it answers each
//! request from a script and records every request body. [`ClaudeCode`] runs the pinned CLI
//! (`claude -p PROMPT --output-format stream-json --verbose --include-hook-events …`) in a
//! throwaway `HOME`, pointed at the scripted model with `ANTHROPIC_BASE_URL` and a dummy key.
//! A test then reads, from the recorded requests, which tools the model was offered and their
//! bytes ([`mcp_tools`], [`tool_bytes`]), what text reached its context ([`context_text`]), and
//! the tool results it saw ([`tool_results`]).
//!
//! Requests that carry no `tools` are the client's side requests (a session title and the like):
//! they get a plain text answer and do not advance the script. A `HOME` outlives one run
//! ([`ClaudeCode::run`] takes the working directory), so several sessions can share it, as
//! multi-session scenarios (a plugin's recall across sessions) need.
//!
//! The CLI is found through [`CLAUDE_ENV`] (`scripts/fetch_claude.sh` installs the pinned
//! version and prints its path). Without it a test says it is skipped, unless
//! [`REQUIRE_ENV`] is `1` (CI), which makes that a failure. Facts of the client this relies on
//! were read off the pinned version (2.1.330): MCP tools are named `mcp__SERVER__TOOL`; a
//! server's `instructions` go into the system prompt; tool definitions are sent as
//! `{name, description, input_schema}` (plus `defer_loading` when the client defers them).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// The environment variable naming the `claude` executable to test with.
pub const CLAUDE_ENV: &str = "META_UTL_CLAUDE";

/// When `1`, a missing Claude Code fails the tests that need it instead of skipping them.
pub const REQUIRE_ENV: &str = "META_UTL_REQUIRE_CLAUDE";

/// The Claude Code version the tests are written against (`scripts/fetch_claude.sh` installs
/// it; `tests/clients/claude_code.sh` pins the same).
pub const PINNED_VERSION: &str = "2.1.330";

/// How long one `claude -p` run may take before the test fails.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The `claude` executable, or `None` after saying on stderr that `test` is skipped.
///
/// # Panics
/// When it is missing and [`REQUIRE_ENV`] is `1`, or when [`CLAUDE_ENV`] names no file.
pub fn claude_bin(test: &str) -> Option<PathBuf> {
    match std::env::var_os(CLAUDE_ENV).filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "{CLAUDE_ENV}={} is not a file (scripts/fetch_claude.sh DIR prints the path)",
                p.display()
            );
            Some(p)
        }
        None => {
            assert!(
                std::env::var(REQUIRE_ENV).as_deref() != Ok("1"),
                "{test}: no Claude Code ({CLAUDE_ENV} is not set), and {REQUIRE_ENV}=1"
            );
            let _ = writeln!(
                std::io::stderr(),
                "{test}: skipped: no Claude Code (set {CLAUDE_ENV} to the path \
                 scripts/fetch_claude.sh prints)"
            );
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The scripted model

/// One answer of the scripted model.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A text message; the turn ends (`stop_reason: end_turn`).
    Text(String),
    /// Tool calls, each `(tool name, input)`, in one message (`stop_reason: tool_use`); Claude
    /// Code runs them and sends their results in its next request.
    ToolUse(Vec<(String, Value)>),
}

impl Reply {
    /// One tool call.
    pub fn tool(name: &str, input: Value) -> Reply {
        Reply::ToolUse(vec![(name.to_string(), input)])
    }

    /// A text message.
    pub fn text(text: &str) -> Reply {
        Reply::Text(text.to_string())
    }
}

/// One request the client sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The HTTP method.
    pub method: String,
    /// The request path with its query (`/v1/messages?beta=true`).
    pub path: String,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// Whether this is a request of the agent's loop (it offers tools) rather than a side
    /// request.
    pub fn is_main(&self) -> bool {
        self.body.get("tools").is_some_and(Value::is_array)
    }
}

/// The script: given a main-loop request, the reply. Side requests never reach it.
pub type Script = Box<dyn FnMut(&Value) -> Reply + Send>;

/// A Messages API server on 127.0.0.1 answering from a script; stops when dropped.
pub struct ScriptedModel {
    server: Arc<tiny_http::Server>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    thread: Option<JoinHandle<()>>,
    port: u16,
}

impl ScriptedModel {
    /// A model answering main-loop requests with `replies` in order, then with the text
    /// `Done.` for every further one.
    pub fn steps(replies: Vec<Reply>) -> ScriptedModel {
        let mut replies = replies.into_iter();
        ScriptedModel::start(Box::new(move |_| {
            replies.next().unwrap_or_else(|| Reply::text("Done."))
        }))
    }

    /// A model answering main-loop requests with `script`.
    pub fn start(mut script: Script) -> ScriptedModel {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let server = Arc::clone(&server);
            let requests = Arc::clone(&requests);
            std::thread::spawn(move || {
                let mut next_id = 0u64;
                for mut request in server.incoming_requests() {
                    let mut raw = Vec::new();
                    let _ = request.as_reader().read_to_end(&mut raw);
                    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
                    let recorded = Recorded {
                        method: request.method().to_string(),
                        path: request.url().to_string(),
                        body,
                    };
                    let is_messages = recorded.method == "POST"
                        && recorded.path.split('?').next() == Some("/v1/messages");
                    let reply = if !is_messages {
                        None
                    } else if recorded.is_main() {
                        Some(script(&recorded.body))
                    } else {
                        Some(Reply::text("Scripted side answer."))
                    };
                    let stream = recorded.body.get("stream") == Some(&Value::Bool(true));
                    requests.lock().unwrap().push(recorded);
                    let response = match reply {
                        None => tiny_http::Response::from_string(
                            json!({"type": "error", "error": {"type": "not_found_error",
                                   "message": "the scripted model serves POST /v1/messages only"}})
                            .to_string(),
                        )
                        .with_status_code(404)
                        .with_header(header("content-type", "application/json")),
                        Some(reply) => {
                            next_id += 1;
                            let message = message(&reply, next_id);
                            if stream {
                                tiny_http::Response::from_string(events(&message))
                                    .with_header(header("content-type", "text/event-stream"))
                            } else {
                                tiny_http::Response::from_string(message.to_string())
                                    .with_header(header("content-type", "application/json"))
                            }
                        }
                    };
                    let _ = request.respond(response);
                }
            })
        };
        ScriptedModel {
            server,
            requests,
            thread: Some(thread),
            port,
        }
    }

    /// The base URL to give the client (`ANTHROPIC_BASE_URL`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request recorded so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of the main-loop requests recorded so far.
    pub fn main_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_main)
            .map(|r| r.body)
            .collect()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}

/// The Messages API message of a reply.
fn message(reply: &Reply, id: u64) -> Value {
    let (content, stop) = match reply {
        Reply::Text(t) => (vec![json!({"type": "text", "text": t})], "end_turn"),
        Reply::ToolUse(calls) => (
            calls
                .iter()
                .enumerate()
                .map(|(k, (name, input))| {
                    json!({"type": "tool_use", "id": format!("toolu_{id:04}_{k:02}"),
                           "name": name, "input": input})
                })
                .collect(),
            "tool_use",
        ),
    };
    json!({
        "id": format!("msg_scripted_{id:04}"),
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    })
}

/// A message as the server-sent events of a streamed answer: `message_start`, per content
/// block `content_block_start` / one `content_block_delta` (`text_delta` or `input_json_delta`)
/// / `content_block_stop`, then `message_delta` with the stop reason and `message_stop`.
fn events(message: &Value) -> String {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut out = Vec::new();
    out.push(json!({"type": "message_start", "message": start}));
    for (index, block) in message["content"].as_array().unwrap().iter().enumerate() {
        let (empty, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            let mut empty = block.clone();
            empty["input"] = json!({});
            (
                empty,
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        out.push(json!({"type": "content_block_start", "index": index, "content_block": empty}));
        out.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        out.push(json!({"type": "content_block_stop", "index": index}));
    }
    out.push(json!({"type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
                    "usage": {"output_tokens": 1}}));
    out.push(json!({"type": "message_stop"}));
    out.iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The client

/// The pinned Claude Code CLI with a throwaway `HOME` of its own, shared by its runs.
pub struct ClaudeCode {
    bin: PathBuf,
    dir: tempfile::TempDir,
}

/// What one `claude -p` run printed.
#[derive(Debug)]
pub struct Run {
    /// How the process ended.
    pub status: ExitStatus,
    /// Its `stream-json` events, one JSON value per stdout line.
    pub events: Vec<Value>,
    /// Its stderr.
    pub stderr: String,
}

impl Run {
    /// The final `result` event.
    pub fn result(&self) -> Option<&Value> {
        self.events.iter().rev().find(|e| e["type"] == "result")
    }

    /// The `system`/`init` event: the tools and MCP servers (with their status) of the session.
    pub fn init(&self) -> Option<&Value> {
        self.events
            .iter()
            .find(|e| e["type"] == "system" && e["subtype"] == "init")
    }
}

impl ClaudeCode {
    /// The client for `test`, or `None` when it is missing (see [`claude_bin`]).
    pub fn new(test: &str) -> Option<ClaudeCode> {
        let bin = claude_bin(test)?;
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["home", "tmp"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        Some(ClaudeCode { bin, dir })
    }

    /// The client's `--version`, e.g. `2.1.330 (Claude Code)`.
    pub fn version(&self) -> String {
        let out = Command::new(&self.bin)
            .arg("--version")
            .env("HOME", self.home())
            .env("DISABLE_AUTOUPDATER", "1")
            .output()
            .expect("claude --version");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The throwaway `HOME`.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A new empty folder under the throwaway directory, for a project to run in.
    pub fn folder(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Write an MCP configuration naming one stdio server and return its path.
    pub fn mcp_config(
        &self,
        name: &str,
        command: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> PathBuf {
        let env: serde_json::Map<String, Value> = env
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect();
        let config = json!({"mcpServers": {name: {
            "type": "stdio", "command": command, "args": args, "env": env,
        }}});
        let path = self.dir.path().join(format!("mcp-{name}.json"));
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }

    /// Run `claude -p PROMPT` in `cwd` against `model`, with `args` after the fixed ones
    /// (`--mcp-config FILE`, `--allowedTools NAMES`, `--plugin-dir DIR`, …).
    ///
    /// Claude Code gets nothing of the caller's environment but `PATH`: a dummy API key, the
    /// scripted model's URL, the throwaway `HOME` and `TMPDIR`, and the switches that turn off
    /// the auto-updater, telemetry and other traffic.
    ///
    /// # Panics
    /// When the process cannot be started or runs past [`RUN_TIMEOUT`].
    pub fn run(&self, model: &ScriptedModel, cwd: &Path, prompt: &str, args: &[&str]) -> Run {
        self.run_with_env(model, cwd, prompt, args, &[])
    }

    /// [`ClaudeCode::run`] with `env` added to the client's environment (for example
    /// `ENABLE_TOOL_SEARCH=false`, or a plugin's settings).
    ///
    /// # Panics
    /// As [`ClaudeCode::run`].
    pub fn run_with_env(
        &self,
        model: &ScriptedModel,
        cwd: &Path,
        prompt: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Run {
        let tmp = self.dir.path().join("tmp");
        let mut child = Command::new(&self.bin)
            .args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
            .arg("--include-hook-events")
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("TMPDIR", &tmp)
            .env("CLAUDE_CODE_TMPDIR", &tmp)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .env("CI", "true")
            .env("ANTHROPIC_BASE_URL", model.url())
            .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-dummy-key")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_UPDATES", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("MCP_TIMEOUT", "30000")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.display()));
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > RUN_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "claude -p ran past {RUN_TIMEOUT:?}; stderr: {}",
                    err.join().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let events = stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| json!({"unparsed": l})))
            .collect();
        Run {
            status,
            events,
            stderr,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the recorded requests

/// The tools of server `server` in a main-loop request, as sent (`mcp__SERVER__TOOL`).
pub fn mcp_tools<'a>(request: &'a Value, server: &str) -> Vec<&'a Value> {
    let prefix = format!("mcp__{server}__");
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
                .collect()
        })
        .unwrap_or_default()
}

/// A tool's name without the `mcp__SERVER__` prefix.
pub fn short_name(tool: &Value) -> &str {
    let name = tool["name"].as_str().unwrap_or("");
    name.rsplit("__").next().unwrap_or(name)
}

/// The bytes a tool definition costs as the client sends it: compact JSON of its `name`,
/// `description` and `input_schema`, UTF-8.
pub fn tool_bytes(tool: &Value) -> usize {
    let shown = json!({
        "name": tool["name"],
        "description": tool["description"],
        "input_schema": tool["input_schema"],
    });
    serde_json::to_vec(&shown).unwrap().len()
}

/// Every text of a request that the model reads: the system prompt's blocks and the text of
/// every message (text blocks, and the text of tool results), joined by newlines.
pub fn context_text(request: &Value) -> String {
    let mut out = Vec::new();
    match &request["system"] {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => out.extend(
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string)),
        ),
        _ => {}
    }
    for m in request["messages"].as_array().into_iter().flatten() {
        collect_text(&m["content"], &mut out);
    }
    out.join("\n")
}

fn collect_text(content: &Value, out: &mut Vec<String>) {
    match content {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                if let Some(t) = b["text"].as_str() {
                    out.push(t.to_string());
                }
                if b["type"] == "tool_result" {
                    collect_text(&b["content"], out);
                }
            }
        }
        _ => {}
    }
}

/// A tool result the model saw.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// The `tool_use_id` it answers.
    pub tool_use_id: String,
    /// Whether the client marked it an error (`is_error`).
    pub is_error: bool,
    /// Its text.
    pub text: String,
}

/// The tool results in a request's messages, in order.
pub fn tool_results(request: &Value) -> Vec<ToolResult> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let mut text = Vec::new();
                collect_text(&b["content"], &mut text);
                out.push(ToolResult {
                    tool_use_id: b["tool_use_id"].as_str().unwrap_or("").to_string(),
                    is_error: b["is_error"] == true,
                    text: text.join("\n"),
                });
            }
        }
    }
    out
}

/// The `tool_use` blocks of the assistant messages in a request, as `(id, name)`, in order.
pub fn tool_uses(request: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_use" {
                out.push((
                    b["id"].as_str().unwrap_or("").to_string(),
                    b["name"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    out
}

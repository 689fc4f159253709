//! Test harness: spawn the real `meta-utl-mcp` binary on a temporary database and talk
//! JSON-RPC to it over stdio, with timeouts so a hung server fails the test instead of hanging it.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub mod claude;
pub mod demo;
pub mod pg;

/// How long any single response may take before the test fails.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// JSON-RPC "invalid params": how revisions before MCP 2025-11-25 answer invalid tool
/// arguments; [`Server::tool_err`] reports it for the tool-result form too.
pub const INVALID_ARGUMENTS: i64 = -32602;

/// Rules between top-level fields, which a client accepts in no input schema (no `oneOf`,
/// `allOf`, `if`/`then` or `not` at the top) and which the fields' descriptions state instead:
/// a call the schema accepts and the server refuses with one of these messages is counted and
/// printed, not failed. (tool, words of the server's message, the rule)
pub const CROSS_FIELD_RULES: &[(&str, &str, &str)] = &[
    (
        "record_prediction",
        "cannot be combined with 'prediction_id'",
        "prediction_id goes without the stored fields",
    ),
    (
        "record_prediction",
        "or send prediction_id and actual",
        "embedder_index and predicted unless prediction_id",
    ),
    (
        "record_prediction",
        "go together: send both or neither",
        "delta_s and delta_c together",
    ),
    (
        "set_lesson_active",
        "give either 'lesson_id', or both 'task_id' and 'strategy'",
        "lesson_id, or task_id and strategy",
    ),
    (
        "trigger_recalibration",
        "applies to level 3 only",
        "reset and seed with level 3",
    ),
];

/// Schema truth on one call answered over the wire: the published `schema` and the server
/// agree on `args`, but for the two documented differences (`wire::canonical_choices`: the
/// schema names one spelling of a case-insensitive choice; [`CROSS_FIELD_RULES`]: rules between
/// top-level fields are stated in descriptions). `answer` is the server's JSON-RPC response.
pub fn assert_schema_agrees(tool: &str, schema: &Value, args: &Value, answer: &Value) {
    let validator = jsonschema::validator_for(schema).unwrap();
    let server_ok = answer.get("result").is_some_and(|x| x["isError"] != true);
    let schema_ok = validator.is_valid(args);
    if schema_ok == server_ok {
        return;
    }
    if server_ok {
        let canonical = meta_utl_mcp::tools::wire::canonical_choices(schema, args);
        assert!(
            validator.is_valid(&canonical),
            "{tool} {args}: the schema refuses a call the server serves, not for casing: {answer}"
        );
    } else {
        let refusal = answer.to_string();
        assert!(
            CROSS_FIELD_RULES
                .iter()
                .any(|(t, words, _)| *t == tool && refusal.contains(words)),
            "{tool} {args}: the schema accepts a call the server refuses: {answer}"
        );
    }
}

/// The stdout of a console command `args` that must have succeeded (the message otherwise
/// shows its exit status and stderr).
pub fn succeeded(out: Output, args: &[&str]) -> String {
    assert!(
        out.status.success(),
        "{args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// One invalid call of each tool family, and a word its message must contain (the field at
/// fault): what `tests/model_surface.rs` checks over the wire and `tests/claude_code.rs` with
/// the real client.
pub fn invalid_calls() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("get_meta_learning_log", json!({"limit": 0}), "limit"),
        (
            "get_calibration_metrics",
            json!({"timeframe": "2h"}),
            "timeframe",
        ),
        ("gwt_compute_delta_sc", json!({}), "vertex_id"),
        (
            "epistemic_action",
            json!({"action_type": "believe", "target": "t", "rationale": "r"}),
            "action_type",
        ),
        (
            "check_strategy_blacklist",
            json!({"strategy": "x"}),
            "task_id",
        ),
    ]
}

/// The keys an input schema may have at its top: the Anthropic API refuses a tool whose
/// `input_schema` has `oneOf`, `anyOf`, `allOf`, `not` or `if`/`then`/`else` there, and
/// Claude Code then drops the tool without a word (three of ours were, before).
pub const TOP_LEVEL_KEYS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$defs",
];

/// Path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_meta-utl-mcp")
}

/// The binary under test with the lexical matcher pinned (`META_UTL_EMBEDDING_MODEL=off`): CI
/// exports a model folder for the semantic tests, and a developer may have one installed in the
/// default folder; a test that wants the model passes `--embedding-model DIR`, which wins over
/// the environment. Every server a test starts is built from this. The project is pinned too
/// ([`TEST_PROJECT`]), so that servers and consoles started from different folders share
/// their rows; the tests of projects remove it and choose the folder.
pub fn command() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env("META_UTL_EMBEDDING_MODEL", "off");
    cmd.env("META_UTL_PROJECT", TEST_PROJECT);
    cmd
}

/// The project every process [`command`] starts works in.
pub const TEST_PROJECT: &str = "example.com/tests/meta-utl-mcp";

/// The environment variable naming the real model folder for the tests that need the
/// weights (the server reads it too; `scripts/fetch_model.sh` makes the folder).
pub const MODEL_ENV: &str = "META_UTL_EMBEDDING_MODEL";

/// Set to `1` (CI, where the model is fetched), a test that needs the real model fails
/// instead of skipping when [`MODEL_ENV`] is unset, empty or `off`.
pub const REQUIRE_MODEL_ENV: &str = "META_UTL_REQUIRE_MODEL";

/// Assert that `dir` holds no name starting with `.`: what a model install leaves behind if it
/// fails to clean up (its staging, download and replaced folders are hidden siblings of the
/// destination). The message lists them.
pub fn assert_no_leftovers(dir: &Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "left in {}: {left:?}", dir.display());
}

/// The real embedding model's folder, or `None` after saying on stderr that `test` is skipped
/// (written to the stderr handle itself, so the line shows even when the test passes).
///
/// # Panics
/// When there is no model and [`REQUIRE_MODEL_ENV`] is `1`.
pub fn real_model(test: &str) -> Option<PathBuf> {
    match std::env::var_os(MODEL_ENV).filter(|v| !v.is_empty() && v != "off") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            assert!(
                std::env::var(REQUIRE_MODEL_ENV).as_deref() != Ok("1"),
                "{test}: no embedding model ({MODEL_ENV} is not set), and {REQUIRE_MODEL_ENV}=1"
            );
            let _ = writeln!(
                std::io::stderr(),
                "{test}: skipped: no embedding model (set {MODEL_ENV} to a folder made by \
                 scripts/fetch_model.sh)"
            );
            None
        }
    }
}

/// Where a test's database lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A file in a temporary folder.
    Sqlite,
    /// A database of its own on the test process's PostgreSQL ([`pg`]).
    Postgres,
}

/// A fresh empty database for one test: the folder or PostgreSQL database is removed when
/// this is dropped.
pub struct TestDb {
    /// What `--db` takes: the file path, or the `postgres://` URL.
    pub target: PathBuf,
    /// The PostgreSQL database, on [`Backend::Postgres`].
    pub pg: Option<pg::Database>,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    /// A fresh empty database on this backend (on SQLite `state.db` in a new folder, not
    /// created yet).
    ///
    /// # Panics
    /// On PostgreSQL when there is none: the test wrappers of [`both_backends`] check
    /// [`pg::available`] first.
    pub fn fresh(self) -> TestDb {
        match self {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                TestDb {
                    target: dir.path().join("state.db"),
                    pg: None,
                    _dir: Some(dir),
                }
            }
            Backend::Postgres => {
                let db = pg::Database::create();
                TestDb {
                    target: PathBuf::from(&db.url),
                    pg: Some(db),
                    _dir: None,
                }
            }
        }
    }
}

/// Runs each named test body (`fn NAME(backend: Backend)`) on both backends, as the tests
/// `NAME::sqlite` and `NAME::postgres`; the PostgreSQL one says it is skipped when there is
/// no PostgreSQL (see [`pg::available`]).
#[allow(unused_macros)]
macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name($crate::common::Backend::Sqlite)
            }

            #[test]
            fn postgres() {
                if $crate::common::pg::available(module_path!()) {
                    super::$name($crate::common::Backend::Postgres)
                }
            }
        }
    )+};
}

#[allow(unused_imports)]
pub(crate) use both_backends;

/// Runs each named test body (`fn NAME()`) only where PostgreSQL is there, saying it is
/// skipped otherwise.
#[allow(unused_macros)]
macro_rules! postgres_only {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn postgres() {
                if $crate::common::pg::available(module_path!()) {
                    super::$name()
                }
            }
        }
    )+};
}

#[allow(unused_imports)]
pub(crate) use postgres_only;

/// A running server.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    next_id: i64,
    pending: Vec<Value>,
    /// The database: the file path, or the `postgres://` URL.
    pub db: PathBuf,
    _owned: Option<TestDb>,
}

impl Server {
    /// A server on a fresh SQLite database in its own temp dir.
    pub fn start() -> Server {
        Server::start_on(Backend::Sqlite)
    }

    /// A server on a fresh database of `backend`, removed when the server is dropped.
    pub fn start_on(backend: Backend) -> Server {
        let fresh = backend.fresh();
        let mut s = Server::start_at(&fresh.target, &[]);
        s._owned = Some(fresh);
        s
    }

    /// A server on the given database (a file path or a `postgres://` URL) with extra flags.
    pub fn start_at(db: &(impl AsRef<OsStr> + ?Sized), extra: &[&str]) -> Server {
        Server::start_with(db, extra, |_| {})
    }

    /// [`Server::start_at`], with the command adjusted by `adjust` before it starts (its
    /// working directory, an environment variable).
    pub fn start_with(
        db: &(impl AsRef<OsStr> + ?Sized),
        extra: &[&str],
        adjust: impl FnOnce(&mut Command),
    ) -> Server {
        let db = db.as_ref();
        let mut cmd = command();
        cmd.arg("--db")
            .arg(db)
            .args(extra)
            .env_remove("META_UTL_DB")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        adjust(&mut cmd);
        let mut child = cmd.spawn().expect("spawn meta-utl-mcp");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr,
            next_id: 1,
            pending: Vec::new(),
            db: PathBuf::from(db),
            _owned: None,
        }
    }

    /// Wait until the server's store is open: a tool call is answered only then, while `ping`
    /// and the handshake are answered as the store opens.
    pub fn ready(&mut self) {
        self.tool_ok("get_meta_learning_status", json!({}));
    }

    /// Write raw bytes to stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    /// Write one line (a newline is appended).
    pub fn send_line(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.send_raw(&bytes);
    }

    /// The next stdout line, parsed as JSON; fails the test on timeout or non-JSON output.
    pub fn recv(&mut self) -> Value {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        self.recv_line()
    }

    fn recv_line(&mut self) -> Value {
        match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
            Ok(line) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}")),
            Err(RecvTimeoutError::Timeout) => panic!("no response within {RESPONSE_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("{}", self.closed()),
        }
    }

    /// The next stdout line as sent, unparsed; fails the test on timeout.
    pub fn recv_raw(&mut self) -> String {
        assert!(self.pending.is_empty(), "parsed answers are pending");
        match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no response within {RESPONSE_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("{}", self.closed()),
        }
    }

    /// Why stdout closed: the exit status and stderr of the server (for the failure message).
    fn closed(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break format!("{s}"),
                _ if Instant::now() > deadline => break "still running".to_string(),
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        let stderr = if status == "still running" {
            String::new()
        } else {
            stderr.join().unwrap_or_default()
        };
        format!("server closed stdout ({status}); stderr: {stderr}")
    }

    /// Whether a line arrives within `wait` (used to prove that nothing is sent).
    pub fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => Some(serde_json::from_str(&line).expect("JSON")),
            Err(_) => None,
        }
    }

    /// Send a request and return the whole response with the same id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = if params.is_null() {
            json!({"jsonrpc": "2.0", "id": id, "method": method})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        };
        self.send_line(&msg.to_string());
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        loop {
            if let Some(pos) = self.pending.iter().position(|v| v["id"] == json!(id)) {
                return self.pending.remove(pos);
            }
            assert!(Instant::now() < deadline, "no response to id {id}");
            let v = self.recv_line();
            self.pending.push(v);
        }
    }

    /// `initialize` with a protocol version, then `notifications/initialized`.
    pub fn initialize(&mut self, version: &str) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        self.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        r
    }

    /// `tools/call`, returning the whole response.
    pub fn call(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))
    }

    /// `tools/call` that must succeed with `isError: false`; returns `structuredContent` and
    /// checks that the text block holds the same JSON.
    pub fn tool_ok(&mut self, name: &str, args: Value) -> Value {
        let r = self.call(name, args.clone());
        let result = r
            .get("result")
            .unwrap_or_else(|| panic!("{name} {args} failed: {r}"));
        assert_eq!(result["isError"], json!(false), "{name} {args}: {r}");
        let text = result["content"][0]["text"].as_str().expect("text content");
        let parsed: Value = serde_json::from_str(text).expect("text is JSON");
        assert_eq!(
            parsed, result["structuredContent"],
            "text and structuredContent differ"
        );
        result["structuredContent"].clone()
    }

    /// `tools/call` that must be refused; returns (code, message). A JSON-RPC error gives its
    /// code and message. Invalid arguments answered as a tool result (`isError: true` with the
    /// message as text, SEP-1303: what a session without a handshake, or from MCP 2025-11-25
    /// on, gets) give [`INVALID_ARGUMENTS`], the code older revisions use, and the text.
    pub fn tool_err(&mut self, name: &str, args: Value) -> (i64, String) {
        let r = self.call(name, args.clone());
        if let Some(err) = r.get("error") {
            return (
                err["code"].as_i64().expect("code"),
                err["message"].as_str().expect("message").to_string(),
            );
        }
        let result = &r["result"];
        assert_eq!(
            result["isError"],
            json!(true),
            "{name} {args} should fail: {r}"
        );
        let text = result["content"][0]["text"].as_str().expect("text content");
        assert!(
            !text.starts_with('{'),
            "{name} {args}: an argument error's text is the message, not JSON: {r}"
        );
        (INVALID_ARGUMENTS, text.to_string())
    }

    /// Close stdin and wait for exit; returns the status, every remaining stdout line, and stderr.
    pub fn finish(mut self) -> (ExitStatus, Vec<String>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            assert!(Instant::now() < deadline, "server did not exit after EOF");
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut rest: Vec<String> = self.pending.drain(..).map(|v| v.to_string()).collect();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            rest.push(line);
        }
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        let stderr = stderr.join().unwrap_or_default();
        (status, rest, stderr)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stop this server (EOF) and start a new one on the same database.
    pub fn restart(mut self) -> Server {
        let dir = self._owned.take();
        let db = self.db.clone();
        let (status, _, stderr) = self.finish();
        assert!(status.success(), "exit {status:?}: {stderr}");
        let mut s = Server::start_at(&db, &[]);
        s._owned = dir;
        s
    }

    /// Kill the process with SIGKILL; returns what keeps its database, when the server
    /// made it.
    pub fn kill(mut self) -> Option<TestDb> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self._owned.take()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary run with `--db db ARGS…` and all of `input` on stdin, to its end (`META_UTL_DB`
/// and `PGPASSWORD` removed, so that only what the test passes counts).
pub fn run(db: &(impl AsRef<OsStr> + ?Sized), args: &[&str], input: &[u8]) -> Output {
    run_with(db, args, input, |_| {})
}

/// [`run`], with the command adjusted by `adjust` before it starts (an environment variable, a
/// resource limit).
pub fn run_with(
    db: &(impl AsRef<OsStr> + ?Sized),
    args: &[&str],
    input: &[u8],
    adjust: impl FnOnce(&mut Command),
) -> Output {
    let mut cmd = command();
    cmd.arg("--db")
        .arg(db.as_ref())
        .args(args)
        .env_remove("META_UTL_DB")
        .env_remove("PGPASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    adjust(&mut cmd);
    let mut child = cmd.spawn().expect("spawn meta-utl-mcp");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().unwrap();
    out
}

/// The message of a failed call (a JSON-RPC error or a tool result with `isError`), `None`
/// when it succeeded.
pub fn failure(r: &Value) -> Option<String> {
    if let Some(e) = r.get("error") {
        return Some(e["message"].as_str().unwrap_or_default().to_string());
    }
    (r["result"]["isError"] == true).then(|| {
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    })
}

/// Run the binary with all of `input` piped to stdin, wait for exit; returns (status, stdout
/// lines, stderr).
pub fn pipe(db: &(impl AsRef<OsStr> + ?Sized), input: &[u8]) -> (ExitStatus, Vec<String>, String) {
    let out = run(db, &[], input);
    let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    (
        out.status,
        stdout.lines().map(str::to_string).collect(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Assert that `lines` hold nothing but the answer to `{"id":1,"method":"ping"}`: a server
/// answers `ping` while its store opens, so a refused store may have answered it.
pub fn at_most_the_ping_answer(lines: &[String]) {
    for line in lines {
        let answer: Value = serde_json::from_str(line).expect("an answer line is JSON");
        assert_eq!(
            answer,
            json!({"jsonrpc":"2.0","id":1,"result":{}}),
            "nothing but ping"
        );
    }
}

/// A `record_prediction` request line (no newline) with JSON-RPC id `id`, for embedder
/// `embedder % 13`.
pub fn record_line(id: usize, embedder: usize) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"record_prediction",
        "arguments":{"embedder_index": embedder % 13, "predicted": 0.9, "actual": 0.4}}})
    .to_string()
}

/// One server on `db` fed `record_prediction` writes until it answered `answers` of them, each
/// a success, then killed with SIGKILL while more are in flight; returns how many it answered.
pub fn write_until_killed(db: &(impl AsRef<OsStr> + ?Sized), answers: u64) -> u64 {
    let mut child = command()
        .arg("--db")
        .arg(db.as_ref())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..5000 {
            if stdin
                .write_all((record_line(i, i) + "\n").as_bytes())
                .is_err()
            {
                break;
            }
        }
    });
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut answered = 0;
    let mut line = String::new();
    while answered < answers {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "stdout closed early");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["result"]["isError"], false, "a write failed: {line}");
        answered += 1;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = writer.join();
    answered
}

/// Assert that a stdout line is a valid JSON-RPC 2.0 response (or batch of them).
pub fn assert_jsonrpc_response(line: &str) {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    let items = match &v {
        Value::Array(a) => a.clone(),
        _ => vec![v.clone()],
    };
    for item in items {
        assert_eq!(item["jsonrpc"], "2.0", "{line}");
        assert!(item.get("id").is_some(), "{line}");
        assert!(
            item.get("result").is_some() != item.get("error").is_some(),
            "exactly one of result/error: {line}"
        );
    }
}

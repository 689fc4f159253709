//! The tool registry (one list) and the dispatcher that runs a tool against the shared service
//! and the store.
//!
//! Each tool family lives in its own file and exports `TOOLS: &[Tool]`. A tool is a unit struct
//! implementing [`ToolDef`] (name, texts, annotations, typed input and output from [`wire`]) and
//! [`ReadTool`] or [`WriteTool`] (its handler); [`Tool::read`] / [`Tool::write`] turn it into a
//! registry entry whose schemas are derived from the types. A handler only parses (done for it),
//! calls the service operation, persists what it returns and shapes the answer. It never sees
//! the lock, a JSON-RPC id or stdout: it gets a [`ReadCtx`] or [`WriteCtx`].
//! [`App`] holds the `RwLock<MetaLearningService>` and the [`Store`], runs write tools inside one
//! `BEGIN IMMEDIATE` transaction after reloading state other processes changed, and maps
//! [`ToolError`] to the wire in one place ([`App::call_tool`]).

pub mod args;
pub mod atc;
pub mod epistemic;
pub mod lessons;
pub mod meta_learning;
pub mod utl;
pub mod wire;

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use parking_lot::RwLock;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::protocol::jsonrpc::RpcError;
use crate::protocol::mcp;
use crate::service::{Family, MetaLearningService};
use crate::store::{self, Db, Store, StoreError};
pub use args::Args;

/// A handler failure that becomes a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// `-32602`: the arguments are wrong; the message names the field and what is allowed.
    #[error("{0}")]
    InvalidParams(String),
    /// `-32603`: the store or another component failed.
    #[error("{0}")]
    Internal(String),
}

impl ToolError {
    /// `InvalidParams` with a message.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::InvalidParams(message.into())
    }
}

impl From<StoreError> for ToolError {
    fn from(e: StoreError) -> Self {
        ToolError::Internal(e.to_string())
    }
}

/// What a handler returns on success.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A result object (`isError: false`).
    Ok(Value),
    /// A structured failure object (`isError: true`), for tools whose contract requires one
    /// (lessons, `BELIEF_NOT_FOUND`).
    Failed(Value),
}

/// A handler's result.
pub type ToolResult = Result<Outcome, ToolError>;

/// What a read handler sees.
pub struct ReadCtx<'a> {
    /// The service, up to date with the store.
    pub svc: &'a MetaLearningService,
    /// A read transaction.
    pub db: &'a Db<'a>,
    /// The time of the call.
    pub now: DateTime<Utc>,
    /// The database path as shown to users.
    pub db_path: &'a str,
}

/// What a write handler sees.
pub struct WriteCtx<'a> {
    /// The service, up to date with the store; mutate it and persist through `db`.
    pub svc: &'a mut MetaLearningService,
    /// A `BEGIN IMMEDIATE` transaction, committed when the handler returns `Ok`.
    pub db: &'a Db<'a>,
    /// The time of the call.
    pub now: DateTime<Utc>,
    /// The database path as shown to users.
    pub db_path: &'a str,
}

/// Examples larger than this are kept out of `tools/list` (see [`Tool::to_json`]).
pub const MAX_PUBLISHED_EXAMPLE_BYTES: usize = 2048;

/// How a tool runs.
#[derive(Clone, Copy)]
pub enum Handler {
    /// Reads only; may run concurrently with other reads.
    Read(fn(&ReadCtx<'_>, &Args<'_>) -> ToolResult),
    /// Writes; runs alone, in order, inside one transaction. The families listed are the cached
    /// families it may change: their store versions are bumped on success.
    Write(
        fn(&mut WriteCtx<'_>, &Args<'_>) -> ToolResult,
        &'static [Family],
    ),
}

/// MCP tool annotations (hints for clients; `openWorldHint` is always false here).
#[derive(Debug, Clone, Copy)]
pub struct Annotations {
    /// `readOnlyHint`: the tool changes nothing (must equal "is a [`ReadTool`]").
    pub read_only: bool,
    /// `destructiveHint`: the tool may overwrite or delete what was learned.
    pub destructive: bool,
    /// `idempotentHint`: calling twice with the same arguments has no further effect.
    pub idempotent: bool,
}

/// A tool's wire description: its name, texts, annotations and typed input and output, from
/// which the published schemas are derived ([`wire::input_schema`], [`wire::output_schema`]).
pub trait ToolDef: 'static {
    /// Matches `^[a-zA-Z0-9_-]{1,64}$`.
    const NAME: &'static str;
    /// Other names accepted by `tools/call` (not listed).
    const ALIASES: &'static [&'static str] = &[];
    /// Human-readable title.
    const TITLE: &'static str;
    /// When to use the tool and what to pass, for the model that calls it (built at run time
    /// so that constants are quoted, never retyped).
    fn description() -> String;
    /// Hints for clients.
    const ANNOTATIONS: Annotations;
    /// The arguments (`deny_unknown_fields`; cross-field rules in [`wire::Validate`]).
    type Input: DeserializeOwned + JsonSchema + wire::Validate;
    /// The answer, `structuredContent` (serialises to a JSON object).
    type Output: Serialize + JsonSchema;
    /// Valid arguments that succeed on an empty database (registry tests, published as the
    /// input schema's `examples` when small).
    fn example() -> Value;
}

/// A tool that only reads; it may run concurrently with other reads.
pub trait ReadTool: ToolDef {
    /// Run the tool.
    ///
    /// # Errors
    /// [`ToolError`] for arguments that only the data can refuse, or an internal failure.
    fn run(ctx: &ReadCtx<'_>, input: Self::Input) -> Result<Answer<Self::Output>, ToolError>;
}

/// A tool that writes; it runs alone, in order, inside one transaction.
pub trait WriteTool: ToolDef {
    /// The cached families it may change: their store versions are bumped on success.
    const FAMILIES: &'static [Family];
    /// Run the tool; persist through `ctx.db`.
    ///
    /// # Errors
    /// As [`ReadTool::run`]; the transaction then rolls back.
    fn run(ctx: &mut WriteCtx<'_>, input: Self::Input) -> Result<Answer<Self::Output>, ToolError>;
}

/// A handler's answer: the output and whether it reports a tool-level failure (`isError`, for
/// structured failures such as `LESSON_ALREADY_EXISTS` or `BELIEF_NOT_FOUND`). A failed answer's
/// writes are still committed; return a [`ToolError`] to roll back.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<O> {
    /// The `structuredContent`.
    pub output: O,
    /// `isError`.
    pub is_error: bool,
}

impl<O> Answer<O> {
    /// A successful answer.
    pub fn ok(output: O) -> Self {
        Answer {
            output,
            is_error: false,
        }
    }

    /// A structured failure (`isError: true`).
    pub fn failed(output: O) -> Self {
        Answer {
            output,
            is_error: true,
        }
    }
}

fn encode<O: Serialize>(answer: Answer<O>) -> ToolResult {
    let v = serde_json::to_value(&answer.output)
        .map_err(|e| ToolError::Internal(format!("the answer could not be encoded: {e}")))?;
    Ok(if answer.is_error {
        Outcome::Failed(v)
    } else {
        Outcome::Ok(v)
    })
}

fn read_handler<T: ReadTool>(ctx: &ReadCtx<'_>, args: &Args<'_>) -> ToolResult {
    let input = wire::parse::<T::Input>(args.value())?;
    T::run(ctx, input).and_then(encode)
}

fn write_handler<T: WriteTool>(ctx: &mut WriteCtx<'_>, args: &Args<'_>) -> ToolResult {
    let input = wire::parse::<T::Input>(args.value())?;
    T::run(ctx, input).and_then(encode)
}

/// One tool: its wire description and its handler.
pub struct Tool {
    /// Matches `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: &'static str,
    /// Other names accepted by `tools/call` (not listed).
    pub aliases: &'static [&'static str],
    pub title: &'static str,
    pub description: fn() -> String,
    /// JSON Schema of the arguments (root `type: object`).
    pub input_schema: fn() -> Value,
    /// JSON Schema of `structuredContent` (root `type: object`).
    pub output_schema: fn() -> Value,
    pub annotations: Annotations,
    pub handler: Handler,
    /// Valid example arguments, used by the registry tests and the client test.
    pub example: fn() -> Value,
}

impl Tool {
    /// The registry entry of a read tool.
    pub const fn read<T: ReadTool>() -> Tool {
        Tool {
            name: T::NAME,
            aliases: T::ALIASES,
            title: T::TITLE,
            description: T::description,
            input_schema: wire::input_schema::<T::Input>,
            output_schema: wire::output_schema::<T::Output>,
            annotations: T::ANNOTATIONS,
            handler: Handler::Read(read_handler::<T>),
            example: T::example,
        }
    }

    /// The registry entry of a write tool.
    pub const fn write<T: WriteTool>() -> Tool {
        Tool {
            name: T::NAME,
            aliases: T::ALIASES,
            title: T::TITLE,
            description: T::description,
            input_schema: wire::input_schema::<T::Input>,
            output_schema: wire::output_schema::<T::Output>,
            annotations: T::ANNOTATIONS,
            handler: Handler::Write(write_handler::<T>, T::FAMILIES),
            example: T::example,
        }
    }

    /// Whether the tool writes.
    pub fn writes(&self) -> bool {
        matches!(self.handler, Handler::Write(..))
    }

    /// The `tools/list` entry. The example arguments are published as the input schema's
    /// JSON Schema `examples` annotation when they are small (at most
    /// [`MAX_PUBLISHED_EXAMPLE_BYTES`]): a client puts the whole list into the model's context,
    /// and a pair of full 13-embedder fingerprints is 50 KB.
    pub fn to_json(&self) -> Value {
        let mut input = (self.input_schema)();
        let example = (self.example)();
        if example.to_string().len() <= MAX_PUBLISHED_EXAMPLE_BYTES {
            input["examples"] = json!([example]);
        }
        json!({
            "name": self.name,
            "title": self.title,
            "description": (self.description)(),
            "inputSchema": input,
            "outputSchema": (self.output_schema)(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.annotations.read_only,
                "destructiveHint": self.annotations.destructive,
                "idempotentHint": self.annotations.idempotent,
                "openWorldHint": false,
            },
        })
    }
}

/// A family of tools, the unit of a tool profile (`--tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolFamily {
    /// λ weights, accuracy and escalation: `record_prediction`, `get_meta_learning_status`, …
    MetaLearning,
    /// Adaptive threshold calibration: `record_calibration_observations`, …
    Atc,
    /// Surprise and coherence of memory updates: `gwt_compute_delta_sc`.
    Utl,
    /// The belief workspace: `epistemic_action`.
    Epistemic,
    /// Lessons, the strategy blacklist and directives.
    Lessons,
}

impl ToolFamily {
    /// Every family, in `tools/list` order.
    pub const ALL: [ToolFamily; 5] = [
        ToolFamily::MetaLearning,
        ToolFamily::Atc,
        ToolFamily::Utl,
        ToolFamily::Epistemic,
        ToolFamily::Lessons,
    ];

    /// The name used by `--tools` / `META_UTL_TOOLS`.
    pub fn name(self) -> &'static str {
        match self {
            ToolFamily::MetaLearning => "meta_learning",
            ToolFamily::Atc => "atc",
            ToolFamily::Utl => "utl",
            ToolFamily::Epistemic => "epistemic",
            ToolFamily::Lessons => "lessons",
        }
    }

    /// The family's tools.
    pub fn tools(self) -> &'static [Tool] {
        match self {
            ToolFamily::MetaLearning => meta_learning::TOOLS,
            ToolFamily::Atc => atc::TOOLS,
            ToolFamily::Utl => utl::TOOLS,
            ToolFamily::Epistemic => epistemic::TOOLS,
            ToolFamily::Lessons => lessons::TOOLS,
        }
    }

    /// What the model should know about the family: when to use which tool, in a few lines of
    /// the `initialize` instructions.
    pub fn guidance(self) -> &'static str {
        match self {
            ToolFamily::Lessons => {
                "Lessons: before you start a strategy for a task, call check_strategy_blacklist \
                 with the task id and the strategy in a sentence; if it answers blacklisted: true, \
                 read the lesson's root cause and choose another approach. After an approach fails \
                 and you have found why, call log_lesson_learned so that no later session repeats \
                 it. record_directive keeps a human's instruction or fix; list_directive_history \
                 shows them."
            }
            ToolFamily::Epistemic => {
                "Beliefs: while debugging, record each suspected cause with epistemic_action \
                 hypothesize, then verify it with the evidence you find (confidence above 0.5 \
                 supports it, below 0.5 speaks against it); query shows what you already believe \
                 and why."
            }
            ToolFamily::MetaLearning => {
                "Meta-learning: record_prediction feeds a predicted and an actual outcome (for \
                 example a test you expected to pass); the server learns how much to trust \
                 surprise versus coherence. get_meta_learning_status shows accuracy and whether \
                 a human must review; reset_meta_learning is for the human who acknowledges it."
            }
            ToolFamily::Atc => {
                "Calibration: record_calibration_observations feeds (confidence, was it correct) \
                 pairs from your own checks; get_calibration_metrics reports how well confidence \
                 matches reality, and trigger_recalibration adjusts the thresholds when it \
                 drifts."
            }
            ToolFamily::Utl => {
                "Memory updates: with an embedding pipeline that produces all 13 vectors, \
                 gwt_compute_delta_sc scores how surprising and how coherent an update is; close \
                 its prediction_id later with record_prediction."
            }
        }
    }

    /// The structured error object this family answers for invalid arguments, when its
    /// contract has one: the lessons seed's `{success: false, error: "VALIDATION_ERROR",
    /// detail}`. Other families answer the message as text only.
    pub fn argument_error(self, message: &str) -> Option<Value> {
        match self {
            ToolFamily::Lessons => Some(json!({
                "success": false,
                "error": "VALIDATION_ERROR",
                "detail": message,
            })),
            _ => None,
        }
    }
}

/// The tool families a server publishes and accepts (`--tools`); a tool outside the profile is
/// an unknown tool. The default publishes every family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    enabled: [bool; 5],
}

impl Profile {
    /// Every family.
    pub fn all() -> Profile {
        Profile { enabled: [true; 5] }
    }

    /// Only the given families (an empty list publishes nothing).
    pub fn only(families: &[ToolFamily]) -> Profile {
        let mut enabled = [false; 5];
        for f in families {
            enabled[ToolFamily::ALL.iter().position(|x| x == f).expect("listed")] = true;
        }
        Profile { enabled }
    }

    /// Whether `family` is published.
    pub fn includes(&self, family: ToolFamily) -> bool {
        self.enabled[ToolFamily::ALL
            .iter()
            .position(|x| *x == family)
            .expect("listed")]
    }

    /// The published tools, in `tools/list` order, with their family.
    pub fn tools(&self) -> impl Iterator<Item = (ToolFamily, &'static Tool)> + '_ {
        ToolFamily::ALL
            .into_iter()
            .filter(|f| self.includes(*f))
            .flat_map(|f| f.tools().iter().map(move |t| (f, t)))
    }

    /// The published tool called `name` (or one of its aliases), with its family.
    pub fn find(&self, name: &str) -> Option<(ToolFamily, &'static Tool)> {
        self.tools()
            .find(|(_, t)| t.name == name || t.aliases.contains(&name))
    }

    /// The `tools/list` result.
    pub fn list_result(&self) -> Value {
        json!({"tools": self.tools().map(|(_, t)| t.to_json()).collect::<Vec<_>>()})
    }
}

static REGISTRY: LazyLock<Vec<&'static Tool>> =
    LazyLock::new(|| Profile::all().tools().map(|(_, t)| t).collect());

/// Every tool, in `tools/list` order.
pub fn registry() -> &'static [&'static Tool] {
    &REGISTRY
}

/// The tool called `name` (or one of its aliases), in the full registry.
pub fn find(name: &str) -> Option<&'static Tool> {
    Profile::all().find(name).map(|(_, t)| t)
}

/// Why a `tools/call` was not answered by the tool.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The arguments are wrong. From MCP 2025-11-25 on this is a tool result with `isError:
    /// true` (SEP-1303), earlier revisions get `-32602`; the server decides by the session's
    /// protocol revision.
    InvalidArguments {
        /// Names the field and what is allowed.
        message: String,
        /// The family's structured error object, if it has one
        /// ([`ToolFamily::argument_error`]).
        structured: Option<Value>,
    },
    /// A protocol error: an unknown tool (`-32602` in every revision) or an internal failure
    /// (`-32603`).
    Rpc(RpcError),
}

impl CallError {
    /// The JSON-RPC error of revisions before 2025-11-25 (`-32602` for invalid arguments).
    pub fn into_rpc(self) -> RpcError {
        match self {
            CallError::InvalidArguments { message, .. } => RpcError::invalid_params(message),
            CallError::Rpc(e) => e,
        }
    }
}

/// A tool's answer before encoding: its `structuredContent` and whether it reports a failure
/// (`isError`, for a structured tool-level error such as `BELIEF_NOT_FOUND`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The tool's output object, valid against its `outputSchema`.
    pub structured: Value,
    /// `true` for a tool-level failure reported as a result.
    pub is_error: bool,
}

/// The shared application state: the cached service, the store, the published tool profile
/// and the client session's negotiated protocol revision.
pub struct App {
    svc: RwLock<MetaLearningService>,
    store: Store,
    db_path: String,
    profile: Profile,
    session: mcp::Session,
}

impl App {
    /// Wrap an opened store and load the service state from it.
    ///
    /// # Errors
    /// [`StoreError`] when the initial load fails.
    pub fn new(store: Store) -> Result<App, StoreError> {
        App::with_profile(store, Profile::all())
    }

    /// [`App::new`] publishing only the tools of `profile`.
    ///
    /// # Errors
    /// [`StoreError`] when the initial load fails.
    pub fn with_profile(store: Store, profile: Profile) -> Result<App, StoreError> {
        let mut svc = MetaLearningService::new();
        store.read(|db| store::sync(db, &mut svc))?;
        let db_path = store.path().display();
        Ok(App {
            svc: RwLock::new(svc),
            store,
            db_path,
            profile,
            session: mcp::Session::default(),
        })
    }

    /// The published tool families.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The `instructions` of `initialize` and `server/discover`: what the server is for, the
    /// guidance of each published family, and where the data lives.
    pub fn instructions(&self) -> String {
        let mut out = String::from(
            "A memory for coding agents that persists across sessions and corrects itself.",
        );
        for f in ToolFamily::ALL
            .into_iter()
            .filter(|f| self.profile.includes(*f))
        {
            out.push(' ');
            out.push_str(f.guidance());
        }
        out.push_str(&format!(" Data is stored in {}.", self.db_path));
        out
    }

    /// The client session (its negotiated protocol revision).
    pub fn session(&self) -> &mcp::Session {
        &self.session
    }

    /// The database path as shown to users.
    pub fn db_path(&self) -> &str {
        &self.db_path
    }

    /// Run a `tools/call` and build its result (`content`, `structuredContent`, `isError`).
    ///
    /// # Errors
    /// `-32602` for an unknown tool or invalid arguments, `-32603` for internal failures.
    pub fn call_tool(&self, name: &str, arguments: &Value) -> Result<Value, RpcError> {
        self.call(name, arguments)
            .map(|r| mcp::call_result(r.structured, r.is_error))
            .map_err(CallError::into_rpc)
    }

    /// Run a `tools/call` and return the tool's answer unencoded; the server encodes it with
    /// [`mcp::encode_tool_result`], or an argument error with
    /// [`mcp::encode_argument_error`].
    ///
    /// # Errors
    /// [`CallError::InvalidArguments`] for invalid arguments; [`CallError::Rpc`] `-32602` for a
    /// tool that is unknown or outside the profile, `-32603` for internal failures.
    pub fn call(&self, name: &str, arguments: &Value) -> Result<ToolReply, CallError> {
        let (family, tool) = self.profile.find(name).ok_or_else(|| {
            CallError::Rpc(RpcError::invalid_params(format!(
                "Unknown tool: {}",
                wire::clipped(name)
            )))
        })?;
        let failed = |e: ToolError| match e {
            ToolError::InvalidParams(message) => CallError::InvalidArguments {
                structured: family.argument_error(&message),
                message,
            },
            ToolError::Internal(m) => CallError::Rpc(internal(tool.name, m)),
        };
        let args = Args::new(arguments).map_err(failed)?;
        let outcome = match tool.handler {
            Handler::Read(f) => self.run_read(f, &args),
            Handler::Write(f, families) => self.run_write(f, families, &args),
        }
        .map_err(failed)?;
        Ok(match outcome {
            Outcome::Ok(structured) => ToolReply {
                structured,
                is_error: false,
            },
            Outcome::Failed(structured) => ToolReply {
                structured,
                is_error: true,
            },
        })
    }

    fn run_read(
        &self,
        f: fn(&ReadCtx<'_>, &Args<'_>) -> ToolResult,
        args: &Args<'_>,
    ) -> ToolResult {
        loop {
            {
                let svc = self.svc.read();
                let out = self.store.read(|db| {
                    if store::is_stale(db, &svc)? {
                        return Ok(None);
                    }
                    let ctx = ReadCtx {
                        svc: &svc,
                        db,
                        now: now_us(),
                        db_path: &self.db_path,
                    };
                    f(&ctx, args).map(Some)
                })?;
                if let Some(out) = out {
                    return Ok(out);
                }
            }
            let mut svc = self.svc.write();
            self.store.read(|db| store::sync(db, &mut svc))?;
        }
    }

    fn run_write(
        &self,
        f: fn(&mut WriteCtx<'_>, &Args<'_>) -> ToolResult,
        families: &[Family],
        args: &Args<'_>,
    ) -> ToolResult {
        let mut svc = self.svc.write();
        // A handler that panics may leave the cached state half-changed while the store
        // rolls its transaction back: reload on the next call.
        struct StaleOnUnwind<'a>(&'a mut MetaLearningService);
        impl Drop for StaleOnUnwind<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.mark_stale();
                }
            }
        }
        let guard = StaleOnUnwind(&mut svc);
        let svc: &mut MetaLearningService = guard.0;
        let result = self.store.write(|db| {
            store::sync(db, svc)?;
            let out = {
                let mut ctx = WriteCtx {
                    svc,
                    db,
                    now: now_us(),
                    db_path: &self.db_path,
                };
                f(&mut ctx, args)?
            };
            for &family in families {
                let v = store::bump(db, family)?;
                let i = Family::ALL
                    .iter()
                    .position(|f| *f == family)
                    .expect("listed");
                svc.loaded_versions[i] = v;
            }
            Ok(out)
        });
        if result.is_err() {
            svc.mark_stale();
        }
        result
    }

    /// Run `f`, which calls write tools, as one group commit ([`Store::batch`]): every call
    /// keeps its own success or failure, and all their changes reach the disk in one commit.
    ///
    /// # Errors
    /// `-32603` when the final commit fails; then none of `f`'s writes is kept (the cached
    /// state is reloaded from the store on the next call) and every answer `f` produced must
    /// be replaced by this error.
    pub fn write_batch<T>(&self, f: impl FnOnce() -> T) -> Result<T, RpcError> {
        // The server's runs catch their own panics; this catch keeps the write executor alive,
        // and every write of the group answered, should the group itself ever unwind.
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.store.batch(f)));
        let failure = match out {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => format!("Internal error: the write could not be committed: {e}"),
            Err(_) => "Internal error: the write could not be committed".to_string(),
        };
        // Nothing of the group is kept: reload the cached state on the next call.
        self.svc.write().mark_stale();
        tracing::error!(error = %failure, "group commit failed");
        Err(RpcError::internal(failure))
    }
}

/// The current time truncated to whole microseconds, the store's resolution, so that what a
/// call reports equals what a later call reads back.
fn now_us() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// An internal failure of `tool` as the JSON-RPC error the client sees (logged once here).
fn internal(tool: &str, m: String) -> RpcError {
    tracing::error!(tool, error = %m, "tool failed");
    RpcError::internal(format!("Internal error in {tool}: {m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_commit_that_unwinds_keeps_nothing_and_the_app_recovers() {
        let app = App::new(Store::open(&store::DbPath::Memory).unwrap()).unwrap();
        let args = json!({"embedder_index": 3, "predicted": 0.9, "actual": 0.2});
        let count = |app: &App| {
            app.call_tool("get_meta_learning_status", &json!({}))
                .unwrap()["structuredContent"]["interaction_count"]
                .as_u64()
                .unwrap()
        };
        let failed = app.write_batch(|| {
            app.call("record_prediction", &args).unwrap();
            assert_eq!(count(&app), 1, "the group sees its own write");
            panic!("the group unwinds after a successful write");
        });
        let failed: Result<(), RpcError> = failed;
        assert_eq!(failed.unwrap_err().code, -32603);
        assert_eq!(
            count(&app),
            0,
            "the write was rolled back and the cache reloaded"
        );
        app.call("record_prediction", &args).unwrap();
        assert_eq!(count(&app), 1);
    }

    #[test]
    fn names_are_unique_and_claude_desktop_safe() {
        let mut seen = std::collections::HashSet::new();
        for t in registry() {
            assert!(seen.insert(t.name), "duplicate tool {}", t.name);
            assert!(
                !t.name.is_empty()
                    && t.name.len() <= 64
                    && t.name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "bad name {}",
                t.name
            );
            for a in t.aliases {
                assert!(seen.insert(a), "alias {a} collides");
            }
        }
    }

    #[test]
    fn schemas_have_object_roots_and_examples_match_their_input_schema() {
        for t in registry() {
            let input = (t.input_schema)();
            let output = (t.output_schema)();
            assert_eq!(input["type"], "object", "{} inputSchema", t.name);
            assert_eq!(output["type"], "object", "{} outputSchema", t.name);
            let validator = jsonschema::validator_for(&input)
                .unwrap_or_else(|e| panic!("{} inputSchema does not compile: {e}", t.name));
            jsonschema::validator_for(&output)
                .unwrap_or_else(|e| panic!("{} outputSchema does not compile: {e}", t.name));
            let example = (t.example)();
            if let Err(e) = validator.validate(&example) {
                panic!("{} example {example} violates its inputSchema: {e}", t.name);
            }
            assert_eq!(
                t.annotations.read_only,
                !t.writes(),
                "{} readOnlyHint",
                t.name
            );
        }
    }

    #[test]
    fn every_tool_runs_its_example_and_its_output_matches_its_schema() {
        let app = App::new(Store::open(&store::DbPath::Memory).unwrap()).unwrap();
        for t in registry() {
            let result = app
                .call_tool(t.name, &(t.example)())
                .unwrap_or_else(|e| panic!("{} example failed: {e:?}", t.name));
            let structured = &result["structuredContent"];
            let validator = jsonschema::validator_for(&(t.output_schema)()).unwrap();
            if let Err(e) = validator.validate(structured) {
                panic!(
                    "{} output {structured} violates its outputSchema: {e}",
                    t.name
                );
            }
        }
    }
}

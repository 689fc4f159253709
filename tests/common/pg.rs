//! Real PostgreSQL for the tests: one throwaway cluster per test process, and a fresh database
//! per test.
//!
//! The cluster starts on first use: `initdb` (trust authentication, so any password in a URL
//! is accepted and ignored) into a new temporary folder, then `postgres` on a free loopback
//! port with its socket in that folder. Both run as the `postgres` user when the tests run as
//! root (PostgreSQL refuses root; CI runs as root). A `sh` wrapper starts `postgres` and then
//! reads its stdin, a pipe only this process holds: when the test process ends, however it
//! ends, the wrapper reads end-of-file, stops `postgres` (SIGINT, a fast shutdown) and removes
//! the folder.
//!
//! [`SERVER_ENV`] names a running server to use instead (a URL without a database, e.g.
//! `postgres://postgres@127.0.0.1:55432`); its user must be allowed `CREATE DATABASE`. Without
//! it and without PostgreSQL installed, [`available`] says the test is skipped, unless
//! [`REQUIRE_ENV`] is `1` (CI), which makes that a failure.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A running PostgreSQL server to use instead of starting one: a URL without a database.
pub const SERVER_ENV: &str = "META_UTL_TEST_PG_URL";

/// `1`: a missing PostgreSQL fails the PostgreSQL tests instead of skipping them.
pub const REQUIRE_ENV: &str = "META_UTL_REQUIRE_POSTGRES";

/// How long the cluster may take to accept connections after `postgres` started.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The server the tests of this process use.
pub struct Cluster {
    /// `postgres://USER@HOST:PORT`, without a database.
    base: String,
    /// The wrapper's stdin: closing it (at process exit) stops the cluster.
    _stop: Option<Mutex<ChildStdin>>,
    _wrapper: Option<Mutex<Child>>,
}

static CLUSTER: OnceLock<Result<Option<Cluster>, String>> = OnceLock::new();

fn cluster() -> &'static Result<Option<Cluster>, String> {
    CLUSTER.get_or_init(|| {
        if let Some(url) = std::env::var(SERVER_ENV).ok().filter(|v| !v.is_empty()) {
            return Ok(Some(Cluster {
                base: url.trim_end_matches('/').to_string(),
                _stop: None,
                _wrapper: None,
            }));
        }
        match binaries() {
            None => Ok(None),
            Some(bin) => start(&bin, &[]).map(Some),
        }
    })
}

/// Whether PostgreSQL is there for `test`; when it is not, says on stderr that `test` is
/// skipped (written to the stderr handle itself, so the line shows even when the test passes).
///
/// # Panics
/// When the cluster could not be started, or PostgreSQL is missing and [`REQUIRE_ENV`] is `1`.
pub fn available(test: &str) -> bool {
    match cluster() {
        Ok(Some(_)) => true,
        Ok(None) => {
            let why = format!(
                "no PostgreSQL (initdb and postgres neither on PATH nor in \
                 /usr/lib/postgresql/*/bin, and {SERVER_ENV} unset)"
            );
            assert!(
                std::env::var(REQUIRE_ENV).as_deref() != Ok("1"),
                "{test}: {why}, and {REQUIRE_ENV}=1"
            );
            let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
            false
        }
        Err(e) => panic!("{test}: the PostgreSQL test cluster did not start: {e}"),
    }
}

/// The server's URL without a database (`postgres://USER@HOST:PORT`).
///
/// # Panics
/// When there is no server: call [`available`] first.
pub fn base() -> &'static str {
    match cluster() {
        Ok(Some(c)) => &c.base,
        Ok(None) => panic!("no PostgreSQL: check common::pg::available first"),
        Err(e) => panic!("the PostgreSQL test cluster did not start: {e}"),
    }
}

/// The folder holding `initdb` and `postgres`: the first of PATH that has both, else the
/// newest `/usr/lib/postgresql/VERSION/bin` (where Debian puts them, off PATH).
fn binaries() -> Option<PathBuf> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(path) = std::env::var_os("PATH")
        && let Some(d) = std::env::split_paths(&path).find(|d| has_both(d))
    {
        return Some(d);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_both(d))
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d)
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `program` run as the `postgres` user when we are root (PostgreSQL refuses root), else as
/// ourselves.
fn as_cluster_owner(program: &str) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", program]);
        c
    } else {
        Command::new(program)
    }
}

/// A cluster of its own (not the shared one) started with the extra server settings `settings`
/// (`name=value`, each passed as `-c`), stopped when the value is dropped; `None` when
/// PostgreSQL is not installed.
///
/// # Errors
/// When it does not start, with its log.
pub fn own_cluster(settings: &[String]) -> Result<Option<Cluster>, String> {
    match binaries() {
        None => Ok(None),
        Some(bin) => start(&bin, settings).map(Some),
    }
}

impl Cluster {
    /// `postgres://USER@HOST:PORT`, without a database.
    pub fn base(&self) -> &str {
        &self.base
    }
}

/// `initdb`, then `postgres` under the stop-at-exit wrapper; returns once it accepts
/// connections.
fn start(bin: &Path, settings: &[String]) -> Result<Cluster, String> {
    // Not a TempDir: the wrapper removes it after postgres stopped, which is after we exited.
    let dir = tempfile::Builder::new()
        .prefix("meta-utl-pg-")
        .tempdir()
        .map_err(|e| format!("temporary folder: {e}"))?
        .keep();
    if is_root() {
        let chown = Command::new("chown")
            .arg("postgres:")
            .arg(&dir)
            .status()
            .map_err(|e| format!("chown: {e}"))?;
        if !chown.success() {
            return Err(format!("chown postgres: {} failed", dir.display()));
        }
    }
    let data = dir.join("data");
    let initdb = as_cluster_owner(&bin.join("initdb").to_string_lossy())
        .args(["--auth=trust", "--username=postgres", "--no-locale"])
        .args(["--encoding=UTF8", "--no-sync", "--pgdata"])
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running initdb: {e}"))?;
    if !initdb.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&initdb.stderr)
        ));
    }
    let mut last = String::new();
    // A port found free may be taken before postgres binds it: try another.
    for _ in 0..3 {
        match run(bin, &dir, &data, free_port(), settings) {
            Ok(c) => return Ok(c),
            Err(e) => last = e,
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Err(last)
}

fn run(
    bin: &Path,
    dir: &Path,
    data: &Path,
    port: u16,
    settings: &[String],
) -> Result<Cluster, String> {
    // Durability against our own server's kill -9 needs only that PostgreSQL keeps running;
    // fsync off spares the shared disk, as nothing here survives the test process.
    let script = r#"
        bin="$1" data="$2" port="$3" dir="$4"
        shift 4
        "$bin" -D "$data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 -c fsync=off \
            -c max_connections=300 -c shared_buffers=32MB "$@" </dev/null >>"$dir/log" 2>&1 &
        pid=$!
        cat >/dev/null
        kill -INT "$pid"
        wait "$pid"
        rm -rf "$dir"
    "#;
    let mut wrapper = as_cluster_owner("sh")
        .args(["-c", script, "pg-test-cluster"])
        .arg(bin.join("postgres"))
        .arg(data)
        .arg(port.to_string())
        .arg(dir)
        .args(settings.iter().flat_map(|v| ["-c".to_string(), v.clone()]))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting postgres: {e}"))?;
    let stop = wrapper.stdin.take().expect("piped stdin");
    let base = format!("postgres://postgres@127.0.0.1:{port}");
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if connect(&base, "postgres").is_ok() {
            return Ok(Cluster {
                base,
                _stop: Some(Mutex::new(stop)),
                _wrapper: Some(Mutex::new(wrapper)),
            });
        }
        let gone = wrapper.try_wait().ok().flatten().is_some();
        if gone || Instant::now() > deadline {
            drop(stop);
            let _ = wrapper.wait();
            let mut log = String::new();
            let _ = std::fs::File::open(dir.join("log")).map(|mut f| f.read_to_string(&mut log));
            return Err(format!("postgres on port {port} did not start: {log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A client connected to `database` of the server at `base`.
///
/// # Errors
/// What the client library says.
pub fn connect(base: &str, database: &str) -> Result<postgres::Client, postgres::Error> {
    let mut config: postgres::Config = base.parse()?;
    config
        .dbname(database)
        .connect_timeout(Duration::from_secs(5));
    config.connect(postgres::NoTls)
}

/// A client connected to the maintenance database of the test server.
pub fn admin() -> postgres::Client {
    connect(base(), "postgres").expect("connect to the PostgreSQL test server")
}

/// A fresh empty database on the test server, dropped (with whatever still connects to it)
/// when this is dropped.
pub struct Database {
    /// Its name.
    pub name: String,
    /// `postgres://USER@HOST:PORT/NAME`.
    pub url: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Database {
    /// Create one.
    ///
    /// # Panics
    /// When there is no server (call [`available`] first) or `CREATE DATABASE` fails.
    pub fn create() -> Database {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "meta_utl_test_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        Database {
            url: format!("{}/{name}", base()),
            name,
        }
    }

    /// A client connected to it.
    pub fn client(&self) -> postgres::Client {
        connect(base(), &self.name).expect("connect to the test database")
    }

    /// Its URL with a password (which the trust authentication of the test cluster ignores).
    pub fn url_with_password(&self, password: &str) -> String {
        let (scheme, rest) = self.url.split_once("://").expect("a URL");
        let (user, host) = rest.split_once('@').expect("a user in the URL");
        format!("{scheme}://{user}:{password}@{host}")
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut c) = connect(base(), "postgres") {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

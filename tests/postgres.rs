//! What only the PostgreSQL backend has, on a real PostgreSQL (tests/common/pg.rs): bad URLs
//! and unreachable servers at start-up, the password kept out of every output, a database that
//! is not ours or is newer left untouched, moving a machine's SQLite memory into the team's
//! database, four servers killed at random losing nothing answered, the loss of the
//! connection while serving, and TLS as `sslmode` asks.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::pg::Database;
use common::{Server, demo, failure, pipe};
use serde_json::{Value, json};

/// A password no output may ever show.
const PASSWORD: &str = "pw-Zq81-never-shown";

common::postgres_only!(
    a_malformed_url_exits_2_with_a_message,
    an_unreachable_server_exits_2_within_seconds_naming_it_without_the_password,
    the_password_is_never_in_stderr_or_status,
    a_database_whose_schema_holds_foreign_tables_is_refused_untouched,
    a_newer_schema_version_is_refused_untouched,
    export_from_sqlite_then_import_into_postgres_moves_the_memory,
    four_servers_killed_at_random_lose_nothing_answered,
    a_lost_connection_fails_the_call_clearly_and_the_server_reconnects,
    tls_is_used_and_verified_as_sslmode_asks,
    a_server_not_reached_at_start_answers_calls_with_why_and_opens_once_it_is,
);

/// Forward every connection to 127.0.0.1:`from` on to 127.0.0.1:`to` (both directions, a
/// thread each), on a thread of its own that lives as long as the test process.
fn forward(from: u16, to: u16) {
    let listener = std::net::TcpListener::bind(("127.0.0.1", from)).expect("bind the forwarder");
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", to)) else {
                continue;
            };
            for (mut a, mut b) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut a, &mut b);
                    let _ = b.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
}

/// PostgreSQL down when the server starts (Claude Code starts one per session): the server
/// keeps serving, each tool call is answered at once with why (naming the server, without the
/// password) instead of the process dying where no user looks, and once PostgreSQL can be
/// reached the same server opens the store and serves.
fn a_server_not_reached_at_start_answers_calls_with_why_and_opens_once_it_is() {
    let db = Database::create();
    let port = common::pg::free_port();
    let target: u16 = db
        .url
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("a port in the test URL");
    let url = db
        .url_with_password(PASSWORD)
        .replace(&format!(":{target}/"), &format!(":{port}/"));
    let mut s = Server::start_at(&url, &[]);
    s.initialize("2025-11-25");
    let started = Instant::now();
    let r = s.call("get_meta_learning_status", json!({}));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let message = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    for part in [
        "not available",
        "cannot connect to PostgreSQL",
        &port.to_string(),
        "PGPASSWORD",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(!message.contains(PASSWORD), "{message}");
    forward(port, target);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = s.call(
            "record_prediction",
            json!({"embedder_index": 1, "predicted": 0.9, "actual": 0.4}),
        );
        if r.get("result").is_some() {
            assert_eq!(r["result"]["isError"], false, "{r}");
            break;
        }
        assert!(Instant::now() < deadline, "never opened: {r}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let (exit, _, stderr) = s.finish();
    assert!(exit.success(), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    assert_eq!(interaction_count(&db.url), 1);
}

fn interaction_count(db: &str) -> u64 {
    let mut s = Server::start_at(db, &[]);
    s.tool_ok("get_meta_learning_status", json!({}))["interaction_count"]
        .as_u64()
        .expect("interaction_count")
}

fn a_malformed_url_exits_2_with_a_message() {
    for (url, names) in [
        (
            format!("postgres://someone:{PASSWORD}@localhost:notaport/db"),
            "postgres://",
        ),
        (
            format!("postgres://someone:{PASSWORD}@localhost/db?sslmode=sometimes"),
            "sslmode=sometimes",
        ),
    ] {
        let started = Instant::now();
        let out = common::run(&url, &[], b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(out.stdout.is_empty(), "{url}: nothing on stdout");
        assert!(
            stderr.contains(names) && stderr.contains("postgres://USER"),
            "{url}: the message names the part and the form: {stderr}"
        );
        assert!(!stderr.contains(PASSWORD), "{url}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(10), "{url}");
    }
    // Taken as a URL, never as a file path (which made a `postgres:` folder before).
    let dir = tempfile::tempdir().unwrap();
    let out = common::command()
        .args(["--db", "postgres://"])
        .env_remove("META_UTL_DB")
        .env_remove("PGUSER")
        .env_remove("USER")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no junk");
}

fn an_unreachable_server_exits_2_within_seconds_naming_it_without_the_password() {
    let port = common::pg::free_port();
    let url = format!("postgres://someone:{PASSWORD}@127.0.0.1:{port}/teamdb");
    let started = Instant::now();
    let out = common::run(&url, &[], br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    common::at_most_the_ping_answer(&lines);
    assert!(took < Duration::from_secs(15), "took {took:?}");
    for part in ["127.0.0.1", &port.to_string(), "teamdb", "someone"] {
        assert!(stderr.contains(part), "{part} not named: {stderr}");
    }
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    // The same from the environment, and through PGPASSWORD.
    let out = common::command()
        .env(
            "META_UTL_DB",
            format!("postgres://someone@127.0.0.1:{port}/teamdb"),
        )
        .env("PGPASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("teamdb") && !stderr.contains(PASSWORD),
        "{stderr}"
    );
}

fn the_password_is_never_in_stderr_or_status() {
    let db = Database::create();
    let url = db.url_with_password(PASSWORD);
    let mut s = Server::start_at(&url, &["--log-level", "debug"]);
    s.initialize("2025-06-18");
    s.tool_ok(
        "record_prediction",
        json!({"embedder_index": 1, "predicted": 0.9, "actual": 0.4}),
    );
    let status = s.tool_ok("get_meta_learning_status", json!({}));
    let shown = status["database"].as_str().expect("database");
    assert_eq!(shown, db.url, "shown without the password");
    let (exit, lines, stderr) = s.finish();
    assert!(exit.success(), "{stderr}");
    assert!(
        stderr.contains(&db.name),
        "the logs name the database: {stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    assert!(lines.iter().all(|l| !l.contains(PASSWORD)));
    // The console's status too.
    let out = common::run(&url, &["status"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for bytes in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(bytes).contains(PASSWORD));
    }
}

/// Every table of `schema` with its rows, as text, to compare before and after.
fn contents(db: &Database, schema: &str) -> Vec<(String, Vec<String>)> {
    let mut c = db.client();
    let tables = c
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 \
             ORDER BY 1",
            &[&schema],
        )
        .unwrap();
    tables
        .iter()
        .map(|t| {
            let name: String = t.get(0);
            let rows = c
                .query(
                    &format!("SELECT t::text FROM {schema}.{name} t ORDER BY 1"),
                    &[],
                )
                .unwrap();
            (name, rows.iter().map(|r| r.get(0)).collect())
        })
        .collect()
}

fn a_database_whose_schema_holds_foreign_tables_is_refused_untouched() {
    let db = Database::create();
    db.client()
        .batch_execute(
            "CREATE SCHEMA meta_utl;
             CREATE TABLE meta_utl.invoices (id BIGINT PRIMARY KEY, total NUMERIC);
             INSERT INTO meta_utl.invoices VALUES (1, 99.5), (2, 12);",
        )
        .unwrap();
    let before = contents(&db, "meta_utl");
    let (status, lines, stderr) = pipe(&db.url, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(status.code(), Some(2), "{stderr}");
    common::at_most_the_ping_answer(&lines);
    assert!(
        stderr.contains("not a meta-utl-mcp database") && stderr.contains(&db.name),
        "{stderr}"
    );
    assert_eq!(contents(&db, "meta_utl"), before, "left untouched");
}

fn a_newer_schema_version_is_refused_untouched() {
    let db = Database::create();
    // A real schema first, then marked as written by a newer binary.
    let (status, _, stderr) = pipe(&db.url, b"");
    assert!(status.success(), "{stderr}");
    db.client()
        .batch_execute("UPDATE meta_utl.schema_version SET version = 999")
        .unwrap();
    let before = contents(&db, "meta_utl");
    let (status, lines, stderr) = pipe(&db.url, b"");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(lines.is_empty());
    assert!(
        stderr.contains("schema version 999") && stderr.contains(&db.name),
        "{stderr}"
    );
    assert_eq!(contents(&db, "meta_utl"), before, "left untouched");
}

/// The console's `lessons list --all --json` of `db`.
fn lessons(db: &str) -> Value {
    let out = common::run(db, &["lessons", "list", "--all", "--json"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn export_from_sqlite_then_import_into_postgres_moves_the_memory() {
    let fresh = common::Backend::Sqlite.fresh();
    let mut s = Server::start_at(&fresh.target, &[]);
    demo::seed(&mut s);
    assert!(demo::blacklisted(&mut s));
    let local = s.db.to_str().unwrap().to_string();
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "{stderr}");

    // `meta-utl-mcp export --db state.db | meta-utl-mcp import - --db postgres://…`
    let exported = common::run(&local, &["export"], b"");
    assert!(exported.status.success());
    let team = Database::create();
    let imported = common::run(&team.url, &["import", "-", "--json"], &exported.stdout);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let report: Value = serde_json::from_slice(&imported.stdout).expect("JSON report");
    assert_eq!(report["lessons_added"], demo::LESSONS.len(), "{report}");
    assert_eq!(report["beliefs_created"], 2, "{report}");
    assert_eq!(lessons(&team.url), lessons(&local), "the same lessons");

    let mut s = Server::start_at(&team.url, &[]);
    assert!(
        demo::blacklisted(&mut s),
        "the strategy is not blocked after import"
    );
    drop(s);
    // Twice adds nothing.
    let again = common::run(&team.url, &["import", "-", "--json"], &exported.stdout);
    let report: Value = serde_json::from_slice(&again.stdout).expect("JSON report");
    assert_eq!(report["lessons_added"], 0, "{report}");
    assert_eq!(report["lessons_skipped"], demo::LESSONS.len(), "{report}");
}

/// A small xorshift generator: the kill points differ between runs, and a failing run prints
/// its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn four_servers_killed_at_random_lose_nothing_answered() {
    let db = Database::create();
    let (status, _, stderr) = pipe(&db.url, b"");
    assert!(status.success(), "{stderr}");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let handles: Vec<_> = (0..4u64)
        .map(|server| {
            let url = db.url.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(seed.wrapping_mul(server * 2 + 1) | 1);
                (0..3)
                    .map(|_| common::write_until_killed(&url, 20 + rng.below(150)))
                    .sum::<u64>()
            })
        })
        .collect();
    let answered: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let stored = interaction_count(&db.url);
    assert!(
        stored >= answered,
        "seed {seed}: {answered} answered but only {stored} stored"
    );
}

fn a_lost_connection_fails_the_call_clearly_and_the_server_reconnects() {
    let db = Database::create();
    let url = db.url_with_password(PASSWORD);
    let mut s = Server::start_at(&url, &[]);
    let record = json!({"embedder_index": 2, "predicted": 0.9, "actual": 0.4});
    s.tool_ok("record_prediction", record.clone());
    let (mut ok, mut failed) = (1u64, 0u64);
    for _ in 0..3 {
        let mut admin = common::pg::admin();
        let killed = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&db.name],
            )
            .unwrap();
        assert!(!killed.is_empty(), "the server holds a session");
        // Each call either succeeds (the loss was noticed first and the session renewed) or
        // fails saying so; within seconds they succeed again.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let r = s.call("record_prediction", record.clone());
            match failure(&r) {
                None => {
                    ok += 1;
                    break;
                }
                Some(m) => {
                    failed += 1;
                    assert!(
                        m.contains("connection") && m.contains(&db.name),
                        "not a clear error: {m}"
                    );
                    assert!(!m.contains(PASSWORD), "{m}");
                    assert!(Instant::now() < deadline, "no reconnection: {m}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        assert_eq!(
            s.tool_ok("get_meta_learning_status", json!({}))["database"],
            db.url
        );
    }
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    let stored = interaction_count(&db.url);
    assert!(
        stored >= ok && stored <= ok + failed,
        "{ok} answered, {failed} failed, {stored} stored"
    );
}

/// `openssl` with `args` in `dir`.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs (the postgresql package depends on it through ssl-cert)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A test CA and a server certificate it signed for `localhost` and 127.0.0.1, in a folder the
/// cluster's owner can read: `ca.crt`, `server.crt`, `server.key`.
fn certificates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=meta-utl-mcp test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        d.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.crt",
        ],
    );
    // PostgreSQL reads the key as its own user (postgres, when the tests run as root) and
    // refuses one others can read.
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let chown = std::process::Command::new("chown")
            .arg("-R")
            .arg("postgres:")
            .arg(d)
            .status()
            .expect("chown");
        assert!(chown.success(), "chown postgres {}", d.display());
    }
    std::fs::set_permissions(d.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Whether each session of a meta-utl-mcp server uses TLS, as the cluster sees it.
fn uses_tls(base: &str) -> Vec<bool> {
    let mut c = common::pg::connect(base, "postgres").expect("connect");
    c.query(
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
         WHERE a.application_name = 'meta-utl-mcp'",
        &[],
    )
    .expect("pg_stat_ssl")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn tls_is_used_and_verified_as_sslmode_asks() {
    let certs = certificates();
    let d = certs.path();
    let cluster = common::pg::own_cluster(&[
        "ssl=on".into(),
        format!("ssl_cert_file={}", d.join("server.crt").display()),
        format!("ssl_key_file={}", d.join("server.key").display()),
    ])
    .expect("the TLS cluster starts")
    .expect("PostgreSQL is installed (checked by the shared cluster)");
    let port = cluster.base().rsplit(':').next().unwrap().to_string();
    let url = |query: &str| format!("postgres://postgres@localhost:{port}/postgres?{query}");
    let ca = d.join("ca.crt").display().to_string();
    for (query, tls) in [
        ("sslmode=disable".to_string(), false),
        ("sslmode=require".to_string(), true),
        ("sslmode=prefer".to_string(), true),
        (format!("sslmode=verify-full&sslrootcert={ca}"), true),
    ] {
        let mut s = Server::start_at(&url(&query), &[]);
        s.tool_ok("get_meta_learning_status", json!({}));
        assert_eq!(uses_tls(cluster.base()), [tls], "{query}");
        let (status, _, stderr) = s.finish();
        assert!(status.success(), "{query}: {stderr}");
    }
    // Verification refuses a certificate no trusted root signed: exit 2, naming the reason.
    let out = common::run(&url("sslmode=verify-full"), &[], b"");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("certificate"), "{stderr}");
    assert!(
        stderr.contains("sslmode=verify-full") && stderr.contains("sslrootcert=FILE"),
        "the message does not point at sslmode: {stderr}"
    );
    assert!(
        stderr.contains(&format!("localhost:{port}/postgres")),
        "{stderr}"
    );
}

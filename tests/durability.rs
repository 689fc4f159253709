//! Issue 34, over the real binary: the files the console writes are replaced whole and never
//! over the database; exports know their end and imports validate what the tools validate;
//! stored text never reaches the terminal raw.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Backend, Server, bin, demo, failure};
use serde_json::{Value, json};

common::both_backends!(a_write_retried_with_its_request_key_is_stored_once);

/// Run `meta-utl-mcp --db DB ARGS…` with `stdin`; returns the output.
fn console_with(db: &Path, args: &[&str], stdin: &[u8]) -> Output {
    console_cmd(db, args, stdin, |_| {})
}

fn console_cmd(
    db: &Path,
    args: &[&str],
    stdin: &[u8],
    adjust: impl FnOnce(&mut Command),
) -> Output {
    common::run_with(db, args, stdin, |cmd| {
        cmd.env("USER", "tester");
        adjust(cmd);
    })
}

fn console(db: &Path, args: &[&str]) -> Output {
    console_with(db, args, b"")
}

fn ok(db: &Path, args: &[&str]) -> String {
    common::succeeded(console(db, args), args)
}

/// The command fails with exit 2 and a message containing `needle`; returns the message.
fn refused(out: &Output, needle: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "not refused: {err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    err
}

fn bytes_of(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_default()
}

/// Every name in `dir` that a write left behind (hidden temporary files).
fn hidden(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn seeded() -> Server {
    let mut s = Server::start();
    demo::seed(&mut s);
    s
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// `export --out` and `report --out` on the database, its companions (existing or not), a hard
/// link to it, another SQLite file (even with --force), a symbolic link (also dangling), a
/// folder: refused with exit 2, the file unchanged, nothing created. An existing file is
/// replaced only with --force; created files are 0600; no temporary file is left.
#[test]
fn export_and_report_never_write_over_the_database_or_a_file_without_force() {
    let s = seeded();
    let db = s.db.clone();
    let dir = db.parent().unwrap().to_path_buf();
    let name = db.file_name().unwrap().to_str().unwrap().to_string();
    let backup = dir.join("copy.db");
    ok(&db, &["backup", backup.to_str().unwrap()]);
    std::fs::hard_link(&db, dir.join("hard.db")).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.join("target.jsonl"), dir.join("dangling.jsonl")).unwrap();
        std::os::unix::fs::symlink(&backup, dir.join("link.jsonl")).unwrap();
    }
    std::fs::create_dir(dir.join("folder")).unwrap();
    let db_before = bytes_of(&db);
    let cases: Vec<(String, &str)> = vec![
        (name.clone(), "database in use"),
        (format!("{name}-wal"), "database in use"),
        (format!("{name}-shm"), "database in use"),
        (format!("{name}-journal"), "database in use"),
        ("hard.db".into(), "database in use"),
        ("copy.db".into(), "SQLite database"),
        ("dangling.jsonl".into(), "symbolic link"),
        ("link.jsonl".into(), "symbolic link"),
        ("folder".into(), "not a regular file"),
    ];
    for (target, why) in &cases {
        let path = dir.join(target);
        let existed = path.symlink_metadata().is_ok();
        let before = bytes_of(&path);
        for cmd in ["export", "report"] {
            for force in [false, true] {
                let mut args = vec![cmd, "--out", path.to_str().unwrap()];
                if force {
                    args.push("--force");
                }
                refused(&console(&db, &args), why);
                assert_eq!(bytes_of(&path), before, "{args:?} changed {target}");
                assert_eq!(path.symlink_metadata().is_ok(), existed, "{args:?}");
            }
        }
    }
    assert!(
        !dir.join("target.jsonl").exists(),
        "a dangling link created its target"
    );
    assert_eq!(bytes_of(&db), db_before, "the database changed");
    assert!(hidden(&dir).is_empty(), "left behind: {:?}", hidden(&dir));

    // A new file: created 0600. An existing one: refused without --force, replaced with it.
    for (cmd, file) in [("export", "e.jsonl"), ("report", "r.html")] {
        let path = dir.join(file);
        ok(&db, &[cmd, "--out", path.to_str().unwrap()]);
        #[cfg(unix)]
        assert_eq!(mode(&path), 0o600, "{cmd} created {file}");
        std::fs::write(&path, b"precious").unwrap();
        refused(
            &console(&db, &[cmd, "--out", path.to_str().unwrap()]),
            "--force",
        );
        assert_eq!(bytes_of(&path), b"precious");
        ok(&db, &[cmd, "--out", path.to_str().unwrap(), "--force"]);
        assert_ne!(bytes_of(&path), b"precious");
    }
    // backup never replaces, and never writes over the database either.
    refused(
        &console(&db, &["backup", db.to_str().unwrap()]),
        "database in use",
    );
    refused(
        &console(&db, &["backup", backup.to_str().unwrap()]),
        "SQLite database",
    );
    let f = dir.join("e.jsonl");
    refused(
        &console(&db, &["backup", f.to_str().unwrap()]),
        "never replaces",
    );
    assert!(hidden(&dir).is_empty(), "left behind: {:?}", hidden(&dir));
    drop(s);
}

/// An export that fails half-way (here at a 64 KiB file-size limit, as a full disk would stop
/// it) leaves the previous export byte-identical and no temporary file.
#[cfg(unix)]
#[test]
fn a_failed_export_leaves_the_old_file_whole_and_nothing_else() {
    use std::os::unix::process::CommandExt;
    let mut s = seeded();
    // Enough records that the export passes 64 KiB.
    let observations: Vec<Value> = (0..2000)
        .map(|i| json!({"embedder_id": 1 + i % 13, "confidence": 0.5, "correct": i % 2 == 0}))
        .collect();
    s.tool_ok(
        "record_calibration_observations",
        json!({"observations": observations}),
    );
    let db = s.db.clone();
    let dir = db.parent().unwrap().to_path_buf();
    let path = dir.join("export.jsonl");
    std::fs::write(&path, b"the previous export\n").unwrap();
    let out = console_cmd(
        &db,
        &["export", "--out", path.to_str().unwrap(), "--force"],
        b"",
        |cmd| unsafe {
            cmd.pre_exec(|| {
                // The write then fails with EFBIG instead of the signal killing the process.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 64 * 1024,
                    rlim_max: 64 * 1024,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        },
    );
    refused(&out, "cannot write");
    assert_eq!(bytes_of(&path), b"the previous export\n");
    assert!(hidden(&dir).is_empty(), "left behind: {:?}", hidden(&dir));
    drop(s);
}

/// The lines of a fresh export of the demo data.
fn demo_export() -> (Server, PathBuf, Vec<String>) {
    let s = seeded();
    let db = s.db.clone();
    let file = db.parent().unwrap().join("demo.jsonl");
    ok(&db, &["export", "--out", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = text.lines().map(str::to_string).collect();
    (s, file, lines)
}

/// A new empty database, made as the server makes one (the console makes none, but with
/// `import --create`).
fn fresh_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("target.db");
    let (status, _, stderr) = common::pipe(&db, b"");
    assert!(status.success() && db.is_file(), "{stderr}");
    (dir, db)
}

fn counts(db: &Path) -> Value {
    let text = ok(db, &["status", "--json"]);
    serde_json::from_str::<Value>(&text).unwrap()["counts"].clone()
}

/// An export ends with a trailer (record counts, sha256). A file cut at any line, or with a line
/// changed, is refused and nothing is imported; `--partial` imports a cut file knowingly and says
/// how many records were read. An export of format version 1 (no trailer) needs `--partial`.
#[test]
fn an_export_cut_short_or_changed_is_refused_and_partial_imports_it_knowingly() {
    let (_s, _file, lines) = demo_export();
    let trailer: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(trailer["type"], "trailer", "{trailer}");
    assert_eq!(trailer["records"], lines.len() - 2);
    assert_eq!(trailer["sha256"].as_str().unwrap().len(), 64);

    let (_dir, db) = fresh_db();
    let empty = counts(&db);
    for cut in [1, 2, lines.len() / 2, lines.len() - 1] {
        let text = lines[..cut].join("\n") + "\n";
        let out = console_with(&db, &["import", "-"], text.as_bytes());
        refused(&out, "--partial");
        assert_eq!(counts(&db), empty, "a cut at line {cut} imported something");
    }
    // Cut in the middle of a line.
    let whole = lines.join("\n") + "\n";
    let mid = whole.len() / 2;
    refused(
        &console_with(&db, &["import", "-"], &whole.as_bytes()[..mid]),
        "cut short",
    );
    // A changed record: same counts, other bytes.
    let changed = whole.replacen("Mock the database layer", "Mock the database tier!", 1);
    assert_ne!(changed, whole);
    refused(
        &console_with(&db, &["import", "-"], changed.as_bytes()),
        "checksum",
    );
    // Text after the trailer.
    let after = whole.clone() + &lines[1] + "\n";
    refused(
        &console_with(&db, &["import", "-"], after.as_bytes()),
        "after the trailer",
    );
    assert_eq!(counts(&db), empty);

    // --partial: knowingly, saying how much was read.
    let cut = lines.len() / 2;
    let text = lines[..cut].join("\n") + "\n";
    let out = console_with(
        &db,
        &["import", "-", "--partial", "--json"],
        text.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["complete"], false, "{r}");
    assert_eq!(r["records_read"], cut - 1, "{r}");
    assert!(
        r["partial_reason"].as_str().unwrap().contains("no trailer"),
        "{r}"
    );

    // A whole export says so.
    let out = console_with(&db, &["import", "-"], whole.as_bytes());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("whole export") && said.contains("checksum verified"),
        "{said}"
    );

    // Format version 1 (before trailers): refused with the reason, imported with --partial.
    let mut v1: Vec<String> = lines[..lines.len() - 1].to_vec();
    let mut header: Value = serde_json::from_str(&v1[0]).unwrap();
    header["version"] = json!(1);
    v1[0] = header.to_string();
    let v1 = v1.join("\n") + "\n";
    let (_dir2, db2) = fresh_db();
    let err = refused(
        &console_with(&db2, &["import", "-"], v1.as_bytes()),
        "--partial",
    );
    assert!(err.contains("format version 1"), "{err}");
    let out = console_with(&db2, &["import", "-", "--partial"], v1.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("PARTIAL"));
}

/// Import refuses what the tools refuse, naming the line: NUL, a too-long description, years
/// 0000 and 9999, an empty or inconsistent belief history, a header claiming schema 99, a line
/// longer than 16 MiB (`/dev/zero`). Nothing is imported.
#[test]
fn import_refuses_what_the_tools_refuse() {
    let (_s, _file, lines) = demo_export();
    let find = |kind: &str| {
        lines
            .iter()
            .position(|l| serde_json::from_str::<Value>(l).unwrap()["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in the demo export"))
    };
    let (_dir, db) = fresh_db();
    let empty = counts(&db);
    type Change = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "directive",
            Box::new(|v| v["description"] = json!("a\u{0}b")),
            "NUL",
        ),
        (
            "directive",
            Box::new(|v| v["description"] = json!("x".repeat(16_385))),
            "16384",
        ),
        (
            "lesson",
            Box::new(|v| v["created_at"] = json!("9999-01-01T00:00:00Z")),
            "future",
        ),
        (
            "directive",
            Box::new(|v| v["created_at"] = json!("0000-01-01T00:00:00Z")),
            "before 1970",
        ),
        (
            "belief",
            Box::new(|v| v["history"] = json!([])),
            "history is empty",
        ),
        (
            "belief",
            Box::new(|v| v["confidence"] = json!(0.123_456)),
            "latest event leads",
        ),
        (
            "header",
            Box::new(|v| v["schema_version"] = json!(99)),
            "schema version 99",
        ),
    ];
    for (kind, change, needle) in cases {
        let i = find(kind);
        let mut v: Value = serde_json::from_str(&lines[i]).unwrap();
        change(&mut v);
        let mut edited = lines.clone();
        edited[i] = v.to_string();
        // Recompute nothing: the record check comes before the trailer's, line by line.
        let text = edited.join("\n") + "\n";
        let err = refused(
            &console_with(&db, &["import", "-", "--partial"], text.as_bytes()),
            needle,
        );
        assert!(err.contains(&format!("line {}", i + 1)), "{err}");
        assert_eq!(counts(&db), empty, "{kind}: something was imported");
    }
    #[cfg(unix)]
    {
        let err = refused(
            &console(&db, &["import", "/dev/zero"]),
            "longer than 16 MiB",
        );
        assert!(err.contains("line 1"), "{err}");
    }
}

/// Text an agent stored with ESC, OSC, BEL, CR, C1 and bidi controls is shown escaped by every
/// console command that prints it (tables, `lessons show`, `directives`, `escalations`, the
/// JSON forms and `export` on stdout): no such byte reaches the terminal.
#[test]
fn stored_control_characters_never_reach_the_terminal_raw() {
    let mut s = Server::start();
    let evil = "run \u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{9b}31m\u{202e}tset";
    let lesson = s.tool_ok(
        "log_lesson_learned",
        json!({"task_id": format!("T{evil}"), "strategy_description": format!("S{evil}"),
               "rca_summary": format!("R{evil}"), "failure_type": "LOGIC_ERROR",
               "source_agent": format!("A{evil}")}),
    );
    let id = lesson["lesson_id"].as_str().expect("lesson_id").to_string();
    s.tool_ok(
        "record_directive",
        json!({"description": format!("D{evil}"), "task_id": format!("T{evil}"),
               "actor": format!("A{evil}"), "intervention_type": "FEEDBACK"}),
    );
    let db = s.db.clone();
    let raw = |b: &[u8]| {
        let text = String::from_utf8_lossy(b);
        text.chars()
            .any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    for args in [
        vec!["lessons", "list"],
        vec!["lessons", "list", "--json"],
        vec!["lessons", "show", &id],
        vec!["lessons", "show", &id, "--json"],
        vec!["directives"],
        vec!["directives", "--json"],
        vec!["escalations"],
        vec!["export"],
        vec!["status"],
    ] {
        let out = console(&db, &args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !raw(&out.stdout),
            "{args:?} printed a raw control: {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            !raw(&out.stderr),
            "{args:?} printed a raw control on stderr"
        );
    }
    let shown = ok(&db, &["lessons", "show", &id]);
    assert!(shown.contains("\\u{1b}]0;pwned\\u{7}"), "{shown}");
    // The JSON forms and the export keep the text: parsed back, it is what was stored.
    let listed: Value = serde_json::from_str(&ok(&db, &["directives", "--json"])).unwrap();
    assert_eq!(listed[0]["description"], format!("D{evil}"));
}

/// MCP removed JSON-RPC batches in 2025-06-18: a session that negotiated it or later gets one
/// `-32600` and nothing of the batch runs; an older session still gets its batch answered.
#[test]
fn a_batch_after_2025_06_18_is_refused_and_runs_nothing() {
    for (version, refused) in [
        ("2025-11-25", true),
        ("2025-06-18", true),
        ("2025-03-26", false),
    ] {
        let mut s = Server::start();
        s.initialize(version);
        s.send_line(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record_directive","arguments":{"description":"batched","intervention_type":"FEEDBACK"}}}]"#,
        );
        let r = s.recv();
        if refused {
            assert_eq!(r["error"]["code"], -32600, "{version}: {r}");
            assert_eq!(r["id"], Value::Null, "{version}: {r}");
            let m = r["error"]["message"].as_str().unwrap();
            assert!(m.contains(version) && m.contains("line of its own"), "{m}");
            let history = s.tool_ok("list_directive_history", json!({}));
            assert!(
                !history.to_string().contains("batched"),
                "{version}: ran: {history}"
            );
        } else {
            assert_eq!(r.as_array().map(Vec::len), Some(2), "{version}: {r}");
        }
    }
}

/// A PostgreSQL URL with an unencoded `@` in its password is refused before connecting, with
/// the hint to percent-encode it (or use ~/.pgpass / PGPASSWORD), and the password's tail is
/// never shown as a host.
#[test]
fn a_url_with_an_unencoded_at_in_its_password_is_refused_with_the_fix() {
    let out = Command::new(bin())
        .args([
            "--db",
            "postgres://alice:se@cret@db.example:5432/team",
            "status",
        ])
        .env("META_UTL_EMBEDDING_MODEL", "off")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("%40") && err.contains("~/.pgpass"), "{err}");
    assert!(!err.contains("cret"), "the password shows: {err}");
}

common::postgres_only!(a_commit_whose_answer_is_lost_is_answered_truthfully);

/// The simple-query message `COMMIT` as the server sends it.
const COMMIT_MESSAGE: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

/// What the proxy does to the next `COMMIT` it sees.
const PASS: u8 = 0;
/// Cut both connections instead of forwarding it: PostgreSQL never sees it and aborts.
const CUT_BEFORE: u8 = 1;
/// Cut the connection to the client, then forward it and close: PostgreSQL commits, and the
/// answer never reaches the client.
const CUT_AFTER: u8 = 2;

/// A loopback TCP proxy to `upstream` that cuts a connection at its next `COMMIT` as `mode`
/// says (then back to [`PASS`]), and drops every new connection while `refuse` is set.
/// Returns its port.
fn commit_cutting_proxy(
    upstream: String,
    mode: std::sync::Arc<std::sync::atomic::AtomicU8>,
    refuse: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::Ordering;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            if refuse.load(Ordering::SeqCst) {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            }
            let Ok(mut server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let mut buf = [0u8; 1 << 16];
                while let Ok(n) = s2.read(&mut buf) {
                    if n == 0 || c2.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = c2.shutdown(Shutdown::Both);
            });
            let mode = mode.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 1 << 16];
                loop {
                    let n = match client.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = &buf[..n];
                    let at = chunk
                        .windows(COMMIT_MESSAGE.len())
                        .position(|w| w == COMMIT_MESSAGE);
                    let cut = at.map_or(PASS, |_| mode.swap(PASS, Ordering::SeqCst));
                    let at = at.unwrap_or(0);
                    match cut {
                        CUT_BEFORE => {
                            let _ = client.shutdown(Shutdown::Both);
                            let _ = server.write_all(&chunk[..at]);
                            let _ = server.shutdown(Shutdown::Both);
                            return;
                        }
                        CUT_AFTER => {
                            let _ = client.shutdown(Shutdown::Both);
                            let _ = server.write_all(&chunk[..at + COMMIT_MESSAGE.len()]);
                            let _ = server.flush();
                            let _ = server.shutdown(Shutdown::Write);
                            return;
                        }
                        _ => {
                            if server.write_all(chunk).is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = server.shutdown(Shutdown::Both);
            });
        }
    });
    port
}

/// The connection to PostgreSQL dies between sending `COMMIT` and its answer, 60 times (half
/// before PostgreSQL reads it, half after): every call is answered as what happened: success
/// when it committed, "nothing was kept" when it did not; 0 wrong answers, each checked against
/// the database. When PostgreSQL cannot be asked, the answer says the outcome is unknown.
fn a_commit_whose_answer_is_lost_is_answered_truthfully() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU8, Ordering};
    let db = common::pg::Database::create();
    let (_, rest) = db.url.split_once("://").unwrap();
    let (user, hostport_db) = rest.split_once('@').unwrap();
    let (hostport, name) = hostport_db.split_once('/').unwrap();
    let mode = Arc::new(AtomicU8::new(PASS));
    let refuse = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = commit_cutting_proxy(hostport.to_string(), mode.clone(), refuse.clone());
    let url = format!("postgres://{user}@127.0.0.1:{port}/{name}?sslmode=disable");
    let mut s = Server::start_at(&url, &[]);
    s.ready();
    let mut answers = Vec::new();
    for i in 0..90u32 {
        let cut = [PASS, CUT_BEFORE, CUT_AFTER][i as usize % 3];
        mode.store(cut, Ordering::SeqCst);
        let description = format!("commit-trial-{i}");
        let r = s.call(
            "record_directive",
            json!({"description": description, "intervention_type": "FEEDBACK"}),
        );
        let said = match failure(&r) {
            None => "kept",
            Some(m) if m.contains("nothing of this call was kept") => "not kept",
            Some(m) if m.contains("could not be learned") => "unknown",
            Some(m) => panic!("trial {i}: unexpected failure: {m}"),
        };
        answers.push((description, cut, said));
        // A later call works again (the session was renewed).
        mode.store(PASS, Ordering::SeqCst);
    }
    // When PostgreSQL cannot be reached again to ask (here for longer than the 5 s the server
    // tries), the answer says the outcome is unknown and how to check, never "not kept".
    refuse.store(true, Ordering::SeqCst);
    mode.store(CUT_AFTER, Ordering::SeqCst);
    let r = s.call(
        "record_directive",
        json!({"description": "commit-unknown", "intervention_type": "FEEDBACK"}),
    );
    refuse.store(false, Ordering::SeqCst);
    let m = failure(&r).unwrap_or_else(|| panic!("answered as done: {r}"));
    assert!(
        m.contains("could not be learned") && m.contains("txid_status("),
        "{m}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while failure(&s.call("get_meta_learning_status", json!({}))).is_some() {
        assert!(std::time::Instant::now() < deadline, "no reconnection");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let mut client = db.client();
    let stored: std::collections::HashSet<String> = client
        .query("SELECT description FROM meta_utl.directive_history", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut wrong = Vec::new();
    let mut tally = std::collections::BTreeMap::new();
    for (d, cut, said) in &answers {
        *tally.entry((*cut, *said)).or_insert(0u32) += 1;
        let kept = stored.contains(d);
        if (*said == "kept" && !kept) || (*said == "not kept" && kept) {
            wrong.push(format!("{d}: answered {said}, stored {kept}"));
        }
    }
    eprintln!("(cut, answer) → count: {tally:?}");
    assert!(wrong.is_empty(), "{} wrong answers: {wrong:?}", wrong.len());
    // The cuts happened, both ways, and none left the outcome unknown.
    assert!(
        tally.get(&(CUT_AFTER, "kept")).copied().unwrap_or(0) >= 20,
        "{tally:?}"
    );
    assert!(
        tally.get(&(CUT_BEFORE, "not kept")).copied().unwrap_or(0) >= 20,
        "{tally:?}"
    );
    assert_eq!(
        tally.keys().filter(|(_, said)| *said == "unknown").count(),
        0,
        "{tally:?}"
    );
}

/// Deleting (or replacing) the `-wal` and `-shm` of a database under a running server: its next
/// write is refused with an error naming the file and saying never to delete them, instead of
/// writing into a WAL no other process can see.
#[test]
fn a_server_whose_wal_was_deleted_or_replaced_stops_writing() {
    for (suffix, replace) in [("-wal", false), ("-shm", false), ("-wal", true)] {
        let mut s = Server::start();
        let record = json!({"description": "before", "intervention_type": "FEEDBACK"});
        s.tool_ok("record_directive", record.clone());
        let file = PathBuf::from(format!("{}{suffix}", s.db.display()));
        assert!(file.exists(), "{} is missing while serving", file.display());
        std::fs::remove_file(&file).unwrap();
        if replace {
            std::fs::write(&file, b"").unwrap();
        }
        let r = s.call("record_directive", record.clone());
        let m = failure(&r).unwrap_or_else(|| panic!("{suffix}: the write was answered: {r}"));
        let what = if replace {
            "was replaced"
        } else {
            "was deleted"
        };
        assert!(
            m.contains(what) && m.contains(suffix) && m.contains("Never delete"),
            "{suffix}: {m}"
        );
        // Every later write too.
        assert!(failure(&s.call("record_directive", record)).is_some());
    }
}

/// Deleting the `-wal` and `-shm` under a running server, then starting another server or a
/// console command on the file (issue 34: answered writes lost and the file destroyed in 4 of
/// 4 trials): the other process refuses to open it, naming the process that holds it and what
/// was deleted, and creates nothing; the first server, as it exits, copies its deleted WAL into
/// the file, so every write it answered is kept and the file passes `check`.
#[test]
fn deleted_companions_lose_no_answered_write_and_other_processes_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let companion = |suffix: &str| PathBuf::from(format!("{}{suffix}", db.display()));
    let mut s = Server::start_at(&db, &[]);
    let answered: Vec<String> = (0..20).map(|i| format!("answered {i}")).collect();
    for d in &answered {
        s.tool_ok(
            "record_directive",
            json!({"description": d, "intervention_type": "FEEDBACK"}),
        );
    }
    for suffix in ["-wal", "-shm"] {
        std::fs::remove_file(companion(suffix)).unwrap();
    }
    let pid = s.pid().to_string();
    for args in [&[][..], &["export"][..], &["check"][..], &["status"][..]] {
        let out = common::run(&db, args, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} opened the file: {err}");
        assert!(
            err.contains(&format!("is open in process {pid}"))
                && err.contains("-wal is missing")
                && err.contains("Never delete"),
            "{args:?}: {err}"
        );
        for suffix in ["-wal", "-shm"] {
            assert!(!companion(suffix).exists(), "{args:?} created {suffix}");
        }
    }
    let refused = s.call(
        "record_directive",
        json!({"description": "after", "intervention_type": "FEEDBACK"}),
    );
    assert!(failure(&refused).is_some(), "{refused}");
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "exit {status:?}: {stderr}");
    assert!(stderr.contains("copied its WAL into the file"), "{stderr}");
    let checked = common::run(&db, &["check"], b"");
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let export = common::run(&db, &["export"], b"");
    let text = String::from_utf8_lossy(&export.stdout);
    let missing: Vec<_> = answered
        .iter()
        .filter(|d| !text.contains(&format!("\"{d}\"")))
        .collect();
    assert!(missing.is_empty(), "answered but lost: {missing:?}");
    assert!(!text.contains("\"after\""), "a refused write was kept");
}

/// Take, in this test process, the read lock an open WAL-mode SQLite connection keeps on the
/// database (`SHARED`: bytes 0x40000002.. of the file, 510 of them, os_unix.c). It lasts
/// until the returned file, and every other descriptor of `db` in this process, is closed.
#[cfg(unix)]
fn hold_shared_lock(db: &Path) -> std::fs::File {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::options()
        .read(true)
        .write(true)
        .open(db)
        .unwrap();
    // SAFETY: `flock` is plain data, fully set below; the descriptor is valid.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_RDLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = 0x4000_0002;
    lock.l_len = 510;
    assert_eq!(
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) },
        0
    );
    file
}

/// A closed WAL-mode database of ours at `dir/s.db` holding one answered write, with an empty
/// `-wal` and no `-shm`: what another process leaves for a moment while it opens the file.
#[cfg(unix)]
fn mid_open(dir: &Path) -> PathBuf {
    let db = dir.join("s.db");
    let out = common::run(&db, &[], (common::record_line(1, 1) + "\n").as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let companion = |suffix: &str| PathBuf::from(format!("{}{suffix}", db.display()));
    assert!(!companion("-wal").exists() && !companion("-shm").exists());
    std::fs::write(companion("-wal"), b"").unwrap();
    db
}

/// Another process between taking its lock and creating the `-shm` looks, for a moment, like
/// one whose `-shm` was deleted; on a loaded CI machine the moment outlasted the 40 ms a
/// server waited, and a server starting beside five others refused the file. Without proof
/// (a deleted `-shm` kept open by the holder) a server waits and then opens.
#[cfg(unix)]
#[test]
fn a_process_still_opening_the_file_is_waited_for_not_taken_for_an_orphan() {
    let tmp = tempfile::tempdir().unwrap();
    let db = mid_open(tmp.path());
    let _lock = hold_shared_lock(&db);
    let out = common::run(&db, &[], (common::record_line(2, 2) + "\n").as_bytes());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("\"result\""), "{answer} {err}");
    assert!(!err.contains("is open in process"), "{err}");
    drop(_lock);
    let count = Server::start_at(&db, &[]).tool_ok("get_meta_learning_status", json!({}))
        ["interaction_count"]
        .clone();
    assert_eq!(count, 2);
}

/// With proof, a refusal at once: the holder keeps a deleted file of the `-shm`'s name open,
/// which is what a process shows when its `-shm` was deleted under it.
#[cfg(unix)]
#[test]
fn a_holder_keeping_a_deleted_shm_open_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = mid_open(tmp.path());
    let shm = PathBuf::from(format!("{}-shm", db.display()));
    let _deleted_shm = std::fs::File::create(&shm).unwrap();
    std::fs::remove_file(&shm).unwrap();
    let _lock = hold_shared_lock(&db);
    let out = common::run(&db, &[], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it opened the file: {err}");
    assert!(
        err.contains(&format!("is open in process {}", std::process::id()))
            && err.contains("-shm is missing"),
        "{err}"
    );
    assert!(!shm.exists(), "the refused server created the -shm");
}

/// `meta-utl-mcp model install --from SOURCE --to DEST`; returns (exit code, stderr).
fn model_install(from: &Path, to: &Path) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .args(["model", "install", "--from"])
        .arg(from)
        .arg("--to")
        .arg(to)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A zip whose `tokenizer.json` entry is larger than any model file needs is refused while it
/// is extracted (not after filling the disk), with nothing installed and no temporary folder.
#[test]
fn a_model_zip_entry_beyond_its_cap_is_refused_and_leaves_nothing() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("model.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&archive).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("config.json", stored).unwrap();
    zip.write_all(b"{}").unwrap();
    zip.start_file("tokenizer.json", stored).unwrap();
    let mib = vec![b' '; 1 << 20];
    for _ in 0..65 {
        zip.write_all(&mib).unwrap();
    }
    for name in ["model.safetensors", "1_Pooling/config.json"] {
        zip.start_file(name, stored).unwrap();
        zip.write_all(b"{}").unwrap();
    }
    zip.finish().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let (code, err) = model_install(&archive, &models.join("m"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("tokenizer.json") && err.contains("larger than 64 MiB"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&models).unwrap().count(),
        0,
        "left in models/"
    );
}

/// A model whose `tokenizer.json` is garbage is refused before the install reports success (it
/// used to install with exit 0, and the server then fell back to lexical matching).
#[test]
fn a_model_with_a_garbage_tokenizer_is_not_installed() {
    let Some(model) = common::real_model("a_model_with_a_garbage_tokenizer_is_not_installed")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    std::fs::create_dir_all(source.join("1_Pooling")).unwrap();
    for rel in ["config.json", "model.safetensors", "1_Pooling/config.json"] {
        std::fs::copy(model.join(rel), source.join(rel)).unwrap();
    }
    std::fs::write(source.join("tokenizer.json"), br#"{"version": "garbage"}"#).unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let (code, err) = model_install(&source, &models.join("m"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("tokenizer"), "{err}");
    assert_eq!(
        std::fs::read_dir(&models).unwrap().count(),
        0,
        "left in models/"
    );
}

/// A storage failure names the database file and the likely fix: a stored text that is not
/// UTF-8 (written by another program) used to be answered "database error: incomplete utf-8
/// byte sequence" and nothing more.
#[test]
fn a_storage_error_names_the_file_and_the_fix() {
    let mut s = Server::start();
    s.tool_ok(
        "log_lesson_learned",
        json!({"task_id": "T-1", "strategy_description": "Mock the database layer",
               "rca_summary": "r", "failure_type": "LOGIC_ERROR", "source_agent": "a"}),
    );
    let db = s.db.clone();
    let owned = s.kill();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute(
            "UPDATE lessons SET rca_summary = CAST(x'c3' AS TEXT), source_agent = CAST(x'c3' AS TEXT)",
            [],
        )
        .unwrap();
    }
    let mut s = Server::start_at(&db, &[]);
    let r = s.call(
        "check_strategy_blacklist",
        json!({"task_id": "T-1", "strategy": "Mock the database layer"}),
    );
    let m = failure(&r).unwrap_or_else(|| panic!("served: {r}"));
    assert!(
        m.contains(db.to_str().unwrap()) && m.contains("meta-utl-mcp check"),
        "{m}"
    );
    drop(s);
    drop(owned);
}

/// A write that carries a `request_key`, sent again with the same key and arguments (an agent
/// retrying after a lost answer, or after "whether it was kept could not be learned"), answers
/// the first call's answer and stores nothing twice, also after a restart; the same key with
/// other arguments is refused naming `request_key`; without a key, a retry writes again.
fn a_write_retried_with_its_request_key_is_stored_once(backend: Backend) {
    let mut s = Server::start_on(backend);
    let directive = json!({"description": "pin serde", "intervention_type": "FEEDBACK",
                           "task_id": "T-1", "request_key": "retry-1"});
    let first = s.tool_ok("record_directive", directive.clone());
    let again = s.tool_ok("record_directive", directive.clone());
    assert_eq!(first, again, "a retry got another answer");
    let observations = json!({"observations": [
        {"embedder_id": 1, "confidence": 0.8, "correct": true},
        {"embedder_id": 1, "confidence": 0.3, "correct": false}],
        "request_key": "batch-7"});
    let recorded = s.tool_ok("record_calibration_observations", observations.clone());
    // The same key names a call per tool: no clash with record_directive's.
    let mut s = s.restart();
    assert_eq!(s.tool_ok("record_directive", directive.clone()), first);
    assert_eq!(
        s.tool_ok("record_calibration_observations", observations.clone()),
        recorded
    );
    let history = s.tool_ok("list_directive_history", json!({"task_id": "T-1"}));
    assert_eq!(history["total_count"], 1, "{history}");
    let metrics = s.tool_ok("get_calibration_metrics", json!({}));
    assert_eq!(metrics["observation_count"], 2, "{metrics}");
    // The same key with other arguments: refused, naming the field; nothing stored.
    let mut other = directive.clone();
    other["description"] = json!("pin tokio");
    let (_, message) = s.tool_err("record_directive", other);
    assert!(
        message.contains("request_key") && message.contains("other arguments"),
        "{message}"
    );
    // Without a key a retry writes again, as before.
    let mut plain = directive.clone();
    plain.as_object_mut().unwrap().remove("request_key");
    s.tool_ok("record_directive", plain.clone());
    s.tool_ok("record_directive", plain);
    let history = s.tool_ok("list_directive_history", json!({"task_id": "T-1"}));
    assert_eq!(history["total_count"], 3, "{history}");
    // A blank key is refused like any blank text.
    let mut blank = directive;
    blank["request_key"] = json!("  ");
    let (_, message) = s.tool_err("record_directive", blank);
    assert!(message.contains("request_key"), "{message}");
}

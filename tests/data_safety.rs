//! Damaged, foreign and unreachable database files over the real binary: each is refused (or
//! stops the writes) with a message naming the file, and is left byte-identical (issue 16,
//! items 1–4 and 15).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Server, bin, pipe};
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

fn directive_line(id: usize) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"record_directive",
        "arguments":{"task_id": format!("T-{}", id % 50), "intervention_type": "FEEDBACK",
        "description": format!("directive number {id}: keep the schema in step with the docs")}}})
    .to_string()
}

/// A database holding `n` directives written through the tools, closed cleanly.
fn with_directives(db: &Path, n: usize) {
    let input: String = (1..=n).map(|i| directive_line(i) + "\n").collect();
    let (status, lines, stderr) = pipe(db, input.as_bytes());
    assert!(status.success(), "{stderr}");
    assert_eq!(lines.len(), n);
    assert!(sidecars(db).is_empty(), "closed cleanly");
}

/// `-wal`, `-shm` and `-journal` files beside `db`.
fn sidecars(db: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", db.display())))
        .filter(|p| p.exists())
        .collect()
}

/// Read a file with SQLite without touching it or creating anything beside it.
fn inspect(db: &Path) -> Connection {
    Connection::open_with_flags(
        format!("file:{}?immutable=1", db.display()),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap()
}

/// The byte offset and size of the middle leaf page of `table`.
fn a_leaf_page(db: &Path, table: &str) -> (usize, usize) {
    let conn = inspect(db);
    let page_size: usize = conn
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let mut stmt = conn
        .prepare("SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = 'leaf' ORDER BY pageno")
        .unwrap();
    let pages: Vec<i64> = stmt
        .query_map([table], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(pages.len() > 4, "{table} has {} leaf pages", pages.len());
    let page = pages[pages.len() / 2] as usize;
    ((page - 1) * page_size, page_size)
}

/// XOR the 64 bytes from `offset` with 0xA5.
fn xor_64_bytes_at(db: &Path, offset: usize) {
    let mut bytes = std::fs::read(db).unwrap();
    for b in &mut bytes[offset..offset + 64] {
        *b ^= 0xA5;
    }
    std::fs::write(db, bytes).unwrap();
}

/// A write and a read, piped to a server on `db`.
fn write_and_read() -> Vec<u8> {
    format!(
        "{}\n{}\n",
        directive_line(1_000_001),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_directive_history","arguments":{"limit":1000}}})
    )
    .into_bytes()
}

fn assert_refused_untouched(db: &Path, wants: &[&str]) -> String {
    let before = std::fs::read(db).unwrap();
    let sidecars_before = sidecars(db);
    let (status, lines, stderr) = pipe(db, &write_and_read());
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(lines.is_empty(), "nothing served: {lines:?}");
    for w in wants {
        assert!(stderr.contains(w), "stderr lacks {w:?}: {stderr}");
    }
    assert!(
        std::fs::read(db).unwrap() == before,
        "the refused file was changed"
    );
    assert_eq!(sidecars(db), sidecars_before, "nothing left beside it");
    stderr
}

#[test]
fn a_damaged_page_is_found_at_start_up_and_the_file_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    with_directives(&db, 3000);
    let (page, size) = a_leaf_page(&db, "directive_history");
    xor_64_bytes_at(&db, page + size / 2 - 32);
    assert_refused_untouched(
        &db,
        &[
            "is damaged",
            &db.display().to_string(),
            "meta-utl-mcp check",
            "meta-utl-mcp backup",
            "restore",
        ],
    );
}

#[test]
fn damage_met_while_serving_stops_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    with_directives(&db, 3000);
    let mut s = Server::start_at(&db, &[]);
    s.ready();
    let logged = s.tool_ok(
        "log_lesson_learned",
        json!({"task_id": "T-1", "strategy_description": "Pin the HTTP client to version 2",
               "rca_summary": "the bug is in the server", "failure_type": "LOGIC_ERROR",
               "source_agent": "test"}),
    );

    // Damage a page header under the running server (found by any read of the page), then
    // commit a harmless change from another connection: the server drops its page cache and
    // reads the damaged page from disk.
    let (page, _) = a_leaf_page(&db, "directive_history");
    xor_64_bytes_at(&db, page);
    {
        let other = Connection::open(&db).unwrap();
        let v: i64 = other
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        other
            .execute_batch(&format!("PRAGMA user_version = {v}"))
            .unwrap();
    }
    let main_before = std::fs::read(&db).unwrap();
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    let wal_before = std::fs::read(&wal).unwrap();

    let mut damage_seen = None;
    for offset in [0, 1000, 2000] {
        let r = s.call(
            "list_directive_history",
            json!({"limit": 1000, "offset": offset}),
        );
        if let Some(e) = r.get("error") {
            damage_seen = Some(e["message"].as_str().unwrap().to_string());
            break;
        }
    }
    let message = damage_seen.expect("reading every directive meets the damaged page");
    assert!(
        message.contains("is damaged") && message.contains("meta-utl-mcp check"),
        "{message}"
    );
    let r = s.call(
        "record_directive",
        json!({"intervention_type": "FEEDBACK", "description": "written after the damage"}),
    );
    let refused = r["error"]["message"].as_str().unwrap_or_default();
    assert!(refused.contains("is damaged"), "{r}");
    let r = s.call(
        "record_prediction",
        json!({"embedder_index": 1, "predicted": 0.9, "actual": 0.4}),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is damaged"),
        "{r}"
    );
    // The blacklist check would record its prediction, a write: refused, but the agent still
    // gets the verdict (read from pages that are intact), without a prediction_id.
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "T-1", "strategy": "Pin the HTTP client to version 2"}),
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["lesson"]["id"], logged["lesson_id"], "{r}");
    assert!(
        r["probability"].is_number() && r.get("prediction_id").is_none(),
        "{r}"
    );
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("answered without recording its prediction"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&db).unwrap() == main_before,
        "the damaged file was written"
    );
    assert!(
        std::fs::read(&wal).unwrap() == wal_before,
        "the WAL was written"
    );
}

/// How a float is laid out in the file.
#[derive(Clone, Copy)]
enum Layout {
    /// Our own BLOBs (accuracy windows).
    LittleEndian,
    /// An SQLite REAL column.
    BigEndian,
}

/// Flip one bit of the exponent of a stored `value` (found in the file's bytes; `confirm` is
/// an SQL query saying whether the flip hit the intended row), which multiplies it by 2^1024:
/// 0.6875 becomes about 1.2e308.
fn flip_a_stored_float(db: &Path, value: f64, layout: Layout, confirm: &str) {
    let (pattern, top) = match layout {
        Layout::LittleEndian => (value.to_le_bytes(), 7),
        Layout::BigEndian => (value.to_be_bytes(), 0),
    };
    let original = std::fs::read(db).unwrap();
    let hits: Vec<usize> = original
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == pattern)
        .map(|(i, _)| i)
        .collect();
    for at in hits {
        let mut bytes = original.clone();
        bytes[at + top] ^= 0x40;
        std::fs::write(db, &bytes).unwrap();
        let flipped: bool = inspect(db)
            .query_row(confirm, [], |r| r.get(0))
            .unwrap_or(false);
        if flipped {
            return;
        }
    }
    panic!("{value} not found in the stored rows");
}

#[test]
fn an_out_of_range_stored_value_is_damage_not_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    // |0.8125 − 0.5| = 0.3125: every prediction stores the accuracy 0.6875, exact in binary.
    let line = |id: usize| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"record_prediction",
            "arguments":{"embedder_index": 4, "predicted": 0.8125, "actual": 0.5}}})
        .to_string()
            + "\n"
    };
    let input: String = (1..=3).map(line).collect();
    let (status, _, stderr) = pipe(&db, input.as_bytes());
    assert!(status.success(), "{stderr}");
    let (_, lines, _) = pipe(
        &db,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_meta_learning_status","arguments":{}}}
"#,
    );
    let status: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(
        status["result"]["structuredContent"]["current_accuracy"], 0.6875,
        "{status}"
    );

    flip_a_stored_float(
        &db,
        0.6875,
        Layout::LittleEndian,
        "SELECT count(*) > 0 FROM meta_windows WHERE instr(hex(vals), '000000000000E67F') > 0",
    );
    assert_refused_untouched(&db, &["is damaged", "accuracy", "meta-utl-mcp check"]);
}

#[test]
fn an_out_of_range_lambda_in_the_state_row_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let (status, _, stderr) = pipe(
        &db,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"record_prediction","arguments":{"embedder_index":4,"predicted":0.9,"actual":0.1}}}
"#,
    );
    assert!(status.success(), "{stderr}");
    let lambda: f64 = inspect(&db)
        .query_row("SELECT lambda_s FROM meta_state", [], |r| r.get(0))
        .unwrap();
    flip_a_stored_float(
        &db,
        lambda,
        Layout::BigEndian,
        "SELECT lambda_s > 1e100 FROM meta_state",
    );
    assert_refused_untouched(&db, &["is damaged", "λ", "meta-utl-mcp check"]);
}

/// An SQLite file of another application: a `customers` table, `user_version` as given.
fn foreign_file(db: &Path, user_version: i64, application_id: i32) {
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT);
         INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com'), ('Bob', 'bob@example.com');
         PRAGMA user_version = {user_version};
         PRAGMA application_id = {application_id};"
    ))
    .unwrap();
}

#[test]
fn foreign_sqlite_files_are_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for (version, app_id) in [(0, 0), (3, 0), (9, 0), (1, 0x1234_5678)] {
        let db = dir.path().join(format!("customers-{version}-{app_id}.db"));
        foreign_file(&db, version, app_id);
        let stderr = assert_refused_untouched(
            &db,
            &["not a meta-utl-mcp database", "customers", "left untouched"],
        );
        assert!(
            stderr.contains(&format!("user_version {version}")),
            "{stderr}"
        );
        let conn = inspect(&db);
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
            .unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!((tables, mode.as_str()), (1, "delete"), "{}", db.display());
    }
}

/// The store opens while the server answers the handshake: a refused file may see
/// `initialize` answered, but never a tool call, and it is still left byte-identical.
#[test]
fn a_refused_file_gets_no_tool_call_answered_even_after_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("customers.db");
    foreign_file(&db, 0, 0);
    let before = std::fs::read(&db).unwrap();
    let input = format!(
        "{}\n{}\n{}\n",
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"data-safety","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
            "name":"get_meta_learning_status","arguments":{}}}),
    );
    let (status, lines, stderr) = pipe(&db, input.as_bytes());
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a meta-utl-mcp database"), "{stderr}");
    for line in &lines {
        let answer: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            answer["id"], 1,
            "only the handshake may be answered: {line}"
        );
        assert!(answer["result"]["serverInfo"].is_object(), "{line}");
    }
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the refused file was changed"
    );
}

#[test]
fn new_files_are_marked_and_our_unmarked_files_accepted_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    with_directives(&db, 3);
    let id = |db: &Path| -> i32 {
        inspect(db)
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(id(&db), 0x4D55_544C, "the ASCII of MUTL");

    // A file of ours written before the application id: our tables, our user_version.
    Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA application_id = 0")
        .unwrap();
    assert_eq!(id(&db), 0);
    let (status, lines, stderr) = pipe(
        &db,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_directive_history","arguments":{}}}
"#,
    );
    assert!(status.success(), "{stderr}");
    let r: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(r["result"]["structuredContent"]["total_count"], 3, "{r}");
    assert_eq!(id(&db), 0x4D55_544C);

    // An empty SQLite file (created by `sqlite3 x.db 'VACUUM'`, say) is taken as new.
    let empty = dir.path().join("empty.db");
    Connection::open(&empty)
        .unwrap()
        .execute_batch("VACUUM")
        .unwrap();
    let (status, _, stderr) = pipe(&empty, b"");
    assert!(status.success(), "{stderr}");
    assert_eq!(id(&empty), 0x4D55_544C);
}

/// Run the binary as the user `nobody` (uid and gid 65534) on `db` with an empty stdin;
/// `None` when that is impossible here (not root, or no `setpriv`), with the reason printed.
fn as_nobody(db: &Path) -> Option<Output> {
    if !is_root() {
        eprintln!("skipped: needs root to run the server as an unprivileged user");
        return None;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            bin(),
            "--db",
        ])
        .arg(db)
        .env_remove("META_UTL_DB")
        .env("META_UTL_EMBEDDING_MODEL", "off")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(out) => Some(out),
        Err(e) => {
            eprintln!("skipped: cannot run setpriv ({e})");
            None
        }
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[cfg(unix)]
#[test]
fn a_refused_read_only_file_leaves_nothing_that_keeps_refusing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let db = home.join("state.db");
    if !is_root() {
        eprintln!("skipped: needs root to run the server as an unprivileged user");
        return;
    }
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let Some(out) = as_nobody(&db) else { return };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o400)).unwrap();
    let before = std::fs::read(&db).unwrap();
    let out = as_nobody(&db).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot open") && stderr.contains("state.db"),
        "{stderr}"
    );
    assert!(sidecars(&db).is_empty(), "left behind: {:?}", sidecars(&db));
    assert!(std::fs::read(&db).unwrap() == before);

    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = as_nobody(&db).unwrap();
    assert!(
        out.status.success(),
        "still refused after the mode was fixed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn a_symlinked_path_makes_the_file_it_points_to_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink("data/real.db", &link).unwrap();
    let (status, _, stderr) = pipe(&link, b"");
    assert!(status.success(), "{stderr}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let real = dir.path().join("data/real.db");
    assert_eq!(mode(&real), 0o600);
    assert_eq!(mode(&dir.path().join("data")), 0o700);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "only the link and the directory"
    );
}

#[test]
fn an_sqlite_uri_is_refused_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("cwd");
    std::fs::create_dir(&work).unwrap();
    let uri = format!("file:{}/u.db?cache=private", dir.path().display());
    let out = common::command()
        .args(["--db", &uri])
        .current_dir(&work)
        .env_remove("META_UTL_DB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("SQLite URI") && stderr.contains("./file:"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "no junk tree");
    assert!(!dir.path().join("u.db").exists());
}

#[test]
fn a_path_that_is_not_a_regular_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for (path, kind) in [
        (PathBuf::from("/dev/null"), "a character device"),
        (dir.path().to_path_buf(), "a directory"),
    ] {
        let (status, _, stderr) = pipe(&path, b"");
        assert_eq!(status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("is not a regular file") && stderr.contains(kind),
            "{stderr}"
        );
    }
}

/// A tmpfs of `size` mounted on `at` for the test's lifetime; `None` (with the reason printed)
/// when mounting is impossible here.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        if !is_root() {
            eprintln!("skipped: needs root to mount a small tmpfs");
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_reported_as_such_and_every_answer_tells_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mnt) = Tmpfs::mount(&dir.path().join("mnt"), "3m") else {
        return;
    };
    let db = mnt.0.join("state.db");
    let mut s = Server::start_at(&db, &[]);
    // Pipelined, so that writes share group commits: 10,000 observations spill the page cache
    // into the WAL in the middle of a group, and SQLite rolls the whole group back by itself
    // when that fails; the writes after it used to be answered "cannot commit - no
    // transaction is active".
    let mut input = String::new();
    let mut id = 0;
    let rounds = 30;
    for round in 0..rounds {
        id += 1;
        let observations: Vec<Value> = (0..10_000)
            .map(|k| {
                json!({"embedder_id": 1 + (k + round) % 13, "confidence": (k % 997) as f64 / 997.0,
                       "correct": k % 3 == 0, "domain": "Code"})
            })
            .collect();
        input += &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
            "name":"record_calibration_observations","arguments":{"observations": observations}}})
        .to_string();
        input.push('\n');
        for _ in 0..5 {
            id += 1;
            input += &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"record_directive",
                "arguments":{"intervention_type":"FEEDBACK","description": format!("{id} {}", "y".repeat(3000))}}})
            .to_string();
            input.push('\n');
        }
    }
    s.send_raw(input.as_bytes());
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for _ in 0..id {
        let r = s.recv();
        let id = r["id"].as_u64().unwrap();
        let result = &r["result"];
        if result.is_object() && result["isError"] == false {
            if id % 6 != 1 {
                ok.push(id);
            }
        } else {
            let message = r["error"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| result["structuredContent"]["detail"].to_string());
            failed.push((id, message));
        }
    }
    assert!(!failed.is_empty(), "the disk never filled up");
    for (id, message) in &failed {
        assert!(
            !message.contains("no transaction is active"),
            "write {id} hides its cause: {message}"
        );
        assert!(message.contains("full"), "write {id}: {message}");
    }
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "{stderr}");

    // The directives answered as written are stored, and no other.
    let conn = Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT description FROM directive_history")
        .unwrap();
    let mut stored: Vec<u64> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|d| d.unwrap().split(' ').next().unwrap().parse().unwrap())
        .collect();
    stored.sort_unstable();
    ok.sort_unstable();
    assert_eq!(stored, ok);
}

//! The operator's console, driven as a person drives it: the real binary's subcommands on a
//! database filled through the MCP tools, with an MCP server running on it the whole time.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Server, bin, demo};
use serde_json::{Value, json};

/// Run `meta-utl-mcp --db DB ARGS…` with `stdin` piped in; returns the output.
fn console_with(db: &Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(bin())
        .env("META_UTL_PROJECT", common::TEST_PROJECT)
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("META_UTL_DB")
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn meta-utl-mcp");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

fn console(db: &Path, args: &[&str]) -> Output {
    console_with(db, args, b"")
}

/// stdout of a command that must succeed.
fn ok(db: &Path, args: &[&str]) -> String {
    let text = common::succeeded(console(db, args), args);
    assert!(!text.contains('\x1b'), "{args:?}: colour escapes on a pipe");
    text
}

/// The JSON a `--json` command prints.
fn json_of(db: &Path, args: &[&str]) -> Value {
    let text = ok(db, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
}

/// A server on a fresh database filled with the demo data; it keeps running.
fn seeded() -> Server {
    let mut s = Server::start();
    demo::seed(&mut s);
    s
}

/// The id of the demo lesson whose strategy is [`demo::BLOCKED`].
fn blocked_lesson_id(db: &Path) -> String {
    let lessons = json_of(db, &["lessons", "list", "--task", "task-42 ", "--json"]);
    lessons
        .as_array()
        .expect("array")
        .iter()
        .find(|l| l["strategy"] == demo::BLOCKED.1)
        .expect("the blocked lesson")["id"]
        .as_str()
        .expect("id")
        .to_string()
}

#[test]
fn the_listings_show_what_the_tools_stored_while_a_server_runs() {
    let mut s = seeded();
    let db = s.db.clone();
    assert_eq!(demo::escalation_status(&mut s), "human_review_required");

    let st = json_of(&db, &["status", "--json"]);
    assert_eq!(st["escalation_status"], "human_review_required");
    assert!(
        st["escalation_advice"]
            .as_str()
            .unwrap()
            .contains("escalations ack")
    );
    assert_eq!(st["counts"]["lessons"], 6);
    assert_eq!(st["counts"]["active_lessons"], 6);
    assert_eq!(st["counts"]["beliefs"], 2);
    assert_eq!(st["counts"]["observations"], 1200);
    assert_eq!(st["interaction_count"], 38);
    assert_eq!(st["lifecycle_stage"], "infancy");
    let domains: Vec<&str> = st["calibration"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["domain"].as_str().unwrap())
        .collect();
    assert_eq!(domains, ["code", "medical"]);
    for c in st["calibration"].as_array().unwrap() {
        assert!(c["ece_calibrated"].as_f64().unwrap() < c["ece_raw"].as_f64().unwrap());
    }
    assert!(st["last_activity"].is_string());
    let screen = ok(&db, &["status"]);
    for want in [
        "Database",
        "λ_s",
        "human_review_required",
        "medical",
        "6 lessons (6 active)",
    ] {
        assert!(screen.contains(want), "status lacks {want:?}:\n{screen}");
    }

    let all = json_of(&db, &["lessons", "list", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 6);
    let task7 = ok(&db, &["lessons", "list", "--task", "TASK-7"]);
    assert_eq!(task7.matches("TOOL_MISUSE").count(), 1, "{task7}");
    assert!(!task7.contains("TASK-42"), "{task7}");
    let id = blocked_lesson_id(&db);
    let shown = json_of(&db, &["lessons", "show", &id, "--json"]);
    assert_eq!(shown["lesson"]["strategy"], demo::BLOCKED.1);
    assert_eq!(shown["lesson"]["is_active"], true);
    let text = ok(&db, &["lessons", "show", &id]);
    assert!(text.contains("Mocks hid a migration bug"), "{text}");

    let directives = json_of(&db, &["directives", "--json", "--limit", "50"]);
    let kinds: Vec<&str> = directives
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["intervention_type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"FEEDBACK") && kinds.contains(&"MANUAL_FIX"));
    assert!(kinds.contains(&"ESCALATION"), "{kinds:?}");
    let task7 = json_of(&db, &["directives", "--task", "task-7", "--json"]);
    assert_eq!(task7.as_array().unwrap().len(), 1);
    assert_eq!(task7[0]["actor"], "bob");
    let one = json_of(&db, &["directives", "--limit", "1", "--json"]);
    assert_eq!(one.as_array().unwrap().len(), 1);

    let esc = json_of(&db, &["escalations", "--json"]);
    assert_eq!(esc["escalation_status"], "human_review_required");
    let events: Vec<&str> = esc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == "bayesian_escalation")
            .count(),
        3
    );
    assert_eq!(events.last(), Some(&"human_escalation"), "{events:?}");
    let text = ok(&db, &["escalations"]);
    assert!(text.contains("escalations ack --rationale"), "{text}");

    // The server kept serving throughout.
    assert!(demo::blacklisted(&mut s));
}

#[test]
fn lift_unblocks_the_running_server_and_restore_blocks_it_again() {
    let mut s = seeded();
    let db = s.db.clone();
    let id = blocked_lesson_id(&db);
    assert!(demo::blacklisted(&mut s));

    let said = ok(
        &db,
        &[
            "lessons",
            "lift",
            &id,
            "--rationale",
            "The database layer was rewritten",
        ],
    );
    assert!(said.contains("Lifted"), "{said}");
    assert!(
        !demo::blacklisted(&mut s),
        "the running server still blocks"
    );
    let latest = json_of(&db, &["directives", "--limit", "1", "--json"]);
    assert_eq!(latest[0]["intervention_type"], "OVERRIDE");
    assert_eq!(latest[0]["actor"], "tester", "--actor defaults to $USER");
    assert_eq!(latest[0]["task_id"], "TASK-42");
    let note = latest[0]["description"].as_str().unwrap();
    assert!(note.contains(&id) && note.contains("deactivated"), "{note}");
    assert!(note.contains("The database layer was rewritten"), "{note}");
    let active = json_of(&db, &["lessons", "list", "--json"]);
    assert_eq!(
        active.as_array().unwrap().len(),
        5,
        "lifted lessons are hidden"
    );
    let all = json_of(&db, &["lessons", "list", "--all", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 6);

    ok(
        &db,
        &[
            "lessons",
            "restore",
            &id,
            "--rationale",
            "It broke again",
            "--actor",
            "carol",
        ],
    );
    assert!(
        demo::blacklisted(&mut s),
        "the running server does not block again"
    );
    let latest = json_of(&db, &["directives", "--limit", "1", "--json"]);
    assert_eq!(latest[0]["actor"], "carol");
    assert!(
        latest[0]["description"]
            .as_str()
            .unwrap()
            .contains("re-activated")
    );

    // What the tool itself records is the same.
    let tool = s.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": id, "active": false, "rationale": "by the tool"}),
    );
    assert_eq!(tool["previous_is_active"], true);
    let latest = json_of(&db, &["directives", "--limit", "1", "--json"]);
    assert_eq!(latest[0]["intervention_type"], "OVERRIDE");
    assert!(
        latest[0]["description"]
            .as_str()
            .unwrap()
            .contains("deactivated")
    );

    for (args, want) in [
        (
            vec!["lessons", "lift", "not-a-uuid", "--rationale", "x"],
            "is not a lesson id",
        ),
        (
            vec![
                "lessons",
                "lift",
                "6f1c1c4e-8e0a-4c55-9a43-1d1f0a9b2c3d",
                "--rationale",
                "x",
            ],
            "no lesson",
        ),
        (
            vec!["lessons", "lift", &id, "--rationale", "  "],
            "--rationale",
        ),
    ] {
        let out = console(&db, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn ack_returns_the_running_server_to_normal() {
    let mut s = seeded();
    let db = s.db.clone();
    assert_eq!(demo::escalation_status(&mut s), "human_review_required");
    let said = ok(
        &db,
        &[
            "escalations",
            "ack",
            "--rationale",
            "Reviewed: the outcomes were mislabelled",
        ],
    );
    assert!(said.contains("human_review_required → normal"), "{said}");
    assert_eq!(demo::escalation_status(&mut s), "normal");
    let log = s.tool_ok(
        "get_meta_learning_log",
        json!({"event_type": "self_healing"}),
    );
    assert_eq!(log["total_count"], 1);
    let latest = json_of(&db, &["directives", "--limit", "1", "--json"]);
    assert_eq!(latest[0]["intervention_type"], "OVERRIDE");
    assert_eq!(latest[0]["actor"], "tester");
    assert_eq!(
        latest[0]["description"],
        "reset_meta_learning (escalation): Reviewed: the outcomes were mislabelled"
    );
    let esc = json_of(&db, &["escalations", "--json"]);
    assert_eq!(esc["escalation_status"], "normal");
    assert_eq!(esc["events"], json!([]), "events since the acknowledgement");
}

fn fresh_db(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

#[test]
fn export_then_import_elsewhere_blocks_the_strategy_and_twice_duplicates_nothing() {
    let s = seeded();
    let db = s.db.clone();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.jsonl");
    ok(&db, &["export", "--out", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "header");
    assert_eq!(header["format"], "meta-utl-mcp-export");
    assert_eq!(header["version"], 4);
    // Every lesson, directive and belief names its project (the seeding server's).
    for line in text.lines().skip(1) {
        let record: Value = serde_json::from_str(line).unwrap();
        if ["lesson", "directive", "belief"].contains(&record["type"].as_str().unwrap()) {
            assert!(record["project"].is_string(), "{line}");
        }
    }
    let to_stdout = ok(&db, &["export"]);
    assert_eq!(to_stdout.lines().count(), text.lines().count());
    let kinds = |kind: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"type\":\"{kind}\"")))
            .count()
    };
    assert_eq!(kinds("lesson"), 6);
    assert_eq!(kinds("belief"), 2);
    assert_eq!(kinds("observation"), 1200);
    assert!(kinds("directive") >= 3 && kinds("event") >= 3);

    let other = fresh_db(&dir, "other.db");
    let first = json_of(
        &other,
        &["import", file.to_str().unwrap(), "--json", "--create"],
    );
    assert_eq!(first["lessons_added"], 6);
    assert_eq!(first["beliefs_created"], 2);
    assert_eq!(first["observations_added"], 1200);
    let mut there = Server::start_at(&other, &[]);
    assert!(
        demo::blacklisted(&mut there),
        "the strategy is not blocked after import"
    );

    // Again, through stdin as `export | import -` does, while the server runs there.
    let out = console_with(&other, &["import", "-", "--json"], text.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    for added in [
        "lessons_added",
        "directives_added",
        "beliefs_created",
        "belief_events_added",
        "observations_added",
        "events_added",
    ] {
        assert_eq!(second[added], 0, "{added} on the second import: {second}");
    }
    assert_eq!(second["lessons_skipped"], 6);
    assert_eq!(second["observations_skipped"], 1200);
    let a = json_of(&db, &["status", "--json"]);
    let b = json_of(&other, &["status", "--json"]);
    for count in [
        "lessons",
        "active_lessons",
        "beliefs",
        "directives",
        "events",
        "observations",
    ] {
        assert_eq!(a["counts"][count], b["counts"][count], "{count}");
    }
    let merged = there.tool_ok(
        "epistemic_action",
        json!({"action_type": "query", "target": "CI runs on Debian 12", "rationale": "x"}),
    );
    assert!(merged.to_string().contains("Debian 12"), "{merged}");

    // A newer format is refused and nothing is stored.
    let newer = text.replacen("\"version\":4", "\"version\":5", 1);
    let fresh = fresh_db(&dir, "newer.db");
    let out = console_with(&fresh, &["import", "-", "--create"], newer.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("version 5") && err.contains("upgrade"),
        "{err}"
    );
    assert!(!fresh.exists(), "a refused import --create made a database");
    // A broken line names itself, and nothing of the file is stored.
    let (status, _, stderr) = common::pipe(&fresh, b"");
    assert!(status.success(), "{stderr}");
    let broken = format!("{text}{{\"type\":\"lesson\",\"id\":\"nope\"}}\n");
    let out = console_with(&fresh, &["import", "-"], broken.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("line {}", text.lines().count() + 1)),
        "{err}"
    );
    assert_eq!(
        json_of(&fresh, &["status", "--json"])["counts"]["lessons"],
        0
    );
}

/// XOR the start of every other page after the first (4 KiB pages): SQLite's checks find it.
fn damage(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let pages = bytes.len() / 4096;
    for p in (1..pages).step_by(2) {
        for b in &mut bytes[p * 4096..p * 4096 + 16] {
            *b ^= 0x5A;
        }
    }
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn backup_while_serving_gives_a_copy_that_serves_and_check_finds_damage() {
    let mut s = seeded();
    let db = s.db.clone();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    let said = ok(&db, &["backup", copy.to_str().unwrap()]);
    assert!(said.contains("passed its integrity check"), "{said}");
    // The server still serves its own file, and writes go on.
    s.tool_ok(
        "record_directive",
        json!({"intervention_type": "FEEDBACK", "description": "after the backup"}),
    );
    let out = console(&db, &["backup", copy.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an existing file is overwritten"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("never written over"));

    let check = json_of(&copy, &["check", "--json"]);
    assert_eq!(check["healthy"], true, "{check}");
    assert_eq!(check["values_checked"], true);
    assert!(ok(&db, &["check"]).contains("all in range"));
    {
        let mut from_copy = Server::start_at(&copy, &[]);
        assert!(
            demo::blacklisted(&mut from_copy),
            "the copy does not serve the lessons"
        );
        assert_eq!(
            demo::escalation_status(&mut from_copy),
            "human_review_required"
        );
        let n = from_copy.tool_ok("list_directive_history", json!({"limit": 100}));
        assert!(
            !n.to_string().contains("after the backup"),
            "a later write in the copy"
        );
    }

    let damaged = dir.path().join("damaged.db");
    ok(&db, &["backup", damaged.to_str().unwrap()]);
    damage(&damaged);
    let before = std::fs::read(&damaged).unwrap();
    let out = console(&damaged, &["check"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("DAMAGED"), "{text}");
    let out = console(&damaged, &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["healthy"], false);
    assert!(!found["integrity"].as_array().unwrap().is_empty());
    assert_eq!(
        std::fs::read(&damaged).unwrap(),
        before,
        "check wrote to the file"
    );
    for suffix in ["-wal", "-shm"] {
        let mut side = damaged.clone().into_os_string();
        side.push(suffix);
        assert!(!Path::new(&side).exists(), "check left {suffix}");
    }

    // A value out of range (not damage SQLite sees) is found too.
    let odd = dir.path().join("odd.db");
    ok(&db, &["backup", odd.to_str().unwrap()]);
    plant_bad_temperature(&odd);
    let out = console(&odd, &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["integrity"], json!([]), "{found}");
    assert!(
        found["values"].to_string().contains("temperature"),
        "{found}"
    );

    // Not ours: refused, untouched, exit 2.
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, "not a database").unwrap();
    let out = console(&foreign, &["check"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&foreign).unwrap(), b"not a database");
}

/// Set an ATC temperature out of its range in `db` (what a bug or a flipped sign bit would
/// do): SQLite sees nothing wrong, the loaders' range validation does.
fn plant_bad_temperature(db: &Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let n = conn
        .execute(
            "UPDATE atc_temperatures SET temperature = -1.0 WHERE embedder_id = 5",
            [],
        )
        .unwrap();
    assert_eq!(n, 1, "no temperature row to change");
}

/// The Chromium binary, if installed.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// What headless Chromium made of a page: its DOM after loading, the console messages it
/// logged at warning level or above, and a screenshot.
struct Rendered {
    dom: String,
    console_errors: Vec<String>,
    screenshot: Vec<u8>,
}

/// Load `page` in headless Chromium (no network: the page must need none), dump its DOM and
/// take a `width`×`height` screenshot.
fn render(browser: &Path, page: &Path, width: u32, height: u32) -> Rendered {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    let url = format!("file://{}", page.display());
    let run = |extra: &[String]| {
        let profile = tempfile::tempdir().unwrap();
        Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("run chromium")
    };
    let dom = run(&["--dump-dom".to_string()]);
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let shot_run = run(&[
        format!("--screenshot={}", shot.display()),
        format!("--window-size={width},{height}"),
    ]);
    assert!(shot_run.status.success(), "chromium --screenshot failed");
    // Chromium logs a page's console messages as `…:CONSOLE(line)] "message", source: …`.
    let console_errors = [&dom.stderr, &shot_run.stderr]
        .iter()
        .flat_map(|e| {
            String::from_utf8_lossy(e)
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Failed to load"))
        .collect();
    Rendered {
        dom: String::from_utf8_lossy(&dom.stdout).into_owned(),
        console_errors,
        screenshot: std::fs::read(&shot).unwrap_or_default(),
    }
}

#[test]
fn the_report_is_one_page_of_plots_that_chromium_renders_without_errors() {
    let mut s = seeded();
    let db = s.db.clone();
    // One acknowledged escalation, so that the λ plot marks both kinds.
    ok(
        &db,
        &[
            "escalations",
            "ack",
            "--rationale",
            "Reviewed the mislabelled outcomes",
        ],
    );
    let id = blocked_lesson_id(&db);
    ok(&db, &["lessons", "lift", &id, "--rationale", "Rewritten"]);
    assert_eq!(demo::escalation_status(&mut s), "normal");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let said = ok(&db, &["report", "--out", page.to_str().unwrap()]);
    assert!(said.contains("Wrote"), "{said}");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing fetched, no script.
    for banned in ["<script", "http://", "https://", "src=", "<link", "@import"] {
        let found = html.replace("http://www.w3.org/2000/svg", "");
        assert!(!found.contains(banned), "the page holds {banned:?}");
    }
    // The plots: a reliability diagram per embedder with data (3), one per source of the
    // project's own outcomes with data (the demo's verified belief: 1), ECE over time, λ_s over
    // time, the arms of the two domains with pulls, lessons over time, the directive timeline.
    assert!(
        html.contains("beliefs · T = 1.00 · n = 1"),
        "the beliefs' diagram"
    );
    assert_eq!(
        html.matches("<svg").count(),
        3 + 1 + 1 + 1 + 2 + 1 + 1,
        "plots in the page"
    );
    for want in [
        "E1_Semantic",
        "E5_Causal",
        "E7_Code",
        "ECE over time",
        "λ_s over time",
        "human_escalation",
        "self_healing",
        "Code · ",
        "Medical · ",
        "LOGIC_ERROR",
        "Directive timeline",
    ] {
        assert!(html.contains(want), "the report lacks {want:?}");
    }

    let Some(browser) = chromium() else {
        eprintln!("SKIPPED the Chromium rendering: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let r = render(&browser, &page, 1280, 2750);
    assert!(
        r.console_errors.is_empty(),
        "console errors: {:#?}",
        r.console_errors
    );
    assert!(
        r.dom.contains("<title>meta-utl-mcp report</title>"),
        "the page did not load"
    );
    assert_eq!(
        r.dom.matches("<svg").count(),
        10,
        "plots in the rendered DOM (the page's 10, the beliefs' reliability diagram included)"
    );
    assert!(
        r.dom.matches("<text").count() > 100,
        "the plots have no text"
    );
    assert!(r.screenshot.starts_with(b"\x89PNG"), "no screenshot");
    if let Some(dest) = std::env::var_os("CONSOLE_REPORT_SCREENSHOT") {
        std::fs::write(&dest, &r.screenshot).unwrap();
    }

    // The check itself sees a console error and a failed load when there is one.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><title>x</title><script>console.error('broken plot')</script>",
    )
    .unwrap();
    let r = render(&browser, &bad, 400, 300);
    assert!(
        r.console_errors.iter().any(|l| l.contains("broken plot")),
        "a console error went unseen"
    );
}

/// The `font-size` values of an SVG's text.
fn font_sizes(svg: &str) -> Vec<f64> {
    svg.split("font-size=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.trim_end_matches("px").parse().ok())
        .collect()
}

/// The texts of an SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|rest| {
            let body = rest.split_once('>')?.1;
            Some(body.split("</text>").next()?.to_string())
        })
        .collect()
}

/// The SVG that follows the heading `title` in the report.
fn plot_after<'a>(html: &'a str, title: &str) -> &'a str {
    let from = html
        .find(&format!("<h2>{title}</h2>"))
        .unwrap_or_else(|| panic!("no section {title:?}"));
    let rest = &html[from..];
    let start = rest.find("<svg").expect("an svg");
    let end = rest.find("</svg>").expect("the svg's end");
    &rest[start..end]
}

#[test]
fn the_report_shows_the_lessons_the_beliefs_and_what_to_do_about_the_escalation() {
    let mut s = seeded();
    let db = s.db.clone();
    assert_eq!(demo::escalation_status(&mut s), "human_review_required");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    ok(&db, &["report", "--out", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    // The lessons, with strategy, root cause, project and state; the beliefs with history.
    for (task, strategy, rca, _) in demo::LESSONS {
        for want in [task, strategy, rca] {
            assert!(html.contains(want), "the lessons table lacks {want:?}");
        }
    }
    assert!(html.contains("<td data-label=\"state\" class=\"blocks\">blocks</td>"));
    let beliefs = &html[html.find("<h2>Beliefs</h2>").expect("a Beliefs section")..];
    for want in [
        "CI runs on Debian 12",
        "The login test fails because the session cookie expires",
        "<b>hypothesize</b> 0.60 → hypothetical",
        "<b>verify</b> 0.90 → verified",
        "It fails only in runs over 30 s",
    ] {
        assert!(beliefs.contains(want), "the beliefs lack {want:?}");
    }
    // What to check, and the command that acknowledges, which works as printed.
    assert!(html.contains("A person must review: human_review_required"));
    assert!(html.contains("are the recorded outcomes right"));
    let command = html
        .split("<pre>")
        .filter_map(|p| p.split("</pre>").next())
        .find(|c| c.contains("escalations ack"))
        .expect("the ack command")
        .replace("&quot;", "\"");
    assert_eq!(
        command,
        format!(
            "meta-utl-mcp --db {} escalations ack --rationale \"what you found and decided\"",
            db.display()
        )
    );
    let ran = Command::new("sh")
        .arg("-c")
        .arg(command.replacen("meta-utl-mcp", bin(), 1))
        .env("USER", "tester")
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(demo::escalation_status(&mut s), "normal");
    // Legible: no text under 12 px in any plot.
    for svg in html.split("<svg").skip(1) {
        let sizes = font_sizes(svg);
        assert!(!sizes.is_empty());
        assert!(sizes.iter().all(|&px| px >= 12.0), "font sizes {sizes:?}");
    }
    // Time axes in whole seconds at most, count axes in whole numbers.
    for t in texts(&html) {
        let ms = t.len() >= 10 && t.as_bytes()[8] == b'.' && t[..2].parse::<u8>().is_ok();
        assert!(!ms, "a millisecond time label: {t:?}");
    }
    let lessons = plot_after(&html, "Lessons per failure type");
    for t in texts(lessons) {
        if let Ok(v) = t.trim().parse::<f64>() {
            assert_eq!(v.fract(), 0.0, "a fractional lesson count: {t:?}");
        }
    }
    // The time plots span the page.
    assert!(
        lessons.starts_with("<svg width=\"1140\""),
        "{}",
        &lessons[..60]
    );

    let Some(browser) = chromium() else {
        eprintln!("SKIPPED the Chromium rendering: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let keep = std::env::var_os("CONSOLE_REPORT_SCREENSHOT_DIR").map(PathBuf::from);
    for (width, height, name) in [
        (1280, 4400, "report-1280.png"),
        (390, 2600, "report-390.png"),
    ] {
        let r = render(&browser, &page, width, height);
        assert!(r.console_errors.is_empty(), "{:#?}", r.console_errors);
        assert!(
            r.screenshot.starts_with(b"\x89PNG"),
            "no screenshot at {width}"
        );
        if let Some(dir) = &keep {
            std::fs::write(dir.join(name), &r.screenshot).unwrap();
        }
    }
}

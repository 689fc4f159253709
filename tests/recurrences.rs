//! Lessons that recur are one lesson, over the wire on both backends: `log_lesson_learned` of a
//! reworded repeat of an active lesson of the task answers that lesson's id and counts the
//! recurrence instead of making a second lesson; an identical strategy still answers
//! `LESSON_ALREADY_EXISTS`; another approach, an inactive lesson or another task's lesson
//! makes a new one. The console shows the recurrences and `lessons split` undoes a wrong merge;
//! export and import carry them.

mod common;

use common::{Backend, Server, both_backends};
use serde_json::{Value, json};

both_backends!(
    a_reworded_repeat_merges_and_another_approach_does_not,
    the_console_splits_a_wrong_merge_into_a_lesson_of_its_own,
    export_and_import_carry_recurrences,
    with_the_model_a_rephrasing_merges_and_a_reversal_does_not,
);

const TASK: &str = "T-parser";
/// The lesson, and rewordings the lexical matcher blocks against it (`tests/lessons.rs`).
const LESSON: &str = "Rewrite the parser with a hand written recursive descent approach";
const SIMILAR: &str = "Rewrite the parser using a handwritten recursive descent approach";
const CONTAINS: &str =
    "First rewrite the parser with a hand written recursive descent approach then retry";
const OTHER: &str = "Add an index on task_id";

fn args(task: &str, strategy: &str, rca: &str) -> Value {
    json!({"task_id": task, "strategy_description": strategy, "rca_summary": rca,
           "failure_type": "LOGIC_ERROR", "source_agent": "agent-1"})
}

fn log(s: &mut Server, task: &str, strategy: &str, rca: &str) -> Value {
    let r = s.tool_ok("log_lesson_learned", args(task, strategy, rca));
    assert_eq!(r["success"], true, "{strategy}: {r}");
    r
}

/// The structured failure of a `log_lesson_learned` call.
fn refused(s: &mut Server, task: &str, strategy: &str) -> Value {
    let r = s.call("log_lesson_learned", args(task, strategy, "again"));
    assert_eq!(r["result"]["isError"], true, "{strategy}: {r}");
    r["result"]["structuredContent"].clone()
}

fn check(s: &mut Server, task: &str, strategy: &str) -> Value {
    s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": task, "strategy": strategy}),
    )
}

fn console(db: &Server, args: &[&str]) -> std::process::Output {
    common::run(&db.db, args, b"")
}

fn console_json(db: &Server, args: &[&str]) -> Value {
    let out = common::succeeded(console(db, args), args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// The task's lessons as `lessons list --all --json` prints them.
fn lessons(s: &Server, task: &str) -> Vec<Value> {
    let v = console_json(s, &["lessons", "list", "--all", "--json", "--task", task]);
    v.as_array().expect("an array").clone()
}

fn a_reworded_repeat_merges_and_another_approach_does_not(backend: Backend) {
    let mut s = Server::start_on(backend);
    let first = log(&mut s, TASK, LESSON, "the grammar is ambiguous");
    let id = first["lesson_id"].as_str().unwrap().to_owned();
    assert!(first.get("merged_into_existing").is_none(), "{first}");

    // Reworded (similar), then containing it: the same lesson, counted.
    let again = log(
        &mut s,
        TASK,
        SIMILAR,
        "left recursion in the expression rule",
    );
    assert_eq!(again["lesson_id"], id.as_str(), "{again}");
    assert_eq!(again["merged_into_existing"], true, "{again}");
    assert_eq!(again["match_type"], "similar", "{again}");
    assert_eq!(again["recurrences"], 1, "{again}");
    let third = log(&mut s, TASK, CONTAINS, "same ambiguity, third time");
    assert_eq!(third["lesson_id"], id.as_str(), "{third}");
    assert_eq!(third["match_type"], "contains", "{third}");
    assert_eq!(third["recurrences"], 2, "{third}");
    let listed = lessons(&s, TASK);
    assert_eq!(listed.len(), 1, "no second lesson: {listed:?}");
    assert_eq!(listed[0]["recurrences"], 2);

    // The identical strategy is still LESSON_ALREADY_EXISTS, and counts nothing.
    let same = refused(&mut s, TASK, &LESSON.to_uppercase());
    assert_eq!(same["error"], "LESSON_ALREADY_EXISTS", "{same}");
    assert_eq!(same["lesson_id"], id.as_str());

    // `lessons show` lists both recurrences, oldest first, with their root causes.
    let shown = console_json(&s, &["lessons", "show", &id, "--json"]);
    let rec = shown["recurrences"].as_array().unwrap();
    assert_eq!(rec.len(), 2, "{shown}");
    assert_eq!(rec[0]["strategy"], SIMILAR);
    assert_eq!(
        rec[0]["rca_summary"],
        "left recursion in the expression rule"
    );
    assert_eq!(rec[0]["match_type"], "similar");
    assert_eq!(rec[1]["match_type"], "contains");
    assert_eq!(shown["lesson"]["recurrences"], 2);
    let text = common::succeeded(console(&s, &["lessons", "show", &id]), &["show"]);
    assert!(text.contains("2 reworded repeats merged"), "{text}");
    assert!(text.contains("left recursion"), "{text}");
    let table = common::succeeded(console(&s, &["lessons", "list"]), &["list"]);
    assert!(
        table.contains("recurred") && table.contains("2×"),
        "{table}"
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    common::succeeded(
        console(&s, &["report", "--out", page.to_str().unwrap()]),
        &["report"],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("2 reworded repeats merged"),
        "the report counts them"
    );

    // Another approach of the same task is a lesson of its own.
    let other = log(&mut s, TASK, OTHER, "the index does not help");
    assert_ne!(other["lesson_id"], id.as_str());
    assert!(other.get("merged_into_existing").is_none(), "{other}");
    // Another task's lesson never absorbs one.
    let elsewhere = log(&mut s, "T-another", SIMILAR, "why");
    assert_ne!(elsewhere["lesson_id"], id.as_str());
    assert!(
        elsewhere.get("merged_into_existing").is_none(),
        "{elsewhere}"
    );

    // An inactive lesson absorbs nothing: a rewording of it is a new lesson.
    s.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": id, "active": false, "rationale": "the grammar changed"}),
    );
    let fresh = log(
        &mut s,
        TASK,
        "Rewrite the whole parser with a hand written recursive descent approach",
        "why",
    );
    assert_ne!(fresh["lesson_id"], id.as_str(), "{fresh}");
    assert!(fresh.get("merged_into_existing").is_none(), "{fresh}");
    // The identical strategy of an inactive lesson is still LESSON_ALREADY_EXISTS.
    let lifted = refused(&mut s, TASK, LESSON);
    assert_eq!(lifted["lesson_id"], id.as_str(), "{lifted}");
    assert_eq!(lifted["is_active"], false);
    assert_eq!(lessons(&s, TASK).len(), 3);
}

fn the_console_splits_a_wrong_merge_into_a_lesson_of_its_own(backend: Backend) {
    let mut s = Server::start_on(backend);
    let id = log(&mut s, TASK, LESSON, "ambiguous")["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    log(&mut s, TASK, SIMILAR, "a different root cause after all");
    let shown = console_json(&s, &["lessons", "show", &id, "--json"]);
    let rec_id = shown["recurrences"][0]["id"].as_str().unwrap().to_owned();

    // Unknown and malformed ids are refused, naming the id; nothing changes.
    let missing = "00000000-0000-4000-8000-000000000000";
    for bad in [missing, "zz-not-an-id", "fffff"] {
        let out = console(&s, &["lessons", "split", bad]);
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(bad), "{bad}: {err}");
    }
    let help = common::succeeded(console(&s, &["lessons", "split", "--help"]), &["--help"]);
    assert!(
        help.contains("recurrence") && help.contains("--rationale"),
        "{help}"
    );

    let out = common::succeeded(
        console(
            &s,
            &[
                "lessons",
                "split",
                &rec_id[..8],
                "--rationale",
                "another approach",
                "--actor",
                "ops",
            ],
        ),
        &["split"],
    );
    assert!(out.contains(&rec_id) && out.contains("OVERRIDE"), "{out}");
    let listed = lessons(&s, TASK);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let split = listed
        .iter()
        .find(|l| l["strategy"] == SIMILAR)
        .expect("split");
    let split_id = split["id"].as_str().unwrap();
    assert_eq!(split["rca_summary"], "a different root cause after all");
    assert_eq!(split["is_active"], true);
    assert_eq!(split["recurrences"], 0);
    let shown = console_json(&s, &["lessons", "show", &id, "--json"]);
    assert_eq!(shown["recurrences"], json!([]), "the recurrence is gone");

    // Each lesson now blocks its own strategy.
    let a = check(&mut s, TASK, LESSON);
    assert_eq!(a["lesson"]["id"], id.as_str(), "{a}");
    let b = check(&mut s, TASK, SIMILAR);
    assert_eq!(b["lesson"]["id"], split_id, "{b}");
    assert_eq!(b["match_type"], "exact", "{b}");

    // Recorded as an OVERRIDE naming both lessons, by the actor, with the rationale.
    let h = s.tool_ok("list_directive_history", json!({"task_id": TASK}));
    let entry = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["description"].as_str().unwrap().contains(&rec_id))
        .unwrap_or_else(|| panic!("no entry names {rec_id}: {h}"))
        .clone();
    assert_eq!(entry["intervention_type"], "OVERRIDE");
    assert_eq!(entry["actor"], "ops");
    let d = entry["description"].as_str().unwrap();
    assert!(d.contains(&id) && d.contains(split_id) && d.contains("another approach"));

    // Split twice: the recurrence is gone, and the error names it.
    let out = console(&s, &["lessons", "split", &rec_id]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&rec_id));

    // A split the task's lessons refuse: since the merge, its strategy became a lesson (its
    // lesson was lifted, so the same call made a new one). Refused, naming both; nothing
    // changes.
    let task = "T-refused";
    let first = log(&mut s, task, LESSON, "why")["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    log(&mut s, task, CONTAINS, "why again");
    let rec = console_json(&s, &["lessons", "show", &first, "--json"])["recurrences"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": first, "active": false, "rationale": "changed"}),
    );
    let since = log(&mut s, task, CONTAINS, "why, once more")["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = console(&s, &["lessons", "split", &rec]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&rec) && err.contains(&since), "{err}");
    assert_eq!(lessons(&s, task).len(), 2);
    let kept = console_json(&s, &["lessons", "show", &first, "--json"]);
    assert_eq!(
        kept["recurrences"][0]["id"],
        rec.as_str(),
        "the recurrence stays"
    );
}

fn export_and_import_carry_recurrences(backend: Backend) {
    let mut s = Server::start_on(backend);
    let id = log(&mut s, TASK, LESSON, "ambiguous")["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    log(&mut s, TASK, SIMILAR, "left recursion");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("export.jsonl");
    common::succeeded(
        console(&s, &["export", "--out", file.to_str().unwrap()]),
        &["export"],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], 4);
    assert_eq!(text.matches("\"type\":\"recurrence\"").count(), 1, "{text}");

    // Into a fresh database of the same backend, twice: added once, then skipped.
    let target = Server::start_on(backend);
    let import =
        |t: &Server| console_json(t, &["import", file.to_str().unwrap(), "--json", "--create"]);
    let first = import(&target);
    assert_eq!(first["recurrences_added"], 1, "{first}");
    assert_eq!(first["lessons_added"], 1, "{first}");
    let again = import(&target);
    assert_eq!(again["recurrences_added"], 0, "{again}");
    assert_eq!(again["recurrences_skipped"], 1, "{again}");
    let shown = console_json(&target, &["lessons", "show", &id, "--json"]);
    let source = console_json(&s, &["lessons", "show", &id, "--json"]);
    assert_eq!(shown["recurrences"], source["recurrences"], "round trip");

    // A version 3 export (before recurrences) is still read: the same file without its
    // recurrence, as version 3 wrote it, whole (trailer recomputed).
    let v3_text = rewrite(&text, 3, |l| !l.contains("\"type\":\"recurrence\""));
    let old = dir.path().join("v3.jsonl");
    std::fs::write(&old, v3_text).unwrap();
    let v3 = Server::start_on(backend);
    let r = console_json(
        &v3,
        &["import", old.to_str().unwrap(), "--json", "--create"],
    );
    assert_eq!(r["format_version"], 3, "{r}");
    assert_eq!(
        (r["lessons_added"].as_u64(), r["recurrences_added"].as_u64()),
        (Some(1), Some(0)),
        "{r}"
    );

    // A recurrence whose lesson is neither in the file nor in the target becomes a lesson of
    // its own, under its id: nothing exported is lost; importing again adds nothing.
    let orphan = dir.path().join("orphan.jsonl");
    let without_lesson = rewrite(&text, 4, |l| !l.contains("\"type\":\"lesson\""));
    std::fs::write(&orphan, without_lesson).unwrap();
    let alone = Server::start_on(backend);
    for (round, want) in [(1, 1), (2, 0)] {
        let r = console_json(
            &alone,
            &["import", orphan.to_str().unwrap(), "--json", "--create"],
        );
        assert_eq!(r["recurrences_as_lessons"], want, "round {round}: {r}");
    }
    let own = lessons(&alone, TASK);
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0]["strategy"], SIMILAR);
    assert_eq!(own[0]["id"], source["recurrences"][0]["id"]);

    // A target that already holds the lesson under another id: the recurrence joins it.
    let mut other = Server::start_on(backend);
    let theirs = log(&mut other, TASK, LESSON, "theirs")["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = import(&other);
    assert_eq!(
        (
            r["lessons_skipped"].as_u64(),
            r["recurrences_added"].as_u64()
        ),
        (Some(1), Some(1)),
        "{r}"
    );
    let joined = console_json(&other, &["lessons", "show", &theirs, "--json"]);
    assert_eq!(joined["recurrences"][0]["strategy"], SIMILAR, "{joined}");
}

/// With the embedding model loaded, its classifier decides: a rephrasing the lexical matcher
/// would miss merges, a reversal (a near miss) is a lesson of its own. Skipped without the
/// model (`META_UTL_EMBEDDING_MODEL`).
fn with_the_model_a_rephrasing_merges_and_a_reversal_does_not(backend: Backend) {
    let Some(model) = common::real_model("with_the_model_a_rephrasing_merges") else {
        return;
    };
    let db = backend.fresh();
    let mut s = Server::start_at(&db.target, &["--embedding-model", model.to_str().unwrap()]);
    let parse = log(
        &mut s,
        "T-1",
        "Parse the HTML with regular expressions",
        "why",
    )["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let timeout = log(
        &mut s,
        "T-1",
        "Increase the HTTP client timeout to 30 seconds",
        "why",
    )["lesson_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(parse, timeout);
    let r = log(
        &mut s,
        "t-1",
        "I tried using a regex to parse the html page",
        "regexes cannot parse nested tags",
    );
    assert_eq!(r["lesson_id"], parse.as_str(), "{r}");
    assert_eq!(r["merged_into_existing"], true, "{r}");
    assert_eq!(r["match_type"], "similar", "{r}");
    assert_eq!(r["recurrences"], 1, "{r}");
    let reversal = log(
        &mut s,
        "T-1",
        "Decrease the HTTP client timeout to 30 seconds",
        "why",
    );
    assert!(reversal.get("merged_into_existing").is_none(), "{reversal}");
    assert_ne!(reversal["lesson_id"], timeout.as_str());
    assert_eq!(lessons(&s, "T-1").len(), 3);
}

/// Export `text` with only the record lines `keep` accepts, its header saying format
/// `version`, and the trailer recomputed (counts and sha256), so that it imports as whole.
fn rewrite(text: &str, version: u32, keep: impl Fn(&str) -> bool) -> String {
    use sha2::{Digest, Sha256};
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.contains("\"type\":\"trailer\""))
        .enumerate()
        .filter(|(i, l)| *i == 0 || keep(l))
        .map(|(_, l)| l.to_owned())
        .collect();
    lines[0] = lines[0].replacen("\"version\":4", &format!("\"version\":{version}"), 1);
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut counts = serde_json::Map::new();
    for l in &lines[1..] {
        let v: Value = serde_json::from_str(l).unwrap();
        let kind = v["type"].as_str().unwrap().to_owned();
        let n = counts.get(&kind).and_then(Value::as_u64).unwrap_or(0);
        counts.insert(kind, json!(n + 1));
    }
    let sha: String = Sha256::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let trailer = json!({"type": "trailer", "records": lines.len() - 1, "counts": counts,
                         "sha256": sha});
    format!("{body}{trailer}\n")
}

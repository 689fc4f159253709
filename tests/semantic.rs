//! The embedding matcher over the wire: the real binary with the real all-MiniLM-L6-v2 weights
//! (found through `META_UTL_EMBEDDING_MODEL`, see `scripts/fetch_model.sh`), a real SQLite
//! file. Each test that needs the weights says on stderr that it was skipped when they are
//! absent. Where the model comes from, and what happens without one, is tested without them.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{MODEL_ENV, Server, bin, real_model};
use meta_utl_mcp::service::lessons::matching::Variant;
use serde_json::{Value, json};

/// How long the server may take to load the model and embed the stored lessons.
const BACKFILL_WAIT: Duration = Duration::from_secs(60);

fn start_with_model(db: &Path, model: &Path) -> Server {
    let mut s = Server::start_at(db, &["--embedding-model", model.to_str().unwrap()]);
    s.initialize("2025-06-18");
    s
}

fn log(s: &mut Server, task: &str, strategy: &str) -> String {
    let r = s.tool_ok(
        "log_lesson_learned",
        json!({"task_id": task, "strategy_description": strategy,
               "rca_summary": format!("why {strategy} failed"),
               "failure_type": "LOGIC_ERROR", "source_agent": "test"}),
    );
    r["lesson_id"].as_str().expect("lesson_id").to_owned()
}

fn check(s: &mut Server, task: &str, strategy: &str) -> Value {
    s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": task, "strategy": strategy}),
    )
}

#[test]
fn rephrased_strategies_are_caught_and_reversals_are_near_misses() {
    let Some(model) = real_model("rephrased_strategies_are_caught") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = start_with_model(&dir.path().join("state.db"), &model);
    let parse = log(&mut s, "T-1", "Parse the HTML with regular expressions");
    log(
        &mut s,
        "T-1",
        "Increase the HTTP client timeout to 30 seconds",
    );

    // Synonyms, inflection and person: blocked by the embedding matcher.
    let r = check(
        &mut s,
        "t-1",
        "I tried using a regex to parse the html page",
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["match_type"], "similar", "{r}");
    assert_eq!(r["lesson"]["id"], parse.as_str(), "{r}");
    assert_eq!(r["matcher"]["kind"], "embedding", "{r}");
    assert_eq!(r["matcher"]["model"], "all-MiniLM-L6-v2", "{r}");
    let threshold = r["matcher"]["threshold"].as_f64().unwrap();
    let score = r["score"].as_f64().unwrap();
    assert!(score >= threshold && score <= 1.0, "{r}");

    // A reversal scores as high but is let through, with the lesson shown.
    let r = check(
        &mut s,
        "T-1",
        "Decrease the HTTP client timeout to 30 seconds",
    );
    assert_eq!(r["blacklisted"], false, "{r}");
    let near = r["near_misses"].as_array().expect("near_misses");
    assert_eq!(near.len(), 1, "{r}");
    assert_eq!(near[0]["reason"], "reversal", "{r}");
    assert!(near[0]["score"].as_f64().unwrap() >= threshold, "{r}");

    // Something else entirely: not blocked, the closest lesson shown with its score.
    let r = check(&mut s, "T-1", "Add a database index on the user id column");
    assert_eq!(r["blacklisted"], false, "{r}");
    assert!(r["closest"]["score"].as_f64().unwrap() < threshold, "{r}");

    // Exact and containment still block as before, with the embedding matcher named.
    let r = check(&mut s, "T-1", "parse the HTML with regular expressions!");
    assert_eq!(r["match_type"], "exact", "{r}");
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "{stderr}");
}

/// The `embedding*` columns of every lesson: (strategy, model, dimension).
fn stored_vectors(db: &Path) -> Vec<(String, Option<String>, Option<i64>)> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT strategy_description, embedding_model, length(embedding) / 4 FROM lessons
             ORDER BY seq",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn lessons_carry_vectors_and_old_lessons_are_embedded_in_the_background() {
    let Some(model) = real_model("lessons_carry_vectors") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");

    // Logged without a model: no vectors.
    let mut s = Server::start_at(&db, &[]);
    s.initialize("2025-06-18");
    for i in 0..40 {
        let strategy = match i {
            3 => "Parse the HTML with regular expressions".to_owned(),
            _ => format!("Strategy number {i} for the build"),
        };
        log(&mut s, &format!("T-{}", i % 7), &strategy);
    }
    let r = check(&mut s, "T-1", "Use the cache");
    assert_eq!(r["matcher"]["kind"], "lexical", "{r}");
    s.finish();
    assert!(stored_vectors(&db).iter().all(|(_, m, _)| m.is_none()));

    // With the model: the server answers at once, and embeds the old lessons in the
    // background; a lesson logged now gets its vector in its own transaction.
    let mut s = start_with_model(&db, &model);
    log(&mut s, "T-9", "Vendor the dependency into the repository");
    let started = Instant::now();
    loop {
        let rows = stored_vectors(&db);
        if rows
            .iter()
            .all(|(_, m, d)| m.as_deref() == Some("all-MiniLM-L6-v2") && *d == Some(384))
        {
            assert_eq!(rows.len(), 41);
            break;
        }
        assert!(
            started.elapsed() < BACKFILL_WAIT,
            "lessons without vectors after {BACKFILL_WAIT:?}: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The stored vectors decide like freshly computed ones: a paraphrase of an old lesson.
    let r = check(
        &mut s,
        "T-3",
        "I tried using a regex to parse the html page",
    );
    assert_eq!(r["matcher"]["kind"], "embedding", "{r}");
    assert_eq!(r["match_type"], "similar", "{r}");
    assert_eq!(
        r["lesson"]["strategy_description"], "Parse the HTML with regular expressions",
        "{r}"
    );
    let (status, _, stderr) = s.finish();
    assert!(status.success(), "{stderr}");
}

#[test]
fn a_lesson_logged_by_a_server_without_the_model_is_stored_with_a_vector_after_a_check() {
    let Some(model) = real_model("a_lesson_logged_by_a_server_without_the_model") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let mut with_model = start_with_model(&db, &model);
    // A first check waits for the model; the start-up back-fill after it (of an empty
    // database: one query) is over long before the lesson below is logged, so only the
    // check's request can give that lesson its vector.
    check(&mut with_model, "T", "warm up");
    std::thread::sleep(Duration::from_millis(500));
    let mut lexical = Server::start_at(&db, &[]);
    lexical.initialize("2025-06-18");
    log(&mut lexical, "T", "Parse the HTML with regular expressions");
    assert_eq!(stored_vectors(&db)[0].1, None);

    // The check embeds the lesson for itself and blocks; the embedding thread then stores
    // the vector, so that later checks read it.
    let r = check(
        &mut with_model,
        "T",
        "I tried using a regex to parse the html page",
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    let started = Instant::now();
    while stored_vectors(&db)[0].1.as_deref() != Some("all-MiniLM-L6-v2") {
        assert!(
            started.elapsed() < BACKFILL_WAIT,
            "no vector after {BACKFILL_WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    lexical.finish();
    let (status, _, stderr) = with_model.finish();
    assert!(status.success(), "{stderr}");
}

#[test]
fn related_lessons_are_ranked_by_meaning() {
    let Some(model) = real_model("related_lessons_are_ranked_by_meaning") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = start_with_model(&dir.path().join("state.db"), &model);
    log(
        &mut s,
        "OTHER-1",
        "Run the Kubernetes deployment with a Helm chart",
    );
    log(&mut s, "OTHER-2", "Switch the JSON parser to simd-json");
    log(&mut s, "OTHER-3", "Bake the secrets into the Docker image");
    log(&mut s, "MINE", "Deploy to k8s with helm");
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "MINE", "strategy": "Ship it to the k8s cluster using helm charts",
               "include_related": true}),
    );
    let related = r["related_lessons"].as_array().expect("related_lessons");
    assert!(!related.is_empty(), "{r}");
    // No lesson of the task itself, the closest by meaning first, scores falling.
    assert_eq!(related[0]["lesson"]["task_id"], "OTHER-1", "{r}");
    let scores: Vec<f64> = related
        .iter()
        .map(|l| l["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(related.iter().all(|l| l["lesson"]["task_id"] != "MINE"
        && l["advisory"] == true
        && l.get("bm25").is_none()));

    // A deactivated lesson is no longer related.
    let id = related[0]["lesson"]["id"].as_str().unwrap().to_owned();
    s.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": id, "active": false, "rationale": "obsolete"}),
    );
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "MINE", "strategy": "Ship it to the k8s cluster using helm charts",
               "include_related": true}),
    );
    let related = r["related_lessons"].as_array().unwrap();
    assert!(
        related.iter().all(|l| l["lesson"]["id"] != id.as_str()),
        "{r}"
    );
    s.finish();
}

/// Runs the binary with `args` and the environment `env` on an empty stdin.
fn run(args: &[&str], env: &[(&str, &Path)]) -> (i32, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("META_UTL_PROJECT", common::TEST_PROJECT)
        .env_remove("META_UTL_DB")
        .env_remove(MODEL_ENV)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.stdout.is_empty(), "nothing on stdout without requests");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_explicit_model_folder_that_is_not_a_model_stops_the_server_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let missing = dir.path().join("no-such-model");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for folder in [&missing, &empty] {
        let (code, stderr) = run(
            &[
                "--db",
                db.to_str().unwrap(),
                "--embedding-model",
                folder.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(folder.to_str().unwrap()), "{stderr}");
        assert!(stderr.contains("model install"), "names the fix: {stderr}");
        assert!(
            !db.exists(),
            "no database is created before the model is checked"
        );
    }
}

#[test]
fn without_a_model_the_lexical_matcher_decides_after_one_warning_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let db = dir.path().join("state.db");
    let (code, stderr) = run(&["--db", db.to_str().unwrap()], &[("XDG_DATA_HOME", &data)]);
    assert_eq!(code, 0, "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("lexical matcher"), "{stderr}");
    assert!(warnings[0].contains("model install"), "{stderr}");

    // `off` switches the model off without a warning; answers name the lexical matcher and
    // the probability threshold of its classifier (issue 30; it was the lexical score's 0.48).
    let mut s = Server::start_at(&db, &["--embedding-model", "off"]);
    s.initialize("2025-06-18");
    log(&mut s, "T", "Parse the HTML with regular expressions");
    let r = check(&mut s, "T", "I tried parsing the HTML with regexes");
    assert_eq!(
        r["matcher"],
        json!({"kind": "lexical", "threshold": Variant::Lexical.classifier().threshold,
               "temperature": 1.0}),
        "{r}"
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    let (_, _, stderr) = s.finish();
    assert!(!stderr.contains("WARN"), "{stderr}");
}

#[test]
fn a_new_task_id_finds_a_rephrased_lesson_of_another_task_by_meaning() {
    let Some(model) = real_model("a_new_task_id_finds_a_rephrased_lesson") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = start_with_model(&dir.path().join("state.db"), &model);
    let lesson = log(
        &mut s,
        "notifier-goroutine-leak",
        "Parse the HTML with regular expressions",
    );
    log(
        &mut s,
        "other-task",
        "Increase the HTTP client timeout to 30 seconds",
    );
    // A task id the project has not used: the matching lesson of another task is shown, by
    // the embedding matcher, advisory.
    let r = check(
        &mut s,
        "memory grows in notifier service",
        "I tried using a regex to parse the html page",
    );
    assert_eq!(r["blacklisted"], false, "{r}");
    assert_eq!(r["matcher"]["kind"], "embedding", "{r}");
    assert_eq!(
        r["other_task_lesson"]["lesson"]["id"],
        lesson.as_str(),
        "{r}"
    );
    assert_eq!(
        r["other_task_lesson"]["lesson"]["task_id"],
        "notifier-goroutine-leak"
    );
    // A strategy no lesson holds: nothing is claimed.
    let r = check(
        &mut s,
        "memory grows in notifier service",
        "Cancel each request's goroutine through its context",
    );
    assert!(r.get("other_task_lesson").is_none(), "{r}");
}

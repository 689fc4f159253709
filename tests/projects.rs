//! One memory, many repositories (issue 28), over the wire on both backends: servers started
//! in different git repositories on one database see only their own project's lessons,
//! directives and beliefs; a clone of the same remote is the same project; `--project` names
//! one; a task id the project has not used shows a matching lesson of another task with its
//! root cause, and a task id of the same words blocks as the task itself. The console's
//! `projects` lists the projects and moves rows between them.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Backend, Server, both_backends};
use serde_json::{Value, json};

/// A folder holding a git repository (`.git/config` as git writes it) with `origin` at `url`,
/// or none when `url` is `None`.
fn repository(root: &Path, name: &str, url: Option<&str>) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mut config = String::from("[core]\n\trepositoryformatversion = 0\n\tbare = false\n");
    if let Some(url) = url {
        config.push_str(&format!(
            "[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        ));
    }
    std::fs::write(dir.join(".git/config"), config).unwrap();
    dir
}

/// A server on `db` started in `cwd`, the project found from there (no `META_UTL_PROJECT`).
fn server_in(db: &Path, cwd: &Path, extra: &[&str]) -> Server {
    Server::start_with(db, extra, |c: &mut Command| {
        c.current_dir(cwd).env_remove("META_UTL_PROJECT");
    })
}

fn log(s: &mut Server, task: &str, strategy: &str, rca: &str) -> String {
    let r = s.tool_ok(
        "log_lesson_learned",
        json!({"task_id": task, "strategy_description": strategy, "rca_summary": rca,
               "failure_type": "LOGIC_ERROR", "source_agent": "claude"}),
    );
    r["lesson_id"].as_str().expect("lesson id").to_owned()
}

fn check(s: &mut Server, task: &str, strategy: &str) -> Value {
    s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": task, "strategy": strategy, "include_related": true}),
    )
}

const TASK: &str = "flaky checkout test";
const STRATEGY: &str = "Increase the checkout integration test timeout to 60 seconds";
const RCA: &str = "The timeout hid a deadlock in the payment mock";

fn repositories_do_not_leak_and_clones_share(backend: Backend) {
    let db = backend.fresh();
    let root = tempfile::tempdir().unwrap();
    let shop = repository(root.path(), "shop", Some("git@github.com:acme/shop.git"));
    let api = repository(root.path(), "api", Some("https://github.com/acme/api.git"));
    let clone = repository(
        root.path(),
        "elsewhere/shop-clone",
        Some("https://user@GitHub.com/acme/shop"),
    );

    // Repository A logs a lesson, a directive and a belief.
    let mut a = server_in(&db.target, &shop.join("src"), &[]);
    let lesson = log(&mut a, TASK, STRATEGY, RCA);
    a.tool_ok(
        "record_directive",
        json!({"task_id": TASK, "intervention_type": "FEEDBACK",
               "description": "Look at the payment mock first", "actor": "alice"}),
    );
    a.tool_ok(
        "epistemic_action",
        json!({"action_type": "assert", "target": "The payment mock deadlocks",
               "confidence": 0.8, "rationale": "seen twice"}),
    );
    let instructions = a.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(
        instructions
            .to_string()
            .contains("project github.com/acme/shop"),
        "{instructions}"
    );

    // Repository B, same database, same task and strategy: nothing of A's is seen.
    let mut b = server_in(&db.target, &api, &[]);
    let r = check(&mut b, TASK, STRATEGY);
    assert_eq!(r["blacklisted"], false, "{r}");
    assert!(r.get("other_task_lesson").is_none(), "{r}");
    assert!(
        r["related_lessons"].as_array().is_none_or(Vec::is_empty),
        "{r}"
    );
    let h = b.tool_ok("list_directive_history", json!({}));
    assert_eq!(h["total_count"], 0, "{h}");
    let q = b.tool_ok(
        "epistemic_action",
        json!({"action_type": "query", "target": "The payment mock deadlocks", "rationale": "x"}),
    );
    assert!(!q.to_string().contains("seen twice"), "{q}");
    let lift = b.call(
        "set_lesson_active",
        json!({"lesson_id": lesson, "active": false, "rationale": "not ours"}),
    );
    assert!(
        lift.to_string().contains("no lesson") || lift.to_string().contains("isError\":true"),
        "another project's lesson cannot be lifted: {lift}"
    );
    // B's own lesson of the same task and strategy is its own, and A's stays A's.
    log(&mut b, TASK, STRATEGY, "In the API the timeout was fine");
    let r = check(&mut a, TASK, STRATEGY);
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["lesson"]["rca_summary"], RCA, "{r}");
    drop(b);

    // A clone of the same remote elsewhere is the same project.
    let mut c = server_in(&db.target, &clone, &[]);
    let r = check(&mut c, TASK, STRATEGY);
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["lesson"]["id"], lesson.as_str(), "{r}");
    drop(c);

    // --project names the project whatever the folder.
    let mut named = server_in(
        &db.target,
        root.path(),
        &["--project", "github.com/acme/shop"],
    );
    assert_eq!(check(&mut named, TASK, STRATEGY)["blacklisted"], true);
    drop(named);

    // The console lists both projects with their counts.
    let listed = common::run_with(&db.target, &["projects", "--json"], b"", |c| {
        c.current_dir(&shop).env_remove("META_UTL_PROJECT");
    });
    assert!(listed.status.success(), "{listed:?}");
    let projects: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let names: Vec<&str> = projects
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["github.com/acme/api", "github.com/acme/shop"],
        "{projects}"
    );
    let shop_row = &projects[1];
    assert_eq!(shop_row["current"], true);
    assert_eq!(
        (
            &shop_row["lessons"],
            &shop_row["directives"],
            &shop_row["beliefs"]
        ),
        (&json!(1), &json!(1), &json!(1)),
        "{projects}"
    );
}

fn a_new_task_id_finds_the_projects_lesson(backend: Backend) {
    let db = backend.fresh();
    let root = tempfile::tempdir().unwrap();
    let shop = repository(root.path(), "shop", None);
    let mut s = server_in(&db.target, &shop, &[]);
    log(
        &mut s,
        "notifier-goroutine-leak",
        "Raise the notifier's channel buffer to 1024 so senders never block",
        "The leak is a goroutine per request that nobody cancels; a bigger buffer only delays it",
    );
    // The same task under another wording: shown, with its root cause and its task, without
    // include_related, and advisory.
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "memory grows in notifier service",
               "strategy": "Raise the notifier channel buffer to 1024 so senders never block"}),
    );
    assert_eq!(r["blacklisted"], false, "{r}");
    let other = &r["other_task_lesson"];
    assert_eq!(other["lesson"]["task_id"], "notifier-goroutine-leak", "{r}");
    assert!(
        other["lesson"]["rca_summary"]
            .as_str()
            .unwrap()
            .contains("nobody cancels"),
        "{r}"
    );
    assert_eq!(other["advisory"], true);
    // Another strategy on the new task: nothing is claimed.
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "memory grows in notifier service",
               "strategy": "Cancel each request's goroutine through its context"}),
    );
    assert!(r.get("other_task_lesson").is_none(), "{r}");
    // The same words with other separators and case: the task itself, so it blocks.
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "Notifier goroutine leak",
               "strategy": "Raise the notifier's channel buffer to 1024 so senders never block"}),
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["lesson"]["task_id"], "notifier-goroutine-leak", "{r}");
}

fn rows_from_before_projects_are_moved_by_the_operator(backend: Backend) {
    let db = backend.fresh();
    let root = tempfile::tempdir().unwrap();
    let shop = repository(root.path(), "shop", Some("git@github.com:acme/shop.git"));
    // Logged under the unassigned project, as an upgraded database holds its old rows.
    let mut old = server_in(&db.target, root.path(), &["--project", "(unassigned)"]);
    log(&mut old, TASK, STRATEGY, RCA);
    drop(old);
    let mut s = server_in(&db.target, &shop, &[]);
    assert_eq!(check(&mut s, TASK, STRATEGY)["blacklisted"], false);
    let console = |args: &[&str]| {
        common::run_with(&db.target, args, b"", |c| {
            c.current_dir(&shop).env_remove("META_UTL_PROJECT");
        })
    };
    let status = console(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("1 rows were stored before projects existed")
            && text.contains("projects move --from \"(unassigned)\""),
        "{text}"
    );
    let moved = console(&[
        "projects",
        "move",
        "--from",
        "(unassigned)",
        "--to",
        "github.com/acme/shop",
    ]);
    assert!(moved.status.success(), "{moved:?}");
    assert!(
        String::from_utf8_lossy(&moved.stdout).contains("Moved 1 lessons"),
        "{moved:?}"
    );
    let r = check(&mut s, TASK, STRATEGY);
    assert_eq!(r["blacklisted"], true, "{r}");
    let h = s.tool_ok("list_directive_history", json!({}));
    assert!(
        h.to_string().contains("moved from project (unassigned)"),
        "{h}"
    );
    // A typo in --from names the projects there are and moves nothing.
    let typo = console(&[
        "projects",
        "move",
        "--from",
        "github.com/acme/shopp",
        "--to",
        "x",
    ]);
    assert_eq!(typo.status.code(), Some(2));
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(err.contains("github.com/acme/shop"), "{err}");
}

both_backends!(
    repositories_do_not_leak_and_clones_share,
    a_new_task_id_finds_the_projects_lesson,
    rows_from_before_projects_are_moved_by_the_operator,
);

//! The lessons tools over the wire on the real binary: structured errors, duplicate detection,
//! blacklist matching (exact, containment both ways, similarity, Unicode), deactivation, related
//! lessons, the directive history, and several processes sharing one database.

mod common;

use std::sync::{Arc, Barrier};

use common::{Backend, Server};
use serde_json::{Value, json};

common::both_backends!(
    log_then_duplicate_survives_case_whitespace_and_punctuation,
    each_validation_error_is_structured,
    blacklist_matching_table,
    unicode_lessons_block_and_match,
    deactivated_lessons_no_longer_block_and_record_an_override,
    include_related_returns_up_to_five_advisory_lessons_from_other_tasks,
    directive_history_orders_newest_first_and_paginates,
    a_lesson_logged_by_one_process_blocks_in_another_at_once,
    eight_processes_logging_the_same_lesson_yield_exactly_one,
    outputs_match_their_output_schemas,
    set_lesson_active_by_task_and_strategy_and_its_argument_rules,
    every_published_example_succeeds_in_listing_order_on_a_fresh_database,
    operator_resets_appear_in_the_directive_history,
    task_ids_match_ignoring_case_width_and_surrounding_spaces,
    the_task_id_descriptions_say_how_task_ids_are_matched,
    a_reversal_or_a_changed_target_is_a_near_miss_not_a_block,
);

const TOL: f64 = 1e-12;

/// A tools/call that must answer a structured failure: a `result` (never a JSON-RPC error)
/// with `isError: true` and `{success: false, error, detail}`. Returns `structuredContent`.
/// The text block holds the same JSON, except for invalid arguments (SEP-1303), whose text is
/// the message itself (`detail`), which is what a client shows the model.
fn failed(s: &mut Server, name: &str, args: Value) -> Value {
    let r = s.call(name, args.clone());
    let result = r
        .get("result")
        .unwrap_or_else(|| panic!("{name} {args}: expected a result, got {r}"));
    assert_eq!(result["isError"], json!(true), "{name} {args}: {r}");
    let sc = result["structuredContent"].clone();
    let text = result["content"][0]["text"].as_str().expect("text");
    if sc["error"] == "VALIDATION_ERROR" {
        assert_eq!(text, sc["detail"], "the text is the message");
    } else {
        let text: Value = serde_json::from_str(text).expect("json");
        assert_eq!(text, sc, "text and structuredContent differ");
    }
    assert_eq!(sc["success"], false, "{sc}");
    assert!(sc["error"].is_string() && sc["detail"].is_string(), "{sc}");
    sc
}

fn lesson_args(task: &str, strategy: &str) -> Value {
    json!({
        "task_id": task,
        "strategy_description": strategy,
        "rca_summary": "root cause: the approach cannot work here",
        "failure_type": "LOGIC_ERROR",
        "source_agent": "agent-1"
    })
}

fn log(s: &mut Server, task: &str, strategy: &str) -> String {
    let r = s.tool_ok("log_lesson_learned", lesson_args(task, strategy));
    assert_eq!(r["success"], true);
    r["lesson_id"].as_str().expect("lesson_id").to_string()
}

fn check(s: &mut Server, task: &str, strategy: &str) -> Value {
    s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": task, "strategy": strategy}),
    )
}

fn log_then_duplicate_survives_case_whitespace_and_punctuation(backend: Backend) {
    let mut s = Server::start_on(backend);
    let id = log(&mut s, "T1", "Mock the database layer in integration tests");
    for dup in [
        "Mock the database layer in integration tests",
        "MOCK   the Database layer in\tintegration tests.",
        "  (mock the database layer in integration tests!) ",
    ] {
        let f = failed(&mut s, "log_lesson_learned", lesson_args("T1", dup));
        assert_eq!(f["error"], "LESSON_ALREADY_EXISTS", "{dup}");
        assert_eq!(f["lesson_id"], id.as_str());
    }
    // The same strategy on another task is a different lesson.
    let other = log(&mut s, "T2", "Mock the database layer in integration tests");
    assert_ne!(other, id);
}

fn each_validation_error_is_structured(backend: Backend) {
    let mut s = Server::start_on(backend);
    let base = lesson_args("T", "strategy");
    let with = |k: &str, v: Value| {
        let mut a = base.clone();
        a[k] = v;
        a
    };
    let without = |k: &str| {
        let mut a = base.clone();
        a.as_object_mut().unwrap().remove(k);
        a
    };
    let cases: Vec<(Value, &str)> = vec![
        (without("task_id"), "task_id"),
        (without("strategy_description"), "strategy_description"),
        (without("rca_summary"), "rca_summary"),
        (without("failure_type"), "failure_type"),
        (without("source_agent"), "source_agent"),
        (with("task_id", json!("")), "task_id"),
        (
            with("strategy_description", json!("   ")),
            "strategy_description",
        ),
        (with("rca_summary", json!("")), "rca_summary"),
        (
            with("failure_type", json!("SOMETHING_ELSE")),
            "failure_type",
        ),
        (with("failure_type", json!("logic_error")), "failure_type"),
        (with("source_agent", json!(7)), "source_agent"),
        (with("task_id", json!("t".repeat(257))), "task_id"),
        (with("source_agent", json!("é".repeat(257))), "source_agent"),
        (
            with("strategy_description", json!("策".repeat(4097))),
            "strategy_description",
        ),
        (
            with("rca_summary", json!("x".repeat(16_385))),
            "rca_summary",
        ),
        (with("extra", json!(true)), "extra"),
    ];
    for (args, field) in cases {
        let f = failed(&mut s, "log_lesson_learned", args.clone());
        assert_eq!(f["error"], "VALIDATION_ERROR", "{args}");
        assert!(
            f["detail"].as_str().unwrap().contains(field),
            "{field}: {}",
            f["detail"]
        );
    }
    // At the limits (characters, not bytes) everything is accepted.
    let at_limits = json!({
        "task_id": "t".repeat(256),
        "strategy_description": "策".repeat(4096),
        "rca_summary": "é".repeat(16_384),
        "failure_type": "UNKNOWN",
        "source_agent": "🤖".repeat(256)
    });
    s.tool_ok("log_lesson_learned", at_limits);

    // The other tools fail the same way.
    let f = failed(&mut s, "check_strategy_blacklist", json!({"strategy": "x"}));
    assert_eq!(f["error"], "VALIDATION_ERROR");
    assert!(f["detail"].as_str().unwrap().contains("task_id"));
    let f = failed(
        &mut s,
        "check_strategy_blacklist",
        json!({"task_id": "T", "strategy": "x".repeat(4097)}),
    );
    assert!(f["detail"].as_str().unwrap().contains("strategy"));
    let f = failed(&mut s, "list_directive_history", json!({"limit": 0}));
    assert!(f["detail"].as_str().unwrap().contains("limit"));
    let f = failed(&mut s, "list_directive_history", json!({"limit": 1001}));
    assert!(f["detail"].as_str().unwrap().contains("limit"));
    let f = failed(
        &mut s,
        "record_directive",
        json!({"intervention_type": "RESET", "description": "x"}),
    );
    assert!(f["detail"].as_str().unwrap().contains("intervention_type"));
    let f = failed(
        &mut s,
        "set_lesson_active",
        json!({"lesson_id": "nope", "active": false, "rationale": "r"}),
    );
    assert!(f["detail"].as_str().unwrap().contains("lesson_id"));
    let f = failed(
        &mut s,
        "set_lesson_active",
        json!({"lesson_id": "550e8400-e29b-41d4-a716-446655440000", "active": false, "rationale": "r"}),
    );
    assert_eq!(f["error"], "LESSON_NOT_FOUND");
}

fn blacklist_matching_table(backend: Backend) {
    let mut s = Server::start_on(backend);
    let task = "T-match";
    log(&mut s, task, "Use the global cache");
    log(
        &mut s,
        task,
        "Rewrite the parser with a hand written recursive descent approach",
    );
    log(&mut s, task, "use");
    // (proposal, expected match type or None, expected score)
    let cases: &[(&str, Option<&str>, f64)] = &[
        ("use the global cache", Some("exact"), 1.0),
        ("  USE THE GLOBAL CACHE. ", Some("exact"), 1.0),
        // The proposal contains a failed strategy: 4 of 7 words.
        (
            "First use the global cache then retry",
            Some("contains"),
            4.0 / 7.0,
        ),
        // A failed strategy contains the proposal: 2 of 4 words.
        ("global cache", Some("contained_in"), 2.0 / 4.0),
        // The same approach in other words (the lexical matcher's score; see below).
        (
            "Rewrite the parser using a handwritten recursive descent approach",
            Some("similar"),
            f64::NAN,
        ),
        // "use" is not a word of "reuse"; "reuse the buffer" has no lesson.
        ("reuse the buffer", None, 0.0),
        ("Add an index on task_id", None, 0.0),
    ];
    for &(proposal, want, score) in cases {
        let r = check(&mut s, task, proposal);
        match want {
            None => assert_eq!((r)["blacklisted"], false, "{proposal}"),
            Some(t) => {
                assert_eq!(r["blacklisted"], true, "{proposal}: {r}");
                assert_eq!(r["match_type"], t, "{proposal}: {r}");
                let got = r["score"].as_f64().unwrap();
                if score.is_nan() {
                    // A similar match scores at least the matcher's threshold.
                    assert!(got >= r["matcher"]["threshold"].as_f64().unwrap(), "{r}");
                } else {
                    assert!((got - score).abs() < TOL, "{proposal}: {r}");
                }
                assert_eq!(r["lesson"]["task_id"], task);
                assert_eq!(r["lesson"]["is_active"], true);
            }
        }
    }
    // Lessons are scoped to their task.
    assert_eq!(
        (check(&mut s, "another task", "use the global cache"))["blacklisted"],
        false
    );
    // Empty or whitespace-only strategies are never blacklisted (even against lesson "use").
    for empty in ["", "   ", "\t\n"] {
        assert_eq!((check(&mut s, task, empty))["blacklisted"], false);
    }
}

fn unicode_lessons_block_and_match(backend: Backend) {
    let mut s = Server::start_on(backend);
    log(&mut s, "任务-7", "重写解析器");
    log(&mut s, "任务-7", "Straße neu bauen 🚧");
    let r = check(&mut s, "任务-7", "先重写解析器再测试");
    assert_eq!(r["match_type"], "contains");
    assert!((r["score"].as_f64().unwrap() - 5.0 / 9.0).abs() < TOL);
    let r = check(&mut s, "任务-7", "STRASSE NEU BAUEN 🚧");
    assert_eq!(r["match_type"], "exact");
    assert_eq!(r["lesson"]["strategy_description"], "Straße neu bauen 🚧");
    let f = failed(
        &mut s,
        "log_lesson_learned",
        lesson_args("任务-7", "strasse  NEU bauen 🚧!"),
    );
    assert_eq!(f["error"], "LESSON_ALREADY_EXISTS");
    assert_eq!((check(&mut s, "任务-7", "写测试"))["blacklisted"], false);
}

fn deactivated_lessons_no_longer_block_and_record_an_override(backend: Backend) {
    let mut s = Server::start_on(backend);
    let id = log(&mut s, "T", "Vendor the dependency");
    assert_eq!(
        check(&mut s, "T", "vendor the dependency")["blacklisted"],
        true
    );
    let r = s.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": id, "active": false, "rationale": "upstream fixed the bug"}),
    );
    assert_eq!(r["success"], true);
    assert_eq!(r["previous_is_active"], true);
    assert_eq!(r["lesson"]["is_active"], false);
    assert_eq!(
        (check(&mut s, "T", "vendor the dependency"))["blacklisted"],
        false
    );
    // Logging it again finds the inactive lesson.
    let f = failed(
        &mut s,
        "log_lesson_learned",
        lesson_args("T", "vendor the dependency"),
    );
    assert_eq!(f["error"], "LESSON_ALREADY_EXISTS");
    assert_eq!(f["lesson_id"], id.as_str());
    assert_eq!(f["is_active"], false);
    // Re-activated, it blocks again (after a restart too).
    s.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": id, "active": true, "rationale": "it broke again"}),
    );
    let mut s = s.restart();
    assert_eq!(
        check(&mut s, "T", "Vendor the dependency")["blacklisted"],
        true
    );
    let h = s.tool_ok("list_directive_history", json!({"task_id": "T"}));
    assert_eq!(h["total_count"], 2);
    let entries = h["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .all(|e| e["intervention_type"] == "OVERRIDE" && e["actor"] == "USER")
    );
    assert!(
        entries[0]["description"]
            .as_str()
            .unwrap()
            .contains("re-activated")
    );
    assert!(
        entries[1]["description"]
            .as_str()
            .unwrap()
            .contains("upstream fixed the bug")
    );
}

fn include_related_returns_up_to_five_advisory_lessons_from_other_tasks(backend: Backend) {
    let mut s = Server::start_on(backend);
    for i in 0..7 {
        log(
            &mut s,
            &format!("other-{i}"),
            &format!("mock the database variant {i}"),
        );
    }
    log(&mut s, "other-x", "tune the garbage collector");
    log(&mut s, "mine", "mock the database");
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "mine", "strategy": "mock the database", "include_related": true}),
    );
    assert_eq!(r["blacklisted"], true);
    let related = r["related_lessons"].as_array().unwrap();
    assert_eq!(related.len(), 5);
    for rel in related {
        assert_eq!(rel["advisory"], true);
        assert_ne!(rel["lesson"]["task_id"], "mine");
        assert!(
            rel["lesson"]["strategy_description"]
                .as_str()
                .unwrap()
                .contains("mock the database")
        );
    }
    let ranks: Vec<f64> = related
        .iter()
        .map(|r| r["bm25"].as_f64().unwrap())
        .collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
    // Chinese: lessons found by shared ideographs.
    log(&mut s, "zh-1", "重写解析器");
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "zh-2", "strategy": "解析器太慢", "include_related": true}),
    );
    assert_eq!(r["blacklisted"], false);
    assert_eq!(r["related_lessons"][0]["lesson"]["task_id"], "zh-1");
    // Without the flag, no related lessons.
    let r = check(&mut s, "mine", "mock the database");
    assert!(r.get("related_lessons").is_none());
}

fn directive_history_orders_newest_first_and_paginates(backend: Backend) {
    let mut s = Server::start_on(backend);
    let mut ids = Vec::new();
    for i in 0..7 {
        let task = if i % 2 == 0 { "even" } else { "odd" };
        let r = s.tool_ok(
            "record_directive",
            json!({"task_id": task, "intervention_type": "FEEDBACK", "description": format!("note {i} ✓")}),
        );
        assert_eq!(r["entry"]["actor"], "USER");
        ids.push(r["directive_id"].as_str().unwrap().to_string());
    }
    s.tool_ok(
        "record_directive",
        json!({"intervention_type": "ESCALATION", "description": "no task", "actor": "ops"}),
    );
    let all = s.tool_ok("list_directive_history", json!({}));
    assert_eq!(all["total_count"], 8);
    assert_eq!(all["has_more"], false);
    assert_eq!(all["entries"][0]["description"], "no task");
    assert_eq!(all["entries"][0]["task_id"], Value::Null);
    assert_eq!(all["entries"][0]["actor"], "ops");
    let times: Vec<&str> = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["created_at"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    // Pages of 3 over the 4 "even" entries, newest first: notes 6, 4, 2 | 0.
    let p1 = s.tool_ok(
        "list_directive_history",
        json!({"task_id": "even", "limit": 3}),
    );
    assert_eq!(p1["total_count"], 4);
    assert_eq!(p1["has_more"], true);
    let got: Vec<&str> = p1["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [&ids[6], &ids[4], &ids[2]]);
    let p2 = s.tool_ok(
        "list_directive_history",
        json!({"task_id": "even", "limit": 3, "offset": 3}),
    );
    assert_eq!(p2["has_more"], false);
    assert_eq!(p2["entries"][0]["id"], ids[0].as_str());
    assert_eq!(p2["entries"][0]["description"], "note 0 ✓");
    let past = s.tool_ok(
        "list_directive_history",
        json!({"task_id": "even", "offset": 10}),
    );
    assert_eq!(past["entries"], json!([]));
    assert_eq!(past["total_count"], 4);
}

fn a_lesson_logged_by_one_process_blocks_in_another_at_once(backend: Backend) {
    let mut a = Server::start_on(backend);
    // Let the first process create and migrate the file before the second opens it.
    a.ready();
    let mut b = Server::start_at(&a.db.clone(), &[]);
    assert_eq!(
        (check(&mut b, "shared", "pin the compiler version"))["blacklisted"],
        false
    );
    let id = log(&mut a, "shared", "Pin the compiler version");
    let r = check(&mut b, "shared", "pin the compiler version");
    assert_eq!(r["blacklisted"], true);
    assert_eq!(r["lesson"]["id"], id.as_str());
    // And the other way round: b deactivates, a sees it.
    b.tool_ok(
        "set_lesson_active",
        json!({"lesson_id": id, "active": false, "rationale": "obsolete"}),
    );
    assert_eq!(
        (check(&mut a, "shared", "pin the compiler version"))["blacklisted"],
        false
    );
}

fn eight_processes_logging_the_same_lesson_yield_exactly_one(backend: Backend) {
    let mut first = Server::start_on(backend);
    first.ready();
    let db = first.db.clone();
    const N: usize = 8;
    let servers: Vec<Server> = (0..N)
        .map(|_| {
            let mut s = Server::start_at(&db, &[]);
            // Make sure each process is up (migrations done) before the race.
            s.ready();
            s
        })
        .collect();
    let barrier = Arc::new(Barrier::new(N));
    let handles: Vec<_> = servers
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                // Each process spells the strategy differently; all normalise alike.
                let strategy = if i % 2 == 0 {
                    "Retry the flaky network call".to_string()
                } else {
                    format!("  RETRY the flaky   network call{}", ".".repeat(i))
                };
                barrier.wait();
                let r = s.call("log_lesson_learned", lesson_args("race", &strategy));
                r["result"].clone()
            })
        })
        .collect();
    let results: Vec<Value> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ok: Vec<&Value> = results.iter().filter(|r| r["isError"] == false).collect();
    let dup: Vec<&Value> = results
        .iter()
        .filter(|r| r["structuredContent"]["error"] == "LESSON_ALREADY_EXISTS")
        .collect();
    assert_eq!(ok.len(), 1, "{results:?}");
    assert_eq!(dup.len(), N - 1, "{results:?}");
    let id = &ok[0]["structuredContent"]["lesson_id"];
    for d in dup {
        assert_eq!(d["isError"], true);
        assert_eq!(&d["structuredContent"]["lesson_id"], id);
    }
    // `first` owns the temp dir: it must outlive this last check.
    let r = check(&mut first, "race", "retry the flaky network call");
    assert_eq!(&r["lesson"]["id"], id);
    let h = first.tool_ok("list_directive_history", json!({}));
    assert_eq!(h["total_count"], 0, "logging lessons records no directive");
}

fn outputs_match_their_output_schemas(backend: Backend) {
    let mut s = Server::start_on(backend);
    let tools = s.request("tools/list", Value::Null)["result"]["tools"].clone();
    let schema = |name: &str| {
        let t = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed"));
        jsonschema::options()
            .should_validate_formats(true)
            .build(&t["outputSchema"])
            .expect("compiles")
    };
    let id = log(&mut s, "T", "use the cache");
    let merged = s.tool_ok(
        "log_lesson_learned",
        lesson_args("T", "first use the cache then retry"),
    );
    assert_eq!(merged["merged_into_existing"], true, "{merged}");
    let outs: Vec<(&str, Value)> = vec![
        (
            "log_lesson_learned",
            s.tool_ok("log_lesson_learned", lesson_args("T", "x y")),
        ),
        (
            "log_lesson_learned",
            failed(
                &mut s,
                "log_lesson_learned",
                lesson_args("T", "use the cache"),
            ),
        ),
        (
            "log_lesson_learned",
            failed(&mut s, "log_lesson_learned", json!({})),
        ),
        // A rewording of lesson "use the cache": merged into it.
        ("log_lesson_learned", merged),
        (
            "check_strategy_blacklist",
            s.tool_ok(
                "check_strategy_blacklist",
                json!({"task_id": "T", "strategy": "use the cache", "include_related": true}),
            ),
        ),
        (
            "check_strategy_blacklist",
            check(&mut s, "T", "nothing like it"),
        ),
        (
            "list_directive_history",
            s.tool_ok("list_directive_history", json!({"limit": 5})),
        ),
        (
            "record_directive",
            s.tool_ok(
                "record_directive",
                json!({"intervention_type": "MANUAL_FIX", "description": "d"}),
            ),
        ),
        (
            "set_lesson_active",
            s.tool_ok(
                "set_lesson_active",
                json!({"lesson_id": id, "active": false, "rationale": "r"}),
            ),
        ),
        (
            "set_lesson_active",
            failed(
                &mut s,
                "set_lesson_active",
                json!({"lesson_id": "550e8400-e29b-41d4-a716-446655440000", "active": true, "rationale": "r"}),
            ),
        ),
    ];
    for (name, out) in outs {
        if let Err(e) = schema(name).validate(&out) {
            panic!("{name}: {out} violates its output schema: {e}");
        }
    }
}

fn set_lesson_active_by_task_and_strategy_and_its_argument_rules(backend: Backend) {
    let mut s = Server::start_on(backend);
    let id = log(&mut s, "T", "Squash the migrations");
    let r = s.tool_ok(
        "set_lesson_active",
        json!({"task_id": "T", "strategy": "  squash THE migrations. ", "active": false, "rationale": "done by hand"}),
    );
    assert_eq!(r["lesson"]["id"], id.as_str());
    assert_eq!(r["changed"], true);
    assert_eq!(
        (check(&mut s, "T", "squash the migrations"))["blacklisted"],
        false
    );
    let f = failed(
        &mut s,
        "set_lesson_active",
        json!({"task_id": "T", "strategy": "never logged", "active": false, "rationale": "r"}),
    );
    assert_eq!(f["error"], "LESSON_NOT_FOUND");
    for bad in [
        json!({"active": false, "rationale": "r"}),
        json!({"task_id": "T", "active": false, "rationale": "r"}),
        json!({"lesson_id": id, "task_id": "T", "strategy": "x", "active": false, "rationale": "r"}),
        json!({"lesson_id": id, "rationale": "r"}),
        json!({"lesson_id": id, "active": "no", "rationale": "r"}),
        json!({"lesson_id": id, "active": true, "rationale": ""}),
    ] {
        let f = failed(&mut s, "set_lesson_active", bad.clone());
        assert_eq!(f["error"], "VALIDATION_ERROR", "{bad}");
    }
}

fn every_published_example_succeeds_in_listing_order_on_a_fresh_database(backend: Backend) {
    // What the Python SDK client in .ci/run does: call each tool's published example
    // (`_meta["meta-utl-mcp/example"]`).
    let mut s = Server::start_on(backend);
    let tools = s.request("tools/list", Value::Null)["result"]["tools"].clone();
    let ours = [
        "epistemic_action",
        "log_lesson_learned",
        "check_strategy_blacklist",
        "list_directive_history",
        "record_directive",
        "set_lesson_active",
    ];
    let mut seen = 0;
    for t in tools.as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        if !ours.contains(&name) {
            continue;
        }
        seen += 1;
        s.tool_ok(name, t["_meta"]["meta-utl-mcp/example"].clone());
    }
    assert_eq!(seen, ours.len());
}

fn operator_resets_appear_in_the_directive_history(backend: Backend) {
    let mut s = Server::start_on(backend);
    s.tool_ok(
        "record_directive",
        json!({"task_id": "T", "intervention_type": "MANUAL_FIX", "description": "fixed by hand"}),
    );
    let reset = s.tool_ok(
        "reset_meta_learning",
        json!({"scope": "all", "rationale": "acknowledged the escalation"}),
    );
    let h = s.tool_ok("list_directive_history", json!({}));
    assert_eq!(h["total_count"], 2);
    let newest = &h["entries"][0];
    assert_eq!(newest["id"], reset["directive_id"]);
    assert_eq!(newest["intervention_type"], "OVERRIDE");
    assert_eq!(newest["task_id"], Value::Null);
    assert_eq!(h["entries"][1]["intervention_type"], "MANUAL_FIX");
    // Filtering by task leaves the task-less reset out.
    let t = s.tool_ok("list_directive_history", json!({"task_id": "T"}));
    assert_eq!(t["total_count"], 1);
}

fn task_ids_match_ignoring_case_width_and_surrounding_spaces(backend: Backend) {
    let mut s = Server::start_on(backend);
    let id = log(
        &mut s,
        "TASK-42",
        "Mock the database layer in integration tests",
    );
    // The blacklist check, under every spelling of the task.
    for task in [
        "TASK-42",
        "task-42",
        " task-42 ",
        "ＴＡＳＫ－４２",
        "\u{3000}Task-42\t",
    ] {
        let r = check(&mut s, task, "mock the database layer in integration tests");
        assert_eq!(r["blacklisted"], true, "{task:?}: {r}");
        assert_eq!(r["lesson"]["id"], id.as_str());
        // Stored and shown as given.
        assert_eq!(r["lesson"]["task_id"], "TASK-42");
    }
    assert_eq!(
        (check(
            &mut s,
            "TASK-421",
            "mock the database layer in integration tests"
        ))["blacklisted"],
        false
    );
    // Duplicate detection.
    for task in [" task-42 ", "ＴＡＳＫ－４２"] {
        let f = failed(
            &mut s,
            "log_lesson_learned",
            lesson_args(task, "Mock the database layer in integration tests"),
        );
        assert_eq!(f["error"], "LESSON_ALREADY_EXISTS", "{task:?}");
        assert_eq!(f["lesson_id"], id.as_str());
    }
    // Related lessons leave out the task under any spelling, and keep other tasks.
    log(&mut s, "task-7", "Shard the database by tenant");
    let r = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "ＴＡＳＫ－４２", "strategy": "database tenant", "include_related": true}),
    );
    let related: Vec<&Value> = r["related_lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| &x["lesson"]["task_id"])
        .collect();
    assert_eq!(related, [&json!("task-7")], "{r}");
    // set_lesson_active by task and strategy, and the history filtered by task.
    let r = s.tool_ok(
        "set_lesson_active",
        json!({"task_id": " task-42 ", "strategy": "mock the database layer in integration tests",
               "active": false, "rationale": "the schema is stable now"}),
    );
    assert_eq!(r["lesson"]["id"], id.as_str());
    s.tool_ok(
        "record_directive",
        json!({"task_id": "task-42", "intervention_type": "FEEDBACK", "description": "use fixtures"}),
    );
    let h = s.tool_ok(
        "list_directive_history",
        json!({"task_id": "ＴＡＳＫ－４２"}),
    );
    assert_eq!(h["total_count"], 2, "{h}");
    let tasks: Vec<&Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["task_id"])
        .collect();
    assert_eq!(tasks, [&json!("task-42"), &json!("TASK-42")]);
    assert_eq!(
        s.tool_ok("list_directive_history", json!({"task_id": "TASK-7"}))["total_count"],
        0
    );
}

/// Said once, where task ids are made (every byte of a description is sent to the model with
/// every request); the blacklist check points there.
fn the_task_id_descriptions_say_how_task_ids_are_matched(backend: Backend) {
    let mut s = Server::start_on(backend);
    let tools = s.request("tools/list", Value::Null)["result"]["tools"].clone();
    let task_id = |name: &str| {
        let t = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        let d = t["inputSchema"]["properties"]["task_id"]["description"]
            .as_str()
            .unwrap();
        d.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let d = task_id("log_lesson_learned");
    assert!(
        d.contains("ignores case, width and surrounding spaces"),
        "{d}"
    );
    let d = task_id("check_strategy_blacklist");
    assert!(d.contains("as in log_lesson_learned"), "{d}");
}

#[test]
fn a_database_written_before_task_ids_were_folded_migrates() {
    // Written by the schema-9 binary; see tests/fixtures/README.md.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/lessons-v9.sqlite"
        ),
        &db,
    )
    .unwrap();
    // Its rows predate projects: the operator gives them the server's project first.
    let moved = common::run_with(
        &db,
        &[
            "projects",
            "move",
            "--from",
            "(unassigned)",
            "--to",
            common::TEST_PROJECT,
        ],
        b"",
        |_| {},
    );
    assert!(moved.status.success(), "{moved:?}");
    let mut s = Server::start_at(&db, &[]);
    // TASK-42 and task-42 had the same strategy: the older lesson is kept.
    let r = check(
        &mut s,
        "task-42",
        "mock the database layer in integration tests",
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["lesson"]["task_id"], "TASK-42");
    assert_eq!(
        r["lesson"]["rca_summary"],
        "Mocks hid a migration bug that only the real schema exposed."
    );
    let kept = r["lesson"]["id"].as_str().unwrap().to_string();
    // The full-width task id is the same task.
    let r = check(&mut s, "Task-42", "Pin the compiler version");
    assert_eq!(r["lesson"]["task_id"], "ＴＡＳＫ－４２", "{r}");
    // T-7's lesson was deactivated, its duplicate under " t-7 " was not: the kept lesson
    // blocks, since the strategy was blocked under one spelling.
    let r = check(&mut s, "T-7", "retry the flaky network call");
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["lesson"]["task_id"], "T-7");
    // The unique index: no new duplicate under another spelling.
    let f = failed(
        &mut s,
        "log_lesson_learned",
        lesson_args("TASK-42 ", "Mock the database layer in integration tests"),
    );
    assert_eq!(f["lesson_id"], kept.as_str());
    // Each merge is in the directive history, with the merged lesson's summary; the
    // directives of every spelling of the task are found together.
    let h = s.tool_ok("list_directive_history", json!({"task_id": "TASK-42"}));
    let entries = h["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["intervention_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["OVERRIDE", "MANUAL_FIX", "FEEDBACK"], "{h}");
    let note = entries[0]["description"].as_str().unwrap();
    assert!(
        note.contains(&format!("merged into lesson {kept}"))
            && note.contains("Logged again under a lower-case task id."),
        "{note}"
    );
    assert_eq!(entries[0]["actor"], "meta-utl-mcp");
    let h = s.tool_ok("list_directive_history", json!({}));
    assert_eq!(
        h["total_count"], 7,
        "4 entries written before, 2 merges and the move into the project: {h}"
    );
    // Other tasks are untouched.
    let r = check(
        &mut s,
        "other",
        "mock the database layer in integration tests",
    );
    assert_eq!(r["lesson"]["task_id"], "other");
}

fn a_reversal_or_a_changed_target_is_a_near_miss_not_a_block(backend: Backend) {
    let mut s = Server::start_on(backend);
    log(
        &mut s,
        "T-near",
        "Increase the HTTP client timeout to 30 seconds",
    );
    let r = check(
        &mut s,
        "T-near",
        "Decrease the HTTP client timeout to 30 seconds",
    );
    assert_eq!(r["blacklisted"], false, "{r}");
    assert_eq!(r["matcher"]["kind"], "lexical", "{r}");
    let near = &r["near_misses"][0];
    assert_eq!(near["reason"], "reversal", "{r}");
    assert!(
        near["explanation"].as_str().unwrap().contains("increase"),
        "{r}"
    );
    assert_eq!(
        near["lesson"]["strategy_description"],
        "Increase the HTTP client timeout to 30 seconds"
    );
    // The same strategy reworded is blocked, and says which matcher decided.
    let r = check(
        &mut s,
        "t-near",
        "increase the timeout of the HTTP client to 30 seconds",
    );
    assert_eq!(r["blacklisted"], true, "{r}");
    assert_eq!(r["match_type"], "similar", "{r}");
    // Not blacklisted: the closest lesson and its score are shown.
    let r = check(&mut s, "T-near", "Switch the HTTP client to HTTP/2");
    assert_eq!(r["blacklisted"], false, "{r}");
    assert!(r["closest"]["score"].as_f64().unwrap() < 0.48, "{r}");
    assert!(r.get("near_misses").is_none(), "{r}");
}

//! The README's worked transcripts come from this test's run of the real binary, so they cannot
//! drift: it replays the lesson flow and the belief flow, renders each exchange, and compares
//! the result with the README's blocks between `<!-- transcript:NAME -->` markers. Run with
//! `UPDATE_README=1` to rewrite them after an intended change. Ids and times are masked.

mod common;

use common::Server;
use serde_json::{Value, json};

/// A UUID or an RFC 3339 time in an answer, shown masked so that the transcript is stable.
fn mask(v: &Value) -> Value {
    match v {
        Value::String(s)
            if s.len() == 36 && s.as_bytes()[8] == b'-' && s.as_bytes()[23] == b'-' =>
        {
            json!("…uuid…")
        }
        Value::String(s)
            if s.len() >= 20 && s.as_bytes().get(10) == Some(&b'T') && s.ends_with('Z') =>
        {
            json!("…time…")
        }
        Value::Array(a) => Value::Array(a.iter().map(mask).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), mask(x))).collect()),
        other => other.clone(),
    }
}

/// `v` with only the `keep` paths (`"a"`, `"a.b"`), or all of it when `keep` is empty.
fn pick(v: &Value, keep: &[&str]) -> Value {
    if keep.is_empty() {
        return v.clone();
    }
    let mut out = json!({});
    for path in keep {
        let mut src = v;
        let mut dst = &mut out;
        let parts: Vec<&str> = path.split('.').collect();
        for (i, p) in parts.iter().enumerate() {
            src = &src[*p];
            if i + 1 == parts.len() {
                dst[*p] = src.clone();
            } else {
                if dst.get(*p).is_none() {
                    dst[*p] = json!({});
                }
                dst = &mut dst[*p];
            }
        }
    }
    out
}

/// One exchange as the model sees it: the call, then the answer's `structuredContent` (only
/// the `keep` paths when given; the text for an argument error).
fn exchange(
    s: &mut Server,
    out: &mut String,
    note: &str,
    (tool, args): (&str, Value),
    keep: &[&str],
) -> Value {
    let r = s.call(tool, args.clone());
    let result = &r["result"];
    let shown = if result["isError"] == true && result.get("structuredContent").is_none() {
        result["content"][0]["text"].clone()
    } else {
        mask(&pick(&result["structuredContent"], keep))
    };
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("# {note}\n"));
    out.push_str(&format!(
        "→ {tool} {}\n",
        serde_json::to_string(&args).unwrap()
    ));
    out.push_str(&format!(
        "← {}\n",
        serde_json::to_string_pretty(&shown).unwrap()
    ));
    result["structuredContent"].clone()
}

fn lesson_flow() -> String {
    let mut s = Server::start();
    let mut out = String::new();
    let task = "PROJ-142 flaky checkout test";
    exchange(
        &mut s,
        &mut out,
        "Before trying a strategy, the agent checks it.",
        (
            "check_strategy_blacklist",
            json!({"task_id": task, "strategy": "Increase the test timeout to 60 seconds"}),
        ),
        &[],
    );
    exchange(
        &mut s,
        &mut out,
        "The attempt fails; after finding the root cause, the agent records the lesson.",
        (
            "log_lesson_learned",
            json!({
                "task_id": task,
                "strategy_description": "Increase the test timeout to 60 seconds",
                "rca_summary": "The test does not time out: it waits for a payment mock that is never started in CI. A longer timeout only makes the failure slower.",
                "failure_type": "LOGIC_ERROR",
                "source_agent": "claude-code"
            }),
        ),
        &[],
    );
    exchange(
        &mut s,
        &mut out,
        "A later session proposes the same strategy in other words, with the task id cased differently.",
        (
            "check_strategy_blacklist",
            json!({"task_id": "proj-142 flaky checkout test", "strategy": "increase the timeout of the test to 60 seconds"}),
        ),
        &[
            "blacklisted",
            "match_type",
            "score",
            "matcher.kind",
            "lesson.strategy_description",
            "lesson.rca_summary",
        ],
    );
    out
}

/// The parts of a belief answer the transcript shows (the whole answer also carries the
/// workspace summary and timestamps).
const BELIEF_FIELDS: &[&str] = &[
    "outcome",
    "message",
    "belief_state.status",
    "belief_state.confidence",
];

fn belief_flow() -> String {
    let mut s = Server::start();
    let mut out = String::new();
    let target = "The checkout test fails because the payment mock is not started in CI";
    exchange(
        &mut s,
        &mut out,
        "While debugging, the agent records a suspected cause.",
        (
            "epistemic_action",
            json!({"action_type": "hypothesize", "target": target, "confidence": 0.6,
                   "rationale": "The failure only happens in CI, where the mock server is a separate job"}),
        ),
        BELIEF_FIELDS,
    );
    exchange(
        &mut s,
        &mut out,
        "It finds evidence and verifies the belief (0.9: strong support).",
        (
            "epistemic_action",
            json!({"action_type": "verify", "target": target, "confidence": 0.9,
                   "rationale": "The CI log shows connection refused on the mock's port"}),
        ),
        BELIEF_FIELDS,
    );
    exchange(
        &mut s,
        &mut out,
        "A later session looks the belief up with its history.",
        (
            "epistemic_action",
            json!({"action_type": "query", "target": "the checkout test fails because the payment mock is not started in CI",
                   "rationale": "Checking what is known before debugging again"}),
        ),
        &[
            "outcome",
            "belief_state.status",
            "belief_state.confidence",
            "query_result.history_length",
        ],
    );
    out
}

fn render() -> Vec<(&'static str, String)> {
    vec![("lessons", lesson_flow()), ("beliefs", belief_flow())]
}

#[test]
fn the_readme_transcripts_are_what_the_binary_answers() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    let update = std::env::var_os("UPDATE_README").is_some();
    for (name, body) in render() {
        let start = format!("<!-- transcript:{name} -->\n```text\n");
        let end = format!("```\n<!-- /transcript:{name} -->");
        let a = readme
            .find(&start)
            .unwrap_or_else(|| panic!("README has no {start:?} marker"));
        let b = readme[a..].find(&end).map(|i| a + i).expect("end marker");
        let current = &readme[a + start.len()..b];
        if current != body {
            assert!(
                update,
                "the README's {name} transcript differs from the binary's answers; \
                 run `UPDATE_README=1 cargo test --test readme_transcript` and review the diff.\n\
                 binary:\n{body}"
            );
            readme.replace_range(a + start.len()..b, &body);
        }
    }
    if update {
        std::fs::write(&path, readme).unwrap();
    }
}

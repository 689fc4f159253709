//! Secrets never enter the store (issue 28): every text a call carries is redacted before any
//! tool sees it, the answer says what was replaced and where, and no byte of a secret reaches
//! the database file, its WAL, an export or a later answer. Over the wire, on the real binary.

mod common;

use common::{Backend, Server};
use serde_json::{Value, json};

common::both_backends!(a_secret_in_a_lesson_is_replaced_and_reported);

const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const GITHUB_TOKEN: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";

fn lesson() -> Value {
    json!({
        "task_id": "deploy-fails",
        "strategy_description": format!("Export GITHUB_TOKEN={GITHUB_TOKEN} in the deploy job"),
        "rca_summary": format!("S3 said 403: aws_secret_access_key = {AWS_SECRET} is revoked"),
        "failure_type": "TOOL_MISUSE",
        "source_agent": "claude"
    })
}

fn a_secret_in_a_lesson_is_replaced_and_reported(backend: Backend) {
    let mut s = Server::start_on(backend);
    s.initialize("2025-06-18");
    let r = s.request(
        "tools/call",
        json!({"name": "log_lesson_learned", "arguments": lesson()}),
    );
    let result = &r["result"];
    assert_eq!(result["isError"], false, "{r}");
    let notice = result["content"][1]["text"].as_str().unwrap_or_default();
    assert!(
        notice.contains("rca_summary (aws-secret-key)")
            && notice.contains("strategy_description (github-token)"),
        "{r}"
    );
    let listed = &result["_meta"]["meta-utl-mcp/redacted"];
    assert_eq!(
        listed,
        &json!([
            {"field": "rca_summary", "kind": "aws-secret-key"},
            {"field": "strategy_description", "kind": "github-token"}
        ])
    );
    // The same strategy, secret and all, is still recognised: it is redacted the same way.
    let check = s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "deploy-fails",
               "strategy": format!("Export GITHUB_TOKEN={GITHUB_TOKEN} in the deploy job")}),
    );
    assert_eq!(check["blacklisted"], true, "{check}");
    let shown = check.to_string();
    assert!(!shown.contains(GITHUB_TOKEN) && shown.contains("[REDACTED:github-token]"));
    // An answer without a secret in its call carries no notice.
    let r = s.request(
        "tools/call",
        json!({"name": "list_directive_history", "arguments": {}}),
    );
    assert!(r["result"]["content"].as_array().unwrap().len() == 1, "{r}");
    assert!(r["result"].get("_meta").is_none(), "{r}");
    let db = s.db.clone();
    // No stored byte: the export, and on SQLite the file and its WAL (the server still runs,
    // so the latest writes are in the WAL).
    let export = common::run(&db, &["export"], b"");
    let text = String::from_utf8_lossy(&export.stdout);
    assert!(text.contains("[REDACTED:aws-secret-key]"), "{text}");
    for secret in [AWS_SECRET, GITHUB_TOKEN] {
        assert!(!text.contains(secret), "the export holds {secret}");
    }
    if backend == Backend::Sqlite {
        let dir = db.parent().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            for secret in [AWS_SECRET, GITHUB_TOKEN] {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{} holds {secret}",
                    path.display()
                );
            }
        }
    }
    drop(s);
}

/// An export written elsewhere (or by an older version) that holds a secret is imported as the
/// tools would have stored it: the secret replaced, and the import says how many were.
#[test]
fn an_import_replaces_secrets_as_the_tools_do() {
    use sha2::{Digest, Sha256};
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let (status, _, stderr) = Server::start_at(&db, &[]).finish();
    assert!(status.success(), "{stderr}");
    let empty = common::run(&db, &["export"], b"");
    let header = String::from_utf8_lossy(&empty.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string()
        + "\n";
    let record = json!({"type": "directive", "id": "6f1c1d9e-7a43-4c55-9d0e-3b1b2a4c5d6e",
        "task_id": "T-9", "intervention_type": "MANUAL_FIX",
        "description": format!("rotated {GITHUB_TOKEN} after the leak"),
        "actor": "ops", "created_at": "2026-01-01T00:00:00.000000Z"})
    .to_string()
        + "\n";
    let sha = Sha256::digest(format!("{header}{record}").as_bytes());
    let hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    let trailer = json!({"type": "trailer", "records": 1, "counts": {"directive": 1},
                         "sha256": hex});
    let file = tmp.path().join("in.jsonl");
    std::fs::write(&file, format!("{header}{record}{trailer}\n")).unwrap();
    let out = common::run(&db, &["import", file.to_str().unwrap()], b"");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("1 secret in the records' text was replaced"),
        "{said}"
    );
    let export = common::run(&db, &["export"], b"");
    let text = String::from_utf8_lossy(&export.stdout);
    assert!(
        text.contains("rotated [REDACTED:github-token] after the leak"),
        "{text}"
    );
    assert!(!text.contains(GITHUB_TOKEN));
}

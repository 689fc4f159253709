//! Secrets out of a tool call: every string of its arguments passes [`redact`] before any tool
//! sees it (issue 28), and the answer says what was replaced ([`notice`]).

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::protocol::mcp;
use crate::service::redact::redact;

/// The `_meta` key under which an answer lists the secrets replaced in its call.
pub const REDACTED_META_KEY: &str = "meta-utl-mcp/redacted";

/// One secret replaced in a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redaction {
    /// Where: the argument's path (`root_cause`, `evidence[2]`, `observations[0].domain`).
    pub field: String,
    /// The kind of secret (the marker's name).
    pub kind: &'static str,
}

/// Redact every string in `value` (a tool call's arguments), object keys excepted. Returns the
/// redacted copy, or `None` when nothing was replaced, and what was, in document order.
pub fn redact_value(value: &Value) -> (Option<Value>, Vec<Redaction>) {
    let mut found = Vec::new();
    let out = walk(value, &mut Vec::new(), &mut found);
    (out, found)
}

/// One step of an argument's path: an object key or an array index.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The path `steps` as shown to the caller (`observations[0].domain`). Built only for a string
/// that held a secret: walking a large call (a fingerprint's thousands of numbers) formats
/// nothing.
fn field(steps: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// [`redact_value`] below `path`: the redacted copy of `v` when something in it changed.
fn walk<'a>(v: &'a Value, path: &mut Vec<Step<'a>>, found: &mut Vec<Redaction>) -> Option<Value> {
    match v {
        Value::String(s) => {
            let r = redact(s);
            if r.kinds.is_empty() {
                return None;
            }
            let at = field(path);
            found.extend(r.kinds.iter().map(|kind| Redaction {
                field: at.clone(),
                kind,
            }));
            Some(Value::String(r.text.into_owned()))
        }
        Value::Array(items) => {
            let mut changed: Option<Vec<Value>> = None;
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                let new = walk(item, path, found);
                path.pop();
                if let Some(new) = new {
                    changed.get_or_insert_with(|| items.clone())[i] = new;
                }
            }
            changed.map(Value::Array)
        }
        Value::Object(map) => {
            let mut changed: Option<Map<String, Value>> = None;
            for (k, item) in map {
                path.push(Step::Key(k));
                let new = walk(item, path, found);
                path.pop();
                if let Some(new) = new {
                    changed
                        .get_or_insert_with(|| map.clone())
                        .insert(k.clone(), new);
                }
            }
            changed.map(Value::Object)
        }
        _ => None,
    }
}

/// What an answer adds when its call's arguments held secrets: a sentence for the model and
/// the list under [`REDACTED_META_KEY`]; `None` when nothing was redacted.
pub fn notice(redactions: &[Redaction]) -> Option<mcp::Notice> {
    (!redactions.is_empty()).then(|| mcp::Notice {
        text: sentence(redactions),
        meta: json!({ REDACTED_META_KEY: redactions }),
    })
}

impl super::ToolReply {
    /// What the answer adds about the secrets redacted from its call ([`notice`]).
    pub fn notice(&self) -> Option<mcp::Notice> {
        notice(&self.redacted)
    }
}

/// The sentence that tells the caller what [`redact_value`] replaced.
fn sentence(redactions: &[Redaction]) -> String {
    let each: Vec<String> = redactions
        .iter()
        .map(|r| format!("{} ({})", r.field, r.kind))
        .collect();
    format!(
        "Secrets were replaced by [REDACTED:kind] markers before anything was stored or shown: \
         {}. Never put credentials in the memory.",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_of_a_call_is_redacted_with_its_path() {
        let args = json!({
            "task_id": "T-1",
            "root_cause": "403 for AKIAIOSFODNN7EXAMPLE",
            "evidence": ["ok", "password=hunter2hunter2"],
            "n": 3,
            "nested": {"url": "https://u:p4ssw0rd@h.example/x"}
        });
        let (out, found) = redact_value(&args);
        let out = out.expect("redacted");
        assert_eq!(out["task_id"], "T-1");
        assert_eq!(out["root_cause"], "403 for [REDACTED:aws-access-key-id]");
        assert_eq!(out["evidence"][0], "ok");
        assert_eq!(out["n"], 3);
        let fields: Vec<(&str, &str)> = found.iter().map(|r| (r.field.as_str(), r.kind)).collect();
        assert_eq!(
            fields,
            [
                ("evidence[1]", "secret-assignment"),
                ("nested.url", "url-password"),
                ("root_cause", "aws-access-key-id"),
            ]
        );
        assert!(redact_value(&json!({"a": ["b", 1]})).0.is_none());
    }
}

//! JSON-RPC 2.0 messages: ids, requests, responses, error codes, and decoding of one line.
//!
//! Source: the JSON-RPC 2.0 specification (jsonrpc.org/specification, 2013). A line holds one
//! message or a batch (a JSON array). Decoding never panics; every failure maps to a standard
//! error code with a message that says what was wrong.

use serde_json::{Map, Value, json};

/// Parse error: the line is not valid JSON (or not UTF-8).
pub const PARSE_ERROR: i64 = -32700;
/// Invalid request: valid JSON that is not a JSON-RPC request, an empty batch, or a line too large.
pub const INVALID_REQUEST: i64 = -32600;
/// Method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params: unknown tool, missing or ill-typed argument, value out of range.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error: the store or another component failed.
pub const INTERNAL_ERROR: i64 = -32603;

/// A request id: a string or a number, echoed back with the same JSON type.
///
/// `Null` is only used in error responses to messages whose id could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    /// A numeric id, kept as the JSON text the client sent (`1`, `1.5`, `1E3`,
    /// `18446744073709551616`) and echoed byte for byte: read as an `f64`, an integer beyond
    /// 64 bits or a long fraction would come back changed.
    Number(String),
    /// A string id.
    String(String),
    /// No readable id.
    Null,
}

impl Id {
    /// The id as JSON text, exactly as the client sent a number.
    pub fn to_json(&self) -> String {
        match self {
            Id::Number(n) => n.clone(),
            Id::String(s) => Value::String(s.clone()).to_string(),
            Id::Null => "null".into(),
        }
    }

    /// The id as a JSON value, for matching it with an id the client names in a message
    /// (`notifications/cancelled`): a number as serde_json reads it, which may differ from
    /// the text beyond 64-bit integers and `f64` precision.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => serde_json::from_str(n).unwrap_or(Value::Null),
            Id::String(s) => Value::String(s.clone()),
            Id::Null => Value::Null,
        }
    }

    /// A short, log-friendly rendering of the id.
    pub fn display(&self) -> String {
        match self {
            Id::Number(n) => n.clone(),
            Id::String(s) => format!("{s:?}"),
            Id::Null => "null".into(),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// One of the codes above (or a protocol-specific code).
    pub code: i64,
    /// A sentence that names what was wrong and, where possible, what is allowed.
    pub message: String,
    /// Optional structured detail.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and message, without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32602` with the given message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// `-32603` with the given message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }

    fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), json!(self.code));
        obj.insert("message".into(), json!(self.message));
        if let Some(data) = &self.data {
            obj.insert("data".into(), data.clone());
        }
        Value::Object(obj)
    }
}

/// A decoded request or notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification (no `id` member): it is never answered.
    pub id: Option<Id>,
    /// The method name.
    pub method: String,
    /// The `params` member; `Value::Null` when absent.
    pub params: Value,
}

/// One element of a decoded line: a request, or a message that already has its error answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A well-formed request or notification.
    Request(Request),
    /// A response sent by the peer (we never send requests, so it is ignored without an answer).
    Response,
    /// Not a valid request; answer with this error under this id.
    Invalid(Id, RpcError),
}

/// A decoded line: one message or a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A single message.
    Single(Incoming),
    /// A non-empty batch (JSON array), in order.
    Batch(Vec<Incoming>),
    /// The whole line fails with one error (parse error, empty batch); answered with `id: null`.
    Error(RpcError),
}

/// Decode one line (without its line terminator) into a message or batch.
///
/// A UTF-8 byte-order mark and a trailing `\r` are ignored. Invalid UTF-8 and invalid JSON give
/// `-32700`; `[]` gives `-32600`; any element that is not a request object gives `-32600` under
/// its id when the id is readable. JSON nested deeper than serde_json's recursion limit (128,
/// its default, left on) is invalid JSON, `-32700`, not a stack overflow
/// (`tests/protocol.rs`, `garbage_bytes_crlf_bom_and_deep_nesting_are_answered`).
pub fn decode_line(line: &[u8]) -> Decoded {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut replaced = None;
    let parsed = serde_json::from_slice(line).or_else(|e| {
        // JSON text may escape a lone UTF-16 surrogate (`"a\ud800b"`), which no Rust string can
        // hold; serde_json refuses the whole line, and the answer could not carry the request's
        // id. Such escapes are read as LONE_SURROGATE instead (only on this error, so valid
        // lines pay nothing), which tool arguments refuse as they refuse NUL, naming the field.
        if e.to_string().contains("hex escape") {
            serde_json::from_slice(replaced.insert(replace_lone_surrogates(line)))
        } else {
            Err(e)
        }
    });
    let text = replaced.as_deref().unwrap_or(line);
    let value: Value = match parsed {
        Ok(v) => v,
        Err(e) => {
            let what = if std::str::from_utf8(line).is_err() {
                "Parse error: the line is not valid UTF-8".to_string()
            } else {
                format!("Parse error: {e}")
            };
            return Decoded::Error(RpcError::new(PARSE_ERROR, what));
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => Decoded::Error(RpcError::new(
            INVALID_REQUEST,
            "Invalid Request: an empty batch is not allowed",
        )),
        Value::Array(items) => {
            let mut raw = raw_ids(text, &items);
            Decoded::Batch(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| decode_message(m, raw.as_mut().and_then(|r| r[i].take())))
                    .collect(),
            )
        }
        other => {
            let raw = raw_ids(text, std::slice::from_ref(&other)).and_then(|mut r| r[0].take());
            Decoded::Single(decode_message(other, raw))
        }
    }
}

/// Whether reading `id` as a number may have changed it: serde_json keeps integers within 64
/// bits exactly and reads everything else (`1.5`, `1E3`, `-0`, `2^64`) as an `f64`.
fn lossy_id(message: &Value) -> bool {
    matches!(message.get("id"), Some(Value::Number(n)) if n.is_f64())
}

/// The ids of the message or batch `text` as the client wrote them, one per message (`None`
/// where there is none), read only when some id may have been changed by [`decode_line`]'s
/// parse ([`lossy_id`]), so that ordinary lines are parsed once. A second, borrowing parse
/// that skips everything but the ids, instead of serde_json's `arbitrary_precision`, which
/// would slow every number in every request.
fn raw_ids(text: &[u8], messages: &[Value]) -> Option<Vec<Option<String>>> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    if !messages.iter().any(lossy_id) {
        return None;
    }
    let id_of = |m: &RawValue| {
        serde_json::from_str::<IdOnly<'_>>(m.get())
            .ok()
            .and_then(|m| m.id)
            .map(|id| id.get().to_string())
    };
    let whole: &RawValue = serde_json::from_slice(text).ok()?;
    if messages.len() == 1 && !whole.get().starts_with('[') {
        return Some(vec![id_of(whole)]);
    }
    let items: Vec<&RawValue> = serde_json::from_str(whole.get()).ok()?;
    (items.len() == messages.len()).then(|| items.into_iter().map(id_of).collect())
}

/// The id of the single message `line` without parsing the rest of it (skipped without
/// allocating): to answer a line that is refused before it is decoded. [`Id::Null`] for a
/// batch, a message without a readable id, or text that is not JSON.
pub fn peek_id(line: &[u8]) -> Id {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let Ok(IdOnly { id: Some(raw) }) = serde_json::from_slice::<IdOnly<'_>>(line) else {
        return Id::Null;
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Number(_)) => Id::Number(raw.get().to_string()),
        Ok(Value::String(s)) => Id::String(s),
        _ => Id::Null,
    }
}

/// What an escaped lone UTF-16 surrogate (`"\ud800"`) is read as: the noncharacter U+FDD0,
/// which Unicode sets aside for a program's internal use. Tool arguments refuse it, naming the
/// field (a surrogate is not a character: storing U+FFFD instead would answer success for text
/// that was not stored as sent); elsewhere (a method name, an id) it stands in for the unit.
pub const LONE_SURROGATE: char = '\u{fdd0}';

/// `line` with every `\uXXXX` escape of an unpaired UTF-16 surrogate replaced by `\ufdd0`
/// ([`LONE_SURROGATE`]); a
/// high surrogate followed by a low one is a pair and is kept. Escaped backslashes (`\\`) are
/// skipped, so `"\\ud800"` (a backslash, then the text `ud800`) is left alone.
fn replace_lone_surrogates(line: &[u8]) -> Vec<u8> {
    fn unit(b: &[u8]) -> Option<u16> {
        if b.len() >= 6 && b[0] == b'\\' && b[1] == b'u' {
            u16::from_str_radix(std::str::from_utf8(&b[2..6]).ok()?, 16).ok()
        } else {
            None
        }
    }
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'\\' {
            out.push(line[i]);
            i += 1;
            continue;
        }
        match unit(&line[i..]) {
            Some(u) if is_high(u) && unit(&line[i + 6..]).is_some_and(is_low) => {
                out.extend_from_slice(&line[i..i + 12]);
                i += 12;
            }
            Some(u) if is_high(u) || is_low(u) => {
                out.extend_from_slice(b"\\ufdd0");
                i += 6;
            }
            _ => {
                // Any other escape: copy the backslash and the escaped byte.
                out.extend_from_slice(&line[i..(i + 2).min(line.len())]);
                i += 2;
            }
        }
    }
    out
}

/// The id `value`; a number as `raw` (its text as sent) when given.
fn read_id(value: &Value, raw: Option<String>) -> Result<Id, String> {
    match value {
        Value::Number(n) => Ok(Id::Number(raw.unwrap_or_else(|| n.to_string()))),
        Value::String(s) => Ok(Id::String(s.clone())),
        Value::Null => Ok(Id::Null),
        _ => Err("the id must be a string or a number".into()),
    }
}

fn decode_message(value: Value, raw_id: Option<String>) -> Incoming {
    let Value::Object(mut obj) = value else {
        return Incoming::Invalid(
            Id::Null,
            RpcError::new(
                INVALID_REQUEST,
                "Invalid Request: expected a JSON-RPC 2.0 object",
            ),
        );
    };
    let id = match obj.get("id").map(|v| read_id(v, raw_id)) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(why)) => {
            return Incoming::Invalid(
                Id::Null,
                RpcError::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
            );
        }
    };
    let invalid = |why: &str| {
        Incoming::Invalid(
            id.clone().unwrap_or(Id::Null),
            RpcError::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
        )
    };
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid("the member \"jsonrpc\" must be exactly \"2.0\"");
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => return invalid("the member \"method\" must be a string"),
        None if obj.contains_key("result") || obj.contains_key("error") => {
            return Incoming::Response;
        }
        None => return invalid("the member \"method\" is missing"),
    };
    let params = match obj.remove("params") {
        None => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return invalid("the member \"params\" must be an object or an array"),
    };
    Incoming::Request(Request { id, method, params })
}

/// Encode a success response whose `result` is already JSON text (e.g. from
/// [`crate::protocol::mcp::encode_tool_result`]) as one line without the newline.
pub fn success_line(id: &Id, result_json: &[u8]) -> Vec<u8> {
    let id = id.to_json();
    let mut out = Vec::with_capacity(result_json.len() + id.len() + 40);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result_json);
    out.push(b'}');
    out
}

/// Encode an error response as one line without the newline.
pub fn failure_line(id: &Id, error: &RpcError) -> Vec<u8> {
    let id = id.to_json();
    let error = error.to_value().to_string();
    let mut out = Vec::with_capacity(error.len() + id.len() + 40);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","error":"#);
    out.extend_from_slice(error.as_bytes());
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_the_marker_and_the_id_is_kept() {
        let d = decode_line(br#"{"jsonrpc":"2.0","id":7,"method":"x\ud800y","params":{"a":"\udc00","b":"\ud83d\ude00","c":"\\ud800"}}"#);
        let Decoded::Single(Incoming::Request(r)) = d else {
            panic!("{d:?}")
        };
        assert_eq!(r.id, Some(Id::Number("7".into())));
        assert_eq!(r.method, "x\u{fdd0}y");
        assert_eq!(r.params["a"], "\u{fdd0}");
        assert_eq!(r.params["b"], "😀");
        assert_eq!(r.params["c"], "\\ud800");
    }

    fn single(line: &str) -> Incoming {
        match decode_line(line.as_bytes()) {
            Decoded::Single(m) => m,
            other => panic!("expected a single message, got {other:?}"),
        }
    }

    #[test]
    fn ids_keep_their_json_type() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, json!(7)),
            (r#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#, json!("7")),
            (
                r#"{"jsonrpc":"2.0","id":-1.5,"method":"ping"}"#,
                json!(-1.5),
            ),
        ];
        for (line, want) in cases {
            let Incoming::Request(req) = single(line) else {
                panic!("{line} did not decode as a request");
            };
            assert_eq!(req.id.unwrap().to_value(), want, "{line}");
        }
    }

    #[test]
    fn numeric_ids_keep_their_text_in_single_messages_and_batches() {
        let ids = |line: &str| -> Vec<String> {
            let msgs = match decode_line(line.as_bytes()) {
                Decoded::Single(m) => vec![m],
                Decoded::Batch(ms) => ms,
                Decoded::Error(e) => panic!("{line}: {e:?}"),
            };
            msgs.into_iter()
                .map(|m| match m {
                    Incoming::Request(r) => r.id.map_or("-".into(), |id| id.to_json()),
                    Incoming::Invalid(id, _) => id.to_json(),
                    Incoming::Response => "response".into(),
                })
                .collect()
        };
        assert_eq!(
            ids(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"x\ud800"}"#),
            ["18446744073709551616"]
        );
        assert_eq!(
            ids(
                r#" [ 5, {"jsonrpc":"2.0","id":1E3,"method":"a"}, {"jsonrpc":"2.0","method":"n"},
                   {"jsonrpc":"1.0","id":-0}, {"jsonrpc":"2.0","id":"s","method":"b"} ] "#
            ),
            ["null", "1E3", "-", "-0", r#""s""#]
        );
        // Integers within 64 bits are not parsed twice, and come back as sent anyway.
        assert_eq!(
            ids(r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"}"#),
            ["-9223372036854775808"]
        );
    }

    #[test]
    fn notifications_have_no_id() {
        let Incoming::Request(req) =
            single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(req.id, None);
    }

    #[test]
    fn malformed_lines_map_to_standard_codes() {
        let cases: &[(&[u8], i64)] = &[
            (b"{not json", PARSE_ERROR),
            (b"\xff\xfe", PARSE_ERROR),
            (b"[]", INVALID_REQUEST),
        ];
        for (line, code) in cases {
            match decode_line(line) {
                Decoded::Error(e) => assert_eq!(e.code, *code, "{line:?}"),
                other => panic!("{line:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn non_requests_are_invalid_under_their_id() {
        let cases = [
            (r#"42"#, Id::Null),
            (
                r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                Id::Number("3".into()),
            ),
            (r#"{"jsonrpc":"2.0","id":"a"}"#, Id::String("a".into())),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Id::Null),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":3}"#,
                Id::Number("4".into()),
            ),
        ];
        for (line, want_id) in cases {
            match single(line) {
                Incoming::Invalid(id, e) => {
                    assert_eq!(id, want_id, "{line}");
                    assert_eq!(e.code, INVALID_REQUEST, "{line}");
                }
                other => panic!("{line} gave {other:?}"),
            }
        }
    }

    #[test]
    fn bom_and_crlf_are_tolerated() {
        let line = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r";
        assert!(matches!(
            decode_line(line),
            Decoded::Single(Incoming::Request(_))
        ));
    }

    #[test]
    fn batches_decode_in_order() {
        let line = r#"[{"jsonrpc":"2.0","id":1,"method":"a"},5,{"jsonrpc":"2.0","method":"n"}]"#;
        let Decoded::Batch(items) = decode_line(line.as_bytes()) else {
            panic!("not a batch");
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], Incoming::Request(r) if r.method == "a"));
        assert!(matches!(&items[1], Incoming::Invalid(Id::Null, _)));
        assert!(matches!(&items[2], Incoming::Request(r) if r.id.is_none()));
    }
}

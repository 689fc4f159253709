//! MCP lifecycle messages: version negotiation, the `initialize` and `server/discover` results,
//! the shapes of `tools/list` entries and `tools/call` results, and how each protocol era shapes
//! a result (`resultType`, cache hints, the unsupported-version error).
//!
//! Source: Model Context Protocol specification, revisions 2024-11-05 … 2025-11-25
//! (basic/lifecycle, server/tools), and the stateless revision 2026-07-28.

use serde_json::{Value, json};

use crate::protocol::jsonrpc::RpcError;

/// Protocol revisions this server speaks, preferred first.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision answered when the client asks for one we do not know.
pub const PREFERRED_VERSION: &str = SUPPORTED_VERSIONS[0];

/// Pick the protocol revision for a client's requested version.
///
/// Returns the requested version when supported, else [`PREFERRED_VERSION`]; never fails
/// (MCP lifecycle: "the server MUST respond with another protocol version it supports").
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SUPPORTED_VERSIONS.iter().find(|v| **v == r).copied())
        .unwrap_or(PREFERRED_VERSION)
}

/// The stateless protocol revision (no handshake; version and capabilities in every request's
/// `_meta`; `server/discover`; `resultType` on results).
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The `_meta` key that carries a stateless request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// JSON-RPC error code for a requested protocol version this server does not speak
/// (revision 2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How long a stateless client may cache `tools/list` (the catalogue is fixed per binary).
pub const TOOLS_LIST_TTL_MS: u64 = 3_600_000;

/// The first revision in which invalid tool arguments are tool results with `isError: true`
/// rather than JSON-RPC `-32602` (SEP-1303, adopted in MCP 2025-11-25: clients pass tool
/// results to the model and drop protocol errors).
pub const ARGUMENT_ERRORS_AS_RESULTS_SINCE: &str = "2025-11-25";

/// The revision that removed JSON-RPC batching from MCP: a session that negotiated it or a
/// later one gets `-32600` for a batch.
pub const BATCHES_REMOVED_IN: &str = "2025-06-18";

/// The client session of this stdio connection: the revision its `initialize` negotiated, if it
/// sent one. A stdio server has exactly one client, so one session per process.
#[derive(Debug, Default)]
pub struct Session {
    negotiated: parking_lot::Mutex<Option<&'static str>>,
}

impl Session {
    /// Remember the revision an `initialize` negotiated (a later `initialize` replaces it).
    pub fn set_negotiated(&self, version: &'static str) {
        *self.negotiated.lock() = Some(version);
    }

    /// The negotiated revision, if the client sent `initialize`.
    pub fn negotiated(&self) -> Option<&'static str> {
        *self.negotiated.lock()
    }

    /// Whether invalid arguments of a `tools/call` with `params` in `era` are answered as a
    /// tool result with `isError: true` (SEP-1303) rather than `-32602`:
    ///
    /// | the request                                        | invalid arguments |
    /// |----------------------------------------------------|-------------------|
    /// | stateless revision 2026-07-28                      | `isError` result  |
    /// | session negotiated 2025-11-25 or later             | `isError` result  |
    /// | session negotiated 2025-06-18 or older             | `-32602`          |
    /// | no `initialize` (a script), no `_meta` version     | `isError` result  |
    /// | no `initialize`, `_meta` names an older revision   | `-32602`          |
    pub fn argument_errors_as_results(&self, era: Era, params: &Value) -> bool {
        if era == Era::Stateless {
            return true;
        }
        let meta = params
            .get("_meta")
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str);
        match self.negotiated().or(meta) {
            // Revisions are dates, so they compare as text.
            Some(v) => v >= ARGUMENT_ERRORS_AS_RESULTS_SINCE,
            None => true,
        }
    }
}

/// The protocol era of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Handshake era (2024-11-05 … 2025-11-25): results as those revisions define them.
    Handshake,
    /// Stateless revision 2026-07-28: results carry `resultType`, `tools/list` cache hints.
    Stateless,
}

/// The era of a request from its `params._meta`, or the unsupported version it asked for.
///
/// No `_meta` version → [`Era::Handshake`]. `2026-07-28` → [`Era::Stateless`]. A handshake-era
/// version → [`Era::Handshake`]. Anything else → `Err(version)`, answered with
/// [`UNSUPPORTED_PROTOCOL_VERSION`].
pub fn era_of(params: &Value) -> Result<Era, String> {
    match params
        .get("_meta")
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
    {
        None => Ok(Era::Handshake),
        Some(Value::String(v)) if v == STATELESS_VERSION => Ok(Era::Stateless),
        Some(Value::String(v)) if SUPPORTED_VERSIONS.contains(&v.as_str()) => Ok(Era::Handshake),
        Some(other) => Err(match other {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }),
    }
}

/// Every version this server speaks, newest first (for `server/discover` and `-32022`).
pub fn all_versions() -> Vec<&'static str> {
    std::iter::once(STATELESS_VERSION)
        .chain(SUPPORTED_VERSIONS)
        .collect()
}

/// The [`UNSUPPORTED_PROTOCOL_VERSION`] error for a request whose `_meta` asked for `requested`
/// (as [`era_of`] reports it): the message and `data.supported` list [`all_versions`].
pub fn unsupported_version(requested: &str) -> RpcError {
    let requested = clip(requested);
    RpcError {
        code: UNSUPPORTED_PROTOCOL_VERSION,
        message: format!(
            "Unsupported protocol version {requested:?}; supported: {}",
            all_versions().join(", ")
        ),
        data: Some(json!({"supported": all_versions(), "requested": requested})),
    }
}

/// Client text echoed in an answer or a log line is cut to this many characters, with `…`
/// after it: a 1 MB version string must not come back as a 1 MB answer.
pub const MAX_ECHOED_CHARS: usize = 60;

/// `s` cut to [`MAX_ECHOED_CHARS`] characters with `…` after it.
pub fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(MAX_ECHOED_CHARS) {
        Some((i, _)) => std::borrow::Cow::Owned(format!("{}…", &s[..i])),
        None => std::borrow::Cow::Borrowed(s),
    }
}

/// The `resultType` a result carries in `era`: `"complete"` in the stateless revision, none in
/// the handshake era.
pub fn result_type(era: Era) -> Option<&'static str> {
    match era {
        Era::Handshake => None,
        Era::Stateless => Some("complete"),
    }
}

/// A protocol method's result object as `era` shapes it.
///
/// Stateless revision: the object gains `resultType` ([`result_type`]) unless it has one
/// already, and the `tools/list` result gains the cache hints `ttlMs` ([`TOOLS_LIST_TTL_MS`])
/// and `cacheScope: "public"` (the catalogue is the same for every user). Handshake era, or a
/// result that is not an object: returned as it is.
pub fn shape_result(era: Era, method: &str, mut result: Value) -> Value {
    if let (Some(result_type), Value::Object(obj)) = (result_type(era), &mut result) {
        obj.entry("resultType")
            .or_insert_with(|| json!(result_type));
        if method == "tools/list" {
            obj.insert("ttlMs".into(), json!(TOOLS_LIST_TTL_MS));
            obj.insert("cacheScope".into(), json!("public"));
        }
    }
    result
}

/// A `tools/call` result as `era` shapes it, encoded to JSON text: [`encode_call_result`] with
/// the era's [`result_type`].
pub fn encode_tool_result(
    era: Era,
    structured: &Value,
    is_error: bool,
    notice: Option<&Notice>,
) -> Vec<u8> {
    encode_call_result(structured, is_error, result_type(era), notice)
}

/// Something the server adds to a tool's answer: a second text block (which a client shows the
/// model) and the same fact, machine-readable, under the result's `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The text block.
    pub text: String,
    /// The result's `_meta` object.
    pub meta: Value,
}

/// A `tools/call` result for invalid arguments (SEP-1303), encoded to JSON text: the message as
/// the text block (what a client shows the model), `isError: true`, the family's structured
/// error object as `structuredContent` when it has one, and the era's `resultType`.
pub fn encode_argument_error(era: Era, message: &str, structured: Option<&Value>) -> Vec<u8> {
    let mut result = json!({
        "content": [{"type": "text", "text": message}],
        "isError": true,
    });
    if let Some(s) = structured {
        result["structuredContent"] = s.clone();
    }
    if let Some(rt) = result_type(era) {
        result["resultType"] = json!(rt);
    }
    serde_json::to_vec(&result).unwrap_or_default()
}

fn server_info() -> Value {
    json!({
        "name": "meta-utl-mcp",
        "title": "Meta-UTL self-correcting memory",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The `_meta` key of a stateless result that carries the server's identity.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `server/discover` result (revision 2026-07-28): supported versions, capabilities,
/// instructions, `resultType`, the cache hints every cacheable result carries (private: the
/// instructions name this user's database), and the server identity in `_meta`.
pub fn discover_result(instructions: &str) -> Value {
    json!({
        "supportedVersions": all_versions(),
        "capabilities": {"tools": {"listChanged": false}},
        "instructions": instructions,
        "resultType": "complete",
        "ttlMs": TOOLS_LIST_TTL_MS,
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: server_info()},
    })
}

/// The `initialize` result for a negotiated version, with the `instructions` for the model
/// (see `tools::App::instructions`).
pub fn initialize_result(version: &str, instructions: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": server_info(),
        "instructions": instructions,
    })
}

/// A `tools/call` result: the JSON text block, the same object as `structuredContent`, and
/// `isError`.
pub fn call_result(structured: Value, is_error: bool, notice: Option<&Notice>) -> Value {
    let text = serde_json::to_string(&structured).unwrap_or_else(|_| "{}".to_string());
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error,
    });
    if let Some(n) = notice {
        result["content"]
            .as_array_mut()
            .expect("content is an array")
            .push(json!({"type": "text", "text": n.text}));
        result["_meta"] = n.meta.clone();
    }
    result
}

/// The same `tools/call` result as [`call_result`], encoded straight to JSON text, with
/// `resultType` (the 2026-07-28 revision) when `result_type` is given.
///
/// `structuredContent` is serialised once and reused: the text block is that text escaped as a
/// JSON string, and `structuredContent` is the text itself. This halves the encoding work of
/// every tool answer compared with building the result as a [`Value`] and serialising it.
pub fn encode_call_result(
    structured: &Value,
    is_error: bool,
    result_type: Option<&str>,
    notice: Option<&Notice>,
) -> Vec<u8> {
    let text = serde_json::to_string(structured).unwrap_or_else(|_| "{}".to_string());
    let mut out = Vec::with_capacity(2 * text.len() + 128);
    out.extend_from_slice(br#"{"content":[{"type":"text","text":"#);
    // A `str` always encodes; the Vec writer cannot fail.
    let _ = serde_json::to_writer(&mut out, text.as_str());
    if let Some(n) = notice {
        out.extend_from_slice(br#"},{"type":"text","text":"#);
        let _ = serde_json::to_writer(&mut out, n.text.as_str());
        out.extend_from_slice(br#"}],"_meta":"#);
        let _ = serde_json::to_writer(&mut out, &n.meta);
        out.extend_from_slice(br#","isError":"#);
    } else {
        out.extend_from_slice(br#"}],"isError":"#);
    }
    out.extend_from_slice(if is_error { b"true" } else { b"false" });
    if let Some(rt) = result_type {
        out.extend_from_slice(br#","resultType":"#);
        let _ = serde_json::to_writer(&mut out, rt);
    }
    out.extend_from_slice(br#","structuredContent":"#);
    out.extend_from_slice(text.as_bytes());
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_negotiation_echoes_known_and_falls_back_on_unknown() {
        let cases = [
            (Some("2025-06-18"), "2025-06-18"),
            (Some("2024-11-05"), "2024-11-05"),
            (Some("2025-11-25"), "2025-11-25"),
            (Some("1999-01-01"), PREFERRED_VERSION),
            (None, PREFERRED_VERSION),
        ];
        for (asked, want) in cases {
            assert_eq!(negotiate_version(asked), want, "{asked:?}");
        }
    }

    #[test]
    fn era_is_read_from_meta() {
        let v = |x: Value| json!({"_meta": {META_PROTOCOL_VERSION: x}});
        assert_eq!(era_of(&json!({})), Ok(Era::Handshake));
        assert_eq!(era_of(&Value::Null), Ok(Era::Handshake));
        assert_eq!(era_of(&v(json!("2026-07-28"))), Ok(Era::Stateless));
        assert_eq!(era_of(&v(json!("2025-06-18"))), Ok(Era::Handshake));
        assert_eq!(
            era_of(&v(json!("2030-01-01"))),
            Err("2030-01-01".to_string())
        );
        assert_eq!(era_of(&v(json!(7))), Err("7".to_string()));
    }

    #[test]
    fn results_are_shaped_by_era() {
        let list = json!({"tools": []});
        assert_eq!(
            shape_result(Era::Handshake, "tools/list", list.clone()),
            list
        );
        assert_eq!(
            shape_result(Era::Stateless, "tools/list", list),
            json!({"tools": [], "resultType": "complete", "ttlMs": TOOLS_LIST_TTL_MS,
                   "cacheScope": "public"})
        );
        assert_eq!(
            shape_result(Era::Stateless, "ping", json!({})),
            json!({"resultType": "complete"})
        );
        let discover = discover_result("instructions");
        assert_eq!(
            shape_result(Era::Stateless, "server/discover", discover.clone()),
            discover,
            "discover already carries its own resultType and private cache hints"
        );
        assert_eq!(
            shape_result(Era::Stateless, "ping", json!(null)),
            json!(null)
        );
    }

    #[test]
    fn an_unsupported_version_names_every_supported_one() {
        let e = unsupported_version("2030-01-01");
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            e.message,
            "Unsupported protocol version \"2030-01-01\"; supported: 2026-07-28, 2025-11-25, \
             2025-06-18, 2025-03-26, 2024-11-05"
        );
        assert_eq!(
            e.data,
            Some(json!({"supported": all_versions(), "requested": "2030-01-01"}))
        );
    }

    #[test]
    fn encoded_call_result_equals_the_value_form() {
        let structured = json!({"a": 1.5, "s": "quote \" and \\ and \u{1F600} and \n", "n": null,
                                "nested": {"list": [1, 2.25, -3e-7]}});
        let notice = Notice {
            text: "a \"notice\"".into(),
            meta: json!({"x/y": [{"field": "a", "kind": "k"}]}),
        };
        for (is_error, notice) in [(false, None), (true, None), (false, Some(&notice))] {
            let bytes = encode_call_result(&structured, is_error, None, notice);
            let got: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(got, call_result(structured.clone(), is_error, notice));
            let bytes = encode_call_result(&structured, is_error, Some("complete"), notice);
            let mut want = call_result(structured.clone(), is_error, notice);
            want["resultType"] = json!("complete");
            assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), want);
        }
        let with = call_result(structured.clone(), false, Some(&notice));
        assert_eq!(with["content"][1]["text"], "a \"notice\"");
        assert_eq!(with["_meta"], notice.meta);
    }

    #[test]
    fn call_result_text_equals_structured_content() {
        let v = call_result(json!({"a": 1.5}), false, None);
        let text = v["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            v["structuredContent"]
        );
        assert_eq!(v["isError"], json!(false));
    }
}

//! Answering one decoded line: the protocol methods (`server/discover`, `initialize`, `ping`,
//! `tools/list`) and `tools/call`, batches, a handler's panic, and the client's cancellations.
//!
//! Nothing here awaits or touches the output: a line goes in, the bytes of its answer come
//! out. How the answer is shaped for the request's protocol era is [`mcp`]'s business.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use crate::protocol::jsonrpc::{
    self, Decoded, INVALID_REQUEST, Id, Incoming, METHOD_NOT_FOUND, Request, RpcError,
};
use crate::protocol::mcp;
use crate::tools::{self, App, CallError, wire};

use super::{MAX_LINE_BYTES, MAX_REQUEST_COST};

/// Set once the client cancels a request; read by its task and by its write's delivery.
#[derive(Clone, Default)]
pub(super) struct Cancelled(Arc<AtomicBool>);

impl Cancelled {
    /// Whether the client has cancelled the request.
    pub(super) fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The requests the client may still cancel: each single request with an id, keyed by its id
/// as JSON text.
///
/// MCP (basic/utilities/cancellation): the receiver should stop the request and must not send
/// a response for it; a cancellation for an unknown or finished request is ignored.
#[derive(Clone, Default)]
pub(super) struct InFlight(Arc<parking_lot::Mutex<HashMap<String, Cancelled>>>);

impl InFlight {
    /// The cancellation flag of a request just read, tracked under `id` when it has one (a
    /// request without one, a batch or a notification, cannot be cancelled).
    pub(super) fn register(&self, id: Option<&Id>) -> Cancelled {
        let cancelled = Cancelled::default();
        if let Some(id) = id {
            self.0
                .lock()
                .insert(id.to_value().to_string(), cancelled.clone());
        }
        cancelled
    }

    /// Cancel the request whose id has the JSON text `target`, if it is still tracked.
    pub(super) fn cancel(&self, target: &str) {
        if let Some(flag) = self.0.lock().get(target) {
            flag.0.store(true, Ordering::SeqCst);
            tracing::info!(request = %target, "request cancelled by the client");
        }
    }

    /// Stop tracking the request `id`: its answer is ready (or dropped).
    pub(super) fn forget(&self, id: &Id) {
        self.0.lock().remove(&id.to_value().to_string());
    }
}

/// The id of a line holding one request (not a notification, not a batch): such a request can
/// be cancelled while queued or running, and its id answers a handler panic.
pub(super) fn single_request_id(decoded: &Decoded) -> Option<Id> {
    match decoded {
        Decoded::Single(Incoming::Request(Request { id: Some(id), .. })) => Some(id.clone()),
        _ => None,
    }
}

/// Whether a decoded line gets an answer: anything but notifications and responses.
pub(super) fn expects_answer(decoded: &Decoded) -> bool {
    let one = |m: &Incoming| {
        !matches!(
            m,
            Incoming::Response | Incoming::Request(Request { id: None, .. })
        )
    };
    match decoded {
        Decoded::Single(m) => one(m),
        Decoded::Batch(items) => items.iter().any(one),
        Decoded::Error(_) => true,
    }
}

/// The request id (as its JSON text) named by a `notifications/cancelled` line, if it is one:
/// the key to [`InFlight::cancel`].
pub(super) fn cancel_target(decoded: &Decoded) -> Option<String> {
    match decoded {
        Decoded::Single(Incoming::Request(Request {
            id: None,
            method,
            params,
        })) if method == "notifications/cancelled" => params.get("requestId").map(Value::to_string),
        _ => None,
    }
}

/// Whether `decoded` is one `tools/call` of a write tool that can answer as a read when its
/// write cannot be committed ([`crate::tools::Tool::read_fallback`]).
pub(super) fn read_fallback(decoded: &Decoded) -> bool {
    let Decoded::Single(Incoming::Request(r)) = decoded else {
        return false;
    };
    r.method == "tools/call"
        && r.params
            .get("name")
            .and_then(Value::as_str)
            .and_then(crate::tools::find)
            .is_some_and(|t| t.read_fallback.is_some())
}

/// [`answer_line`], with a panic in a handler caught and answered `-32603` under `id`.
pub(super) fn answer_caught(app: &App, decoded: Decoded, id: &Id) -> Option<Vec<u8>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer_line(app, decoded)))
        .unwrap_or_else(|_| {
            tracing::error!("request handler panicked");
            Some(error_line(
                id,
                &RpcError::internal("Internal error: the request handler failed"),
            ))
        })
}

/// Answer one decoded line: `None` when nothing is to be sent (notifications only).
fn answer_line(app: &App, decoded: Decoded) -> Option<Vec<u8>> {
    match decoded {
        Decoded::Error(e) => Some(error_line(&Id::Null, &e)),
        Decoded::Single(m) => answer(app, m),
        Decoded::Batch(items) => {
            if let Some(v) = app
                .session()
                .negotiated()
                .filter(|v| *v >= mcp::BATCHES_REMOVED_IN)
            {
                // Nothing of it runs; a batch of notifications only is not answered.
                let answered = expects_answer(&Decoded::Batch(items));
                return answered.then(|| {
                    let message = format!(
                        "Invalid Request: this session negotiated MCP {v}, which has no JSON-RPC \
                         batches (removed in {}); send each request on a line of its own",
                        mcp::BATCHES_REMOVED_IN
                    );
                    error_line(&Id::Null, &RpcError::new(INVALID_REQUEST, message))
                });
            }
            // One line can hold thousands of cheap requests with large answers (`tools/list`
            // is 79 kB): once the batch's answers pass MAX_BATCH_ANSWER_BYTES, the rest is not
            // run, and each request left is answered with a short error saying so.
            let mut replies: Vec<Vec<u8>> = Vec::new();
            let mut bytes = 0;
            for m in items {
                let reply = if bytes > MAX_BATCH_ANSWER_BYTES {
                    not_run(m)
                } else {
                    answer(app, m)
                };
                if let Some(r) = reply {
                    bytes += r.len() + 1;
                    replies.push(r);
                }
            }
            (!replies.is_empty()).then(|| {
                let mut out =
                    Vec::with_capacity(replies.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
                out.push(b'[');
                for (i, r) in replies.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(r);
                }
                out.push(b']');
                out
            })
        }
    }
}

/// The answers of one batch reach at most about this many bytes (plus the last answer run,
/// and a short error for each request left): 16 MiB, the size of [`super::MAX_LINE_BYTES`].
/// Source: issue 16, item 11 (commit 62ccc8b): without it a 12 kB batch of `tools/list`
/// made a 20 MB answer.
pub const MAX_BATCH_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The answer to a batch element left unrun because the batch's answers are too large.
fn not_run(msg: Incoming) -> Option<Vec<u8>> {
    match msg {
        Incoming::Request(Request { id: Some(id), .. }) => Some(error_line(
            &id,
            &RpcError::new(
                INVALID_REQUEST,
                format!(
                    "Invalid Request: not run, because the answers of this batch already \
                     exceed {} MiB; send it again in a smaller batch",
                    MAX_BATCH_ANSWER_BYTES / (1024 * 1024)
                ),
            ),
        )),
        Incoming::Invalid(id, e) => Some(error_line(&id, &e)),
        Incoming::Request(Request { id: None, .. }) | Incoming::Response => None,
    }
}

/// A method's result before encoding.
enum Reply {
    /// A protocol result object.
    Value(Value),
    /// A protocol result already encoded for the request's era (the `tools/list` of this
    /// server, built once).
    Encoded(std::sync::Arc<Vec<u8>>),
    /// A `tools/call` answer, encoded by [`mcp::encode_tool_result`].
    Tool(tools::ToolReply),
    /// Invalid `tools/call` arguments answered as a tool result (SEP-1303), encoded by
    /// [`mcp::encode_argument_error`].
    ArgumentError {
        /// Names the field and what is allowed.
        message: String,
        /// The family's structured error object, if any.
        structured: Option<Value>,
    },
}

/// Answer one message of a line: `None` for a notification or a response.
fn answer(app: &App, msg: Incoming) -> Option<Vec<u8>> {
    match msg {
        Incoming::Response => None,
        Incoming::Invalid(id, e) => Some(error_line(&id, &e)),
        Incoming::Request(Request {
            id: None, method, ..
        }) => {
            tracing::debug!(method, "notification");
            None
        }
        Incoming::Request(Request {
            id: Some(id),
            method,
            params,
        }) => Some(match handle(app, &id, &method, &params) {
            Ok(result) => result,
            Err(e) => error_line(&id, &e),
        }),
    }
}

/// Answer one request as an encoded success line, or the error to encode. The request's
/// protocol era (from its `_meta`) shapes the result; see [`mcp::shape_result`].
fn handle(app: &App, id: &Id, method: &str, params: &Value) -> Result<Vec<u8>, RpcError> {
    let era = mcp::era_of(params).map_err(|requested| mcp::unsupported_version(&requested))?;
    Ok(match handle_method(app, id, era, method, params)? {
        Reply::Tool(r) => {
            let notice = r.notice();
            let encoded = mcp::encode_tool_result(era, &r.structured, r.is_error, notice.as_ref());
            jsonrpc::success_line(id, &encoded)
        }
        Reply::ArgumentError {
            message,
            structured,
        } => jsonrpc::success_line(
            id,
            &mcp::encode_argument_error(era, &message, structured.as_ref()),
        ),
        Reply::Value(result) => {
            jsonrpc::success_line(id, &encode(&mcp::shape_result(era, method, result)))
        }
        Reply::Encoded(bytes) => jsonrpc::success_line(id, &bytes),
    })
}

/// Run one method: a protocol method's result, or a tool's answer.
fn handle_method(
    app: &App,
    id: &Id,
    era: mcp::Era,
    method: &str,
    params: &Value,
) -> Result<Reply, RpcError> {
    match method {
        "server/discover" => Ok(Reply::Value(mcp::discover_result(&app.instructions()))),
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            let version = mcp::negotiate_version(requested);
            app.session().set_negotiated(version);
            let requested = requested.map(wire::clipped);
            tracing::info!(requested = requested.as_deref(), version, "initialize");
            Ok(Reply::Value(mcp::initialize_result(
                version,
                &app.instructions(),
            )))
        }
        "ping" => Ok(Reply::Value(json!({}))),
        "tools/list" => {
            Ok(Reply::Encoded(app.tools_list(era, |v| {
                encode(&mcp::shape_result(era, "tools/list", v))
            })))
        }
        "tools/call" => match call_tool(app, id, params) {
            Ok(r) => Ok(Reply::Tool(r)),
            Err(CallError::InvalidArguments {
                message,
                structured,
            }) if app.session().argument_errors_as_results(era, params) => {
                Ok(Reply::ArgumentError {
                    message,
                    structured,
                })
            }
            Err(e) => Err(e.into_rpc()),
        },
        other => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {}", mcp::clip(other)),
        )),
    }
}

/// Run a `tools/call`, logging its duration and outcome at debug level.
fn call_tool(app: &App, id: &Id, params: &Value) -> Result<tools::ToolReply, CallError> {
    let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
        CallError::Rpc(RpcError::invalid_params(
            "tools/call needs params.name, a string naming the tool",
        ))
    })?;
    let arguments = params.get("arguments").unwrap_or(&Value::Null);
    let span = tracing::debug_span!("tools/call", tool = %wire::clipped(name), id = %id.display());
    span.in_scope(|| {
        let started = Instant::now();
        let result = app.call(name, arguments);
        let micros = started.elapsed().as_micros() as u64;
        match &result {
            Ok(r) if r.is_error => {
                tracing::debug!(duration_us = micros, outcome = "tool_error", "done")
            }
            Ok(_) => tracing::debug!(duration_us = micros, outcome = "ok", "done"),
            Err(CallError::InvalidArguments { message, .. }) => tracing::debug!(duration_us = micros, outcome = "invalid_arguments", message = %message, "done"),
            Err(CallError::Rpc(e)) => tracing::debug!(duration_us = micros, outcome = "error", code = e.code, message = %e.message, "done"),
        }
        result
    })
}

/// A result object as JSON text.
fn encode(value: &Value) -> Vec<u8> {
    // A `Value` always serialises (its map keys are strings); the fallback is never used.
    serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec())
}

/// An error response as a line of JSON text (without the newline).
pub(super) fn error_line(id: &Id, error: &RpcError) -> Vec<u8> {
    jsonrpc::failure_line(id, error)
}

/// The answer to a line that would cost `cost` bytes of memory to parse, more than
/// [`MAX_REQUEST_COST`]: `-32600` under its id (read without parsing the line).
pub(super) fn too_costly_line(id: &Id, cost: usize) -> Vec<u8> {
    const MIB: usize = 1024 * 1024;
    let err = RpcError::new(
        INVALID_REQUEST,
        format!(
            "Invalid Request: reading this request would take about {} MiB of memory (the \
             limit is {} MiB); send less per request",
            cost.div_ceil(MIB),
            MAX_REQUEST_COST / MIB
        ),
    );
    error_line(id, &err)
}

/// The answer to a line longer than [`MAX_LINE_BYTES`]: `-32600` with `id: null`.
pub(super) fn too_large_line() -> Vec<u8> {
    let err = RpcError::new(
        INVALID_REQUEST,
        format!(
            "Invalid Request: request too large (the limit is {MAX_LINE_BYTES} bytes per line)"
        ),
    );
    error_line(&Id::Null, &err)
}

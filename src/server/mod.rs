//! The stdio loop: read a line → decode → dispatch → encode → write one line and flush.
//!
//! Only this module writes to stdout. Requests run as tasks: reads run concurrently, a write
//! waits for every request read before it and runs alone, so a piped script sees its writes
//! applied in order, while `ping` and other protocol requests never wait for a tool. On EOF (or
//! the shutdown signal) reading stops, every request already read is answered, the output is
//! flushed, and [`run`] returns.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Value, json};
use std::io::{BufRead, Write};
use tracing::Instrument;

use crate::protocol::jsonrpc::{
    self, Decoded, INVALID_REQUEST, Id, Incoming, METHOD_NOT_FOUND, Request, RpcError,
};
use crate::protocol::mcp;
use crate::tools::{self, App};

mod executor;
mod io;
mod sequencer;

use io::Line;
use sequencer::{Access, Sequencer};

/// The largest line accepted: 16 MiB. Longer lines are answered with `-32600` without being
/// buffered whole.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Requests read but not yet answered, at most. Beyond this, reading stdin pauses.
pub const MAX_IN_FLIGHT: usize = 256;

/// Serve MCP over a line-delimited reader and writer until EOF or `shutdown` completes.
///
/// Returns after every request already read has been answered and the writer flushed.
///
/// # Errors
/// An I/O error of the writer (e.g. stdout closed); reader errors end reading like EOF.
pub async fn run<R, W>(
    app: Arc<App>,
    reader: R,
    writer: W,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let (out, writer_thread) = io::spawn_writer(writer)?;
    let mut lines = io::spawn_reader(reader)?;

    let (write_tx, executor) = executor::spawn(app.clone())?;

    let mut seq = Sequencer::default();
    let limit = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let in_flight: Arc<parking_lot::Mutex<HashMap<String, Arc<AtomicBool>>>> = Arc::default();
    tokio::pin!(shutdown);
    loop {
        let line = tokio::select! {
            biased;
            () = &mut shutdown => {
                tracing::info!("shutdown requested: finishing requests already read");
                break;
            }
            line = lines.recv() => line.unwrap_or(Ok(Line::Eof)),
        };
        let bytes = match line {
            Ok(Line::Data(b)) => b,
            Ok(Line::TooLarge) => {
                let err = RpcError::new(
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: request too large (the limit is {MAX_LINE_BYTES} bytes per line)"
                    ),
                );
                out.send(encode(&jsonrpc::failure(&Id::Null, &err))).await;
                continue;
            }
            Ok(Line::Eof) => break,
            Err(e) => {
                tracing::warn!(error = %e, "stdin read failed; stopping");
                break;
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let decoded = jsonrpc::decode_line(&bytes);
        let access = Access::of(&decoded);
        if let Some(target) = cancel_target(&decoded) {
            if let Some(flag) = in_flight.lock().get(&target) {
                flag.store(true, Ordering::SeqCst);
                tracing::info!(request = %target, "request cancelled by the client");
            }
            continue;
        }
        // A single request can be cancelled while queued or running; its id also answers a
        // handler panic.
        let single_id = match &decoded {
            Decoded::Single(Incoming::Request(Request { id: Some(id), .. })) => Some(id.clone()),
            _ => None,
        };
        let cancelled = Arc::new(AtomicBool::new(false));
        if let Some(id) = &single_id {
            in_flight
                .lock()
                .insert(id.to_value().to_string(), cancelled.clone());
        }
        // Back-pressure: a client that pipelines faster than we answer waits on stdin instead
        // of growing a queue of decoded requests without bound.
        let Ok(permit) = limit.clone().acquire_owned().await else {
            break;
        };
        let mut admission = seq.admit(access);
        let app = app.clone();
        let out = out.clone();
        let in_flight = in_flight.clone();
        let write_tx = write_tx.clone();
        tokio::spawn(async move {
            admission.wait().await;
            let reply = if cancelled.load(Ordering::SeqCst) {
                None
            } else {
                let panic_id = single_id.clone().unwrap_or(Id::Null);
                let run = move || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        answer_line(&app, decoded)
                    }))
                    .unwrap_or_else(|_| {
                        tracing::error!("request handler panicked");
                        Some(encode(&jsonrpc::failure(
                            &panic_id,
                            &RpcError::internal("Internal error: the request handler failed"),
                        )))
                    })
                };
                // Writes may hold the store for long (a 10,000-observation ingest, a Bayesian
                // run) and are committed in groups: they go to the write executor's thread.
                // Reads and protocol requests are short and run on the worker.
                if access == Access::Write {
                    let (out, cancelled) = (out.clone(), cancelled.clone());
                    let delivery = write_tx.submit(
                        Box::new(run),
                        single_id.clone().unwrap_or(Id::Null),
                        Box::new(move |answer, direct| {
                            if let Some(answer) = answer
                                && !cancelled.load(Ordering::SeqCst)
                            {
                                out.send_blocking(answer, direct);
                            }
                        }),
                    );
                    admission.queued();
                    if let Some(delivery) = delivery {
                        let _ = delivery.await;
                    }
                    // Answered by the executor.
                    None
                } else {
                    run()
                }
            };
            if let Some(id) = &single_id {
                in_flight.lock().remove(&id.to_value().to_string());
            }
            match reply {
                Some(_) if cancelled.load(Ordering::SeqCst) => {}
                Some(reply) => out.send(reply).await,
                None => {}
            }
            admission.finish();
            drop(permit);
        });
    }
    // Every task holds a permit until its answer is queued: owning all permits means every
    // request read has been answered.
    let _all = limit.acquire_many(MAX_IN_FLIGHT as u32).await;
    // The executor ends with its queue and drops its handle on the store, so that the last
    // connection closes (checkpointing and removing the WAL file) before the process exits.
    drop(write_tx);
    executor.join().await;
    drop(out);
    writer_thread.join().await
}

/// The request id (as its JSON text) named by a `notifications/cancelled` line, if it is one.
///
/// MCP (basic/utilities/cancellation): the receiver should stop the request and must not send
/// a response for it; a cancellation for an unknown or finished request is ignored.
fn cancel_target(decoded: &Decoded) -> Option<String> {
    match decoded {
        Decoded::Single(Incoming::Request(Request {
            id: None,
            method,
            params,
        })) if method == "notifications/cancelled" => params.get("requestId").map(Value::to_string),
        _ => None,
    }
}

/// One response as a line of JSON text (without the newline).
fn encode(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|e| {
        tracing::error!(error = %e, "could not encode a response");
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error: the response could not be encoded"}}"#.to_vec()
    })
}

/// Answer one decoded line: `None` when nothing is to be sent (notifications only).
fn answer_line(app: &App, decoded: Decoded) -> Option<Vec<u8>> {
    match decoded {
        Decoded::Error(e) => Some(encode(&jsonrpc::failure(&Id::Null, &e))),
        Decoded::Single(m) => answer(app, m),
        Decoded::Batch(items) => {
            let replies: Vec<Vec<u8>> = items.into_iter().filter_map(|m| answer(app, m)).collect();
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

/// A method's result before encoding.
enum Reply {
    /// A protocol result object.
    Value(Value),
    /// A `tools/call` answer, encoded by [`mcp::encode_call_result`].
    Tool(tools::ToolReply),
}

fn answer(app: &App, msg: Incoming) -> Option<Vec<u8>> {
    match msg {
        Incoming::Response => None,
        Incoming::Invalid(id, e) => Some(encode(&jsonrpc::failure(&id, &e))),
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
            Err(e) => encode(&jsonrpc::failure(&id, &e)),
        }),
    }
}

/// Answer one request as an encoded success line, or the error to encode. The request's
/// protocol era (from its `_meta`) shapes the result; see [`mcp::shape_result`].
fn handle(app: &App, id: &Id, method: &str, params: &Value) -> Result<Vec<u8>, RpcError> {
    let era = mcp::era_of(params).map_err(|requested| mcp::unsupported_version(&requested))?;
    Ok(match handle_method(app, id, method, params)? {
        Reply::Tool(r) => {
            jsonrpc::success_line(id, &mcp::encode_tool_result(era, &r.structured, r.is_error))
        }
        Reply::Value(result) => encode(&jsonrpc::success(
            id,
            mcp::shape_result(era, method, result),
        )),
    })
}

fn handle_method(app: &App, id: &Id, method: &str, params: &Value) -> Result<Reply, RpcError> {
    match method {
        "server/discover" => Ok(Reply::Value(mcp::discover_result(app.db_path()))),
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            let version = mcp::negotiate_version(requested);
            tracing::info!(requested, version, "initialize");
            Ok(Reply::Value(mcp::initialize_result(version, app.db_path())))
        }
        "ping" => Ok(Reply::Value(json!({}))),
        "tools/list" => Ok(Reply::Value(tools::list_result())),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
                RpcError::invalid_params("tools/call needs params.name, a string naming the tool")
            })?;
            let arguments = params.get("arguments").unwrap_or(&Value::Null);
            let span = tracing::debug_span!("tools/call", tool = name, id = %id.display());
            span.in_scope(|| {
                let started = Instant::now();
                let result = app.call(name, arguments);
                let micros = started.elapsed().as_micros() as u64;
                match &result {
                    Ok(r) if r.is_error => {
                        tracing::debug!(duration_us = micros, outcome = "tool_error", "done")
                    }
                    Ok(_) => tracing::debug!(duration_us = micros, outcome = "ok", "done"),
                    Err(e) => tracing::debug!(duration_us = micros, outcome = "error", code = e.code, message = %e.message, "done"),
                }
                result.map(Reply::Tool)
            })
        }
        other => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        )),
    }
}

/// Convenience for the binary: serve on the process's stdin and stdout until EOF, SIGINT or
/// SIGTERM.
///
/// # Errors
/// An I/O error writing stdout.
pub async fn run_stdio(app: Arc<App>) -> std::io::Result<()> {
    let stdin = std::io::BufReader::with_capacity(64 * 1024, std::io::stdin());
    run(app, stdin, std::io::stdout(), shutdown_signal())
        .instrument(tracing::info_span!("server"))
        .await
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

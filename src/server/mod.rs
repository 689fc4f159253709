//! The stdio loop: read a line → decode → dispatch → encode → write one line and flush.
//!
//! Only this module writes to stdout. Requests run as tasks: reads run concurrently, a write
//! waits for every request read before it and runs alone, so a piped script sees its writes
//! applied in order, while `ping` and other protocol requests never wait for a tool. On EOF (or
//! the shutdown signal) reading stops, every request already read is answered, the output is
//! flushed, and [`run`] returns.

use std::future::Future;
use std::io::{BufRead, Write};
use std::sync::Arc;

use tracing::Instrument;

use crate::protocol::jsonrpc::{self, Id};
use crate::tools::App;

mod dispatch;
mod executor;
mod io;
mod sequencer;

use dispatch::InFlight;
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
    let in_flight = InFlight::default();
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
                out.send(dispatch::too_large_line()).await;
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
        if let Some(target) = dispatch::cancel_target(&decoded) {
            in_flight.cancel(&target);
            continue;
        }
        let single_id = dispatch::single_request_id(&decoded);
        let cancelled = in_flight.register(single_id.as_ref());
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
            let reply = if cancelled.is_set() {
                None
            } else {
                let panic_id = single_id.clone().unwrap_or(Id::Null);
                let run = move || dispatch::answer_caught(&app, decoded, &panic_id);
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
                                && !cancelled.is_set()
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
                in_flight.forget(id);
            }
            match reply {
                Some(_) if cancelled.is_set() => {}
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

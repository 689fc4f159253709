//! The stdio server: read a line → decode → schedule → answer → write one line and flush.
//!
//! Only this module writes to stdout. [`run`] wires the parts, one file per job:
//! - `io.rs`: the stdin reader thread and the stdout writer thread, and `Output`, where every
//!   answer goes;
//! - `sequencer.rs`: which earlier requests a request waits for;
//! - `dispatch.rs`: answering one decoded line (protocol methods, `tools/call`, batches) and
//!   the client's cancellations;
//! - `executor.rs`: the write executor thread and its group commit.
//!
//! This file holds the loop. Each line read is admitted by the sequencer and answered by a task
//! of its own: reads run concurrently on the tokio workers, writes run one after another on the
//! executor in reading order, so a piped script sees its writes applied in order, while `ping`
//! and other protocol requests never wait for a tool. On EOF (or the shutdown signal) reading
//! stops, every request already read is answered, the output is flushed, and [`run`] returns.
//!
//! Memory is bounded by bytes (`budget.rs`): requests in flight and answers waiting for the
//! client each have a budget, and reading pauses while it is spent.
//!
//! Shutdown on the signal: no new bytes are read from the input, but every complete line
//! already read into the reader's buffer is still answered; a client that does not read its
//! answers gets [`SHUTDOWN_GRACE`] to do so, after which [`run`] returns anyway and logs how
//! many answers could not be delivered.

use std::future::Future;
use std::io::Write;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tracing::Instrument;

use crate::protocol::jsonrpc::{self, Decoded, Id};
use crate::tools::App;

mod budget;
mod dispatch;
mod executor;
mod io;
mod sequencer;
pub mod signals;

pub use budget::{ANSWER_BUDGET, BYTES_PER_TOKEN, MAX_REQUEST_COST, REQUEST_BUDGET};
pub use dispatch::MAX_BATCH_ANSWER_BYTES;
pub use io::Input;

use budget::{Budget, Charge};
use dispatch::{Cancelled, InFlight};
use executor::{ExecutorThread, WriteQueue};
use io::{Line, Output, ReaderStop, Tally, WriterThread};
use sequencer::{Access, Admission, Sequencer};

/// After the shutdown signal, how long a client that does not read its answers is given
/// before the server exits anyway: 3 s. Any duration works; the process ends at the latest
/// [`signals::EXIT_BACKSTOP`] after it. Source: issue 16 (commit 62ccc8b), a bound on the
/// wait for a client that never reads, not a measurement.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// The largest line accepted, in bytes: 16 MiB. Longer lines are answered with `-32600`
/// without being buffered whole. Keep 2 × this under [`MAX_REQUEST_COST`], so that a line of
/// text at the limit is still parsed (a line costs twice its bytes, see `budget.rs`). Source:
/// SPEC ("a line over 16 MiB → `-32600`").
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Requests read but not yet answered, at most: 256. Beyond this, reading stdin pauses; at
/// least 1, and the bytes they may hold are bounded apart by [`REQUEST_BUDGET`]. Source:
/// commit c50b310, where 100,000 piped pings peaked at 8.8 MB RSS with this bound (64 MB
/// without one).
pub const MAX_IN_FLIGHT: usize = 256;

/// Serve MCP over a line-delimited reader and writer until EOF or `shutdown` completes.
///
/// Returns after every request already read has been answered and the writer flushed; after
/// `shutdown`, at the latest [`SHUTDOWN_GRACE`] later.
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
    R: Input,
    W: Write + Send + 'static,
{
    let budget = Arc::new(Budget::default());
    let tally = Arc::new(Tally::default());
    let (out, writer_thread) = io::spawn_writer(writer, budget.clone(), tally.clone())?;
    let (mut lines, stop) = io::spawn_reader(reader, budget.clone())?;
    let (writes, executor) = executor::spawn(app.clone(), budget.clone())?;
    let mut server = Server::new(app, out, writes, budget, tally.clone());
    tokio::pin!(shutdown);
    let signalled = server.serve(&mut lines, shutdown.as_mut(), &stop).await;
    if !signalled {
        return server.finish(executor, writer_thread).await;
    }
    let drained = async {
        server.drain(&mut lines).await;
        server.finish(executor, writer_thread).await
    };
    // The grace period is timed by a thread, not by the runtime's timer, which fires late
    // when a worker is blocked writing to a client that does not read.
    let (grace_over, grace) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("shutdown-grace".into())
        .spawn(move || {
            std::thread::sleep(SHUTDOWN_GRACE);
            let _ = grace_over.send(());
        })?;
    tokio::select! {
        result = drained => result,
        _ = grace => {
            let due = tally.due.load(Ordering::Relaxed);
            let made = tally.made.load(Ordering::Relaxed);
            let written = tally.written.load(Ordering::Relaxed);
            tracing::warn!(
                undelivered = due.saturating_sub(written),
                waiting_for_the_client = made.saturating_sub(written),
                still_running = due.saturating_sub(made),
                grace_s = SHUTDOWN_GRACE.as_secs(),
                "shutdown: the client did not read its answers within the grace period; {} \
                 answers could not be delivered",
                due.saturating_sub(written),
            );
            Ok(())
        }
    }
}

/// The state of the loop: what every request task gets a handle on, and the scheduling of the
/// requests read so far.
struct Server<W> {
    app: Arc<App>,
    out: Output<W>,
    writes: WriteQueue,
    sequencer: Sequencer,
    /// One permit per request read and not yet answered, [`MAX_IN_FLIGHT`] in all.
    permits: Arc<Semaphore>,
    in_flight: InFlight,
    /// The memory budget of requests and answers.
    budget: Arc<Budget>,
    /// Answers due, for the shutdown log.
    tally: Arc<Tally>,
}

impl<W: Write + Send + 'static> Server<W> {
    /// A loop that has read nothing yet.
    fn new(
        app: Arc<App>,
        out: Output<W>,
        writes: WriteQueue,
        budget: Arc<Budget>,
        tally: Arc<Tally>,
    ) -> Self {
        Server {
            app,
            out,
            writes,
            sequencer: Sequencer::default(),
            permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            in_flight: InFlight::default(),
            budget,
            tally,
        }
    }

    /// Read lines and start answering each until EOF, a read error or `shutdown`. Returns
    /// whether `shutdown` ended it; the reader has then been asked to stop, and the lines it
    /// still holds are for [`Server::drain`].
    async fn serve<F: Future<Output = ()>>(
        &mut self,
        lines: &mut mpsc::Receiver<std::io::Result<Line>>,
        mut shutdown: Pin<&mut F>,
        stop: &ReaderStop,
    ) -> bool {
        loop {
            let line = tokio::select! {
                biased;
                () = shutdown.as_mut() => {
                    tracing::info!("shutdown requested: finishing requests already read");
                    stop.stop();
                    return true;
                }
                line = lines.recv() => line,
            };
            if self.take(line).await.is_break() {
                return false;
            }
        }
    }

    /// After the shutdown signal: answer every line the reader still hands on (the complete
    /// lines it had read when asked to stop) until it ends.
    async fn drain(&mut self, lines: &mut mpsc::Receiver<std::io::Result<Line>>) {
        while self.take(lines.recv().await).await.is_continue() {}
    }

    /// Take one line from the reader and start answering it; breaks at its end (EOF, a read
    /// error, a stop) or when no more requests can be admitted. A line too long or too costly
    /// to parse is answered `-32600` here.
    async fn take(&mut self, line: Option<std::io::Result<Line>>) -> ControlFlow<()> {
        match line.unwrap_or(Ok(Line::Eof)) {
            Ok(Line::Data(bytes, charge)) => self.accept(bytes, charge).await,
            Ok(Line::TooLarge) => {
                self.tally.due.fetch_add(1, Ordering::Relaxed);
                self.out.send(dispatch::too_large_line()).await;
                ControlFlow::Continue(())
            }
            Ok(Line::TooCostly { id, cost }) => {
                self.tally.due.fetch_add(1, Ordering::Relaxed);
                self.out.send(dispatch::too_costly_line(&id, cost)).await;
                ControlFlow::Continue(())
            }
            Ok(Line::Eof) => ControlFlow::Break(()),
            Err(e) => {
                tracing::warn!(error = %e, "stdin read failed; stopping");
                ControlFlow::Break(())
            }
        }
    }

    /// Decode one line and start answering it in a task of its own; a cancellation is applied
    /// here instead. Breaks when no more requests can be admitted.
    async fn accept(&mut self, bytes: Vec<u8>, charge: Charge) -> ControlFlow<()> {
        let decoded = jsonrpc::decode_line(&bytes);
        drop(bytes);
        if dispatch::expects_answer(&decoded) {
            self.tally.due.fetch_add(1, Ordering::Relaxed);
        }
        let access = Access::of(&decoded);
        if let Some(target) = dispatch::cancel_target(&decoded) {
            self.in_flight.cancel(&target);
            return ControlFlow::Continue(());
        }
        let id = dispatch::single_request_id(&decoded);
        let cancelled = self.in_flight.register(id.as_ref());
        // Back-pressure: a client that pipelines faster than we answer waits on stdin instead
        // of growing a queue of decoded requests without bound.
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return ControlFlow::Break(());
        };
        let task = Task {
            app: self.app.clone(),
            decoded,
            access,
            id,
            cancelled,
            admission: self.sequencer.admit(access),
            out: self.out.clone(),
            in_flight: self.in_flight.clone(),
            writes: self.writes.clone(),
            budget: self.budget.clone(),
            permit,
            charge,
        };
        tokio::spawn(task.run());
        ControlFlow::Continue(())
    }

    /// Wait until every request read has been answered, then end the write executor and the
    /// writer thread, in that order.
    ///
    /// # Errors
    /// The writer thread's I/O error.
    async fn finish(self, executor: ExecutorThread, writer: WriterThread) -> std::io::Result<()> {
        // Every task holds a permit until its answer is queued: owning all permits means every
        // request read has been answered.
        let _all = self.permits.acquire_many(MAX_IN_FLIGHT as u32).await;
        // The executor ends with its queue and drops its handle on the store, so that the last
        // connection closes (checkpointing and removing the WAL file) before the process exits.
        drop(self.writes);
        executor.join().await;
        drop(self.out);
        writer.join().await
    }
}

/// One request read, answered by a tokio task of its own once its [`Admission`] allows.
struct Task<W> {
    app: Arc<App>,
    decoded: Decoded,
    access: Access,
    /// The id of a single request: it can be cancelled, and it answers a handler panic.
    id: Option<Id>,
    cancelled: Cancelled,
    admission: Admission,
    out: Output<W>,
    in_flight: InFlight,
    writes: WriteQueue,
    budget: Arc<Budget>,
    /// Held until the answer is sent (see [`MAX_IN_FLIGHT`]).
    permit: OwnedSemaphorePermit,
    /// The request's share of the memory budget, held until the answer is sent.
    charge: Charge,
}

impl<W: Write + Send + 'static> Task<W> {
    /// Wait for the requests this one is ordered after, answer it unless it was cancelled, send
    /// the answer, and release the requests ordered after it.
    async fn run(self) {
        let Task {
            app,
            decoded,
            access,
            id,
            cancelled,
            mut admission,
            out,
            in_flight,
            writes,
            budget,
            permit,
            charge,
        } = self;
        admission.wait().await;
        let reply = if cancelled.is_set() {
            None
        } else {
            let panic_id = id.clone().unwrap_or(Id::Null);
            // A check that cannot record its prediction still answers its verdict.
            let fallback: Option<executor::Run> = dispatch::read_fallback(&decoded).then(|| {
                let (app, decoded, panic_id) = (app.clone(), decoded.clone(), panic_id.clone());
                Box::new(move || {
                    crate::tools::with_read_fallback(|| {
                        dispatch::answer_caught(&app, decoded, &panic_id)
                    })
                }) as executor::Run
            });
            let answer = move || dispatch::answer_caught(&app, decoded, &panic_id);
            if access == Access::Write {
                // Writes may hold the store for long (a 10,000-observation ingest, a Bayesian
                // run) and are committed in groups: they go to the write executor's thread,
                // which sends the answer itself.
                let deliver = deliver_unless_cancelled(out.clone(), cancelled.clone());
                let delivery = writes.submit(
                    Box::new(answer),
                    fallback,
                    id.clone().unwrap_or(Id::Null),
                    deliver,
                );
                admission.queued();
                if let Some(delivery) = delivery {
                    let _ = delivery.await;
                }
                None
            } else {
                // Reads and protocol requests are short and run on the worker, once the
                // answers waiting for the client leave room for one more.
                budget.room_for_answers().await;
                answer()
            }
        };
        if let Some(id) = &id {
            in_flight.forget(id);
        }
        match reply {
            Some(_) if cancelled.is_set() => {}
            Some(reply) => out.send(reply).await,
            None => {}
        }
        admission.finish();
        drop(charge);
        drop(permit);
    }
}

/// How the executor sends a write's answer: to `out`, unless the client has cancelled the
/// request meanwhile.
fn deliver_unless_cancelled<W: Write + Send + 'static>(
    out: Output<W>,
    cancelled: Cancelled,
) -> executor::Deliver {
    Box::new(move |answer, direct| {
        if let Some(answer) = answer
            && !cancelled.is_set()
        {
            out.send_blocking(answer, direct);
        }
    })
}

/// Convenience for the binary: serve on the process's stdin and stdout until EOF or a shutdown
/// signal ([`signals::install`]).
///
/// # Errors
/// An I/O error writing stdout.
pub async fn run_stdio(app: Arc<App>, signals: signals::Signals) -> std::io::Result<()> {
    run(app, std::io::stdin(), std::io::stdout(), signals.received())
        .instrument(tracing::info_span!("server"))
        .await
}

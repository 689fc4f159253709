//! The write executor: one thread that runs the write tools in queue order, committing every
//! write already queued in one transaction (group commit), and answering each after the commit.

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::protocol::jsonrpc::Id;
use crate::tools::App;

use super::budget::Budget;
use super::dispatch;

/// Writes queued together are committed together, at most this many: 64 (at least 1; 1 turns
/// group commit off). Source: commit 7ee3faf, where 20,000 pipelined `record_prediction`
/// calls went from 6.8 s to 1.2–1.7 s; the bound itself was not tuned.
const MAX_GROUP_COMMIT: usize = 64;

/// The work of one write: run on the executor thread inside the group's transaction, it
/// returns the answer line (`None`: nothing to send).
pub(super) type Run = Box<dyn FnOnce() -> Option<Vec<u8>> + Send>;

/// Sends a write's answer (from the executor thread, so that the request's task need not wake
/// up first: one thread hand-off less on a write's round trip); `true` lets it write to stdout
/// itself, `false` queues it for the writer thread's batches.
pub(super) type Deliver = Box<dyn FnOnce(Option<Vec<u8>>, bool) + Send>;

/// One write request for the executor: the work (which answers it), the id to answer a failed
/// commit with, and where the answer goes.
struct WriteJob {
    run: Run,
    /// The answer when the group's commit fails, for a tool that can answer as a read
    /// ([`crate::tools::Tool::read_fallback`]); `None`: the commit's error.
    fallback: Option<Run>,
    id: Id,
    deliver: Deliver,
    /// Signalled once the answer is delivered.
    delivered: oneshot::Sender<()>,
}

/// Where writes are queued for the executor; cloned into every request task.
#[derive(Clone)]
pub(super) struct WriteQueue(std_mpsc::Sender<WriteJob>);

impl WriteQueue {
    /// Queue one write: `run` answers it (or `id` answers a failed commit), `deliver` sends the
    /// answer. Returns what completes once the answer is delivered, or `None` when the executor
    /// is gone.
    pub(super) fn submit(
        &self,
        run: Run,
        fallback: Option<Run>,
        id: Id,
        deliver: Deliver,
    ) -> Option<oneshot::Receiver<()>> {
        let (delivered, delivery) = oneshot::channel();
        let job = WriteJob {
            run,
            fallback,
            id,
            deliver,
            delivered,
        };
        self.0.send(job).is_ok().then_some(delivery)
    }
}

/// The running executor thread, to join once every [`WriteQueue`] is dropped.
pub(super) struct ExecutorThread(JoinHandle<()>);

impl ExecutorThread {
    /// Wait for the executor to run what is queued and end (it ends when every [`WriteQueue`] is
    /// gone), dropping its handle on the store: the last connection then closes, checkpointing
    /// and removing the WAL file, before the process exits.
    pub(super) async fn join(self) {
        let _ = tokio::task::spawn_blocking(move || self.0.join()).await;
    }
}

/// Start the write executor on `app`: the queue to submit writes to, and the thread.
pub(super) fn spawn(
    app: Arc<App>,
    budget: Arc<Budget>,
) -> std::io::Result<(WriteQueue, ExecutorThread)> {
    let (queue, jobs) = std_mpsc::channel::<WriteJob>();
    let thread = std::thread::Builder::new()
        .name("write-executor".into())
        .spawn(move || write_executor(app, jobs, &budget))?;
    Ok((WriteQueue(queue), ExecutorThread(thread)))
}

/// The write executor: one thread that runs queued writes in order, taking every write already
/// queued (up to [`MAX_GROUP_COMMIT`]) into one group commit ([`App::write_batch`]).
///
/// A lone write costs what it did before; a pipelined stream of writes shares commits, so the
/// WAL receives each changed page once per group instead of once per write. Answers are
/// released only after the commit, so an answered write is durable.
fn write_executor(app: Arc<App>, jobs: std_mpsc::Receiver<WriteJob>, budget: &Budget) {
    while let Ok(first) = jobs.recv() {
        // A group's answers are made only while the answers waiting for the client leave room.
        budget.room_for_answers_blocking();
        let mut group = vec![first];
        while group.len() < MAX_GROUP_COMMIT {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let mut runs = Vec::with_capacity(group.len());
        let mut waiting = Vec::with_capacity(group.len());
        let mut fallbacks = Vec::with_capacity(group.len());
        for job in group {
            runs.push(job.run);
            fallbacks.push(job.fallback);
            waiting.push((job.id, job.deliver, job.delivered));
        }
        let answers = app.write_batch(|| runs.into_iter().map(|run| run()).collect::<Vec<_>>());
        let answers: Vec<Option<Vec<u8>>> = match answers {
            Ok(answers) => answers,
            // Nothing of the group was kept; a request that can answer as a read still does.
            Err(e) => waiting
                .iter()
                .zip(fallbacks)
                .map(|((id, _, _), fallback)| match fallback {
                    Some(read) => read(),
                    None => Some(dispatch::error_line(id, &e)),
                })
                .collect(),
        };
        // A lone write's answer goes straight out; a group's answers go to the writer thread,
        // which writes them in one system call while the executor takes the next group.
        let alone = waiting.len() == 1;
        for ((_, deliver, delivered), answer) in waiting.into_iter().zip(answers) {
            deliver(answer, alone);
            let _ = delivered.send(());
        }
    }
}

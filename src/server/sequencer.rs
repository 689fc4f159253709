//! The read/write scheduling of requests: which requests a request waits for ([`Sequencer`])
//! and what it signals to the ones after it ([`Admission`]).
//!
//! A read tool waits for the last write before it to be done; a write tool waits for every
//! read before it and for the write before it to be queued on the write executor; protocol
//! requests wait for nothing. So a piped script sees its writes applied in order, while `ping`
//! never waits for a tool.

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::protocol::jsonrpc::{Decoded, Incoming, Request};
use crate::tools;

/// How a request is scheduled, from the least to the most constrained (a batch is scheduled
/// as its most constrained element).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Access {
    /// Protocol requests that touch no state (`initialize`, `ping`, `tools/list`, errors).
    Free,
    /// Reads state: waits for the last write before it.
    Read,
    /// Writes state: waits for everything before it.
    Write,
}

impl Access {
    /// How a decoded line is scheduled: a batch as its most constrained element; a line that
    /// failed to decode touches no state.
    pub(super) fn of(decoded: &Decoded) -> Access {
        match decoded {
            Decoded::Single(m) => access_of(m),
            Decoded::Batch(items) => items.iter().map(access_of).max().unwrap_or(Access::Free),
            Decoded::Error(_) => Access::Free,
        }
    }
}

/// A `tools/call` of a known tool reads or writes as the tool declares; anything else is
/// [`Access::Free`].
fn access_of(msg: &Incoming) -> Access {
    match msg {
        Incoming::Request(Request { method, params, .. }) if method == "tools/call" => match params
            .get("name")
            .and_then(Value::as_str)
            .and_then(tools::find)
        {
            Some(t) if t.writes() => Access::Write,
            Some(_) => Access::Read,
            None => Access::Free,
        },
        _ => Access::Free,
    }
}

/// Progress of a write, as seen by the requests after it.
const WRITE_QUEUED: u8 = 1;
/// The write has committed and been answered.
const WRITE_DONE: u8 = 2;

/// Ordering of requests: a write waits for every earlier read and is queued after the write
/// before it (the write executor runs the queue in order); a read waits for the last write to
/// be done.
///
/// Reads admitted since the last write form an epoch: each holds a clone of the epoch's
/// sender, and the next write waits on the receiver, which yields `None` once every clone is
/// dropped. Admission is O(1) however many reads are in flight.
pub(super) struct Sequencer {
    last_write: Option<watch::Receiver<u8>>,
    epoch_tx: mpsc::Sender<()>,
    epoch_rx: mpsc::Receiver<()>,
}

impl Default for Sequencer {
    fn default() -> Self {
        let (epoch_tx, epoch_rx) = mpsc::channel(1);
        Sequencer {
            last_write: None,
            epoch_tx,
            epoch_rx,
        }
    }
}

/// What one admitted request waits for and what it signals.
pub(super) struct Admission {
    /// The last write before it, and the progress of it to wait for ([`WRITE_QUEUED`] for a
    /// write, [`WRITE_DONE`] for a read).
    write: Option<(watch::Receiver<u8>, u8)>,
    /// For a write: the reads since the previous write, which have all finished when this
    /// yields `None`.
    reads: Option<mpsc::Receiver<()>>,
    /// For a write: its progress, for the requests after it.
    progress: Option<watch::Sender<u8>>,
    /// For a read: held until it has finished.
    read_guard: Option<mpsc::Sender<()>>,
}

impl Admission {
    /// Wait until the request may run (see [`Sequencer`]).
    pub(super) async fn wait(&mut self) {
        if let Some((w, level)) = &mut self.write {
            let level = *level;
            let _ = w.wait_for(|p| *p >= level).await;
        }
        if let Some(r) = &mut self.reads {
            while r.recv().await.is_some() {}
        }
    }

    /// Signal that this write is in the executor's queue: the next write may queue behind it.
    pub(super) fn queued(&self) {
        if let Some(p) = &self.progress {
            let _ = p.send(WRITE_QUEUED);
        }
    }

    /// Signal that this request has finished: a write wakes what waits for it, a read
    /// releases its epoch.
    pub(super) fn finish(self) {
        if let Some(p) = self.progress {
            let _ = p.send(WRITE_DONE);
        }
        drop(self.read_guard);
    }
}

impl Sequencer {
    /// Admit the next request read, in reading order: what it waits for and what it signals.
    pub(super) fn admit(&mut self, access: Access) -> Admission {
        match access {
            Access::Free => Admission {
                write: None,
                reads: None,
                progress: None,
                read_guard: None,
            },
            Access::Read => Admission {
                write: self.last_write.clone().map(|w| (w, WRITE_DONE)),
                reads: None,
                progress: None,
                read_guard: Some(self.epoch_tx.clone()),
            },
            Access::Write => {
                let (tx, rx) = watch::channel(0);
                let (epoch_tx, epoch_rx) = mpsc::channel(1);
                // Dropping the old epoch's own sender leaves only the reads' clones.
                drop(std::mem::replace(&mut self.epoch_tx, epoch_tx));
                let reads = std::mem::replace(&mut self.epoch_rx, epoch_rx);
                Admission {
                    write: self.last_write.replace(rx).map(|w| (w, WRITE_QUEUED)),
                    reads: Some(reads),
                    progress: Some(tx),
                    read_guard: None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `adm.wait()` completes within a few scheduler turns.
    async fn ready(adm: &mut Admission) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(20), adm.wait())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_write_waits_for_every_earlier_read_and_later_reads_wait_for_it() {
        let mut seq = Sequencer::default();
        let mut r1 = seq.admit(Access::Read);
        let mut r2 = seq.admit(Access::Read);
        let mut w = seq.admit(Access::Write);
        let mut r3 = seq.admit(Access::Read);
        let mut free = seq.admit(Access::Free);
        assert!(
            ready(&mut r1).await && ready(&mut r2).await,
            "first reads run at once"
        );
        assert!(ready(&mut free).await, "protocol requests never wait");
        assert!(!ready(&mut w).await, "the write waits for both reads");
        r1.finish();
        assert!(!ready(&mut w).await, "one read is still running");
        assert!(!ready(&mut r3).await, "a read after the write waits for it");
        r2.finish();
        assert!(ready(&mut w).await, "both reads done: the write runs");
        assert!(!ready(&mut r3).await, "the write has not finished yet");
        let mut w2 = seq.admit(Access::Write);
        w.finish();
        assert!(
            ready(&mut r3).await,
            "the write finished: the later read runs"
        );
        assert!(!ready(&mut w2).await, "the next write waits for that read");
        r3.finish();
        assert!(ready(&mut w2).await);
        // Back-to-back writes: the next one may queue as soon as this one is queued (the
        // executor runs the queue in order), so that they can share a commit; a read after
        // them still waits for the last one to be done.
        let mut w3 = seq.admit(Access::Write);
        let mut r4 = seq.admit(Access::Read);
        assert!(!ready(&mut w3).await, "w2 is not queued yet");
        w2.queued();
        assert!(ready(&mut w3).await, "w2 queued: w3 may queue behind it");
        w3.queued();
        w2.finish();
        assert!(!ready(&mut r4).await, "w3 queued but not done");
        w3.finish();
        assert!(ready(&mut r4).await);
    }
}

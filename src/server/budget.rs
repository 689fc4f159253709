//! The memory budget: bytes of requests in flight and of answers waiting for the client,
//! so that memory is bounded by bytes, not by a count of requests, whatever the client sends.
//!
//! A line's cost is estimated before it is parsed ([`cost_of`]): twice its bytes (the line,
//! then its strings in the parsed value, and again in the tool's typed arguments or an error
//! that quotes them) plus [`BYTES_PER_TOKEN`] per `,` `:` `[` `{` (the parsed
//! `serde_json::Value` of `[0,0,…]` takes 64 bytes per element, and up to half as much again
//! while its vector grows; an object entry about 80). The reader thread takes a line's cost from [`REQUEST_BUDGET`] before handing
//! the line on, and waits (leaving the rest in the pipe) while the budget is spent; the cost
//! is returned when the request has been answered. A line costing more than
//! [`MAX_REQUEST_COST`] alone is refused without being parsed.
//!
//! Answers are counted from when they are made until they are written: a request waits
//! before making its answer while more than [`ANSWER_BUDGET`] bytes of answers wait for a
//! client that does not read. The two are separate on purpose: answers are only ever freed by
//! the writer, so a request waiting for room never waits on another waiting request.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

/// Estimated bytes of requests in flight (read, not yet answered), at most: 64 MiB; a single
/// request may exceed it alone. At least [`MAX_REQUEST_COST`] is useful, so that the largest
/// request accepted runs beside others. Source: commit 0cf854b (issue 16, item 5), halved from
/// 128 MiB once strings counted twice: the flood of 24 lines of 16 MiB peaked at 74 MB RSS in
/// a release build.
pub const REQUEST_BUDGET: usize = 64 * 1024 * 1024;

/// A line whose estimated cost exceeds this, in bytes (64 MiB), is answered `-32600` without
/// being parsed. The largest requests the tools take (10,000 calibration observations, two
/// fingerprints of 13 embeddings) cost under 20 MiB; a 16 MiB line of text costs 32 MiB. Keep
/// it at least twice [`super::MAX_LINE_BYTES`]. Source: issue 16, item 5 (commit 62ccc8b).
pub const MAX_REQUEST_COST: usize = 64 * 1024 * 1024;

/// Bytes of answers made but not yet written to stdout beyond which no request makes its
/// answer: 16 MiB. Any size above the largest single answer keeps answers flowing; smaller
/// only slows a client that reads late. Source: commit 0cf854b (issue 16, item 10), halved
/// from 32 MiB with [`REQUEST_BUDGET`] after the flood test.
pub const ANSWER_BUDGET: usize = 16 * 1024 * 1024;

/// Bytes charged per JSON token separator (see the module documentation).
pub const BYTES_PER_TOKEN: usize = 96;

/// The estimated memory cost of parsing `line` and holding it until answered.
pub(super) fn cost_of(line: &[u8]) -> usize {
    let tokens = separators(line);
    line.len()
        .saturating_mul(2)
        .saturating_add(tokens.saturating_mul(BYTES_PER_TOKEN))
}

/// The number of `,` `:` `[` `{` bytes in `line`.
///
/// Counted in runs of at most 255 bytes into a `u8`, a loop the compiler turns into vector
/// compares: a byte-at-a-time count was ~0.7 ms of a 476 KB `gwt_compute_delta_sc` request
/// (perf), where this takes a few tens of µs.
fn separators(line: &[u8]) -> usize {
    line.chunks(usize::from(u8::MAX))
        .map(|run| {
            let mut n: u8 = 0;
            for &b in run {
                n += u8::from(b == b',')
                    + u8::from(b == b':')
                    + u8::from(b == b'[')
                    + u8::from(b == b'{');
            }
            usize::from(n)
        })
        .sum()
}

#[derive(Default)]
struct Spent {
    requests: usize,
    answers: usize,
}

/// The shared budget (see the module documentation).
#[derive(Default)]
pub(super) struct Budget {
    spent: Mutex<Spent>,
    /// Wakes the reader thread and the write executor.
    freed: Condvar,
    /// Wakes request tasks waiting for room for their answers.
    answers_freed: Notify,
}

/// Bytes taken from the budget, given back when dropped.
pub(super) struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
    answer: bool,
}

impl Drop for Charge {
    fn drop(&mut self) {
        let mut spent = self.budget.spent.lock();
        if self.answer {
            spent.answers -= self.bytes;
        } else {
            spent.requests -= self.bytes;
        }
        drop(spent);
        self.budget.freed.notify_all();
        if self.answer {
            self.budget.answers_freed.notify_waiters();
        }
    }
}

impl Budget {
    /// Take `cost` for a request, waiting (this thread) while it does not fit in
    /// [`REQUEST_BUDGET`] beside the requests in flight; a request fits alone whatever its cost.
    pub(super) fn request(self: &Arc<Self>, cost: usize) -> Charge {
        let mut spent = self.spent.lock();
        while spent.requests > 0 && spent.requests + cost > REQUEST_BUDGET {
            self.freed.wait(&mut spent);
        }
        spent.requests += cost;
        Charge {
            budget: self.clone(),
            bytes: cost,
            answer: false,
        }
    }

    /// Count an answer of `len` bytes until it is written (the charge is dropped then).
    pub(super) fn answer(self: &Arc<Self>, len: usize) -> Charge {
        self.spent.lock().answers += len;
        Charge {
            budget: self.clone(),
            bytes: len,
            answer: true,
        }
    }

    fn answers_fit(&self) -> bool {
        self.spent.lock().answers <= ANSWER_BUDGET
    }

    /// Wait until answers waiting for the client are within [`ANSWER_BUDGET`].
    pub(super) async fn room_for_answers(&self) {
        loop {
            let freed = self.answers_freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.answers_fit() {
                return;
            }
            freed.await;
        }
    }

    /// [`Budget::room_for_answers`] for a thread outside the runtime (the write executor).
    pub(super) fn room_for_answers_blocking(&self) {
        let mut spent = self.spent.lock();
        while spent.answers > ANSWER_BUDGET {
            self.freed.wait(&mut spent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_counts_bytes_and_tokens() {
        assert_eq!(cost_of(b"[0,0]"), 2 * 5 + 2 * BYTES_PER_TOKEN);
        assert_eq!(cost_of(br#"{"a":"x"}"#), 2 * 9 + 2 * BYTES_PER_TOKEN);
    }

    #[test]
    fn separators_are_counted_across_runs() {
        // Runs of every separator longer than one 255-byte run, and mixed text.
        let dense = [b",:[{".repeat(300), b"x".repeat(7)].concat();
        assert_eq!(separators(&dense), 1200);
        let mixed: Vec<u8> = (0..10_000u32)
            .map(|i| b"{\"a\":[1.5,-2e3],}"[i as usize % 17])
            .collect();
        let naive = mixed
            .iter()
            .filter(|&&b| matches!(b, b',' | b':' | b'[' | b'{'))
            .count();
        assert_eq!(separators(&mixed), naive);
        assert_eq!(separators(b""), 0);
    }

    #[test]
    fn requests_wait_for_room_and_a_large_one_fits_alone() {
        let budget = Arc::new(Budget::default());
        let big = budget.request(REQUEST_BUDGET + 1);
        let waiter = {
            let budget = budget.clone();
            std::thread::spawn(move || drop(budget.request(1)))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "waits while the budget is spent");
        drop(big);
        waiter.join().unwrap();
        assert_eq!(budget.spent.lock().requests, 0);
    }
}

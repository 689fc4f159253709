//! Whether the store may write: damage found at run time stops every write, a background
//! integrity check holds writes until it has passed, and the SQLite failure that ended a
//! transaction is kept so that the error reported is the cause, not its aftermath.
//!
//! Failures are noted where every SQLite error becomes a [`StoreError`] (its `From`
//! conversion), on the thread that met them: the store functions of every family run inside
//! [`super::Store::write`] or [`super::Store::read`] on that same thread, which read the notes
//! when the function returns. A handler that catches an error and carries on (the lessons
//! tools answer internal errors as structured results) cannot hide it.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rusqlite::ErrorCode;

use crate::store::StoreError;

/// How long a write waits for a background integrity check before it is refused.
pub const CHECK_WAIT: Duration = Duration::from_secs(30);

/// What this thread met since [`reset`].
#[derive(Default)]
struct Notes {
    /// SQLITE_CORRUPT or SQLITE_NOTADB: the file is damaged.
    damage: Option<String>,
    /// The first failure of a kind after which SQLite may roll the whole transaction back by
    /// itself (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_NOMEM, SQLITE_INTERRUPT; see
    /// sqlite.org/lang_transaction.html, "Response To Errors Within A Transaction").
    rollback_cause: Option<String>,
}

thread_local! {
    static NOTES: RefCell<Notes> = RefCell::new(Notes::default());
}

/// Note an SQLite failure met on this thread (called by `From<rusqlite::Error>`).
pub(crate) fn note(e: &rusqlite::Error) {
    let Some(code) = e.sqlite_error_code() else {
        return;
    };
    NOTES.with_borrow_mut(|n| match code {
        ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => {
            n.damage.get_or_insert_with(|| e.to_string());
        }
        ErrorCode::DiskFull
        | ErrorCode::SystemIoFailure
        | ErrorCode::DatabaseBusy
        | ErrorCode::DatabaseLocked
        | ErrorCode::OutOfMemory
        | ErrorCode::OperationInterrupted => {
            n.rollback_cause.get_or_insert_with(|| e.to_string());
        }
        _ => {}
    });
}

/// Forget this thread's notes: a new transaction (or write of a group) starts.
pub(crate) fn reset() {
    NOTES.with_borrow_mut(|n| *n = Notes::default());
}

thread_local! {
    static SERVING: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The database file the store calls of this thread last used (empty before the first): an
/// SQLite failure's message names it ([`super::StoreError::Sqlite`]).
pub(crate) fn serving() -> String {
    SERVING.with_borrow(Clone::clone)
}

/// The damage noted on this thread since [`reset`], if any.
pub(crate) fn damage() -> Option<String> {
    NOTES.with_borrow(|n| n.damage.clone())
}

/// Why SQLite ended the transaction by itself: the failure noted since [`reset`], or `fallback`.
pub(crate) fn rollback_cause(fallback: impl FnOnce() -> String) -> String {
    NOTES
        .with_borrow(|n| n.rollback_cause.clone())
        .unwrap_or_else(fallback)
}

/// The state of the file, shared by the store and its background check.
enum State {
    /// A background integrity check is running; `retention` is the event retention (days) to
    /// apply once it has passed.
    Checking {
        since: Instant,
        retention: Option<u32>,
    },
    /// No damage known.
    Sound,
    /// Damage found: nothing may be written.
    Damaged(String),
}

/// The store's health: see the module documentation.
pub(crate) struct Health {
    state: Mutex<State>,
    changed: Condvar,
    /// The file, as shown to users.
    path: String,
}

impl Health {
    /// Note this store's file as the one this thread's store calls use ([`serving`]).
    pub(crate) fn serve_here(&self) {
        SERVING.with_borrow_mut(|s| {
            if *s != self.path {
                s.clone_from(&self.path);
            }
        });
    }

    /// A store that may be written at once, or after the background check (`checking`).
    pub(crate) fn new(path: String, checking: bool) -> Self {
        let state = if checking {
            State::Checking {
                since: Instant::now(),
                retention: None,
            }
        } else {
            State::Sound
        };
        Health {
            state: Mutex::new(state),
            changed: Condvar::new(),
            path,
        }
    }

    /// The refusal for a damaged file, naming it and the recovery steps.
    pub(crate) fn damaged_error(&self, reason: &str) -> StoreError {
        StoreError::Damaged {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// Record damage: from now on every write is refused. Returns the refusal.
    pub(crate) fn mark_damaged(&self, reason: &str) -> StoreError {
        let mut state = self.state.lock();
        if !matches!(*state, State::Damaged(_)) {
            tracing::error!(database = %self.path, reason, "database damaged: writes refused");
            *state = State::Damaged(reason.to_string());
            self.changed.notify_all();
        }
        self.damaged_error(reason)
    }

    /// The damage found, if any.
    pub(crate) fn damage(&self) -> Option<String> {
        match &*self.state.lock() {
            State::Damaged(reason) => Some(reason.clone()),
            _ => None,
        }
    }

    /// `Ok` when a write may start: no damage known, and no background check running (a write
    /// waits up to `wait` for one to pass).
    ///
    /// # Errors
    /// [`StoreError::Damaged`], or [`StoreError::Checking`] when the check outlasts `wait`.
    pub(crate) fn writable(&self, wait: Duration) -> Result<(), StoreError> {
        let deadline = Instant::now() + wait;
        let mut state = self.state.lock();
        loop {
            match &*state {
                State::Sound => return Ok(()),
                State::Damaged(reason) => return Err(self.damaged_error(reason)),
                State::Checking { since, .. } => {
                    let since = *since;
                    if self.changed.wait_until(&mut state, deadline).timed_out()
                        && matches!(*state, State::Checking { .. })
                    {
                        return Err(StoreError::Checking {
                            path: self.path.clone(),
                            seconds: since.elapsed().as_secs(),
                        });
                    }
                }
            }
        }
    }

    /// Apply the event retention once the background check has passed, when one is running:
    /// returns `Some(days)` back when it is not (the caller applies it now).
    pub(crate) fn defer_retention(&self, days: u32) -> Option<u32> {
        match &mut *self.state.lock() {
            State::Checking { retention, .. } => {
                *retention = Some(days);
                None
            }
            _ => Some(days),
        }
    }

    /// The background check has ended: `Ok` → writes may go on (returns the deferred
    /// retention), `Err(reason)` → damaged.
    pub(crate) fn check_done(&self, outcome: Result<(), String>) -> Option<u32> {
        let mut state = self.state.lock();
        let retention = match &*state {
            State::Checking { retention, .. } => *retention,
            _ => None,
        };
        match outcome {
            Ok(()) => {
                if matches!(*state, State::Checking { .. }) {
                    *state = State::Sound;
                }
                self.changed.notify_all();
                retention
            }
            Err(reason) => {
                drop(state);
                self.mark_damaged(&reason);
                None
            }
        }
    }
}

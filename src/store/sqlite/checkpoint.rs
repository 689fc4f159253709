//! WAL checkpoints off the request path: a thread with its own connection copies the WAL
//! into the database file, so that no write's answer waits for a whole checkpoint.
//!
//! SQLite checkpoints by itself at the end of the commit that takes the WAL past 1,000 pages,
//! inside the call that committed: with `synchronous=NORMAL` a commit does not sync, but that
//! checkpoint syncs the WAL and then the database file, which strace measured at 10–28 ms on
//! this project's VM, paid by about one `record_prediction` in 300. Here the serving
//! connection's WAL hook (which replaces SQLite's automatic checkpoint) only notes the WAL's
//! size and wakes this thread, which runs a `PASSIVE` checkpoint each [`CHECKPOINT_PAGES`]:
//! it never takes the write lock and never waits, so writes go on while it copies and syncs.
//! It starts once the writes pause for [`QUIET`] (its sync of the file stalls the WAL appends
//! of writes made meanwhile), or without waiting once the WAL passes [`PATIENCE_PAGES`].
//!
//! A WAL restarts from its beginning only at a write that finds every page of it copied;
//! writes committing during a checkpoint keep it a few pages short, so the WAL would grow.
//! Past [`RESTART_PAGES`] the thread catches up (more passes, then a last one of at most
//! [`CATCH_UP_PAGES`] holding the serving connection) so that the next write restarts it.
//! That last pass and the sync of the new WAL header are what a write may still wait for,
//! once per [`RESTART_PAGES`] written. Past [`WAL_BOUND_PAGES`] the catch-up runs whatever is
//! left (on a host too loaded for the passes to get close to a busy writer), and when a reader
//! in another process keeps pages from being copied, a `TRUNCATE` checkpoint waits for that
//! reader and empties the WAL.
//!
//! The copying runs on a short-lived thread under Linux's `SCHED_IDLE` policy
//! ([`in_idle_time`]): it gets a CPU only when no thread of normal policy wants one, and a
//! server thread that wakes on its CPU preempts it at once. At nice 10 (inherited from the
//! thread that opens the store) a pass held a CPU for up to 3 ms while a write's next step
//! waited behind it with the other CPU idle; under `SCHED_IDLE`, p99 of `log_lesson_learned`
//! and `reset_meta_learning` went from 3.8–5.5 × p50 to 2.9–3.7 × (docs/PERFORMANCE.md). The
//! steps that hold up this process's writes (the catch-up on the serving connection, a
//! `TRUNCATE` checkpoint) stay on this thread, under the normal policy, so that a busy host
//! can delay a copy but never starve a step the writes wait for.
//!
//! Durability does not change: a commit is in the WAL (in the OS page cache) when it
//! returns, as before; a checkpoint only moves committed pages into the main file.
//!
//! Nothing is written into a damaged file or one still under its background integrity check:
//! the thread skips its checkpoint then (the pages stay in the WAL), and its connection never
//! checkpoints when it closes; the store's own connection, closed last, does that as before.

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use rusqlite::{Connection, OpenFlags};

use super::companions::Companions;
use super::health::Health;

/// WAL pages after which a commit wakes the checkpoint thread: SQLite's own default for its
/// automatic checkpoint (1,000 pages, about 4 MiB).
///
/// The page bounds only make sense in the order `CHECKPOINT_PAGES` < [`PATIENCE_PAGES`] <
/// [`RESTART_PAGES`] < [`WAL_BOUND_PAGES`]: a patience at or below this one never waits for
/// [`QUIET`]. Measurements behind each: docs/PERFORMANCE.md.
pub const CHECKPOINT_PAGES: u32 = 1_000;

/// WAL pages past which the thread makes sure the WAL restarts from its beginning (8,192
/// pages: 32 MiB at the default 4 KiB page). Each restart costs the write after it a sync of
/// the WAL header, and a write may wait for the catch-up checkpoint before it, so restarts
/// are kept rare; the price is a WAL file of up to about this size while the server runs
/// (the last connection to close removes it).
pub const RESTART_PAGES: u32 = 8_192;

/// WAL pages past which the thread, after a `PASSIVE` checkpoint that could not finish, runs a
/// `TRUNCATE` checkpoint (16,384 pages: 64 MiB at the default 4 KiB page), and the size a WAL
/// file is cut back to when it restarts (`journal_size_limit`).
pub const WAL_BOUND_PAGES: u32 = 16_384;

/// Unlocked `PASSIVE` checkpoints in a row at most, each copying what the writes committed
/// during the one before.
const UNLOCKED_PASSES: usize = 4;

/// The catch-up checkpoint, which holds the serving connection, runs only when at most this
/// many pages are left to copy.
const CATCH_UP_PAGES: i64 = 64;

/// How long the serving connection must have committed nothing before a checkpoint of fewer
/// than [`RESTART_PAGES`] starts. On this project's VM the writes answered while a
/// checkpoint's syncs are under way are the slow ones (in a traced burst, 14 of the 18 calls
/// over 1 ms overlapped a sync, which was under way 13 % of the time; see docs/PERFORMANCE.md),
/// so checkpoints wait for a pause: an agent pauses seconds between calls, and a burst of
/// back-to-back writes is checkpointed after it; a burst that takes the WAL past
/// [`PATIENCE_PAGES`] is checkpointed every [`CHECKPOINT_PAGES`] without waiting, as before.
pub const QUIET: Duration = Duration::from_millis(10);

/// WAL pages past which checkpoints no longer wait for [`QUIET`] (4,096 pages: 16 MiB at the
/// default 4 KiB page), so that a long burst's last checkpoint before the WAL restarts
/// ([`RESTART_PAGES`]) stays small. A larger bound only moves the stall: 16,384 removed it
/// from bursts that stayed under it, and a burst that passed it paid one checkpoint of 64 MiB
/// of WAL, up to 50 ms (docs/PERFORMANCE.md).
pub const PATIENCE_PAGES: u32 = 4_096;

/// What the serving connection's WAL hook and the thread share.
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    /// Pages in the WAL after the last commit seen by the hook.
    wal_pages: u32,
    /// When the hook last saw a commit.
    last_commit: std::time::Instant,
    /// The thread waits for [`QUIET`]: a commit wakes it only past [`PATIENCE_PAGES`].
    waiting_for_quiet: bool,
    /// Set by [`Checkpointer::stop`].
    stop: bool,
}

/// The background checkpoint thread of one store; stopped and joined by [`Checkpointer::stop`]
/// (the store does that before its own connection closes).
pub(super) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Install the WAL hook on `serving` (this turns off SQLite's automatic checkpoint on it)
    /// and start the thread on the file at `path`; `sync_dir`: first sync the directory of a
    /// file just created ([`super::create`]).
    ///
    /// # Errors
    /// The thread could not be started, or the hook not installed.
    pub(super) fn start(
        serving: &Arc<Mutex<Connection>>,
        path: &Path,
        sync_dir: bool,
        health: Arc<Health>,
        companions: Companions,
        busy_timeout: Duration,
    ) -> std::io::Result<Checkpointer> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                wal_pages: 0,
                last_commit: std::time::Instant::now(),
                waiting_for_quiet: false,
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let hook = shared.clone();
        serving
            .lock()
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: i32| {
                let pages = u32::try_from(pages).unwrap_or(0);
                let mut state = hook.state.lock();
                state.wal_pages = pages;
                state.last_commit = std::time::Instant::now();
                if pages >= CHECKPOINT_PAGES
                    && (!state.waiting_for_quiet || pages >= PATIENCE_PAGES)
                {
                    hook.wake.notify_one();
                }
                Ok(())
            }))
            .map_err(std::io::Error::other)?;
        let thread_shared = shared.clone();
        let path = path.to_path_buf();
        let serving = serving.clone();
        let thread = std::thread::Builder::new()
            .name("wal-checkpoint".into())
            .spawn(move || {
                if sync_dir {
                    sync_directory(&path);
                }
                run(
                    &thread_shared,
                    &serving,
                    &path,
                    &health,
                    &companions,
                    busy_timeout,
                );
            })?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Pages in the WAL after the serving connection's last commit (every process's pages:
    /// the WAL's size then, not what this process wrote).
    pub(super) fn wal_pages(&self) -> u32 {
        self.shared.state.lock().wal_pages
    }

    /// Stop the thread and wait for it (a checkpoint under way finishes first).
    pub(super) fn stop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The thread: wait until a commit leaves [`CHECKPOINT_PAGES`] more in the WAL than the last
/// checkpoint saw and the writes pause for [`QUIET`] (or the WAL reaches [`PATIENCE_PAGES`]),
/// then checkpoint; until stopped.
fn run(
    shared: &Shared,
    serving: &Mutex<Connection>,
    path: &Path,
    health: &Health,
    companions: &Companions,
    busy_timeout: Duration,
) {
    let mut conn: Option<Connection> = None;
    // WAL pages when the last checkpoint ended: the WAL was restarted since when a commit
    // reports fewer.
    let mut seen: u32 = 0;
    loop {
        {
            let mut state = shared.state.lock();
            loop {
                if state.stop {
                    break;
                }
                let pages = state.wal_pages;
                let grown = if pages < seen { pages } else { pages - seen };
                if pages >= CHECKPOINT_PAGES && grown >= CHECKPOINT_PAGES {
                    let quiet = state.last_commit.elapsed();
                    if quiet >= QUIET || pages >= PATIENCE_PAGES {
                        state.waiting_for_quiet = false;
                        break;
                    }
                    state.waiting_for_quiet = true;
                    shared.wake.wait_for(&mut state, QUIET - quiet);
                    continue;
                }
                state.waiting_for_quiet = false;
                shared.wake.wait(&mut state);
            }
            if state.stop {
                break;
            }
        }
        // Damaged, still being checked, or its -wal or -shm deleted (the store's close
        // decides what to do with the WAL then): write nothing into the file.
        if health.damage().is_some()
            || health.writable(Duration::ZERO).is_err()
            || companions.check().is_err()
        {
            seen = shared.state.lock().wal_pages;
            continue;
        }
        if conn.is_none() {
            conn = open(path, busy_timeout)
                .map_err(|e| tracing::warn!(error = %e, "cannot open the checkpoint connection"))
                .ok();
        }
        if conn.is_none() {
            seen = shared.state.lock().wal_pages;
            continue;
        }
        match checkpoint(&mut conn, serving, shared) {
            Ok(log) => seen = log,
            Err(e) => {
                seen = shared.state.lock().wal_pages;
                tracing::warn!(error = %e, "background WAL checkpoint failed");
            }
        }
    }
    if let Some(c) = conn {
        // The store's own connection closes after this one and checkpoints then, unless the
        // file is damaged; this one never does.
        let _ = c.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        );
    }
}

/// Why a background checkpoint stopped short. The thread logs it and tries again after the
/// next [`CHECKPOINT_PAGES`]; without its connection (lost with a copy thread that could not
/// start or panicked), it opens a new one first.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot start the thread that copies pages: {0}")]
    Spawn(std::io::Error),
    #[error("the thread that copied pages panicked")]
    Panicked,
    #[error("the checkpoint connection was lost with a copy thread")]
    Lost,
}

/// Run `job` on a new thread under `SCHED_IDLE` (Linux; elsewhere, or when refused, under the
/// policy and nice value it inherits) and wait for its result. Entering `SCHED_IDLE` needs no
/// privilege, but leaving it does (past `RLIMIT_NICE`), hence a thread of its own per job.
///
/// # Errors
/// The thread could not be started ([`Failure::Spawn`]; `job` is dropped) or panicked.
fn in_idle_time<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Result<T, Failure> {
    std::thread::Builder::new()
        .name("wal-copy".into())
        .spawn(move || {
            #[cfg(target_os = "linux")]
            {
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: `param` is valid for the call; pid 0 is the calling thread.
                if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
                    tracing::debug!(error = %std::io::Error::last_os_error(),
                        "checkpoint copy left at its inherited priority");
                }
            }
            job()
        })
        .map_err(Failure::Spawn)?
        .join()
        .map_err(|_| Failure::Panicked)
}

/// A `PASSIVE` checkpoint on the thread's own connection, run [`in_idle_time`]. The connection
/// goes to the copy thread and comes back with the result; it is lost (left `None`) when that
/// thread could not start or panicked.
///
/// # Errors
/// SQL failure, or [`in_idle_time`]'s.
fn passive_in_idle_time(conn: &mut Option<Connection>) -> Result<(i64, i64, i64), Failure> {
    let c = conn.take().ok_or(Failure::Lost)?;
    let (c, result) = in_idle_time(move || {
        let result = wal_checkpoint(&c, "PASSIVE");
        (c, result)
    })?;
    *conn = Some(c);
    Ok(result?)
}

/// Sync the directory holding `path`, so that a new file's name survives a power cut.
fn sync_directory(path: &Path) {
    if let Some(dir) = path.parent()
        && let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all())
    {
        tracing::warn!(directory = %dir.display(), error = %e, "cannot sync the directory");
    }
}

fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    conn.busy_timeout(busy_timeout)?;
    // Never checkpoint from a commit of this connection (it commits nothing anyway).
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // Same as the serving connection: the checkpoint syncs the WAL, then the database file.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

/// A `PASSIVE` checkpoint on the thread's own connection; past [`RESTART_PAGES`], more
/// passes and a catch-up so that the WAL restarts; past [`WAL_BOUND_PAGES`], a catch-up
/// however much is left, or a `TRUNCATE` checkpoint when pages could not be copied (a reader
/// in another process holds them). Returns the WAL's pages at the end.
///
/// Only a checkpoint that copied every page of the WAL lets the next write restart the WAL
/// from its beginning; otherwise it grows. This process's writes go on committing while a
/// checkpoint copies and syncs, so a pass ends short; the next pass copies what came
/// meanwhile, and so on until at most [`CATCH_UP_PAGES`] are left, which the catch-up copies
/// on the serving connection with its lock held (no write of this process lands meanwhile)
/// and outside any transaction. The catch-up, a few pages and two syncs, and the sync of the
/// WAL header by the write that restarts the WAL, are what a write may wait for: once per
/// [`RESTART_PAGES`] written, instead of a whole checkpoint once per 1,000 pages.
fn checkpoint(
    conn: &mut Option<Connection>,
    serving: &Mutex<Connection>,
    shared: &Shared,
) -> Result<u32, Failure> {
    let (mut busy, mut log, mut done) = passive_in_idle_time(conn)?;
    tracing::debug!(busy, log, done, "passive WAL checkpoint");
    if log >= i64::from(RESTART_PAGES) {
        for pass in 1..=UNLOCKED_PASSES {
            if busy != 0 || done < log {
                // Another process's reader holds old pages: catching up would not help.
                break;
            }
            let committed = i64::from(shared.state.lock().wal_pages);
            if committed <= log {
                break;
            }
            if committed - log <= CATCH_UP_PAGES {
                let serving = serving.lock();
                if serving.is_autocommit() {
                    (busy, log, done) = wal_checkpoint(&serving, "PASSIVE")?;
                    tracing::debug!(busy, log, done, "catch-up WAL checkpoint");
                }
                break;
            }
            if pass < UNLOCKED_PASSES {
                (busy, log, done) = passive_in_idle_time(conn)?;
                tracing::debug!(busy, log, done, "passive WAL checkpoint, again");
            }
        }
    }
    if log > i64::from(WAL_BOUND_PAGES) {
        if busy == 0 && done >= log {
            // The passes could not get within CATCH_UP_PAGES of a busy writer (a loaded
            // host): catch up with whatever is left, holding the serving connection.
            let serving = serving.lock();
            if serving.is_autocommit() {
                (busy, log, done) = wal_checkpoint(&serving, "PASSIVE")?;
                tracing::info!(busy, log, done, "WAL past its bound: catch-up checkpoint");
            }
        }
        if busy != 0 || done < log {
            let own = conn.as_ref().ok_or(Failure::Lost)?;
            let (busy, pages, done) = wal_checkpoint(own, "TRUNCATE")?;
            tracing::info!(
                busy,
                pages,
                done,
                "WAL past its bound: truncating checkpoint"
            );
            log = pages;
        }
    }
    Ok(u32::try_from(log.max(0)).unwrap_or(u32::MAX))
}

/// `PRAGMA wal_checkpoint(mode)`: (1 when it could not finish, WAL pages, pages copied).
fn wal_checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<(i64, i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy.
    fn policy() -> i32 {
        // SAFETY: pid 0 is the calling thread; no memory is passed.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn a_copy_runs_under_sched_idle_and_the_caller_keeps_its_policy() {
        let before = policy();
        assert_ne!(before, libc::SCHED_IDLE);
        assert_eq!(in_idle_time(policy).unwrap(), libc::SCHED_IDLE);
        assert_eq!(policy(), before);
    }

    #[test]
    fn a_passive_pass_in_idle_time_copies_the_wal_and_gives_the_connection_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let writer = Connection::open(&path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer
            .execute_batch("CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(100000));")
            .unwrap();
        let mut own = Some(open(&path, Duration::from_secs(1)).unwrap());
        let (busy, log, done) = passive_in_idle_time(&mut own).unwrap();
        assert_eq!(busy, 0);
        assert!(log > 20, "WAL pages: {log}");
        assert_eq!(done, log, "every page copied");
        assert!(own.is_some(), "the connection came back");
        // A panicking copy loses the connection, reported as such.
        assert!(matches!(
            in_idle_time(|| panic!("test")),
            Err::<(), _>(Failure::Panicked)
        ));
    }
}

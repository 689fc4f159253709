//! The SQLite backend: one database file (WAL journal) shared safely by several server
//! processes on one machine. Every write runs inside `BEGIN IMMEDIATE`; schema changes are the
//! numbered [`migrate::MIGRATIONS`] keyed by `PRAGMA user_version`, applied at start-up inside
//! one transaction. The SQL of each family lives in the family's own module (`meta.rs`, …).

use companions::Companions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::Connection;

pub(crate) mod admin;
pub(crate) mod atc;
pub(crate) mod attempts;
pub(crate) mod beliefs;
pub(crate) mod checkpoint;
mod companions;
mod create;
pub(crate) mod delta_sc;
pub(crate) mod directives;
mod file;
pub(crate) mod health;
pub(crate) mod lesson_vectors;
pub(crate) mod lessons;
pub(crate) mod meta;
pub(crate) mod migrate;
pub(crate) mod open;
pub(crate) mod outcomes;
pub(crate) mod projects;
pub(crate) mod recurrences;
pub(crate) mod request_keys;

pub use migrate::SCHEMA_VERSION;
pub(crate) use migrate::migrate;

use super::{
    BUSY_TIMEOUT, CHECK_WAIT, Db, DbPath, OpenOptions, StoreError, family_key, retention_now,
};
use crate::service::{CachedFamily, Versions};

/// Prepared statements kept per connection (see [`Connection::set_prepared_statement_cache_capacity`]).
const STATEMENT_CACHE: usize = 128;

/// The SQLite store: one connection behind a mutex.
pub(crate) struct SqliteStore {
    /// Shared with the checkpoint thread, which takes it for its short catch-up checkpoint.
    conn: std::sync::Arc<Mutex<Connection>>,
    /// Set while [`Store::batch`] holds a transaction open: [`Store::write`] then nests in a
    /// savepoint and [`Store::read`] reads inside that transaction. Changed only with `conn`
    /// locked.
    in_batch: AtomicBool,
    /// Set when SQLite ended the batch's transaction by itself (a full disk, an I/O error):
    /// the failure, which every later write of the batch and the batch itself report.
    batch_lost: Mutex<Option<String>>,
    /// Damage found, or a background integrity check running: see [`health`].
    health: std::sync::Arc<health::Health>,
    /// The background WAL checkpoint thread (files only): see [`checkpoint`].
    checkpointer: Option<checkpoint::Checkpointer>,
    /// The file's `-wal` and `-shm` as opened, checked before each write (files only).
    companions: Option<Companions>,
    /// Held from a close that found the companions deleted until after `conn` has closed
    /// (fields drop in order): see [`Drop`].
    lock_out: Mutex<Option<companions::Exclusive>>,
}

/// How long [`SqliteStore::settle_wal`] tries while another checkpoint or an old snapshot of
/// another process keeps it from finishing.
const SETTLE_WAIT: Duration = Duration::from_millis(500);

/// The serving connection's busy handler: sleep 1 ms and try again, for up to
/// [`BUSY_TIMEOUT`] (`attempts` counts the calls for this wait, from 0).
fn retry_every_millisecond(attempts: i32) -> bool {
    if u128::try_from(attempts).unwrap_or(0) >= BUSY_TIMEOUT.as_millis() {
        return false;
    }
    std::thread::sleep(Duration::from_millis(1));
    true
}

/// Undoes an open transaction or savepoint if the code inside it unwinds (a handler panic),
/// so that the connection is never left inside a transaction nobody will end.
struct TxGuard<'a> {
    conn: &'a Connection,
    undo: &'static str,
    armed: bool,
}

impl Drop for TxGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.conn.execute_batch(self.undo);
        }
    }
}

impl SqliteStore {
    /// Open (creating if needed) the database at `path` and migrate it to [`SCHEMA_VERSION`].
    ///
    /// Nothing is written to an existing file before it has been accepted: it must be empty,
    /// or ours ([`APPLICATION_ID`], or an unmarked file of ours from before it, which is then
    /// marked), not newer than this binary, and pass `PRAGMA quick_check` (files above
    /// [`INLINE_CHECK_MAX_BYTES`] that need no schema change are checked in the background,
    /// and writes wait for that check). A refused file is left byte-identical, without a
    /// `-wal` or `-shm` that was not there before.
    ///
    /// The path is a file path, never an SQLite URI; symbolic links are resolved first, and a
    /// new file is created with mode 0600 (a new directory with 0700) where the link points.
    /// WAL journal, `synchronous=NORMAL` (a killed process loses nothing committed; see the
    /// README), [`BUSY_TIMEOUT`], foreign keys on.
    ///
    /// # Errors
    /// [`StoreError::NotAFile`], [`StoreError::Uri`], [`StoreError::NotADatabase`],
    /// [`StoreError::Foreign`], [`StoreError::TooNew`], [`StoreError::Damaged`] (these leave
    /// the file byte-identical), [`StoreError::Unwritable`], or [`StoreError::Sqlite`].
    pub(crate) fn open_with(
        path: &DbPath,
        options: &OpenOptions,
    ) -> Result<SqliteStore, StoreError> {
        // Switching a new file to WAL needs a lock that SQLite does not wait for with the busy
        // handler; when several servers create one database at the same moment, the losers get
        // SQLITE_BUSY at start-up. Retry the whole open for as long as a write would wait.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(5);
        loop {
            match Self::open_once(path, options) {
                Err(StoreError::Sqlite(e))
                    if is_busy(&e) && std::time::Instant::now() + pause < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    fn open_once(path: &DbPath, options: &OpenOptions) -> Result<SqliteStore, StoreError> {
        let shown = path.display();
        let (mut conn, check, real, fresh) = match path {
            DbPath::Memory => (
                Connection::open_in_memory()?,
                open::Check::Done,
                None,
                false,
            ),
            DbPath::Postgres(_) => {
                return Err(StoreError::Unwritable {
                    path: shown,
                    reason: "a PostgreSQL URL is not an SQLite file".into(),
                });
            }
            DbPath::File(p) => {
                if open::looks_like_uri(&p.to_string_lossy()) {
                    let plain = shown[5..]
                        .split(['?', '#'])
                        .next()
                        .unwrap_or("")
                        .to_string();
                    return Err(StoreError::Uri { path: shown, plain });
                }
                let real = crate::files::resolve_path(p).map_err(|e| StoreError::Unwritable {
                    path: shown.clone(),
                    reason: e.to_string(),
                })?;
                let (conn, check, fresh) =
                    open::open_file(&real, &shown, options.inline_check_max_bytes)?;
                (conn, check, Some(real), fresh)
            }
        };
        // Before the first statement that writes: several servers may open a new file at the
        // same moment, and the first read must wait for another's schema transaction, not fail.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Then a handler that retries every millisecond: SQLite's own sleeps up to 100 ms
        // between attempts, so a writer waiting for another process's short transactions (an
        // import's steps) lost the race to the next one again and again.
        conn.busy_handler(Some(retry_every_millisecond))?;
        if real.is_some() {
            let mode: String = conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                .map_err(|e| open::classify(&shown, e))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Unwritable {
                    path: shown,
                    reason: format!("could not switch to WAL journal (got {mode})"),
                });
            }
        }
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")?;
        // Every statement on a per-call path is prepared once and kept: the store has about
        // 60, more than rusqlite's default cache of 16, which re-parsed SQL on every call.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        migrate(&conn).map_err(|e| open::classify(&shown, e))?;
        let checking = check == open::Check::Background;
        let health = std::sync::Arc::new(health::Health::new(shown.clone(), checking));
        let conn = std::sync::Arc::new(Mutex::new(conn));
        let companions = real.as_deref().map(|r| Companions::record(r, &shown));
        let checkpointer = match (&real, &companions) {
            (Some(real), Some(companions)) => {
                // On restart after a checkpoint, a WAL file that grew past the bound (one large
                // transaction) is truncated back to it.
                {
                    let conn = conn.lock();
                    let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
                    let limit = i64::from(checkpoint::WAL_BOUND_PAGES) * page;
                    conn.pragma_update(None, "journal_size_limit", limit)?;
                }
                let started = checkpoint::Checkpointer::start(
                    &conn,
                    real,
                    fresh,
                    health.clone(),
                    companions.clone(),
                    BUSY_TIMEOUT,
                )
                .map_err(|e| StoreError::Unwritable {
                    path: shown.clone(),
                    reason: format!("cannot start the WAL checkpoint thread: {e}"),
                })?;
                Some(started)
            }
            _ => None,
        };
        if let (true, Some(real)) = (checking, real) {
            spawn_background_check(real, health.clone())?;
        }
        Ok(SqliteStore {
            conn,
            in_batch: AtomicBool::new(false),
            batch_lost: Mutex::new(None),
            health,
            checkpointer,
            companions,
            lock_out: Mutex::new(None),
        })
    }

    /// Run `f` inside one `BEGIN IMMEDIATE` transaction: committed when `f` returns `Ok`,
    /// rolled back otherwise (also when `f` panics).
    ///
    /// Inside [`Store::batch`] the transaction is a savepoint of the batch's: `f`'s changes are
    /// undone alone when it fails, and become durable when the batch commits.
    ///
    /// Nothing is written to a damaged file: a write is refused once damage is known, and
    /// when SQLite reports damage while `f` runs (even if `f` handles the error itself), `f`'s
    /// changes are rolled back and every later write refused. A write waits for a background
    /// integrity check (up to [`CHECK_WAIT`]). When SQLite ends the transaction by itself
    /// after a failure (a full disk), the error names that failure.
    ///
    /// # Errors
    /// `f`'s error, or the store error of beginning or committing ([`StoreError::Damaged`],
    /// [`StoreError::Checking`], [`StoreError::RolledBack`], [`StoreError::Sqlite`]).
    pub(crate) fn write<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let in_batch = self.in_batch.load(Ordering::Relaxed);
        if !in_batch {
            // Before the lock: a read may run while the background check finishes.
            self.health.writable(CHECK_WAIT).map_err(E::from)?;
            self.companions_in_place().map_err(E::from)?;
        }
        let conn = self.conn.lock();
        let (begin, end, undo) = if in_batch {
            if conn.is_autocommit() && self.batch_lost.lock().is_none() {
                // The group's transaction ended without a write noticing (a read met the
                // failure): nothing of the group is left to add to.
                *self.batch_lost.lock() = Some(health::rollback_cause(|| {
                    "the transaction ended unexpectedly".into()
                }));
            }
            if let Some(cause) = self.batch_lost.lock().clone() {
                return Err(E::from(StoreError::RolledBack { cause }));
            }
            self.health.writable(Duration::ZERO).map_err(E::from)?;
            (
                "SAVEPOINT write",
                "RELEASE write",
                "ROLLBACK TO write; RELEASE write",
            )
        } else {
            ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
        };
        health::reset();
        self.health.serve_here();
        conn.execute_batch(begin)
            .map_err(|e| E::from(StoreError::from(e)))?;
        let mut guard = TxGuard {
            conn: &conn,
            undo,
            armed: true,
        };
        let db = Db::sqlite(&conn);
        let out = f(&db);
        if let Some(reason) = health::damage() {
            // Undo what `f` did, whatever it answered, and write nothing more.
            drop(guard);
            return Err(E::from(self.health.mark_damaged(&reason)));
        }
        if conn.is_autocommit() {
            // SQLite rolled the transaction back by itself (a full disk, an I/O error): `f`'s
            // changes are gone whatever it answered, and so are the batch's.
            guard.armed = false;
            let cause = health::rollback_cause(|| "the transaction ended unexpectedly".into());
            if in_batch {
                *self.batch_lost.lock() = Some(cause.clone());
            }
            return Err(E::from(StoreError::RolledBack { cause }));
        }
        let out = match out {
            Ok(v) => match conn.execute_batch(end) {
                Ok(()) => Ok(v),
                Err(e) => Err(self.failed_end(&conn, e)),
            },
            Err(e) => Err(e),
        };
        guard.armed = out.is_err();
        drop(guard);
        out.map_err(|e| match health::damage() {
            Some(reason) => E::from(self.health.mark_damaged(&reason)),
            None => e,
        })
    }

    /// Refuse to write when the file's `-wal` or `-shm` was deleted or replaced since open.
    fn companions_in_place(&self) -> Result<(), StoreError> {
        self.companions.as_ref().map_or(Ok(()), Companions::check)
    }

    /// The error of a failed `COMMIT` or `RELEASE`: the failure that ended the transaction
    /// when SQLite rolled it back by itself, else the commit's own.
    fn failed_end<E: From<StoreError>>(&self, conn: &Connection, e: rusqlite::Error) -> E {
        let e = StoreError::from(e);
        if let Some(reason) = health::damage() {
            return E::from(self.health.mark_damaged(&reason));
        }
        if conn.is_autocommit() {
            let cause = health::rollback_cause(|| e.to_string());
            return E::from(StoreError::RolledBack { cause });
        }
        E::from(e)
    }

    /// Run `f` inside a read transaction (a consistent snapshot of committed data); inside a
    /// [`Store::batch`], inside the batch's transaction.
    ///
    /// When SQLite reports damage while `f` runs, `f`'s answer is not served (whatever `f`
    /// made of the error): the call fails with [`StoreError::Damaged`], and every later write
    /// is refused.
    ///
    /// # Errors
    /// `f`'s error, [`StoreError::Damaged`], or the store error of beginning the transaction.
    pub(crate) fn read<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let conn = self.conn.lock();
        let db = Db::sqlite(&conn);
        if self.in_batch.load(Ordering::Relaxed) {
            let out = f(&db);
            return match health::damage() {
                Some(reason) => Err(E::from(self.health.mark_damaged(&reason))),
                None => out,
            };
        }
        health::reset();
        self.health.serve_here();
        conn.prepare_cached("BEGIN DEFERRED")
            .and_then(|mut s| s.execute([]))
            .map_err(|e| E::from(StoreError::from(e)))?;
        let out = f(&db);
        let _ = conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]));
        match health::damage() {
            Some(reason) => Err(E::from(self.health.mark_damaged(&reason))),
            None => out,
        }
    }

    /// Group commit: run `f`, which makes several [`Store::write`] calls, inside one
    /// `BEGIN IMMEDIATE` transaction, so that their changes reach the disk in one commit.
    /// Each write still succeeds or fails alone (a savepoint each); the commit at the end makes
    /// them all durable together. Nothing else may use the store while `f` runs (the server's
    /// sequencer guarantees it: reads wait for the writes before them).
    ///
    /// When damage is found while the group runs, or SQLite rolls the group's transaction back
    /// by itself (a full disk), nothing of the group is kept and the error says why.
    ///
    /// # Errors
    /// The store error of beginning or committing ([`StoreError::Damaged`],
    /// [`StoreError::Checking`], [`StoreError::RolledBack`], [`StoreError::Sqlite`]); on a
    /// failed commit none of `f`'s writes is kept, and the caller must report every one of
    /// them as failed.
    pub(crate) fn batch<T>(&self, f: impl FnOnce() -> T) -> Result<T, StoreError> {
        self.health.writable(CHECK_WAIT)?;
        self.companions_in_place()?;
        {
            let conn = self.conn.lock();
            health::reset();
            self.health.serve_here();
            conn.execute_batch("BEGIN IMMEDIATE")?;
            self.in_batch.store(true, Ordering::Relaxed);
            *self.batch_lost.lock() = None;
        }
        struct EndBatch<'a>(&'a SqliteStore);
        impl Drop for EndBatch<'_> {
            fn drop(&mut self) {
                let conn = self.0.conn.lock();
                self.0.in_batch.store(false, Ordering::Relaxed);
                if !conn.is_autocommit() {
                    // Reached only when `f` unwound: nothing of it is kept.
                    let _ = conn.execute_batch("ROLLBACK");
                }
            }
        }
        let end = EndBatch(self);
        let out = f();
        let committed = {
            let conn = self.conn.lock();
            let lost = self.batch_lost.lock().take();
            if let Some(cause) = lost {
                Err(StoreError::RolledBack { cause })
            } else if let Some(reason) = self.health.damage() {
                let _ = conn.execute_batch("ROLLBACK");
                Err(self.health.damaged_error(&reason))
            } else if conn.is_autocommit() {
                Err(StoreError::RolledBack {
                    cause: health::rollback_cause(|| "the transaction ended unexpectedly".into()),
                })
            } else {
                match conn.execute_batch("COMMIT") {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let e: StoreError = self.failed_end(&conn, e);
                        if !conn.is_autocommit() {
                            let _ = conn.execute_batch("ROLLBACK");
                        }
                        Err(e)
                    }
                }
            }
        };
        drop(end);
        committed.map(|()| out)
    }

    /// Copy the whole WAL into the database file, so that the next write starts it afresh:
    /// see [`Store::settle_wal`](super::Store::settle_wal).
    ///
    /// # Errors
    /// [`StoreError`] when a checkpoint fails; one that cannot finish within [`SETTLE_WAIT`]
    /// (another checkpoint, or another process's reader on an old snapshot) is not an error.
    pub(crate) fn settle_wal(&self) -> Result<(), StoreError> {
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(()); // in memory
        };
        if checkpointer.wal_pages() < checkpoint::CHECKPOINT_PAGES
            || self.health.writable(Duration::ZERO).is_err()
        {
            // Small enough, or damaged or under the background check (nothing is copied
            // into the file then).
            return Ok(());
        }
        self.companions_in_place()?;
        let mut conn = self.conn.lock();
        // No busy handler meanwhile: the loop below retries, and a checkpoint never waits in
        // SQLite for another process.
        conn.busy_handler(None::<fn(i32) -> bool>)?;
        // PASSIVE checkpoints only: they never hold off a writer. Once one has copied every
        // page of the WAL (a server's write meanwhile leaves a few, which the next pass copies
        // in a moment), the next write of any process starts the WAL afresh. Busy (another
        // checkpoint under way): try again. For up to SETTLE_WAIT, so that the caller cannot
        // outrun the checkpoints; then it goes on, and the next call tries again.
        let settled = (|| {
            let deadline = std::time::Instant::now() + SETTLE_WAIT;
            loop {
                let (busy, log, done) = conn
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                        ))
                    })
                    .map_err(StoreError::from)?;
                tracing::debug!(busy, log, done, "passive WAL checkpoint between steps");
                if (busy == 0 && done >= log) || std::time::Instant::now() >= deadline {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })();
        conn.busy_handler(Some(retry_every_millisecond))?;
        settled
    }

    /// Delete meta-learning events older than `days` days, or defer that to the background
    /// integrity check while it runs (then 0).
    ///
    /// # Errors
    /// [`StoreError`] when the delete fails.
    pub(crate) fn apply_retention(&self, days: u32) -> Result<usize, StoreError> {
        match self.health.defer_retention(days) {
            Some(days) => self.write(|db| retention_now(db, days)),
            None => Ok(0),
        }
    }
}

impl SqliteStore {
    /// At close, when the `-wal` or `-shm` was deleted under this server: with every other
    /// process locked out of the file (`gone` is `Ok`), copy the deleted WAL, which may hold
    /// writes this server answered, into the file; otherwise (another process has the file
    /// open, or the copy fails) close without writing into it, and say what is lost.
    fn save_deleted_wal(&self, gone: Result<companions::Exclusive, u32>) {
        let conn = self.conn.lock();
        let shown = self.companions.as_ref().map_or("", Companions::shown);
        match gone {
            Ok(lock) => {
                let copied = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(2)?))
                });
                *self.lock_out.lock() = Some(lock);
                match copied {
                    Ok((0, pages)) => tracing::warn!(
                        database = %shown,
                        pages,
                        "the -wal or -shm was deleted under this server: copied its WAL into the \
                         file before closing, so the writes it answered are kept"
                    ),
                    outcome => {
                        let _ = conn.set_db_config(
                            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                            true,
                        );
                        tracing::error!(
                            database = %shown,
                            ?outcome,
                            "the -wal or -shm was deleted under this server and its WAL could \
                             not be copied into the file: writes since the last checkpoint are \
                             lost"
                        );
                    }
                }
            }
            Err(pid) => {
                let _ = conn.set_db_config(
                    rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                    true,
                );
                tracing::error!(
                    database = %shown,
                    pid,
                    "the -wal or -shm was deleted under this server and another process has the \
                     file open: nothing is written into it, and writes since the last \
                     checkpoint are lost"
                );
            }
        }
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // The checkpoint thread's connection closes first, so that this one is the last and
        // checkpoints (and removes the WAL) as it closes.
        if let Some(c) = &mut self.checkpointer {
            c.stop();
        }
        if let Some(gone) = self
            .companions
            .as_ref()
            .and_then(Companions::lock_out_others_if_gone)
        {
            self.save_deleted_wal(gone);
        }
        if self.health.damage().is_some() {
            // Closing the last connection would checkpoint the WAL into the damaged file.
            let _ = self.conn.lock().set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            );
        }
    }
}

/// Check a large file for damage in the background: a connection of its own runs
/// `PRAGMA quick_check`; writes wait until it has passed ([`health::Health::writable`]), then
/// the event retention deferred by [`Store::apply_retention`] runs on that connection.
fn spawn_background_check(
    real: PathBuf,
    health: std::sync::Arc<health::Health>,
) -> Result<(), StoreError> {
    let shown = real.display().to_string();
    let path = shown.clone();
    std::thread::Builder::new()
        .name("integrity-check".into())
        .spawn(move || {
            let started = std::time::Instant::now();
            let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = Connection::open_with_flags(&real, flags).map_err(StoreError::from);
            let outcome = conn.as_ref().map_err(|e| e.to_string()).and_then(|conn| {
                conn.busy_timeout(BUSY_TIMEOUT)
                    .and_then(|()| conn.execute_batch("PRAGMA query_only = ON"))
                    .map_err(|e| e.to_string())?;
                match open::quick_check(conn, &shown) {
                    Ok(()) => Ok(()),
                    Err(StoreError::Damaged { reason, .. }) => Err(reason),
                    Err(e) => Err(e.to_string()),
                }
            });
            tracing::info!(
                database = %shown,
                seconds = started.elapsed().as_secs_f64(),
                passed = outcome.is_ok(),
                "background integrity check done"
            );
            let retention = health.check_done(outcome);
            if let (Some(days), Ok(conn)) = (retention, &conn) {
                let applied = conn
                    .execute_batch("PRAGMA query_only = OFF; BEGIN IMMEDIATE")
                    .map_err(StoreError::from)
                    .and_then(|()| retention_now(&Db::sqlite(conn), days))
                    .and_then(|n| {
                        conn.execute_batch("COMMIT")?;
                        Ok(n)
                    });
                match applied {
                    Ok(n) => tracing::info!(deleted = n, days, "old events deleted"),
                    Err(e) => {
                        let _ = conn.execute_batch("ROLLBACK");
                        tracing::warn!(error = %e, "event retention failed");
                    }
                }
            }
        })
        .map(drop)
        .map_err(|e| StoreError::Unwritable {
            path,
            reason: format!("cannot start the integrity check thread: {e}"),
        })
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// The stored version of every cached family ([`super::versions`] on SQLite).
///
/// # Errors
/// [`StoreError::Sqlite`] when the query fails.
pub(crate) fn versions(conn: &Connection) -> Result<Versions, StoreError> {
    let mut out = [0; CachedFamily::ALL.len()];
    let mut stmt = conn.prepare_cached("SELECT family, version FROM family_version")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let key: String = row.get(0)?;
        if let Some(i) = CachedFamily::ALL.iter().position(|f| family_key(*f) == key) {
            out[i] = row.get(1)?;
        }
    }
    Ok(out)
}

/// Increment a family's stored version and return it ([`super::bump`] on SQLite).
///
/// # Errors
/// [`StoreError::Sqlite`] when the update fails.
pub(crate) fn bump(conn: &Connection, family: CachedFamily) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE family_version SET version = version + 1 WHERE family = ?1 RETURNING version",
        )?
        .query_row([family_key(family)], |r| r.get(0))?)
}

/// The named row shapes of `rows/` read from SQLite rows: each column with `Row::get`, so a
/// value that does not convert is rusqlite's own error (an embedder index above 255 its
/// out-of-range error; `what` is not needed).
impl super::rows::StoredRow for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn real(&self, i: usize) -> rusqlite::Result<f64> {
        self.get(i)
    }
    fn opt_real(&self, i: usize) -> rusqlite::Result<Option<f64>> {
        self.get(i)
    }
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn flag(&self, i: usize) -> rusqlite::Result<bool> {
        self.get(i)
    }
    fn opt_small(&self, i: usize, _what: &str) -> rusqlite::Result<Option<u8>> {
        self.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Db, DbPath};

    fn scratch() -> SqliteStore {
        let store = SqliteStore::open_with(&DbPath::Memory, &OpenOptions::default()).unwrap();
        store
            .write(|db| {
                db.conn()
                    .execute_batch("CREATE TABLE t (v INTEGER NOT NULL)")
                    .map_err(StoreError::from)
            })
            .unwrap();
        store
    }

    fn insert(db: &Db<'_>, v: i64) -> Result<(), StoreError> {
        db.conn().execute("INSERT INTO t (v) VALUES (?1)", [v])?;
        Ok(())
    }

    fn values(store: &SqliteStore) -> Vec<i64> {
        store
            .read(|db| {
                let mut stmt = db.conn().prepare("SELECT v FROM t ORDER BY v")?;
                let rows = stmt.query_map([], |r| r.get(0))?;
                Ok::<_, StoreError>(rows.collect::<Result<Vec<i64>, _>>()?)
            })
            .unwrap()
    }

    #[test]
    fn a_write_that_fails_or_panics_leaves_nothing_and_the_store_usable() {
        let store = scratch();
        let failed: Result<(), StoreError> = store.write(|db| {
            insert(db, 1)?;
            Err(StoreError::Corrupt("handler failed after writing".into()))
        });
        assert!(failed.is_err());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = store.write(|db| -> Result<(), StoreError> {
                insert(db, 2)?;
                panic!("handler panicked after writing");
            });
        }));
        assert!(panicked.is_err());
        store.write(|db| insert(db, 3)).unwrap();
        assert_eq!(values(&store), [3]);
    }

    #[test]
    fn a_group_commit_keeps_each_write_alone_and_commits_the_rest_once() {
        let store = scratch();
        let outcomes = store
            .batch(|| {
                let mut out = vec![store.write(|db| insert(db, 10)).is_ok()];
                out.push(
                    store
                        .write(|db| -> Result<(), StoreError> {
                            insert(db, 11)?;
                            Err(StoreError::Corrupt("fails after writing".into()))
                        })
                        .is_ok(),
                );
                out.push(
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        store.write(|db| -> Result<(), StoreError> {
                            insert(db, 12)?;
                            panic!("panics after writing");
                        })
                    }))
                    .is_ok(),
                );
                // A read inside the group sees the group's own writes so far.
                out.push(values(&store) == [10]);
                out.push(store.write(|db| insert(db, 13)).is_ok());
                out
            })
            .unwrap();
        assert_eq!(outcomes, [true, false, false, true, true]);
        assert_eq!(values(&store), [10, 13]);
        // Outside a group, writes commit alone again.
        store.write(|db| insert(db, 14)).unwrap();
        assert_eq!(values(&store), [10, 13, 14]);
    }

    /// A file store with `rows` rows of 200 bytes in table `t`, closed.
    fn file_with_rows(dir: &std::path::Path, rows: i64) -> DbPath {
        let path = DbPath::File(dir.join("state.db"));
        let store = SqliteStore::open_with(&path, &OpenOptions::default()).unwrap();
        store
            .write(|db| {
                db.conn().execute_batch(
                    "CREATE TABLE t (v INTEGER NOT NULL, pad TEXT NOT NULL DEFAULT '');",
                )?;
                for v in 0..rows {
                    db.conn()
                        .execute("INSERT INTO t VALUES (?1, printf('%.200c', 'x'))", [v])?;
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
        path
    }

    #[test]
    fn a_large_file_is_checked_in_the_background_and_writes_wait_for_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_rows(dir.path(), 2000);
        let background = OpenOptions {
            inline_check_max_bytes: 0,
        };
        let store = SqliteStore::open_with(&path, &background).unwrap();
        assert_eq!(
            store.apply_retention(1).unwrap(),
            0,
            "deferred to the check"
        );
        assert_eq!(values(&store).len(), 2000, "reads are served meanwhile");
        store.write(|db| insert(db, 1)).unwrap();
        assert!(store.health.damage().is_none());
    }

    #[test]
    fn damage_found_in_the_background_refuses_writes_and_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_rows(dir.path(), 2000);
        let DbPath::File(file) = &path else {
            unreachable!()
        };
        // XOR the header of a page near the end of the file, where the rows of `t` are.
        let mut bytes = std::fs::read(file).unwrap();
        let page = bytes.len() - 5 * 4096;
        for b in &mut bytes[page..page + 64] {
            *b ^= 0xA5;
        }
        std::fs::write(file, &bytes).unwrap();
        let inline = SqliteStore::open_with(&path, &OpenOptions::default())
            .err()
            .expect("refused at start-up");
        assert!(matches!(inline, StoreError::Damaged { .. }), "{inline}");

        let background = OpenOptions {
            inline_check_max_bytes: 0,
        };
        let store = SqliteStore::open_with(&path, &background).unwrap();
        let refused = store.write(|db| insert(db, 1)).unwrap_err();
        assert!(matches!(refused, StoreError::Damaged { .. }), "{refused}");
        let refused = store.batch(|| ()).unwrap_err();
        assert!(matches!(refused, StoreError::Damaged { .. }), "{refused}");
        drop(store);
        assert!(
            std::fs::read(file).unwrap() == bytes,
            "the file was written"
        );
    }

    #[test]
    fn a_group_that_unwinds_keeps_nothing() {
        let store = scratch();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.batch(|| {
                store.write(|db| insert(db, 20)).unwrap();
                panic!("the group itself fails");
            })
        }));
        assert!(r.is_err());
        assert!(values(&store).is_empty());
        store.write(|db| insert(db, 21)).unwrap();
        assert_eq!(values(&store), [21]);
    }
}

//! The PostgreSQL backend: one database shared by a team's servers on many machines.
//!
//! Everything lives in the schema `meta_utl` ([`SCHEMA`]) of the database the URL names, so
//! the database may hold other applications' tables; a `meta_utl` schema that is not ours is
//! refused and left untouched. The guarantees are SQLite's:
//!
//! - **One writer at a time.** Every write transaction first takes the transaction-level
//!   advisory lock [`WRITE_LOCK`] (`pg_advisory_xact_lock`), which every server's writes
//!   share, so a write sees every write committed before it, as under SQLite's
//!   `BEGIN IMMEDIATE`; the unique indexes are the backstop. Reads run in a `REPEATABLE READ,
//!   READ ONLY` transaction (one snapshot per call).
//! - **Durable when answered**: an answer leaves after `COMMIT` returned, and PostgreSQL's
//!   `COMMIT` returns after the WAL reached the disk (`synchronous_commit` on, its default).
//! - **Cached state reloads** by the `family_version` counters, as on SQLite.
//! - **Migrations run once** under concurrent start-up: under the session advisory lock
//!   [`MIGRATE_LOCK`], in one transaction; a schema newer than [`SCHEMA_VERSION`] is refused.
//! - **Connection loss**: the calls it hits fail with [`StoreError::ConnectionLost`]; the
//!   next call reconnects, with a backoff of [`RECONNECT_MIN`] doubling to [`RECONNECT_MAX`]
//!   between failed attempts. A call is only answered as done after its `COMMIT` returned.
//!
//! Each family module here (`meta.rs`, …) is the twin of the SQLite family module of the same
//! name, and the only place with its PostgreSQL SQL.

pub mod admin;
pub mod atc;
pub mod attempts;
pub mod beliefs;
pub mod delta_sc;
pub mod directives;
pub mod lesson_vectors;
pub mod lessons;
pub mod meta;
pub mod outcomes;
pub mod projects;
pub mod recurrences;
pub(crate) mod request_keys;
mod target;
#[cfg(test)]
pub(crate) mod testing;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use postgres::types::ToSql;
use postgres::{Client, Row, Statement};

pub use target::{CONNECT_TIMEOUT, SslMode, Target};

use super::{Db, StoreError, family_key};
use crate::service::{CachedFamily, Versions};

/// The schema holding every table.
pub const SCHEMA: &str = "meta_utl";

/// The transaction-level advisory lock every write takes first (`pg_advisory_xact_lock`);
/// the bytes of "metautlw".
pub const WRITE_LOCK: i64 = 0x6d65_7461_7574_6c77;

/// The session-level advisory lock held while the schema is created or migrated; the bytes of
/// "metautlm".
pub const MIGRATE_LOCK: i64 = 0x6d65_7461_7574_6c6d;

/// The first pause before reconnecting after a failed attempt.
pub const RECONNECT_MIN: Duration = Duration::from_millis(100);

/// The longest pause between reconnection attempts.
pub const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// PostgreSQL schema migrations in order: entry `i` moves `meta_utl.schema_version` from `i`
/// to `i + 1`, running its SQL, then its data step in Rust if it has one (for conversions SQL
/// cannot express exactly), in the migration transaction. Append new entries at the end; never
/// edit one that has shipped.
const MIGRATIONS: &[(&str, Option<DataStep>)] = &[
    (include_str!("schema.sql"), None),
    (include_str!("request_keys.sql"), None),
    (include_str!("projects.sql"), Some(lessons::fill_task_words)),
    (include_str!("attempts.sql"), None),
    (include_str!("recurrences.sql"), None),
    (include_str!("outcomes.sql"), None),
    (include_str!("outcomes_expiry_index.sql"), None),
];

/// A migration's data step.
type DataStep = fn(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>;

/// The PostgreSQL schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// A session inside a transaction, handed to the PostgreSQL twins of the store functions
/// through [`Db`]. Statements are prepared once per session and kept.
pub struct Pg {
    client: RefCell<Client>,
    /// Set when the server ended the session (a FATAL message) before the socket closed.
    ended: std::cell::Cell<bool>,
    statements: RefCell<HashMap<&'static str, Statement>>,
    shown: String,
}

/// The parameters of a statement.
pub type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Pg {
    fn new(client: Client, shown: String) -> Self {
        Pg {
            client: RefCell::new(client),
            ended: std::cell::Cell::new(false),
            statements: RefCell::new(HashMap::new()),
            shown,
        }
    }

    /// The store error of a client-library error: [`StoreError::ConnectionLost`] when the
    /// connection is gone, else [`StoreError::Postgres`].
    pub(crate) fn error(&self, e: &postgres::Error) -> StoreError {
        // A FATAL or PANIC message from the server ends the session, before the client
        // library has noticed the socket closing.
        let fatal = e
            .as_db_error()
            .is_some_and(|d| matches!(d.severity(), "FATAL" | "PANIC"));
        if fatal {
            self.ended.set(true);
        }
        if fatal || e.is_closed() || self.is_closed() {
            StoreError::ConnectionLost {
                target: self.shown.clone(),
                reason: target::describe(e),
            }
        } else {
            StoreError::Postgres(target::describe(e))
        }
    }

    fn statement(&self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(s) = self.statements.borrow().get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .client
            .borrow_mut()
            .prepare(sql)
            .map_err(|e| self.error(&e))?;
        self.statements.borrow_mut().insert(sql, s.clone());
        Ok(s)
    }

    /// Run a statement (prepared once per session); returns the rows it changed.
    ///
    /// # Errors
    /// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
    pub fn execute(&self, sql: &'static str, params: Params<'_>) -> Result<u64, StoreError> {
        let s = self.statement(sql)?;
        let n = self.client.borrow_mut().execute(&s, params);
        n.map_err(|e| self.error(&e))
    }

    /// Run a query (prepared once per session); returns every row.
    ///
    /// # Errors
    /// As [`Pg::execute`].
    pub fn query(&self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let s = self.statement(sql)?;
        let rows = self.client.borrow_mut().query(&s, params);
        rows.map_err(|e| self.error(&e))
    }

    /// Run a query expected to return at most one row.
    ///
    /// # Errors
    /// As [`Pg::execute`], or [`StoreError::Postgres`] when more than one row came.
    pub fn query_opt(
        &self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let s = self.statement(sql)?;
        let row = self.client.borrow_mut().query_opt(&s, params);
        row.map_err(|e| self.error(&e))
    }

    /// Run a query expected to return exactly one row.
    ///
    /// # Errors
    /// As [`Pg::execute`], or [`StoreError::Postgres`] when not exactly one row came.
    pub fn query_one(&self, sql: &'static str, params: Params<'_>) -> Result<Row, StoreError> {
        let s = self.statement(sql)?;
        let row = self.client.borrow_mut().query_one(&s, params);
        row.map_err(|e| self.error(&e))
    }

    /// Run a query built at run time (not kept prepared).
    ///
    /// # Errors
    /// As [`Pg::execute`].
    pub fn query_built(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let rows = self.client.borrow_mut().query(sql, params);
        rows.map_err(|e| self.error(&e))
    }

    /// Run statements without parameters (transaction control, `SAVEPOINT`…).
    ///
    /// # Errors
    /// As [`Pg::execute`].
    pub fn batch(&self, sql: &str) -> Result<(), StoreError> {
        let done = self.client.borrow_mut().batch_execute(sql);
        done.map_err(|e| self.error(&e))
    }

    fn is_closed(&self) -> bool {
        self.ended.get() || self.client.borrow().is_closed()
    }
}

/// Column `i` of `row` as `T`.
///
/// # Errors
/// [`StoreError::Corrupt`] when the stored value does not convert (a schema not ours).
pub fn get<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {}", target::describe(&e))))
}

/// A row read whole as a tuple, column `i` as the tuple's field `i` (see [`columns`]).
pub trait Columns: Sized {
    /// The row's columns as `Self`.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when a column does not convert.
    fn read(row: &Row) -> Result<Self, StoreError>;
}

macro_rules! tuple_columns {
    ($($t:ident $i:tt),+) => {
        impl<$($t: postgres::types::FromSqlOwned),+> Columns for ($($t,)+) {
            fn read(row: &Row) -> Result<Self, StoreError> {
                Ok(($(get::<$t>(row, $i)?,)+))
            }
        }
    };
}

tuple_columns!(A 0, B 1);
tuple_columns!(A 0, B 1, C 2);
tuple_columns!(A 0, B 1, C 2, D 3);
tuple_columns!(A 0, B 1, C 2, D 3, E 4);
tuple_columns!(A 0, B 1, C 2, D 3, E 4, F 5);

/// `row` read whole as the tuple `T` (the small unnamed rows: ATC tables, accuracy windows…);
/// the named `Raw*` shapes of `rows/` read themselves through `rows::StoredRow`.
///
/// # Errors
/// [`StoreError::Corrupt`] when a column does not convert.
pub fn columns<T: Columns>(row: &Row) -> Result<T, StoreError> {
    T::read(row)
}

/// The named row shapes of `rows/` read from PostgreSQL rows: each column with [`get`], so a
/// value that does not convert is [`StoreError::Corrupt`] naming the column; a small integer
/// is read as `BIGINT` and one outside 0–255 is [`StoreError::Corrupt`] naming `what`.
impl super::rows::StoredRow for Row {
    type Error = StoreError;
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        get(self, i)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        get(self, i)
    }
    fn real(&self, i: usize) -> Result<f64, StoreError> {
        get(self, i)
    }
    fn opt_real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        get(self, i)
    }
    fn text(&self, i: usize) -> Result<String, StoreError> {
        get(self, i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        get(self, i)
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        get(self, i)
    }
    fn opt_small(&self, i: usize, what: &str) -> Result<Option<u8>, StoreError> {
        get::<Option<i64>>(self, i)?
            .map(|v| {
                u8::try_from(v)
                    .map_err(|_| StoreError::Corrupt(format!("{what} {v} is out of range")))
            })
            .transpose()
    }
}

/// How long a write whose `COMMIT` lost its answer keeps trying to learn the outcome
/// (reconnecting, then `txid_status`) before it answers that the outcome is unknown.
pub const RESOLVE_WAIT: Duration = Duration::from_secs(5);

/// Begins the write transaction's work: takes [`WRITE_LOCK`] and returns the transaction's id,
/// by which the outcome of a `COMMIT` whose answer was lost is learned ([`PgStore::resolve`]).
const LOCK_AND_XID: &str = "SELECT txid_current() FROM (SELECT pg_advisory_xact_lock($1)) AS l";

/// The session and when to try reconnecting after a failure.
struct Session {
    pg: Option<Pg>,
    retry_at: Instant,
    pause: Duration,
}

/// The PostgreSQL store: one session behind a mutex, reconnected when lost.
pub struct PgStore {
    target: Target,
    session: Mutex<Session>,
    /// Set while [`PgStore::batch`] holds a transaction open: writes then nest in savepoints
    /// and reads read inside it. Changed only with `session` locked.
    in_batch: AtomicBool,
    /// Set when the batch's transaction failed under a write (the connection was lost).
    batch_lost: Mutex<Option<String>>,
}

/// Rolls back (or back to the savepoint) if the code inside a transaction unwinds.
struct TxGuard<'a> {
    pg: &'a Pg,
    undo: &'static str,
    armed: bool,
}

impl Drop for TxGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.pg.batch(self.undo);
        }
    }
}

impl PgStore {
    /// Connect, then create or migrate the schema under [`MIGRATE_LOCK`] (so that servers
    /// starting together migrate once).
    ///
    /// # Errors
    /// [`StoreError::Unreachable`] (within [`CONNECT_TIMEOUT`]), [`StoreError::Foreign`] when
    /// the database holds a `meta_utl` schema that is not ours, [`StoreError::TooNew`], or
    /// [`StoreError::Postgres`]. Nothing is written in the first three cases.
    pub fn open(target: &Target) -> Result<PgStore, StoreError> {
        let mut client = target.connect()?;
        migrate(&mut client, target)?;
        Ok(PgStore {
            target: target.clone(),
            session: Mutex::new(Session {
                pg: Some(Pg::new(client, target.to_string())),
                retry_at: Instant::now(),
                pause: RECONNECT_MIN,
            }),
            in_batch: AtomicBool::new(false),
            batch_lost: Mutex::new(None),
        })
    }

    /// The live session, reconnecting when it was lost and the backoff allows.
    fn live<'s>(&self, session: &'s mut Session) -> Result<&'s Pg, StoreError> {
        if session.pg.as_ref().is_some_and(Pg::is_closed) {
            session.pg = None;
            session.retry_at = Instant::now();
        }
        if session.pg.is_none() {
            let now = Instant::now();
            if now < session.retry_at {
                return Err(StoreError::ConnectionLost {
                    target: self.target.to_string(),
                    reason: format!(
                        "next reconnection attempt in {} ms",
                        (session.retry_at - now).as_millis()
                    ),
                });
            }
            match self.target.connect() {
                Ok(client) => {
                    tracing::info!(database = %self.target, "reconnected to PostgreSQL");
                    session.pg = Some(Pg::new(client, self.target.to_string()));
                    session.pause = RECONNECT_MIN;
                }
                Err(e) => {
                    session.retry_at = Instant::now() + session.pause;
                    session.pause = (session.pause * 2).min(RECONNECT_MAX);
                    tracing::warn!(database = %self.target, error = %e, "reconnection failed");
                    return Err(StoreError::ConnectionLost {
                        target: self.target.to_string(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        Ok(session.pg.as_ref().expect("connected above"))
    }

    /// Inside a batch: the error to answer when the batch's session is gone (a new session
    /// would run the call outside the batch's transaction).
    fn check_batch(&self, session: &Session) -> Result<(), StoreError> {
        if session.pg.as_ref().is_none_or(Pg::is_closed) {
            let mut lost = self.batch_lost.lock();
            lost.get_or_insert_with(|| {
                format!("the connection to PostgreSQL at {} was lost", self.target)
            });
        }
        match self.batch_lost.lock().clone() {
            Some(cause) => Err(StoreError::RolledBack { cause }),
            None => Ok(()),
        }
    }

    /// Run `f` in one transaction holding [`WRITE_LOCK`]: committed when `f` returns `Ok`,
    /// rolled back otherwise (also when `f` panics). Inside [`PgStore::batch`], a savepoint.
    ///
    /// # Errors
    /// `f`'s error, or [`StoreError::ConnectionLost`] / [`StoreError::Postgres`] of beginning
    /// or committing.
    pub fn write<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        off_runtime(|| self.write_here(f))
    }

    fn write_here<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let in_batch = self.in_batch.load(Ordering::Relaxed);
        let mut session = self.session.lock();
        if in_batch {
            self.check_batch(&session).map_err(E::from)?;
        }
        let pg = self.live(&mut session).map_err(E::from)?;
        let (end, undo) = if in_batch {
            pg.batch("SAVEPOINT write").map_err(E::from)?;
            ("RELEASE write", "ROLLBACK TO write; RELEASE write")
        } else {
            pg.batch("BEGIN").map_err(E::from)?;
            ("COMMIT", "ROLLBACK")
        };
        let mut guard = TxGuard {
            pg,
            undo,
            armed: true,
        };
        let xid = if in_batch {
            None
        } else {
            Some(lock_and_xid(pg).map_err(E::from)?)
        };
        let out = f(&Db::postgres(pg));
        let committed = match &out {
            Ok(_) => match pg.batch(end) {
                Ok(()) => {
                    guard.armed = false;
                    Ok(())
                }
                Err(e) => Err(e),
            },
            Err(_) => Ok(()),
        };
        drop(guard);
        match (committed, xid) {
            (Ok(()), _) => out,
            (Err(lost @ StoreError::ConnectionLost { .. }), Some(xid)) => {
                self.resolve(&mut session, xid, lost).map_err(E::from)?;
                out
            }
            (Err(e), _) => Err(E::from(e)),
        }
    }

    /// The `COMMIT` of transaction `xid` lost its answer (`lost`): reconnect and ask
    /// PostgreSQL whether it committed, for up to [`RESOLVE_WAIT`]. `Ok` when it did; `lost`
    /// (nothing was kept) when it aborted; [`StoreError::CommitUnknown`] when that could not
    /// be learned. The new connection becomes the session.
    fn resolve(&self, session: &mut Session, xid: i64, lost: StoreError) -> Result<(), StoreError> {
        session.pg = None;
        let deadline = Instant::now() + RESOLVE_WAIT;
        let why = loop {
            let why = match self.target.connect() {
                Err(e) => e.to_string(),
                Ok(client) => {
                    let pg = Pg::new(client, self.target.to_string());
                    let status = xact_status(&pg, xid, deadline);
                    session.pg = Some(pg);
                    match status {
                        Ok(true) => {
                            tracing::warn!(xid, "the answer to COMMIT was lost; it committed");
                            return Ok(());
                        }
                        Ok(false) => return Err(lost),
                        Err(why) => why,
                    }
                }
            };
            if Instant::now() >= deadline {
                break why;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let StoreError::ConnectionLost { target, reason } = lost else {
            return Err(lost);
        };
        Err(StoreError::CommitUnknown {
            target,
            xid,
            reason: format!("{reason}; then: {why}"),
        })
    }

    /// Run `f` in a `REPEATABLE READ, READ ONLY` transaction (one snapshot); inside a batch,
    /// inside the batch's transaction.
    ///
    /// # Errors
    /// `f`'s error, or the store error of beginning the transaction.
    pub fn read<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        off_runtime(|| self.read_here(f))
    }

    fn read_here<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let mut session = self.session.lock();
        if self.in_batch.load(Ordering::Relaxed) {
            self.check_batch(&session).map_err(E::from)?;
            let pg = self.live(&mut session).map_err(E::from)?;
            return f(&Db::postgres(pg));
        }
        let pg = self.live(&mut session).map_err(E::from)?;
        pg.batch("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .map_err(E::from)?;
        let guard = TxGuard {
            pg,
            undo: "ROLLBACK",
            armed: true,
        };
        let out = f(&Db::postgres(pg));
        drop(guard);
        out
    }

    /// Group commit: `f`'s writes (each a savepoint) in one transaction holding
    /// [`WRITE_LOCK`], committed once at the end.
    ///
    /// # Errors
    /// The store error of beginning or committing; on a failed commit none of `f`'s writes is
    /// kept.
    pub fn batch<T>(&self, f: impl FnOnce() -> T) -> Result<T, StoreError> {
        off_runtime(|| self.batch_here(f))
    }

    fn batch_here<T>(&self, f: impl FnOnce() -> T) -> Result<T, StoreError> {
        let xid = {
            let mut session = self.session.lock();
            let pg = self.live(&mut session)?;
            pg.batch("BEGIN")?;
            match lock_and_xid(pg) {
                Ok(x) => x,
                Err(e) => {
                    let _ = pg.batch("ROLLBACK");
                    return Err(e);
                }
            }
        };
        {
            self.in_batch.store(true, Ordering::Relaxed);
            *self.batch_lost.lock() = None;
        }
        struct EndBatch<'a>(&'a PgStore);
        impl Drop for EndBatch<'_> {
            fn drop(&mut self) {
                let session = self.0.session.lock();
                if self.0.in_batch.swap(false, Ordering::Relaxed)
                    && let Some(pg) = &session.pg
                {
                    // Reached only when `f` unwound: nothing of it is kept.
                    let _ = pg.batch("ROLLBACK");
                }
            }
        }
        let end = EndBatch(self);
        let out = f();
        let committed = {
            let mut session = self.session.lock();
            self.in_batch.store(false, Ordering::Relaxed);
            let lost = self.batch_lost.lock().take();
            match (&session.pg, lost) {
                (_, Some(cause)) => Err(StoreError::RolledBack { cause }),
                (None, None) => Err(StoreError::ConnectionLost {
                    target: self.target.to_string(),
                    reason: "the session ended during the batch".into(),
                }),
                (Some(pg), None) => match pg.batch("COMMIT") {
                    Ok(()) => Ok(()),
                    Err(lost @ StoreError::ConnectionLost { .. }) => {
                        self.resolve(&mut session, xid, lost)
                    }
                    Err(e) => {
                        let _ = pg.batch("ROLLBACK");
                        Err(e)
                    }
                },
            }
        };
        drop(end);
        committed.map(|()| out)
    }
}

/// Whether transaction `xid` committed (`Ok(true)`) or aborted (`Ok(false)`), asked on a new
/// session; while it is still in progress, asked again until `deadline`. `Err` says why the
/// outcome is not known.
fn xact_status(pg: &Pg, xid: i64, deadline: Instant) -> Result<bool, String> {
    loop {
        let rows = pg
            .query("SELECT txid_status($1)", &[&xid])
            .map_err(|e| e.to_string())?;
        let status: Option<String> = rows.first().and_then(|r| r.try_get(0).ok()).flatten();
        match status.as_deref() {
            Some("committed") => return Ok(true),
            Some("aborted") => return Ok(false),
            Some("in progress") if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Some("in progress") => return Err("it was still committing".into()),
            _ => return Err("PostgreSQL no longer knows the transaction".into()),
        }
    }
}

/// Take [`WRITE_LOCK`] for the transaction just begun and return its id.
fn lock_and_xid(pg: &Pg) -> Result<i64, StoreError> {
    let rows = pg.query(LOCK_AND_XID, &[&WRITE_LOCK])?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Postgres("txid_current() returned no row".into()))?;
    get(row, 0)
}

/// Run `f`, which uses the client library, so that it may block: the synchronous client drives
/// a runtime of its own, which it cannot do on a thread driving the server's async runtime
/// (reads are served on those threads). There `f` runs under
/// [`tokio::task::block_in_place`], which hands the thread's other tasks to another worker
/// and leaves the runtime's context for `f`'s duration; elsewhere `f` just runs.
fn off_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl Drop for PgStore {
    /// Closes the session on a thread of its own: the client library blocks on its own
    /// runtime to close, which it cannot do from a thread driving the server's async runtime
    /// (where the store may be dropped at shutdown).
    fn drop(&mut self) {
        if let Some(pg) = self.session.get_mut().pg.take() {
            let closing = std::thread::Builder::new()
                .name("postgres-close".into())
                .spawn(move || drop(pg));
            if let Ok(handle) = closing {
                let _ = handle.join();
            }
        }
    }
}

/// Create the schema, or migrate it, under [`MIGRATE_LOCK`] and in one transaction.
fn migrate(client: &mut Client, target: &Target) -> Result<(), StoreError> {
    let shown = target.to_string();
    let fail = |e: postgres::Error| StoreError::Postgres(target::describe(&e));
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATE_LOCK])
        .map_err(fail)?;
    let result = (|| {
        let mut tx = client.transaction().map_err(fail)?;
        let row = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
                        to_regclass($2) IS NOT NULL,
                        (SELECT count(*) FROM pg_class c JOIN pg_namespace n
                           ON n.oid = c.relnamespace WHERE n.nspname = $1)",
                &[&SCHEMA, &format!("{SCHEMA}.schema_version")],
            )
            .map_err(fail)?;
        let (schema, marked, objects): (bool, bool, i64) = (row.get(0), row.get(1), row.get(2));
        let current: i64 = if marked {
            tx.query_one("SELECT version FROM schema_version", &[])
                .map_err(fail)?
                .get(0)
        } else if schema && objects > 0 {
            return Err(StoreError::Foreign {
                path: shown.clone(),
                detail: format!(
                    "its schema {SCHEMA} holds {objects} objects but no schema_version table"
                ),
            });
        } else {
            0
        };
        if current > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: shown.clone(),
                found: current,
                supported: SCHEMA_VERSION,
            });
        }
        if current < SCHEMA_VERSION {
            if current == 0 {
                tx.batch_execute(&format!(
                    "CREATE SCHEMA IF NOT EXISTS {SCHEMA};
                     COMMENT ON SCHEMA {SCHEMA} IS 'meta-utl-mcp';
                     CREATE TABLE schema_version (version BIGINT NOT NULL);
                     INSERT INTO schema_version VALUES (0);"
                ))
                .map_err(fail)?;
            }
            for (i, (m, data)) in MIGRATIONS.iter().enumerate().skip(current as usize) {
                tx.batch_execute(m).map_err(fail)?;
                if let Some(data) = data {
                    data(&mut tx).map_err(fail)?;
                }
                tx.execute("UPDATE schema_version SET version = $1", &[&(i as i64 + 1)])
                    .map_err(fail)?;
            }
            tracing::info!(database = %shown, from = current, to = SCHEMA_VERSION, "schema migrated");
        }
        for f in CachedFamily::ALL {
            tx.execute(
                "INSERT INTO family_version (family, version) VALUES ($1, 0)
                 ON CONFLICT DO NOTHING",
                &[&family_key(f)],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    })();
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATE_LOCK]);
    result?;
    unlocked.map(drop).map_err(fail)
}

/// The stored version of every cached family ([`super::versions`] on PostgreSQL).
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn versions(pg: &Pg) -> Result<Versions, StoreError> {
    let mut out = [0; CachedFamily::ALL.len()];
    for row in pg.query("SELECT family, version FROM family_version", &[])? {
        let key: &str = get(&row, 0)?;
        if let Some(i) = CachedFamily::ALL.iter().position(|f| family_key(*f) == key) {
            out[i] = get(&row, 1)?;
        }
    }
    Ok(out)
}

/// Increment a family's stored version and return it ([`super::bump`] on PostgreSQL).
///
/// # Errors
/// [`StoreError::Postgres`] or [`StoreError::ConnectionLost`].
pub fn bump(pg: &Pg, family: CachedFamily) -> Result<i64, StoreError> {
    let row = pg.query_one(
        "UPDATE family_version SET version = version + 1 WHERE family = $1 RETURNING version",
        &[&family_key(family)],
    )?;
    get(&row, 0)
}

#[cfg(test)]
mod migration_tests {
    use super::{MIGRATIONS, SCHEMA};
    use crate::store::StoreError;
    use crate::store::projects;

    /// A database at schema version 2 (before projects) with a lesson, a belief with an event
    /// and a directive: migration 3 keeps every row, under the unassigned project.
    #[test]
    fn a_database_from_before_projects_keeps_its_rows_unassigned() {
        let Some(db) = super::testing::fresh_with("pg_before_projects", |c| {
            let mut sql = format!(
                "CREATE SCHEMA {SCHEMA}; SET search_path TO {SCHEMA};
                 CREATE TABLE schema_version (version BIGINT NOT NULL);
                 INSERT INTO schema_version VALUES (2);"
            );
            sql.push_str(MIGRATIONS[0].0);
            sql.push_str(MIGRATIONS[1].0);
            sql.push_str(
                "INSERT INTO lessons (id, task_id, strategy_description, normalised_strategy,
                                      rca_summary, failure_type, source_agent, created_us,
                                      task_key)
                 VALUES ('l1', 'T-1', 'Mock the DB', 'mock the db', 'why', 'UNKNOWN', 'a', 1,
                         't-1');
                 INSERT INTO beliefs (id, normalised_target, target, status, confidence,
                                      entropy, rationale, source_nodes, created_us, updated_us)
                 VALUES ('b1', 'cache', 'Cache', 'active', 0.5, 1.0, 'r', '', 1, 2);
                 INSERT INTO belief_events (belief_seq, action, input_confidence, status_after,
                                            confidence_after, rationale, at_us)
                 SELECT seq, 'assert', 0.5, 'active', 0.5, 'r', 1 FROM beliefs;
                 INSERT INTO directive_history (id, task_id, intervention_type, description,
                                                actor, created_us, task_key)
                 VALUES ('d1', 'T-1', 'FEEDBACK', 'note', 'USER', 1, 't-1');",
            );
            c.batch_execute(&sql).expect("version 2 database");
        }) else {
            return;
        };
        let listed = db
            .read(|db| -> Result<_, StoreError> { projects::list(db) })
            .unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0].name, crate::project::UNASSIGNED);
        assert_eq!(
            (listed[0].lessons, listed[0].directives, listed[0].beliefs),
            (1, 1, 1)
        );
        // The data step filled the lesson's task words: "T 1" finds task "T-1".
        let same = db
            .read(|db| -> Result<_, StoreError> {
                crate::store::lessons::same_words_strategies(
                    db,
                    &crate::service::lessons::TaskKey::of("T 1"),
                )
            })
            .unwrap();
        assert_eq!(same.len(), 1, "{same:?}");
    }
}

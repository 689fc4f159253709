//! The store: the only module that imports a database client or holds SQL.
//!
//! One interface, two backends as siblings. [`Store`] opens either an SQLite file (the
//! default: one machine, `sqlite/`) or a PostgreSQL database (a team's shared memory, [`pg`]).
//! The family modules ([`meta`], [`atc`], [`lessons`], …) are the interface: each public
//! function takes a [`Db`] and dispatches once on its backend, to the family's module in
//! `sqlite/` (SQLite SQL) or in `pg/` (PostgreSQL SQL); functions written in terms of other
//! store functions live in the family module and serve both backends unchanged. What both
//! backends share (named rows, decoders with their range checks, query text that runs on both)
//! is in `rows/`; `sqlite/` and `pg/` import it and never each other.
//!
//! On both, several server processes share one database safely: every write runs inside one
//! transaction that excludes every other writer (SQLite's `BEGIN IMMEDIATE`, PostgreSQL's
//! transaction-level advisory lock), and each cached family of state carries a version
//! counter in the `family_version` table so that a process notices another process's writes
//! and reloads that family before using it (see [`sync`]). Schema changes are numbered
//! migrations, applied at start-up inside one transaction.

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
pub mod pg;
pub mod projects;
pub mod recurrences;
pub mod request_keys;
mod rows;
mod sqlite;

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::Connection;

pub use sqlite::SCHEMA_VERSION;
pub use sqlite::health::CHECK_WAIT;
pub use sqlite::open::{APPLICATION_ID, INLINE_CHECK_MAX_BYTES};

pub use crate::files::{resolve_path, with_suffix};

use crate::service::{CachedFamily, MetaLearningService, Versions};

/// How long a write waits for another process's write transaction before failing.
///
/// SQLite's `busy_timeout`; the issue asks for at least 5 s. Transactions here last
/// milliseconds, so 30 s only matters under heavy multi-process contention.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbPath {
    /// A throwaway in-memory database (`--db :memory:`).
    Memory,
    /// A database file.
    File(PathBuf),
    /// A PostgreSQL database (`--db postgres://…` or `postgresql://…`).
    Postgres(Box<pg::Target>),
}

impl DbPath {
    /// Parse a `--db` / `META_UTL_DB` value: `:memory:`, a PostgreSQL URL
    /// (`postgres://…` or `postgresql://…`, see [`pg::Target::parse`]) or a file path.
    ///
    /// # Errors
    /// [`StoreError::BadUrl`] for a PostgreSQL URL that cannot be used, and for a value that
    /// begins like one but lacks its `//` (`postgres:/x`, `postgresql:x`): taken for a file
    /// name it would create a `postgres:` folder holding an SQLite file. A file whose name
    /// really begins so is given as `./postgres:…`.
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        if s == ":memory:" {
            Ok(DbPath::Memory)
        } else if pg::Target::is_url(s) {
            Ok(DbPath::Postgres(Box::new(pg::Target::parse(s)?)))
        } else if let Some(scheme) = pg::Target::almost_url(s) {
            Err(StoreError::BadUrl {
                reason: format!(
                    "{s:?} begins like a PostgreSQL URL but lacks the \"//\" after \"{scheme}:\", \
                     so it is neither a URL nor taken as a file name (a file whose name really \
                     begins so can be given as ./{s})"
                ),
            })
        } else {
            Ok(DbPath::File(PathBuf::from(s)))
        }
    }

    /// The default location: `$XDG_DATA_HOME/meta-utl-mcp/state.db`, else
    /// `$HOME/.local/share/meta-utl-mcp/state.db`; `None` when neither variable is set (empty
    /// counts as unset), so that the caller asks for `--db` instead of writing into the current
    /// directory.
    pub fn default_location() -> Option<Self> {
        Some(DbPath::File(data_dir()?.join("state.db")))
    }

    /// The path or URL as shown to users (a URL never with its password).
    pub fn display(&self) -> String {
        match self {
            DbPath::Memory => ":memory:".into(),
            DbPath::File(p) => p.display().to_string(),
            DbPath::Postgres(t) => t.to_string(),
        }
    }
}

/// This program's data folder: `$XDG_DATA_HOME/meta-utl-mcp`, else
/// `$HOME/.local/share/meta-utl-mcp` (XDG Base Directory Specification); `None` when neither
/// variable is set (an empty one counts as unset). The folder may not exist yet.
pub fn data_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
    Some(base.join("meta-utl-mcp"))
}

/// Why the store could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `--db` names something that is not a regular file (a directory, `/dev/null`, …).
    #[error(
        "{path} is not a regular file ({kind}); choose a database file with --db PATH or \
         META_UTL_DB"
    )]
    NotAFile {
        /// The path given.
        path: String,
        /// What it is instead.
        kind: &'static str,
    },
    /// `--db` was given an SQLite URI (`file:…`). It is refused: read as a file name it
    /// would create a `file:` directory tree in the current directory, and read as a URI its
    /// parameters could change how the file is opened.
    #[error(
        "{path} is an SQLite URI, but --db takes a file path and never reads it as a URI: \
         give the path itself ({plain}); a file whose name really begins with \"file:\" can \
         be given as ./{path}"
    )]
    Uri {
        /// The value given.
        path: String,
        /// Its path part (between `file:` and `?` or `#`).
        plain: String,
    },
    /// The file exists but is not an SQLite database. It is left untouched.
    #[error(
        "{path} is not a meta-utl-mcp database (not an SQLite file); it was left untouched. \
         Move it aside or choose another file with --db PATH or META_UTL_DB"
    )]
    NotADatabase {
        /// The offending file.
        path: String,
    },
    /// The file is an SQLite database of another application (see [`APPLICATION_ID`]). It
    /// is left untouched.
    #[error(
        "{path} is not a meta-utl-mcp database ({detail}); it was left untouched. Move it \
         aside or choose another file with --db PATH or META_UTL_DB"
    )]
    Foreign {
        /// The offending file.
        path: String,
        /// What it holds instead.
        detail: String,
    },
    /// The database was written by a newer binary. It is left untouched.
    #[error(
        "{path} has schema version {found}, newer than this binary supports ({supported}); \
         it was left untouched. Upgrade meta-utl-mcp, or choose another file with --db PATH"
    )]
    TooNew {
        /// The database file.
        path: String,
        /// Its `user_version`.
        found: i64,
        /// [`SCHEMA_VERSION`].
        supported: i64,
    },
    /// The file or its directory cannot be created or written.
    #[error(
        "cannot open {path} for writing: {reason}. Fix the permissions or choose another \
         location with --db PATH or META_UTL_DB"
    )]
    Unwritable {
        /// The file or directory.
        path: String,
        /// What the operating system or SQLite said.
        reason: String,
    },
    /// The file is damaged (found at start-up by `PRAGMA quick_check`, or at run time by
    /// SQLite): nothing more is written to it.
    #[error(
        "{path} is damaged ({reason}). Nothing was written to it, and nothing more will be, so \
         that what it still holds can be saved. Recovery: stop every meta-utl-mcp using the \
         file; `meta-utl-mcp check --db {path}` reports the damage; restore the file from a \
         copy (`meta-utl-mcp backup` makes one while servers run), or salvage what is \
         readable with `sqlite3 {path} .recover`"
    )]
    Damaged {
        /// The database file.
        path: String,
        /// What SQLite or the check reported.
        reason: String,
    },
    /// The `-wal` or `-shm` of the database was deleted or replaced while this server had it
    /// open: writing on could lose what was written or damage the file, so nothing more is.
    #[error(
        "{file} {what} while this server had {path} open; to keep the database from being \
         damaged, this server writes nothing more. Never delete the -wal and -shm files of a \
         database in use (SQLite removes them when the last connection closes). Stop this \
         server (as it exits it copies what it wrote into {path} when no other process has it \
         open, and logs whether it could), then `meta-utl-mcp check --db {path}` says whether \
         it is healthy; start the servers again"
    )]
    CompanionReplaced {
        /// The database file.
        path: String,
        /// The companion file.
        file: String,
        /// "was deleted" or "was replaced by another file".
        what: &'static str,
    },
    /// Another process has the database open, but its `-wal` or `-shm` is missing: they
    /// were deleted under that process (`sqlite::companions::refuse_orphaned`).
    #[error(
        "{path} is open in process {pid}, but {file} is missing: it was deleted under that \
         process, whose latest writes may be only in the deleted file. Opening {path} now \
         would lose them or damage it, so nothing was opened. Stop process {pid} (a \
         meta-utl-mcp server copies what it holds into {path} as it exits), then try again. \
         Never delete the -wal and -shm files of a database in use"
    )]
    Orphaned {
        /// The database file.
        path: String,
        /// The missing companion.
        file: String,
        /// The process that holds the database open (0 when it could not be learned).
        pid: u32,
    },
    /// A write came while the background integrity check of a large file was still running,
    /// and waited [`CHECK_WAIT`] for it in vain.
    #[error(
        "{path} is still being checked for damage (for {seconds} s); writes wait for the check \
         to pass. Retry shortly"
    )]
    Checking {
        /// The database file.
        path: String,
        /// How long the check has been running.
        seconds: u64,
    },
    /// SQLite ended the transaction by itself after a failure (a full disk, an I/O error):
    /// `cause` is that failure, not what a later statement of the dead transaction said.
    #[error("database error: {cause} (the transaction was rolled back; nothing of it was kept)")]
    RolledBack {
        /// The failure that ended the transaction.
        cause: String,
    },
    /// Any other SQLite failure while serving a request (the message adds the likely fix).
    #[error("database error: {0}{hint}", hint = sqlite_hint(.0, &sqlite::health::serving()))]
    Sqlite(#[source] rusqlite::Error),
    /// `--db postgres://…` that cannot be used: malformed, or an option this program does
    /// not support.
    #[error("{reason}; the form is postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]")]
    BadUrl {
        /// What is wrong, naming the part.
        reason: String,
    },
    /// The PostgreSQL server could not be reached, or refused the connection (authentication,
    /// unknown database), at start-up or when reconnecting.
    #[error(
        "cannot connect to PostgreSQL at {target}: {reason}. Check that the server runs and \
         accepts connections there, and the user, password (PGPASSWORD or ~/.pgpass) and \
         database name"
    )]
    Unreachable {
        /// Host, port, database and user (never the password).
        target: String,
        /// What the client library or the server said.
        reason: String,
    },
    /// The connection to PostgreSQL was lost while serving; the server reconnects with
    /// backoff, and calls fail with this until it is back.
    #[error(
        "the connection to PostgreSQL at {target} was lost ({reason}); nothing of this call \
         was kept unless it was answered before. Reconnecting: retry in a moment"
    )]
    ConnectionLost {
        /// Host, port, database and user (never the password).
        target: String,
        /// What the client library said.
        reason: String,
    },
    /// The connection to PostgreSQL was lost between sending `COMMIT` and its answer, and
    /// whether the transaction committed could not be learned after reconnecting (within
    /// [`pg::RESOLVE_WAIT`]). Never answered as "nothing was kept": it may have been.
    #[error(
        "the connection to PostgreSQL at {target} was lost while this call was committing \
         ({reason}), and whether it was kept could not be learned. A call that carried a \
         request_key may be sent again with the same key; otherwise do not simply retry (a call \
         that was kept would be recorded twice): check first whether its effect is there (read \
         it back), or ask PostgreSQL: SELECT txid_status({xid}) says committed or aborted"
    )]
    CommitUnknown {
        /// Host, port, database and user (never the password).
        target: String,
        /// The transaction id (`txid_current()`) of the call.
        xid: i64,
        /// What the client library said, and why the outcome could not be learned.
        reason: String,
    },
    /// Any other PostgreSQL failure while serving a request.
    #[error("database error: {0}")]
    Postgres(String),
    /// A stored value could not be read back or is out of its range: the file is damaged (or
    /// a bug wrote it). Never served.
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
}

/// What to do about an SQLite failure, by its kind: appended to [`StoreError::Sqlite`]'s
/// message (the tool layer adds which database file it was).
fn sqlite_hint(e: &rusqlite::Error, db: &str) -> String {
    use rusqlite::ErrorCode as C;
    let db = if db.is_empty() { "FILE" } else { db };
    let hint = match e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::SystemIoFailure => {
                "; the disk or file system failed: check free space, the device and the system \
                 log; `meta-utl-mcp check --db DB` says whether the file is intact"
            }
            C::DiskFull => "; free disk space, then retry",
            C::DatabaseBusy | C::DatabaseLocked => {
                "; another process held the database lock too long (a stuck process?); retry"
            }
            C::ReadOnly | C::PermissionDenied => {
                "; the file or its folder is not writable by this user: fix the permissions"
            }
            C::CannotOpen => "; the file or its folder was moved or cannot be opened",
            _ => "",
        },
        rusqlite::Error::Utf8Error(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..) => {
            "; a stored value is not what this program writes, so another program changed the \
             file: `meta-utl-mcp check --db DB` reports it; restore a backup or remove the row"
        }
        _ => "",
    };
    let on = if db == "FILE" {
        String::new()
    } else {
        format!(" (database {db})")
    };
    format!("{on}{}", hint.replace("DB", db))
}

impl From<rusqlite::Error> for StoreError {
    /// Every SQLite failure passes here; the store notes damage and the failures that end a
    /// transaction for the store call running on this thread.
    fn from(e: rusqlite::Error) -> Self {
        sqlite::health::note(&e);
        StoreError::Sqlite(e)
    }
}

/// A stored float that must be finite and within `[lo, hi]`.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` otherwise.
pub(crate) fn in_range(what: &str, v: f64, lo: f64, hi: f64) -> Result<f64, StoreError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(StoreError::Corrupt(format!(
            "{what} {v:?} is outside [{lo}, {hi}]"
        )))
    }
}

/// A stored count that must be ≥ 0 (and fit `T`).
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` otherwise.
pub(crate) fn count<T: TryFrom<i64>>(what: &str, v: i64) -> Result<T, StoreError> {
    T::try_from(v)
        .ok()
        .filter(|_| v >= 0)
        .ok_or_else(|| StoreError::Corrupt(format!("{what} {v} is not a valid count")))
}

/// A time as stored: whole microseconds since the Unix epoch (UTC).
pub(crate) fn to_us(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_micros()
}

/// A stored time back to UTC.
///
/// # Errors
/// [`StoreError::Corrupt`] when the value is outside chrono's range.
pub(crate) fn from_us(us: i64) -> Result<chrono::DateTime<chrono::Utc>, StoreError> {
    chrono::DateTime::from_timestamp_micros(us)
        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {us} µs is out of range")))
}

/// A borrowed connection inside a transaction, handed to store functions, and the project
/// its project-scoped reads and writes are confined to (lessons, their vectors, directives,
/// beliefs: [`Db::project`]). Tool modules pass it through without seeing which database
/// serves it.
pub struct Db<'a> {
    backend: Backend<'a>,
    project: &'a str,
}

/// The connection behind a [`Db`].
#[derive(Clone, Copy)]
pub(crate) enum Backend<'a> {
    /// An SQLite connection.
    Sqlite(&'a Connection),
    /// A PostgreSQL session.
    Postgres(&'a pg::Pg),
}

impl<'a> Db<'a> {
    pub(crate) fn sqlite(conn: &'a Connection) -> Self {
        Db {
            backend: Backend::Sqlite(conn),
            project: crate::project::UNASSIGNED,
        }
    }

    pub(crate) fn postgres(pg: &'a pg::Pg) -> Self {
        Db {
            backend: Backend::Postgres(pg),
            project: crate::project::UNASSIGNED,
        }
    }

    /// The same connection confined to `project`.
    pub(crate) fn scoped<'b>(&self, project: &'b str) -> Db<'b>
    where
        'a: 'b,
    {
        Db {
            backend: self.backend,
            project,
        }
    }

    /// The project every project-scoped row this handle reads or writes belongs to
    /// ([`crate::project`]; [`crate::project::UNASSIGNED`] unless the store was opened with
    /// [`Store::with_project`]).
    pub fn project(&self) -> &'a str {
        self.project
    }

    pub(crate) fn backend(&self) -> Backend<'a> {
        self.backend
    }

    /// Run a transaction-control statement (`SAVEPOINT x`, `RELEASE x`, `ROLLBACK TO x`), the
    /// same text on both backends.
    ///
    /// # Errors
    /// The database's error.
    pub(crate) fn control(&self, sql: &str) -> Result<(), StoreError> {
        match self.backend {
            Backend::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Backend::Postgres(p) => p.batch(sql),
        }
    }

    /// The SQLite connection (unit tests that look at the tables).
    ///
    /// # Panics
    /// On a PostgreSQL [`Db`].
    #[cfg(test)]
    pub(crate) fn conn(&self) -> &'a Connection {
        match self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(_) => panic!("an SQLite connection was expected"),
        }
    }
}

/// The store: an SQLite file or a PostgreSQL database, behind one interface.
pub struct Store {
    backend: StoreBackend,
    path: DbPath,
    project: String,
}

enum StoreBackend {
    Sqlite(sqlite::SqliteStore),
    Postgres(Box<pg::PgStore>),
}

fn family_key(f: CachedFamily) -> &'static str {
    match f {
        CachedFamily::Meta => "meta",
        CachedFamily::DeltaSc => "vertices",
        CachedFamily::Atc => "atc",
    }
}

/// Settings of [`Store::open_with`]; [`Store::open`] uses the defaults.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Files up to this size are checked for damage before the store opens, larger ones in
    /// the background ([`INLINE_CHECK_MAX_BYTES`]).
    pub inline_check_max_bytes: u64,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            inline_check_max_bytes: INLINE_CHECK_MAX_BYTES,
        }
    }
}

/// Read the stored version of every cached family.
///
/// # Errors
/// [`StoreError::Sqlite`] when the query fails.
pub fn versions(db: &Db<'_>) -> Result<Versions, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::versions(conn),
        Backend::Postgres(pg) => pg::versions(pg),
    }
}

/// Increment a family's stored version and return the new value. Call inside a write
/// transaction that changed that family.
///
/// # Errors
/// [`StoreError::Sqlite`] when the update fails.
pub fn bump(db: &Db<'_>, family: CachedFamily) -> Result<i64, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::bump(conn, family),
        Backend::Postgres(pg) => pg::bump(pg, family),
    }
}

/// Bring the service's cached state up to date with the store: every family whose stored
/// version differs from the version the service last loaded is reloaded.
///
/// # Errors
/// [`StoreError`] when a load fails; the family then stays marked stale.
pub fn sync(db: &Db<'_>, svc: &mut MetaLearningService) -> Result<(), StoreError> {
    let stored = versions(db)?;
    for (i, family) in CachedFamily::ALL.into_iter().enumerate() {
        if svc.loaded_versions[i] == stored[i] {
            continue;
        }
        match family {
            CachedFamily::Meta => svc.meta = meta::load(db)?,
            CachedFamily::DeltaSc => delta_sc::refresh(db, &mut svc.delta_sc)?,
            CachedFamily::Atc => svc.atc = atc::load(db)?,
        }
        svc.loaded_versions[i] = stored[i];
    }
    Ok(())
}

/// Whether any family changed in the store since the service loaded it.
///
/// # Errors
/// [`StoreError::Sqlite`] when the query fails.
pub fn is_stale(db: &Db<'_>, svc: &MetaLearningService) -> Result<bool, StoreError> {
    Ok(versions(db)? != svc.loaded_versions)
}

impl Store {
    /// Open (creating if needed) the database `path` names and migrate it to the schema this
    /// binary writes: an SQLite file or a PostgreSQL database (see [`pg::PgStore::open`]).
    ///
    /// An SQLite file is not written before it has been accepted: it must be empty, or ours
    /// ([`APPLICATION_ID`], or an unmarked file of ours from before it, which is then marked),
    /// not newer than this binary, and pass `PRAGMA quick_check` (files above
    /// [`INLINE_CHECK_MAX_BYTES`] that need no schema change are checked in the background, and
    /// writes wait for that check). A refused file is left byte-identical, without a `-wal` or
    /// `-shm` that was not there before. The path is a file path, never an SQLite URI; symbolic
    /// links are resolved first, and a new file is created with mode 0600 (a new directory with
    /// 0700) where the link points. WAL journal, `synchronous=NORMAL`, [`BUSY_TIMEOUT`],
    /// foreign keys on.
    ///
    /// # Errors
    /// SQLite: [`StoreError::NotAFile`], [`StoreError::Uri`], [`StoreError::NotADatabase`],
    /// [`StoreError::Foreign`], [`StoreError::TooNew`], [`StoreError::Damaged`] (these leave
    /// the file byte-identical), [`StoreError::Unwritable`], or [`StoreError::Sqlite`].
    /// PostgreSQL: [`StoreError::Unreachable`], [`StoreError::Foreign`],
    /// [`StoreError::TooNew`] or [`StoreError::Postgres`].
    pub fn open(path: &DbPath) -> Result<Store, StoreError> {
        Self::open_with(path, &OpenOptions::default())
    }

    /// [`Store::open`] with explicit [`OpenOptions`] (SQLite only; PostgreSQL ignores them).
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with(path: &DbPath, options: &OpenOptions) -> Result<Store, StoreError> {
        let backend = match path {
            DbPath::Postgres(target) => {
                StoreBackend::Postgres(Box::new(pg::PgStore::open(target)?))
            }
            _ => StoreBackend::Sqlite(sqlite::SqliteStore::open_with(path, options)?),
        };
        Ok(Store {
            backend,
            path: path.clone(),
            project: crate::project::UNASSIGNED.to_owned(),
        })
    }

    /// This store confined to `project` (a name from [`crate::project::Project`]): every
    /// [`Store::read`] and [`Store::write`] hands out a [`Db`] whose project-scoped reads and
    /// writes see only that project's rows. Without it, [`crate::project::UNASSIGNED`].
    pub fn with_project(mut self, project: impl Into<String>) -> Store {
        self.project = project.into();
        self
    }

    /// The project this store is confined to ([`Store::with_project`]).
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The path or URL in use, as shown to users.
    pub fn path(&self) -> &DbPath {
        &self.path
    }

    /// Whether this is a PostgreSQL store.
    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, StoreBackend::Postgres(_))
    }

    /// Run `f` inside one write transaction that excludes every other writer of the database
    /// (in this process or another): committed when `f` returns `Ok`, rolled back otherwise
    /// (also when `f` panics). Inside [`Store::batch`], a savepoint of the batch's.
    ///
    /// # Errors
    /// `f`'s error, or the store error of beginning or committing (SQLite:
    /// [`StoreError::Damaged`], [`StoreError::Checking`], [`StoreError::RolledBack`],
    /// [`StoreError::Sqlite`]; PostgreSQL: [`StoreError::ConnectionLost`],
    /// [`StoreError::Postgres`]).
    pub fn write<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let project = self.project.as_str();
        match &self.backend {
            StoreBackend::Sqlite(s) => s.write(|db| f(&db.scoped(project))),
            StoreBackend::Postgres(p) => p.write(|db| f(&db.scoped(project))),
        }
    }

    /// Run `f` inside a read transaction (a consistent snapshot of committed data); inside a
    /// [`Store::batch`], inside the batch's transaction.
    ///
    /// # Errors
    /// `f`'s error, or the store error of beginning the transaction.
    pub fn read<T, E>(&self, f: impl FnOnce(&Db<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let project = self.project.as_str();
        match &self.backend {
            StoreBackend::Sqlite(s) => s.read(|db| f(&db.scoped(project))),
            StoreBackend::Postgres(p) => p.read(|db| f(&db.scoped(project))),
        }
    }

    /// Group commit: run `f`, which makes several [`Store::write`] calls, inside one
    /// transaction, so that their changes reach the disk in one commit. Each write still
    /// succeeds or fails alone (a savepoint each).
    ///
    /// # Errors
    /// The store error of beginning or committing; on a failed commit none of `f`'s writes
    /// is kept, and the caller must report every one of them as failed.
    pub fn batch<T>(&self, f: impl FnOnce() -> T) -> Result<T, StoreError> {
        match &self.backend {
            StoreBackend::Sqlite(s) => s.batch(f),
            StoreBackend::Postgres(p) => p.batch(f),
        }
    }

    /// Let a long maintenance job that writes in many short transactions (an `import`) keep
    /// the SQLite WAL small: between its transactions, once the WAL holds 1,000 pages or more,
    /// copy every committed page into the database file with `PASSIVE` checkpoints (which
    /// never hold off a writer), so that the next write of any process starts the WAL afresh;
    /// the job waits for that, up to 500 ms, instead of outrunning the checkpoints. Without
    /// it the servers' own checkpoints fall behind a bulk writer, the WAL grows without bound,
    /// and a server's catch-up past its bound held its connection for 609 ms
    /// (docs/RELIABILITY.md). Nothing to do on PostgreSQL.
    ///
    /// # Errors
    /// [`StoreError`] when the checkpoint fails.
    pub fn settle_wal(&self) -> Result<(), StoreError> {
        match &self.backend {
            StoreBackend::Sqlite(s) => s.settle_wal(),
            StoreBackend::Postgres(_) => Ok(()),
        }
    }

    /// Delete meta-learning events older than `days` days (`--event-retention-days`).
    /// Returns how many were deleted.
    ///
    /// # Errors
    /// [`StoreError`] when the delete fails.
    ///
    /// While a background integrity check of an SQLite file runs, the deletion waits for the
    /// check to pass and runs then (this returns 0).
    pub fn apply_retention(&self, days: u32) -> Result<usize, StoreError> {
        match &self.backend {
            StoreBackend::Sqlite(s) => s.apply_retention(days),
            StoreBackend::Postgres(p) => p.write(|db| retention_now(db, days)),
        }
    }
}

fn retention_now(db: &Db<'_>, days: u32) -> Result<usize, StoreError> {
    let cutoff = chrono::Utc::now() - chrono::Duration::days(days.into());
    meta::delete_events_before(db, cutoff)
}

//! The SQLite side of [`crate::store::admin`]: counts for `status`, and the two commands that
//! work on a file without serving it, `check` (integrity and stored-value ranges) and `backup`
//! (SQLite's online backup API).
//!
//! `check` and `backup` open the file as the store's open path does (`open.rs`): never as a
//! URI, never creating it, validated as ours before anything else, on a read-write connection
//! with `PRAGMA query_only` on, so that nothing is ever written to it — damaged, foreign or
//! healthy — and no `-wal`/`-shm` is left behind that was not there before.

use std::path::{Path, PathBuf};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::service::MetaLearningService;
use crate::store::rows::admin::Stats;
use crate::store::rows::meta::EventQuery;
use crate::store::sqlite::open::{self, Found};
use crate::store::{BUSY_TIMEOUT, Db, DbPath, StoreError, from_us};

/// [`crate::store::admin::stats`] on SQLite.
pub(crate) fn stats(conn: &Connection) -> Result<Stats, StoreError> {
    let c = conn;
    let n = |sql: &str| -> Result<u64, StoreError> {
        let v: i64 = c.query_row(sql, [], |r| r.get(0))?;
        crate::store::count("row count", v)
    };
    let last: Option<i64> = c.query_row(
        "SELECT max(t) FROM (
             SELECT max(created_us) AS t FROM lessons
             UNION ALL SELECT max(created_us) FROM directive_history
             UNION ALL SELECT max(updated_us) FROM beliefs
             UNION ALL SELECT max(ts_us) FROM meta_events
             UNION ALL SELECT max(ts_us) FROM predictions
             UNION ALL SELECT max(updated_us) FROM vertices)",
        [],
        |r| r.get(0),
    )?;
    Ok(Stats {
        schema_version: c.query_row("PRAGMA user_version", [], |r| r.get(0))?,
        lessons: n("SELECT count(*) FROM lessons")?,
        active_lessons: n("SELECT count(*) FROM lessons WHERE is_active = 1")?,
        beliefs: n("SELECT count(*) FROM beliefs")?,
        directives: n("SELECT count(*) FROM directive_history")?,
        events: n("SELECT count(*) FROM meta_events")?,
        observations: n("SELECT count(*) FROM atc_observations")?,
        predictions: n("SELECT count(*) FROM predictions")?,
        vertices: n("SELECT count(*) FROM vertices")?,
        bytes: None,
        last_activity: last.map(from_us).transpose()?,
    })
}

/// One range validation of [`check`]: a loader run for its errors.
type ValueCheck<'a> = dyn Fn() -> Result<(), StoreError> + 'a;

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckReport {
    /// The file checked (symbolic links resolved).
    pub path: PathBuf,
    /// Its size in bytes, with its `-wal` when there is one.
    pub bytes: u64,
    /// Its schema version (`PRAGMA user_version`); 0 for an empty file.
    pub schema_version: i64,
    /// What `PRAGMA integrity_check` reported (at most 100 lines); empty when it said `ok`.
    pub integrity: Vec<String>,
    /// Stored values out of their range or unreadable, as the loaders report them; empty when
    /// all are in range. Not checked (and `values_checked` false) when the integrity check
    /// failed or the schema is older than this binary's (the server migrates it first).
    pub values: Vec<String>,
    /// Whether the stored values were checked.
    pub values_checked: bool,
}

impl CheckReport {
    /// No damage found.
    pub fn healthy(&self) -> bool {
        self.integrity.is_empty() && self.values.is_empty()
    }
}

/// A file's path for [`check`] and [`backup`]: `:memory:` and URIs refused, symbolic links
/// resolved, the file must exist.
fn existing_file(path: &DbPath) -> Result<(PathBuf, String), StoreError> {
    let shown = path.display();
    let p = match path {
        DbPath::File(p) => p,
        DbPath::Memory => {
            return Err(StoreError::NotAFile {
                path: shown,
                kind: "an in-memory database, which has no file",
            });
        }
        DbPath::Postgres(_) => {
            return Err(StoreError::NotAFile {
                path: shown,
                kind: "a PostgreSQL database: back it up with pg_dump or `meta-utl-mcp export`, \
                       and check it with pg_amcheck",
            });
        }
    };
    if open::looks_like_uri(&p.to_string_lossy()) {
        return Err(StoreError::Uri {
            plain: shown[5..].split(['?', '#']).next().unwrap_or("").into(),
            path: shown,
        });
    }
    let real = crate::files::resolve_path(p).map_err(|e| StoreError::Unwritable {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    match std::fs::metadata(&real) {
        Ok(m) if m.is_file() => Ok((real, shown)),
        Ok(_) => Err(StoreError::NotAFile {
            path: shown,
            kind: "not a regular file",
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::NotAFile {
            path: shown,
            kind: "it does not exist",
        }),
        Err(e) => Err(StoreError::Unwritable {
            path: shown,
            reason: format!("cannot read it: {e}"),
        }),
    }
}

/// A connection that cannot write (`query_only`) to an existing file of ours, validated.
/// Closing it never checkpoints a `-wal` that was there before into the file.
fn open_readonly(real: &Path, shown: &str) -> Result<(Connection, Found), StoreError> {
    open::check_header(real, shown)?;
    super::companions::refuse_orphaned(real, shown)?;
    let had_wal = open::sidecar(real, "-wal").exists();
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(real, flags)
        .or_else(|_| {
            Connection::open_with_flags(
                real,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        })
        .map_err(|e| open::classify(shown, e))?;
    if had_wal {
        let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    }
    let found = (|| {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.execute_batch("PRAGMA query_only = ON; BEGIN DEFERRED")?;
        let found = open::validate(&conn, shown);
        conn.execute_batch("COMMIT")?;
        found
    })()
    .map_err(|e| match e {
        StoreError::Sqlite(e) => open::classify(shown, e),
        other => other,
    })?;
    Ok((conn, found))
}

/// The file's size with its `-wal`, in bytes.
fn size_of(real: &Path) -> u64 {
    std::fs::metadata(real).map_or(0, |m| m.len())
        + std::fs::metadata(open::sidecar(real, "-wal")).map_or(0, |m| m.len())
}

/// Check a database file without writing to it: `PRAGMA integrity_check` (every B-tree, index
/// content included), then the range validation the server does when it loads its state
/// (λ, accuracies and probabilities in [0, 1], temperatures, counts ≥ 0, finite floats, known
/// names), extended to every lesson, directive, belief and event row. Safe while servers use
/// the file (one read transaction).
///
/// # Errors
/// The refusals of [`crate::store::Store::open`] that mean "not checked": [`StoreError::NotAFile`],
/// [`StoreError::Uri`], [`StoreError::NotADatabase`], [`StoreError::Foreign`],
/// [`StoreError::TooNew`], [`StoreError::Unwritable`] (cannot be read). Damage is not an error
/// but a finding: a file SQLite cannot even open as a database is reported in `integrity`.
pub fn check(path: &DbPath) -> Result<CheckReport, StoreError> {
    let (real, shown) = existing_file(path)?;
    let mut report = CheckReport {
        bytes: size_of(&real),
        path: real.clone(),
        ..CheckReport::default()
    };
    let (conn, found) = match open_readonly(&real, &shown) {
        Ok(c) => c,
        Err(StoreError::Damaged { reason, .. }) => {
            report.integrity.push(reason);
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    let findings = (|| -> Result<(), StoreError> {
        conn.execute_batch("BEGIN DEFERRED")?;
        report.schema_version = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let mut stmt = conn.prepare("PRAGMA integrity_check(100)")?;
        let lines = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        drop(stmt);
        if !(lines.len() == 1 && lines[0] == "ok") {
            report.integrity = lines;
            return Ok(());
        }
        if found != Found::Current {
            return Ok(());
        }
        report.values_checked = true;
        let db = Db::sqlite(&conn);
        let checks: [(&str, &ValueCheck<'_>); 5] = [
            ("cached state", &|| {
                crate::store::sync(&db, &mut MetaLearningService::new())
            }),
            ("lessons", &|| {
                for p in super::projects::list(&conn)? {
                    super::lessons::list(&conn, &p.name, None, true)?;
                }
                Ok(())
            }),
            ("directives", &|| {
                for p in super::projects::list(&conn)? {
                    super::directives::list(&conn, &p.name, None, usize::MAX, 0)?;
                }
                Ok(())
            }),
            ("beliefs", &|| {
                for p in super::projects::list(&conn)? {
                    super::beliefs::all(&conn, &p.name)?;
                }
                Ok(())
            }),
            ("events", &|| {
                let every = EventQuery {
                    limit: i64::MAX as usize,
                    ..EventQuery::default()
                };
                super::meta::query_events(&conn, &every).map(drop)
            }),
        ];
        for (what, run) in checks {
            match run() {
                Ok(()) => {}
                Err(StoreError::Corrupt(reason)) => report.values.push(format!("{what}: {reason}")),
                Err(StoreError::Sqlite(e)) => report.values.push(format!("{what}: {e}")),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })();
    let _ = conn.execute_batch("ROLLBACK");
    match findings {
        Ok(()) => Ok(report),
        Err(StoreError::Sqlite(e)) => match open::classify(&shown, e) {
            StoreError::Damaged { reason, .. } => {
                report.integrity.push(reason);
                Ok(report)
            }
            other => Err(other),
        },
        Err(e) => Err(e),
    }
}

/// What [`backup`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// The copy.
    pub dest: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Database pages copied.
    pub pages: u64,
    /// Times the copy started over because a server wrote to the source meanwhile.
    pub restarts: u32,
}

/// Pages copied per backup step: the source is read-locked only during a step, so servers
/// writing meanwhile wait at most one step (1024 pages of 4 KiB = 4 MiB).
pub const BACKUP_STEP_PAGES: i32 = 1024;

/// Restarts after which the rest is copied in one step (a read transaction the length of the
/// copy), so that a busy server cannot keep a backup from finishing.
const MAX_RESTARTS: u32 = 3;

/// Copy the database at `src` to the new file `dest` with SQLite's online backup API, while
/// servers may go on using `src`: the copy is one consistent state (every committed
/// transaction up to one moment, none half). The copy is written beside `dest` under a
/// temporary name, checked with `PRAGMA quick_check`, synced, and only then renamed to
/// `dest`, so `dest` is either absent or complete. `progress(done, total)` is called in
/// database pages after each step.
///
/// # Errors
/// The refusals of [`check`] for `src`; [`StoreError::Unwritable`] when `dest` exists (it is
/// never overwritten), is `src` itself, or cannot be written; [`StoreError::Damaged`] when
/// the copy fails its check (the source is damaged: run `check`); [`StoreError::Sqlite`].
pub fn backup(
    src: &DbPath,
    dest: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<BackupReport, StoreError> {
    let (real, shown) = existing_file(src)?;
    let refuse = |e: crate::files::FileError| StoreError::Unwritable {
        path: e.path,
        reason: e.reason,
    };
    // A backup never replaces a file (no --force): a copy that exists is someone's data.
    let keep = crate::files::Existing::Keep;
    let staged = crate::files::Staged::create(dest, Some(&real), keep).map_err(refuse)?;
    let (conn, _found) = open_readonly(&real, &shown)?;
    let made = copy_to(&conn, staged.path(), progress);
    drop(conn);
    let (pages, restarts) = made?;
    staged.commit(Some(&real), keep).map_err(refuse)?;
    Ok(BackupReport {
        dest: dest.to_path_buf(),
        bytes: size_of(dest),
        pages,
        restarts,
    })
}

/// Copy `src` into the new file `tmp` page by page, then check the copy; returns the pages
/// and the restarts.
fn copy_to(
    src: &Connection,
    tmp: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(u64, u32), StoreError> {
    let unwritable = |e: &dyn std::fmt::Display| StoreError::Unwritable {
        path: tmp.display().to_string(),
        reason: e.to_string(),
    };
    let mut dst = Connection::open_with_flags(
        tmp,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| unwritable(&e))?;
    let mut restarts = 0u32;
    let pages = {
        let b = Backup::new(src, &mut dst)?;
        let mut last_remaining = u64::MAX;
        loop {
            let step = if restarts >= MAX_RESTARTS {
                -1
            } else {
                BACKUP_STEP_PAGES
            };
            let r = b.step(step)?;
            let p = b.progress();
            let (remaining, total) = (p.remaining.max(0) as u64, p.pagecount.max(0) as u64);
            if remaining > last_remaining {
                restarts += 1;
            }
            last_remaining = remaining;
            progress(total - remaining.min(total), total);
            match r {
                StepResult::Done => break total,
                StepResult::More => {}
                StepResult::Busy | StepResult::Locked => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => {}
            }
        }
    };
    open::quick_check(&dst, &tmp.display().to_string())?;
    Ok((pages, restarts))
}

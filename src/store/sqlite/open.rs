//! Opening a database file without harming it: the `--db` path is resolved (symlinks followed,
//! never read as an SQLite URI), the file is created private, and an existing file is validated
//! (ours, new, or refused) and checked for damage before the first write.
//!
//! The order is the point: nothing is written to a file until it has been accepted. A refused
//! file is left byte-identical, with no `-wal` or `-shm` beside it that was not there before.
//! Validation runs on the read-write connection with `PRAGMA query_only` on, not on a
//! read-only connection: a read-only connection to a WAL file creates `-wal` and `-shm` and
//! cannot remove them when it closes (it cannot take the lock that proves it is the last
//! user), while a read-write connection that has written nothing removes them safely.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::migrate::SCHEMA_VERSION;
use crate::store::{BUSY_TIMEOUT, StoreError};

/// `PRAGMA application_id` of a meta-utl-mcp database: the ASCII bytes `MUTL`, 0x4D55544C
/// (1297437772). Set in every file we create, and in files of ours written before it existed.
pub const APPLICATION_ID: i32 = i32::from_be_bytes(*b"MUTL");

/// An existing file up to this size is checked with `PRAGMA quick_check` before the server
/// starts (about 0.1 s warm and 0.7 s from a cold disk at this size, measured on the project
/// VM). A larger file that needs no schema change is checked in the background instead: reads
/// are served meanwhile, and writes wait for the check (see [`crate::store::Store::write`]).
/// Any size works: with 0 every file that needs no schema change is checked in the background,
/// a larger bound makes start-up wait longer for a big file. Tests set it through
/// [`crate::store::OpenOptions`].
pub const INLINE_CHECK_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Tables that every file of ours has held since schema version 1 (migration 1 creates them).
/// A file without an application id, with a `user_version` in our range and these tables, is
/// one of ours from before [`APPLICATION_ID`]; anything else unmarked and not empty is foreign.
const FIRST_TABLES: [&str; 2] = ["meta_state", "meta_events"];

/// How an accepted file is to be checked for damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// New or checked already: nothing left to do.
    Done,
    /// Too large to check before serving: check it in the background.
    Background,
}

/// Whether `s` would be read as an SQLite URI (`file:…`, any case).
pub(crate) fn looks_like_uri(s: &str) -> bool {
    s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("file:"))
}

/// Open the file `p` (already resolved) for the store: create it private when missing, else
/// validate it and check it for damage, all before anything is written. Returns the
/// connection (still in the file's own journal mode), what is left to check, and whether the
/// file is one this call created ([`super::create`]: its directory entry is not yet synced).
///
/// # Errors
/// [`StoreError::NotAFile`], [`StoreError::Unwritable`], [`StoreError::NotADatabase`],
/// [`StoreError::Foreign`], [`StoreError::TooNew`], [`StoreError::Damaged`], or
/// [`StoreError::Sqlite`] (busy, among others: the caller retries the whole open).
pub(crate) fn open_file(
    p: &Path,
    shown: &str,
    inline_check_max: u64,
) -> Result<(Connection, Check, bool), StoreError> {
    let unwritable = |path: &Path, e: &dyn std::fmt::Display| StoreError::Unwritable {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let mut fresh = false;
    match fs::metadata(p) {
        Ok(m) if !m.is_file() => {
            return Err(StoreError::NotAFile {
                path: shown.into(),
                kind: file_kind(&m),
            });
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fresh = super::create::create(p).map_err(|reason| StoreError::Unwritable {
                path: shown.into(),
                reason,
            })? == super::create::Created::Ours;
        }
        Err(e) => return Err(unwritable(p, &e)),
    }
    check_header(p, shown)?;
    super::companions::refuse_orphaned(p, shown)?;
    // Refuse a file we may not write before SQLite opens it: SQLite would fall back to
    // read-only and create a `-shm` with the file's mode, which keeps refusing after the user
    // fixes the file's mode. Opening for writing (without truncating) changes nothing.
    fs::OpenOptions::new()
        .write(true)
        .open(p)
        .map_err(|e| unwritable(p, &e))?;
    let shm = sidecar(p, "-shm");
    if shm.exists() && fs::OpenOptions::new().write(true).open(&shm).is_err() {
        return Err(StoreError::Unwritable {
            path: shown.into(),
            reason: format!(
                "{} is read-only, probably left by an earlier run; delete it when no \
                 meta-utl-mcp process is running",
                shm.display()
            ),
        });
    }
    let had_wal = sidecar(p, "-wal").exists();
    // Never SQLITE_OPEN_URI; and `p` is absolute, so even SQLite's compiled-in URI support
    // (SQLITE_USE_URI) cannot read it as one.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(p, flags).map_err(|e| classify(shown, e))?;
    let checked = (|| {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        if conn.is_readonly(rusqlite::MAIN_DB)? {
            return Err(StoreError::Unwritable {
                path: shown.into(),
                reason: "SQLite can open it only read-only".into(),
            });
        }
        conn.execute_batch("PRAGMA query_only = ON")?;
        // One snapshot: another server may be creating the schema of this new file meanwhile,
        // and its tables without its user_version would look foreign.
        conn.execute_batch("BEGIN DEFERRED")?;
        let found = validate(&conn, shown);
        let ended = conn.execute_batch("COMMIT");
        let found = found?;
        ended?;
        let size = fs::metadata(p).map(|m| m.len()).unwrap_or(0)
            + fs::metadata(sidecar(p, "-wal")).map_or(0, |m| m.len());
        let check = if found == Found::New || fresh {
            Check::Done
        } else if size > inline_check_max && found == Found::Current && is_wal(&conn)? {
            Check::Background
        } else {
            quick_check(&conn, shown)?;
            Check::Done
        };
        conn.execute_batch("PRAGMA query_only = OFF")?;
        Ok(check)
    })()
    .map_err(|e| match e {
        StoreError::Sqlite(e) => classify(shown, e),
        other => other,
    });
    match checked {
        Ok(check) => Ok((conn, check, fresh)),
        Err(e) => {
            // A WAL that was there before holds committed data of its own: closing must not
            // checkpoint it into the refused file. Without one, the WAL this connection
            // created is empty, and closing removes it and the `-shm`.
            if had_wal {
                let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
            }
            Err(e)
        }
    }
}

/// What [`validate`] found in an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Empty: no schema, `user_version` 0, no application id.
    New,
    /// Ours, at [`SCHEMA_VERSION`] and marked.
    Current,
    /// Ours, to be migrated or marked.
    Older,
}

/// Decide whether an existing SQLite file may be used: empty, or ours (marked with
/// [`APPLICATION_ID`], or unmarked from before it with our tables and a `user_version` in our
/// range). Reads only.
pub(crate) fn validate(conn: &Connection, shown: &str) -> Result<Found, StoreError> {
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
         ORDER BY name",
    )?;
    let tables = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    let ours_unmarked = FIRST_TABLES.iter().all(|t| tables.iter().any(|n| n == t));
    let too_new = || StoreError::TooNew {
        path: shown.into(),
        found: version,
        supported: SCHEMA_VERSION,
    };
    match app_id {
        APPLICATION_ID if version > SCHEMA_VERSION => Err(too_new()),
        APPLICATION_ID if version == SCHEMA_VERSION => Ok(Found::Current),
        APPLICATION_ID => Ok(Found::Older),
        0 if objects == 0 && version == 0 => Ok(Found::New),
        0 if ours_unmarked && version > SCHEMA_VERSION => Err(too_new()),
        0 if ours_unmarked && version >= 1 => Ok(Found::Older),
        _ => {
            let mut names = tables
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if tables.len() > 3 {
                names.push_str(", …");
            }
            let owner = if app_id == 0 {
                "no application id".to_string()
            } else {
                format!("application id {app_id:#010x}")
            };
            Err(StoreError::Foreign {
                path: shown.into(),
                detail: format!(
                    "an SQLite database of another application: {owner}, user_version \
                     {version}, tables: {}",
                    if names.is_empty() { "none" } else { &names }
                ),
            })
        }
    }
}

/// `PRAGMA quick_check` (B-tree structure, page and cell bounds, free list; not index content),
/// as [`StoreError::Damaged`] naming what it found.
///
/// # Errors
/// [`StoreError::Damaged`] when the check finds anything or fails with SQLITE_CORRUPT.
pub(crate) fn quick_check(conn: &Connection, shown: &str) -> Result<(), StoreError> {
    let found = conn
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| classify(shown, e))?;
    if found.len() == 1 && found[0] == "ok" {
        Ok(())
    } else {
        Err(StoreError::Damaged {
            path: shown.into(),
            reason: format!("PRAGMA quick_check found: {}", found.join("; ")),
        })
    }
}

fn is_wal(conn: &Connection) -> rusqlite::Result<bool> {
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    Ok(mode.eq_ignore_ascii_case("wal"))
}

/// Refuse a non-empty file that does not start with the SQLite header, without opening it in
/// SQLite.
pub(crate) fn check_header(p: &Path, shown: &str) -> Result<(), StoreError> {
    let mut header = [0u8; 16];
    let mut file = fs::File::open(p).map_err(|e| StoreError::Unwritable {
        path: shown.into(),
        reason: e.to_string(),
    })?;
    let mut n = 0;
    while n < header.len() {
        match file.read(&mut header[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(StoreError::Unwritable {
                    path: shown.into(),
                    reason: e.to_string(),
                });
            }
        }
    }
    if n > 0 && (n < 16 || &header != b"SQLite format 3\0") {
        return Err(StoreError::NotADatabase { path: shown.into() });
    }
    Ok(())
}

/// An SQLite error met while opening a file, as the refusal it means: damage (the file has an
/// SQLite header, so "not a database" from SQLite means a damaged one), permissions, or the
/// error itself (busy, which the caller retries, and the rest).
pub(crate) fn classify(shown: &str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Damaged {
            path: shown.into(),
            reason: e.to_string(),
        },
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::Unwritable {
                path: shown.into(),
                reason: e.to_string(),
            }
        }
        _ => StoreError::Sqlite(e),
    }
}

/// `p` with `suffix` appended to its file name (`state.db-wal`).
pub(crate) fn sidecar(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(unix)]
fn file_kind(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn file_kind(m: &fs::Metadata) -> &'static str {
    if m.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn symlinks_are_resolved_also_when_dangling_and_relative() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("sub/real.db", root.join("link.db")).unwrap();
        std::os::unix::fs::symlink(root.join("link.db"), root.join("link2.db")).unwrap();
        assert_eq!(
            crate::files::resolve_path(&root.join("link2.db")).unwrap(),
            root.join("sub/real.db")
        );
        assert_eq!(
            crate::files::resolve_path(&root.join("a/../b/./c.db")).unwrap(),
            root.join("b/c.db")
        );
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(crate::files::resolve_path(&root.join("loop")).is_err());
    }

    #[test]
    fn only_file_colon_is_a_uri() {
        assert!(looks_like_uri("file:/x/u.db?cache=private"));
        assert!(looks_like_uri("FILE:u.db"));
        assert!(!looks_like_uri("./file:u.db"));
        assert!(!looks_like_uri("fil"));
        assert!(!looks_like_uri("é"));
    }
}

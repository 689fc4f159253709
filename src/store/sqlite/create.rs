//! Creating a new database file with one sync: the schema is built in a private temporary
//! file beside the target (from one batch of `CREATE` statements, [`SNAPSHOT`], then the
//! migrations after it), synced once, and linked into place.
//!
//! Creating the file in place cost six syncs before the first answer (measured with strace):
//! switching a new file to WAL goes through a rollback journal (the journal, its directory,
//! the journal again, the file), and the first commit into the new WAL syncs the WAL header
//! and the directory. Here the temporary file is written with no journal and no syncs (it
//! is nobody's until it is linked, and a crash leaves only a temporary file), switched to WAL,
//! closed, synced once, and then hard-linked to the target name. `link` fails when the name
//! exists, so when several servers create one database at the same moment exactly one file
//! wins and every server opens that one; the losers delete their temporary file. The
//! directory entry is synced later, by the checkpoint thread before its first checkpoint
//! ([`super::checkpoint`]): until a checkpoint has synced the file, a power cut can lose the
//! commits in the WAL anyway (`synchronous=NORMAL`).

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

/// What [`create`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Created {
    /// Our new file is in place, schema complete, in WAL mode.
    Ours,
    /// Another server's file took the name first: open that one.
    Theirs,
}

/// Create the database `p` (resolved, not existing) with the complete schema, or find that
/// another process just did. The directory is created 0700 when missing, the file 0600.
///
/// # Errors
/// The directory or temporary file cannot be created or written (a message naming the path),
/// or building the schema failed.
pub(super) fn create(p: &Path) -> Result<Created, String> {
    let dir = p
        .parent()
        .ok_or_else(|| format!("{} has no directory", p.display()))?;
    if !dir.exists() {
        super::file::create_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = temporary_name(p);
    let result = build(&tmp).and_then(|()| match fs::hard_link(&tmp, p) {
        Ok(()) => Ok(Created::Ours),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Created::Theirs),
        Err(e) => Err(format!("{}: {e}", p.display())),
    });
    let _ = fs::remove_file(&tmp);
    result
}

/// `.NAME.new-PID-NANOS` beside `p`: private to this process and attempt.
fn temporary_name(p: &Path) -> PathBuf {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    p.with_file_name(format!(".{name}.new-{}-{nanos}", std::process::id()))
}

/// The schema after the first [`SNAPSHOT_VERSION`] migrations, as one batch of `CREATE`
/// statements: running the migrations one by one re-reads the whole schema after each
/// `ALTER TABLE` and parses every statement twice, 11.5 M of the 14.7 M instructions of a
/// start-up on a new database (callgrind). The snapshot covers every migration (a unit test
/// insists): one migration left after it, the four `ALTER TABLE`s of migration 12, cost
/// 6.3 M of 16.3 M instructions, 2–3 ms of a 7 ms start-up.
///
/// Adding a migration: append it to [`super::migrate::MIGRATIONS`], then write `schema_vN.sql` from
/// a database the migrations made (`SELECT sql FROM sqlite_schema`, in `rowid` order, without
/// FTS5's shadow tables and `family_version`), keeping SQLite's text of each statement
/// exactly; the test `a_new_file_is_the_file_the_migrations_make` compares the two.
const SNAPSHOT: &str = include_str!("schema_v20.sql");

/// The `user_version` [`SNAPSHOT`] stands for; [`super::migrate::migrate`] runs any later ones.
const SNAPSHOT_VERSION: usize = 20;

/// Create the tables of [`SNAPSHOT`] in the empty database `conn`, marked at
/// [`SNAPSHOT_VERSION`], in one transaction.
fn snapshot(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN; {SNAPSHOT} PRAGMA user_version = {SNAPSHOT_VERSION}; COMMIT;"
    ))
}

/// Write the schema into the new file `tmp`, switch it to WAL, close it and sync it.
fn build(tmp: &Path) -> Result<(), String> {
    let shown = |e: &dyn std::fmt::Display| format!("{}: {e}", tmp.display());
    super::file::create_private_file(tmp).map_err(|e| shown(&e))?;
    {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(tmp, flags).map_err(|e| shown(&e))?;
        (|| {
            // Nobody else sees this file before it is complete and synced below.
            conn.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")?;
            snapshot(&conn)?;
            super::migrate::migrate(&conn)?;
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(rusqlite::Error::InvalidQuery);
            }
            Ok(())
        })()
        .map_err(|e: rusqlite::Error| shown(&e))?;
        // Closing the last connection removes the empty `-wal` and `-shm`.
    }
    fs::File::open(tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| shown(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table's rows, in order, as text.
    fn contents(conn: &Connection) -> Vec<(String, Vec<String>)> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap();
        let tables: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        tables
            .into_iter()
            .map(|t| {
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT quote(t.rowid), * FROM \"{t}\" AS t ORDER BY 1"
                    ))
                    .or_else(|_| conn.prepare(&format!("SELECT * FROM \"{t}\"")))
                    .unwrap();
                let n = stmt.column_count();
                let rows = stmt
                    .query_map([], |r| {
                        Ok((0..n)
                            .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                            .collect::<Vec<_>>()
                            .join("|"))
                    })
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                (t, rows)
            })
            .collect()
    }

    /// One row of `sqlite_schema`: type, name, table, SQL.
    type SchemaRow = (String, String, String, Option<String>);

    fn describe(conn: &Connection) -> (Vec<SchemaRow>, i64, i32) {
        let mut stmt = conn
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name")
            .unwrap();
        let schema = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let version = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        let id = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        (schema, version, id)
    }

    #[test]
    fn a_new_file_is_the_file_the_migrations_make() {
        let dir = tempfile::tempdir().unwrap();
        let migrated = Connection::open(dir.path().join("migrated.db")).unwrap();
        super::super::migrate::migrate(&migrated).unwrap();
        let p = dir.path().join("sub").join("new.db");
        assert_eq!(create(&p).unwrap(), Created::Ours);
        let created = Connection::open(&p).unwrap();
        assert_eq!(describe(&created), describe(&migrated));
        assert_eq!(contents(&created), contents(&migrated));
        let mode: String = created
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        // The snapshot is as new as the binary: each migration left after it costs a re-read of
        // the whole schema at every new database's start-up.
        assert_eq!(
            SNAPSHOT_VERSION,
            super::super::migrate::MIGRATIONS.len(),
            "write src/store/sqlite/schema_v{}.sql for the new migration (see SNAPSHOT)",
            super::super::migrate::MIGRATIONS.len()
        );
    }

    #[test]
    fn a_name_taken_meanwhile_is_left_to_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("taken.db");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(create(&p).unwrap(), Created::Theirs);
        assert_eq!(std::fs::read(&p).unwrap(), b"");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "the temporary file is removed");
    }
}

//! Request keys: the answers of write calls that carried a `request_key`, so that a retry of
//! the same call (after a lost answer, or a commit whose outcome was unknown) answers the first
//! call's result instead of writing again. Kept [`KEEP_DAYS`] days; one table, written in the
//! write's own transaction, so a key is stored exactly when the write is.

use rusqlite::{OptionalExtension, params};

use super::pg::get;
use super::{Backend, Db, StoreError};

/// Schema of the request keys (SQLite migration 13; PostgreSQL migration 2 is the same table).
pub const MIGRATION: &str = "
CREATE TABLE request_keys (
    tool         TEXT    NOT NULL,
    request_key  TEXT    NOT NULL,
    arguments    TEXT    NOT NULL,
    answer       TEXT    NOT NULL,
    created_us   INTEGER NOT NULL,
    PRIMARY KEY (tool, request_key)
) STRICT;
CREATE INDEX request_keys_created ON request_keys (created_us);
";

/// Days a request key is kept: a retry later than this writes again.
pub const KEEP_DAYS: i64 = 7;

/// What the first call with a key stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The first call's arguments, as canonical JSON (keys sorted), without the key itself.
    pub arguments: String,
    /// Its `structuredContent` (a successful answer: failures are not stored), as JSON.
    pub answer: String,
}

/// The answer stored under `(tool, key)`, if a call with it was committed in the last
/// [`KEEP_DAYS`] days.
///
/// # Errors
/// [`StoreError`] on a failed query.
pub fn find(db: &Db<'_>, tool: &str, key: &str) -> Result<Option<Recorded>, StoreError> {
    let row = match db.backend() {
        Backend::Sqlite(conn) => conn
            .prepare_cached(
                "SELECT arguments, answer FROM request_keys WHERE tool = ?1 AND request_key = ?2",
            )?
            .query_row(params![tool, key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
        Backend::Postgres(pg) => pg
            .query_opt(
                "SELECT arguments, answer FROM request_keys WHERE tool = $1 AND request_key = $2",
                &[&tool, &key],
            )?
            .map(|r| Ok::<_, StoreError>((get(&r, 0)?, get(&r, 1)?)))
            .transpose()?,
    };
    Ok(row.map(|(arguments, answer)| Recorded { arguments, answer }))
}

/// Store the answer of a call with `(tool, key)`, in the call's transaction, and forget keys
/// older than [`KEEP_DAYS`].
///
/// # Errors
/// [`StoreError`] on a failed statement (the key present already among them: call [`find`]
/// first, in the same transaction).
pub fn insert(
    db: &Db<'_>,
    tool: &str,
    key: &str,
    recorded: &Recorded,
    now_us: i64,
) -> Result<(), StoreError> {
    let cutoff = now_us - KEEP_DAYS * 86_400_000_000;
    match db.backend() {
        Backend::Sqlite(conn) => {
            conn.prepare_cached("DELETE FROM request_keys WHERE created_us < ?1")?
                .execute([cutoff])?;
            conn.prepare_cached(
                "INSERT INTO request_keys (tool, request_key, arguments, answer, created_us)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                tool,
                key,
                recorded.arguments,
                recorded.answer,
                now_us
            ])?;
        }
        Backend::Postgres(pg) => {
            pg.execute("DELETE FROM request_keys WHERE created_us < $1", &[&cutoff])?;
            pg.execute(
                "INSERT INTO request_keys (tool, request_key, arguments, answer, created_us)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&tool, &key, &recorded.arguments, &recorded.answer, &now_us],
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::pg::testing::both_backends;

    const DAY_US: i64 = 86_400_000_000;

    fn found_for_its_tool_only_and_forgotten_after_keep_days(store: &Store) {
        let first = Recorded {
            arguments: r#"{"a":1}"#.into(),
            answer: r#"{"ok":true}"#.into(),
        };
        store
            .write(|db| insert(db, "record_directive", "k1", &first, 10 * DAY_US))
            .unwrap();
        let found = store.read(|db| find(db, "record_directive", "k1"));
        assert_eq!(found.unwrap(), Some(first.clone()));
        let other = store.read(|db| find(db, "record_calibration_observations", "k1"));
        assert_eq!(other.unwrap(), None);
        // The same key twice for one tool is refused by the table.
        assert!(
            store
                .write(|db| insert(db, "record_directive", "k1", &first, 10 * DAY_US))
                .is_err()
        );
        // A later insert forgets keys older than KEEP_DAYS, and keeps younger ones.
        let now = 10 * DAY_US + KEEP_DAYS * DAY_US + 1;
        store
            .write(|db| insert(db, "record_directive", "k2", &first, now - 1))
            .unwrap();
        assert!(
            store
                .read(|db| find(db, "record_directive", "k1"))
                .unwrap()
                .is_some()
        );
        store
            .write(|db| insert(db, "record_directive", "k3", &first, now))
            .unwrap();
        let gone = store.read(|db| find(db, "record_directive", "k1"));
        assert_eq!(gone.unwrap(), None);
        assert!(
            store
                .read(|db| find(db, "record_directive", "k2"))
                .unwrap()
                .is_some()
        );
    }
    both_backends!(
        found_for_its_tool_only_and_forgotten_after_keep_days,
        sqlite_found_for_its_tool_only_and_forgotten,
        postgres_found_for_its_tool_only_and_forgotten
    );
}

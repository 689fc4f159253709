//! The SQLite half of the request keys.

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::StoreError;
use crate::store::rows::request_keys::{Recorded, cutoff};

/// Schema of the request keys (migration 13; PostgreSQL migration 2 is the same table).
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

/// SQLite half of [`crate::store::request_keys::find`].
pub(crate) fn find(
    conn: &Connection,
    tool: &str,
    key: &str,
) -> Result<Option<Recorded>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT arguments, answer FROM request_keys WHERE tool = ?1 AND request_key = ?2",
        )?
        .query_row(params![tool, key], |r| {
            Ok(Recorded {
                arguments: r.get(0)?,
                answer: r.get(1)?,
            })
        })
        .optional()?)
}

/// SQLite half of [`crate::store::request_keys::insert`].
pub(crate) fn insert(
    conn: &Connection,
    tool: &str,
    key: &str,
    recorded: &Recorded,
    now_us: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM request_keys WHERE created_us < ?1")?
        .execute([cutoff(now_us)])?;
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
    Ok(())
}

//! Request keys: the answers of write calls that carried a `request_key`, so that a retry of
//! the same call (after a lost answer, or a commit whose outcome was unknown) answers the first
//! call's result instead of writing again. Kept [`KEEP_DAYS`] days; one table, written in the
//! write's own transaction, so a key is stored exactly when the write is.

use super::{Backend, Db, StoreError, pg, sqlite};
pub use crate::store::rows::request_keys::{KEEP_DAYS, Recorded};

/// The answer stored under `(tool, key)`, if a call with it was committed in the last
/// [`KEEP_DAYS`] days.
///
/// # Errors
/// [`StoreError`] on a failed query.
pub fn find(db: &Db<'_>, tool: &str, key: &str) -> Result<Option<Recorded>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::request_keys::find(conn, tool, key),
        Backend::Postgres(pg) => pg::request_keys::find(pg, tool, key),
    }
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
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::request_keys::insert(conn, tool, key, recorded, now_us),
        Backend::Postgres(pg) => pg::request_keys::insert(pg, tool, key, recorded, now_us),
    }
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

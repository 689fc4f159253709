//! What the operator's console needs from a database beyond the tools' own functions: counts
//! and last activity for `status` (both backends), and `check` and `backup` of an SQLite file
//! (see `sqlite/admin.rs`; a PostgreSQL database has its own tools for both).

pub use super::sqlite::admin::{BACKUP_STEP_PAGES, BackupReport, CheckReport, backup, check};
use super::{Backend, pg, sqlite};
pub use crate::store::rows::admin::Stats;
use crate::store::{Db, StoreError};

/// Count the rows of each family and find the newest activity.
///
/// # Errors
/// [`StoreError`] on SQL failure or an out-of-range time.
pub fn stats(db: &Db<'_>) -> Result<Stats, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::admin::stats(conn),
        Backend::Postgres(pg) => pg::admin::stats(pg),
    }
}

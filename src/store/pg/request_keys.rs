//! The PostgreSQL half of the request keys (schema: `request_keys.sql`, migration 2).

use super::{Pg, get};
use crate::store::StoreError;
use crate::store::rows::request_keys::{Recorded, cutoff};

/// PostgreSQL half of [`crate::store::request_keys::find`].
pub(crate) fn find(pg: &Pg, tool: &str, key: &str) -> Result<Option<Recorded>, StoreError> {
    pg.query_opt(
        "SELECT arguments, answer FROM request_keys WHERE tool = $1 AND request_key = $2",
        &[&tool, &key],
    )?
    .map(|r| {
        Ok(Recorded {
            arguments: get(&r, 0)?,
            answer: get(&r, 1)?,
        })
    })
    .transpose()
}

/// PostgreSQL half of [`crate::store::request_keys::insert`].
pub(crate) fn insert(
    pg: &Pg,
    tool: &str,
    key: &str,
    recorded: &Recorded,
    now_us: i64,
) -> Result<(), StoreError> {
    pg.execute(
        "DELETE FROM request_keys WHERE created_us < $1",
        &[&cutoff(now_us)],
    )?;
    pg.execute(
        "INSERT INTO request_keys (tool, request_key, arguments, answer, created_us)
         VALUES ($1, $2, $3, $4, $5)",
        &[&tool, &key, &recorded.arguments, &recorded.answer, &now_us],
    )?;
    Ok(())
}

//! PostgreSQL twin of the `status` part of `store/admin.rs`. (`check` and `backup` work on an
//! SQLite file; a PostgreSQL database is checked and backed up with PostgreSQL's own tools,
//! `pg_amcheck` and `pg_dump`.)

use super::{Pg, get};
use crate::store::rows::admin::Stats;
use crate::store::{StoreError, count, from_us};

/// [`crate::store::admin::stats`] on PostgreSQL; `schema_version` is the PostgreSQL schema's
/// ([`super::SCHEMA_VERSION`]).
///
/// # Errors
/// [`StoreError`] on failure or an out-of-range time.
pub fn stats(pg: &Pg) -> Result<Stats, StoreError> {
    let row = pg.query_one(
        "SELECT (SELECT version FROM schema_version),
                (SELECT count(*) FROM lessons),
                (SELECT count(*) FROM lessons WHERE is_active),
                (SELECT count(*) FROM beliefs),
                (SELECT count(*) FROM directive_history),
                (SELECT count(*) FROM meta_events),
                (SELECT count(*) FROM atc_observations),
                (SELECT count(*) FROM predictions),
                (SELECT count(*) FROM vertices),
                (SELECT max(t) FROM (
                     SELECT max(created_us) AS t FROM lessons
                     UNION ALL SELECT max(created_us) FROM directive_history
                     UNION ALL SELECT max(updated_us) FROM beliefs
                     UNION ALL SELECT max(ts_us) FROM meta_events
                     UNION ALL SELECT max(ts_us) FROM predictions
                     UNION ALL SELECT max(updated_us) FROM vertices) AS newest),
                (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::BIGINT
                   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = current_schema() AND c.relkind = 'r')",
        &[],
    )?;
    let n = |i: usize| -> Result<u64, StoreError> { count("row count", get::<i64>(&row, i)?) };
    Ok(Stats {
        schema_version: get(&row, 0)?,
        lessons: n(1)?,
        active_lessons: n(2)?,
        beliefs: n(3)?,
        directives: n(4)?,
        events: n(5)?,
        observations: n(6)?,
        predictions: n(7)?,
        vertices: n(8)?,
        bytes: Some(n(10)?),
        last_activity: get::<Option<i64>>(&row, 9)?.map(from_us).transpose()?,
    })
}

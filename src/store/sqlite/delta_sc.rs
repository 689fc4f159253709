//! The SQLite side of [`crate::store::delta_sc`]: its SQL, the family's migrations and their
//! data steps.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use uuid::Uuid;

use crate::service::delta_sc::{
    Fingerprint, StoredVertex, SurpriseNormalizer, VertexCache, VertexWrite,
    surprise::HISTOGRAM_BINS,
};
use crate::service::vocab::NUM_EMBEDDERS;
use crate::store::rows::delta_sc::{
    decode_fingerprint, encode_e1, encode_fingerprint, histogram_rows, put_histogram, refresh_index,
};
use crate::store::{StoreError, to_us};

/// Schema of the vertex family.
pub const MIGRATION: &str = "
CREATE TABLE vertices (
    id           TEXT    PRIMARY KEY,
    seq          INTEGER NOT NULL UNIQUE,
    updated_us   INTEGER NOT NULL,
    e1           BLOB    NOT NULL,
    fingerprint  BLOB    NOT NULL
) STRICT;

CREATE TABLE vertex_versions (
    vertex_id    TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    created_us   INTEGER NOT NULL,
    fingerprint  BLOB    NOT NULL,
    PRIMARY KEY (vertex_id, version)
) STRICT;

CREATE TABLE surprise_histograms (
    embedder_index  INTEGER PRIMARY KEY CHECK (embedder_index BETWEEN 0 AND 12),
    counts          BLOB    NOT NULL
) STRICT;
";

fn sql_type(e: rusqlite::types::FromSqlError) -> StoreError {
    StoreError::Corrupt(format!("vertex row has a column of the wrong type: {e}"))
}

/// [`crate::store::delta_sc::refresh`] on SQLite.
pub(crate) fn refresh(conn: &Connection, cache: &mut VertexCache) -> Result<(), StoreError> {
    let (max_seq, count): (i64, i64) = conn.query_row(
        "SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM vertices",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let rolled_back = match cache.unconfirmed.take() {
        Some((seq, id)) => conn
            .query_row(
                "SELECT 1 FROM vertices WHERE seq = ?1 AND id = ?2",
                params![seq, id.to_string()],
                |_| Ok(()),
            )
            .optional()?
            .is_none(),
        None => false,
    };
    refresh_index(cache, max_seq, count, rolled_back, |since, add| {
        let mut stmt = conn.prepare("SELECT id, e1 FROM vertices WHERE seq > ?1 ORDER BY seq")?;
        let mut rows = stmt.query([since])?;
        while let Some(row) = rows.next()? {
            add(
                row.get_ref(0)?.as_str().map_err(sql_type)?,
                row.get_ref(1)?.as_blob().map_err(sql_type)?,
            )?;
        }
        Ok(())
    })?;
    cache.normalizer = load_normalizer(conn)?;
    Ok(())
}

/// [`crate::store::delta_sc::load_normalizer`] on SQLite.
pub(crate) fn load_normalizer(conn: &Connection) -> Result<SurpriseNormalizer, StoreError> {
    let mut counts = vec![vec![0u64; HISTOGRAM_BINS]; NUM_EMBEDDERS];
    let mut stmt = conn.prepare_cached("SELECT embedder_index, counts FROM surprise_histograms")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let i: i64 = row.get(0)?;
        let blob = row.get_ref(1)?.as_blob().map_err(sql_type)?;
        put_histogram(&mut counts, i, blob)?;
    }
    SurpriseNormalizer::from_counts(counts).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Write the surprise normaliser (part of [`persist`]).
pub(crate) fn save_normalizer(conn: &Connection, n: &SurpriseNormalizer) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO surprise_histograms (embedder_index, counts) VALUES (?1, ?2)
         ON CONFLICT (embedder_index) DO UPDATE SET counts = excluded.counts",
    )?;
    for (e, blob) in histogram_rows(n) {
        stmt.execute(params![e, blob])?;
    }
    Ok(())
}

/// [`crate::store::delta_sc::load_vertex`] on SQLite.
pub(crate) fn load_vertex(conn: &Connection, id: Uuid) -> Result<Option<StoredVertex>, StoreError> {
    let Some(current) = load_current(conn, id)? else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(
        "SELECT fingerprint FROM vertex_versions WHERE vertex_id = ?1 ORDER BY version",
    )?;
    let mut rows = stmt.query([id.to_string()])?;
    let mut versions = Vec::new();
    while let Some(row) = rows.next()? {
        versions.push(decode_fingerprint(
            row.get_ref(0)?.as_blob().map_err(sql_type)?,
        )?);
    }
    Ok(Some(StoredVertex { current, versions }))
}

/// [`crate::store::delta_sc::load_current`] on SQLite.
pub(crate) fn load_current(conn: &Connection, id: Uuid) -> Result<Option<Fingerprint>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT fingerprint FROM vertices WHERE id = ?1")?;
    let mut rows = stmt.query([id.to_string()])?;
    // Decoded straight from SQLite's buffer, without copying the blob first.
    rows.next()?
        .map(|row| decode_fingerprint(row.get_ref(0)?.as_blob().map_err(sql_type)?))
        .transpose()
}

/// [`crate::store::delta_sc::persist`] on SQLite.
pub(crate) fn persist(
    conn: &Connection,
    write: &VertexWrite<'_>,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let key = write.vertex_id.to_string();
    let now_us = to_us(now);
    let next_version: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) + 1 FROM vertex_versions WHERE vertex_id = ?1",
        [&key],
        |r| r.get(0),
    )?;
    {
        let mut insert = conn.prepare_cached(
            "INSERT INTO vertex_versions (vertex_id, version, created_us, fingerprint)
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (k, fp) in write.append.iter().enumerate() {
            insert.execute(params![
                key,
                next_version + k as i64,
                now_us,
                encode_fingerprint(fp)
            ])?;
        }
    }
    conn.execute(
        "DELETE FROM vertex_versions WHERE vertex_id = ?1 AND version <= (
             SELECT MAX(version) FROM vertex_versions WHERE vertex_id = ?1) - ?2",
        params![key, write.keep_versions as i64],
    )?;
    let seq = put_current(conn, write.vertex_id, write.current, now)?;
    save_normalizer(conn, &write.normalizer)?;
    Ok(seq)
}

/// [`crate::store::delta_sc::put_current`] on SQLite.
pub(crate) fn put_current(
    conn: &Connection,
    id: Uuid,
    fp: &Fingerprint,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let seq: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM vertices", [], |r| {
        r.get(0)
    })?;
    let e1 = encode_e1(fp);
    let mut stmt = conn.prepare_cached(
        "INSERT INTO vertices (id, seq, updated_us, e1, fingerprint) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, updated_us = excluded.updated_us,
             e1 = excluded.e1, fingerprint = excluded.fingerprint",
    )?;
    stmt.execute(params![
        id.to_string(),
        seq,
        to_us(now),
        e1,
        encode_fingerprint(fp)
    ])?;
    Ok(seq)
}

/// [`crate::store::delta_sc::count`] on SQLite.
pub(crate) fn count(conn: &Connection) -> Result<usize, StoreError> {
    let n: i64 = conn.query_row("SELECT COUNT(*) FROM vertices", [], |r| r.get(0))?;
    Ok(n as usize)
}

//! PostgreSQL twin of `store/delta_sc.rs`: vertices (current fingerprint and E1 vector under a
//! change sequence number), their kept versions, and the surprise histograms. Blobs are
//! encoded and decoded by the functions of `rows/vertices.rs`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Pg, get};
use crate::service::delta_sc::{
    Fingerprint, StoredVertex, SurpriseNormalizer, VertexCache, VertexWrite,
    surprise::HISTOGRAM_BINS,
};
use crate::service::vocab::NUM_EMBEDDERS;
use crate::store::rows::delta_sc::{
    decode_fingerprint, encode_e1, encode_fingerprint, histogram_rows, put_histogram, refresh_index,
};
use crate::store::{StoreError, to_us};

/// [`crate::store::delta_sc::refresh`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure or corrupt rows.
pub fn refresh(pg: &Pg, cache: &mut VertexCache) -> Result<(), StoreError> {
    let row = pg.query_one("SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM vertices", &[])?;
    let (max_seq, count): (i64, i64) = (get(&row, 0)?, get(&row, 1)?);
    let rolled_back = match cache.unconfirmed.take() {
        Some((seq, id)) => pg
            .query_opt(
                "SELECT 1 FROM vertices WHERE seq = $1 AND id = $2",
                &[&seq, &id.to_string()],
            )?
            .is_none(),
        None => false,
    };
    refresh_index(cache, max_seq, count, rolled_back, |since, add| {
        for row in pg.query(
            "SELECT id, e1 FROM vertices WHERE seq > $1 ORDER BY seq",
            &[&since],
        )? {
            add(get(&row, 0)?, get(&row, 1)?)?;
        }
        Ok(())
    })?;
    cache.normalizer = load_normalizer(pg)?;
    Ok(())
}

/// [`crate::store::delta_sc::load_normalizer`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure or a malformed row.
pub fn load_normalizer(pg: &Pg) -> Result<SurpriseNormalizer, StoreError> {
    let mut counts = vec![vec![0u64; HISTOGRAM_BINS]; NUM_EMBEDDERS];
    for row in pg.query(
        "SELECT embedder_index, counts FROM surprise_histograms",
        &[],
    )? {
        put_histogram(&mut counts, get(&row, 0)?, get(&row, 1)?)?;
    }
    SurpriseNormalizer::from_counts(counts).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// `store::delta_sc::save_normalizer` on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn save_normalizer(pg: &Pg, n: &SurpriseNormalizer) -> Result<(), StoreError> {
    for (e, blob) in histogram_rows(n) {
        pg.execute(
            "INSERT INTO surprise_histograms (embedder_index, counts) VALUES ($1, $2)
             ON CONFLICT (embedder_index) DO UPDATE SET counts = EXCLUDED.counts",
            &[&e, &blob],
        )?;
    }
    Ok(())
}

/// [`crate::store::delta_sc::load_vertex`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure or corrupt blobs.
pub fn load_vertex(pg: &Pg, id: Uuid) -> Result<Option<StoredVertex>, StoreError> {
    let Some(current) = load_current(pg, id)? else {
        return Ok(None);
    };
    let versions = pg
        .query(
            "SELECT fingerprint FROM vertex_versions WHERE vertex_id = $1 ORDER BY version",
            &[&id.to_string()],
        )?
        .iter()
        .map(|r| decode_fingerprint(get(r, 0)?))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(StoredVertex { current, versions }))
}

/// [`crate::store::delta_sc::load_current`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure or a corrupt blob.
pub fn load_current(pg: &Pg, id: Uuid) -> Result<Option<Fingerprint>, StoreError> {
    pg.query_opt(
        "SELECT fingerprint FROM vertices WHERE id = $1",
        &[&id.to_string()],
    )?
    .map(|r| decode_fingerprint(get(&r, 0)?))
    .transpose()
}

/// [`crate::store::delta_sc::persist`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn persist(pg: &Pg, write: &VertexWrite<'_>, now: DateTime<Utc>) -> Result<i64, StoreError> {
    let key = write.vertex_id.to_string();
    let now_us = to_us(now);
    let row = pg.query_one(
        "SELECT COALESCE(MAX(version), 0) + 1 FROM vertex_versions WHERE vertex_id = $1",
        &[&key],
    )?;
    let next_version: i64 = get(&row, 0)?;
    for (k, fp) in write.append.iter().enumerate() {
        pg.execute(
            "INSERT INTO vertex_versions (vertex_id, version, created_us, fingerprint)
             VALUES ($1, $2, $3, $4)",
            &[
                &key,
                &(next_version + k as i64),
                &now_us,
                &encode_fingerprint(fp),
            ],
        )?;
    }
    pg.execute(
        "DELETE FROM vertex_versions WHERE vertex_id = $1 AND version <= (
             SELECT MAX(version) FROM vertex_versions WHERE vertex_id = $1) - $2",
        &[&key, &(write.keep_versions as i64)],
    )?;
    let seq = put_current(pg, write.vertex_id, write.current, now)?;
    save_normalizer(pg, &write.normalizer)?;
    Ok(seq)
}

/// [`crate::store::delta_sc::put_current`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn put_current(
    pg: &Pg,
    id: Uuid,
    fp: &Fingerprint,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let row = pg.query_one("SELECT COALESCE(MAX(seq), 0) + 1 FROM vertices", &[])?;
    let seq: i64 = get(&row, 0)?;
    pg.execute(
        "INSERT INTO vertices (id, seq, updated_us, e1, fingerprint) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, updated_us = EXCLUDED.updated_us,
             e1 = EXCLUDED.e1, fingerprint = EXCLUDED.fingerprint",
        &[
            &id.to_string(),
            &seq,
            &to_us(now),
            &encode_e1(fp),
            &encode_fingerprint(fp),
        ],
    )?;
    Ok(seq)
}

/// [`crate::store::delta_sc::count`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn count(pg: &Pg) -> Result<usize, StoreError> {
    let row = pg.query_one("SELECT COUNT(*) FROM vertices", &[])?;
    Ok(get::<i64>(&row, 0)? as usize)
}

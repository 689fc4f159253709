//! Vertex persistence for `gwt_compute_delta_sc`: current fingerprints, their last 10 versions,
//! the per-embedder running distance distributions, and the cache refresh of the E1 index.
//!
//! The writes persist what the service's update plan says ([`persist`] a
//! [`VertexWrite`]); which fingerprints join a vertex's history is decided there
//! (`delta_sc::version_history`), and the caller applies the cache side after the write. Only
//! [`refresh`], the family's loader in `store::sync`, sets the cached state.
//!
//! Fingerprints are stored as compact binary BLOBs (little-endian, see [`encode_fingerprint`]);
//! each vertex row also keeps its E1 vector alone so that start-up loads the index without
//! decoding whole fingerprints. Every change of a vertex row takes the next value of `seq`, so a
//! process refreshes its cached index incrementally (`seq > loaded_seq`); a row count or sequence
//! that disagrees with the cache (a rolled-back write) triggers a full reload.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{Db, StoreError, to_us};
use super::{pg, sqlite_or};
use crate::service::delta_sc::{
    E1Index, EmbedderKind, EmbedderRef, Fingerprint, FingerprintBuilder, Hit, NearbyVertex,
    StoredContext, StoredVertex, SurpriseNormalizer, TOKEN_DIM, VertexCache, VertexWrite,
    surprise::HISTOGRAM_BINS,
};
use crate::service::vocab::{EmbedderId, NUM_EMBEDDERS};

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

/// Format tag of an encoded fingerprint (first byte).
const FORMAT_V1: u8 = 1;

fn put_f32s(out: &mut Vec<u8>, v: &[f32]) {
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Encode a fingerprint as bytes: a format byte (1), then per embedder in index order:
/// dense → its floats; sparse → u32 count, count × u16 indices, count × f32 values;
/// tokens → u32 token count, count × 128 f32. All little-endian. A full fingerprint with 32
/// tokens and 200-term sparse vectors takes about 48 KB.
pub fn encode_fingerprint(fp: &Fingerprint) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + 4 * (7424 + 32 * TOKEN_DIM) + 2 * 1200);
    out.push(FORMAT_V1);
    for e in EmbedderId::ALL {
        match fp.get(e) {
            EmbedderRef::Dense(v) => put_f32s(&mut out, v),
            EmbedderRef::Sparse(s) => {
                out.extend_from_slice(&(s.indices.len() as u32).to_le_bytes());
                for i in &s.indices {
                    out.extend_from_slice(&i.to_le_bytes());
                }
                put_f32s(&mut out, &s.values);
            }
            EmbedderRef::Tokens(t) => {
                out.extend_from_slice(&(t.tokens.len() as u32).to_le_bytes());
                for tok in &t.tokens {
                    put_f32s(&mut out, tok);
                }
            }
        }
    }
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], StoreError> {
        if self.bytes.len() < n {
            return Err(StoreError::Corrupt(
                "fingerprint blob is truncated".to_string(),
            ));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn u32(&mut self) -> Result<usize, StoreError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    // `as_chunks` gives fixed-size arrays, so each conversion compiles to plain (vector) loads
    // instead of per-element bounds-checked byte gathering.
    fn f32s(&mut self, n: usize) -> Result<Vec<f32>, StoreError> {
        let b = self.take(n.checked_mul(4).ok_or_else(too_long)?)?;
        Ok(b.as_chunks::<4>()
            .0
            .iter()
            .map(|c| f32::from_le_bytes(*c))
            .collect())
    }

    fn u16s(&mut self, n: usize) -> Result<Vec<u16>, StoreError> {
        let b = self.take(n.checked_mul(2).ok_or_else(too_long)?)?;
        Ok(b.as_chunks::<2>()
            .0
            .iter()
            .map(|c| u16::from_le_bytes(*c))
            .collect())
    }
}

fn too_long() -> StoreError {
    StoreError::Corrupt("fingerprint blob declares an impossible length".to_string())
}

/// Decode [`encode_fingerprint`]'s bytes and validate the result.
///
/// # Errors
/// [`StoreError::Corrupt`] for an unknown format, truncated or trailing bytes, or a fingerprint
/// that fails validation.
pub fn decode_fingerprint(bytes: &[u8]) -> Result<Fingerprint, StoreError> {
    let mut r = Reader { bytes };
    let format = r.take(1)?[0];
    if format != FORMAT_V1 {
        return Err(StoreError::Corrupt(format!(
            "fingerprint blob has unknown format {format}"
        )));
    }
    let mut b = FingerprintBuilder::new();
    for e in EmbedderId::ALL {
        match e.kind() {
            EmbedderKind::Dense { dim } => {
                b.dense(e, r.f32s(dim)?);
            }
            EmbedderKind::Sparse { .. } => {
                let n = r.u32()?;
                let indices = r.u16s(n)?;
                let values = r.f32s(n)?;
                b.sparse(e, indices, values);
            }
            EmbedderKind::Tokens { dim } => {
                let n = r.u32()?;
                // Take all n tokens' bytes first, so that a damaged count fails as truncated
                // before anything is allocated for it.
                let mut t = Reader {
                    bytes: r.take(n.checked_mul(dim * 4).ok_or_else(too_long)?)?,
                };
                b.tokens(e, (0..n).map(|_| t.f32s(dim)).collect::<Result<_, _>>()?);
            }
        }
    }
    if !r.bytes.is_empty() {
        return Err(StoreError::Corrupt(
            "fingerprint blob has trailing bytes".to_string(),
        ));
    }
    b.build()
        .map_err(|e| StoreError::Corrupt(format!("stored fingerprint is invalid: {e}")))
}

fn sql_type(e: rusqlite::types::FromSqlError) -> StoreError {
    StoreError::Corrupt(format!("vertex row has a column of the wrong type: {e}"))
}

pub(crate) fn parse_id(s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("vertex id {s:?}: {e}")))
}

pub(crate) fn decode_e1(bytes: &[u8]) -> Result<Vec<f32>, StoreError> {
    Reader { bytes }.f32s(bytes.len() / 4)
}

/// Bring `cache` up to date with the store: new or changed vertex rows since
/// `cache.loaded_seq` go into the index (a full reload when the store has fewer rows or a lower
/// sequence than the cache, i.e. after a rolled-back write), and the running distributions are
/// reloaded.
///
/// # Errors
/// [`StoreError`] on SQL failure or corrupt rows.
pub fn refresh(db: &Db<'_>, cache: &mut VertexCache) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::refresh(pg, cache));
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
    cache.normalizer = load_normalizer(db)?;
    Ok(())
}

/// The index part of [`refresh`], for both backends: given the store's largest `seq` and row
/// count and whether the cache's unconfirmed write was rolled back, reset the index if needed,
/// then read the rows changed since the cache's `loaded_seq` through `rows_since(seq, add)`,
/// which calls `add(id, e1 blob)` for each in `seq` order.
pub(crate) fn refresh_index(
    cache: &mut VertexCache,
    max_seq: i64,
    count: i64,
    rolled_back: bool,
    rows_since: impl FnOnce(
        i64,
        &mut dyn FnMut(&str, &[u8]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    if rolled_back || max_seq < cache.loaded_seq || (count as usize) < cache.index.len() {
        cache.index = E1Index::new();
        cache.loaded_seq = 0;
    }
    if max_seq > cache.loaded_seq {
        let index = &mut cache.index;
        rows_since(cache.loaded_seq, &mut |id, e1| {
            let id = parse_id(id)?;
            let e1 = decode_e1(e1)?;
            index
                .upsert(id, &e1)
                .map_err(|e| StoreError::Corrupt(format!("vertex {id}: {e}")))
        })?;
        cache.loaded_seq = max_seq;
    }
    if cache.index.len() != count as usize {
        return Err(StoreError::Corrupt(format!(
            "vertex index holds {} rows but the store has {count}",
            cache.index.len()
        )));
    }
    Ok(())
}

/// Load the running distributions (empty ones where no row exists yet).
///
/// # Errors
/// [`StoreError`] on SQL failure or a malformed row.
pub fn load_normalizer(db: &Db<'_>) -> Result<SurpriseNormalizer, StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::load_normalizer(pg));
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

/// Decode embedder `i`'s stored histogram into its slot of `counts`.
pub(crate) fn put_histogram(
    counts: &mut [Vec<u64>],
    i: i64,
    blob: &[u8],
) -> Result<(), StoreError> {
    let slot = usize::try_from(i)
        .ok()
        .and_then(|i| counts.get_mut(i))
        .ok_or_else(|| StoreError::Corrupt(format!("histogram for embedder {i}")))?;
    if blob.len() != HISTOGRAM_BINS * 8 {
        return Err(StoreError::Corrupt(format!(
            "histogram for embedder {i} has {} bytes, expected {}",
            blob.len(),
            HISTOGRAM_BINS * 8
        )));
    }
    *slot = blob
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    Ok(())
}

/// Each embedder's histogram as stored: `(embedder index, little-endian u64 counts)`.
pub(crate) fn histogram_rows(n: &SurpriseNormalizer) -> Vec<(i64, Vec<u8>)> {
    EmbedderId::ALL
        .into_iter()
        .map(|e| {
            let blob = n
                .histogram(e)
                .counts()
                .iter()
                .flat_map(|c| c.to_le_bytes())
                .collect();
            (e.index() as i64, blob)
        })
        .collect()
}

pub(crate) fn save_normalizer(db: &Db<'_>, n: &SurpriseNormalizer) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::save_normalizer(pg, n));
    let mut stmt = conn.prepare_cached(
        "INSERT INTO surprise_histograms (embedder_index, counts) VALUES (?1, ?2)
         ON CONFLICT (embedder_index) DO UPDATE SET counts = excluded.counts",
    )?;
    for (e, blob) in histogram_rows(n) {
        stmt.execute(params![e, blob])?;
    }
    Ok(())
}

/// Load vertex `id`, `None` if it was never stored.
///
/// # Errors
/// [`StoreError`] on SQL failure or corrupt blobs.
pub fn load_vertex(db: &Db<'_>, id: Uuid) -> Result<Option<StoredVertex>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::load_vertex(pg, id));
    let Some(current) = load_current(db, id)? else {
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

/// Load the current fingerprint of vertex `id`.
///
/// # Errors
/// [`StoreError`] on SQL failure or a corrupt blob.
pub fn load_current(db: &Db<'_>, id: Uuid) -> Result<Option<Fingerprint>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::load_current(pg, id));
    let mut stmt = conn.prepare_cached("SELECT fingerprint FROM vertices WHERE id = ?1")?;
    let mut rows = stmt.query([id.to_string()])?;
    // Decoded straight from SQLite's buffer, without copying the blob first.
    rows.next()?
        .map(|row| decode_fingerprint(row.get_ref(0)?.as_blob().map_err(sql_type)?))
        .transpose()
}

/// Load what an update of vertex `id` needs from the store: the vertex (with its versions) and
/// the current fingerprints of `nearby`, the cached index's hits.
///
/// # Errors
/// [`StoreError`] on SQL failure or corrupt blobs; [`StoreError::Corrupt`] when a hit is not
/// stored (the index and the store disagree).
pub fn load_context(db: &Db<'_>, id: Uuid, nearby: &[Hit]) -> Result<StoredContext, StoreError> {
    let vertex = load_vertex(db, id)?;
    let nearby = nearby
        .iter()
        .map(|h| {
            let fingerprint = load_current(db, h.id)?.ok_or_else(|| {
                StoreError::Corrupt(format!("vertex {} is indexed but not stored", h.id))
            })?;
            Ok(NearbyVertex {
                id: h.id,
                similarity: h.similarity,
                fingerprint,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(StoredContext { vertex, nearby })
}

/// Persist a planned update at time `now`: `write.append` joins the vertex's versions (only the
/// newest `write.keep_versions` are kept), `write.current` becomes its current fingerprint under
/// the next change sequence number, and the running distributions are saved. Returns that
/// sequence number, for `VertexCache::apply`.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn persist(
    db: &Db<'_>,
    write: &VertexWrite<'_>,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::persist(pg, write, now));
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
    let seq = put_current(db, write.vertex_id, write.current, now)?;
    save_normalizer(db, &write.normalizer)?;
    Ok(seq)
}

/// Store `fp` as vertex `id`'s current fingerprint (no version is recorded) under the next
/// change sequence number, and return that number.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn put_current(
    db: &Db<'_>,
    id: Uuid,
    fp: &Fingerprint,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::put_current(pg, id, fp, now));
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

/// The E1 (semantic) vector of `fp` as stored in `vertices.e1`: little-endian `f32`s.
pub(crate) fn encode_e1(fp: &Fingerprint) -> Vec<u8> {
    fp.e1_semantic
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

/// Number of stored vertices.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn count(db: &Db<'_>) -> Result<usize, StoreError> {
    let conn = sqlite_or!(db, pg => pg::vertices::count(pg));
    let n: i64 = conn.query_row("SELECT COUNT(*) FROM vertices", [], |r| r.get(0))?;
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::delta_sc::{Learner, MAX_VERSIONS, UpdateRequest, plan_update};
    use crate::service::vocab::Lambdas;
    use crate::store::{DbPath, Store};
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    fn fingerprint(seed: u64) -> Fingerprint {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut b = FingerprintBuilder::new();
        for e in EmbedderId::ALL {
            match e.kind() {
                EmbedderKind::Dense { dim } => {
                    b.dense(
                        e,
                        (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect(),
                    );
                }
                EmbedderKind::Sparse { .. } => {
                    b.sparse(
                        e,
                        vec![2, 1500, 30521],
                        vec![0.5, 0.0, rng.random_range(0.0..1.0)],
                    );
                }
                EmbedderKind::Tokens { dim } => {
                    b.tokens(
                        e,
                        (0..3)
                            .map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect())
                            .collect(),
                    );
                }
            }
        }
        b.build().unwrap()
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn codec_round_trips_bit_exactly_and_rejects_damage() {
        let mut fp = fingerprint(1);
        fp.e7_code[3] = -0.0;
        fp.e7_code[4] = f32::MIN_POSITIVE / 4.0; // subnormal
        let bytes = encode_fingerprint(&fp);
        // 1 format byte + 7424 dense + 2·(4 + 3·2 + 3·4) sparse + 4 + 3·128·4 tokens.
        assert_eq!(
            bytes.len(),
            1 + 7424 * 4 + 2 * (4 + 6 + 12) + 4 + 3 * 128 * 4
        );
        let back = decode_fingerprint(&bytes).unwrap();
        assert_eq!(back.e7_code[3].to_bits(), (-0.0f32).to_bits());
        assert_eq!(back, fp);
        let cases: [(Vec<u8>, &str); 4] = [
            (bytes[..bytes.len() - 1].to_vec(), "truncated"),
            ([bytes.clone(), vec![0]].concat(), "trailing bytes"),
            (
                [vec![9u8], bytes[1..].to_vec()].concat(),
                "unknown format 9",
            ),
            (Vec::new(), "truncated"),
        ];
        for (damaged, want) in cases {
            let err = decode_fingerprint(&damaged).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }

    /// Plan an update of `id` from `old` to `new` (with flat λ and weights), persist it and
    /// apply it to `cache`, as the tool does.
    fn update(
        store: &Store,
        cache: &mut VertexCache,
        id: Uuid,
        old: &Fingerprint,
        new: &Fingerprint,
    ) {
        let learner = Learner {
            lambdas: Lambdas::pair(0.5, 0.5),
            weights: [1.0; NUM_EMBEDDERS],
        };
        store
            .write(|db| {
                let ctx = load_context(db, id, &cache.nearby(new, id))?;
                let request = UpdateRequest {
                    vertex_id: id,
                    old,
                    new,
                    johari_threshold: None,
                    persist: true,
                };
                let plan = plan_update(&request, cache, &ctx, learner).unwrap();
                let write = plan.write.unwrap();
                let seq = persist(db, &write, Utc::now())?;
                cache.apply(write, seq).unwrap();
                Ok::<(), StoreError>(())
            })
            .unwrap();
    }

    #[test]
    fn versions_are_kept_to_the_last_ten_and_history_is_ordered() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let mut cache = VertexCache::default();
        let fps: Vec<Fingerprint> = (0..14).map(fingerprint).collect();
        for k in 0..13 {
            update(&store, &mut cache, id(1), &fps[k], &fps[k + 1]);
        }
        let v = store.read(|db| load_vertex(db, id(1))).unwrap().unwrap();
        assert_eq!(v.current, fps[13]);
        // Olds 0..12 were pushed in order; the last ten remain: 3..=12.
        assert_eq!(v.versions.len(), MAX_VERSIONS);
        assert_eq!(v.versions, fps[3..13].to_vec());
        assert_eq!(cache.normalizer.histogram(EmbedderId::Code).total(), 13);
        assert_eq!(store.read(load_normalizer).unwrap(), cache.normalizer);
        assert_eq!(store.read(count).unwrap(), 1);
        // Another writer moved the vertex on: its current and the client's old both join.
        update(&store, &mut cache, id(1), &fps[2], &fps[0]);
        let v = store.read(|db| load_vertex(db, id(1))).unwrap().unwrap();
        assert_eq!(v.current, fps[0]);
        assert_eq!(&v.versions[8..], &[fps[13].clone(), fps[2].clone()]);
    }

    /// What the tool does with a vertex row: persist it, then record it in the process's cache.
    fn put<'a>(
        cache: &'a mut VertexCache,
        n: u128,
        fp: &'a Fingerprint,
    ) -> impl FnOnce(&Db<'_>) -> Result<i64, StoreError> + 'a {
        move |db| {
            let seq = put_current(db, id(n), fp, Utc::now())?;
            cache.record(id(n), &fp.e1_semantic, seq).unwrap();
            Ok(seq)
        }
    }

    #[test]
    fn refresh_is_incremental_and_undoes_rolled_back_writes() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let (mut a, mut b) = (VertexCache::default(), VertexCache::default());
        let (f1, f2, f3) = (fingerprint(1), fingerprint(2), fingerprint(3));
        store.write(put(&mut a, 1, &f1)).unwrap();
        // b catches up incrementally.
        store.read(|db| refresh(db, &mut b)).unwrap();
        assert_eq!((b.index.len(), b.loaded_seq), (1, 1));
        // a's next write is rolled back after it reached a's cache…
        let failed: Result<i64, StoreError> = store.write(|db| {
            put(&mut a, 2, &f2)(db)?;
            Err(StoreError::Corrupt("injected failure".into()))
        });
        assert!(failed.is_err());
        assert!(a.index.contains(id(2)));
        // …and b then takes the same sequence number for another vertex.
        store.write(put(&mut b, 3, &f3)).unwrap();
        // Same max seq and row count as a's cache: only the unconfirmed write reveals it.
        store.read(|db| refresh(db, &mut a)).unwrap();
        assert!(!a.index.contains(id(2)));
        assert!(a.index.contains(id(3)));
        assert_eq!((a.index.len(), a.loaded_seq, a.unconfirmed), (2, 2, None));
        let hits = a.index.nearest(&f3.e1_semantic, 1, None);
        assert_eq!(hits[0].id, id(3));
    }
}

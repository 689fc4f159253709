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
use uuid::Uuid;

use super::{Backend, pg, sqlite};
use crate::service::delta_sc::{
    Fingerprint, Hit, NearbyVertex, StoredContext, StoredVertex, SurpriseNormalizer, VertexCache,
    VertexWrite,
};
pub use crate::store::rows::delta_sc::{decode_fingerprint, encode_fingerprint};
use crate::store::{Db, StoreError};

/// Bring `cache` up to date with the store: new or changed vertex rows since
/// `cache.loaded_seq` go into the index (a full reload when the store has fewer rows or a lower
/// sequence than the cache, i.e. after a rolled-back write), and the running distributions are
/// reloaded.
///
/// # Errors
/// [`StoreError`] on SQL failure or corrupt rows.
pub fn refresh(db: &Db<'_>, cache: &mut VertexCache) -> Result<(), StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::refresh(conn, cache),
        Backend::Postgres(pg) => pg::delta_sc::refresh(pg, cache),
    }
}

/// Load the running distributions (empty ones where no row exists yet).
///
/// # Errors
/// [`StoreError`] on SQL failure or a malformed row.
pub fn load_normalizer(db: &Db<'_>) -> Result<SurpriseNormalizer, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::load_normalizer(conn),
        Backend::Postgres(pg) => pg::delta_sc::load_normalizer(pg),
    }
}

/// Load vertex `id`, `None` if it was never stored.
///
/// # Errors
/// [`StoreError`] on SQL failure or corrupt blobs.
pub fn load_vertex(db: &Db<'_>, id: Uuid) -> Result<Option<StoredVertex>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::load_vertex(conn, id),
        Backend::Postgres(pg) => pg::delta_sc::load_vertex(pg, id),
    }
}

/// Load the current fingerprint of vertex `id`.
///
/// # Errors
/// [`StoreError`] on SQL failure or a corrupt blob.
pub fn load_current(db: &Db<'_>, id: Uuid) -> Result<Option<Fingerprint>, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::load_current(conn, id),
        Backend::Postgres(pg) => pg::delta_sc::load_current(pg, id),
    }
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
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::persist(conn, write, now),
        Backend::Postgres(pg) => pg::delta_sc::persist(pg, write, now),
    }
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
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::put_current(conn, id, fp, now),
        Backend::Postgres(pg) => pg::delta_sc::put_current(pg, id, fp, now),
    }
}

/// Number of stored vertices.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn count(db: &Db<'_>) -> Result<usize, StoreError> {
    match db.backend() {
        Backend::Sqlite(conn) => sqlite::delta_sc::count(conn),
        Backend::Postgres(pg) => pg::delta_sc::count(pg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::delta_sc::{EmbedderKind, FingerprintBuilder};
    use crate::service::delta_sc::{Learner, MAX_VERSIONS, UpdateRequest, plan_update};
    use crate::service::vocab::Lambdas;
    use crate::service::vocab::{EmbedderId, NUM_EMBEDDERS};
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

//! The backend-neutral part of the vertices family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use uuid::Uuid;

use crate::service::delta_sc::{
    E1Index, EmbedderKind, EmbedderRef, Fingerprint, FingerprintBuilder, SurpriseNormalizer,
    TOKEN_DIM, VertexCache, surprise::HISTOGRAM_BINS,
};
use crate::service::vocab::EmbedderId;
use crate::store::StoreError;

/// Format tag of an encoded fingerprint (first byte).
pub(crate) const FORMAT_V1: u8 = 1;

pub(crate) fn put_f32s(out: &mut Vec<u8>, v: &[f32]) {
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

pub(crate) struct Reader<'a> {
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

pub(crate) fn too_long() -> StoreError {
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

pub(crate) fn parse_id(s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("vertex id {s:?}: {e}")))
}

pub(crate) fn decode_e1(bytes: &[u8]) -> Result<Vec<f32>, StoreError> {
    Reader { bytes }.f32s(bytes.len() / 4)
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

/// The E1 (semantic) vector of `fp` as stored in `vertices.e1`: little-endian `f32`s.
pub(crate) fn encode_e1(fp: &Fingerprint) -> Vec<u8> {
    fp.e1_semantic
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

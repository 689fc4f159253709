//! The backend-neutral part of the lesson_vectors family: row shapes, decoders and range
//! checks, and the query text both backends share (see `rows/mod.rs`).

use crate::store::StoreError;

/// The largest dimension accepted (BERT-large has 1,024; this leaves room for larger models).
pub const MAX_DIMENSION: usize = 8192;

/// Encodes a vector as its stored BLOB (little-endian `f32`s).
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a stored BLOB of `dimension` `f32`s.
///
/// # Errors
/// [`StoreError::Corrupt`] when the length does not match `dimension`, the dimension is out of
/// 1..=[`MAX_DIMENSION`], or a component is not finite.
pub fn decode(blob: &[u8], dimension: i64) -> Result<Vec<f32>, StoreError> {
    let dim = usize::try_from(dimension)
        .ok()
        .filter(|d| (1..=MAX_DIMENSION).contains(d))
        .ok_or_else(|| StoreError::Corrupt(format!("lesson vector dimension {dimension}")))?;
    if blob.len() != dim * 4 {
        return Err(StoreError::Corrupt(format!(
            "lesson vector of {} bytes for dimension {dim}",
            blob.len()
        )));
    }
    let v: Vec<f32> = blob
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if v.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Corrupt(
            "lesson vector with a non-finite component".into(),
        ));
    }
    Ok(v)
}

/// A vector set after some revision, as [`vectors_since`](crate::store::lesson_vectors::vectors_since) returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRow {
    /// The lesson's row key.
    pub seq: i64,
    /// The lesson's task key (the folded task id).
    pub task_key: String,
    /// When the vector was set, in the table's revision order.
    pub rev: i64,
    /// The vector.
    pub vector: Vec<f32>,
}

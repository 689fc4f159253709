//! The backend-neutral part of the lessons family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::service::lessons::{FailureType, Lesson, NewLesson, word_spans};
use crate::store::{StoreError, from_us};

/// The stored `strategy_spans` of a normalised strategy: `(start, end)` byte offsets of its
/// word tokens as little-endian `u32` pairs (both backends store the same bytes).
pub(crate) fn encode_spans(normalised: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for (start, end) in word_spans(normalised) {
        // A strategy is at most 4,096 characters (16 KiB), far inside u32.
        out.extend_from_slice(&(start as u32).to_le_bytes());
        out.extend_from_slice(&(end as u32).to_le_bytes());
    }
    out
}

/// The word tokens of a stored strategy, read from its stored spans.
///
/// # Errors
/// [`StoreError::Corrupt`] when the spans do not cut `normalised` at character boundaries.
pub fn tokens_from_spans<'a>(
    normalised: &'a str,
    spans: &[u8],
) -> Result<Vec<&'a str>, StoreError> {
    let corrupt = || StoreError::Corrupt(format!("token spans of lesson strategy {normalised:?}"));
    if !spans.len().is_multiple_of(8) {
        return Err(corrupt());
    }
    spans
        .chunks_exact(8)
        .map(|c| {
            let start = u32::from_le_bytes(c[..4].try_into().expect("4 bytes")) as usize;
            let end = u32::from_le_bytes(c[4..].try_into().expect("4 bytes")) as usize;
            normalised.get(start..end).ok_or_else(corrupt)
        })
        .collect()
}

/// A lesson row as stored, in [`COLUMNS`] order (both backends decode it with
/// [`lesson_from_raw`]).
pub(crate) type RawLesson = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    bool,
    i64,
);

/// The lesson of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an id that is not a UUID, an unknown failure type, or a time
/// outside chrono's range.
pub(crate) fn lesson_from_raw(raw: RawLesson) -> Result<Lesson, StoreError> {
    let (id, task_id, strategy, normalised, rca, failure, agent, active, created) = raw;
    Ok(Lesson {
        id: Uuid::parse_str(&id)
            .map_err(|e| StoreError::Corrupt(format!("lesson id {id:?}: {e}")))?,
        task_id,
        strategy_description: strategy,
        normalised_strategy: normalised,
        rca_summary: rca,
        failure_type: FailureType::parse(&failure)
            .map_err(|e| StoreError::Corrupt(format!("lesson failure type: {e}")))?,
        source_agent: agent,
        is_active: active,
        created_at: from_us(created)?,
    })
}

/// What [`insert`](crate::store::lessons::insert) did.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    /// A new lesson was stored.
    New(Lesson),
    /// The task already had a lesson with this normalised strategy (active or not).
    Exists(Lesson),
}

/// The lesson [`insert`](crate::store::lessons::insert) stored: `l`, active, with its id and time.
pub(crate) fn stored(l: &NewLesson, id: Uuid, now: DateTime<Utc>) -> Lesson {
    Lesson {
        id,
        task_id: l.task_id.clone(),
        strategy_description: l.strategy_description.clone(),
        normalised_strategy: l.normalised_strategy.clone(),
        rca_summary: l.rca_summary.clone(),
        failure_type: l.failure_type,
        source_agent: l.source_agent.clone(),
        is_active: true,
        created_at: now,
    }
}

/// One active lesson's strategy, as the blacklist check reads it.
#[derive(Debug, Clone)]
pub struct ActiveStrategy {
    /// Row key, for [`get_by_seq`](crate::store::lessons::get_by_seq).
    pub seq: i64,
    /// The normalised strategy.
    pub normalised: String,
    /// Its word tokens' byte ranges; read them with [`ActiveStrategy::tokens`].
    pub(crate) spans: Vec<u8>,
    /// The stored vector: model, BLOB, dimension (see [`super::lesson_vectors`]).
    pub(crate) vector: Option<(String, Vec<u8>, i64)>,
}

impl ActiveStrategy {
    /// The strategy's word tokens, from the stored spans.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored spans do not fit the strategy.
    pub fn tokens(&self) -> Result<Vec<&str>, StoreError> {
        tokens_from_spans(&self.normalised, &self.spans)
    }

    /// The lesson's stored vector when `model` produced it; `None` when it has none or another
    /// model's.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored vector is damaged.
    pub fn vector(&self, model: &str) -> Result<Option<Vec<f32>>, StoreError> {
        match &self.vector {
            Some((m, blob, dim)) if m == model => {
                super::lesson_vectors::decode(blob, *dim).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// What [`import`](crate::store::lessons::import) did with one lesson.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Import {
    /// Stored, with its id, time and state.
    Added,
    /// Already present (the same id, or the same task and normalised strategy): left as it is.
    Skipped,
}

/// A term found in more than this fraction of all lessons (and in more than
/// [`COMMON_TERM_MIN_DOCS`]) is too common to rank by (a stop word such as "the"); it is left
/// out of the related-lessons query.
pub const COMMON_TERM_FRACTION: f64 = 0.05;
/// Below this many lessons containing it, no term counts as common (small stores rank by every
/// term; bm25's IDF already discounts stop words).
pub const COMMON_TERM_MIN_DOCS: f64 = 100.0;
/// Whatever the store's size, a term found in more than this many lessons is common: ranking
/// by it would score thousands of lessons for one check, and a term that frequent says little
/// about which lessons are related. Also bounds the work of finding out (see [`related`](crate::store::lessons::related)).
pub const COMMON_TERM_MAX_DOCS: f64 = 2000.0;
/// When every term is common, this many of the rarest are kept.
pub const RAREST_KEPT: usize = 2;
/// Candidates ranked by the full-text index before the task and activity filters apply.
pub const RELATED_CANDIDATES: usize = 64;

/// The most lessons a term may be found in and still rank related lessons, among `total`:
/// [`COMMON_TERM_FRACTION`] of `total`, at least [`COMMON_TERM_MIN_DOCS`] and at most
/// [`COMMON_TERM_MAX_DOCS`] (100 up to 2,000 lessons, then 5 %, then 2,000 from 40,000 on).
pub fn common_term_cutoff(total: i64) -> f64 {
    (total as f64 * COMMON_TERM_FRACTION).clamp(COMMON_TERM_MIN_DOCS, COMMON_TERM_MAX_DOCS)
}

/// The terms [`related`](crate::store::lessons::related) ranks by, given each term's document frequency and the number of
/// lessons `total`: those in at most [`common_term_cutoff`]`(total)` lessons, in the order
/// given; when none is, the [`RAREST_KEPT`] rarest (ties in the order given). Shared by both
/// backends.
pub(crate) fn ranked_terms<T: Copy>(mut with_df: Vec<(T, i64)>, total: i64) -> Vec<T> {
    let cutoff = common_term_cutoff(total);
    let kept: Vec<T> = with_df
        .iter()
        .filter(|(_, df)| (*df as f64) <= cutoff)
        .map(|(t, _)| *t)
        .collect();
    if !kept.is_empty() {
        return kept;
    }
    with_df.sort_by_key(|(_, df)| *df);
    with_df.iter().take(RAREST_KEPT).map(|(t, _)| *t).collect()
}

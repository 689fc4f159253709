//! The backend-neutral part of the lessons family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::StoredRow;
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

/// A lesson row as stored, its columns in the order `id, task_id, strategy_description,
/// normalised_strategy, rca_summary, failure_type, source_agent, is_active, created_us` (both
/// backends select them so, read them with [`RawLesson::read`] and decode them with
/// [`lesson_from_raw`]).
pub(crate) struct RawLesson {
    /// The lesson's UUID, hyphenated text.
    pub(crate) id: String,
    /// The task it was learned on (1–256 characters, as given).
    pub(crate) task_id: String,
    /// The failed strategy, as given (at most 4,096 characters).
    pub(crate) strategy_description: String,
    /// `normalise_strategy` of the strategy (never empty): unique per task key.
    pub(crate) normalised_strategy: String,
    /// The root-cause summary.
    pub(crate) rca_summary: String,
    /// The failure type's stored name (see `FailureType::parse`).
    pub(crate) failure_type: String,
    /// The agent that reported it.
    pub(crate) source_agent: String,
    /// Whether it still blacklists (a deactivated lesson is kept, inactive).
    pub(crate) is_active: bool,
    /// When it was stored: microseconds since the Unix epoch, UTC.
    pub(crate) created_us: i64,
}

impl RawLesson {
    /// The lesson row `r`, its first nine columns in the order above (more may follow).
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawLesson {
            id: r.text(0)?,
            task_id: r.text(1)?,
            strategy_description: r.text(2)?,
            normalised_strategy: r.text(3)?,
            rca_summary: r.text(4)?,
            failure_type: r.text(5)?,
            source_agent: r.text(6)?,
            is_active: r.flag(7)?,
            created_us: r.int(8)?,
        })
    }
}

/// The lesson of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an id that is not a UUID, an unknown failure type, or a time
/// outside chrono's range.
pub(crate) fn lesson_from_raw(raw: RawLesson) -> Result<Lesson, StoreError> {
    let id = raw.id;
    Ok(Lesson {
        id: Uuid::parse_str(&id)
            .map_err(|e| StoreError::Corrupt(format!("lesson id {id:?}: {e}")))?,
        task_id: raw.task_id,
        strategy_description: raw.strategy_description,
        normalised_strategy: raw.normalised_strategy,
        rca_summary: raw.rca_summary,
        failure_type: FailureType::parse(&raw.failure_type)
            .map_err(|e| StoreError::Corrupt(format!("lesson failure type: {e}")))?,
        source_agent: raw.source_agent,
        is_active: raw.is_active,
        created_at: from_us(raw.created_us)?,
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

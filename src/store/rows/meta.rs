//! The backend-neutral part of the meta family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::service::meta::{Event, EventType, MetaState, Prediction, Window};
use crate::service::vocab::{Domain, Lambdas, NUM_EMBEDDERS};
use crate::store::{StoreError, count as stored_count, from_us, in_range, to_us};

/// Which accuracy windows a [`save`](crate::store::meta::save) writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windows {
    /// All 14 (after a reset, or when unsure).
    All,
    /// None: the windows did not change (recalibration, escalation handling).
    None,
    /// The global window and, if given, one embedder's: what one recorded prediction changes.
    Prediction(Option<u8>),
}

/// How long an open prediction may wait for its outcome.
pub const OPEN_PREDICTION_TTL_DAYS: i64 = 7;

pub(crate) fn encode_f64s(values: impl ExactSizeIterator<Item = f64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * values.len());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

pub(crate) fn decode_f64s(bytes: &[u8]) -> Result<Vec<f64>, StoreError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(StoreError::Corrupt(format!(
            "a window blob of {} bytes is not a list of f64",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect())
}

pub(crate) fn parse_domain(s: Option<String>) -> Result<Option<Domain>, StoreError> {
    s.map(|s| Domain::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("unknown domain {s:?}"))))
        .transpose()
}

/// The scalar `meta_state` row as read: λ_s, interaction count, consecutive low, alert,
/// Bayesian failures, human review, adjustment count, last adjustment.
pub(crate) type RawState = (f64, i64, i64, bool, i64, bool, i64, Option<i64>);

/// The meta-learning state from its scalar row and its `(window, vals)` rows, every stored
/// value checked.
pub(crate) fn state_from_rows(
    scalar: RawState,
    windows: Vec<(i64, Vec<u8>)>,
) -> Result<MetaState, StoreError> {
    let (lambda_s, count, low, alert, failures, human, adjustments, last) = scalar;
    let mut global = Window::default();
    let mut embedders: [Window; NUM_EMBEDDERS] = Default::default();
    for (id, vals) in windows {
        let vals = decode_f64s(&vals)?;
        for &v in &vals {
            in_range("stored accuracy", v, 0.0, 1.0)?;
        }
        let w = Window::from_values(vals);
        match usize::try_from(id) {
            Ok(0) => global = w,
            Ok(i) if i <= NUM_EMBEDDERS => embedders[i - 1] = w,
            _ => return Err(StoreError::Corrupt(format!("unknown accuracy window {id}"))),
        }
    }
    Ok(MetaState {
        lambdas: stored_lambdas(lambda_s)?,
        interaction_count: stored_count("interaction count", count)?,
        global,
        embedders,
        consecutive_low: stored_count("consecutive low count", low)?,
        alert_active: alert,
        bayesian_failures: stored_count("Bayesian failure count", failures)?,
        human_review_required: human,
        adjustment_count: stored_count("adjustment count", adjustments)?,
        last_adjustment_at: last.map(from_us).transpose()?,
    })
}

/// The accuracy windows [`save`](crate::store::meta::save) writes for `windows`, with their `meta_windows` ids (0 the
/// global window, 1–13 the embedders').
pub(crate) fn windows_to_write(m: &MetaState, windows: Windows) -> Vec<(usize, &Window)> {
    match windows {
        Windows::None => Vec::new(),
        Windows::All => std::iter::once((0, &m.global))
            .chain(m.embedders.iter().enumerate().map(|(i, w)| (i + 1, w)))
            .collect(),
        Windows::Prediction(embedder) => {
            let mut out = vec![(0, &m.global)];
            if let Some(i) = embedder.map(usize::from).filter(|&i| i < NUM_EMBEDDERS) {
                out.push((i + 1, &m.embedders[i]));
            }
            out
        }
    }
}

/// Filters of an event-log query. All bounds inclusive.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    /// Events at or after this time.
    pub start: Option<DateTime<Utc>>,
    /// Events at or before this time.
    pub end: Option<DateTime<Utc>>,
    /// Only this kind of event.
    pub event_type: Option<EventType>,
    /// Only events of this domain.
    pub domain: Option<Domain>,
    /// Page size.
    pub limit: usize,
    /// Events skipped (newest first).
    pub offset: usize,
}

pub(crate) type RawEvent = (
    i64,
    String,
    Option<String>,
    Option<u8>,
    Option<f64>,
    f64,
    f64,
    Option<f64>,
    bool,
    String,
);

pub(crate) fn event_from_raw(raw: RawEvent) -> Result<Event, StoreError> {
    let (ts, kind, domain, embedder, err, before, after, acc, escalated, detail) = raw;
    Ok(Event {
        timestamp: from_us(ts)?,
        event_type: EventType::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown event type {kind:?}")))?,
        prediction_error: err,
        lambda_before: stored_lambdas(before)?,
        lambda_after: stored_lambdas(after)?,
        accuracy_avg: acc
            .map(|a| in_range("stored accuracy", a, 0.0, 1.0))
            .transpose()?,
        escalated,
        domain: parse_domain(domain)?,
        embedder_index: embedder,
        detail,
    })
}

/// One hour in microseconds, the width of a `meta_event_hours` bucket.
pub(crate) const HOUR_US: i64 = 3_600_000_000;

/// [`count_events_between`] in terms of its two queries, for both backends: `rows_between(a,
/// b)` counts the events with `a <= ts_us <= b`, `hours_between(first, last)` sums the hourly
/// counts of hours `first..=last`.
pub(crate) fn count_between(
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
    rows_between: impl Fn(i64, i64) -> Result<i64, StoreError>,
    hours_between: impl Fn(i64, i64) -> Result<i64, StoreError>,
) -> Result<usize, StoreError> {
    let lo = start.map(to_us);
    let hi = end.map(to_us);
    let hours_between = |first: i64, last: i64| -> Result<i64, StoreError> {
        if first > last {
            return Ok(0);
        }
        hours_between(first, last)
    };
    let (lo_hour, hi_hour) = (
        lo.map(|t| t.div_euclid(HOUR_US)),
        hi.map(|t| t.div_euclid(HOUR_US)),
    );
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return Ok(0);
        }
        if lo_hour == hi_hour {
            return Ok(rows_between(l, h)? as usize);
        }
    }
    // Partial first hour [lo, end of its hour], whole hours between, partial last hour.
    let mut total = 0;
    let first_whole = match (lo, lo_hour) {
        (Some(l), Some(lh)) => {
            total += rows_between(l, (lh + 1) * HOUR_US - 1)?;
            lh + 1
        }
        _ => i64::MIN,
    };
    let last_whole = match (hi, hi_hour) {
        (Some(h), Some(hh)) => {
            total += rows_between(hh * HOUR_US, h)?;
            hh - 1
        }
        _ => i64::MAX,
    };
    total += hours_between(first_whole, last_whole)?;
    Ok(total as usize)
}

/// A `predictions` row as read: time, embedder, predicted, actual, ΔS, ΔC, domain, ACh level.
pub(crate) type RawPrediction = (
    i64,
    Option<u8>,
    f64,
    f64,
    Option<f64>,
    Option<f64>,
    Option<String>,
    f64,
);

/// A recorded prediction from its row, every stored value checked.
pub(crate) fn prediction_from_raw(raw: RawPrediction) -> Result<Prediction, StoreError> {
    let (ts, embedder_index, predicted, actual, delta_s, delta_c, domain, ach_level) = raw;
    Ok(Prediction {
        timestamp: from_us(ts)?,
        embedder_index,
        predicted: in_range("stored prediction", predicted, 0.0, 1.0)?,
        actual: in_range("stored outcome", actual, 0.0, 1.0)?,
        delta_s: delta_s.map(|v| finite("stored ΔS", v)).transpose()?,
        delta_c: delta_c.map(|v| finite("stored ΔC", v)).transpose()?,
        domain: parse_domain(domain)?,
        ach_level,
    })
}

/// A prediction issued by `gwt_compute_delta_sc`, waiting for its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPrediction {
    /// The `prediction_id` the tool answered.
    pub id: Uuid,
    /// When it was issued (UTC); it expires after 7 days.
    pub created: DateTime<Utc>,
    /// Surprise ΔS of the update, in [0, 1].
    pub delta_s: f64,
    /// Coherence ΔC of the update, in [0, 1].
    pub delta_c: f64,
    /// The learning score L predicted at issue time.
    pub learning_score: f64,
    /// Knowledge domain, when given.
    pub domain: Option<Domain>,
}

/// Why an open prediction cannot be closed.
#[derive(Debug, Clone, PartialEq)]
pub enum CloseError {
    /// No prediction with that id was ever issued.
    Unknown,
    /// It was closed before.
    AlreadyClosed,
    /// It was issued more than [`OPEN_PREDICTION_TTL_DAYS`] days ago.
    Expired,
}

/// An `open_predictions` row as read: created, ΔS, ΔC, L, domain, closed.
pub(crate) type RawOpen = (i64, f64, f64, f64, Option<String>, Option<i64>);

/// Whether the open prediction `id` (its row, if any) can be closed at `now`, and it if so.
pub(crate) fn closable(
    id: Uuid,
    row: Option<RawOpen>,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    let Some((created, delta_s, delta_c, learning_score, domain, closed)) = row else {
        return Ok(Err(CloseError::Unknown));
    };
    if closed.is_some() {
        return Ok(Err(CloseError::AlreadyClosed));
    }
    let created = from_us(created)?;
    if now - created > chrono::Duration::days(OPEN_PREDICTION_TTL_DAYS) {
        return Ok(Err(CloseError::Expired));
    }
    Ok(Ok(OpenPrediction {
        id,
        created,
        delta_s,
        delta_c,
        learning_score,
        domain: parse_domain(domain)?,
    }))
}

/// A stored float that must be finite (NaN and ±∞ mean the file is damaged).
pub(crate) fn finite(what: &str, v: f64) -> Result<f64, StoreError> {
    in_range(what, v, f64::MIN, f64::MAX)
}

/// λ from its stored λ_s; a value outside [0.1, 0.9] means the file is damaged.
pub(crate) fn stored_lambdas(s: f64) -> Result<Lambdas, StoreError> {
    Lambdas::new(s).map_err(|e| StoreError::Corrupt(format!("stored {e}")))
}

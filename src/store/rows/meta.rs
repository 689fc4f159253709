//! The backend-neutral part of the meta family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::StoredRow;
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

/// The scalar `meta_state` row as read, its columns selected in field order (`lambda_s,
/// interaction_count, consecutive_low, alert_active, bayesian_failures, human_review,
/// adjustment_count, last_adjustment_us`); read with [`RawState::read`], checked by
/// [`state_from_rows`].
pub(crate) struct RawState {
    /// λ_s, the surprise weight, in [0.1, 0.9] (λ_c is 1 − λ_s).
    pub(crate) lambda_s: f64,
    /// Recorded predictions so far, ≥ 0.
    pub(crate) interaction_count: i64,
    /// Consecutive recorded predictions with low global accuracy, ≥ 0 (fits `u32`).
    pub(crate) consecutive_low: i64,
    /// Whether an accuracy alert is raised.
    pub(crate) alert_active: bool,
    /// Consecutive failed Bayesian recalibrations, ≥ 0 (fits `u32`).
    pub(crate) bayesian_failures: i64,
    /// Whether an operator must review (set after too many Bayesian failures).
    pub(crate) human_review: bool,
    /// λ adjustments applied so far, ≥ 0.
    pub(crate) adjustment_count: i64,
    /// When the last λ adjustment was applied: microseconds since the Unix epoch, UTC; NULL
    /// before the first.
    pub(crate) last_adjustment_us: Option<i64>,
}

impl RawState {
    /// The scalar row `r`, its first eight columns in the order above (more may follow).
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawState {
            lambda_s: r.real(0)?,
            interaction_count: r.int(1)?,
            consecutive_low: r.int(2)?,
            alert_active: r.flag(3)?,
            bayesian_failures: r.int(4)?,
            human_review: r.flag(5)?,
            adjustment_count: r.int(6)?,
            last_adjustment_us: r.opt_int(7)?,
        })
    }
}

/// The meta-learning state from its scalar row and its `(window, vals)` rows, every stored
/// value checked.
pub(crate) fn state_from_rows(
    scalar: RawState,
    windows: Vec<(i64, Vec<u8>)>,
) -> Result<MetaState, StoreError> {
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
        lambdas: stored_lambdas(scalar.lambda_s)?,
        interaction_count: stored_count("interaction count", scalar.interaction_count)?,
        global,
        embedders,
        consecutive_low: stored_count("consecutive low count", scalar.consecutive_low)?,
        alert_active: scalar.alert_active,
        bayesian_failures: stored_count("Bayesian failure count", scalar.bayesian_failures)?,
        human_review_required: scalar.human_review,
        adjustment_count: stored_count("adjustment count", scalar.adjustment_count)?,
        last_adjustment_at: scalar.last_adjustment_us.map(from_us).transpose()?,
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

/// A `meta_events` row as read, its columns selected in field order (`ts_us, event_type,
/// domain, embedder_index, prediction_error, lambda_s_before, lambda_s_after, accuracy_avg,
/// escalated, detail`); read with [`RawEvent::read`], decoded by [`event_from_raw`].
pub(crate) struct RawEvent {
    /// When: microseconds since the Unix epoch, UTC.
    pub(crate) ts_us: i64,
    /// The event type's stored name (see `EventType::parse`).
    pub(crate) event_type: String,
    /// The domain's stored name of the prediction that caused it, if any.
    pub(crate) domain: Option<String>,
    /// The embedder (0–12) of the prediction that caused it, if any.
    pub(crate) embedder_index: Option<u8>,
    /// predicted − actual of the prediction that caused it, if any (in [−1, 1]; not checked).
    pub(crate) prediction_error: Option<f64>,
    /// λ_s before the event, in [0.1, 0.9].
    pub(crate) lambda_s_before: f64,
    /// λ_s after the event, in [0.1, 0.9].
    pub(crate) lambda_s_after: f64,
    /// Global rolling accuracy at the time, in [0, 1]; NULL before any prediction.
    pub(crate) accuracy_avg: Option<f64>,
    /// Whether the event belongs to an escalation.
    pub(crate) escalated: bool,
    /// A sentence saying what happened and why.
    pub(crate) detail: String,
}

impl RawEvent {
    /// The event row `r`, in the column order above.
    ///
    /// # Errors
    /// The backend's error for a column that does not convert (an embedder index outside
    /// 0–255 included).
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawEvent {
            ts_us: r.int(0)?,
            event_type: r.text(1)?,
            domain: r.opt_text(2)?,
            embedder_index: r.opt_small(3, "stored embedder index")?,
            prediction_error: r.opt_real(4)?,
            lambda_s_before: r.real(5)?,
            lambda_s_after: r.real(6)?,
            accuracy_avg: r.opt_real(7)?,
            escalated: r.flag(8)?,
            detail: r.text(9)?,
        })
    }
}

/// The event of a stored row, every stored value checked.
///
/// # Errors
/// [`StoreError::Corrupt`] for an unknown event type or domain, a λ_s outside [0.1, 0.9], an
/// accuracy outside [0, 1], or a time outside chrono's range.
pub(crate) fn event_from_raw(raw: RawEvent) -> Result<Event, StoreError> {
    let kind = raw.event_type;
    Ok(Event {
        timestamp: from_us(raw.ts_us)?,
        event_type: EventType::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown event type {kind:?}")))?,
        prediction_error: raw.prediction_error,
        lambda_before: stored_lambdas(raw.lambda_s_before)?,
        lambda_after: stored_lambdas(raw.lambda_s_after)?,
        accuracy_avg: raw
            .accuracy_avg
            .map(|a| in_range("stored accuracy", a, 0.0, 1.0))
            .transpose()?,
        escalated: raw.escalated,
        domain: parse_domain(raw.domain)?,
        embedder_index: raw.embedder_index,
        detail: raw.detail,
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

/// A `predictions` row as read, its columns selected in field order (`ts_us, embedder_index,
/// predicted, actual, delta_s, delta_c, domain, ach_level`); read with
/// [`RawPrediction::read`], checked by [`prediction_from_raw`].
pub(crate) struct RawPrediction {
    /// When it was recorded: microseconds since the Unix epoch, UTC.
    pub(crate) ts_us: i64,
    /// The embedder, 0–12; NULL for an aggregate prediction.
    pub(crate) embedder_index: Option<u8>,
    /// The predicted value, in [0, 1].
    pub(crate) predicted: f64,
    /// The outcome, in [0, 1].
    pub(crate) actual: f64,
    /// Surprise ΔS, when known (finite; in [0, 1] when written).
    pub(crate) delta_s: Option<f64>,
    /// Coherence ΔC, when known (finite; in [0, 1] when written).
    pub(crate) delta_c: Option<f64>,
    /// The domain's stored name, when given.
    pub(crate) domain: Option<String>,
    /// Acetylcholine level (learning-rate modulator; default 0.001), not checked.
    pub(crate) ach_level: f64,
}

impl RawPrediction {
    /// The prediction row `r`, in the column order above.
    ///
    /// # Errors
    /// The backend's error for a column that does not convert (an embedder index outside
    /// 0–255 included).
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawPrediction {
            ts_us: r.int(0)?,
            embedder_index: r.opt_small(1, "stored embedder index")?,
            predicted: r.real(2)?,
            actual: r.real(3)?,
            delta_s: r.opt_real(4)?,
            delta_c: r.opt_real(5)?,
            domain: r.opt_text(6)?,
            ach_level: r.real(7)?,
        })
    }
}

/// A recorded prediction from its row, every stored value checked.
pub(crate) fn prediction_from_raw(raw: RawPrediction) -> Result<Prediction, StoreError> {
    Ok(Prediction {
        timestamp: from_us(raw.ts_us)?,
        embedder_index: raw.embedder_index,
        predicted: in_range("stored prediction", raw.predicted, 0.0, 1.0)?,
        actual: in_range("stored outcome", raw.actual, 0.0, 1.0)?,
        delta_s: raw.delta_s.map(|v| finite("stored ΔS", v)).transpose()?,
        delta_c: raw.delta_c.map(|v| finite("stored ΔC", v)).transpose()?,
        domain: parse_domain(raw.domain)?,
        ach_level: raw.ach_level,
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

/// An `open_predictions` row as read, its columns selected in field order (`created_us,
/// delta_s, delta_c, learning_score, domain, closed_us`); read with [`RawOpen::read`], judged
/// by [`closable`].
pub(crate) struct RawOpen {
    /// When it was issued: microseconds since the Unix epoch, UTC.
    pub(crate) created_us: i64,
    /// Surprise ΔS of the update, in [0, 1] (not checked on reading).
    pub(crate) delta_s: f64,
    /// Coherence ΔC of the update, in [0, 1] (not checked on reading).
    pub(crate) delta_c: f64,
    /// The learning score L predicted at issue time.
    pub(crate) learning_score: f64,
    /// The domain's stored name, when given.
    pub(crate) domain: Option<String>,
    /// When it was closed: microseconds since the Unix epoch, UTC; NULL while open.
    pub(crate) closed_us: Option<i64>,
}

impl RawOpen {
    /// The open-prediction row `r`, in the column order above.
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawOpen {
            created_us: r.int(0)?,
            delta_s: r.real(1)?,
            delta_c: r.real(2)?,
            learning_score: r.real(3)?,
            domain: r.opt_text(4)?,
            closed_us: r.opt_int(5)?,
        })
    }
}

/// Whether the open prediction `id` (its row, if any) can be closed at `now`, and it if so.
pub(crate) fn closable(
    id: Uuid,
    row: Option<RawOpen>,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    let Some(raw) = row else {
        return Ok(Err(CloseError::Unknown));
    };
    if raw.closed_us.is_some() {
        return Ok(Err(CloseError::AlreadyClosed));
    }
    let created = from_us(raw.created_us)?;
    if now - created > chrono::Duration::days(OPEN_PREDICTION_TTL_DAYS) {
        return Ok(Err(CloseError::Expired));
    }
    Ok(Ok(OpenPrediction {
        id,
        created,
        delta_s: raw.delta_s,
        delta_c: raw.delta_c,
        learning_score: raw.learning_score,
        domain: parse_domain(raw.domain)?,
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

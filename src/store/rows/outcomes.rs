//! The backend-neutral half of [`crate::store::outcomes`]: a blacklist check recorded as a
//! prediction, and a source's fitted temperature.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::service::outcomes::{Outcome, Source};
use crate::store::StoreError;

/// A `check_strategy_blacklist` answer that compared a lesson, kept as a prediction until
/// `record_prediction` (or a lesson logged for its strategy) closes it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckPrediction {
    /// The id the answer gave (`prediction_id`).
    pub id: Uuid,
    /// The task checked, as given.
    pub task_id: String,
    /// The best-matching lesson the probability is about.
    pub lesson_id: Uuid,
    /// The normalised strategy checked (after redaction).
    pub strategy: String,
    /// The matcher's raw probability that the strategy repeats the lesson, in [0, 1].
    pub raw: f64,
    /// The calibrated probability the answer stated, in [0, 1].
    pub probability: f64,
    /// Whether the answer blacklisted the strategy.
    pub blacklisted: bool,
    /// When the check was made.
    pub created_at: DateTime<Utc>,
    /// Once closed: when, and whether the approach was the failed one again.
    pub closed: Option<Closed>,
}

/// How a check prediction was closed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Closed {
    /// When.
    pub at: DateTime<Utc>,
    /// True when the strategy turned out to repeat the failed approach.
    pub actual: bool,
    /// Who closed it.
    pub by: ClosedBy,
}

/// Who closed a check prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum ClosedBy {
    /// `record_prediction`.
    Agent,
    /// A lesson logged in the project for the strategy the check did not block.
    Lesson,
}

impl CheckPrediction {
    /// The calibration outcome of a closed prediction; `None` while open.
    pub fn outcome(&self) -> Option<Outcome> {
        self.closed.map(|c| Outcome {
            at: c.at,
            raw: self.raw,
            stated: self.probability,
            correct: c.actual,
        })
    }
}

/// A source's temperature as last fitted (level 2) for a project.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceTemperature {
    /// The source.
    pub source: Source,
    /// The temperature, in the source's range.
    pub temperature: f64,
    /// Outcomes it was fitted on.
    pub outcomes: u64,
    /// When it was fitted.
    pub fitted_at: DateTime<Utc>,
}

/// A stored [`CheckPrediction`] row in column order (`id, task_id, lesson_id, strategy, raw,
/// probability, blacklisted, created_us, closed_us, actual, closed_by`), checked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_prediction(
    id: &str,
    task_id: String,
    lesson_id: &str,
    strategy: String,
    raw: f64,
    probability: f64,
    blacklisted: bool,
    created_us: i64,
    closed: (Option<i64>, Option<bool>, Option<String>),
) -> Result<CheckPrediction, StoreError> {
    let uuid = |what: &str, s: &str| {
        Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("{what} {s:?}: {e}")))
    };
    for (what, p) in [("raw", raw), ("probability", probability)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(StoreError::Corrupt(format!(
                "check prediction {id}: {what} {p} is outside [0, 1]"
            )));
        }
    }
    let closed = match closed {
        (None, None, None) => None,
        (Some(us), Some(actual), Some(by)) => Some(Closed {
            at: crate::store::from_us(us)?,
            actual,
            by: by.parse().map_err(|_| {
                StoreError::Corrupt(format!("check prediction {id}: closed_by {by:?}"))
            })?,
        }),
        _ => {
            return Err(StoreError::Corrupt(format!(
                "check prediction {id}: closed_us, actual and closed_by must be all set or all null"
            )));
        }
    };
    Ok(CheckPrediction {
        id: uuid("check prediction id", id)?,
        task_id,
        lesson_id: uuid("check prediction lesson_id", lesson_id)?,
        strategy,
        raw,
        probability,
        blacklisted,
        created_at: crate::store::from_us(created_us)?,
        closed,
    })
}

/// A stored temperature row (`source, temperature, outcomes, fitted_us`), checked.
pub(crate) fn source_temperature(
    source: &str,
    temperature: f64,
    outcomes: i64,
    fitted_us: i64,
) -> Result<SourceTemperature, StoreError> {
    let source: Source = source
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("outcome temperature: source {source:?}")))?;
    let range = crate::service::outcomes::TEMPERATURE_RANGE;
    if !(range.lo..=range.hi).contains(&temperature) {
        return Err(StoreError::Corrupt(format!(
            "outcome temperature of {}: {temperature} is outside [{}, {}]",
            source.as_str(),
            range.lo,
            range.hi
        )));
    }
    Ok(SourceTemperature {
        source,
        temperature,
        outcomes: crate::store::count("outcome temperature: outcomes", outcomes)?,
        fitted_at: crate::store::from_us(fitted_us)?,
    })
}

/// The check-prediction columns, in the order of [`check_prediction`].
pub(crate) const CHECK_COLUMNS: &str = "id, task_id, lesson_id, strategy, raw, probability, \
     blacklisted, created_us, closed_us, actual, closed_by";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked() {
        let id = Uuid::from_u128(1).to_string();
        let ok =
            |closed| check_prediction(&id, "t".into(), &id, "s".into(), 0.4, 0.5, false, 7, closed);
        assert!(ok((None, None, None)).unwrap().closed.is_none());
        let c = ok((Some(9), Some(true), Some("lesson".into()))).unwrap();
        assert_eq!(c.closed.unwrap().by, ClosedBy::Lesson);
        assert_eq!(c.outcome().unwrap().stated, 0.5);
        assert!(ok((Some(9), None, None)).is_err());
        assert!(ok((Some(9), Some(true), Some("nobody".into()))).is_err());
        let bad = check_prediction(
            &id,
            "t".into(),
            &id,
            "s".into(),
            1.5,
            0.5,
            false,
            7,
            (None, None, None),
        );
        assert!(bad.is_err());
        assert!(source_temperature("lessons", 2.0, 3, 1).is_ok());
        assert!(source_temperature("lessons", 9.0, 3, 1).is_err());
        assert!(source_temperature("gossip", 1.0, 3, 1).is_err());
        assert!(source_temperature("beliefs", 1.0, -3, 1).is_err());
    }
}

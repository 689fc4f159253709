//! The backend-neutral half of [`crate::store::recurrences`]: a lesson's recurrence (a
//! reworded repeat of an active lesson that `log_lesson_learned` merged into it), its stored
//! row and its decoder.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::StoredRow;
use crate::service::lessons::{FailureType, MatchType};
use crate::store::{StoreError, from_us};

/// A strategy logged for a task whose active lesson the blacklist matcher says it repeats:
/// kept beside that lesson as evidence instead of becoming a second lesson. Every field of the
/// `log_lesson_learned` call is kept, so that an operator can split it back into a lesson of
/// its own (`lessons split`).
#[derive(Debug, Clone, PartialEq)]
pub struct Recurrence {
    /// Its id (shown by `lessons show`, named by `lessons split`).
    pub id: Uuid,
    /// The lesson it was merged into.
    pub lesson_id: Uuid,
    /// The task id as this call gave it (the lesson's task, by [`crate::service::lessons::TaskKey`]).
    pub task_id: String,
    /// The strategy as this call gave it (at most 4,096 characters; secrets redacted).
    pub strategy_description: String,
    /// This call's root-cause summary (at most 16,384 characters; secrets redacted).
    pub rca_summary: String,
    /// This call's failure type.
    pub failure_type: FailureType,
    /// The agent that logged it.
    pub source_agent: String,
    /// How the strategy matched the lesson's: `contains`, `contained_in` or `similar`.
    pub match_type: MatchType,
    /// The matcher's score of that match, in [0, 1].
    pub score: f64,
    /// When it was logged (UTC, whole microseconds).
    pub recorded_at: DateTime<Utc>,
}

/// The columns both backends select, in the order [`RawRecurrence::read`] reads them.
pub(crate) const COLUMNS: &str = "id, lesson_id, task_id, strategy_description, rca_summary, \
     failure_type, source_agent, match_type, score, recorded_us";

/// A recurrence row as stored, its columns in the order of [`COLUMNS`].
pub(crate) struct RawRecurrence {
    pub(crate) id: String,
    pub(crate) lesson_id: String,
    pub(crate) task_id: String,
    pub(crate) strategy_description: String,
    pub(crate) rca_summary: String,
    pub(crate) failure_type: String,
    pub(crate) source_agent: String,
    pub(crate) match_type: String,
    pub(crate) score: f64,
    pub(crate) recorded_us: i64,
}

impl RawRecurrence {
    /// The recurrence row `r`, its columns in the order of [`COLUMNS`].
    ///
    /// # Errors
    /// The backend's error for a column that does not convert.
    pub(crate) fn read<R: StoredRow>(r: &R) -> Result<Self, R::Error> {
        Ok(RawRecurrence {
            id: r.text(0)?,
            lesson_id: r.text(1)?,
            task_id: r.text(2)?,
            strategy_description: r.text(3)?,
            rca_summary: r.text(4)?,
            failure_type: r.text(5)?,
            source_agent: r.text(6)?,
            match_type: r.text(7)?,
            score: r.real(8)?,
            recorded_us: r.int(9)?,
        })
    }
}

/// The match type of its wire name (`contains`, `contained_in`, `similar`; `exact` is never
/// a recurrence: an identical strategy is `LESSON_ALREADY_EXISTS`).
pub(crate) fn match_type(name: &str) -> Option<MatchType> {
    MatchType::ALL
        .into_iter()
        .find(|m| *m != MatchType::Exact && m.as_str() == name)
}

/// The recurrence of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an id that is not a UUID, an unknown failure or match type, a
/// score outside [0, 1], or a time outside chrono's range.
pub(crate) fn recurrence_from_raw(raw: RawRecurrence) -> Result<Recurrence, StoreError> {
    let uuid = |what: &str, s: &str| {
        Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("recurrence {what} {s:?}: {e}")))
    };
    if !(0.0..=1.0).contains(&raw.score) {
        return Err(StoreError::Corrupt(format!(
            "recurrence {} score {} is outside [0, 1]",
            raw.id, raw.score
        )));
    }
    Ok(Recurrence {
        id: uuid("id", &raw.id)?,
        lesson_id: uuid("lesson_id", &raw.lesson_id)?,
        task_id: raw.task_id,
        strategy_description: raw.strategy_description,
        rca_summary: raw.rca_summary,
        failure_type: FailureType::parse(&raw.failure_type)
            .map_err(|e| StoreError::Corrupt(format!("recurrence failure type: {e}")))?,
        source_agent: raw.source_agent,
        match_type: match_type(&raw.match_type).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "recurrence {} match type {:?} is not contains, contained_in or similar",
                raw.id, raw.match_type
            ))
        })?,
        score: raw.score,
        recorded_at: from_us(raw.recorded_us)?,
    })
}

/// The recurrence count of each lesson that has any, from stored `(lesson_id, count)` pairs.
///
/// # Errors
/// [`StoreError::Corrupt`] for a lesson id that is not a UUID.
pub(crate) fn counts_from_raw(
    raw: Vec<(String, i64)>,
) -> Result<std::collections::HashMap<Uuid, u64>, StoreError> {
    raw.into_iter()
        .map(|(id, n)| {
            let lesson = Uuid::parse_str(&id)
                .map_err(|e| StoreError::Corrupt(format!("recurrence lesson_id {id:?}: {e}")))?;
            Ok((lesson, n.max(0) as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawRecurrence {
        RawRecurrence {
            id: Uuid::from_u128(1).to_string(),
            lesson_id: Uuid::from_u128(2).to_string(),
            task_id: "T-1".into(),
            strategy_description: "mock the db".into(),
            rca_summary: "why".into(),
            failure_type: "TOOL_MISUSE".into(),
            source_agent: "a".into(),
            match_type: "contained_in".into(),
            score: 0.75,
            recorded_us: 1_700_000_000_000_000,
        }
    }

    #[test]
    fn a_stored_row_decodes_and_each_bad_column_is_named() {
        let r = recurrence_from_raw(raw()).unwrap();
        assert_eq!(r.lesson_id, Uuid::from_u128(2));
        assert_eq!(r.match_type, MatchType::ContainedIn);
        assert_eq!(r.failure_type, FailureType::ToolMisuse);
        assert_eq!(r.recorded_at.timestamp_micros(), 1_700_000_000_000_000);
        type Spoil = fn(&mut RawRecurrence);
        let cases: [(Spoil, &str); 6] = [
            (|r| r.id = "x".into(), "recurrence id"),
            (|r| r.lesson_id = "y".into(), "recurrence lesson_id"),
            (|r| r.failure_type = "BAD".into(), "failure type"),
            (|r| r.match_type = "exact".into(), "match type \"exact\""),
            (|r| r.score = 1.5, "score 1.5"),
            (|r| r.recorded_us = i64::MAX, "out of range"),
        ];
        for (spoil, said) in cases {
            let mut bad = raw();
            spoil(&mut bad);
            match recurrence_from_raw(bad) {
                Err(StoreError::Corrupt(m)) => assert!(m.contains(said), "{m:?} lacks {said:?}"),
                other => panic!("{said}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_blocking_match_type_has_its_name_and_exact_has_none() {
        for m in [
            MatchType::Contains,
            MatchType::ContainedIn,
            MatchType::Similar,
        ] {
            assert_eq!(match_type(m.as_str()), Some(m));
        }
        assert_eq!(match_type("exact"), None);
        assert_eq!(match_type("Similar"), None);
    }
}

//! What to do next: the recalibration levels worth running for a set of observations, and
//! whether Level 4 is due.
//!
//! The rules, in order:
//! 1. the calibrated status band calls for levels ([`status_levels`], the seed's level guide);
//! 2. Level 1's drift trackers add theirs ([`super::drift::recommended_levels`]);
//! 3. Level 2 is dropped unless refitting would move a temperature by more than 1 %
//!    ([`AtcState::level2_would_change`]): right after Level 2 the refit returns the same
//!    temperatures, and a report that still says "run Level 2" sends the caller in a loop;
//! 4. Level 4 is "due" only for a non-empty set of observations
//!    ([`AtcState::should_optimize_level4`] otherwise): a report on an empty window has measured
//!    nothing that could call for it.

use chrono::{DateTime, Utc};

use super::metrics::CalibrationStatus;
use super::state::{AtcState, MetricsPair, ObservationFilter};
use crate::service::vocab::Domain;

/// Levels a calibrated status calls for, before rule 3: Good → 2; Acceptable → 2, 3; Poor and
/// Critical → 2, 4; Excellent and no data → none.
pub fn status_levels(status: Option<CalibrationStatus>) -> Vec<u8> {
    match status {
        None | Some(CalibrationStatus::Excellent) => vec![],
        Some(CalibrationStatus::Good) => vec![2],
        Some(CalibrationStatus::Acceptable) => vec![2, 3],
        Some(CalibrationStatus::Poor | CalibrationStatus::Critical) => vec![2, 4],
    }
}

/// The calibration of a set of observations and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// Raw and calibrated metrics of the observations.
    pub metrics: MetricsPair,
    /// Status band of the calibrated metrics; `None` without observations.
    pub status: Option<CalibrationStatus>,
    /// Levels worth running, ascending (rules 1–3 of the module).
    pub levels: Vec<u8>,
    /// Whether Level 4 is due (rule 4).
    pub should_optimize_level4: bool,
}

impl AtcState {
    /// Measures the observations passing `filter` and says which levels are worth running;
    /// drift and the Level 4 schedule are those of `domain` at `now`.
    pub fn assess(
        &self,
        filter: &ObservationFilter,
        domain: Domain,
        now: DateTime<Utc>,
    ) -> Assessment {
        let metrics = self.metrics(filter);
        let levels = self.recommend(&metrics, filter.embedder_id, domain);
        let should_optimize_level4 =
            metrics.raw.is_some() && self.should_optimize_level4(domain, now);
        Assessment {
            status: metrics.calibrated.as_ref().map(|m| m.status()),
            metrics,
            levels,
            should_optimize_level4,
        }
    }

    /// Levels worth running for observations measured as `metrics` (of embedder `embedder_id`,
    /// or of any embedder), with `domain`'s drift: rules 1–3 of the module, ascending.
    pub fn recommend(
        &self,
        metrics: &MetricsPair,
        embedder_id: Option<u8>,
        domain: Domain,
    ) -> Vec<u8> {
        let status = metrics.calibrated.as_ref().map(|m| m.status());
        let mut levels = status_levels(status);
        levels.extend(self.run_level1(domain).levels());
        levels.sort_unstable();
        levels.dedup();
        if levels.contains(&2) && !self.level2_would_change(embedder_id) {
            levels.retain(|&l| l != 2);
        }
        levels
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::atc::Observation;
    use crate::service::atc::RunMode;
    use crate::service::atc::level4::MIN_OBSERVATIONS;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    fn obs(confidence: f64, correct: bool) -> Observation {
        Observation {
            timestamp: t0(),
            embedder_id: 1,
            confidence,
            correct,
            domain: Domain::General,
            threshold_name: None,
            threshold_used: None,
        }
    }

    /// 80 % right at 0.9 (over-confident), 90 % right at 0.65 (under-confident): no single
    /// temperature fits both (the fit is T ≈ 1.13, inside E1's range, leaving an ECE near
    /// 0.17), so the status stays Poor after Level 2.
    fn unfixable() -> AtcState {
        let mut s = AtcState::new();
        for i in 0..60 {
            s.ingest(obs(0.9, i % 10 < 8)).unwrap();
            s.ingest(obs(0.65, i % 10 < 9)).unwrap();
        }
        s
    }

    #[test]
    fn level2_is_not_recommended_again_after_it_ran() {
        let mut s = unfixable();
        let all = ObservationFilter::default();
        let before = s.assess(&all, Domain::General, t0());
        assert!(before.levels.contains(&2), "{before:?}");
        s.run_level2(RunMode::Apply);
        let after = s.assess(&all, Domain::General, t0());
        assert!(
            after
                .status
                .is_some_and(|st| st != CalibrationStatus::Excellent),
            "the test needs data Level 2 cannot fix: {after:?}"
        );
        assert!(!after.levels.contains(&2), "{after:?}");
        assert!(!s.level2_would_change(None));
        // The band's other levels stay.
        let band = status_levels(after.status);
        assert!(
            band.iter()
                .filter(|&&l| l != 2)
                .all(|l| after.levels.contains(l))
        );
        // New observations that move the fit bring it back.
        for _ in 0..30 {
            s.ingest(obs(0.9, false)).unwrap();
        }
        assert!(
            s.assess(&all, Domain::General, t0()).levels.contains(&2),
            "stale temperatures are recommended for a refit"
        );
    }

    #[test]
    fn an_empty_window_does_not_call_for_level4() {
        let mut s = AtcState::new();
        for i in 0..MIN_OBSERVATIONS * 2 {
            s.ingest(obs(0.9, i % 2 == 0)).unwrap();
        }
        assert!(s.should_optimize_level4(Domain::General, t0()));
        let recent = ObservationFilter {
            since: Some(t0() + Duration::hours(1)),
            ..ObservationFilter::default()
        };
        let a = s.assess(&recent, Domain::General, t0() + Duration::hours(2));
        assert_eq!(a.metrics.raw, None);
        assert_eq!(a.status, None);
        assert!(!a.should_optimize_level4);
        let all = s.assess(&ObservationFilter::default(), Domain::General, t0());
        assert!(all.should_optimize_level4);
    }
}

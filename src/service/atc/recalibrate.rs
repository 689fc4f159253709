//! [`AtcState::recalibrate`]: one level run on demand, as a typed report of what was measured
//! before and after, what the level did, what changed, and which levels are still worth running.

use chrono::{DateTime, Utc};
use rand::Rng;

use super::level4::level4_bo_config;
use super::state::{
    AtcState, Level1Report, Level2Report, Level3Report, Level4Outcome, Level4Report, MetricsPair,
    ObservationFilter, RunMode,
};
use super::temperature::MIN_SAMPLES;
use crate::service::vocab::Domain;

/// A level to run, named as the seed names it (`"EWMA Drift Tracker"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
pub enum Level {
    /// Level 1: report the EWMA drift trackers (reads only).
    #[strum(serialize = "EWMA Drift Tracker")]
    Drift,
    /// Level 2: refit every embedder's temperature.
    #[strum(serialize = "Temperature Scaling")]
    Temperature,
    /// Level 3: Thompson-sampling selection of the domain's session threshold, after
    /// forgetting the bandit's statistics when `reset`.
    #[strum(serialize = "Thompson Sampling Bandit")]
    Bandit {
        /// Forget the statistics first.
        reset: bool,
    },
    /// Level 4: Bayesian optimisation of the domain's `theta_acc`.
    #[strum(serialize = "Bayesian Meta-Optimizer")]
    Optimizer,
}

impl Level {
    /// `1..=4`.
    pub fn number(self) -> u8 {
        match self {
            Level::Drift => 1,
            Level::Temperature => 2,
            Level::Bandit { .. } => 3,
            Level::Optimizer => 4,
        }
    }
}

/// Which observations the before/after metrics cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsScope {
    /// Every window (Level 2, which fits every embedder).
    All,
    /// The domain's observations (levels 1, 3 and 4).
    Domain,
}

/// What a level did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Level 1 reported drift.
    Reported,
    /// A dry run of Level 2, or of a Level 4 that found no strict improvement, computed only.
    Computed,
    /// Level 2 replaced the temperatures.
    Recalibrated,
    /// Level 3 selected a session threshold.
    Selected,
    /// Level 4 did not run (too few observations).
    Skipped,
    /// Level 4 applied a better `theta_acc`.
    Optimized,
    /// Level 4 ran and kept `theta_acc` (not strictly better).
    Unchanged,
}

/// The level's own report.
#[derive(Debug, Clone, PartialEq)]
pub enum LevelReport {
    /// Level 1.
    Drift(Level1Report),
    /// Level 2.
    Temperature(Level2Report),
    /// Level 3.
    Bandit(Level3Report),
    /// Level 4.
    Optimizer(Level4Report),
}

/// The report of [`AtcState::recalibrate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Recalibration {
    /// The level run.
    pub level: Level,
    /// The domain: whose drift, bandit, thresholds and observations levels 1, 3 and 4 use.
    pub domain: Domain,
    /// Applied or dry run.
    pub mode: RunMode,
    /// Which observations `before` and `after` cover.
    pub scope: MetricsScope,
    /// Metrics of the scope's observations before the run.
    pub before: MetricsPair,
    /// Metrics of the same observations after the run (equal to `before` for a dry run).
    pub after: MetricsPair,
    /// What the level found and did.
    pub report: LevelReport,
    /// Levels still worth running on the scope's observations after the run
    /// ([`AtcState::recommend`]); for a dry run, nothing changed, so these are the current
    /// ones.
    pub recommended_levels: Vec<u8>,
}

impl Recalibration {
    /// What the level did.
    pub fn action(&self) -> Action {
        let dry = self.mode == RunMode::DryRun;
        match &self.report {
            LevelReport::Drift(_) => Action::Reported,
            LevelReport::Temperature(_) if dry => Action::Computed,
            LevelReport::Temperature(_) => Action::Recalibrated,
            LevelReport::Bandit(_) => Action::Selected,
            LevelReport::Optimizer(r) => match &r.outcome {
                Level4Outcome::Skipped(_) => Action::Skipped,
                Level4Outcome::Ran {
                    applied: Some(_), ..
                } => Action::Optimized,
                Level4Outcome::Ran { .. } if dry => Action::Computed,
                Level4Outcome::Ran { .. } => Action::Unchanged,
            },
        }
    }

    /// Why the level could not do its work: Level 2 with no embedder fitted, Level 4 skipped.
    pub fn failure(&self) -> Option<String> {
        match &self.report {
            LevelReport::Temperature(r) if r.fitted() == 0 => Some(format!(
                "no embedder has at least {MIN_SAMPLES} observations"
            )),
            LevelReport::Optimizer(Level4Report {
                outcome: Level4Outcome::Skipped(e),
                ..
            }) => Some(e.to_string()),
            _ => None,
        }
    }

    /// Whether the run changed learned state that must be persisted (an applied level 2, 3
    /// or 4).
    pub fn changed_state(&self) -> bool {
        self.mode == RunMode::Apply && self.level != Level::Drift
    }

    /// The line for the directive history of an applied run that did its work, e.g.
    /// `"manual ATC level 2 recalibration (General): E1 T 1.0000 -> 1.2619"`; `None` for
    /// Level 1, dry runs and failures.
    pub fn note(&self) -> Option<String> {
        if !self.changed_state() || self.failure().is_some() {
            return None;
        }
        let change = match &self.report {
            LevelReport::Drift(_) => return None,
            LevelReport::Temperature(r) => {
                let changed: Vec<String> = r
                    .embedders
                    .iter()
                    .filter(|e| e.temperature_after != e.temperature_before)
                    .map(|e| {
                        format!(
                            "E{} T {:.4} -> {:.4}",
                            e.embedder_id, e.temperature_before, e.temperature_after
                        )
                    })
                    .collect();
                if changed.is_empty() {
                    "no temperature changed".to_string()
                } else {
                    changed.join(", ")
                }
            }
            LevelReport::Bandit(r) => format!(
                "session threshold {:.2} selected{}",
                r.selection.threshold,
                if r.reset {
                    " after resetting the bandit"
                } else {
                    ""
                }
            ),
            LevelReport::Optimizer(r) => match &r.outcome {
                Level4Outcome::Ran {
                    applied: Some(c), ..
                } => format!("theta_acc {:.4} -> {:.4}", c.theta_acc.0, c.theta_acc.1),
                _ => "theta_acc kept; Level 4 run recorded".to_string(),
            },
        };
        Some(format!(
            "manual ATC level {} recalibration ({}): {change}",
            self.level.number(),
            self.domain.display_name()
        ))
    }
}

impl Level2Report {
    /// Embedders whose temperature was fitted (not skipped).
    pub fn fitted(&self) -> usize {
        self.embedders
            .iter()
            .filter(|e| e.skipped.is_none())
            .count()
    }
}

impl AtcState {
    /// Runs `level` for `domain` at `now` (randomness for Level 3 from `rng`) and reports
    /// metrics measured before and after on the level's scope ([`MetricsScope`]), the level's
    /// own report, and the levels still worth running. With [`RunMode::DryRun`] nothing
    /// changes; with [`RunMode::Apply`] the caller persists the state when
    /// [`Recalibration::changed_state`].
    pub fn recalibrate<R: Rng + ?Sized>(
        &mut self,
        level: Level,
        domain: Domain,
        mode: RunMode,
        now: DateTime<Utc>,
        rng: &mut R,
    ) -> Recalibration {
        let scope = match level {
            Level::Temperature => MetricsScope::All,
            _ => MetricsScope::Domain,
        };
        let filter = ObservationFilter {
            domain: (scope == MetricsScope::Domain).then_some(domain),
            ..ObservationFilter::default()
        };
        let before = self.metrics(&filter);
        let report = match level {
            Level::Drift => LevelReport::Drift(self.run_level1(domain)),
            Level::Temperature => LevelReport::Temperature(self.run_level2(mode)),
            Level::Bandit { reset } => {
                LevelReport::Bandit(self.run_level3(domain, reset, mode, rng))
            }
            Level::Optimizer => {
                LevelReport::Optimizer(self.run_level4(domain, now, mode, &level4_bo_config()))
            }
        };
        let after = self.metrics(&filter);
        let recommended_levels = self.recommend(&after, None, domain);
        Recalibration {
            level,
            domain,
            mode,
            scope,
            before,
            after,
            report,
            recommended_levels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::atc::Observation;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    fn obs(embedder_id: u8, confidence: f64, correct: bool) -> Observation {
        Observation {
            timestamp: t0(),
            embedder_id,
            confidence,
            correct,
            domain: Domain::General,
            threshold_name: None,
            threshold_used: None,
        }
    }

    #[test]
    fn level2_report_measures_in_and_out_of_sample() {
        // The hand case of temperature::tests::cross_validation_by_hand on E1: in sample the
        // fitted T = 1 matches every confidence to the accuracy (ECE 0); out of fold the ECE
        // is 0.3.
        let mut s = AtcState::new();
        for (p, y) in crate::service::atc::temperature::tests::twenty_by_fold() {
            s.ingest(obs(1, p, y)).unwrap();
        }
        let mut rng = StdRng::seed_from_u64(0);
        let r = s.recalibrate(
            Level::Temperature,
            Domain::Code,
            RunMode::Apply,
            t0(),
            &mut rng,
        );
        assert_eq!(r.scope, MetricsScope::All);
        assert_eq!(r.action(), Action::Recalibrated);
        let LevelReport::Temperature(l2) = &r.report else {
            panic!("{r:?}")
        };
        let e1 = &l2.embedders[0];
        assert!((e1.temperature_after - 1.0).abs() < 1e-9);
        assert!(e1.ece_after.unwrap() < 1e-9);
        assert!((e1.ece_after_cross_validated.unwrap() - 0.3).abs() < 1e-9);
        assert_eq!(l2.embedders[1].ece_after_cross_validated, None);
        // Only E1 has observations: the pooled figures are E1's.
        assert_eq!(l2.ece_after_in_sample, e1.ece_after);
        assert_eq!(l2.ece_after_cross_validated, e1.ece_after_cross_validated);
        assert_eq!(
            l2.ece_after_in_sample,
            r.after.calibrated.as_ref().map(|m| m.ece)
        );
        assert!(r.changed_state());
        assert!(
            r.note()
                .unwrap()
                .starts_with("manual ATC level 2 recalibration (Code): E1 T")
        );
        assert!(!r.recommended_levels.contains(&2), "{r:?}");
    }

    #[test]
    fn failures_and_dry_runs_leave_no_note() {
        let mut s = AtcState::new();
        let mut rng = StdRng::seed_from_u64(0);
        let r = s.recalibrate(
            Level::Temperature,
            Domain::General,
            RunMode::Apply,
            t0(),
            &mut rng,
        );
        assert_eq!(
            r.failure().as_deref(),
            Some("no embedder has at least 10 observations")
        );
        assert_eq!(r.note(), None);
        let r = s.recalibrate(
            Level::Optimizer,
            Domain::Legal,
            RunMode::Apply,
            t0(),
            &mut rng,
        );
        assert_eq!(r.action(), Action::Skipped);
        assert_eq!(
            r.failure().as_deref(),
            Some("0 observations, need at least 20")
        );
        let r = s.recalibrate(
            Level::Bandit { reset: true },
            Domain::Legal,
            RunMode::DryRun,
            t0(),
            &mut rng,
        );
        assert_eq!(
            (r.action(), r.changed_state(), r.note()),
            (Action::Selected, false, None)
        );
        let r = s.recalibrate(Level::Drift, Domain::Legal, RunMode::Apply, t0(), &mut rng);
        assert_eq!(
            (r.action(), r.changed_state(), r.note()),
            (Action::Reported, false, None)
        );
        assert_eq!(s, AtcState::new());
    }
}

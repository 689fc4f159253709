//! [`AtcState::threshold_status`]: everything the calibration state says about one domain, in
//! one read (`get_threshold_status`).

use chrono::{DateTime, Utc};

use super::bandit::ThompsonBandit;
use super::metrics::CalibrationStatus;
use super::state::{AtcState, Level1Report, MetricsPair, ObservationFilter};
use super::temperature::TemperatureRange;
use super::thresholds::{ThresholdName, strictness};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};

/// One threshold of a domain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdEntry {
    /// Its name.
    pub name: ThresholdName,
    /// Current value.
    pub value: f64,
    /// Default at the domain's strictness.
    pub default: f64,
    /// Valid range `(min, max)`, inclusive.
    pub range: (f64, f64),
}

/// One embedder's temperature and calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderStatus {
    /// Embedder id `1..=13`.
    pub embedder_id: u8,
    /// Current temperature.
    pub temperature: f64,
    /// Its default and range.
    pub range: TemperatureRange,
    /// Observations in its window.
    pub samples: usize,
    /// Metrics of its window (every domain).
    pub metrics: MetricsPair,
}

/// The state of one domain.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdStatus {
    /// The domain.
    pub domain: Domain,
    /// Its strictness (THRESHOLDS.md).
    pub strictness: f64,
    /// All thresholds, in catalogue order.
    pub thresholds: Vec<ThresholdEntry>,
    /// Every embedder by id, or the one asked for.
    pub embedders: Vec<EmbedderStatus>,
    /// The domain's Level 3 bandit.
    pub bandit: ThompsonBandit,
    /// The domain's session threshold (last Level 3 selection); `None` before any.
    pub selected_threshold: Option<f64>,
    /// Level 1 drift of the domain.
    pub drift: Level1Report,
    /// Calibrated status of the domain's observations; `None` without data.
    pub calibration_status: Option<CalibrationStatus>,
    /// Last applied Level 4 run for the domain.
    pub last_level4_run: Option<DateTime<Utc>>,
    /// [`AtcState::should_optimize_level4`] at `now`.
    pub should_optimize_level4: bool,
}

impl AtcState {
    /// The state of `domain` at `now`, with every embedder or only `embedder_id ∈ 1..=13`.
    pub fn threshold_status(
        &self,
        domain: Domain,
        embedder_id: Option<u8>,
        now: DateTime<Utc>,
    ) -> ThresholdStatus {
        let set = self.thresholds(domain);
        let thresholds = ThresholdName::ALL
            .into_iter()
            .map(|name| ThresholdEntry {
                name,
                value: set.get(name),
                default: name.default_at(strictness(domain)),
                range: name.range(),
            })
            .collect();
        let embedders = (1..=NUM_EMBEDDERS as u8)
            .filter(|&e| embedder_id.is_none_or(|only| only == e))
            .map(|e| EmbedderStatus {
                embedder_id: e,
                temperature: self.temperature(e),
                range: TemperatureRange::for_embedder(e).expect("1..=13"),
                samples: self.windows[usize::from(e) - 1].len(),
                metrics: self.metrics(&ObservationFilter {
                    embedder_id: Some(e),
                    ..ObservationFilter::default()
                }),
            })
            .collect();
        let d = domain.index();
        ThresholdStatus {
            domain,
            strictness: strictness(domain),
            thresholds,
            embedders,
            bandit: self.bandits[d].clone(),
            selected_threshold: self.selected[d],
            drift: self.run_level1(domain),
            calibration_status: self.domain_status(domain),
            last_level4_run: self.last_level4[d],
            should_optimize_level4: self.should_optimize_level4(domain, now),
        }
    }
}

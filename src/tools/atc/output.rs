//! Answer pieces several calibration tools share: calibration metrics (raw and temperature
//! scaled), reliability bins and the drift report.

use schemars::JsonSchema;
use serde::Serialize;

use super::{LevelNo, level_list};
use crate::service::atc::metrics::{BinStats, CalibrationMetrics, CalibrationStatus};
use crate::service::atc::state::{EmbedderDrift, Level1Report, MetricsPair, ThresholdDrift};
use crate::service::atc::thresholds::ThresholdName;
use crate::service::vocab::EMBEDDER_NAMES;
use crate::tools::wire::OneOf;

/// Calibration of a set of observations.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MetricsOut {
    /// Number of observations.
    pub count: usize,
    /// Expected calibration error (10 equal-width bins), in [0, 1].
    pub ece: f64,
    /// Maximum calibration error (largest gap of a bin), in [0, 1].
    pub mce: f64,
    /// Brier score (mean squared error of confidence against outcome), in [0, 1].
    pub brier: f64,
    /// Fraction of observations that were right.
    pub accuracy: f64,
    /// Mean confidence.
    pub mean_confidence: f64,
    /// Status band of the ECE.
    pub status: OneOf<CalibrationStatus>,
    /// What the band means.
    pub description: &'static str,
}

impl From<&CalibrationMetrics> for MetricsOut {
    fn from(m: &CalibrationMetrics) -> Self {
        MetricsOut {
            count: m.count,
            ece: m.ece,
            mce: m.mce,
            brier: m.brier,
            accuracy: m.accuracy,
            mean_confidence: m.mean_confidence,
            status: OneOf(m.status()),
            description: m.status().description(),
        }
    }
}

/// Metrics of one set of observations, on the confidences as reported and after each
/// embedder's temperature scaling; null when no observation matches.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MetricsPairOut {
    /// On the confidences as reported; null without observations.
    pub raw: Option<MetricsOut>,
    /// On the temperature-scaled confidences; null without observations.
    pub calibrated: Option<MetricsOut>,
}

impl From<&MetricsPair> for MetricsPairOut {
    fn from(p: &MetricsPair) -> Self {
        MetricsPairOut {
            raw: p.raw.as_ref().map(MetricsOut::from),
            calibrated: p.calibrated.as_ref().map(MetricsOut::from),
        }
    }
}

/// One reliability-diagram bin `(lower, upper]` (the first also holds confidence 0).
#[derive(Debug, Serialize, JsonSchema)]
pub struct BinOut {
    /// Lower edge (exclusive, except 0).
    pub lower: f64,
    /// Upper edge (inclusive).
    pub upper: f64,
    /// Observations in the bin.
    pub count: usize,
    /// Their mean confidence; null for an empty bin.
    pub mean_confidence: Option<f64>,
    /// The fraction of them that were right; null for an empty bin.
    pub accuracy: Option<f64>,
}

impl From<&BinStats> for BinOut {
    fn from(b: &BinStats) -> Self {
        BinOut {
            lower: b.lower,
            upper: b.upper,
            count: b.count,
            mean_confidence: b.mean_confidence,
            accuracy: b.accuracy,
        }
    }
}

/// The 10 bins of a set of metrics; empty without observations.
pub fn bins(m: Option<&CalibrationMetrics>) -> Vec<BinOut> {
    m.map(|m| m.bins.iter().map(BinOut::from).collect())
        .unwrap_or_default()
}

/// Drift of the thresholds a domain's observations reported using, and of each embedder's
/// calibration gap (exponentially weighted moving averages, α = 0.2).
#[derive(Debug, Serialize, JsonSchema)]
pub struct DriftOut {
    /// Thresholds with tracked observations, in catalogue order.
    pub thresholds: Vec<ThresholdDriftOut>,
    /// Embedders with observations, by id.
    pub embedders: Vec<EmbedderDriftOut>,
}

/// Drift of one threshold: how far the values used sit from its current value.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ThresholdDriftOut {
    /// Threshold name.
    pub name: OneOf<ThresholdName>,
    /// The threshold's current value in the domain.
    pub baseline: f64,
    /// Moving average of the values used.
    pub ewma: f64,
    /// Moving standard deviation of the values used.
    pub sigma: f64,
    /// |ewma − baseline| / sigma (0 when sigma is 0).
    pub drift_score: f64,
    /// Observations tracked.
    pub count: u64,
    /// Levels this drift calls for: 2 above a score of 2, 3 above 3, 4 above 3 when the
    /// domain's calibration is Poor or Critical (2 only while refitting temperatures would
    /// change one).
    pub recommended_levels: Vec<LevelNo>,
}

impl From<&ThresholdDrift> for ThresholdDriftOut {
    fn from(t: &ThresholdDrift) -> Self {
        ThresholdDriftOut {
            name: OneOf(t.name),
            baseline: t.baseline,
            ewma: t.ewma,
            sigma: t.sigma,
            drift_score: t.score,
            count: t.count,
            recommended_levels: level_list(&t.recommended_levels),
        }
    }
}

/// Drift of one embedder's calibration gap (temperature-scaled confidence minus outcome).
#[derive(Debug, Serialize, JsonSchema)]
pub struct EmbedderDriftOut {
    /// Embedder id, 1–13.
    pub embedder_id: u8,
    /// Embedder name.
    pub name: &'static str,
    /// Moving average of the gap (0 when calibrated).
    pub ewma_gap: f64,
    /// Moving standard deviation of the gap.
    pub sigma: f64,
    /// |ewma_gap| / sigma (0 when sigma is 0).
    pub drift_score: f64,
    /// Observations tracked.
    pub count: u64,
    /// Levels this drift calls for, as for thresholds.
    pub recommended_levels: Vec<LevelNo>,
}

impl From<&EmbedderDrift> for EmbedderDriftOut {
    fn from(e: &EmbedderDrift) -> Self {
        EmbedderDriftOut {
            embedder_id: e.embedder_id,
            name: EMBEDDER_NAMES[usize::from(e.embedder_id) - 1],
            ewma_gap: e.ewma,
            sigma: e.sigma,
            drift_score: e.score,
            count: e.count,
            recommended_levels: level_list(&e.recommended_levels),
        }
    }
}

impl From<&Level1Report> for DriftOut {
    fn from(r: &Level1Report) -> Self {
        DriftOut {
            thresholds: r.thresholds.iter().map(ThresholdDriftOut::from).collect(),
            embedders: r.embedders.iter().map(EmbedderDriftOut::from).collect(),
        }
    }
}

/// The sentence that goes with a recommended level.
pub fn level_advice(level: u8) -> &'static str {
    match level {
        1 => "Run trigger_recalibration level 1: report drift.",
        2 => "Run trigger_recalibration level 2: refit per-embedder temperatures.",
        3 => "Run trigger_recalibration level 3: select a session threshold by Thompson sampling.",
        _ => {
            "Run trigger_recalibration level 4: optimise theta_acc by Bayesian optimisation (and review by hand if Critical)."
        }
    }
}

/// The recommendation sentences for a status and the levels worth running: the band's
/// meaning (when there is data), then one sentence per level, or that nothing is needed.
pub fn recommendations(status: Option<CalibrationStatus>, levels: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = status
        .map(|s| s.description().to_string())
        .into_iter()
        .collect();
    if levels.is_empty() && status.is_some() {
        out.push("No recalibration is worth running now.".to_string());
    }
    out.extend(levels.iter().map(|&l| level_advice(l).to_string()));
    out
}

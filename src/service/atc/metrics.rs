//! Calibration metrics: ECE, MCE, Brier score, reliability bins, and the status bands.
//!
//! Sources: Guo, Pleiss, Sun, Weinberger, "On Calibration of Modern Neural Networks", ICML 2017
//! (ECE/MCE over equal-width bins `((m−1)/M, m/M]`); Naeini, Cooper, Hauskrecht, "Obtaining Well
//! Calibrated Probabilities Using Bayesian Binning", AAAI 2015 (ECE/MCE); Brier, "Verification of
//! forecasts expressed in terms of probability", Monthly Weather Review 1950. Status bands: SPEC §4.

use thiserror::Error;

/// Number of equal-width confidence bins.
pub const N_BINS: usize = 10;

/// Upper edge of bin `k` (0-based), `(k + 1) / 10` computed as `(k + 1) as f64 / 10.0`.
fn upper_edge(k: usize) -> f64 {
    (k + 1) as f64 / N_BINS as f64
}

/// Lower edge of bin `k` (0-based), `k / 10` computed as `k as f64 / 10.0`.
fn lower_edge(k: usize) -> f64 {
    k as f64 / N_BINS as f64
}

/// Bin of a confidence `p ∈ [0, 1]`: the bins are right-closed, `(k/10, (k+1)/10]`, and `0` goes
/// in the first bin (as scikit-learn's `calibration_curve` and Guo et al. 2017 do):
///
/// ```text
/// bin(p) = min { k ∈ 0..10 : p ≤ (k+1)/10 }
/// ```
///
/// The edges are the correctly rounded doubles `k as f64 / 10.0`, compared directly — not
/// `floor(p·10)`, which misplaces values one rounding step off an edge (`0.3 + 0.6 =
/// 0.8999999999999999` belongs in `(0.8, 0.9]`). Callers guarantee `p ∈ [0, 1]` (see
/// [`CalibrationMetrics::compute`]); a value above 1 would land in the last bin.
pub fn bin_index(p: f64) -> usize {
    (0..N_BINS - 1)
        .find(|&k| p <= upper_edge(k))
        .unwrap_or(N_BINS - 1)
}

/// One reliability-diagram bin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinStats {
    /// Exclusive lower edge (`0.0` for the first bin, which also holds confidence exactly 0).
    pub lower: f64,
    /// Inclusive upper edge.
    pub upper: f64,
    /// Number of samples in the bin.
    pub count: usize,
    /// Mean confidence of the bin's samples; `None` when the bin is empty.
    pub mean_confidence: Option<f64>,
    /// Fraction of the bin's samples that were correct; `None` when the bin is empty.
    pub accuracy: Option<f64>,
}

/// Calibration status bands of SPEC §4, by ECE. Named as the variants are spelt (`"Excellent"`,
/// …, `"Critical"`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
pub enum CalibrationStatus {
    /// ECE < 0.05.
    Excellent,
    /// 0.05 ≤ ECE < 0.10.
    Good,
    /// 0.10 ≤ ECE < 0.15.
    Acceptable,
    /// 0.15 ≤ ECE < 0.25.
    Poor,
    /// ECE ≥ 0.25 (and NaN, which cannot arise from [`CalibrationMetrics::compute`]).
    Critical,
}

impl CalibrationStatus {
    /// Each band but Critical with the ECE it stays below, best first.
    pub const BANDS: [(CalibrationStatus, f64); 4] = [
        (CalibrationStatus::Excellent, 0.05),
        (CalibrationStatus::Good, 0.10),
        (CalibrationStatus::Acceptable, 0.15),
        (CalibrationStatus::Poor, 0.25),
    ];

    /// Band of an ECE value: Excellent < 0.05, Good < 0.10, Acceptable < 0.15, Poor < 0.25,
    /// else Critical ([`CalibrationStatus::BANDS`]).
    pub fn from_ece(ece: f64) -> CalibrationStatus {
        CalibrationStatus::BANDS
            .iter()
            .find(|&&(_, below)| ece < below)
            .map_or(CalibrationStatus::Critical, |&(status, _)| status)
    }

    /// Name as shown on the wire (`"Excellent"`, …, `"Critical"`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// One sentence saying what the band means. It names no level to run: which levels are
    /// worth running depends on more than the band (see `advice::recommend`).
    pub fn description(self) -> &'static str {
        match self {
            CalibrationStatus::Excellent => {
                "ECE below 0.05: confidences match observed accuracy closely."
            }
            CalibrationStatus::Good => "ECE in [0.05, 0.10): a small calibration gap.",
            CalibrationStatus::Acceptable => "ECE in [0.10, 0.15): a noticeable calibration gap.",
            CalibrationStatus::Poor => "ECE in [0.15, 0.25): confidences are unreliable.",
            CalibrationStatus::Critical => {
                "ECE of 0.25 or more: confidences should not be trusted; review by hand."
            }
        }
    }

    /// True for Poor and Critical, the bands that call for Level 4.
    pub fn needs_level4(self) -> bool {
        matches!(self, CalibrationStatus::Poor | CalibrationStatus::Critical)
    }
}

/// Why metrics could not be computed.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum MetricsError {
    /// No samples: ECE, MCE and Brier are undefined (a mean over nothing).
    #[error("no observations to measure calibration on")]
    Empty,
    /// A confidence was NaN or outside `[0, 1]`.
    #[error("confidence at index {index} is {value}, expected a number in [0, 1]")]
    InvalidConfidence {
        /// Position of the sample in the input.
        index: usize,
        /// Offending value.
        value: f64,
    },
}

/// ECE, MCE, Brier score and the reliability bins of a sample of `(confidence, correct)` pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationMetrics {
    /// Number of samples, ≥ 1.
    pub count: usize,
    /// Expected Calibration Error, in `[0, 1]`.
    pub ece: f64,
    /// Maximum Calibration Error over non-empty bins, in `[0, 1]`.
    pub mce: f64,
    /// Brier score, in `[0, 1]`.
    pub brier: f64,
    /// Fraction of correct samples.
    pub accuracy: f64,
    /// Mean confidence.
    pub mean_confidence: f64,
    /// The [`N_BINS`] reliability bins, lowest first.
    pub bins: Vec<BinStats>,
}

impl CalibrationMetrics {
    /// Measures calibration of `samples` (confidence `p_i ∈ [0, 1]`, outcome `y_i ∈ {0, 1}`),
    /// with `N` samples and bins `B_m` of [`bin_index`]:
    ///
    /// ```text
    /// acc(B_m)  = (1/|B_m|) Σ_{i∈B_m} y_i        conf(B_m) = (1/|B_m|) Σ_{i∈B_m} p_i
    /// ECE       = Σ_m (|B_m| / N) · |acc(B_m) − conf(B_m)|          (Guo et al. 2017, eq. 3)
    /// MCE       = max_{m : |B_m| > 0} |acc(B_m) − conf(B_m)|        (Guo et al. 2017, eq. 5)
    /// Brier     = (1/N) Σ_i (p_i − y_i)²                            (Brier 1950)
    /// ```
    ///
    /// # Errors
    /// [`MetricsError::Empty`] when there are no samples (the metrics are means over nothing;
    /// callers report "no data" rather than zeros); [`MetricsError::InvalidConfidence`] for the
    /// first confidence that is NaN or outside `[0, 1]`.
    pub fn compute(
        samples: impl IntoIterator<Item = (f64, bool)>,
    ) -> Result<CalibrationMetrics, MetricsError> {
        let mut counts = [0usize; N_BINS];
        let mut conf_sums = [0.0f64; N_BINS];
        let mut correct_sums = [0usize; N_BINS];
        let mut brier_sum = 0.0;
        let mut n = 0usize;
        for (index, (p, correct)) in samples.into_iter().enumerate() {
            if !(0.0..=1.0).contains(&p) {
                return Err(MetricsError::InvalidConfidence { index, value: p });
            }
            let y = if correct { 1.0 } else { 0.0 };
            let k = bin_index(p);
            counts[k] += 1;
            conf_sums[k] += p;
            correct_sums[k] += usize::from(correct);
            brier_sum += (p - y) * (p - y);
            n += 1;
        }
        if n == 0 {
            return Err(MetricsError::Empty);
        }
        let total = n as f64;
        let mut ece = 0.0;
        let mut mce: f64 = 0.0;
        let mut bins = Vec::with_capacity(N_BINS);
        for k in 0..N_BINS {
            let (mean_confidence, accuracy) = if counts[k] == 0 {
                (None, None)
            } else {
                let c = counts[k] as f64;
                let conf = conf_sums[k] / c;
                let acc = correct_sums[k] as f64 / c;
                let gap = (acc - conf).abs();
                ece += c / total * gap;
                mce = mce.max(gap);
                (Some(conf), Some(acc))
            };
            bins.push(BinStats {
                lower: lower_edge(k),
                upper: upper_edge(k),
                count: counts[k],
                mean_confidence,
                accuracy,
            });
        }
        Ok(CalibrationMetrics {
            count: n,
            ece,
            mce,
            brier: brier_sum / total,
            accuracy: correct_sums.iter().sum::<usize>() as f64 / total,
            mean_confidence: conf_sums.iter().sum::<f64>() / total,
            bins,
        })
    }

    /// Status band of this ECE ([`CalibrationStatus::from_ece`]).
    pub fn status(&self) -> CalibrationStatus {
        CalibrationStatus::from_ece(self.ece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-12;

    #[test]
    fn bin_edges_are_right_closed_with_zero_in_the_first_bin() {
        let up = |x: f64| x.next_up();
        let down = |x: f64| x.next_down();
        let cases = [
            (0.0, 0),
            (f64::MIN_POSITIVE, 0),
            (0.1, 0),
            (up(0.1), 1),
            (down(0.3), 2),
            (0.3, 2),
            (up(0.3), 3),
            (down(0.7), 6),
            (0.7, 6),
            (up(0.7), 7),
            (0.8, 7),
            (up(0.8), 8),
            // Sums one rounding step off an edge: 0.3 + 0.6 = 0.8999999999999999 ∈ (0.8, 0.9],
            // 0.1 + 0.7 = 0.7999999999999999 ∈ (0.7, 0.8], 0.1·3 = 0.30000000000000004 ∈ (0.3, 0.4].
            // Edge values themselves: floor(0.7·10) = 7 would put 0.7 in (0.7, 0.8]; it is bin 6.
            (0.3 + 0.6, 8),
            (0.1 + 0.7, 7),
            (0.1 * 3.0, 3),
            (down(1.0), 9),
            (1.0, 9),
        ];
        for (p, bin) in cases {
            assert_eq!(bin_index(p), bin, "p = {p:e}");
        }
    }

    #[test]
    fn reference_values_on_edge_data() {
        // Samples (p, y) on and one ulp off bin edges:
        //   bin 0 (0, 0.1]: (0.0, 0), (0.1, 1)         conf 0.05,  acc 0.5, gap 0.45
        //   bin 1 (0.1, 0.2]: (0.1⁺, 0)               conf 0.1⁺,  acc 0,   gap 0.1⁺
        //   bin 2 (0.2, 0.3]: (0.3, 1)                conf 0.3,   acc 1,   gap 0.7
        //   bin 6 (0.6, 0.7]: (0.7, 1), (0.7, 0)      conf 0.7,   acc 0.5, gap 0.2
        //   bin 7 (0.7, 0.8]: (0.8, 1)                conf 0.8,   acc 1,   gap 0.2
        //   bin 9 (0.9, 1.0]: (1.0, 1), (1.0, 1)      conf 1,     acc 1,   gap 0
        // N = 9.  ECE = (2·0.45 + 0.1⁺ + 0.7 + 2·0.2 + 0.2 + 0)/9 = 2.3/9 (+ 1 ulp/9)
        // MCE = 0.7.  Brier = (0 + 0.81 + 0.01 + 0.49 + 0.09 + 0.49 + 0.04 + 0 + 0)/9 = 1.93/9.
        let p01u = 0.1f64.next_up();
        let samples = [
            (0.0, false),
            (0.1, true),
            (p01u, false),
            (0.3, true),
            (0.7, true),
            (0.7, false),
            (0.8, true),
            (1.0, true),
            (1.0, true),
        ];
        let m = CalibrationMetrics::compute(samples).unwrap();
        assert_eq!(m.count, 9);
        assert!((m.ece - 2.3 / 9.0).abs() < TOL, "ece {}", m.ece);
        assert!((m.mce - 0.7).abs() < TOL, "mce {}", m.mce);
        assert!((m.brier - 1.93 / 9.0).abs() < TOL, "brier {}", m.brier);
        assert!((m.accuracy - 6.0 / 9.0).abs() < TOL);
        let counts: Vec<usize> = m.bins.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![2, 1, 1, 0, 0, 0, 2, 1, 0, 2]);
        assert_eq!(m.bins[3].mean_confidence, None);
        assert_eq!(m.bins[3].accuracy, None);
        assert_eq!(m.bins[6].accuracy, Some(0.5));
        assert_eq!(m.bins[0].lower, 0.0);
        assert_eq!(m.bins[2].upper, 0.3);
        assert_eq!(m.status(), CalibrationStatus::Critical);
    }

    #[test]
    fn perfectly_calibrated_bins_have_zero_ece() {
        // Ten samples at 0.8 with eight correct, four at 0.25 with one correct → every gap is 0.
        let mut samples = Vec::new();
        samples.extend((0..10).map(|i| (0.8, i < 8)));
        samples.extend((0..4).map(|i| (0.25, i < 1)));
        let m = CalibrationMetrics::compute(samples).unwrap();
        assert!(m.ece.abs() < TOL);
        assert!(m.mce.abs() < TOL);
        // Brier = (10·(0.8·0.2) + 4·(0.25·0.75))/14 = (1.6 + 0.75)/14
        assert!((m.brier - 2.35 / 14.0).abs() < TOL);
        assert_eq!(m.status(), CalibrationStatus::Excellent);
    }

    #[test]
    fn empty_and_invalid_input() {
        assert_eq!(
            CalibrationMetrics::compute(std::iter::empty()),
            Err(MetricsError::Empty)
        );
        for bad in [f64::NAN, -0.1, 1.0f64.next_up(), f64::INFINITY] {
            let err = CalibrationMetrics::compute([(0.5, true), (bad, false)]).unwrap_err();
            assert!(matches!(
                err,
                MetricsError::InvalidConfidence { index: 1, .. }
            ));
        }
    }

    #[test]
    fn status_bands() {
        let cases = [
            (0.0, CalibrationStatus::Excellent),
            (0.0499, CalibrationStatus::Excellent),
            (0.05, CalibrationStatus::Good),
            (0.0999, CalibrationStatus::Good),
            (0.10, CalibrationStatus::Acceptable),
            (0.15, CalibrationStatus::Poor),
            (0.2499, CalibrationStatus::Poor),
            (0.25, CalibrationStatus::Critical),
            (1.0, CalibrationStatus::Critical),
            (f64::NAN, CalibrationStatus::Critical),
        ];
        for (ece, status) in cases {
            assert_eq!(CalibrationStatus::from_ece(ece), status, "ece {ece}");
        }
        assert!(CalibrationStatus::Poor.needs_level4());
        assert!(!CalibrationStatus::Acceptable.needs_level4());
    }
}

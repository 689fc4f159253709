//! Level 2: temperature scaling per embedder, fitted by minimising the negative log-likelihood.
//!
//! Source: Guo, Pleiss, Sun, Weinberger, "On Calibration of Modern Neural Networks", ICML 2017,
//! §4.2 (temperature scaling, T fitted by NLL on held-out data), applied here to binary
//! confidences. Per-embedder defaults and ranges: `THRESHOLDS.md`.

use thiserror::Error;

/// Confidences are clamped to `[P_CLAMP, 1 − P_CLAMP]` before the logit, so `logit` stays finite
/// (`|logit| ≤ ln((1 − 1e-12)/1e-12) ≈ 27.63`).
pub const P_CLAMP: f64 = 1e-12;

/// Fewest samples an embedder needs before its temperature is fitted.
pub const MIN_SAMPLES: usize = 10;

/// The fit stops when the bracket (or the last Newton step) is narrower than this in `ln T`.
pub const LOG_T_TOLERANCE: f64 = 1e-12;

// The embedder vocabulary (count, names by id − 1) is defined once, with the fingerprint.

/// A temperature's default and its inclusive search range `[lo, hi]`, `0 < lo ≤ default ≤ hi`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemperatureRange {
    /// Starting temperature.
    pub default: f64,
    /// Smallest temperature the fit may return.
    pub lo: f64,
    /// Largest temperature the fit may return.
    pub hi: f64,
}

impl TemperatureRange {
    /// Default and range of embedder `embedder_id ∈ 1..=13` (THRESHOLDS.md): E1 1.0 [0.5, 2.0],
    /// E5 1.2 [0.8, 2.5], E7 0.9 [0.5, 1.5], E9 1.5 [1.0, 3.0], E13 1.1 [0.7, 2.0], every other
    /// embedder 1.0 [0.5, 2.0]. `None` for an id outside `1..=13`.
    pub fn for_embedder(embedder_id: u8) -> Option<TemperatureRange> {
        let (default, lo, hi) = match embedder_id {
            5 => (1.2, 0.8, 2.5),
            7 => (0.9, 0.5, 1.5),
            9 => (1.5, 1.0, 3.0),
            13 => (1.1, 0.7, 2.0),
            1..=12 => (1.0, 0.5, 2.0),
            _ => return None,
        };
        Some(TemperatureRange { default, lo, hi })
    }

    /// `t` clamped into `[lo, hi]`.
    pub fn clamp(&self, t: f64) -> f64 {
        t.clamp(self.lo, self.hi)
    }
}

/// `ln(p / (1 − p))` of `p` clamped to `[P_CLAMP, 1 − P_CLAMP]`. NaN stays NaN.
pub fn logit(p: f64) -> f64 {
    let p = p.clamp(P_CLAMP, 1.0 - P_CLAMP);
    (p / (1.0 - p)).ln()
}

/// The logistic function `σ(x) = 1 / (1 + e^{−x})`, evaluated without overflow.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `ln(1 + e^x)` without overflow.
fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// Temperature-scaled confidence:
///
/// ```text
/// p' = σ(logit(p) / T)        p clamped to [1e-12, 1 − 1e-12] first
/// ```
///
/// `T > 1` softens (pulls toward 0.5), `T < 1` sharpens. With `T = 1` the result equals `p` up to
/// rounding and the clamp. `T` must be positive and finite; NaN `p` gives NaN.
pub fn calibrate(p: f64, temperature: f64) -> f64 {
    sigmoid(logit(p) / temperature)
}

/// Mean negative log-likelihood of the outcomes under the temperature-scaled confidences:
///
/// ```text
/// NLL(T) = −(1/N) Σ_i [ y_i ln p'_i + (1 − y_i) ln(1 − p'_i) ],   p'_i = σ(logit(p_i)/T)
///        =  (1/N) Σ_i softplus(−t_i / T),   t_i = logit(p_i) if y_i else −logit(p_i)
/// ```
///
/// In nats per sample. Empty input gives NaN (0/0).
pub fn nll(samples: &[(f64, bool)], temperature: f64) -> f64 {
    let beta = 1.0 / temperature;
    let sum: f64 = samples
        .iter()
        .map(|&(p, y)| softplus(-signed_logit(p, y) * beta))
        .sum();
    sum / samples.len() as f64
}

/// `t = logit(p)` if `correct`, else `−logit(p)` (the "signed logit" of [`nll`]).
pub fn signed_logit(p: f64, correct: bool) -> f64 {
    let z = logit(p);
    if correct { z } else { -z }
}

/// [`nll`] from precomputed signed logits `t_i`: `(1/N) Σ softplus(−t_i / T)`. Empty → NaN.
pub fn nll_signed(t: &[f64], temperature: f64) -> f64 {
    let beta = 1.0 / temperature;
    t.iter().map(|&ti| softplus(-ti * beta)).sum::<f64>() / t.len() as f64
}

/// Which end of the range the optimum sits at, named `lower` or `upper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum RangeBound {
    /// The NLL keeps falling as T decreases: the data are separable at 0.5 (every confidence on
    /// the right side of 0.5), so the unconstrained optimum is `T → 0`.
    Lower,
    /// The NLL keeps falling as T increases (the confidences carry less information than their
    /// size claims, up to `T → ∞`, i.e. everything toward 0.5).
    Upper,
}

/// A fitted temperature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FittedTemperature {
    /// The NLL-minimising temperature within the range.
    pub temperature: f64,
    /// Mean NLL at `temperature`.
    pub nll: f64,
    /// `Some` when the optimum is a range bound (no interior minimum), else `None`.
    pub at_bound: Option<RangeBound>,
    /// Derivative evaluations used.
    pub iterations: usize,
}

/// Why a temperature was not fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Fewer than [`MIN_SAMPLES`] samples.
    TooFewSamples {
        /// Samples available.
        have: usize,
        /// Samples needed.
        need: usize,
    },
    /// Every confidence is exactly 0.5 (logit 0): the NLL does not depend on T.
    Uninformative,
}

impl SkipReason {
    /// Human-readable reason, e.g. `"7 samples, need at least 10"`.
    pub fn message(&self) -> String {
        match self {
            SkipReason::TooFewSamples { have, need } => {
                format!("{have} samples, need at least {need}")
            }
            SkipReason::Uninformative => {
                "every confidence is 0.5, so the likelihood does not depend on the temperature"
                    .to_string()
            }
        }
    }
}

/// Outcome of [`fit_temperature`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TemperatureFit {
    /// A temperature was fitted.
    Fitted(FittedTemperature),
    /// Nothing was fitted; the current temperature should stay.
    Skipped(SkipReason),
}

/// Invalid input to [`fit_temperature`].
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum TemperatureError {
    /// A confidence was NaN or outside `[0, 1]`.
    #[error("confidence at index {index} is {value}, expected a number in [0, 1]")]
    InvalidConfidence {
        /// Position in the input.
        index: usize,
        /// Offending value.
        value: f64,
    },
    /// The range is not `0 < lo ≤ hi < ∞`.
    #[error("temperature range [{lo}, {hi}] is not 0 < lo <= hi < infinity")]
    InvalidRange {
        /// Lower bound given.
        lo: f64,
        /// Upper bound given.
        hi: f64,
    },
}

/// Fits the temperature minimising [`nll`] over `T ∈ [range.lo, range.hi]`.
///
/// Method: with `β = 1/T` and `t_i` as in [`nll`], `NLL(β) = (1/N) Σ softplus(−t_i β)` is convex
/// in β (a one-feature logistic regression without intercept), so its minimum over the bracket is
/// either a bound or the single root of
///
/// ```text
/// g(β)  = dNLL/dβ  = −(1/N) Σ t_i σ(−t_i β)          (increasing in β)
/// g'(β) = (1/N) Σ t_i² σ(t_i β) σ(−t_i β)  ≥ 0
/// ```
///
/// found by Newton's method safeguarded by bisection (in `ln β`) inside `[1/hi, 1/lo]`, until the
/// bracket or the last step is below [`LOG_T_TOLERANCE`] in `ln T`. Solving `g = 0` rather than
/// comparing NLL values locates the optimum to ~1e-12 in `ln T` (comparisons of a flat function
/// stall at ~√ε). If `g(1/hi) ≥ 0` the optimum is `T = hi`; if `g(1/lo) ≤ 0` it is `T = lo`; the
/// result then says which bound ([`RangeBound`]).
///
/// # Errors
/// [`TemperatureError::InvalidConfidence`] for a NaN or out-of-`[0, 1]` confidence,
/// [`TemperatureError::InvalidRange`] for a range that is not `0 < lo ≤ hi < ∞`.
/// Fewer than [`MIN_SAMPLES`] samples, or every confidence exactly 0.5, give
/// `Ok(TemperatureFit::Skipped(..))`.
pub fn fit_temperature(
    samples: &[(f64, bool)],
    range: TemperatureRange,
) -> Result<TemperatureFit, TemperatureError> {
    let (lo, hi) = (range.lo, range.hi);
    if !(lo > 0.0 && lo <= hi && hi.is_finite()) {
        return Err(TemperatureError::InvalidRange { lo, hi });
    }
    for (index, &(p, _)) in samples.iter().enumerate() {
        if !(0.0..=1.0).contains(&p) {
            return Err(TemperatureError::InvalidConfidence { index, value: p });
        }
    }
    if samples.len() < MIN_SAMPLES {
        return Ok(TemperatureFit::Skipped(SkipReason::TooFewSamples {
            have: samples.len(),
            need: MIN_SAMPLES,
        }));
    }
    let t: Vec<f64> = samples.iter().map(|&(p, y)| signed_logit(p, y)).collect();
    Ok(fit_signed_logits(&t, range))
}

/// [`fit_temperature`] on precomputed signed logits `t_i` ([`signed_logit`]), for callers that
/// reuse them (Level 2 measures NLL and ECE on the same logits). The caller guarantees a valid
/// range and finite `t_i`; fewer than [`MIN_SAMPLES`] values or all zero give `Skipped`.
pub fn fit_signed_logits(t: &[f64], range: TemperatureRange) -> TemperatureFit {
    // The middle of the range in log T (β = 1/T): the same start the bracket's first
    // bisection step would take.
    fit_signed_logits_from(t, range, (range.lo * range.hi).sqrt())
}

/// The NLL-minimising temperature of signed logits `t`, started from the temperature `start`
/// (clamped into the range): Level 2 starts from the current temperature and each
/// cross-validation fold from the fit on the whole window; [`fit_signed_logits`] from the
/// middle of the range. Newton's method in `β = 1/T`, safeguarded by bisection; a range bound
/// is evaluated only when an iterate reaches it (a bound is the optimum when the derivative
/// there points out of the range: `g(1/hi) ≥ 0` gives `hi`, `g(1/lo) ≤ 0` gives `lo`). From a
/// start near the optimum it needs about four derivative evaluations.
pub fn fit_signed_logits_from(t: &[f64], range: TemperatureRange, start: f64) -> TemperatureFit {
    match optimum_from(t, range, start) {
        Ok((temperature, at_bound, iterations)) => TemperatureFit::Fitted(FittedTemperature {
            temperature,
            nll: nll_signed(t, temperature),
            at_bound,
            iterations,
        }),
        Err(why) => TemperatureFit::Skipped(why),
    }
}

/// The optimum of [`fit_signed_logits_from`]: `(temperature, bound, iterations)`, without the
/// NLL at the optimum (one pass over `t` that cross-validation does not need).
fn optimum_from(
    t: &[f64],
    range: TemperatureRange,
    start: f64,
) -> Result<(f64, Option<RangeBound>, usize), SkipReason> {
    if t.len() < MIN_SAMPLES {
        return Err(SkipReason::TooFewSamples {
            have: t.len(),
            need: MIN_SAMPLES,
        });
    }
    if t.iter().all(|&ti| ti == 0.0) {
        return Err(SkipReason::Uninformative);
    }
    let (beta_min, beta_max) = (1.0 / range.hi, 1.0 / range.lo);
    // The optimum lies in [a, b]; an end still equal to a range bound may be unverified.
    let (mut a, mut b) = (beta_min, beta_max);
    let mut x = (1.0 / start).clamp(beta_min, beta_max);
    let mut iterations = 0;
    loop {
        let (g, h) = nll_derivatives(t, x);
        iterations += 1;
        if x == beta_min && g >= 0.0 {
            return Ok((range.hi, Some(RangeBound::Upper), iterations));
        }
        if x == beta_max && g <= 0.0 {
            return Ok((range.lo, Some(RangeBound::Lower), iterations));
        }
        if g == 0.0 {
            break;
        }
        if g < 0.0 {
            a = x;
        } else {
            b = x;
        }
        let newton = x - g / h;
        if h > 0.0 && (newton / x).ln().abs() < LOG_T_TOLERANCE.sqrt() {
            // Converged: near the optimum Newton's error after a step s is of order s², so a
            // step under √tolerance lands within the tolerance. (Testing the bracket below
            // would reject it, x being an end of the bracket by now, and bisect instead.)
            x = newton.clamp(beta_min, beta_max);
            break;
        }
        let next = if h > 0.0 && newton > a && newton < b {
            newton
        } else if h > 0.0 && g < 0.0 && newton >= b && b == beta_max {
            // Newton points past the smallest temperature: test that bound.
            beta_max
        } else if h > 0.0 && g > 0.0 && newton <= a && a == beta_min {
            beta_min
        } else {
            (a * b).sqrt()
        };
        let step = (next / x).ln().abs();
        x = next;
        if step < LOG_T_TOLERANCE || (b / a).ln() < LOG_T_TOLERANCE || iterations >= 200 {
            break;
        }
    }
    Ok((range.clamp(1.0 / x), None, iterations))
}

/// The first and second derivatives of the mean NLL in `β = 1/T` (see [`fit_temperature`]):
/// `g(β) = −(1/N) Σ t_i σ(−t_i β)` and `g'(β) = (1/N) Σ t_i² σ(t_i β) σ(−t_i β)`.
fn nll_derivatives(t: &[f64], beta: f64) -> (f64, f64) {
    let mut g = 0.0;
    let mut h = 0.0;
    for &ti in t {
        let s = sigmoid(-ti * beta);
        g -= ti * s;
        h += ti * ti * s * (1.0 - s);
    }
    let n = t.len() as f64;
    (g / n, h / n)
}

/// A refit moves a temperature "materially" when the new value differs from the current one by
/// more than this factor either way (1 %). Level 2 is recommended only for such a move: right
/// after Level 2 the refit returns the same temperatures, so recommending it again would be
/// noise.
pub const MATERIAL_CHANGE_FACTOR: f64 = 1.01;

/// Whether [`fit_signed_logits`] on `t` would return a temperature outside
/// `[current / factor, current · factor]`, computed from two derivative evaluations instead of
/// a fit. The NLL is convex in `β = 1/T` and `g(β)` increases, so with
/// `β_a = max(1/(current·factor), 1/hi)` and `β_b = min(factor/current, 1/lo)`:
///
/// ```text
/// moves  ⇔  (β_a > 1/hi ∧ g(β_a) > 0)  ∨  (β_b < 1/lo ∧ g(β_b) < 0)
/// ```
///
/// (the optimum lies below `β_a` or above `β_b`, and the range does not clamp it back). A fit
/// that would be skipped (fewer than [`MIN_SAMPLES`] values, or all zero) moves nothing.
/// `current` must lie in the range and `factor` be > 1.
pub fn refit_would_move(t: &[f64], range: TemperatureRange, current: f64, factor: f64) -> bool {
    if t.len() < MIN_SAMPLES || t.iter().all(|&ti| ti == 0.0) {
        return false;
    }
    let (beta_min, beta_max) = (1.0 / range.hi, 1.0 / range.lo);
    let beta_a = (1.0 / (current * factor)).max(beta_min);
    let beta_b = (factor / current).min(beta_max);
    (beta_a > beta_min && nll_derivatives(t, beta_a).0 > 0.0)
        || (beta_b < beta_max && nll_derivatives(t, beta_b).0 < 0.0)
}

/// Number of folds of Level 2's cross-validation.
pub const CV_FOLDS: usize = 5;

/// The `k` contiguous folds of `n` items in their given order: fold `j` is
/// `⌊j·n/k⌋ .. ⌊(j+1)·n/k⌋` (sizes differ by at most one; empty folds when `n < k`).
pub fn folds(n: usize, k: usize) -> Vec<std::ops::Range<usize>> {
    (0..k).map(|j| j * n / k..(j + 1) * n / k).collect()
}

/// The temperature of each cross-validation fold: for fold `j` of [`folds`]`(t.len(), k)`, the
/// temperature fitted on the other `k − 1` folds ([`fit_signed_logits_from`] from `start`,
/// the fit on all of `t`), or `fallback` when that fit is skipped (too few values, or
/// uninformative), which is what Level 2 does with an embedder it cannot fit: keep the current
/// temperature. Applying fold `j`'s temperature to fold `j` gives out-of-sample calibrated
/// confidences (Guo et al. 2017 evaluate calibration on data the temperature was not fitted
/// on).
///
/// Contiguous folds in the order given (for Level 2, the order the observations were received)
/// need no randomness, so a report can be reproduced exactly, and each held-out fold is a
/// stretch of time, which is the honest test for a temperature that will be applied to
/// future observations.
pub fn fold_temperatures(
    t: &[f64],
    range: TemperatureRange,
    start: f64,
    fallback: f64,
    k: usize,
) -> Vec<(std::ops::Range<usize>, f64)> {
    let mut train = Vec::with_capacity(t.len());
    folds(t.len(), k)
        .into_iter()
        .map(|fold| {
            train.clear();
            train.extend_from_slice(&t[..fold.start]);
            train.extend_from_slice(&t[fold.end..]);
            let temperature = optimum_from(&train, range, start).map_or(fallback, |(t, ..)| t);
            (fold, temperature)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::service::atc::metrics::CalibrationMetrics;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use rand_distr::{Distribution, Normal};

    /// NLL of the fit may exceed the scan's minimum by at most this (issue 4).
    const NLL_TOL: f64 = 1e-9;
    /// Fitted T within 10 % of the true T* (issue 4).
    const REL_T_TOL: f64 = 0.10;
    const TOL: f64 = 1e-12;
    /// Fitted T against a closed form (the fit converges to ~1e-12 in ln T).
    const T_TOL: f64 = 1e-9;

    /// z ~ N(1, 1.5²), correct ~ Bernoulli(σ(z)), reported confidence σ(z·T*) (issue 4).
    fn over_or_under_confident(t_star: f64, n: usize, seed: u64) -> Vec<(f64, bool)> {
        let mut rng = StdRng::seed_from_u64(seed);
        let normal = Normal::new(1.0, 1.5).unwrap();
        (0..n)
            .map(|_| {
                let z: f64 = normal.sample(&mut rng);
                let u: f64 = rand::RngExt::random(&mut rng);
                (sigmoid(z * t_star), u < sigmoid(z))
            })
            .collect()
    }

    /// Minimum of NLL over a grid of `points` temperatures evenly spaced in ln T over [lo, hi].
    fn scan(samples: &[(f64, bool)], lo: f64, hi: f64, points: usize) -> (f64, f64) {
        let (ul, uh) = (lo.ln(), hi.ln());
        (0..points)
            .map(|k| (ul + (uh - ul) * k as f64 / (points - 1) as f64).exp())
            .map(|t| (t, nll(samples, t)))
            .fold((f64::NAN, f64::INFINITY), |best, cur| {
                if cur.1 < best.1 { cur } else { best }
            })
    }

    #[test]
    fn calibrate_and_helpers() {
        assert!((calibrate(0.8, 1.0) - 0.8).abs() < TOL);
        // logit(0.8) = ln 4; σ(ln 4 / 2) = σ(ln 2) = 2/3.
        assert!((calibrate(0.8, 2.0) - 2.0 / 3.0).abs() < TOL);
        // σ(2 ln 4) = 16/17.
        assert!((calibrate(0.8, 0.5) - 16.0 / 17.0).abs() < TOL);
        assert!((calibrate(0.5, 0.7) - 0.5).abs() < TOL);
        assert!(calibrate(1.0, 1.0) < 1.0);
        assert!(calibrate(0.0, 1.0) > 0.0);
        // Clamped: logit(1) = logit(1 − 1e-12) ≈ ln(1e12) = 27.631 (1 − 1e-12 is not exact in
        // binary, hence the loose tolerance on the closed form).
        assert_eq!(logit(1.0), logit(1.0 - P_CLAMP));
        assert!((logit(1.0) - 1e12f64.ln()).abs() < 1e-3);
        assert!((logit(0.0) + 1e12f64.ln()).abs() < 1e-3);
        assert!(calibrate(f64::NAN, 1.0).is_nan());
        // NLL of a single (0.8, correct) at T = 1 is −ln 0.8.
        let one = [(0.8, true)];
        assert!((nll(&one, 1.0) + 0.8f64.ln()).abs() < TOL);
        assert!(nll(&[], 1.0).is_nan());
        assert!((sigmoid(-800.0)).abs() < TOL && (sigmoid(800.0) - 1.0).abs() < TOL);
    }

    #[test]
    fn ranges_per_embedder() {
        let cases = [
            (1, 1.0, 0.5, 2.0),
            (5, 1.2, 0.8, 2.5),
            (7, 0.9, 0.5, 1.5),
            (9, 1.5, 1.0, 3.0),
            (13, 1.1, 0.7, 2.0),
            (2, 1.0, 0.5, 2.0),
            (12, 1.0, 0.5, 2.0),
        ];
        for (id, default, lo, hi) in cases {
            assert_eq!(
                TemperatureRange::for_embedder(id),
                Some(TemperatureRange { default, lo, hi })
            );
        }
        assert_eq!(TemperatureRange::for_embedder(0), None);
        assert_eq!(TemperatureRange::for_embedder(14), None);
    }

    #[test]
    fn recovers_the_true_temperature() {
        // T* = 2.0 needs a range containing it with room: E9 [1, 3]; 1.5 → E1 [0.5, 2];
        // 0.8 → E7 [0.5, 1.5].
        let cases = [(2.0, 9u8, 11u64), (1.5, 1, 12), (0.8, 7, 13)];
        for (t_star, embedder, seed) in cases {
            let samples = over_or_under_confident(t_star, 5000, seed);
            let range = TemperatureRange::for_embedder(embedder).unwrap();
            let TemperatureFit::Fitted(fit) = fit_temperature(&samples, range).unwrap() else {
                panic!("skipped for T* = {t_star}");
            };
            assert_eq!(fit.at_bound, None, "T* = {t_star}");
            let rel = (fit.temperature - t_star).abs() / t_star;
            assert!(rel < REL_T_TOL, "T* = {t_star}: fitted {}", fit.temperature);

            // Independent check: coarse scan over the range, then a fine scan around its best.
            let (t0, _) = scan(&samples, range.lo, range.hi, 2001);
            let step = (range.hi / range.lo).ln() / 2000.0;
            let (_, scan_min) = scan(&samples, t0 * (-step).exp(), t0 * step.exp(), 2001);
            assert!(
                fit.nll <= scan_min + NLL_TOL,
                "T* = {t_star}: fit NLL {} vs scan {scan_min}",
                fit.nll
            );
            assert!((fit.nll - nll(&samples, fit.temperature)).abs() < TOL);

            let before = CalibrationMetrics::compute(samples.iter().copied()).unwrap();
            let after = CalibrationMetrics::compute(
                samples
                    .iter()
                    .map(|&(p, y)| (calibrate(p, fit.temperature), y)),
            )
            .unwrap();
            assert!(
                after.ece < before.ece,
                "T* = {t_star}: ECE {} → {}",
                before.ece,
                after.ece
            );
        }
    }

    #[test]
    fn closed_form_for_a_single_confidence() {
        // All n samples at confidence p, a fraction q of them correct: the NLL is minimised where
        // σ(logit(p)/T) = q, i.e. T = logit(p) / logit(q) (when that lies in the range).
        let range = TemperatureRange::for_embedder(1).unwrap();
        let cases = [
            (0.8, 3, 4, Some(4f64.ln() / 3f64.ln())), // 1.2619
            (0.9, 4, 5, Some(9f64.ln() / 4f64.ln())), // 1.5850
            (0.6, 7, 10, None), // ln 1.5 / ln(7/3) = 0.4785 < 0.5: stops at the bound
        ];
        for (p, right, of, expected) in cases {
            let samples: Vec<(f64, bool)> = (0..of * 4).map(|i| (p, i % of < right)).collect();
            let TemperatureFit::Fitted(fit) = fit_temperature(&samples, range).unwrap() else {
                panic!("skipped");
            };
            match expected {
                Some(t) => {
                    assert_eq!(fit.at_bound, None);
                    assert!((fit.temperature - t).abs() < T_TOL, "p {p}: {fit:?} vs {t}");
                }
                None => {
                    assert_eq!(fit.at_bound, Some(RangeBound::Lower));
                    assert_eq!(fit.temperature, range.lo);
                }
            }
        }
    }

    #[test]
    fn separable_data_stop_at_the_lower_bound() {
        let range = TemperatureRange::for_embedder(1).unwrap();
        // Every observation right, all confident.
        let all_right: Vec<(f64, bool)> =
            (0..50).map(|i| (0.55 + i as f64 * 0.009, true)).collect();
        // Perfectly ordered: right above 0.5, wrong below.
        let ordered: Vec<(f64, bool)> = (0..50)
            .map(|i| {
                let p = 0.02 + i as f64 * 0.0192;
                (p, p > 0.5)
            })
            .collect();
        for samples in [all_right, ordered] {
            let TemperatureFit::Fitted(fit) = fit_temperature(&samples, range).unwrap() else {
                panic!("skipped");
            };
            assert_eq!(fit.at_bound, Some(RangeBound::Lower));
            assert_eq!(fit.temperature, range.lo);
            assert!(nll(&samples, range.lo) < nll(&samples, range.lo * 1.01));
        }
    }

    #[test]
    fn hopeless_confidences_stop_at_the_upper_bound() {
        // Every confident answer is wrong: confidence carries negative information, so the NLL
        // falls all the way toward T → ∞.
        let samples: Vec<(f64, bool)> = (0..20).map(|i| (0.9, i % 10 == 0)).collect();
        let range = TemperatureRange::for_embedder(5).unwrap();
        let TemperatureFit::Fitted(fit) = fit_temperature(&samples, range).unwrap() else {
            panic!("skipped");
        };
        assert_eq!(fit.at_bound, Some(RangeBound::Upper));
        assert_eq!(fit.temperature, range.hi);
    }

    #[test]
    fn skips_and_errors() {
        let range = TemperatureRange::for_embedder(1).unwrap();
        let nine = vec![(0.7, true); 9];
        assert_eq!(
            fit_temperature(&nine, range),
            Ok(TemperatureFit::Skipped(SkipReason::TooFewSamples {
                have: 9,
                need: 10
            }))
        );
        let halves = vec![(0.5, true); 12];
        assert_eq!(
            fit_temperature(&halves, range),
            Ok(TemperatureFit::Skipped(SkipReason::Uninformative))
        );
        let mut bad = vec![(0.7, true); 12];
        bad[3].0 = f64::NAN;
        assert!(matches!(
            fit_temperature(&bad, range),
            Err(TemperatureError::InvalidConfidence { index: 3, .. })
        ));
        let inverted = TemperatureRange {
            default: 1.0,
            lo: 2.0,
            hi: 1.0,
        };
        assert!(matches!(
            fit_temperature(&halves, inverted),
            Err(TemperatureError::InvalidRange { .. })
        ));
        assert_eq!(
            SkipReason::TooFewSamples { have: 7, need: 10 }.message(),
            "7 samples, need at least 10"
        );
    }

    /// The twenty observations of `cross_validation_by_hand`, in order.
    pub(crate) fn twenty_by_fold() -> Vec<(f64, bool)> {
        (0..20).map(|i| (0.8, i < 12 || i % 4 < 2)).collect()
    }

    #[test]
    fn a_warm_start_finds_the_cold_optimum() {
        let range = TemperatureRange::for_embedder(1).unwrap();
        let cases: Vec<Vec<(f64, bool)>> = vec![
            over_or_under_confident(1.5, 3000, 21),
            over_or_under_confident(0.7, 3000, 22),
            (0..40).map(|i| (0.8, i % 4 != 0)).collect(), // interior, closed form
            (0..50).map(|i| (0.55 + i as f64 * 0.009, true)).collect(), // lower bound
            (0..40).map(|i| (0.95, i % 2 == 0)).collect(), // upper bound
        ];
        for samples in &cases {
            let t: Vec<f64> = samples.iter().map(|&(p, y)| signed_logit(p, y)).collect();
            let TemperatureFit::Fitted(cold) = fit_signed_logits(&t, range) else {
                panic!("skipped");
            };
            for start in [0.5, 0.6, 1.0, cold.temperature, 1.9, 2.0, 7.0] {
                let TemperatureFit::Fitted(warm) = fit_signed_logits_from(&t, range, start) else {
                    panic!("skipped");
                };
                assert_eq!(
                    warm.at_bound, cold.at_bound,
                    "start {start}: {warm:?} vs {cold:?}"
                );
                assert!(
                    (warm.temperature / cold.temperature).ln().abs() < T_TOL,
                    "start {start}: {warm:?} vs {cold:?}"
                );
            }
        }
        let few: Vec<f64> = vec![1.0; 9];
        assert_eq!(
            fit_signed_logits_from(&few, range, 1.0),
            TemperatureFit::Skipped(SkipReason::TooFewSamples { have: 9, need: 10 })
        );
        assert_eq!(
            fit_signed_logits_from(&[0.0; 12], range, 1.0),
            TemperatureFit::Skipped(SkipReason::Uninformative)
        );
    }

    #[test]
    fn folds_are_contiguous_and_cover_everything() {
        assert_eq!(folds(10, 5), vec![0..2, 2..4, 4..6, 6..8, 8..10]);
        assert_eq!(folds(7, 5), vec![0..1, 1..2, 2..4, 4..5, 5..7]);
        assert_eq!(folds(3, 5), vec![0..0, 0..1, 1..1, 1..2, 2..3]);
    }

    /// Twenty observations at confidence 0.8 (logit ln 4) in five folds of four, outcomes by
    /// fold `[✓✓✓✓] [✓✓✓✓] [✓✓✓✓] [✓✓✗✗] [✓✓✗✗]`: sixteen of twenty right.
    ///
    /// In sample, σ(ln 4 / T) = 0.8 at T = 1, so every calibrated confidence equals the accuracy
    /// and the ECE is 0. Out of fold (closed form of `closed_form_for_a_single_confidence`: the
    /// fit sets σ(ln 4 / T) to the training accuracy):
    /// - folds 0–2 train on 12 of 16 right: T = ln 4 / ln 3 ≈ 1.2619, predicting 0.75 for 12
    ///   held-out observations that are all right;
    /// - folds 3–4 train on 14 of 16 right: T = ln 4 / ln 7 ≈ 0.7124, predicting 0.875 for 8
    ///   held-out observations of which 4 are right.
    ///
    /// Pooled: bins (0.7, 0.8] and (0.8, 0.9], ECE = 0.6·|1 − 0.75| + 0.4·|0.5 − 0.875| = 0.3.
    #[test]
    fn cross_validation_by_hand() {
        let samples = twenty_by_fold();
        let t: Vec<f64> = samples.iter().map(|&(p, y)| signed_logit(p, y)).collect();
        let range = TemperatureRange::for_embedder(1).unwrap();
        let TemperatureFit::Fitted(full) = fit_signed_logits(&t, range) else {
            panic!("skipped");
        };
        assert!((full.temperature - 1.0).abs() < T_TOL);
        let per_fold = fold_temperatures(&t, range, full.temperature, 1.0, CV_FOLDS);
        let expected = [
            4f64.ln() / 3f64.ln(),
            4f64.ln() / 3f64.ln(),
            4f64.ln() / 3f64.ln(),
            4f64.ln() / 7f64.ln(),
            4f64.ln() / 7f64.ln(),
        ];
        for ((fold, temp), want) in per_fold.iter().zip(expected) {
            assert!((temp - want).abs() < T_TOL, "{fold:?}: {temp} vs {want}");
        }
        let in_sample = CalibrationMetrics::compute(
            samples
                .iter()
                .map(|&(p, y)| (calibrate(p, full.temperature), y)),
        )
        .unwrap();
        assert!(in_sample.ece < 1e-9, "{}", in_sample.ece);
        let out_of_fold = CalibrationMetrics::compute(per_fold.iter().flat_map(|(fold, temp)| {
            samples[fold.clone()]
                .iter()
                .map(|&(p, y)| (calibrate(p, *temp), y))
        }))
        .unwrap();
        assert!((out_of_fold.ece - 0.3).abs() < 1e-9, "{}", out_of_fold.ece);
        // Training folds of 7 or 8 are under the minimum of 10: the fallback is used.
        let few: Vec<f64> = t[..9].to_vec();
        assert!(
            fold_temperatures(&few, range, 1.0, 1.7, CV_FOLDS)
                .iter()
                .all(|(_, temp)| *temp == 1.7)
        );
    }

    #[test]
    fn refit_would_move_agrees_with_the_fit() {
        let range = TemperatureRange::for_embedder(1).unwrap();
        // 12 at 0.8 with 9 right: the fit is T = ln 4 / ln 3 ≈ 1.2619.
        let t: Vec<f64> = (0..12).map(|i| signed_logit(0.8, i % 4 != 0)).collect();
        let fitted = 4f64.ln() / 3f64.ln();
        for (current, moves) in [
            (1.0, true),
            (fitted, false),
            (fitted * 1.009, false),
            (fitted / 1.009, false),
            (fitted * 1.011, true),
            (fitted / 1.011, true),
            (2.0, true),
        ] {
            assert_eq!(
                refit_would_move(&t, range, current, MATERIAL_CHANGE_FACTOR),
                moves,
                "current {current}"
            );
        }
        // All right and confident: the fit is the lower bound 0.5, so a current 0.504 stays.
        let sure: Vec<f64> = (0..20).map(|_| signed_logit(0.9, true)).collect();
        assert!(!refit_would_move(
            &sure,
            range,
            0.504,
            MATERIAL_CHANGE_FACTOR
        ));
        assert!(refit_would_move(&sure, range, 0.6, MATERIAL_CHANGE_FACTOR));
        // Too few values, or no information: nothing to refit.
        assert!(!refit_would_move(
            &t[..9],
            range,
            1.0,
            MATERIAL_CHANGE_FACTOR
        ));
        assert!(!refit_would_move(
            &[0.0; 20],
            range,
            1.0,
            MATERIAL_CHANGE_FACTOR
        ));
    }
}

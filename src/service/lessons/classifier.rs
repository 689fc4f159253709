//! The blacklist classifier: L2-regularised logistic regression over the alignment features of
//! a (lesson, proposal) pair ([`super::features`]), fitted by Newton's method, and the shipped
//! weights (`data/blacklist_model.tsv`, issue 30).
//!
//! ```text
//! z_i  = (x_i − μ_i) / σ_i                        standardised feature i (μ, σ from training)
//! P(same | x) = σ(b + Σ_i w_i · z_i)             σ(t) = 1 / (1 + e^(−t))
//! ```
//!
//! Fitting minimises the penalised negative log-likelihood
//!
//! ```text
//! L(w, b) = −Σ_n [ y_n ln p_n + (1 − y_n) ln(1 − p_n) ] + (λ / 2) · ‖w‖²
//! ```
//!
//! (the intercept `b` is not penalised) by Newton–Raphson steps, i.e. iteratively reweighted
//! least squares (Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd
//! ed., Springer 2009, §4.4.1). The problem is convex; with λ > 0 it is strictly convex and
//! the iteration converges from zero in a handful of steps.
//!
//! Two variants ship: `lexical` (no model loaded) and `model` (with the cosine of sentence
//! embeddings). Each holds its feature names, standardisation, weights, intercept, decision
//! threshold on P and the λ it was fitted with. `examples/train_blacklist.rs` writes them.

use std::fmt::Write as _;
use std::sync::LazyLock;

use super::features::{LEXICAL_FEATURES, MODEL_FEATURES};

/// A fitted logistic regression with its standardisation and decision threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct LogisticModel {
    /// Feature names, in vector order.
    pub features: Vec<String>,
    /// Mean μ of each feature on the training rows.
    pub mean: Vec<f64>,
    /// Standard deviation σ of each feature on the training rows (1 where it was 0).
    pub scale: Vec<f64>,
    /// Weight of each standardised feature.
    pub weights: Vec<f64>,
    /// Intercept b.
    pub bias: f64,
    /// P(same) at or above which a proposal repeats the lesson, in (0, 1).
    pub threshold: f64,
    /// The L2 penalty λ the weights were fitted with.
    pub l2: f64,
}

/// Newton iterations at most; convergence takes well under 20 on the development set.
const MAX_ITERATIONS: usize = 100;
/// Stop when no coefficient moves more than this.
const STEP_TOLERANCE: f64 = 1e-10;

/// The logistic function σ(t) = 1 / (1 + e^(−t)), computed without overflow.
pub fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

impl LogisticModel {
    /// Fits the model on `rows` (each of `features.len()` values) with labels `labels`
    /// (true = the proposal repeats the lesson), L2 penalty `l2` ≥ 0 on the standardised
    /// weights; the threshold is set to 0.5 (callers choose another with
    /// [`LogisticModel::threshold`]).
    ///
    /// Standardisation: μ and σ (population) per feature over `rows`; a constant feature gets
    /// σ = 1 and, having z = 0 everywhere, weight 0. With `l2` = 0 and separable data the
    /// weights grow until the iteration limit (100 steps); use λ > 0.
    ///
    /// # Panics
    /// When a row's length differs from `features.len()`, or `rows` and `labels` differ in
    /// length.
    pub fn fit(features: &[&str], rows: &[Vec<f64>], labels: &[bool], l2: f64) -> LogisticModel {
        let d = features.len();
        assert_eq!(rows.len(), labels.len(), "one label a row");
        assert!(rows.iter().all(|r| r.len() == d), "rows of {d} features");
        let n = rows.len().max(1) as f64;
        let mut mean = vec![0.0; d];
        for r in rows {
            for (m, x) in mean.iter_mut().zip(r) {
                *m += x / n;
            }
        }
        let mut scale = vec![0.0; d];
        for r in rows {
            for ((s, x), m) in scale.iter_mut().zip(r).zip(&mean) {
                *s += (x - m) * (x - m) / n;
            }
        }
        for s in &mut scale {
            *s = if *s > 1e-12 { s.sqrt() } else { 1.0 };
        }
        // Design matrix with the intercept last.
        let z: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| {
                let mut v: Vec<f64> = r
                    .iter()
                    .zip(&mean)
                    .zip(&scale)
                    .map(|((x, m), s)| (x - m) / s)
                    .collect();
                v.push(1.0);
                v
            })
            .collect();
        let k = d + 1;
        let mut beta = vec![0.0; k];
        for _ in 0..MAX_ITERATIONS {
            let mut grad = vec![0.0; k];
            let mut hess = vec![vec![0.0; k]; k];
            for (row, &y) in z.iter().zip(labels) {
                let t: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
                let p = sigmoid(t);
                let r = p - if y { 1.0 } else { 0.0 };
                let w = p * (1.0 - p);
                for (i, (g, h)) in grad.iter_mut().zip(&mut hess).enumerate() {
                    *g += r * row[i];
                    for (hij, zj) in h.iter_mut().zip(row) {
                        *hij += w * row[i] * zj;
                    }
                }
            }
            for i in 0..d {
                grad[i] += l2 * beta[i];
                hess[i][i] += l2;
            }
            // A tiny ridge keeps the system solvable when a feature is constant.
            for (i, row) in hess.iter_mut().enumerate() {
                row[i] += 1e-9;
            }
            let step = solve(hess, grad);
            let mut largest = 0.0f64;
            for (b, s) in beta.iter_mut().zip(&step) {
                *b -= s;
                largest = largest.max(s.abs());
            }
            if largest < STEP_TOLERANCE {
                break;
            }
        }
        let bias = beta.pop().unwrap_or(0.0);
        LogisticModel {
            features: features.iter().map(|s| (*s).to_owned()).collect(),
            mean,
            scale,
            weights: beta,
            bias,
            threshold: 0.5,
            l2,
        }
    }

    /// [`LogisticModel::fit`] with each weight kept on the side `signs` gives it (+1: ≥ 0,
    /// −1: ≤ 0, 0: free), by backward elimination: fit, and while some weight is on the wrong
    /// side, drop the feature with the largest such weight (its weight becomes 0) and fit the
    /// others again. Every dropped feature keeps its μ and σ, so the model reads the same
    /// vectors.
    ///
    /// # Panics
    /// As [`LogisticModel::fit`], or when `signs` is not one a feature.
    pub fn fit_signed(
        features: &[&str],
        rows: &[Vec<f64>],
        labels: &[bool],
        l2: f64,
        signs: &[f64],
    ) -> LogisticModel {
        assert_eq!(signs.len(), features.len(), "one sign a feature");
        let mut kept: Vec<usize> = (0..features.len()).collect();
        let full = LogisticModel::fit(features, rows, labels, l2);
        loop {
            let names: Vec<&str> = kept.iter().map(|&i| features[i]).collect();
            let sub: Vec<Vec<f64>> = rows
                .iter()
                .map(|r| kept.iter().map(|&i| r[i]).collect())
                .collect();
            let m = LogisticModel::fit(&names, &sub, labels, l2);
            let worst = kept
                .iter()
                .zip(&m.weights)
                .map(|(&i, w)| (i, -w * signs[i]))
                .filter(|(_, v)| *v > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match worst {
                Some((i, _)) => kept.retain(|&k| k != i),
                None => {
                    let mut weights = vec![0.0; features.len()];
                    for (&i, w) in kept.iter().zip(&m.weights) {
                        weights[i] = *w;
                    }
                    return LogisticModel {
                        weights,
                        bias: m.bias,
                        ..full
                    };
                }
            }
        }
    }

    /// The same model with decision threshold `threshold`.
    pub fn threshold(mut self, threshold: f64) -> LogisticModel {
        self.threshold = threshold;
        self
    }

    /// Contribution `w_i · z_i` of each feature to the log-odds of `x`.
    pub fn contributions(&self, x: &[f64]) -> Vec<f64> {
        x.iter()
            .zip(&self.mean)
            .zip(&self.scale)
            .zip(&self.weights)
            .map(|(((x, m), s), w)| w * (x - m) / s)
            .collect()
    }

    /// P(same | x) in [0, 1]. `x` must have one value per feature (extra values are ignored,
    /// missing ones count as the training mean).
    pub fn probability(&self, x: &[f64]) -> f64 {
        sigmoid(self.bias + self.contributions(x).iter().sum::<f64>())
    }

    /// Whether `x` is classified as the same approach: P ≥ [`LogisticModel::threshold`].
    pub fn same(&self, x: &[f64]) -> bool {
        self.probability(x) >= self.threshold
    }

    /// The model as lines of tab-separated fields, the format of `data/blacklist_model.tsv`
    /// (one block per variant; see [`parse_models`]).
    pub fn to_tsv(&self, variant: &str) -> String {
        let mut out = String::new();
        let row = |out: &mut String, key: &str, values: &[String]| {
            let _ = writeln!(out, "{variant}\t{key}\t{}", values.join("\t"));
        };
        let nums = |v: &[f64]| v.iter().map(|x| format!("{x:e}")).collect::<Vec<_>>();
        row(&mut out, "features", &self.features);
        row(&mut out, "mean", &nums(&self.mean));
        row(&mut out, "scale", &nums(&self.scale));
        row(&mut out, "weights", &nums(&self.weights));
        row(&mut out, "bias", &nums(&[self.bias]));
        row(&mut out, "threshold", &nums(&[self.threshold]));
        row(&mut out, "l2", &nums(&[self.l2]));
        out
    }
}

/// k-fold cross-validation by group: fold `f` holds the rows whose group (a task) is `f` mod
/// `folds`, and its model is fitted on every other row with penalty `l2` and the weight signs
/// `signs` ([`LogisticModel::fit_signed`]). Returns one model per
/// fold, in fold order; score each held-out row with the model of its fold, so that no task
/// serves both to fit and to measure.
///
/// # Panics
/// As [`LogisticModel::fit`], or when `groups` and `rows` differ in length or `folds` is 0.
pub fn cross_validated(
    features: &[&str],
    rows: &[Vec<f64>],
    labels: &[bool],
    groups: &[usize],
    folds: usize,
    l2: f64,
    signs: &[f64],
) -> Vec<LogisticModel> {
    assert!(folds > 0, "at least one fold");
    assert_eq!(rows.len(), groups.len(), "one group a row");
    (0..folds)
        .map(|f| {
            let train: Vec<usize> = (0..rows.len())
                .filter(|&i| groups[i] % folds != f)
                .collect();
            let x: Vec<Vec<f64>> = train.iter().map(|&i| rows[i].clone()).collect();
            let y: Vec<bool> = train.iter().map(|&i| labels[i]).collect();
            LogisticModel::fit_signed(features, &x, &y, l2, signs)
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Solves `a · x = b` for a symmetric positive definite `a` by Cholesky decomposition
/// (`a = L·Lᵀ`), then forward and back substitution.
fn solve(mut a: Vec<Vec<f64>>, b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for j in 0..n {
        let d = a[j][j] - a[j][..j].iter().map(|x| x * x).sum::<f64>();
        let d = d.max(1e-300).sqrt();
        a[j][j] = d;
        for i in j + 1..n {
            let s = a[i][j] - dot(&a[i][..j], &a[j][..j]);
            a[i][j] = s / d;
        }
    }
    let mut y = b;
    for i in 0..n {
        y[i] = (y[i] - dot(&a[i][..i], &y[..i])) / a[i][i];
    }
    for i in (0..n).rev() {
        for k in i + 1..n {
            y[i] -= a[k][i] * y[k];
        }
        y[i] /= a[i][i];
    }
    y
}

/// A malformed model file: the line (1-based) and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("blacklist model, line {line}: {message}")]
pub struct ModelFileError {
    /// Line number, 1-based (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Parses a model file: lines `variant<TAB>key<TAB>values…`, keys `features`, `mean`,
/// `scale`, `weights` (one value per feature), `bias`, `threshold`, `l2` (one value); `#`
/// starts a comment line. Returns the variants in order of first appearance.
///
/// # Errors
/// [`ModelFileError`] for an unknown key, a number that does not parse, a missing key, or
/// vectors whose length is not the number of features.
pub fn parse_models(text: &str) -> Result<Vec<(String, LogisticModel)>, ModelFileError> {
    let mut out: Vec<(String, LogisticModel)> = Vec::new();
    let mut seen: Vec<(String, Vec<&str>)> = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line_no = no + 1;
        let err = |message: String| ModelFileError {
            line: line_no,
            message,
        };
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split('\t');
        let (Some(variant), Some(key)) = (fields.next(), fields.next()) else {
            return Err(err("expected variant, key and values".into()));
        };
        let values: Vec<&str> = fields.collect();
        let i = match out.iter().position(|(v, _)| v == variant) {
            Some(i) => i,
            None => {
                out.push((
                    variant.to_owned(),
                    LogisticModel {
                        features: Vec::new(),
                        mean: Vec::new(),
                        scale: Vec::new(),
                        weights: Vec::new(),
                        bias: f64::NAN,
                        threshold: f64::NAN,
                        l2: f64::NAN,
                    },
                ));
                seen.push((variant.to_owned(), Vec::new()));
                out.len() - 1
            }
        };
        let nums = || -> Result<Vec<f64>, ModelFileError> {
            values
                .iter()
                .map(|v| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| err(format!("{key}: {v:?} is not a finite number")))
                })
                .collect()
        };
        let one = || -> Result<f64, ModelFileError> {
            match nums()?.as_slice() {
                [x] => Ok(*x),
                _ => Err(err(format!("{key}: expected one value"))),
            }
        };
        let m = &mut out[i].1;
        match key {
            "features" => m.features = values.iter().map(|s| (*s).to_owned()).collect(),
            "mean" => m.mean = nums()?,
            "scale" => m.scale = nums()?,
            "weights" => m.weights = nums()?,
            "bias" => m.bias = one()?,
            "threshold" => m.threshold = one()?,
            "l2" => m.l2 = one()?,
            other => return Err(err(format!("unknown key {other:?}"))),
        }
        seen[i].1.push(key);
    }
    for ((variant, m), (_, keys)) in out.iter().zip(&seen) {
        let whole = |message: String| ModelFileError { line: 0, message };
        for k in [
            "features",
            "mean",
            "scale",
            "weights",
            "bias",
            "threshold",
            "l2",
        ] {
            if !keys.contains(&k) {
                return Err(whole(format!("{variant}: no {k}")));
            }
        }
        let d = m.features.len();
        if m.mean.len() != d || m.scale.len() != d || m.weights.len() != d {
            return Err(whole(format!(
                "{variant}: mean, scale and weights need {d} values each"
            )));
        }
        if m.scale.iter().any(|s| *s <= 0.0) || !(0.0..1.0).contains(&m.threshold) {
            return Err(whole(format!(
                "{variant}: scales must be positive and the threshold in [0, 1)"
            )));
        }
    }
    Ok(out)
}

/// The shipped weights, compiled in.
const MODEL_FILE: &str = include_str!("../../../data/blacklist_model.tsv");

/// The shipped classifiers: (lexical only, with the model's cosine).
struct Shipped {
    lexical: LogisticModel,
    model: LogisticModel,
}

static SHIPPED: LazyLock<Shipped> = LazyLock::new(|| {
    // The file is part of the build and checked by a unit test; a malformed one is a build
    // defect, not an input error.
    let models = parse_models(MODEL_FILE).expect("data/blacklist_model.tsv parses");
    let take = |name: &str, features: &[&str]| {
        let m = models
            .iter()
            .find(|(v, _)| v == name)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("data/blacklist_model.tsv has no {name} variant"));
        assert_eq!(m.features, features, "{name} variant's features");
        m
    };
    Shipped {
        lexical: take("lexical", LEXICAL_FEATURES),
        model: take("model", MODEL_FEATURES),
    }
});

/// The shipped classifier without a model ([`LEXICAL_FEATURES`]).
pub fn lexical_model() -> &'static LogisticModel {
    &SHIPPED.lexical
}

/// The shipped classifier with the model's cosine ([`MODEL_FEATURES`]).
pub fn embedding_model() -> &'static LogisticModel {
    &SHIPPED.model
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-9;

    #[test]
    fn sigmoid_reference_values() {
        assert_eq!(sigmoid(0.0), 0.5);
        assert!((sigmoid(3f64.ln()) - 0.75).abs() < TOL);
        assert!((sigmoid(-3f64.ln()) - 0.25).abs() < TOL);
        assert!(sigmoid(-800.0) >= 0.0 && sigmoid(800.0) <= 1.0);
    }

    #[test]
    fn unpenalised_fit_matches_the_closed_form() {
        // One binary feature: at x = 0, 3 of 4 rows are positive; at x = 1, 1 of 4. The
        // maximum-likelihood logistic fit reproduces the group frequencies exactly:
        // P(x=0) = 3/4, P(x=1) = 1/4, i.e. b + w·z(0) = ln 3 and b + w·z(1) = −ln 3.
        let rows: Vec<Vec<f64>> = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
            .iter()
            .map(|x| vec![*x])
            .collect();
        let labels = [true, true, true, false, true, false, false, false];
        let m = LogisticModel::fit(&["x"], &rows, &labels, 0.0);
        assert!((m.probability(&[0.0]) - 0.75).abs() < TOL, "{m:?}");
        assert!((m.probability(&[1.0]) - 0.25).abs() < TOL, "{m:?}");
        // Standardisation: μ = 0.5, σ = 0.5, so z = ±1 and w = −ln 3, b = 0.
        assert!((m.mean[0] - 0.5).abs() < TOL && (m.scale[0] - 0.5).abs() < TOL);
        assert!((m.weights[0] + 3f64.ln()).abs() < TOL, "{m:?}");
        assert!(m.bias.abs() < TOL, "{m:?}");
    }

    #[test]
    fn penalty_shrinks_the_weight_to_its_stationary_point() {
        // Same data, λ = 2: the gradient of the penalised loss vanishes at the fitted weights.
        let rows: Vec<Vec<f64>> = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
            .iter()
            .map(|x| vec![*x])
            .collect();
        let labels = [true, true, true, false, true, false, false, false];
        let m = LogisticModel::fit(&["x"], &rows, &labels, 2.0);
        assert!(m.weights[0] > -3f64.ln() && m.weights[0] < 0.0, "{m:?}");
        let (mut gw, mut gb) = (2.0 * m.weights[0], 0.0);
        for (r, &y) in rows.iter().zip(&labels) {
            let z = (r[0] - m.mean[0]) / m.scale[0];
            let e = m.probability(r) - if y { 1.0 } else { 0.0 };
            gw += e * z;
            gb += e;
        }
        assert!(gw.abs() < 1e-8 && gb.abs() < 1e-8, "{gw} {gb}");
    }

    #[test]
    fn signed_fit_drops_a_feature_on_the_wrong_side() {
        // `x` predicts the label negatively; asked to be ≥ 0, it is dropped and the model
        // falls back to the intercept (3 of 8 positive: P = 3/8 everywhere).
        let rows: Vec<Vec<f64>> = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
            .iter()
            .map(|x| vec![*x])
            .collect();
        let labels = [true, true, false, false, true, false, false, false];
        let free = LogisticModel::fit_signed(&["x"], &rows, &labels, 0.0, &[0.0]);
        assert!(free.weights[0] < 0.0);
        let m = LogisticModel::fit_signed(&["x"], &rows, &labels, 0.0, &[1.0]);
        assert_eq!(m.weights[0], 0.0);
        assert!((m.probability(&[0.0]) - 3.0 / 8.0).abs() < TOL, "{m:?}");
        assert!((m.probability(&[1.0]) - 3.0 / 8.0).abs() < TOL, "{m:?}");
        // On its side already: the same as the free fit.
        let m = LogisticModel::fit_signed(&["x"], &rows, &labels, 0.0, &[-1.0]);
        assert!((m.weights[0] - free.weights[0]).abs() < TOL);
    }

    #[test]
    fn a_constant_feature_gets_no_weight() {
        let rows = vec![
            vec![1.0, 0.0],
            vec![1.0, 1.0],
            vec![1.0, 0.0],
            vec![1.0, 1.0],
        ];
        let labels = [true, false, false, true];
        let m = LogisticModel::fit(&["c", "x"], &rows, &labels, 1.0);
        assert_eq!(m.scale[0], 1.0);
        assert!(m.weights[0].abs() < 1e-6, "{m:?}");
        assert!((m.probability(&[1.0, 0.0]) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn tsv_round_trips_and_rejects_bad_files() {
        let rows = vec![
            vec![0.1, 2.0],
            vec![0.9, 1.0],
            vec![0.4, 3.0],
            vec![0.8, 0.5],
        ];
        let m = LogisticModel::fit(&["a", "b"], &rows, &[false, true, false, true], 0.5)
            .threshold(0.42);
        let text = format!("# a comment\n{}", m.to_tsv("lexical"));
        let parsed = parse_models(&text).expect("parses");
        assert_eq!(parsed, vec![("lexical".to_owned(), m)]);
        let bad = [
            "lexical\tweights\tx\n",
            "lexical\tcolour\t1\n",
            "lexical\tfeatures\ta\tb\nlexical\tmean\t0\n",
        ];
        for b in bad {
            assert!(parse_models(b).is_err(), "{b:?}");
        }
    }

    #[test]
    fn shipped_models_load_with_the_features_of_the_code() {
        assert_eq!(lexical_model().features, LEXICAL_FEATURES);
        assert_eq!(embedding_model().features, MODEL_FEATURES);
        for m in [lexical_model(), embedding_model()] {
            assert!(m.threshold > 0.0 && m.threshold < 1.0);
            assert!(m.weights.iter().all(|w| w.is_finite()));
        }
    }
}

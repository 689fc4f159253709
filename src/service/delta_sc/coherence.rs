//! Coherence ΔC (connectivity, cluster fit, consistency) and the Johari quadrants.
//!
//! Per embedder, with `d` the embedder's distance and `s = 1 − d` its similarity in [0, 1]:
//!
//! ```text
//! ΔC = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency
//! ```
//!
//! (SPEC §4 utl and issue 5; weights from the reference design.)

use thiserror::Error;

/// Similarity above which a neighbour counts as connected (THRESHOLDS.md `theta_edge` default).
pub const THETA_EDGE: f64 = 0.7;
/// Weight of Connectivity in ΔC.
pub const W_CONNECTIVITY: f64 = 0.4;
/// Weight of ClusterFit in ΔC.
pub const W_CLUSTER_FIT: f64 = 0.4;
/// Weight of Consistency in ΔC.
pub const W_CONSISTENCY: f64 = 0.2;
/// Default Johari threshold.
pub const JOHARI_DEFAULT: f64 = 0.5;
/// Johari thresholds are clamped into this range (THRESHOLDS.md `theta_johari`).
pub const JOHARI_RANGE: (f64, f64) = (0.35, 0.65);

/// Share of neighbours whose similarity exceeds θ_edge, in [0, 1].
///
/// ```text
/// Connectivity = |{n ∈ N : 1 − d(x, n) > θ_edge}| / |N|       |N| ≤ 10
/// ```
///
/// No neighbours → 0 (an isolated vertex is not connected). NaN distances count as unconnected.
pub fn connectivity(neighbour_distances: &[f64]) -> f64 {
    if neighbour_distances.is_empty() {
        return 0.0;
    }
    let connected = neighbour_distances
        .iter()
        .filter(|d| 1.0 - **d > THETA_EDGE)
        .count();
    connected as f64 / neighbour_distances.len() as f64
}

/// Silhouette of the new vector between its neighbour cluster A and the next-nearest stored
/// vertices B, and ClusterFit = (s + 1)/2 in [0, 1].
///
/// ```text
/// a = mean_{n∈A} d(x, n)        b = mean_{m∈B} d(x, m)
/// s = (b − a) / max(a, b)       (s = 0 when a = b = 0)
/// ClusterFit = (s + 1) / 2
/// ```
///
/// Source: Rousseeuw, "Silhouettes: a graphical aid to the interpretation and validation of
/// cluster analysis", J. Comput. Appl. Math. 20, 1987. A or B empty (no cluster to fit) →
/// ClusterFit 0.5 and silhouette `None`.
pub fn cluster_fit(cluster: &[f64], next_nearest: &[f64]) -> (f64, Option<Silhouette>) {
    if cluster.is_empty() || next_nearest.is_empty() {
        return (0.5, None);
    }
    let a = cluster.iter().sum::<f64>() / cluster.len() as f64;
    let b = next_nearest.iter().sum::<f64>() / next_nearest.len() as f64;
    let m = a.max(b);
    let s = if m > 0.0 {
        ((b - a) / m).clamp(-1.0, 1.0)
    } else {
        0.0
    };
    let s = if s.is_nan() { 0.0 } else { s };
    ((s + 1.0) / 2.0, Some(Silhouette { a, b, s }))
}

/// The silhouette's parts (for diagnostics).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Silhouette {
    /// Mean distance to the own (neighbour) cluster.
    pub a: f64,
    /// Mean distance to the next-nearest vertices.
    pub b: f64,
    /// `(b − a)/max(a, b)` in [−1, 1].
    pub s: f64,
}

/// Agreement with the vertex's own previous versions (the request's old fingerprint included):
/// mean similarity, in [0, 1].
///
/// ```text
/// Consistency = mean_{v∈V} (1 − d(x, v))
/// ```
///
/// No versions → 1 (nothing to disagree with; never reached by the compute path, where the old
/// fingerprint is always a version).
pub fn consistency(version_distances: &[f64]) -> f64 {
    if version_distances.is_empty() {
        return 1.0;
    }
    let s: f64 = version_distances.iter().map(|d| 1.0 - d).sum();
    (s / version_distances.len() as f64).clamp(0.0, 1.0)
}

/// The ΔC formula as text, from the constants that define it:
/// `0.4·connectivity(θ_edge=0.7) + 0.4·silhouette_fit + 0.2·version_consistency`.
pub fn delta_c_formula() -> String {
    format!(
        "{W_CONNECTIVITY}·connectivity(θ_edge={THETA_EDGE}) + {W_CLUSTER_FIT}·silhouette_fit + \
         {W_CONSISTENCY}·version_consistency"
    )
}

/// The three components and their weighted sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoherenceParts {
    /// Share of connected neighbours, [0, 1].
    pub connectivity: f64,
    /// (silhouette + 1)/2, [0, 1].
    pub cluster_fit: f64,
    /// Mean similarity to own versions, [0, 1].
    pub consistency: f64,
    /// The silhouette, when both clusters exist.
    pub silhouette: Option<Silhouette>,
    /// `0.4·connectivity + 0.4·cluster_fit + 0.2·consistency`, [0, 1].
    pub delta_c: f64,
}

/// ΔC of one embedder from the distances of the new vector to the neighbours (≤ 10, the cluster),
/// the next-nearest stored vertices and the vertex's own versions (see the module formula).
pub fn coherence(neighbours: &[f64], next_nearest: &[f64], versions: &[f64]) -> CoherenceParts {
    let connectivity = connectivity(neighbours);
    let (cluster_fit, silhouette) = cluster_fit(neighbours, next_nearest);
    let consistency = consistency(versions);
    let delta_c =
        (W_CONNECTIVITY * connectivity + W_CLUSTER_FIT * cluster_fit + W_CONSISTENCY * consistency)
            .clamp(0.0, 1.0);
    CoherenceParts {
        connectivity,
        cluster_fit,
        consistency,
        silhouette,
        delta_c,
    }
}

/// A Johari window quadrant (Luft & Ingham 1955, as mapped by the reference UTL design). Names:
/// `open`, `hidden`, `blind`, `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "lowercase")]
pub enum JohariQuadrant {
    /// ΔS ≤ θ and ΔC > θ: known and coherent.
    Open,
    /// ΔS ≤ θ and ΔC ≤ θ: familiar but weakly connected.
    Hidden,
    /// ΔS > θ and ΔC ≤ θ: surprising and incoherent.
    Blind,
    /// ΔS > θ and ΔC > θ: surprising yet coherent.
    Unknown,
}

impl JohariQuadrant {
    /// Classify `(ΔS, ΔC)` against threshold θ (rule above; NaN compares as "not above").
    pub fn classify(delta_s: f64, delta_c: f64, theta: f64) -> Self {
        match (delta_s > theta, delta_c > theta) {
            (false, true) => JohariQuadrant::Open,
            (false, false) => JohariQuadrant::Hidden,
            (true, false) => JohariQuadrant::Blind,
            (true, true) => JohariQuadrant::Unknown,
        }
    }

    /// The suggested next tool: open → `direct_recall`, blind → `trigger_dream`,
    /// hidden → `get_neighborhood`, unknown → `epistemic_action`.
    pub fn suggested_action(self) -> &'static str {
        match self {
            JohariQuadrant::Open => "direct_recall",
            JohariQuadrant::Hidden => "get_neighborhood",
            JohariQuadrant::Blind => "trigger_dream",
            JohariQuadrant::Unknown => "epistemic_action",
        }
    }
}

/// A Johari threshold outside [0, 1].
#[derive(Debug, Clone, PartialEq, Error)]
#[error("johari_threshold: must be a number in [0, 1], got {0}")]
pub struct JohariThresholdError(pub f64);

/// Accept a requested Johari threshold in [0, 1] (default [`JOHARI_DEFAULT`] when `None`) and
/// clamp it to [`JOHARI_RANGE`] = [0.35, 0.65]; returns the value used.
///
/// # Errors
/// [`JohariThresholdError`] for NaN or a value outside [0, 1].
pub fn johari_threshold(requested: Option<f64>) -> Result<f64, JohariThresholdError> {
    let t = requested.unwrap_or(JOHARI_DEFAULT);
    if !(0.0..=1.0).contains(&t) {
        return Err(JohariThresholdError(t));
    }
    Ok(t.clamp(JOHARI_RANGE.0, JOHARI_RANGE.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formula_text_quotes_the_constants() {
        assert_eq!(
            delta_c_formula(),
            "0.4·connectivity(θ_edge=0.7) + 0.4·silhouette_fit + 0.2·version_consistency"
        );
    }

    const TOL: f64 = 1e-12;

    #[test]
    fn components_reference_values() {
        // Neighbour distances 0.1, 0.2, 0.5: similarities 0.9, 0.8, 0.5 → 2 of 3 above 0.7.
        assert!((connectivity(&[0.1, 0.2, 0.5]) - 2.0 / 3.0).abs() < TOL);
        assert_eq!(connectivity(&[]), 0.0);
        // Similarity exactly 0.7 is not above θ_edge.
        assert_eq!(connectivity(&[0.3]), 0.0);
        // a = 0.2, b = 0.8: s = 0.6/0.8 = 0.75 → fit 0.875.
        let (fit, sil) = cluster_fit(&[0.1, 0.3], &[0.8]);
        assert!((fit - 0.875).abs() < TOL);
        assert!((sil.unwrap().s - 0.75).abs() < TOL);
        // a = 0.8, b = 0.2: s = −0.75 → fit 0.125.
        assert!((cluster_fit(&[0.8], &[0.2]).0 - 0.125).abs() < TOL);
        assert_eq!(cluster_fit(&[0.0], &[0.0]).0, 0.5);
        assert_eq!(cluster_fit(&[], &[0.4]), (0.5, None));
        assert!((consistency(&[0.2, 0.4]) - 0.7).abs() < TOL);
        // ΔC = 0.4·(2/3) + 0.4·0.875 + 0.2·0.7 = 0.266667 + 0.35 + 0.14 = 0.756667.
        let p = coherence(&[0.1, 0.2, 0.5], &[0.9], &[0.2, 0.4]);
        let a = (0.1 + 0.2 + 0.5) / 3.0;
        let fit = ((0.9 - a) / 0.9 + 1.0) / 2.0;
        let want = 0.4 * (2.0 / 3.0) + 0.4 * fit + 0.2 * 0.7;
        assert!((p.delta_c - want).abs() < TOL);
    }

    #[test]
    fn quadrants_follow_the_issue_rule() {
        let table = [
            (0.2, 0.8, JohariQuadrant::Open, "open", "direct_recall"),
            (
                0.2,
                0.3,
                JohariQuadrant::Hidden,
                "hidden",
                "get_neighborhood",
            ),
            (0.8, 0.3, JohariQuadrant::Blind, "blind", "trigger_dream"),
            (
                0.8,
                0.8,
                JohariQuadrant::Unknown,
                "unknown",
                "epistemic_action",
            ),
            (
                0.5,
                0.5,
                JohariQuadrant::Hidden,
                "hidden",
                "get_neighborhood",
            ), // ties are "≤ θ"
        ];
        for (s, c, q, name, action) in table {
            let got = JohariQuadrant::classify(s, c, 0.5);
            assert_eq!((got, got.into(), got.suggested_action()), (q, name, action));
        }
    }

    #[test]
    fn johari_threshold_accepts_unit_interval_and_clamps() {
        let table = [
            (None, Ok(0.5)),
            (Some(0.0), Ok(0.35)),
            (Some(0.4), Ok(0.4)),
            (Some(1.0), Ok(0.65)),
            (Some(1.5), Err(JohariThresholdError(1.5))),
            (Some(-0.1), Err(JohariThresholdError(-0.1))),
        ];
        for (req, want) in table {
            assert_eq!(johari_threshold(req), want);
        }
        assert!(johari_threshold(Some(f64::NAN)).is_err());
    }
}

//! Per-embedder distances in [0, 1]: cosine (E5 asymmetric), weighted Jaccard, MaxSim, Hamming.
//!
//! Every embedder `e` has a native similarity `s_e` and a distance `d_e ∈ [0, 1]` built from it
//! by one rule, so that 0 means "identical" and 1 means "unrelated or opposed" for every embedder:
//!
//! ```text
//! d_e = clamp(1 − s_e, 0, 1)                       all embedders but E5
//! d_5 = clamp(1.2 · (1 − s_5), 0, 1)               E5, cause→effect factor 1.2
//! ```
//!
//! | embedder | similarity `s_e` | unrelated vectors |
//! |---|---|---|
//! | dense (E1–E5, E7, E8, E10, E11) | cosine | cos ≈ 0 → d ≈ 1 |
//! | E6, E13 sparse | weighted Jaccard over all 30,522 terms | disjoint → d = 1 |
//! | E12 tokens | symmetric MaxSim (mean best-token cosine) | ≈ 0.25 for 128-d noise → d ≈ 0.75 |
//! | E9 HDC | bipolar cosine of the sign bits, `1 − 2h` | h ≈ 0.5 → d ≈ 1 |
//!
//! Identical vectors get distance exactly 0 (checked before any floating-point work). Inputs are
//! assumed valid ([`Fingerprint::validate`]); a zero-norm vector, which validation rejects where it
//! matters, is treated as orthogonal to everything (cosine 0), never NaN.

use super::fingerprint::{
    EmbedderId, EmbedderKind, EmbedderRef, Fingerprint, NUM_EMBEDDERS, SparseVector, TOKEN_DIM,
};

/// The cause→effect direction modifier of E5 (reference constitution ARCH-15: cause→effect 1.2,
/// effect→cause 0.8). An update is read as cause (context) → effect (new version).
pub const CAUSE_TO_EFFECT_FACTOR: f64 = 1.2;

/// Which distance an embedder uses; [`DistanceMethod::name`] is what `methods_used` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
pub enum DistanceMethod {
    /// `clamp(1 − cos, 0, 1)`; named `cosine_knn`.
    #[strum(serialize = "cosine_knn")]
    Cosine,
    /// `clamp(1.2·(1 − cos), 0, 1)`; named `asymmetric_cosine_knn`.
    #[strum(serialize = "asymmetric_cosine_knn")]
    AsymmetricCosine,
    /// `1 − Σ min / Σ max` over the full vocabulary; named `weighted_jaccard_knn`.
    #[strum(serialize = "weighted_jaccard_knn")]
    WeightedJaccard,
    /// `clamp(1 − ½(MaxSim(a→b)/|a| + MaxSim(b→a)/|b|), 0, 1)`; named `maxsim_knn`.
    #[strum(serialize = "maxsim_knn")]
    MaxSim,
    /// `min(1, 2·h)`, `h` the normalised Hamming distance of the sign bits; named `hamming_knn`.
    #[strum(serialize = "hamming_knn")]
    Hamming,
}

impl DistanceMethod {
    /// The method of embedder `e`.
    pub fn of(e: EmbedderId) -> Self {
        match e {
            EmbedderId::Causal => DistanceMethod::AsymmetricCosine,
            EmbedderId::Hdc => DistanceMethod::Hamming,
            EmbedderId::LateInteraction => DistanceMethod::MaxSim,
            EmbedderId::SparseLexical | EmbedderId::Splade => DistanceMethod::WeightedJaccard,
            _ => DistanceMethod::Cosine,
        }
    }

    /// Stable snake_case name, e.g. `cosine_knn`.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Dot product of two equal-length f32 slices with eight independent accumulators (so the
/// compiler vectorises it; the summation order is fixed, so the result is deterministic).
/// Extra elements of the longer slice are ignored.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// Σ vᵢ² in f64 with eight independent accumulators (vectorisable, fixed order, no overflow
/// for any finite f32).
fn sum_squares(v: &[f32]) -> f64 {
    let mut acc = [0.0f64; 8];
    let chunks = v.chunks_exact(8);
    let tail: f64 = chunks
        .remainder()
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum();
    for c in chunks {
        for i in 0..8 {
            acc[i] += f64::from(c[i]) * f64::from(c[i]);
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// [`dot`] for two E12 tokens; the fixed length lets the compiler unroll it completely.
#[inline(always)]
fn dot_token(a: &[f32; TOKEN_DIM], b: &[f32; TOKEN_DIM]) -> f32 {
    let mut acc = [0.0f32; 8];
    for (x, y) in a.as_chunks::<8>().0.iter().zip(b.as_chunks::<8>().0) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// `v / ‖v‖₂` with the norm computed in f64 (no overflow for any finite f32). A zero vector
/// stays zero.
pub fn unit_vector(v: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(v.len());
    extend_unit(&mut out, v);
    out
}

/// Append `v / ‖v‖₂` to `out` (zeros for a zero vector).
fn extend_unit(out: &mut Vec<f32>, v: &[f32]) {
    let norm = sum_squares(v).sqrt();
    if norm == 0.0 {
        out.extend(std::iter::repeat_n(0.0, v.len()));
        return;
    }
    let inv = 1.0 / norm;
    out.extend(v.iter().map(|x| (f64::from(*x) * inv) as f32));
}

/// Cosine similarity of two vectors, in [−1, 1]; 0 when either has zero norm.
///
/// ```text
/// cos(a, b) = a·b / (‖a‖ ‖b‖)
/// ```
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    let (ua, ub) = (unit_vector(a), unit_vector(b));
    f64::from(dot(&ua, &ub)).clamp(-1.0, 1.0)
}

/// Map a similarity to a distance in [0, 1]: `clamp(1 − s, 0, 1)`.
/// NaN maps to 1 (treated as unrelated).
pub fn distance_from_similarity(s: f64) -> f64 {
    if s.is_nan() {
        return 1.0;
    }
    (1.0 - s).clamp(0.0, 1.0)
}

/// E5 distance with the asymmetric cause→effect factor.
///
/// ```text
/// d_5 = clamp(1.2 · (1 − cos), 0, 1)
/// ```
///
/// Source: the reference design's asymmetric k-NN entropy for E5 ("ΔS = d_k × direction_mod,
/// clamped to [0, 1]", direction_mod = 1.2 for cause→effect). Reaches 1 at cos ≤ 1/6.
pub fn causal_distance(cos: f64) -> f64 {
    if cos.is_nan() {
        return 1.0;
    }
    (CAUSE_TO_EFFECT_FACTOR * (1.0 - cos)).clamp(0.0, 1.0)
}

/// Weighted Jaccard (Ruzicka) similarity of two sparse non-negative vectors over the full
/// vocabulary (no truncation), in [0, 1].
///
/// ```text
/// J_w(x, y) = Σ_i min(x_i, y_i) / Σ_i max(x_i, y_i)      i over indices of x ∪ y
/// ```
///
/// Both empty (or all weights zero) → 1 (identical "no term" vectors). Source: Ioffe,
/// "Improved Consistent Sampling, Weighted Minhash and L1 Sketching", ICDM 2010 (weighted
/// Jaccard); Ružička 1958. Linear merge of the two sorted index lists, O(|x| + |y|).
pub fn weighted_jaccard_similarity(x: &SparseVector, y: &SparseVector) -> f64 {
    let (mut i, mut j) = (0, 0);
    let (mut num, mut den) = (0.0f64, 0.0f64);
    while i < x.indices.len() || j < y.indices.len() {
        let xi = x.indices.get(i).copied().unwrap_or(u16::MAX);
        let yj = y.indices.get(j).copied().unwrap_or(u16::MAX);
        let (a, b) = if i < x.indices.len() && (j >= y.indices.len() || xi < yj) {
            i += 1;
            (f64::from(x.values[i - 1]), 0.0)
        } else if j < y.indices.len() && (i >= x.indices.len() || yj < xi) {
            j += 1;
            (0.0, f64::from(y.values[j - 1]))
        } else {
            i += 1;
            j += 1;
            (f64::from(x.values[i - 1]), f64::from(y.values[j - 1]))
        };
        num += a.min(b);
        den += a.max(b);
    }
    if den == 0.0 { 1.0 } else { num / den }
}

/// Symmetric late-interaction similarity of two token sets of unit vectors (flattened,
/// `TOKEN_DIM` floats per token), in [−1, 1].
///
/// ```text
/// P = (1/|a|) Σ_{i∈a} max_{j∈b} cos(a_i, b_j)      ColBERT MaxSim, normalised by |a|
/// R = (1/|b|) Σ_{j∈b} max_{i∈a} cos(a_i, b_j)
/// s = (P + R) / 2
/// ```
///
/// Source: Khattab & Zaharia, "ColBERT: Efficient and Effective Passage Search via
/// Contextualized Late Interaction over BERT", SIGIR 2020 (MaxSim); both directions averaged as
/// in BERTScore's greedy precision/recall (Zhang et al., ICLR 2020), so that dropped tokens count
/// as well as added ones. One |a|×|b| matrix of dot products serves both directions.
/// Either side empty → 0.
///
/// On x86-64 CPUs with AVX the same code runs compiled for 256-bit registers (one register holds
/// the eight accumulators of a token dot product: about four times fewer instructions than with
/// SSE2). The operations and their order are the same, so the result is bit-identical on every
/// CPU (no fused multiply-add is enabled).
pub fn maxsim_similarity(a_units: &[f32], b_units: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: `maxsim_avx` only requires the AVX instructions, detected on this CPU just
        // above.
        return unsafe { maxsim_avx(a_units, b_units) };
    }
    maxsim_portable(a_units, b_units)
}

/// [`dot_token`] with the eight accumulators in one 256-bit AVX register: lane `i` is `acc[i]`,
/// and the lanes are summed in [`dot`]'s order, so the result is bit-identical.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn dot_token_avx(a: &[f32; TOKEN_DIM], b: &[f32; TOKEN_DIM]) -> f32 {
    use std::arch::x86_64::{
        _mm_add_ps, _mm_cvtss_f32, _mm_shuffle_ps, _mm256_add_ps, _mm256_castps256_ps128,
        _mm256_extractf128_ps, _mm256_mul_ps, _mm256_setr_ps, _mm256_setzero_ps,
    };
    let mut acc = _mm256_setzero_ps();
    for (x, y) in a.as_chunks::<8>().0.iter().zip(b.as_chunks::<8>().0) {
        let vx = _mm256_setr_ps(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]);
        let vy = _mm256_setr_ps(y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(vx, vy));
    }
    // s = (acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7])
    let s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps::<1>(acc));
    let lane1 = _mm_cvtss_f32(_mm_shuffle_ps::<1>(s, s));
    let lane2 = _mm_cvtss_f32(_mm_shuffle_ps::<2>(s, s));
    let lane3 = _mm_cvtss_f32(_mm_shuffle_ps::<3>(s, s));
    (_mm_cvtss_f32(s) + lane1) + (lane2 + lane3)
}

/// [`maxsim_similarity`] with [`dot_token_avx`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn maxsim_avx(a_units: &[f32], b_units: &[f32]) -> f64 {
    maxsim_with(a_units, b_units, |x, y| dot_token_avx(x, y))
}

/// [`maxsim_similarity`] with the portable [`dot_token`].
fn maxsim_portable(a_units: &[f32], b_units: &[f32]) -> f64 {
    maxsim_with(a_units, b_units, dot_token)
}

/// The MaxSim matrix walk, generic over the token dot product (inlined into each caller).
#[inline(always)]
fn maxsim_with(
    a_units: &[f32],
    b_units: &[f32],
    dot_token: impl Fn(&[f32; TOKEN_DIM], &[f32; TOKEN_DIM]) -> f32,
) -> f64 {
    let na = a_units.len() / TOKEN_DIM;
    let nb = b_units.len() / TOKEN_DIM;
    if na == 0 || nb == 0 {
        return 0.0;
    }
    let mut col_max = vec![f32::NEG_INFINITY; nb];
    let mut row_sum = 0.0f64;
    let (a_tokens, _) = a_units.as_chunks::<TOKEN_DIM>();
    let (b_tokens, _) = b_units.as_chunks::<TOKEN_DIM>();
    for ta in a_tokens {
        let mut row_max = f32::NEG_INFINITY;
        for (j, tb) in b_tokens.iter().enumerate() {
            let s = dot_token(ta, tb);
            row_max = row_max.max(s);
            col_max[j] = col_max[j].max(s);
        }
        row_sum += f64::from(row_max);
    }
    let col_sum: f64 = col_max.iter().map(|x| f64::from(*x)).sum();
    (0.5 * (row_sum / na as f64 + col_sum / nb as f64)).clamp(-1.0, 1.0)
}

/// Sign-binarise a hypervector: bit `i` is 1 iff `v[i] > 0` (zeros and negatives give 0),
/// packed 64 bits per word, least significant bit first.
pub fn sign_bits(v: &[f32]) -> Vec<u64> {
    v.chunks(64)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, x)| w | (u64::from(*x > 0.0) << i))
        })
        .collect()
}

/// E9 distance from packed sign bits of `n` dimensions.
///
/// ```text
/// h   = popcount(a XOR b) / n              normalised Hamming distance, in [0, 1]
/// s_9 = 1 − 2h                             bipolar (±1) cosine of the sign vectors
/// d_9 = clamp(1 − s_9, 0, 1) = min(1, 2h)
/// ```
///
/// Independent random hypervectors have h ≈ 0.5 ("quasi-orthogonal"), so d_9 ≈ 1: unrelated,
/// as for the other embedders. Source: Kanerva, "Hyperdimensional Computing", Cognitive
/// Computation 1(2), 2009. `n = 0` → 0.
pub fn hamming_distance(a: &[u64], b: &[u64], n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let differing: u32 = a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum();
    let h = f64::from(differing) / n as f64;
    (2.0 * h).min(1.0)
}

/// A fingerprint with its unit vectors and sign bits precomputed, so that each pairwise distance
/// is one pass of dot products.
#[derive(Debug, Clone)]
pub struct PreparedFingerprint<'a> {
    fp: &'a Fingerprint,
    /// Unit vectors of the cosine embedders and of E12's tokens (flattened); empty otherwise.
    units: [Vec<f32>; NUM_EMBEDDERS],
    hdc_bits: Vec<u64>,
}

impl<'a> PreparedFingerprint<'a> {
    /// Precompute unit vectors (cosine embedders and each E12 token) and E9 sign bits.
    pub fn new(fp: &'a Fingerprint) -> Self {
        let mut units: [Vec<f32>; NUM_EMBEDDERS] = Default::default();
        for e in EmbedderId::ALL {
            units[e.index()] = match fp.get(e) {
                EmbedderRef::Dense(v) if e != EmbedderId::Hdc => unit_vector(v),
                EmbedderRef::Tokens(t) => {
                    let mut flat = Vec::with_capacity(t.tokens.len() * TOKEN_DIM);
                    t.tokens.iter().for_each(|tok| extend_unit(&mut flat, tok));
                    flat
                }
                _ => Vec::new(),
            };
        }
        Self {
            fp,
            units,
            hdc_bits: sign_bits(&fp.e9_hdc),
        }
    }

    /// The underlying fingerprint.
    pub fn fingerprint(&self) -> &'a Fingerprint {
        self.fp
    }
}

/// Distance `d_e(a, b)` in [0, 1] for embedder `e` (module table). Identical vectors → exactly 0.
pub fn embedder_distance(
    e: EmbedderId,
    a: &PreparedFingerprint<'_>,
    b: &PreparedFingerprint<'_>,
) -> f64 {
    let identical = match (a.fp.get(e), b.fp.get(e)) {
        (EmbedderRef::Dense(x), EmbedderRef::Dense(y)) => x == y,
        (EmbedderRef::Sparse(x), EmbedderRef::Sparse(y)) => x == y,
        (EmbedderRef::Tokens(x), EmbedderRef::Tokens(y)) => x == y,
        _ => false,
    };
    if identical {
        return 0.0;
    }
    let (ua, ub) = (&a.units[e.index()], &b.units[e.index()]);
    match DistanceMethod::of(e) {
        DistanceMethod::Cosine => distance_from_similarity(f64::from(dot(ua, ub)).clamp(-1.0, 1.0)),
        DistanceMethod::AsymmetricCosine => {
            causal_distance(f64::from(dot(ua, ub)).clamp(-1.0, 1.0))
        }
        DistanceMethod::WeightedJaccard => match (a.fp.get(e), b.fp.get(e)) {
            (EmbedderRef::Sparse(x), EmbedderRef::Sparse(y)) => {
                distance_from_similarity(weighted_jaccard_similarity(x, y))
            }
            _ => 1.0,
        },
        DistanceMethod::MaxSim => distance_from_similarity(maxsim_similarity(ua, ub)),
        DistanceMethod::Hamming => {
            let n = match e.kind() {
                EmbedderKind::Dense { dim } => dim,
                _ => 0,
            };
            hamming_distance(&a.hdc_bits, &b.hdc_bits, n)
        }
    }
}

/// All 13 distances `d_e(a, b)`, in embedder index order.
pub fn fingerprint_distances(
    a: &PreparedFingerprint<'_>,
    b: &PreparedFingerprint<'_>,
) -> [f64; NUM_EMBEDDERS] {
    let mut out = [0.0; NUM_EMBEDDERS];
    for e in EmbedderId::ALL {
        out[e.index()] = embedder_distance(e, a, b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::delta_sc::test_support::random_fingerprint;
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    const TOL: f64 = 1e-6;

    #[test]
    fn dot_matches_naive_sum() {
        let mut rng = StdRng::seed_from_u64(7);
        for n in [0usize, 1, 7, 8, 9, 1024, 1027] {
            let a: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let naive: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            assert!((f64::from(dot(&a, &b)) - naive).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn cosine_distance_reference_values() {
        // Hand computed: a = (1, 0), b = (1, 1): cos = 1/√2, d = 1 − 0.70710678 = 0.29289322.
        let table: [(&[f32], &[f32], f64); 5] = [
            (
                &[1.0, 0.0],
                &[1.0, 1.0],
                1.0 - std::f64::consts::FRAC_1_SQRT_2,
            ),
            (&[1.0, 0.0], &[0.0, 3.0], 1.0),  // orthogonal
            (&[1.0, 0.0], &[-2.0, 0.0], 1.0), // opposite, clamped
            (&[1.0, 2.0], &[2.0, 4.0], 0.0),  // same direction
            (
                &[1e30, 0.0],
                &[1e30, 1e30],
                1.0 - std::f64::consts::FRAC_1_SQRT_2,
            ), // no overflow
        ];
        for (a, b, want) in table {
            let d = distance_from_similarity(cosine_similarity(a, b));
            assert!((d - want).abs() < TOL, "{a:?} {b:?}: {d} vs {want}");
        }
    }

    #[test]
    fn causal_distance_reference_values() {
        // 1.2·(1 − cos): cos 0.9 → 0.12; cos 0.5 → 0.6; cos 1/6 → 1.0; cos 0 → 1.2 clamped to 1.
        for (cos, want) in [
            (1.0, 0.0),
            (0.9, 0.12),
            (0.5, 0.6),
            (1.0 / 6.0, 1.0),
            (0.0, 1.0),
            (-1.0, 1.0),
        ] {
            assert!((causal_distance(cos) - want).abs() < 1e-12, "cos {cos}");
        }
        assert_eq!(causal_distance(f64::NAN), 1.0);
    }

    fn sv(indices: &[u16], values: &[f32]) -> SparseVector {
        SparseVector {
            indices: indices.to_vec(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn weighted_jaccard_reference_values() {
        // x = {1:1, 5:2}, y = {5:1, 9:3}: Σmin = min(2,1) = 1; Σmax = 1 + 2 + 3 = 6 → 1/6.
        let table = [
            (
                sv(&[1, 5], &[1.0, 2.0]),
                sv(&[5, 9], &[1.0, 3.0]),
                1.0 / 6.0,
            ),
            (sv(&[1, 5], &[1.0, 2.0]), sv(&[1, 5], &[1.0, 2.0]), 1.0),
            (sv(&[1], &[1.0]), sv(&[2], &[1.0]), 0.0),
            (sv(&[], &[]), sv(&[], &[]), 1.0),
            (sv(&[], &[]), sv(&[3], &[0.5]), 0.0),
            // Indices far above 1024 count like any other: {30000:1, 30521:1} vs {30000:1}.
            (sv(&[30000, 30521], &[1.0, 1.0]), sv(&[30000], &[1.0]), 0.5),
        ];
        for (x, y, want) in table {
            assert!((weighted_jaccard_similarity(&x, &y) - want).abs() < 1e-12);
            assert!((weighted_jaccard_similarity(&y, &x) - want).abs() < 1e-12);
        }
    }

    fn tokens_units(tokens: &[Vec<f32>]) -> Vec<f32> {
        tokens.iter().flat_map(|t| unit_vector(t)).collect()
    }

    fn basis(i: usize) -> Vec<f32> {
        let mut v = vec![0.0; TOKEN_DIM];
        v[i] = 1.0;
        v
    }

    #[test]
    fn maxsim_reference_values() {
        // a = {e0, e1}, b = {e0}: P = (1 + 0)/2 = 0.5, R = 1/1 = 1 → s = 0.75.
        let a = tokens_units(&[basis(0), basis(1)]);
        let b = tokens_units(&[basis(0)]);
        assert!((maxsim_similarity(&a, &b) - 0.75).abs() < TOL);
        assert!((maxsim_similarity(&b, &a) - 0.75).abs() < TOL);
        assert!((maxsim_similarity(&a, &a) - 1.0).abs() < TOL);
        // Disjoint orthogonal tokens → 0.
        let c = tokens_units(&[basis(2), basis(3)]);
        assert!(maxsim_similarity(&a, &c).abs() < TOL);
        assert_eq!(maxsim_similarity(&a, &[]), 0.0);
    }

    #[test]
    fn maxsim_is_bit_identical_with_and_without_avx_and_matches_a_naive_sum() {
        let mut rng = StdRng::seed_from_u64(12);
        let mut tokens = |n: usize| -> Vec<f32> {
            let t: Vec<Vec<f32>> = (0..n)
                .map(|_| {
                    (0..TOKEN_DIM)
                        .map(|_| rng.random_range(-1.0f32..1.0))
                        .collect()
                })
                .collect();
            tokens_units(&t)
        };
        for (na, nb) in [(1, 1), (3, 7), (32, 32), (17, 40)] {
            let (a, b) = (tokens(na), tokens(nb));
            let portable = maxsim_portable(&a, &b);
            // Independent reference: f64 dot products, plain loops.
            let d = |i: usize, j: usize| -> f64 {
                (0..TOKEN_DIM)
                    .map(|k| f64::from(a[i * TOKEN_DIM + k]) * f64::from(b[j * TOKEN_DIM + k]))
                    .sum()
            };
            let p: f64 = (0..na)
                .map(|i| (0..nb).map(|j| d(i, j)).fold(f64::MIN, f64::max))
                .sum::<f64>()
                / na as f64;
            let r: f64 = (0..nb)
                .map(|j| (0..na).map(|i| d(i, j)).fold(f64::MIN, f64::max))
                .sum::<f64>()
                / nb as f64;
            assert!((portable - 0.5 * (p + r)).abs() < TOL, "{na}×{nb}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                // SAFETY: AVX was detected just above.
                let avx = unsafe { maxsim_avx(&a, &b) };
                assert_eq!(avx.to_bits(), portable.to_bits(), "{na}×{nb}");
            }
        }
    }

    #[test]
    fn sign_bits_pack_least_significant_first() {
        // (1, −1, 0, 2) → bits 1, 0, 0, 1 → 0b1001; a 65th positive value opens word 2.
        assert_eq!(sign_bits(&[1.0, -1.0, 0.0, 2.0]), vec![0b1001]);
        let mut v = vec![-1.0f32; 65];
        v[64] = 0.5;
        v[63] = 0.5;
        assert_eq!(sign_bits(&v), vec![1u64 << 63, 1]);
    }

    #[test]
    fn hamming_reference_values_and_random_vectors_are_unrelated() {
        // 64 dims, 8 differing bits: h = 1/8, d = 1/4.
        let a = vec![0u64];
        let b = vec![0xFFu64];
        assert!((hamming_distance(&a, &b, 64) - 0.25).abs() < 1e-12);
        assert_eq!(hamming_distance(&a, &a, 64), 0.0);
        assert_eq!(hamming_distance(&a, &[u64::MAX], 64), 1.0);
        let mut rng = StdRng::seed_from_u64(11);
        let x: Vec<f32> = (0..1024).map(|_| rng.random_range(-1.0..1.0)).collect();
        let y: Vec<f32> = (0..1024).map(|_| rng.random_range(-1.0..1.0)).collect();
        let d = hamming_distance(&sign_bits(&x), &sign_bits(&y), 1024);
        // h ~ Binomial(1024, ½)/1024, sd 1/64: 2h within 0.5 ± 4 sd → d ≥ 0.875.
        assert!(d > 0.875, "{d}");
    }

    #[test]
    fn identical_fingerprints_have_zero_distance_and_all_in_unit_interval() {
        let a = random_fingerprint(1, 16);
        let b = random_fingerprint(2, 16);
        let (pa, pb) = (PreparedFingerprint::new(&a), PreparedFingerprint::new(&b));
        assert_eq!(fingerprint_distances(&pa, &pa), [0.0; NUM_EMBEDDERS]);
        for d in fingerprint_distances(&pa, &pb) {
            assert!((0.0..=1.0).contains(&d));
        }
    }
}

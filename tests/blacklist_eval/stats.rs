//! The statistics of the evaluation, written out so that every figure can be checked by hand: a
//! seeded generator, percentiles, and confidence intervals by bootstrap resampling of tasks.

/// SplitMix64, a 64-bit generator with one `u64` of state:
///
/// ```text
/// s ← s + 0x9E3779B97F4A7C15                     (mod 2⁶⁴)
/// z ← (s ⊕ (s ≫ 30)) · 0xBF58476D1CE4E5B9
/// z ← (z ⊕ (z ≫ 27)) · 0x94D049BB133111EB
/// out = z ⊕ (z ≫ 31)
/// ```
///
/// Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014; the
/// constants are those of Vigna's reference `splitmix64.c`. Written here rather than taken
/// from `rand` so that a seed draws the same resamples whatever `rand` version is in the tree.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose state starts at `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..n`, as `⌊x · n / 2⁶⁴⌋` of the next output `x` (Lemire's multiply-shift,
    /// without the rejection step: each index's probability is off by less than `n / 2⁶⁴`).
    /// `n = 0` gives 0.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The `q`-quantile of `sorted` (ascending, finite), interpolating linearly between the closest
/// ranks:
///
/// ```text
/// h = (n − 1)·q,   Q(q) = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋ + 1] − x[⌊h⌋])     (0-based x)
/// ```
///
/// Hyndman & Fan, "Sample quantiles in statistical packages", *The American Statistician*
/// 50(4), 1996, definition 7 (R's default, NumPy's `linear`). `q` is clamped to [0, 1];
/// `None` for an empty slice.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = last as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(last);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Resamples of `groups` groups for the bootstrap: `resamples` lists, each of `groups` indices
/// in `0..groups` drawn uniformly with replacement from one [`SplitMix64`] seeded with `seed`.
pub fn resample_groups(groups: usize, resamples: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    (0..resamples)
        .map(|_| (0..groups).map(|_| rng.below(groups)).collect())
        .collect()
}

/// A figure and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The figure on the whole set.
    pub value: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

impl std::fmt::Display for Estimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2} [{:.2}, {:.2}]", self.value, self.low, self.high)
    }
}

/// The percentile bootstrap interval at `level` (e.g. 0.95) of a figure: `value` on the whole
/// set, and the `(1 − level)/2` and `(1 + level)/2` [`percentile`]s of its values on the
/// resamples (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13). Resamples
/// where the figure is undefined (`None`, e.g. no positives drawn) are left out. `None` when
/// `value` is undefined or no resample defines it.
pub fn percentile_interval(
    value: Option<f64>,
    resampled: impl IntoIterator<Item = Option<f64>>,
    level: f64,
) -> Option<Estimate> {
    let value = value?;
    let mut values: Vec<f64> = resampled.into_iter().flatten().collect();
    values.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some(Estimate {
        value,
        low: percentile(&values, tail)?,
        high: percentile(&values, 1.0 - tail)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interpolated quantiles are exact up to rounding of one multiply-add.
    const TOL: f64 = 1e-12;

    #[test]
    fn splitmix64_reference_values() {
        // The first outputs of splitmix64.c from state 0 (also the seeding sequence of
        // xoshiro256** in its reference code).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
        // `below` stays in range and reaches both ends.
        let mut rng = SplitMix64::new(7);
        let draws: Vec<usize> = (0..1000).map(|_| rng.below(3)).collect();
        assert!(draws.iter().all(|&d| d < 3));
        assert!(draws.contains(&0) && draws.contains(&2));
        assert_eq!(SplitMix64::new(1).below(0), 0);
    }

    #[test]
    fn percentile_reference_values() {
        // Definition 7 by hand (R `quantile(x, q)` and NumPy `percentile` give the same).
        let cases: &[(&[f64], f64, f64)] = &[
            (&[1.0, 2.0, 3.0, 4.0], 0.25, 1.75),
            (&[15.0, 20.0, 35.0, 40.0, 50.0], 0.40, 29.0),
            (&[15.0, 20.0, 35.0, 40.0, 50.0], 0.50, 35.0),
            (
                &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
                0.025,
                1.225,
            ),
            (
                &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
                0.975,
                9.775,
            ),
            (&[3.0], 0.3, 3.0),
            (&[1.0, 5.0], 0.0, 1.0),
            (&[1.0, 5.0], 1.0, 5.0),
            (&[1.0, 5.0], 2.0, 5.0),
        ];
        for &(x, q, want) in cases {
            let got = percentile(x, q).expect("non-empty");
            assert!((got - want).abs() < TOL, "{x:?} at {q}: {got}, want {want}");
        }
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn bootstrap_interval_of_a_proportion_matches_the_normal_approximation() {
        // 400 groups, 100 of them "hits": the share is 0.25 and its standard error
        // √(0.25·0.75/400) ≈ 0.02165, so the 95 % interval is about 0.25 ± 1.96·0.02165
        // = [0.2076, 0.2924]. 2,000 resamples land within 0.01 of it.
        let hits: Vec<bool> = (0..400).map(|i| i % 4 == 0).collect();
        let share = |groups: &[usize]| {
            Some(groups.iter().filter(|&&g| hits[g]).count() as f64 / groups.len() as f64)
        };
        let draws = resample_groups(hits.len(), 2000, 30);
        let all: Vec<usize> = (0..hits.len()).collect();
        let e = percentile_interval(share(&all), draws.iter().map(|d| share(d)), 0.95)
            .expect("defined");
        assert!((e.value - 0.25).abs() < TOL, "{e}");
        assert!((e.low - 0.2076).abs() < 0.01, "{e}");
        assert!((e.high - 0.2924).abs() < 0.01, "{e}");
        // The same seed draws the same resamples; every draw names a group.
        assert_eq!(draws, resample_groups(hits.len(), 2000, 30));
        assert!(draws.iter().flatten().all(|&g| g < hits.len()));
        // Undefined figures are left out; nothing defined gives no interval.
        let e = percentile_interval(Some(0.5), [None, Some(0.4), Some(0.6)], 0.95).unwrap();
        assert!(
            (e.low - 0.405).abs() < TOL && (e.high - 0.595).abs() < TOL,
            "{e}"
        );
        assert_eq!(percentile_interval(Some(0.5), [None, None], 0.95), None);
        assert_eq!(percentile_interval(None, [Some(0.5)], 0.95), None);
    }
}

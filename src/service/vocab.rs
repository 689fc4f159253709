//! The vocabulary every tool family shares (SPEC §3): the 13 embedders, the six knowledge
//! domains and the λ pair. Defined once here; the families, the store and the tool layer import
//! it from this module.

use std::fmt;

use strum::{IntoStaticStr, VariantArray};

/// Every value of an enumeration deriving [`strum::VariantArray`], in declaration order, as an
/// array of `N` (for the `ALL` constants whose callers index, iterate by value or size arrays
/// with them). Evaluated at compile time: an `N` other than the number of variants fails the
/// build.
pub const fn variants<T: VariantArray + Copy, const N: usize>() -> [T; N] {
    assert!(T::VARIANTS.len() == N, "N is not the number of variants");
    match T::VARIANTS.first_chunk::<N>() {
        Some(all) => *all,
        None => unreachable!(),
    }
}

/// Number of embedders in a fingerprint (E1..E13; `embedder_index` 0..=12, `embedder_id` 1..=13).
pub const NUM_EMBEDDERS: usize = 13;

/// Embedder display names by index (SPEC §3): `EMBEDDER_NAMES[0]` is E1.
pub const EMBEDDER_NAMES: [&str; NUM_EMBEDDERS] = [
    "E1_Semantic",
    "E2_Temporal_Recent",
    "E3_Temporal_Periodic",
    "E4_Temporal_Positional",
    "E5_Causal",
    "E6_Sparse_Lexical",
    "E7_Code",
    "E8_Graph",
    "E9_HDC",
    "E10_Multimodal",
    "E11_Entity",
    "E12_Late_Interaction",
    "E13_SPLADE",
];
/// One of the 13 embedders: index 0..=12 (`embedder_index`), id 1..=13 (`embedder_id`); named
/// by its fingerprint field ([`EmbedderId::field`], `e1_semantic`, …, `e13_splade`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    IntoStaticStr,
    strum::EnumString,
    VariantArray,
)]
pub enum EmbedderId {
    /// E1_Semantic, dense 1024.
    #[strum(serialize = "e1_semantic")]
    Semantic,
    /// E2_Temporal_Recent, dense 512.
    #[strum(serialize = "e2_temporal_recent")]
    TemporalRecent,
    /// E3_Temporal_Periodic, dense 512.
    #[strum(serialize = "e3_temporal_periodic")]
    TemporalPeriodic,
    /// E4_Temporal_Positional, dense 512.
    #[strum(serialize = "e4_temporal_positional")]
    TemporalPositional,
    /// E5_Causal, dense 768 (asymmetric distance, see `distance`).
    #[strum(serialize = "e5_causal")]
    Causal,
    /// E6_Sparse_Lexical, sparse over 30,522 terms.
    #[strum(serialize = "e6_sparse")]
    SparseLexical,
    /// E7_Code, dense 1536.
    #[strum(serialize = "e7_code")]
    Code,
    /// E8_Graph, dense 384.
    #[strum(serialize = "e8_graph")]
    Graph,
    /// E9_HDC, dense 1024 read as a sign-binarised hypervector.
    #[strum(serialize = "e9_hdc")]
    Hdc,
    /// E10_Multimodal, dense 768.
    #[strum(serialize = "e10_multimodal")]
    Multimodal,
    /// E11_Entity, dense 384.
    #[strum(serialize = "e11_entity")]
    Entity,
    /// E12_Late_Interaction, tokens of 128.
    #[strum(serialize = "e12_late_interaction")]
    LateInteraction,
    /// E13_SPLADE, sparse over 30,522 terms.
    #[strum(serialize = "e13_splade")]
    Splade,
}

impl EmbedderId {
    /// All embedders in index order.
    pub const ALL: [EmbedderId; NUM_EMBEDDERS] = variants();

    /// Zero-based index, 0..=12 (`embedder_index` in the meta-learning tools).
    pub fn index(self) -> usize {
        self as usize
    }

    /// One-based id, 1..=13 (`embedder_id` in the ATC tools).
    pub fn id(self) -> u8 {
        self as u8 + 1
    }

    /// The embedder at `index` (0..=12), `None` outside.
    pub fn from_index(index: usize) -> Option<Self> {
        Self::ALL.get(index).copied()
    }

    /// The embedder with one-based `id` (1..=13), `None` outside.
    pub fn from_id(id: u8) -> Option<Self> {
        (id as usize).checked_sub(1).and_then(Self::from_index)
    }

    /// Display name, e.g. `E1_Semantic`.
    pub fn name(self) -> &'static str {
        EMBEDDER_NAMES[self.index()]
    }

    /// Fingerprint field name, e.g. `e1_semantic`.
    pub fn field(self) -> &'static str {
        self.into()
    }

    /// The embedder whose fingerprint field is `field` (exact, lowercase), `None` otherwise.
    pub fn from_field(field: &str) -> Option<Self> {
        field.parse().ok()
    }
}

/// A knowledge domain (SPEC §3). Parsed case-insensitively; the meta-learning tools answer in
/// lowercase ([`Domain::as_str`]), the ATC tools capitalised ([`Domain::display_name`]), as their
/// seeds' schemas spell them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    IntoStaticStr,
    strum::EnumString,
    VariantArray,
)]
#[strum(serialize_all = "lowercase", ascii_case_insensitive)]
pub enum Domain {
    /// Software engineering.
    Code,
    /// Medicine.
    Medical,
    /// Law.
    Legal,
    /// Creative writing and design.
    Creative,
    /// Research.
    Research,
    /// Anything else (the default where a domain is optional).
    General,
}

impl Domain {
    /// Every domain, in schema order; [`Domain::index`] is the position here.
    pub const ALL: [Domain; 6] = variants();

    /// Number of domains (the length of per-domain arrays).
    pub const COUNT: usize = Domain::ALL.len();

    /// Position in [`Domain::ALL`], `0..6`: the index of per-domain arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lowercase name, as the meta-learning schemas spell it (`"code"`, …).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Capitalised name, as the ATC seed's schema enum spells it (`"Code"`, …, `"General"`).
    pub fn display_name(self) -> &'static str {
        match self {
            Domain::Code => "Code",
            Domain::Medical => "Medical",
            Domain::Legal => "Legal",
            Domain::Creative => "Creative",
            Domain::Research => "Research",
            Domain::General => "General",
        }
    }

    /// Parse a domain name, ignoring ASCII case and surrounding whitespace. `None` for anything
    /// else.
    pub fn parse(s: &str) -> Option<Domain> {
        s.trim().parse().ok()
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lower bound of each λ component: 0.1 (dimensionless, a weight). Must stay in (0, 0.5] with
/// [`LAMBDA_MAX`] = 1 − it, since λ_s + λ_c = 1. Source: SPEC §3.
pub const LAMBDA_MIN: f64 = 0.1;
/// Upper bound of each λ component: 0.9, that is 1 − [`LAMBDA_MIN`]. Source: SPEC §3.
pub const LAMBDA_MAX: f64 = 0.9;

/// The λ pair (SPEC §3): λ_s weighs surprise (ΔS), λ_c coherence (ΔC); λ_s + λ_c = 1 and each
/// lies in [[`LAMBDA_MIN`], [`LAMBDA_MAX`]] = [0.1, 0.9]. The fields are private so that every
/// value of this type keeps those rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lambdas {
    s: f64,
    c: f64,
}

/// Why a λ pair was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("λ_s must be a finite number in [{LAMBDA_MIN}, {LAMBDA_MAX}], got {0}")]
pub struct LambdaOutOfRange(pub f64);

impl Lambdas {
    /// A pair given both components, for constants such as the lifecycle bases.
    ///
    /// # Panics
    /// When `s` or `c` is outside [0.1, 0.9] or `s + c` differs from 1 by more than 1e-12 (at
    /// compile time when used in a constant).
    pub const fn pair(s: f64, c: f64) -> Lambdas {
        assert!(s >= LAMBDA_MIN && s <= LAMBDA_MAX && c >= LAMBDA_MIN && c <= LAMBDA_MAX);
        assert!((s + c - 1.0) < 1e-12 && (1.0 - s - c) < 1e-12);
        Lambdas { s, c }
    }

    /// The pair with λ_s = `s` and λ_c = 1 − `s`.
    ///
    /// # Errors
    /// [`LambdaOutOfRange`] when `s` is NaN, infinite or outside [0.1, 0.9] (a stored value out
    /// of range means damage, not something to clamp silently).
    pub fn new(s: f64) -> Result<Lambdas, LambdaOutOfRange> {
        if s.is_finite() && (LAMBDA_MIN..=LAMBDA_MAX).contains(&s) {
            Ok(Lambdas { s, c: 1.0 - s })
        } else {
            Err(LambdaOutOfRange(s))
        }
    }

    /// The pair with λ_s = `s` clamped to [0.1, 0.9] and λ_c = 1 − λ_s, and whether clamping
    /// changed `s`. NaN maps to 0.5.
    pub fn from_s(s: f64) -> (Lambdas, bool) {
        let s0 = if s.is_nan() { 0.5 } else { s };
        let clamped = s0.clamp(LAMBDA_MIN, LAMBDA_MAX);
        (
            Lambdas {
                s: clamped,
                c: 1.0 - clamped,
            },
            clamped != s0,
        )
    }

    /// λ_s, the weight of surprise, in [0.1, 0.9].
    pub fn s(self) -> f64 {
        self.s
    }

    /// λ_c = 1 − λ_s, the weight of coherence, in [0.1, 0.9].
    pub fn c(self) -> f64 {
        self.c
    }

    /// The learning score `L = λ_s·ΔS + λ_c·ΔC` (SPEC §3).
    pub fn learning_score(self, delta_s: f64, delta_c: f64) -> f64 {
        self.s * delta_s + self.c * delta_c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_the_all_order() {
        for (i, d) in Domain::ALL.into_iter().enumerate() {
            assert_eq!(d.index(), i);
            assert_eq!(Domain::parse(d.display_name()), Some(d));
        }
        for (i, e) in EmbedderId::ALL.into_iter().enumerate() {
            assert_eq!(e.index(), i);
            assert_eq!(EmbedderId::from_id(e.id()), Some(e));
        }
        assert_eq!(Domain::parse(" Medical "), Some(Domain::Medical));
        assert_eq!(Domain::parse("finance"), None);
    }

    #[test]
    fn lambdas_keep_their_rules() {
        let l = Lambdas::new(0.25).unwrap();
        assert_eq!(l.s() + l.c(), 1.0);
        assert!(Lambdas::new(0.95).is_err());
        assert!(Lambdas::new(f64::NAN).is_err());
        assert_eq!(Lambdas::from_s(2.0), (Lambdas::new(0.9).unwrap(), true));
        assert_eq!(Lambdas::from_s(f64::NAN).0.s(), 0.5);
    }
}

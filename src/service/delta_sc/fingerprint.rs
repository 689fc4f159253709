//! The 13-embedder fingerprint (SPEC §3): typed fields, the embedder vocabulary, and validation.
//!
//! A [`Fingerprint`] holds one vector per embedder: eleven dense vectors of fixed dimension, two
//! sparse vectors over the 30,522-term vocabulary (E6, E13) and one late-interaction matrix of
//! 128-float tokens (E12). Build it from parsed parts with [`FingerprintBuilder`], or fill the
//! public fields and call [`Fingerprint::validate`]; both report the first broken rule as a
//! [`FingerprintError`] whose message names the field and the rule.

use thiserror::Error;

pub use crate::service::vocab::{EMBEDDER_NAMES, EmbedderId, NUM_EMBEDDERS};

/// Size of the sparse vocabulary of E6 and E13; every sparse index must be below it.
pub const SPARSE_VOCAB: usize = 30_522;
/// Length of one E12 late-interaction token vector.
pub const TOKEN_DIM: usize = 128;

/// How an embedder's vector is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    /// A dense vector of exactly `dim` finite floats.
    Dense {
        /// Required length.
        dim: usize,
    },
    /// A sparse vector over a vocabulary of `vocab` terms (see [`SparseVector`]).
    Sparse {
        /// Vocabulary size; indices must be `< vocab`.
        vocab: usize,
    },
    /// One or more token vectors of exactly `dim` floats each (see [`TokenVectors`]).
    Tokens {
        /// Required length of each token.
        dim: usize,
    },
}

impl EmbedderId {
    /// The shape of this embedder's vector (SPEC §3).
    pub fn kind(self) -> EmbedderKind {
        use EmbedderId::*;
        match self {
            Semantic | Hdc => EmbedderKind::Dense { dim: 1024 },
            TemporalRecent | TemporalPeriodic | TemporalPositional => {
                EmbedderKind::Dense { dim: 512 }
            }
            Causal | Multimodal => EmbedderKind::Dense { dim: 768 },
            Code => EmbedderKind::Dense { dim: 1536 },
            Graph | Entity => EmbedderKind::Dense { dim: 384 },
            SparseLexical | Splade => EmbedderKind::Sparse {
                vocab: SPARSE_VOCAB,
            },
            LateInteraction => EmbedderKind::Tokens { dim: TOKEN_DIM },
        }
    }

    /// Whether an all-zero vector is rejected: every dense embedder compared by cosine needs a
    /// direction. E9 (Hamming over sign bits) accepts zeros: every bit is then 0.
    pub fn needs_direction(self) -> bool {
        matches!(self.kind(), EmbedderKind::Dense { .. }) && self != EmbedderId::Hdc
    }
}

/// A sparse vector: `indices` strictly ascending and `< 30522`, `values` of the same length,
/// finite and non-negative (term weights; weighted Jaccard needs non-negative weights).
/// An empty vector (no indices) is valid and means "no active term".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SparseVector {
    /// Active term indices, strictly ascending.
    pub indices: Vec<u16>,
    /// Term weights, one per index.
    pub values: Vec<f32>,
}

/// E12 late-interaction tokens: at least one token, each exactly 128 finite floats, none all zero.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenVectors {
    /// The token vectors in sequence order.
    pub tokens: Vec<Vec<f32>>,
}

/// The 13 embedder vectors of one memory (SPEC §3). Fields are public so the store and the tool
/// layer can build it from their parts; call [`Fingerprint::validate`] (or use
/// [`FingerprintBuilder`]) before computing with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fingerprint {
    /// E1_Semantic, 1024 floats.
    pub e1_semantic: Vec<f32>,
    /// E2_Temporal_Recent, 512 floats.
    pub e2_temporal_recent: Vec<f32>,
    /// E3_Temporal_Periodic, 512 floats.
    pub e3_temporal_periodic: Vec<f32>,
    /// E4_Temporal_Positional, 512 floats.
    pub e4_temporal_positional: Vec<f32>,
    /// E5_Causal, 768 floats.
    pub e5_causal: Vec<f32>,
    /// E6_Sparse_Lexical, sparse over 30,522 terms.
    pub e6_sparse: SparseVector,
    /// E7_Code, 1536 floats.
    pub e7_code: Vec<f32>,
    /// E8_Graph, 384 floats.
    pub e8_graph: Vec<f32>,
    /// E9_HDC, 1024 floats (compared by their signs).
    pub e9_hdc: Vec<f32>,
    /// E10_Multimodal, 768 floats.
    pub e10_multimodal: Vec<f32>,
    /// E11_Entity, 384 floats.
    pub e11_entity: Vec<f32>,
    /// E12_Late_Interaction, tokens of 128 floats.
    pub e12_late_interaction: TokenVectors,
    /// E13_SPLADE, sparse over 30,522 terms.
    pub e13_splade: SparseVector,
}

/// A borrowed view of one embedder's vector.
#[derive(Debug, Clone, Copy)]
pub enum EmbedderRef<'a> {
    /// A dense embedder's floats.
    Dense(&'a [f32]),
    /// E6 or E13.
    Sparse(&'a SparseVector),
    /// E12.
    Tokens(&'a TokenVectors),
}

/// One embedder's vector, owned; the unit the builder accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderValue {
    /// A dense vector.
    Dense(Vec<f32>),
    /// A sparse vector.
    Sparse(SparseVector),
    /// Late-interaction tokens.
    Tokens(TokenVectors),
}

impl EmbedderValue {
    fn kind_name(&self) -> &'static str {
        match self {
            EmbedderValue::Dense(_) => "a dense array",
            EmbedderValue::Sparse(_) => "a sparse vector",
            EmbedderValue::Tokens(_) => "token vectors",
        }
    }
}

/// Why a fingerprint is invalid. Each message starts with the field name (except `Missing`,
/// which lists the missing fields) and states the rule.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FingerprintError {
    /// One or more embedders absent (ARCH-05).
    #[error("Fingerprint must contain all 13 embedders (ARCH-05): missing {}", .fields.join(", "))]
    Missing {
        /// The missing field names, in embedder order.
        fields: Vec<&'static str>,
    },
    /// A value of the wrong shape was given for the embedder.
    #[error("{field}: expected {expected}, got {got}")]
    WrongKind {
        /// Field name.
        field: &'static str,
        /// The shape the embedder needs.
        expected: &'static str,
        /// The shape that was given.
        got: &'static str,
    },
    /// A dense vector of the wrong length.
    #[error("{field}: expected {expected} values, got {got}")]
    DenseDimension {
        /// Field name.
        field: &'static str,
        /// Required length.
        expected: usize,
        /// Given length.
        got: usize,
    },
    /// A NaN or infinite value.
    #[error("{field}: {location} is not finite ({value}); all values must be finite numbers")]
    NonFinite {
        /// Field name.
        field: &'static str,
        /// Where, e.g. `values[3]` or `tokens[2][17]`.
        location: String,
        /// The offending value.
        value: f32,
    },
    /// A dense vector (or an E12 token) with every value zero, where cosine needs a direction.
    #[error(
        "{field}: {what} is all zeros and has no direction; at least one value must be non-zero"
    )]
    ZeroVector {
        /// Field name.
        field: &'static str,
        /// `the vector` or `tokens[i]`.
        what: String,
    },
    /// Sparse `indices` and `values` of different lengths.
    #[error(
        "{field}: indices and values must have the same length, got {indices} indices and {values} values"
    )]
    SparseLengthMismatch {
        /// Field name.
        field: &'static str,
        /// Number of indices.
        indices: usize,
        /// Number of values.
        values: usize,
    },
    /// A sparse index repeated.
    #[error(
        "{field}: duplicate index {index} at indices[{position}]; indices must be strictly ascending"
    )]
    SparseDuplicate {
        /// Field name.
        field: &'static str,
        /// The repeated index.
        index: u16,
        /// Position of the second occurrence.
        position: usize,
    },
    /// A sparse index smaller than its predecessor.
    #[error(
        "{field}: indices must be strictly ascending, but indices[{position}] = {index} follows {previous}"
    )]
    SparseUnsorted {
        /// Field name.
        field: &'static str,
        /// The out-of-order index.
        index: u16,
        /// The index before it.
        previous: u16,
        /// Its position.
        position: usize,
    },
    /// A sparse index at or beyond the vocabulary.
    #[error("{field}: indices[{position}] = {index} is out of range; indices must be < {vocab}")]
    SparseOutOfRange {
        /// Field name.
        field: &'static str,
        /// The offending index.
        index: u16,
        /// Its position.
        position: usize,
        /// The vocabulary size (30522).
        vocab: usize,
    },
    /// A negative sparse weight.
    #[error("{field}: values[{position}] = {value} is negative; sparse term weights must be >= 0")]
    SparseNegative {
        /// Field name.
        field: &'static str,
        /// Position.
        position: usize,
        /// The value.
        value: f32,
    },
    /// E12 with no tokens.
    #[error("{field}: at least one token of {dim} values is required, got no tokens")]
    NoTokens {
        /// Field name.
        field: &'static str,
        /// Required token length (128).
        dim: usize,
    },
    /// An E12 token of the wrong length.
    #[error("{field}: tokens[{token}] has {got} values, expected {expected}")]
    TokenDimension {
        /// Field name.
        field: &'static str,
        /// Token position.
        token: usize,
        /// Required length (128).
        expected: usize,
        /// Given length.
        got: usize,
    },
}

impl FingerprintError {
    /// The fingerprint field the error is about (`None` for [`FingerprintError::Missing`], which
    /// may name several).
    pub fn field(&self) -> Option<&'static str> {
        use FingerprintError::*;
        match self {
            Missing { .. } => None,
            WrongKind { field, .. }
            | DenseDimension { field, .. }
            | NonFinite { field, .. }
            | ZeroVector { field, .. }
            | SparseLengthMismatch { field, .. }
            | SparseDuplicate { field, .. }
            | SparseUnsorted { field, .. }
            | SparseOutOfRange { field, .. }
            | SparseNegative { field, .. }
            | NoTokens { field, .. }
            | TokenDimension { field, .. } => Some(field),
        }
    }
}

impl Fingerprint {
    /// A borrowed view of embedder `e`'s vector.
    pub fn get(&self, e: EmbedderId) -> EmbedderRef<'_> {
        use EmbedderId::*;
        match e {
            Semantic => EmbedderRef::Dense(&self.e1_semantic),
            TemporalRecent => EmbedderRef::Dense(&self.e2_temporal_recent),
            TemporalPeriodic => EmbedderRef::Dense(&self.e3_temporal_periodic),
            TemporalPositional => EmbedderRef::Dense(&self.e4_temporal_positional),
            Causal => EmbedderRef::Dense(&self.e5_causal),
            SparseLexical => EmbedderRef::Sparse(&self.e6_sparse),
            Code => EmbedderRef::Dense(&self.e7_code),
            Graph => EmbedderRef::Dense(&self.e8_graph),
            Hdc => EmbedderRef::Dense(&self.e9_hdc),
            Multimodal => EmbedderRef::Dense(&self.e10_multimodal),
            Entity => EmbedderRef::Dense(&self.e11_entity),
            LateInteraction => EmbedderRef::Tokens(&self.e12_late_interaction),
            Splade => EmbedderRef::Sparse(&self.e13_splade),
        }
    }

    /// Dense vector of a dense embedder; `None` for E6, E12, E13.
    pub fn dense(&self, e: EmbedderId) -> Option<&[f32]> {
        match self.get(e) {
            EmbedderRef::Dense(v) => Some(v),
            _ => None,
        }
    }

    /// Check every embedder in index order against SPEC §3 and return the first violation.
    ///
    /// Rules: dense length equals the embedder's dimension, every value finite, dense vectors
    /// other than E9 not all zero; sparse `indices` strictly ascending (no duplicates), each
    /// `< 30522`, `values` the same length, finite and `>= 0`; E12 has at least one token, every
    /// token has 128 finite values and is not all zero.
    ///
    /// # Errors
    /// The first [`FingerprintError`] found, in embedder order then position order.
    pub fn validate(&self) -> Result<(), FingerprintError> {
        EmbedderId::ALL
            .into_iter()
            .try_for_each(|e| validate_value(e, self.get(e)))
    }
}

/// `Ok` when every value is finite; otherwise the first non-finite one, located as
/// `{prefix}[i]`. The prefix is only built for an error, and the common all-finite case is one
/// branch-free (vectorised) pass.
fn check_finite(
    field: &'static str,
    values: &[f32],
    prefix: impl FnOnce() -> String,
) -> Result<(), FingerprintError> {
    if values.iter().fold(true, |ok, v| ok & v.is_finite()) {
        return Ok(());
    }
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(FingerprintError::NonFinite {
            field,
            location: format!("{}[{i}]", prefix()),
            value: values[i],
        }),
    }
}

/// Validate one embedder's vector (see [`Fingerprint::validate`] for the rules).
///
/// # Errors
/// The first rule broken, as a [`FingerprintError`] naming `e.field()`.
pub fn validate_value(e: EmbedderId, value: EmbedderRef<'_>) -> Result<(), FingerprintError> {
    let field = e.field();
    match (e.kind(), value) {
        (EmbedderKind::Dense { dim }, EmbedderRef::Dense(v)) => {
            if v.len() != dim {
                return Err(FingerprintError::DenseDimension {
                    field,
                    expected: dim,
                    got: v.len(),
                });
            }
            check_finite(field, v, || "values".to_string())?;
            if e.needs_direction() && v.iter().all(|x| *x == 0.0) {
                return Err(FingerprintError::ZeroVector {
                    field,
                    what: "the vector".to_string(),
                });
            }
            Ok(())
        }
        (EmbedderKind::Sparse { vocab }, EmbedderRef::Sparse(s)) => {
            if s.indices.len() != s.values.len() {
                return Err(FingerprintError::SparseLengthMismatch {
                    field,
                    indices: s.indices.len(),
                    values: s.values.len(),
                });
            }
            for (position, &index) in s.indices.iter().enumerate() {
                if position > 0 {
                    let previous = s.indices[position - 1];
                    if index == previous {
                        return Err(FingerprintError::SparseDuplicate {
                            field,
                            index,
                            position,
                        });
                    }
                    if index < previous {
                        return Err(FingerprintError::SparseUnsorted {
                            field,
                            index,
                            previous,
                            position,
                        });
                    }
                }
                if index as usize >= vocab {
                    return Err(FingerprintError::SparseOutOfRange {
                        field,
                        index,
                        position,
                        vocab,
                    });
                }
            }
            check_finite(field, &s.values, || "values".to_string())?;
            if let Some(position) = s.values.iter().position(|v| *v < 0.0) {
                return Err(FingerprintError::SparseNegative {
                    field,
                    position,
                    value: s.values[position],
                });
            }
            Ok(())
        }
        (EmbedderKind::Tokens { dim }, EmbedderRef::Tokens(t)) => {
            if t.tokens.is_empty() {
                return Err(FingerprintError::NoTokens { field, dim });
            }
            for (token, v) in t.tokens.iter().enumerate() {
                if v.len() != dim {
                    return Err(FingerprintError::TokenDimension {
                        field,
                        token,
                        expected: dim,
                        got: v.len(),
                    });
                }
                check_finite(field, v, || format!("tokens[{token}]"))?;
                if v.iter().all(|x| *x == 0.0) {
                    return Err(FingerprintError::ZeroVector {
                        field,
                        what: format!("tokens[{token}]"),
                    });
                }
            }
            Ok(())
        }
        (kind, given) => Err(FingerprintError::WrongKind {
            field,
            expected: kind_name(kind),
            got: match given {
                EmbedderRef::Dense(_) => "a dense array",
                EmbedderRef::Sparse(_) => "a sparse vector",
                EmbedderRef::Tokens(_) => "token vectors",
            },
        }),
    }
}

fn kind_name(kind: EmbedderKind) -> &'static str {
    match kind {
        EmbedderKind::Dense { .. } => "a dense array",
        EmbedderKind::Sparse { .. } => "a sparse vector {indices, values}",
        EmbedderKind::Tokens { .. } => "token vectors (an array of arrays of 128 numbers)",
    }
}

/// Collects embedder values one at a time (e.g. while walking a parsed JSON object) and builds a
/// validated [`Fingerprint`].
#[derive(Debug, Clone, Default)]
pub struct FingerprintBuilder {
    slots: [Option<EmbedderValue>; NUM_EMBEDDERS],
}

impl FingerprintBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set embedder `e`'s vector (replacing an earlier one). The shape is checked in `build`.
    pub fn set(&mut self, e: EmbedderId, value: EmbedderValue) -> &mut Self {
        self.slots[e.index()] = Some(value);
        self
    }

    /// Set a dense embedder.
    pub fn dense(&mut self, e: EmbedderId, values: Vec<f32>) -> &mut Self {
        self.set(e, EmbedderValue::Dense(values))
    }

    /// Set a sparse embedder from its parallel arrays.
    pub fn sparse(&mut self, e: EmbedderId, indices: Vec<u16>, values: Vec<f32>) -> &mut Self {
        self.set(e, EmbedderValue::Sparse(SparseVector { indices, values }))
    }

    /// Set E12 from its token vectors.
    pub fn tokens(&mut self, e: EmbedderId, tokens: Vec<Vec<f32>>) -> &mut Self {
        self.set(e, EmbedderValue::Tokens(TokenVectors { tokens }))
    }

    /// Build and validate.
    ///
    /// # Errors
    /// [`FingerprintError::Missing`] listing every absent field; otherwise the first rule broken
    /// (a value of the wrong shape is [`FingerprintError::WrongKind`]), as in
    /// [`Fingerprint::validate`].
    pub fn build(self) -> Result<Fingerprint, FingerprintError> {
        let missing: Vec<&'static str> = EmbedderId::ALL
            .into_iter()
            .filter(|e| self.slots[e.index()].is_none())
            .map(EmbedderId::field)
            .collect();
        if !missing.is_empty() {
            return Err(FingerprintError::Missing { fields: missing });
        }
        let mut dense: [Vec<f32>; NUM_EMBEDDERS] = Default::default();
        let mut sparse: [SparseVector; 2] = Default::default();
        let mut tokens = TokenVectors::default();
        for (i, slot) in self.slots.into_iter().enumerate() {
            let e = EmbedderId::ALL[i];
            let value = slot.unwrap_or(EmbedderValue::Dense(Vec::new()));
            match (e.kind(), value) {
                (EmbedderKind::Dense { .. }, EmbedderValue::Dense(v)) => dense[i] = v,
                (EmbedderKind::Sparse { .. }, EmbedderValue::Sparse(s)) => {
                    sparse[usize::from(e == EmbedderId::Splade)] = s;
                }
                (EmbedderKind::Tokens { .. }, EmbedderValue::Tokens(t)) => tokens = t,
                (kind, other) => {
                    return Err(FingerprintError::WrongKind {
                        field: e.field(),
                        expected: kind_name(kind),
                        got: other.kind_name(),
                    });
                }
            }
        }
        let [e1, e2, e3, e4, e5, _, e7, e8, e9, e10, e11, _, _] = dense;
        let [e6, e13] = sparse;
        let fp = Fingerprint {
            e1_semantic: e1,
            e2_temporal_recent: e2,
            e3_temporal_periodic: e3,
            e4_temporal_positional: e4,
            e5_causal: e5,
            e6_sparse: e6,
            e7_code: e7,
            e8_graph: e8,
            e9_hdc: e9,
            e10_multimodal: e10,
            e11_entity: e11,
            e12_late_interaction: tokens,
            e13_splade: e13,
        };
        fp.validate()?;
        Ok(fp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::delta_sc::test_support::random_fingerprint;

    #[test]
    fn embedder_vocabulary_matches_spec_section_3() {
        // (index, id, name, field, kind) copied from SPEC §3.
        let table = [
            (
                0,
                1,
                "E1_Semantic",
                "e1_semantic",
                EmbedderKind::Dense { dim: 1024 },
            ),
            (
                4,
                5,
                "E5_Causal",
                "e5_causal",
                EmbedderKind::Dense { dim: 768 },
            ),
            (
                5,
                6,
                "E6_Sparse_Lexical",
                "e6_sparse",
                EmbedderKind::Sparse { vocab: 30522 },
            ),
            (
                6,
                7,
                "E7_Code",
                "e7_code",
                EmbedderKind::Dense { dim: 1536 },
            ),
            (8, 9, "E9_HDC", "e9_hdc", EmbedderKind::Dense { dim: 1024 }),
            (
                11,
                12,
                "E12_Late_Interaction",
                "e12_late_interaction",
                EmbedderKind::Tokens { dim: 128 },
            ),
            (
                12,
                13,
                "E13_SPLADE",
                "e13_splade",
                EmbedderKind::Sparse { vocab: 30522 },
            ),
        ];
        for (index, id, name, field, kind) in table {
            let e = EmbedderId::from_index(index).unwrap();
            assert_eq!(
                (e.id(), e.name(), e.field(), e.kind()),
                (id, name, field, kind)
            );
            assert_eq!(EmbedderId::from_id(id), Some(e));
            assert_eq!(EmbedderId::from_field(field), Some(e));
        }
        assert_eq!(EmbedderId::from_index(13), None);
        assert_eq!(EmbedderId::from_id(0), None);
        assert_eq!(EmbedderId::from_id(14), None);
        let dense_total: usize = EmbedderId::ALL
            .iter()
            .filter_map(|e| match e.kind() {
                EmbedderKind::Dense { dim } => Some(dim),
                _ => None,
            })
            .sum();
        assert_eq!(dense_total, 7424); // 1024+3·512+768+1536+384+1024+768+384
    }

    fn builder_from(fp: &Fingerprint) -> FingerprintBuilder {
        let mut b = FingerprintBuilder::new();
        for e in EmbedderId::ALL {
            let v = match fp.get(e) {
                EmbedderRef::Dense(v) => EmbedderValue::Dense(v.to_vec()),
                EmbedderRef::Sparse(s) => EmbedderValue::Sparse(s.clone()),
                EmbedderRef::Tokens(t) => EmbedderValue::Tokens(t.clone()),
            };
            b.set(e, v);
        }
        b
    }

    #[test]
    fn builder_round_trips_a_valid_fingerprint() {
        let fp = random_fingerprint(1, 8);
        assert_eq!(builder_from(&fp).build().unwrap(), fp);
    }

    #[test]
    fn missing_embedder_message_matches_issue() {
        let mut b = FingerprintBuilder::new();
        for e in EmbedderId::ALL {
            if e != EmbedderId::Code {
                b.dense(e, vec![]);
            }
        }
        let err = b.build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "Fingerprint must contain all 13 embedders (ARCH-05): missing e7_code"
        );
        let err = FingerprintBuilder::new().build().unwrap_err();
        assert!(
            err.to_string()
                .contains("missing e1_semantic, e2_temporal_recent")
        );
    }

    #[test]
    fn each_validation_rule_names_field_and_rule() {
        type Mutate = fn(&mut Fingerprint);
        let cases: Vec<(Mutate, &str)> = vec![
            (
                |f| f.e1_semantic.truncate(768),
                "e1_semantic: expected 1024 values, got 768",
            ),
            (
                |f| f.e8_graph[3] = f32::NAN,
                "e8_graph: values[3] is not finite",
            ),
            (
                |f| f.e2_temporal_recent.iter_mut().for_each(|x| *x = 0.0),
                "e2_temporal_recent: the vector is all zeros",
            ),
            (
                |f| {
                    f.e6_sparse.values.pop();
                },
                "e6_sparse: indices and values must have the same length",
            ),
            (
                |f| f.e6_sparse.indices.swap(0, 1),
                "e6_sparse: indices must be strictly ascending, but indices[1]",
            ),
            (
                |f| f.e13_splade.indices[1] = f.e13_splade.indices[0],
                "e13_splade: duplicate index",
            ),
            (
                |f| *f.e13_splade.indices.last_mut().unwrap() = 30522,
                "must be < 30522",
            ),
            (
                |f| f.e6_sparse.values[0] = -0.5,
                "e6_sparse: values[0] = -0.5 is negative",
            ),
            (
                |f| f.e12_late_interaction.tokens.clear(),
                "e12_late_interaction: at least one token of 128 values is required",
            ),
            (
                |f| f.e12_late_interaction.tokens[2].push(1.0),
                "e12_late_interaction: tokens[2] has 129 values, expected 128",
            ),
            (
                |f| f.e12_late_interaction.tokens[1][5] = f32::INFINITY,
                "e12_late_interaction: tokens[1][5] is not finite",
            ),
            (
                |f| {
                    f.e12_late_interaction.tokens[0]
                        .iter_mut()
                        .for_each(|x| *x = 0.0)
                },
                "e12_late_interaction: tokens[0] is all zeros",
            ),
        ];
        for (mutate, expected) in cases {
            let mut fp = random_fingerprint(3, 4);
            mutate(&mut fp);
            let err = fp.validate().unwrap_err();
            assert!(
                err.to_string().contains(expected),
                "{err} does not contain {expected}"
            );
            assert!(err.field().is_some());
            assert_eq!(
                builder_from(&fp).build().unwrap_err().to_string(),
                err.to_string()
            );
        }
    }

    #[test]
    fn all_zero_hdc_and_empty_sparse_are_valid() {
        let mut fp = random_fingerprint(4, 4);
        fp.e9_hdc.iter_mut().for_each(|x| *x = 0.0);
        fp.e6_sparse = SparseVector::default();
        assert_eq!(fp.validate(), Ok(()));
    }

    #[test]
    fn wrong_kind_is_reported() {
        let mut b = builder_from(&random_fingerprint(5, 4));
        b.dense(EmbedderId::Splade, vec![1.0]);
        let err = b.build().unwrap_err();
        assert!(
            err.to_string()
                .starts_with("e13_splade: expected a sparse vector")
        );
    }
}

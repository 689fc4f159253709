//! Surprise (ΔS) and coherence (ΔC) of a memory update over 13 embedders (SPEC §4 utl, issue 5).
//!
//! Pure numerics, no I/O: the caller (tool + store) gathers the context and persists the results.
//!
//! - [`fingerprint`]: the 13-embedder [`Fingerprint`], its vocabulary and validation.
//! - [`distance`]: per-embedder distances in [0, 1] (cosine, asymmetric E5, weighted Jaccard,
//!   MaxSim, Hamming).
//! - [`surprise`]: nearest-context raw surprise and its per-embedder running distributions.
//! - [`coherence`]: connectivity, cluster fit (silhouette), consistency; Johari quadrants.
//! - [`index`]: the in-memory E1 matrix for exact cosine k-NN over stored vertices.
//! - [`compute`]: one update's ΔS/ΔC, aggregates, quadrants and learning score.
//! - [`plan`]: one memory update as a plan (result, versions to persist, cache changes), the
//!   operation the tool calls; [`plan::version_history`] is the one version-history rule.
//!
//! The context of an update (issue 5):
//!
//! ```text
//! V = the vertex's stored previous versions (≤ 10) ∪ {request's old fingerprint (latest)}
//! N = its ≤ 10 nearest stored vertices by E1 cosine to the new vector (itself excluded)
//! B = the next ≤ 10 stored vertices in that order (ranks 11..20)
//! H = V ∪ N[..5]                                   surprise context, k = 5
//! ΔS_e = Norm_e(min_{h∈H} d_e(x, h))               surprise::raw_surprise, SurpriseNormalizer
//! ΔC_e = 0.4·Conn_e(N) + 0.4·Fit_e(N, B) + 0.2·Cons_e(V)
//! ΔS = Σ w_e ΔS_e,  ΔC = Σ w_e ΔC_e                w = meta-learner weights (equal if none)
//! L  = λ_s·ΔS + λ_c·ΔC,  potential = ΔS·ΔC
//! ```

pub mod coherence;
pub mod distance;
pub mod fingerprint;
pub mod index;
pub mod plan;
pub mod surprise;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use thiserror::Error;
use uuid::Uuid;

use crate::service::vocab::Lambdas;

pub use coherence::{
    CoherenceParts, JohariQuadrant, JohariThresholdError, Silhouette, delta_c_formula,
};
pub use distance::{DistanceMethod, PreparedFingerprint};
pub use fingerprint::{
    EmbedderId, EmbedderKind, EmbedderRef, EmbedderValue, Fingerprint, FingerprintBuilder,
    FingerprintError, NUM_EMBEDDERS, SPARSE_VOCAB, SparseVector, TOKEN_DIM, TokenVectors,
};
pub use index::{E1Index, Hit, IndexError};
pub use plan::{
    Learner, NearbyVertex, StoredContext, StoredVertex, UpdatePlan, UpdateRequest, VertexWrite,
    plan_update, version_history,
};
pub use surprise::{DistanceHistogram, HistogramError, MIN_SAMPLES, SurpriseNormalizer};

/// Stored neighbours in the surprise context H (k of the k-NN context).
pub const K_SURPRISE: usize = 5;
/// Neighbours used for connectivity and as the own cluster of the silhouette.
pub const MAX_NEIGHBOURS: usize = 10;
/// Next-nearest vertices used as the other cluster of the silhouette.
pub const MAX_NEXT_NEAREST: usize = 10;
/// Previous versions of a vertex kept and used (the old fingerprint comes on top): 10, in
/// memory and in the store. At least 1. Source: commit 0f9c90a; SPEC §4 utl asks for the
/// vertex's previous versions as ΔS context without a count.
pub const MAX_VERSIONS: usize = 10;

/// The vertex family's state cached in memory (the store reloads it when another process
/// changed it): the E1 index over every stored vertex's current fingerprint, the running
/// distance distributions, and the store's change sequence number they reflect.
#[derive(Debug, Clone, Default)]
pub struct VertexCache {
    /// E1 rows of the stored vertices.
    pub index: E1Index,
    /// Per-embedder running distributions of raw surprise.
    pub normalizer: SurpriseNormalizer,
    /// Highest vertex change sequence number loaded (0 = none).
    pub loaded_seq: i64,
    /// The last write this process made to the cache before its transaction committed:
    /// (sequence number, vertex id). The next refresh checks that the store holds it and
    /// reloads everything if not (the write was rolled back).
    pub unconfirmed: Option<(i64, Uuid)>,
}

/// A stored vertex near the new vector.
#[derive(Debug, Clone, Copy)]
pub struct Neighbour<'a> {
    /// Vertex id.
    pub id: Uuid,
    /// E1 cosine similarity to the new vector, as the index found it.
    pub similarity: f64,
    /// Its current fingerprint.
    pub fingerprint: &'a Fingerprint,
}

/// The store's context for one update.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeltaScContext<'a> {
    /// The vertex's previous versions, oldest first ([`version_history`] without its last
    /// element); only the last [`MAX_VERSIONS`] are used. The request's old fingerprint is added
    /// as the latest version by [`compute`].
    pub previous_versions: &'a [&'a Fingerprint],
    /// Nearest stored vertices by E1 cosine, most similar first, the vertex itself excluded;
    /// the first [`MAX_NEIGHBOURS`] are used, the first [`K_SURPRISE`] enter H.
    pub neighbours: &'a [Neighbour<'a>],
    /// The next-nearest stored vertices (ranks 11..20); the first [`MAX_NEXT_NEAREST`] are used.
    pub next_nearest: &'a [Neighbour<'a>],
}

/// Everything [`compute`] needs.
#[derive(Debug, Clone, Copy)]
pub struct DeltaScInput<'a> {
    /// The fingerprint before the update (the latest version).
    pub old: &'a Fingerprint,
    /// The fingerprint after the update.
    pub new: &'a Fingerprint,
    /// Stored context.
    pub context: DeltaScContext<'a>,
    /// Per-embedder aggregation weights (non-negative, normalised to sum 1); `None` → 1/13 each.
    pub weights: Option<[f64; NUM_EMBEDDERS]>,
    /// λ for the learning score.
    pub lambda: Lambdas,
    /// Requested Johari threshold in [0, 1] (`None` → 0.5), clamped to [0.35, 0.65].
    pub johari_threshold: Option<f64>,
    /// Running distributions that normalise raw surprise.
    pub normalizer: &'a SurpriseNormalizer,
}

/// Why [`compute`] refused its input.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DeltaScError {
    /// A request fingerprint is invalid; `which` is `old_fingerprint` or `new_fingerprint`.
    #[error("{which}: {source}")]
    Fingerprint {
        /// The argument name.
        which: &'static str,
        /// The rule broken.
        source: FingerprintError,
    },
    /// Bad Johari threshold.
    #[error(transparent)]
    JohariThreshold(#[from] JohariThresholdError),
    /// Weights not finite, negative, or all zero.
    #[error("embedder weights: {0}")]
    Weights(String),
}

/// Which context member a diagnostic distance refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextMember {
    /// A stored previous version, by position (0 = oldest used).
    PreviousVersion(usize),
    /// The request's old fingerprint.
    OldFingerprint,
    /// A stored neighbour.
    Neighbour(Uuid),
}

/// One embedder's result.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderOutcome {
    /// Which embedder.
    pub embedder: EmbedderId,
    /// ΔS in [0, 1].
    pub delta_s: f64,
    /// ΔC in [0, 1].
    pub delta_c: f64,
    /// Nearest-context distance before normalisation, in [0, 1].
    pub raw_surprise: f64,
    /// Whether ΔS came from the running distribution (`false`: raw distance, too few samples).
    pub normalised: bool,
    /// The distance used.
    pub method: DistanceMethod,
    /// Quadrant of (ΔS, ΔC).
    pub quadrant: JohariQuadrant,
    /// ΔS·ΔC.
    pub learning_potential: f64,
    /// Coherence components.
    pub coherence: CoherenceParts,
    /// Aggregation weight used (normalised).
    pub weight: f64,
    /// Distances to each member of H, aligned with [`DeltaScOutput::surprise_context`].
    pub context_distances: Vec<f64>,
    /// Distances to the neighbours N, aligned with [`DeltaScOutput::neighbours`].
    pub neighbour_distances: Vec<f64>,
    /// Distances to the next-nearest B, aligned with [`DeltaScOutput::next_nearest`].
    pub next_nearest_distances: Vec<f64>,
}

/// The result of one update.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaScOutput {
    /// One outcome per embedder, index order.
    pub embedders: Vec<EmbedderOutcome>,
    /// Weighted ΔS in [0, 1].
    pub delta_s: f64,
    /// Weighted ΔC in [0, 1].
    pub delta_c: f64,
    /// Aggregate quadrant.
    pub quadrant: JohariQuadrant,
    /// ΔS·ΔC.
    pub utl_learning_potential: f64,
    /// λ_s·ΔS + λ_c·ΔC.
    pub learning_score: f64,
    /// λ used.
    pub lambda: Lambdas,
    /// Johari threshold used (after clamping).
    pub johari_threshold: f64,
    /// The members of H, in the order of each outcome's `context_distances`.
    pub surprise_context: Vec<ContextMember>,
    /// N: (id, E1 similarity).
    pub neighbours: Vec<(Uuid, f64)>,
    /// B: (id, E1 similarity).
    pub next_nearest: Vec<(Uuid, f64)>,
    /// Raw surprises, embedder order: feed them to [`SurpriseNormalizer::observe_all`] when the
    /// update is persisted.
    pub raw_surprises: [f64; NUM_EMBEDDERS],
}

fn normalised_weights(
    weights: Option<[f64; NUM_EMBEDDERS]>,
) -> Result<[f64; NUM_EMBEDDERS], DeltaScError> {
    let Some(w) = weights else {
        return Ok([1.0 / NUM_EMBEDDERS as f64; NUM_EMBEDDERS]);
    };
    if let Some(i) = w.iter().position(|x| !x.is_finite() || *x < 0.0) {
        return Err(DeltaScError::Weights(format!(
            "weight of {} must be finite and >= 0, got {}",
            EmbedderId::ALL[i].name(),
            w[i]
        )));
    }
    let sum: f64 = w.iter().sum();
    if sum <= 0.0 {
        return Err(DeltaScError::Weights("weights sum to 0".to_string()));
    }
    Ok(w.map(|x| x / sum))
}

/// Compute ΔS and ΔC of one update (formulas in the module docs).
///
/// Validates both request fingerprints; context fingerprints are trusted (the store only holds
/// validated ones). Deterministic: same input → same output. Cost: one distance per context
/// member per embedder, ≤ 31 members.
///
/// # Errors
/// [`DeltaScError`] for an invalid fingerprint (naming `old_fingerprint`/`new_fingerprint` and
/// the field), a Johari threshold outside [0, 1], bad weights or bad λ.
pub fn compute(input: &DeltaScInput<'_>) -> Result<DeltaScOutput, DeltaScError> {
    input
        .old
        .validate()
        .map_err(|source| DeltaScError::Fingerprint {
            which: "old_fingerprint",
            source,
        })?;
    input
        .new
        .validate()
        .map_err(|source| DeltaScError::Fingerprint {
            which: "new_fingerprint",
            source,
        })?;
    let johari_threshold = coherence::johari_threshold(input.johari_threshold)?;
    let weights = normalised_weights(input.weights)?;

    let ctx = &input.context;
    let versions =
        &ctx.previous_versions[ctx.previous_versions.len().saturating_sub(MAX_VERSIONS)..];
    let neighbours = &ctx.neighbours[..ctx.neighbours.len().min(MAX_NEIGHBOURS)];
    let next = &ctx.next_nearest[..ctx.next_nearest.len().min(MAX_NEXT_NEAREST)];
    let k = neighbours.len().min(K_SURPRISE);

    let new = PreparedFingerprint::new(input.new);
    let distances_to =
        |fp: &Fingerprint| distance::fingerprint_distances(&new, &PreparedFingerprint::new(fp));
    // Own versions V: stored versions, then the old fingerprint (latest).
    let version_d: Vec<[f64; NUM_EMBEDDERS]> = versions
        .iter()
        .copied()
        .chain(std::iter::once(input.old))
        .map(distances_to)
        .collect();
    let neighbour_d: Vec<[f64; NUM_EMBEDDERS]> = neighbours
        .iter()
        .map(|n| distances_to(n.fingerprint))
        .collect();
    let next_d: Vec<[f64; NUM_EMBEDDERS]> =
        next.iter().map(|n| distances_to(n.fingerprint)).collect();

    let surprise_context: Vec<ContextMember> = (0..versions.len())
        .map(ContextMember::PreviousVersion)
        .chain(std::iter::once(ContextMember::OldFingerprint))
        .chain(
            neighbours[..k]
                .iter()
                .map(|n| ContextMember::Neighbour(n.id)),
        )
        .collect();

    let mut embedders = Vec::with_capacity(NUM_EMBEDDERS);
    let mut raw_surprises = [0.0; NUM_EMBEDDERS];
    for e in EmbedderId::ALL {
        let i = e.index();
        let col = |rows: &[[f64; NUM_EMBEDDERS]]| rows.iter().map(|r| r[i]).collect::<Vec<f64>>();
        let versions_e = col(&version_d);
        let neighbours_e = col(&neighbour_d);
        let next_e = col(&next_d);
        let context_distances: Vec<f64> = versions_e
            .iter()
            .chain(&neighbours_e[..k])
            .copied()
            .collect();
        let raw = surprise::raw_surprise(&context_distances);
        raw_surprises[i] = raw;
        let (delta_s, normalised) = input.normalizer.normalise(e, raw);
        let parts = coherence::coherence(&neighbours_e, &next_e, &versions_e);
        embedders.push(EmbedderOutcome {
            embedder: e,
            delta_s,
            delta_c: parts.delta_c,
            raw_surprise: raw,
            normalised,
            method: DistanceMethod::of(e),
            quadrant: JohariQuadrant::classify(delta_s, parts.delta_c, johari_threshold),
            learning_potential: delta_s * parts.delta_c,
            coherence: parts,
            weight: weights[i],
            context_distances,
            neighbour_distances: neighbours_e,
            next_nearest_distances: next_e,
        });
    }
    let delta_s = embedders
        .iter()
        .map(|o| o.weight * o.delta_s)
        .sum::<f64>()
        .clamp(0.0, 1.0);
    let delta_c = embedders
        .iter()
        .map(|o| o.weight * o.delta_c)
        .sum::<f64>()
        .clamp(0.0, 1.0);
    Ok(DeltaScOutput {
        embedders,
        delta_s,
        delta_c,
        quadrant: JohariQuadrant::classify(delta_s, delta_c, johari_threshold),
        utl_learning_potential: delta_s * delta_c,
        learning_score: input.lambda.learning_score(delta_s, delta_c),
        lambda: input.lambda,
        johari_threshold,
        surprise_context,
        neighbours: neighbours.iter().map(|n| (n.id, n.similarity)).collect(),
        next_nearest: next.iter().map(|n| (n.id, n.similarity)).collect(),
        raw_surprises,
    })
}

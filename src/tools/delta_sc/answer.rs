//! The answer of `gwt_compute_delta_sc` ([`DeltaScAnswer`]) and its parts, built from the
//! service's [`DeltaScOutput`].

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};
use uuid::Uuid;

use crate::service::delta_sc::{
    CoherenceParts, ContextMember, DeltaScOutput, DistanceMethod, EmbedderOutcome, JohariQuadrant,
    delta_c_formula,
};
use crate::service::vocab::NUM_EMBEDDERS;
use crate::tools::meta_learning::LambdaPair;
use crate::tools::wire::{Choice, OneOf, WireUuid};

impl Choice for JohariQuadrant {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.into()
    }
}

impl Choice for DistanceMethod {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        DistanceMethod::name(self)
    }
}

/// A number in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit(pub f64);

impl Serialize for Unit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl JsonSchema for Unit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UnitNumber".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "number", "minimum": 0, "maximum": 1})
    }
}

/// One value per embedder, E1 … E13 in order.
pub type PerEmbedder<T> = [T; NUM_EMBEDDERS];

/// The answer of `gwt_compute_delta_sc`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeltaScAnswer {
    /// Pass it to `record_prediction {prediction_id, actual}` once you know how useful this
    /// update turned out (actual in [0, 1]); the λ weights learn from the difference.
    pub prediction_id: WireUuid,
    /// The vertex, as given.
    pub vertex_id: WireUuid,
    /// Surprise ΔS in [0, 1], the weighted mean over the embedders: 0 = the new version is
    /// already known, 1 = unlike anything stored.
    pub delta_s: Unit,
    /// Coherence ΔC in [0, 1], the weighted mean over the embedders: how well the new version
    /// fits its neighbourhood and its own history.
    pub delta_c: Unit,
    /// ΔS of each embedder.
    pub delta_s_per_embedder: PerEmbedder<Unit>,
    /// ΔC of each embedder.
    pub delta_c_per_embedder: PerEmbedder<Unit>,
    /// Johari quadrant of (ΔS, ΔC) against the threshold θ: open (ΔS ≤ θ, ΔC > θ), hidden
    /// (both ≤ θ), blind (ΔS > θ, ΔC ≤ θ), unknown (both > θ).
    pub johari_quadrant: OneOf<JohariQuadrant>,
    /// The next step the quadrant suggests.
    pub suggested_action: SuggestedAction,
    /// The threshold θ used (the requested one clamped to [0.35, 0.65]).
    #[schemars(range(min = 0.35, max = 0.65))]
    pub johari_threshold: f64,
    /// ΔS·ΔC.
    pub utl_learning_potential: Unit,
    /// L = λ_s·ΔS + λ_c·ΔC with the current λ: the prediction `record_prediction` closes.
    pub learning_score: Unit,
    /// The λ used.
    pub lambda: LambdaPair,
    /// The weight of each embedder in ΔS and ΔC (from the meta-learner's per-embedder
    /// accuracy; equal until it has data), summing to 1.
    pub embedder_weights: PerEmbedder<Unit>,
    /// The result of each embedder.
    pub per_embedder: PerEmbedder<EmbedderResult>,
    /// How each embedder was measured.
    pub methods_used: PerEmbedder<MethodUsed>,
    /// How much stored context the computation saw.
    pub context: ContextCounts,
    /// Whether the new version was stored.
    pub persisted: bool,
    /// Time spent in the tool, in microseconds.
    pub computation_time_us: u64,
    /// Present when `include_diagnostics` was true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,
}

/// What the quadrant suggests doing next: open → `direct_recall` (use the memory as it is),
/// hidden → `get_neighborhood` (look at related memories), blind → `trigger_dream` (consolidate
/// it), unknown → `epistemic_action` (keep it as a hypothesis and verify it). Only
/// `epistemic_action` is a tool of this server.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuggestedAction {
    /// For `open`.
    DirectRecall,
    /// For `hidden`.
    GetNeighborhood,
    /// For `blind`.
    TriggerDream,
    /// For `unknown`.
    EpistemicAction,
}

impl From<JohariQuadrant> for SuggestedAction {
    fn from(q: JohariQuadrant) -> Self {
        match q {
            JohariQuadrant::Open => SuggestedAction::DirectRecall,
            JohariQuadrant::Hidden => SuggestedAction::GetNeighborhood,
            JohariQuadrant::Blind => SuggestedAction::TriggerDream,
            JohariQuadrant::Unknown => SuggestedAction::EpistemicAction,
        }
    }
}

/// One embedder's result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EmbedderResult {
    /// 0 … 12.
    #[schemars(range(min = 0, max = 12))]
    pub embedder_index: usize,
    /// Its name, e.g. `E1_Semantic`.
    pub embedder: &'static str,
    /// Its ΔS.
    pub delta_s: Unit,
    /// Its ΔC.
    pub delta_c: Unit,
    /// ΔS·ΔC.
    pub learning_potential: Unit,
    /// Its quadrant.
    pub johari_quadrant: OneOf<JohariQuadrant>,
    /// The quadrant's suggestion.
    pub suggested_action: SuggestedAction,
}

/// How surprise is normalised.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Normalization {
    /// The share of distances seen so far that are smaller (once 30 are known).
    RunningCdf,
    /// The distance itself (too few seen yet).
    RawDistance,
}

/// How one embedder was measured.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MethodUsed {
    /// Its name.
    pub embedder: &'static str,
    /// The distance to the nearest context member.
    pub distance: OneOf<DistanceMethod>,
    /// How the distance became ΔS.
    pub normalization: Normalization,
    /// The ΔC formula.
    pub coherence: String,
}

/// How much stored context the computation saw.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextCounts {
    /// Own versions compared against, the request's old fingerprint included.
    pub previous_versions: usize,
    /// Nearest stored vertices by E1 cosine (at most 10; the first 5 enter the surprise
    /// context).
    pub neighbours: usize,
    /// The next stored vertices (ranks 11–20), the other cluster of the fit.
    pub next_nearest: usize,
    /// Vertices in the store before this call.
    pub stored_vertices: usize,
}

/// The numbers behind the result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Diagnostics {
    /// The members of the surprise context, in the order of each embedder's
    /// `context_distances`: `version:K` (a stored version, 0 = oldest used),
    /// `old_fingerprint`, `neighbour:ID`.
    pub surprise_context: Vec<String>,
    /// Distances and coherence parts of each embedder.
    pub per_embedder: PerEmbedder<EmbedderDiagnostics>,
    /// The neighbours, most similar first.
    pub neighbours: Vec<IdSimilarity>,
    /// The next-nearest vertices.
    pub next_nearest: Vec<IdSimilarity>,
}

/// A stored vertex and its E1 cosine similarity to the new version.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IdSimilarity {
    /// Vertex id.
    pub vertex_id: WireUuid,
    /// Cosine similarity in [−1, 1].
    pub similarity: f64,
}

/// One embedder's distances and coherence parts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EmbedderDiagnostics {
    /// Its name.
    pub embedder: &'static str,
    /// Distance to the nearest context member, before normalisation.
    pub raw_surprise: f64,
    /// Distances to the surprise context, aligned with `surprise_context`.
    pub context_distances: Vec<f64>,
    /// Distances to the neighbours.
    pub neighbour_distances: Vec<f64>,
    /// Distances to the next-nearest vertices.
    pub next_nearest_distances: Vec<f64>,
    /// Share of neighbours above the edge similarity.
    pub connectivity: f64,
    /// (silhouette + 1)/2.
    pub cluster_fit: f64,
    /// Mean similarity to the own versions.
    pub consistency: f64,
    /// The silhouette; null without neighbours or next-nearest vertices.
    pub silhouette: Option<SilhouetteParts>,
}

/// Mean distances to the two clusters and the silhouette.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SilhouetteParts {
    /// Mean distance to the neighbours.
    pub a: f64,
    /// Mean distance to the next-nearest vertices.
    pub b: f64,
    /// (b − a)/max(a, b), in [−1, 1].
    pub s: f64,
}

/// What the answer says beyond the service's output.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    /// The prediction opened for this update.
    pub prediction_id: Uuid,
    /// The vertex.
    pub vertex_id: Uuid,
    /// Whether the update was stored.
    pub persisted: bool,
    /// Vertices stored before the call.
    pub stored_vertices: usize,
    /// Whether to add the diagnostics.
    pub include_diagnostics: bool,
    /// Time spent, µs.
    pub computation_time_us: u64,
}

fn per_embedder<T>(out: &DeltaScOutput, f: impl Fn(&EmbedderOutcome) -> T) -> PerEmbedder<T> {
    std::array::from_fn(|i| f(&out.embedders[i]))
}

impl DeltaScAnswer {
    /// Shape the answer from the service's output.
    pub fn new(out: &DeltaScOutput, reply: Reply) -> Self {
        let formula = delta_c_formula();
        let previous_versions = out
            .surprise_context
            .iter()
            .filter(|c| !matches!(c, ContextMember::Neighbour(_)))
            .count();
        DeltaScAnswer {
            prediction_id: WireUuid(reply.prediction_id),
            vertex_id: WireUuid(reply.vertex_id),
            delta_s: Unit(out.delta_s),
            delta_c: Unit(out.delta_c),
            delta_s_per_embedder: per_embedder(out, |o| Unit(o.delta_s)),
            delta_c_per_embedder: per_embedder(out, |o| Unit(o.delta_c)),
            johari_quadrant: OneOf(out.quadrant),
            suggested_action: out.quadrant.into(),
            johari_threshold: out.johari_threshold,
            utl_learning_potential: Unit(out.utl_learning_potential),
            learning_score: Unit(out.learning_score),
            lambda: out.lambda.into(),
            embedder_weights: per_embedder(out, |o| Unit(o.weight)),
            per_embedder: per_embedder(out, |o| EmbedderResult {
                embedder_index: o.embedder.index(),
                embedder: o.embedder.name(),
                delta_s: Unit(o.delta_s),
                delta_c: Unit(o.delta_c),
                learning_potential: Unit(o.learning_potential),
                johari_quadrant: OneOf(o.quadrant),
                suggested_action: o.quadrant.into(),
            }),
            methods_used: per_embedder(out, |o| MethodUsed {
                embedder: o.embedder.name(),
                distance: OneOf(o.method),
                normalization: if o.normalised {
                    Normalization::RunningCdf
                } else {
                    Normalization::RawDistance
                },
                coherence: formula.clone(),
            }),
            context: ContextCounts {
                previous_versions,
                neighbours: out.neighbours.len(),
                next_nearest: out.next_nearest.len(),
                stored_vertices: reply.stored_vertices,
            },
            persisted: reply.persisted,
            computation_time_us: reply.computation_time_us,
            diagnostics: reply.include_diagnostics.then(|| Diagnostics::new(out)),
        }
    }
}

fn id_similarity(v: &[(Uuid, f64)]) -> Vec<IdSimilarity> {
    v.iter()
        .map(|&(id, similarity)| IdSimilarity {
            vertex_id: WireUuid(id),
            similarity,
        })
        .collect()
}

impl Diagnostics {
    fn new(out: &DeltaScOutput) -> Self {
        let surprise_context = out
            .surprise_context
            .iter()
            .map(|c| match c {
                ContextMember::PreviousVersion(i) => format!("version:{i}"),
                ContextMember::OldFingerprint => "old_fingerprint".to_string(),
                ContextMember::Neighbour(id) => format!("neighbour:{id}"),
            })
            .collect();
        Diagnostics {
            surprise_context,
            per_embedder: per_embedder(out, |o| {
                let CoherenceParts {
                    connectivity,
                    cluster_fit,
                    consistency,
                    silhouette,
                    ..
                } = o.coherence;
                EmbedderDiagnostics {
                    embedder: o.embedder.name(),
                    raw_surprise: o.raw_surprise,
                    context_distances: o.context_distances.clone(),
                    neighbour_distances: o.neighbour_distances.clone(),
                    next_nearest_distances: o.next_nearest_distances.clone(),
                    connectivity,
                    cluster_fit,
                    consistency,
                    silhouette: silhouette.map(|s| SilhouetteParts {
                        a: s.a,
                        b: s.b,
                        s: s.s,
                    }),
                }
            }),
            neighbours: id_similarity(&out.neighbours),
            next_nearest: id_similarity(&out.next_nearest),
        }
    }
}

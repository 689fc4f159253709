//! The utl family: `gwt_compute_delta_sc` — how surprising (ΔS) and how coherent (ΔC) an update
//! of a stored memory is, over 13 embedders, with a prediction that `record_prediction` can
//! close later.
//!
//! Contract: SPEC §4 utl and seeds/compute-delta-sc.md. The decision is the service's update
//! plan (`service::delta_sc::plan_update`); persistence is `store::delta_sc` and
//! `store::meta::open_prediction`. Here: the arguments ([`ComputeInput`], with the fingerprint
//! reader in [`fingerprint`] and its schema in [`schema`]), the handler, and the answer
//! ([`answer`]).

pub mod answer;
pub mod fast;
pub mod fingerprint;
pub mod schema;

use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::wire::{self, Num, UnitInterval, Validate, WireUuid};
use super::{
    Annotations, Answer, Handler, Tool, ToolDef, ToolError, ToolResult, WriteCtx, WriteTool,
};
use crate::service::CachedFamily;
use crate::service::delta_sc::coherence::JOHARI_DEFAULT;
use crate::service::delta_sc::{DeltaScError, EmbedderKind, Learner, UpdateRequest, plan_update};
use crate::service::vocab::EmbedderId;
use crate::store::delta_sc as vertex_store;
use crate::store::meta::{self as meta_store, OpenPrediction};
pub use answer::DeltaScAnswer;
use answer::Reply;
pub use fast::parse_fast;
pub use fingerprint::WireFingerprint;
use schema::fingerprint_description;

/// The tools of this family, in `tools/list` order. The registry entry is the usual
/// `Tool::write` one with its own handler, `handle`, which reads the arguments by
/// [`parse_fast`].
pub const TOOLS: &[Tool] = &[Tool {
    handler: Handler::Write(handle, ComputeDeltaSc::FAMILIES),
    ..Tool::write::<ComputeDeltaSc>()
}];

/// Whether `include_diagnostics` is on when left out.
pub const DEFAULT_INCLUDE_DIAGNOSTICS: bool = false;
/// Whether `persist` is on when left out.
pub const DEFAULT_PERSIST: bool = true;

/// `gwt_compute_delta_sc`.
pub struct ComputeDeltaSc;

/// Arguments of `gwt_compute_delta_sc`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComputeInput {
    /// The memory's id (a UUID you keep for it).
    pub vertex_id: WireUuid,
    /// The memory's 13 embedding vectors before the update; the schema's description is
    /// `fingerprint_description("before")`, which lists the fields and rules.
    #[schemars(description = fingerprint_description("before"))]
    pub old_fingerprint: WireFingerprint,
    /// The memory's 13 embedding vectors after the update, in the same form.
    #[schemars(description = "The 13 vectors after the update, as old_fingerprint.")]
    pub new_fingerprint: WireFingerprint,
    /// Leave out unless you tune the quadrants (clamped to [0.35, 0.65]).
    #[schemars(extend("default" = JOHARI_DEFAULT))]
    pub johari_threshold: Option<Num<UnitInterval>>,
    /// Add the distances and neighbours behind the result.
    #[schemars(extend("default" = DEFAULT_INCLUDE_DIAGNOSTICS))]
    pub include_diagnostics: Option<bool>,
    /// false: only compute.
    #[schemars(extend("default" = DEFAULT_PERSIST))]
    pub persist: Option<bool>,
}

impl Validate for ComputeInput {}

impl ComputeInput {
    /// The update as the service plans it.
    pub fn request(&self) -> UpdateRequest<'_> {
        UpdateRequest {
            vertex_id: self.vertex_id.0,
            old: &self.old_fingerprint.0,
            new: &self.new_fingerprint.0,
            johari_threshold: self.johari_threshold.map(Num::get),
            persist: self.persist.unwrap_or(DEFAULT_PERSIST),
        }
    }
}

impl ToolDef for ComputeDeltaSc {
    const NAME: &'static str = "gwt_compute_delta_sc";
    const ALIASES: &'static [&'static str] = &["gwt/compute_delta_sc", "compute_delta_sc"];
    const TITLE: &'static str = "Score a memory update: surprise (ΔS) and coherence (ΔC)";
    fn description() -> String {
        String::from(
            "Score an update of a stored memory, for agents whose pipeline produces all 13 \
             embedding vectors of a memory (otherwise use the lesson and belief tools): ΔS \
             (surprise) and ΔC (coherence), 0-1, per embedder and combined, and the learning \
             score L = λ_s·ΔS + λ_c·ΔC. Then call record_prediction {prediction_id, actual} \
             once you know how useful the update was.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = ComputeInput;
    type Output = DeltaScAnswer;

    fn example() -> Value {
        json!({
            "vertex_id": "6f1c1f0e-3a55-4c1a-9d7e-0b8e3f2a9c11",
            "old_fingerprint": compact_fingerprint_json(5),
            "new_fingerprint": compact_fingerprint_json(3),
            "persist": false
        })
    }
}

impl WriteTool for ComputeDeltaSc {
    const FAMILIES: &'static [CachedFamily] = &[CachedFamily::DeltaSc];

    fn run(
        ctx: &mut WriteCtx<'_>,
        input: ComputeInput,
    ) -> Result<Answer<DeltaScAnswer>, ToolError> {
        let started = Instant::now();
        let request = input.request();
        let nearby = ctx.svc.delta_sc.nearby(request.new, request.vertex_id);
        let stored = vertex_store::load_context(ctx.db, request.vertex_id, &nearby)?;
        let learner = Learner {
            lambdas: ctx.svc.meta.lambdas,
            weights: ctx.svc.meta.embedder_weights(),
        };
        let plan =
            plan_update(&request, &ctx.svc.delta_sc, &stored, learner).map_err(|e| match e {
                DeltaScError::Weights(_) => ToolError::Internal(e.to_string()),
                _ => ToolError::invalid(e.to_string()),
            })?;
        let prediction_id = Uuid::new_v4();
        meta_store::open_prediction(
            ctx.db,
            &OpenPrediction {
                id: prediction_id,
                created: ctx.now,
                delta_s: plan.result.delta_s,
                delta_c: plan.result.delta_c,
                learning_score: plan.result.learning_score,
                domain: None,
            },
        )?;
        let persisted = plan.write.is_some();
        if let Some(write) = plan.write {
            let seq = vertex_store::persist(ctx.db, &write, ctx.now)?;
            ctx.svc
                .delta_sc
                .apply(write, seq)
                .map_err(|e| ToolError::Internal(e.to_string()))?;
        }
        let reply = Reply {
            prediction_id,
            vertex_id: request.vertex_id,
            persisted,
            stored_vertices: plan.stored_vertices,
            include_diagnostics: input
                .include_diagnostics
                .unwrap_or(DEFAULT_INCLUDE_DIAGNOSTICS),
            computation_time_us: started.elapsed().as_micros() as u64,
        };
        Ok(Answer::ok(DeltaScAnswer::new(&plan.result, reply)))
    }
}

/// `Tool::write`'s handler with [`parse_fast`] in place of `wire::parse` (same verdicts and
/// messages, a tenth of the time on large fingerprints).
fn handle(ctx: &mut WriteCtx<'_>, args: &Value) -> ToolResult {
    let input = parse_fast(args)?;
    ComputeDeltaSc::run(ctx, input).and_then(crate::tools::encode)
}

/// The smallest valid full fingerprint in JSON: ±1 integers (every `flip`-th value −1), one E12
/// token, two sparse terms. About 15 KB, so the registry keeps it out of `tools/list`.
fn compact_fingerprint_json(flip: usize) -> Value {
    let signs =
        |n: usize| -> Vec<i8> { (0..n).map(|i| if i % flip == 0 { -1 } else { 1 }).collect() };
    let mut m = Map::new();
    for e in EmbedderId::ALL {
        let v = match e.kind() {
            EmbedderKind::Dense { dim } => json!(signs(dim)),
            EmbedderKind::Sparse { .. } => json!({"indices": [7, 20000], "values": [1, flip]}),
            EmbedderKind::Tokens { dim } => json!([signs(dim)]),
        };
        m.insert(e.field().to_string(), v);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests;

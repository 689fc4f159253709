//! The ΔS/ΔC update plan: one memory update, decided in one pure function.
//!
//! [`plan_update`] takes the request, the cached state ([`VertexCache`]) and the stored context
//! (the vertex's history and its nearest stored vertices, [`StoredContext`]) and returns an
//! [`UpdatePlan`]: the computed result, the versions to persist under the one version-history
//! rule ([`version_history`]), and the write whose cache side [`VertexCache::apply`] applies
//! once the store has persisted it. Callers gather the context, persist what the plan says and
//! then apply it; nothing here does I/O.
//!
//! ```text
//! tool:  nearby = cache.nearby(new, id)          (E1 k-NN over the cached index)
//!        ctx    = store: the vertex + the fingerprints of `nearby`
//!        plan   = plan_update(request, cache, ctx, λ, weights)
//!        store: open the prediction; persist plan.write → seq
//!        cache.apply(plan.write, seq)
//! ```

use uuid::Uuid;

use super::{
    DeltaScContext, DeltaScError, DeltaScInput, DeltaScOutput, Fingerprint, Hit, IndexError,
    MAX_NEIGHBOURS, MAX_NEXT_NEAREST, MAX_VERSIONS, NUM_EMBEDDERS, Neighbour, SurpriseNormalizer,
    VertexCache, compute,
};
use crate::service::vocab::Lambdas;

/// A stored vertex: its current fingerprint and its previous versions (oldest first, at most
/// [`MAX_VERSIONS`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVertex {
    /// The current fingerprint.
    pub current: Fingerprint,
    /// Earlier versions, oldest first.
    pub versions: Vec<Fingerprint>,
}

/// A stored vertex near the new vector, with its current fingerprint loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct NearbyVertex {
    /// Vertex id.
    pub id: Uuid,
    /// E1 cosine similarity to the new vector, as the index found it, in [−1, 1].
    pub similarity: f64,
    /// Its current fingerprint.
    pub fingerprint: Fingerprint,
}

/// What the store holds for one update: the vertex itself (`None` when never stored) and the
/// stored vertices nearest to the new vector, most similar first (the hits of
/// [`VertexCache::nearby`], the vertex itself excluded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredContext {
    /// The vertex being updated, if stored.
    pub vertex: Option<StoredVertex>,
    /// Up to [`MAX_NEIGHBOURS`] + [`MAX_NEXT_NEAREST`] nearest stored vertices.
    pub nearby: Vec<NearbyVertex>,
}

/// One update as requested.
#[derive(Debug, Clone, Copy)]
pub struct UpdateRequest<'a> {
    /// The vertex.
    pub vertex_id: Uuid,
    /// Its fingerprint before the update (validated).
    pub old: &'a Fingerprint,
    /// Its fingerprint after the update (validated).
    pub new: &'a Fingerprint,
    /// Requested Johari threshold in [0, 1]; `None` → 0.5. Clamped to [0.35, 0.65].
    pub johari_threshold: Option<f64>,
    /// Whether the update is stored (`false`: compute only).
    pub persist: bool,
}

/// What the meta-learner contributes: λ for the learning score and the per-embedder weights
/// of the aggregates (non-negative; normalised to sum 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Learner {
    /// λ_s, λ_c.
    pub lambdas: Lambdas,
    /// Aggregation weight per embedder, index order.
    pub weights: [f64; NUM_EMBEDDERS],
}

/// The plan of one update.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatePlan<'a> {
    /// ΔS, ΔC, quadrants, learning score and diagnostics.
    pub result: DeltaScOutput,
    /// Stored vertices before this update (the cached index's size).
    pub stored_vertices: usize,
    /// What to persist, `None` when the request said `persist: false`.
    pub write: Option<VertexWrite<'a>>,
}

/// One persisted update: what the store writes, and (through [`VertexCache::apply`]) what the
/// cache takes once it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct VertexWrite<'a> {
    /// The vertex.
    pub vertex_id: Uuid,
    /// Fingerprints that join the vertex's versions, oldest first (see [`version_history`]).
    pub append: Vec<&'a Fingerprint>,
    /// How many versions the store keeps: the newest [`MAX_VERSIONS`].
    pub keep_versions: usize,
    /// The new current fingerprint (its E1 row goes into the cached index).
    pub current: &'a Fingerprint,
    /// The running distributions after this update's raw surprises (persisted and cached).
    pub normalizer: SurpriseNormalizer,
}

/// The one version-history rule: the vertex's history after an update from `old`, oldest
/// first, whose last element is always `old`.
///
/// ```text
/// history = stored versions
///         ++ [stored current]   when it differs from old (another writer moved it on)
///         ++ [old]              unless the history already ends with it
/// ```
///
/// The update's context uses every element but the last as the previous versions (the old
/// fingerprint itself enters as the latest version); the store appends the elements after the
/// stored versions and keeps the newest [`MAX_VERSIONS`].
pub fn version_history<'a>(
    stored: Option<&'a StoredVertex>,
    old: &'a Fingerprint,
) -> Vec<&'a Fingerprint> {
    let mut history: Vec<&Fingerprint> = Vec::with_capacity(MAX_VERSIONS + 2);
    if let Some(s) = stored {
        history.extend(&s.versions);
        if s.current != *old {
            history.push(&s.current);
        }
    }
    if history.last() != Some(&old) {
        history.push(old);
    }
    history
}

impl VertexCache {
    /// The stored vertices nearest to `new` by E1 cosine, most similar first, `vertex_id`
    /// excluded: at most [`MAX_NEIGHBOURS`] + [`MAX_NEXT_NEAREST`], whose fingerprints the
    /// caller loads into a [`StoredContext`].
    pub fn nearby(&self, new: &Fingerprint, vertex_id: Uuid) -> Vec<Hit> {
        self.index.nearest(
            &new.e1_semantic,
            MAX_NEIGHBOURS + MAX_NEXT_NEAREST,
            Some(vertex_id),
        )
    }

    /// Take a persisted write into the cache: the new current E1 row into the index, the
    /// running distributions, and the store's sequence number `seq` of the vertex row. The
    /// write stays unconfirmed until a later refresh sees it committed (see [`Self::record`]).
    ///
    /// # Errors
    /// [`IndexError`] when the E1 row cannot be indexed (never for a validated fingerprint);
    /// the cache is then unchanged and the caller rolls the write back.
    pub fn apply(&mut self, write: VertexWrite<'_>, seq: i64) -> Result<(), IndexError> {
        self.record(write.vertex_id, &write.current.e1_semantic, seq)?;
        self.normalizer = write.normalizer;
        Ok(())
    }

    /// Put vertex `id`'s E1 row, stored under sequence number `seq`, into the index, and
    /// remember the write as unconfirmed: if its transaction is rolled back, the next refresh
    /// finds no row `(seq, id)` and reloads everything.
    ///
    /// # Errors
    /// [`IndexError`] for a zero or non-finite row; the cache is then unchanged.
    pub fn record(&mut self, id: Uuid, e1: &[f32], seq: i64) -> Result<(), IndexError> {
        self.index.upsert(id, e1)?;
        self.loaded_seq = seq;
        self.unconfirmed = Some((seq, id));
        Ok(())
    }
}

/// Plan one update (the formulas are in the module docs of `delta_sc`).
///
/// The previous versions come from [`version_history`]; the first [`MAX_NEIGHBOURS`] nearby
/// vertices are the neighbours N, the rest the next-nearest B. With `persist`, the write holds
/// the fingerprints the history appends and the running distributions after this update.
///
/// # Errors
/// [`DeltaScError`] as [`compute`]: an invalid fingerprint, a Johari threshold outside [0, 1],
/// or bad weights.
pub fn plan_update<'a>(
    request: &UpdateRequest<'a>,
    cache: &VertexCache,
    stored: &'a StoredContext,
    learner: Learner,
) -> Result<UpdatePlan<'a>, DeltaScError> {
    let history = version_history(stored.vertex.as_ref(), request.old);
    let previous = &history[..history.len() - 1];
    let nearby: Vec<Neighbour<'_>> = stored
        .nearby
        .iter()
        .map(|n| Neighbour {
            id: n.id,
            similarity: n.similarity,
            fingerprint: &n.fingerprint,
        })
        .collect();
    let split = nearby.len().min(MAX_NEIGHBOURS);
    let result = compute(&DeltaScInput {
        old: request.old,
        new: request.new,
        context: DeltaScContext {
            previous_versions: previous,
            neighbours: &nearby[..split],
            next_nearest: &nearby[split..],
        },
        weights: Some(learner.weights),
        lambda: learner.lambdas,
        johari_threshold: request.johari_threshold,
        normalizer: &cache.normalizer,
    })?;
    let write = request.persist.then(|| {
        let stored_versions = stored.vertex.as_ref().map_or(0, |v| v.versions.len());
        let mut normalizer = cache.normalizer.clone();
        normalizer.observe_all(&result.raw_surprises);
        VertexWrite {
            vertex_id: request.vertex_id,
            append: history[stored_versions..].to_vec(),
            keep_versions: MAX_VERSIONS,
            current: request.new,
            normalizer,
        }
    });
    Ok(UpdatePlan {
        result,
        stored_vertices: cache.index.len(),
        write,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::delta_sc::ContextMember;
    use crate::service::delta_sc::test_support::{near, random_fingerprint};

    const LEARNER: Learner = Learner {
        lambdas: Lambdas::pair(0.7, 0.3),
        weights: [1.0; NUM_EMBEDDERS],
    };

    fn stored(current: &Fingerprint, versions: &[&Fingerprint]) -> StoredVertex {
        StoredVertex {
            current: current.clone(),
            versions: versions.iter().map(|f| (*f).clone()).collect(),
        }
    }

    #[test]
    fn the_history_rule_covers_new_moved_on_and_repeated_updates() {
        let f: Vec<Fingerprint> = (0..4).map(|k| random_fingerprint(100 + k, 2)).collect();
        let (a, b, c, d) = (&f[0], &f[1], &f[2], &f[3]);
        // (stored, old) → history.
        let cases: Vec<(Option<StoredVertex>, &Fingerprint, Vec<&Fingerprint>)> = vec![
            // Never stored: the old fingerprint is the only version.
            (None, a, vec![a]),
            // The usual update: versions [a], current b, old b.
            (Some(stored(b, &[a])), b, vec![a, b]),
            // Another writer moved the vertex on to c; the client still sends b.
            (Some(stored(c, &[a])), b, vec![a, c, b]),
            // The same update again: current b, old a = the last version.
            (Some(stored(b, &[a])), a, vec![a, b, a]),
            // After an identical update (versions end with the current): no repeat.
            (Some(stored(d, &[a, d])), d, vec![a, d]),
        ];
        for (k, (s, old, want)) in cases.iter().enumerate() {
            let got = version_history(s.as_ref(), old);
            assert_eq!(got, *want, "case {k}");
            assert_eq!(
                got.last(),
                Some(old),
                "case {k}: the old fingerprint is last"
            );
        }
    }

    #[test]
    fn the_plan_appends_what_the_history_adds_and_keeps_the_cache_untouched() {
        let base = random_fingerprint(7, 2);
        let (v0, current, old, new) = (
            near(&base, 0.1, 1),
            near(&base, 0.1, 2),
            near(&base, 0.1, 3),
            near(&base, 0.1, 4),
        );
        let ctx = StoredContext {
            vertex: Some(stored(&current, &[&v0])),
            nearby: vec![],
        };
        let cache = VertexCache::default();
        let request = UpdateRequest {
            vertex_id: Uuid::from_u128(1),
            old: &old,
            new: &new,
            johari_threshold: None,
            persist: true,
        };
        let plan = plan_update(&request, &cache, &ctx, LEARNER).unwrap();
        // Context: the stored version, the moved-on current, then the old fingerprint.
        assert_eq!(
            plan.result.surprise_context,
            vec![
                ContextMember::PreviousVersion(0),
                ContextMember::PreviousVersion(1),
                ContextMember::OldFingerprint
            ]
        );
        let write = plan.write.unwrap();
        assert_eq!(write.append, vec![&current, &old]);
        assert_eq!((write.keep_versions, write.current), (MAX_VERSIONS, &new));
        assert_eq!(
            write
                .normalizer
                .histogram(crate::service::vocab::EmbedderId::Code)
                .total(),
            1
        );
        assert_eq!(plan.stored_vertices, 0);
        // Planning changed nothing; applying the write does.
        assert_eq!(cache.normalizer, SurpriseNormalizer::new());
        let mut cache = cache;
        cache.apply(write, 5).unwrap();
        assert!(cache.index.contains(Uuid::from_u128(1)));
        assert_eq!(
            (cache.loaded_seq, cache.unconfirmed),
            (5, Some((5, Uuid::from_u128(1))))
        );
        // persist: false plans no write.
        let dry = UpdateRequest {
            persist: false,
            ..request
        };
        assert!(
            plan_update(&dry, &cache, &ctx, LEARNER)
                .unwrap()
                .write
                .is_none()
        );
    }
}

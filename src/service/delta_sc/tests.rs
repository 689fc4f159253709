//! Property tests of `compute` (issue 5 "Done when") and its aggregates.

use uuid::Uuid;

use super::test_support::{interpolate, near, orthogonal_target, random_fingerprint};
use super::*;

const TOL: f64 = 1e-12;
const LAMBDA: Lambdas = Lambdas::pair(0.7, 0.3);

fn input<'a>(
    old: &'a Fingerprint,
    new: &'a Fingerprint,
    context: DeltaScContext<'a>,
    normalizer: &'a SurpriseNormalizer,
) -> DeltaScInput<'a> {
    DeltaScInput {
        old,
        new,
        context,
        weights: None,
        lambda: LAMBDA,
        johari_threshold: None,
        normalizer,
    }
}

/// A normaliser holding 40 samples per embedder spread over [0, 1].
fn trained_normalizer() -> SurpriseNormalizer {
    let mut n = SurpriseNormalizer::new();
    for i in 0..40 {
        n.observe_all(&[f64::from(i) / 40.0; NUM_EMBEDDERS]);
    }
    n
}

#[test]
fn identical_old_and_new_with_empty_store_gives_zero_surprise() {
    let fp = random_fingerprint(10, 32);
    for normalizer in [SurpriseNormalizer::new(), trained_normalizer()] {
        let out = compute(&input(&fp, &fp, DeltaScContext::default(), &normalizer)).unwrap();
        for o in &out.embedders {
            assert_eq!(o.delta_s, 0.0, "{}", o.embedder.name());
            assert_eq!(o.raw_surprise, 0.0);
            // Consistency with the only version (itself) is 1; no neighbours: conn 0, fit 0.5.
            assert!((o.delta_c - (0.4 * 0.0 + 0.4 * 0.5 + 0.2 * 1.0)).abs() < TOL);
        }
        assert_eq!(out.delta_s, 0.0);
        assert_eq!(out.quadrant, JohariQuadrant::Hidden);
    }
}

#[test]
fn surprise_is_in_unit_interval_and_non_decreasing_moving_away() {
    let old = random_fingerprint(20, 8);
    let target = orthogonal_target(&old, 21);
    for normalizer in [SurpriseNormalizer::new(), trained_normalizer()] {
        let mut previous = [0.0f64; NUM_EMBEDDERS];
        for step in 0..=10 {
            let t = step as f32 / 10.0;
            let new = interpolate(&old, &target, t);
            let out = compute(&input(&old, &new, DeltaScContext::default(), &normalizer)).unwrap();
            for o in &out.embedders {
                let i = o.embedder.index();
                assert!((0.0..=1.0).contains(&o.delta_s));
                assert!(
                    o.delta_s >= previous[i],
                    "{} at t = {t}: {} < {}",
                    o.embedder.name(),
                    o.delta_s,
                    previous[i]
                );
                previous[i] = o.delta_s;
            }
            assert!((0.0..=1.0).contains(&out.delta_s));
        }
        // At t = 1 every cosine embedder is orthogonal to old: raw distance 1.
        assert_eq!(previous[EmbedderId::Semantic.index()], 1.0);
    }
}

/// The stored neighbourhood of `query` from an index over `store`, split like the tool does.
fn neighbourhood<'a>(
    store: &'a [(Uuid, Fingerprint)],
    index: &E1Index,
    query: &Fingerprint,
) -> (Vec<Neighbour<'a>>, Vec<Neighbour<'a>>) {
    let hits = index.nearest(&query.e1_semantic, MAX_NEIGHBOURS + MAX_NEXT_NEAREST, None);
    let as_neighbour = |h: &Hit| Neighbour {
        id: h.id,
        similarity: h.similarity,
        fingerprint: &store.iter().find(|(id, _)| *id == h.id).unwrap().1,
    };
    let split = hits.len().min(MAX_NEIGHBOURS);
    (
        hits[..split].iter().map(as_neighbour).collect(),
        hits[split..].iter().map(as_neighbour).collect(),
    )
}

/// Ten vertices near centre P and ten near centre Q.
fn clustered_store() -> (Fingerprint, Vec<(Uuid, Fingerprint)>) {
    let p = random_fingerprint(100, 8);
    let q = random_fingerprint(200, 8);
    let mut store = Vec::new();
    for i in 0..10u64 {
        store.push((Uuid::from_u128(u128::from(i) + 1), near(&p, 0.2, 300 + i)));
        store.push((Uuid::from_u128(u128::from(i) + 101), near(&q, 0.2, 400 + i)));
    }
    (p, store)
}

fn index_of(store: &[(Uuid, Fingerprint)]) -> E1Index {
    let mut index = E1Index::new();
    for (id, fp) in store {
        index.upsert(*id, &fp.e1_semantic).unwrap();
    }
    index
}

#[test]
fn vertex_inside_tight_cluster_is_more_coherent_than_far_vertex() {
    let (p, store) = clustered_store();
    let index = index_of(&store);
    let normalizer = SurpriseNormalizer::new();
    let inside = near(&p, 0.2, 999);
    let far = random_fingerprint(555, 8);
    let run = |fp: &Fingerprint| {
        let (n, b) = neighbourhood(&store, &index, fp);
        let ctx = DeltaScContext {
            previous_versions: &[],
            neighbours: &n,
            next_nearest: &b,
        };
        compute(&input(fp, fp, ctx, &normalizer)).unwrap()
    };
    let (a, f) = (run(&inside), run(&far));
    assert!(a.delta_c > f.delta_c, "{} vs {}", a.delta_c, f.delta_c);
    // Inside: every neighbour of the dense embedders connected, silhouette clearly positive.
    let e1 = &a.embedders[0];
    assert_eq!(e1.coherence.connectivity, 1.0);
    assert!(e1.coherence.silhouette.unwrap().s > 0.5);
    // Far: no neighbour connected, silhouette near 0 (both clusters equally far).
    assert_eq!(f.embedders[0].coherence.connectivity, 0.0);
    assert!((f.embedders[0].coherence.cluster_fit - 0.5).abs() < 0.05);
    // All ten of P's vertices are the neighbours of `inside`.
    assert!(a.neighbours.iter().all(|(id, _)| id.as_u128() <= 10));
}

#[test]
fn same_store_and_input_give_same_output() {
    let (p, store) = clustered_store();
    let mut reversed = store.clone();
    reversed.reverse();
    let normalizer = trained_normalizer();
    let old = near(&p, 0.2, 1);
    let new = near(&p, 0.2, 2);
    let (v3, v4) = (near(&p, 0.2, 3), near(&p, 0.2, 4));
    let versions = vec![&v3, &v4];
    let run = |s: &[(Uuid, Fingerprint)]| {
        let index = index_of(s);
        let (n, b) = neighbourhood(s, &index, &new);
        let ctx = DeltaScContext {
            previous_versions: &versions,
            neighbours: &n,
            next_nearest: &b,
        };
        compute(&input(&old, &new, ctx, &normalizer)).unwrap()
    };
    let first = run(&store);
    assert_eq!(first, run(&store));
    assert_eq!(first, run(&reversed));
    // H = 2 versions + old + 5 neighbours.
    assert_eq!(first.surprise_context.len(), 8);
    assert_eq!(first.embedders[3].context_distances.len(), 8);
}

#[test]
fn sparse_indices_above_1024_change_the_result() {
    let old = random_fingerprint(30, 4);
    let new_a = old.clone();
    let mut new_b = old.clone();
    // Same terms below 1024; b adds weight on terms 20000 and 30521.
    for s in [&mut new_b.e6_sparse, &mut new_b.e13_splade] {
        let mut pairs: Vec<(u16, f32)> = s
            .indices
            .iter()
            .copied()
            .zip(s.values.iter().copied())
            .collect();
        pairs.retain(|p| p.0 != 20000 && p.0 != 30521);
        pairs.push((20000, 5.0));
        pairs.push((30521, 5.0));
        pairs.sort_by_key(|p| p.0);
        s.indices = pairs.iter().map(|p| p.0).collect();
        s.values = pairs.iter().map(|p| p.1).collect();
    }
    let normalizer = SurpriseNormalizer::new();
    let a = compute(&input(&old, &new_a, DeltaScContext::default(), &normalizer)).unwrap();
    let b = compute(&input(&old, &new_b, DeltaScContext::default(), &normalizer)).unwrap();
    for e in [EmbedderId::SparseLexical, EmbedderId::Splade] {
        assert_eq!(a.embedders[e.index()].delta_s, 0.0);
        assert!(b.embedders[e.index()].delta_s > 0.1, "{}", e.name());
    }
    assert!(b.delta_s > a.delta_s);
}

#[test]
fn random_hdc_vectors_are_maximally_surprising() {
    let old = random_fingerprint(40, 4);
    let mut new = old.clone();
    new.e9_hdc = random_fingerprint(41, 4).e9_hdc;
    let out = compute(&input(
        &old,
        &new,
        DeltaScContext::default(),
        &SurpriseNormalizer::new(),
    ))
    .unwrap();
    assert!(out.embedders[EmbedderId::Hdc.index()].delta_s > 0.875);
}

#[test]
fn aggregates_weights_lambda_and_quadrants() {
    let old = random_fingerprint(50, 4);
    let new = near(&old, 0.5, 51);
    let normalizer = SurpriseNormalizer::new();
    let mut weights = [0.0; NUM_EMBEDDERS];
    weights[EmbedderId::Code.index()] = 3.0;
    weights[EmbedderId::Graph.index()] = 1.0;
    let inp = DeltaScInput {
        weights: Some(weights),
        johari_threshold: Some(0.9),
        ..input(&old, &new, DeltaScContext::default(), &normalizer)
    };
    let out = compute(&inp).unwrap();
    let (c, g) = (&out.embedders[6], &out.embedders[7]);
    // Weights normalised: 0.75 and 0.25.
    assert!((out.delta_s - (0.75 * c.delta_s + 0.25 * g.delta_s)).abs() < TOL);
    assert!((out.delta_c - (0.75 * c.delta_c + 0.25 * g.delta_c)).abs() < TOL);
    assert!((out.learning_score - (0.7 * out.delta_s + 0.3 * out.delta_c)).abs() < TOL);
    assert!((out.utl_learning_potential - out.delta_s * out.delta_c).abs() < TOL);
    assert_eq!(out.johari_threshold, 0.65);
    for o in &out.embedders {
        assert_eq!(
            o.quadrant,
            JohariQuadrant::classify(o.delta_s, o.delta_c, 0.65)
        );
    }
    // Equal weights when none are given.
    let eq = compute(&input(&old, &new, DeltaScContext::default(), &normalizer)).unwrap();
    let mean: f64 = eq.embedders.iter().map(|o| o.delta_s).sum::<f64>() / 13.0;
    assert!((eq.delta_s - mean).abs() < TOL);
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let old = random_fingerprint(60, 4);
    let mut bad = old.clone();
    bad.e1_semantic.truncate(768);
    let normalizer = SurpriseNormalizer::new();
    let err = compute(&input(&old, &bad, DeltaScContext::default(), &normalizer)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "new_fingerprint: e1_semantic: expected 1024 values, got 768"
    );
    let err = compute(&input(&bad, &old, DeltaScContext::default(), &normalizer)).unwrap_err();
    assert!(err.to_string().starts_with("old_fingerprint: e1_semantic"));
    let base = input(&old, &old, DeltaScContext::default(), &normalizer);
    let cases: Vec<(DeltaScInput<'_>, &str)> = vec![
        (
            DeltaScInput {
                johari_threshold: Some(1.2),
                ..base
            },
            "johari_threshold: must be a number in [0, 1], got 1.2",
        ),
        (
            DeltaScInput {
                weights: Some([0.0; NUM_EMBEDDERS]),
                ..base
            },
            "embedder weights: weights sum to 0",
        ),
    ];
    for (inp, want) in cases {
        let err = compute(&inp).unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}");
    }
}

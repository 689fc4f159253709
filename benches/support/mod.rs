//! Seeded synthetic data shared by the benches and the load generators (included with
//! `#[path]`; not a target of its own): full fingerprints and stores of vertices for ΔS/ΔC, and
//! lesson strategies for the blacklist.
#![allow(dead_code)] // each includer uses part of it

use std::ops::Range;

use chrono::Utc;
use meta_utl_mcp::service::delta_sc::{
    EmbedderKind, EmbedderRef, Fingerprint, FingerprintBuilder, SPARSE_VOCAB,
};
use meta_utl_mcp::service::lessons::{NewLesson, search_terms};
use meta_utl_mcp::service::vocab::EmbedderId;
use meta_utl_mcp::store::{Store, StoreError, delta_sc as vertices, lessons as lesson_store};
use rand::RngExt;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// A full fingerprint of uniform random values: 7,424 dense floats in [−1, 1), two sparse
/// vectors of about 200 terms with values in [0, 1), 32 E12 tokens.
pub fn fingerprint(rng: &mut StdRng) -> Fingerprint {
    let mut b = FingerprintBuilder::new();
    for e in EmbedderId::ALL {
        match e.kind() {
            EmbedderKind::Dense { dim } => {
                b.dense(
                    e,
                    (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect(),
                );
            }
            EmbedderKind::Sparse { .. } => {
                let mut idx: Vec<u16> = (0..200)
                    .map(|_| rng.random_range(0..SPARSE_VOCAB) as u16)
                    .collect();
                idx.sort_unstable();
                idx.dedup();
                let vals = idx.iter().map(|_| rng.random_range(0.0f32..1.0)).collect();
                b.sparse(e, idx, vals);
            }
            EmbedderKind::Tokens { dim } => {
                b.tokens(
                    e,
                    (0..32)
                        .map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect())
                        .collect(),
                );
            }
        }
    }
    b.build().expect("valid")
}

/// The fingerprint as a `gwt_compute_delta_sc` argument, one field per embedder.
pub fn fingerprint_json(fp: &Fingerprint) -> Value {
    let mut m = Map::new();
    for e in EmbedderId::ALL {
        let v = match fp.get(e) {
            EmbedderRef::Dense(v) => json!(v),
            EmbedderRef::Sparse(s) => json!({"indices": s.indices, "values": s.values}),
            EmbedderRef::Tokens(t) => json!(t.tokens),
        };
        m.insert(e.field().to_string(), v);
    }
    Value::Object(m)
}

/// Store vertices with ids `ids` (as `Uuid::from_u128(i + 1)`), current fingerprints only, in
/// one transaction. Each is one of `templates` with its own random E1 row (the vector the
/// nearest-neighbour scan reads), so the index is realistic while building 10,000 stays quick.
pub fn put_vertices(store: &Store, ids: Range<usize>, templates: &[Fingerprint], rng: &mut StdRng) {
    store
        .write(|db| {
            for i in ids {
                let mut fp = templates[i % templates.len()].clone();
                fp.e1_semantic = (0..1024).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                vertices::put_current(db, Uuid::from_u128(i as u128 + 1), &fp, Utc::now())?;
            }
            Ok::<(), StoreError>(())
        })
        .expect("populate vertices");
}

/// Common words: stop words and everyday programming terms.
pub const WORDS: &[&str] = &[
    "mock",
    "the",
    "database",
    "cache",
    "retry",
    "network",
    "call",
    "rewrite",
    "parser",
    "vendor",
    "dependency",
    "pin",
    "compiler",
    "version",
    "use",
    "global",
    "state",
    "split",
    "module",
    "inline",
    "function",
    "add",
    "index",
    "on",
    "task",
    "id",
    "batch",
    "writes",
    "async",
    "lock",
    "free",
    "queue",
    "spawn",
    "thread",
    "per",
    "request",
    "stream",
    "response",
    "buffer",
    "whole",
    "file",
    "skip",
    "tests",
    "for",
    "speed",
    "hand",
    "written",
    "lexer",
    "regex",
    "engine",
];

/// Size of the rare vocabulary (`k0` … `k4999`).
pub const RARE_WORDS: usize = 5_000;

/// `len` words: 60 % from the 50 common [`WORDS`] (stop words and everyday terms, each in a
/// large share of all lessons), 40 % from a rare vocabulary of 5,000 (each in a few hundred).
pub fn strategy(rng: &mut StdRng, len: usize) -> String {
    (0..len)
        .map(|_| {
            if rng.random_range(0..10) < 6 {
                WORDS[rng.random_range(0..WORDS.len())].to_string()
            } else {
                format!("k{}", rng.random_range(0..RARE_WORDS))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Gives every lesson without a vector of `model` a random unit vector of `dimension`
/// components (timing only: the vectors mean nothing).
pub fn put_random_vectors(store: &Store, model: &str, dimension: usize, rng: &mut StdRng) {
    use meta_utl_mcp::store::lesson_vectors;
    loop {
        let done = store
            .write(|db| -> Result<bool, StoreError> {
                let missing = lesson_vectors::without_vector(db, model, 10_000)?;
                for (seq, _) in &missing {
                    let v: Vec<f32> = (0..dimension)
                        .map(|_| rng.random_range(-1.0..1.0))
                        .collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    let v: Vec<f32> = v.iter().map(|x| x / norm).collect();
                    lesson_vectors::set_vector(db, *seq, model, &v)?;
                }
                Ok(missing.is_empty())
            })
            .expect("store random vectors");
        if done {
            return;
        }
    }
}

/// Store lessons number `range` in one transaction: lesson `k` belongs to task
/// `task-{k / per_task}`, and its strategy (4 to 11 [`strategy`] words) ends in `#{k % per_task}`
/// so that each is unique in its task; root-cause summaries are 20 words.
pub fn put_lessons(store: &Store, range: Range<usize>, per_task: usize, rng: &mut StdRng) {
    let now = Utc::now();
    store
        .write(|db| -> Result<(), StoreError> {
            for k in range {
                let task = format!("task-{}", k / per_task);
                let len = rng.random_range(4..12);
                let s = format!("{} #{}", strategy(rng, len), k % per_task);
                let rca = strategy(rng, 20);
                let l = NewLesson::validate(&task, &s, &rca, "LOGIC_ERROR", "bench")
                    .expect("valid lesson");
                let terms = search_terms(&l.strategy_description, &l.rca_summary);
                lesson_store::insert(db, &l, Uuid::from_u128(rng.random()), &terms, now)?;
            }
            Ok(())
        })
        .expect("populate lessons");
}

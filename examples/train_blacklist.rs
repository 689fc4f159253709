//! Trains the blacklist classifier (issue 30) on the agent-style development set and writes
//! `data/blacklist_model.tsv`.
//!
//! ```sh
//! META_UTL_EMBEDDING_MODEL=/path/to/all-MiniLM-L6-v2 cargo run --example train_blacklist
//! ```
//!
//! Without the variable only the `lexical` variant is refitted and the file's `model` block is
//! kept as it was. Only the development sets ([`DEV_SETS`]) are read; the frozen test sets are
//! never opened here.
//!
//! Options: `--errors` also prints the pairs the chosen penalty's held-out models get wrong
//! (development sets only); `--score FILE` fits nothing and writes nothing, but scores the
//! shipped weights (`data/blacklist_model.tsv`) on the pair set FILE and prints its aggregate
//! figures — how a development set written later is scored once, before its pairs are read.
//! With `BLACKLIST_TRAIN_FIRES=FEATURE` (a difference feature's name) it also prints the
//! development pairs whose own lesson has that feature on although they are `same`: where a
//! difference signal fires on a restatement.
//!
//! Rows are (pair, lesson of its task) with the features of `service::lessons::features`, for
//! every lesson that does not match the proposal structurally and that the first stage keeps
//! (`matching::is_candidate`); the label is true when the pair is labelled `same` and the lesson
//! is the one it is about. Weights keep the signs of `features::FEATURE_SIGNS`. For each L2 penalty λ of [`PENALTIES`], [`FOLDS`]-fold
//! cross-validation by task scores each row with the model fitted on the other folds' tasks; a
//! pair is blacklisted when it matches structurally or one of its rows reaches the threshold.
//! Each λ gets the threshold that maximises its held-out F1 (ties: the higher threshold). Among
//! the λ whose held-out figures meet issue 30's targets for hard negatives and longer
//! restatements (all λ when none does), the chosen one is the largest whose held-out F1 is
//! within [`F1_SLACK`] of the best (the most
//! regularised model that fits as well, in the spirit of the one-standard-error rule of
//! Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, §7.10). The shipped
//! weights are then fitted on all rows with that λ, at that threshold.

use std::collections::HashMap;
use std::fmt::Write as _;

use meta_utl_mcp::service::lessons::classifier::{LogisticModel, cross_validated, parse_models};
use meta_utl_mcp::service::lessons::features::{FEATURE_SIGNS, LEXICAL_FEATURES, MODEL_FEATURES};
use meta_utl_mcp::service::lessons::features::{Prepared, features};
use meta_utl_mcp::service::lessons::matching::{
    VETOES, classifier_rows, is_candidate, shares_most,
};
use meta_utl_mcp::service::lessons::similarity::lexical_similarity;
use meta_utl_mcp::service::lessons::text::{normalise_strategy, word_tokens};
use meta_utl_mcp::service::lessons::vectors::cosine_score;
use serde::Deserialize;

/// The development sets, tasks disjoint: the first written for issue 30 (1,105 pairs), the
/// second (529) and the third (457, long text) written later by other helpers
/// (`tests/data/README.md`).
const DEV_SETS: &[&str] = &[
    "tests/data/blacklist_pairs_agent_dev.jsonl",
    "tests/data/blacklist_pairs_agent_dev2.jsonl",
    "tests/data/blacklist_pairs_agent_dev3.jsonl",
];
const MODEL_FILE: &str = "data/blacklist_model.tsv";
/// Folds of the cross-validation by task.
const FOLDS: usize = 5;
/// L2 penalties tried.
const PENALTIES: &[f64] = &[0.01, 0.1, 1.0, 3.0, 10.0, 30.0, 100.0];
/// How much held-out F1 a larger penalty may give up: about half the standard error of F1 on
/// 1,105 pairs over 180 tasks (its 95 % interval is ±0.02), so within the noise.
const F1_SLACK: f64 = 0.005;
/// Issue 30's target: hard negatives let through.
const TARGET_HARD_LET_THROUGH: f64 = 0.80;
/// Issue 30's target: longer restatements caught.
const TARGET_VERBOSE_CAUGHT: f64 = 0.80;

#[derive(Deserialize)]
struct Record {
    task: String,
    strategy: String,
    proposal: String,
    label: String,
    kind: String,
}

/// One labelled pair and its task's lessons.
struct Pair {
    task: usize,
    lesson: String,
    lessons: Vec<String>,
    proposal: String,
    same: bool,
    kind: String,
    longer: bool,
}

fn load(files: &[&str]) -> Vec<Pair> {
    let text: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("read {f}: {e}")))
        .collect::<Vec<_>>()
        .join("\n");
    let records: Vec<Record> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a pair"))
        .collect();
    let mut tasks: Vec<&str> = Vec::new();
    let mut lessons: HashMap<&str, Vec<String>> = HashMap::new();
    for r in &records {
        if !tasks.contains(&r.task.as_str()) {
            tasks.push(&r.task);
        }
        let l = lessons.entry(&r.task).or_default();
        if !l.contains(&r.strategy) {
            l.push(r.strategy.clone());
        }
    }
    let words = |s: &str| word_tokens(&normalise_strategy(s)).len();
    records
        .iter()
        .map(|r| Pair {
            task: tasks.iter().position(|t| *t == r.task).expect("task"),
            lesson: r.strategy.clone(),
            lessons: lessons[r.task.as_str()].clone(),
            proposal: r.proposal.clone(),
            same: r.label == "same",
            kind: r.kind.clone(),
            longer: words(&r.proposal) > words(&r.strategy),
        })
        .collect()
}

/// The training rows of one variant.
struct Rows {
    x: Vec<Vec<f64>>,
    y: Vec<bool>,
    task: Vec<usize>,
    pair: Vec<usize>,
    /// Per pair: it matches a lesson of its task structurally.
    structural: Vec<bool>,
}

/// The model's cosine of a (lesson, proposal) pair, raw texts.
type Cosine<'a> = &'a dyn Fn(&str, &str) -> f64;

fn rows(pairs: &[Pair], cosine: Option<Cosine<'_>>) -> Rows {
    let mut r = Rows {
        x: Vec::new(),
        y: Vec::new(),
        task: Vec::new(),
        pair: Vec::new(),
        structural: Vec::new(),
    };
    let (mut kept, mut positives) = (0, 0);
    for (i, p) in pairs.iter().enumerate() {
        let pn = normalise_strategy(&p.proposal);
        let lessons: Vec<String> = p.lessons.iter().map(|l| normalise_strategy(l)).collect();
        let lessons: Vec<&str> = lessons.iter().map(String::as_str).collect();
        let cosines: Option<Vec<f64>> =
            cosine.map(|f| p.lessons.iter().map(|l| f(l, &p.proposal)).collect());
        let (structural_match, candidates) = classifier_rows(&pn, &lessons, cosines.as_deref());
        let about = p.lessons.iter().position(|l| *l == p.lesson);
        if p.same && !structural_match {
            positives += 1;
            kept += usize::from(candidates.iter().any(|(k, _)| Some(*k) == about));
        }
        for (k, f) in candidates {
            r.x.push(f.values);
            r.y.push(p.same && Some(k) == about);
            r.task.push(p.task);
            r.pair.push(i);
        }
        r.structural.push(structural_match);
    }
    eprintln!(
        "{} rows; the first stage keeps the lesson of {kept} of {positives} positive pairs \
         without a structural match",
        r.x.len()
    );
    // How often each binary difference feature is on, among rows of the lesson a `same` pair
    // is about and among the others.
    let names = if cosine.is_some() {
        MODEL_FEATURES
    } else {
        LEXICAL_FEATURES
    };
    for (j, name) in names.iter().enumerate() {
        if FEATURE_SIGNS[j] < 0.0 && r.x.iter().all(|x| x[j] == 0.0 || x[j] == 1.0) {
            let on = |label: bool| {
                (0..r.x.len())
                    .filter(|&k| r.y[k] == label && r.x[k][j] == 1.0)
                    .count()
            };
            eprintln!(
                "  {name:<22} on in {} same rows, {} other rows",
                on(true),
                on(false)
            );
            if std::env::var("BLACKLIST_TRAIN_FIRES").is_ok_and(|f| f == *name) {
                for k in (0..r.x.len()).filter(|&k| r.y[k] && r.x[k][j] == 1.0) {
                    let p = &pairs[r.pair[k]];
                    eprintln!("    [{}] {}\n      vs {}", p.kind, p.lesson, p.proposal);
                }
            }
        }
    }
    r
}

/// Pair-level figures at threshold `t` from per-row probabilities.
#[derive(Debug, Clone, Copy)]
struct Figures {
    f1: f64,
    hard_let_through: f64,
    longer_caught: f64,
}

fn pair_scores(pairs: &[Pair], r: &Rows, probability: &[f64]) -> Vec<f64> {
    let mut best = vec![f64::NEG_INFINITY; pairs.len()];
    for (k, &i) in r.pair.iter().enumerate() {
        best[i] = best[i].max(probability[k]);
    }
    best
}

fn figures(pairs: &[Pair], r: &Rows, best: &[f64], t: f64) -> Figures {
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let (mut hard, mut hard_through, mut longer, mut longer_caught) = (0, 0, 0, 0);
    for (i, p) in pairs.iter().enumerate() {
        let blocked = r.structural[i] || best[i] >= t;
        match (p.same, blocked) {
            (true, true) => tp += 1,
            (false, true) => fp += 1,
            (true, false) => fn_ += 1,
            _ => {}
        }
        if matches!(
            p.kind.as_str(),
            "reversal" | "changed_target" | "changed_version_number"
        ) {
            hard += 1;
            hard_through += usize::from(!blocked);
        }
        if p.kind == "terse_verbose" && p.longer {
            longer += 1;
            longer_caught += usize::from(blocked);
        }
    }
    Figures {
        f1: 2.0 * tp as f64 / (2 * tp + fp + fn_).max(1) as f64,
        hard_let_through: hard_through as f64 / f64::from(hard.max(1)),
        longer_caught: longer_caught as f64 / f64::from(longer.max(1)),
    }
}

/// The threshold maximising pair-level F1 (ties: the higher threshold).
fn choose_threshold(pairs: &[Pair], r: &Rows, best: &[f64]) -> (f64, Figures) {
    let mut values: Vec<f64> = best.iter().copied().filter(|v| v.is_finite()).collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let mut out = (0.5, figures(pairs, r, best, 0.5));
    for w in values.windows(2) {
        let t = (w[0] + w[1]) / 2.0;
        let f = figures(pairs, r, best, t);
        if f.f1 > out.1.f1 || (f.f1 == out.1.f1 && t > out.0) {
            out = (t, f);
        }
    }
    out
}

/// Cross-validates every penalty, fits the chosen one on all rows, returns it with a summary.
fn train(name: &str, names: &[&str], pairs: &[Pair], r: &Rows) -> (LogisticModel, String) {
    let mut tried: Vec<(f64, f64, Figures)> = Vec::new();
    // Per penalty, each pair's best held-out probability (for `--errors`).
    let mut held_out_scores: Vec<Vec<f64>> = Vec::new();
    let mut summary = String::new();
    for &l2 in PENALTIES {
        let signs = &FEATURE_SIGNS[..names.len()];
        let models = cross_validated(names, &r.x, &r.y, &r.task, FOLDS, l2, signs);
        let held_out: Vec<f64> = (0..r.x.len())
            .map(|k| models[r.task[k] % FOLDS].probability(&r.x[k]))
            .collect();
        let best = pair_scores(pairs, r, &held_out);
        let (t, f) = choose_threshold(pairs, r, &best);
        held_out_scores.push(best);
        eprintln!(
            "{name}: λ {l2:>6}: held-out F1 {:.3} at {t:.3}, hard let through {:.3}, longer caught {:.3}",
            f.f1, f.hard_let_through, f.longer_caught
        );
        tried.push((l2, t, f));
    }
    // Issue 30's targets on the held-out development figures, where some penalty meets them.
    let meets = |f: &Figures| {
        f.hard_let_through >= TARGET_HARD_LET_THROUGH && f.longer_caught >= TARGET_VERBOSE_CAUGHT
    };
    let pool: Vec<&(f64, f64, Figures)> = if tried.iter().any(|(_, _, f)| meets(f)) {
        tried.iter().filter(|(_, _, f)| meets(f)).collect()
    } else {
        tried.iter().collect()
    };
    let top = pool.iter().map(|(_, _, f)| f.f1).fold(0.0, f64::max);
    let (l2, t, f) = **pool
        .iter()
        .rev()
        .find(|(_, _, f)| f.f1 >= top - F1_SLACK)
        .expect("a penalty");
    if std::env::args().any(|a| a == "--errors") {
        let chosen = PENALTIES
            .iter()
            .position(|&p| p == l2)
            .expect("a tried penalty");
        print_errors(name, pairs, r, &held_out_scores[chosen], t);
    }
    let model = LogisticModel::fit_signed(names, &r.x, &r.y, l2, &FEATURE_SIGNS[..names.len()])
        .threshold(t);
    let _ = writeln!(
        summary,
        "# {name}: λ {l2}, threshold {t:.4}; {FOLDS}-fold held-out on the development set: F1 {:.3}, hard negatives let through {:.3}, longer restatements caught {:.3}",
        f.f1, f.hard_let_through, f.longer_caught
    );
    for (n, w) in names.iter().zip(&model.weights) {
        eprintln!("  {n:<22} {w:+.3}");
    }
    eprintln!("  bias {:+.3}", model.bias);
    (model, summary)
}

/// The pairs decided wrongly at threshold `t`, by kind.
fn print_errors(name: &str, pairs: &[Pair], r: &Rows, best: &[f64], t: f64) {
    let mut wrong: Vec<(usize, &Pair)> = pairs
        .iter()
        .enumerate()
        .filter(|(i, p)| (r.structural[*i] || best[*i] >= t) != p.same)
        .collect();
    wrong.sort_by(|a, b| a.1.kind.cmp(&b.1.kind));
    eprintln!("{name}: {} pairs wrong at {t:.3}", wrong.len());
    for (i, p) in wrong {
        eprintln!(
            "  [{}] p={:.2}\n    lesson:   {}\n    proposal: {}",
            p.kind, best[i], p.lesson, p.proposal
        );
        if p.same && best[i] == f64::NEG_INFINITY {
            eprintln!("    why:      {}", not_asked(p));
        }
    }
}

/// Why the classifier was never asked about a `same` pair's own lesson: the stage that left it
/// out, or the vetoes that fired with the words behind them.
fn not_asked(p: &Pair) -> String {
    let (lesson, proposal) = (
        normalise_strategy(&p.lesson),
        normalise_strategy(&p.proposal),
    );
    let (l, q) = (Prepared::new(&lesson), Prepared::new(&proposal));
    if !is_candidate(lexical_similarity(l.whole(), q.whole()), None) {
        return "first stage (Dice below the candidate floor)".into();
    }
    let f = features(&l, &q, None);
    if !shares_most(&f) {
        return "second stage (shares at most half of either strategy)".into();
    }
    let fired: Vec<String> = f
        .reasons
        .iter()
        .filter(|(k, _)| VETOES.contains(&MODEL_FEATURES[*k]))
        .map(|(k, r)| {
            let (a, b) = r.words();
            format!("{} ({a} / {b})", MODEL_FEATURES[*k])
        })
        .collect();
    if fired.is_empty() {
        "(asked)".into()
    } else {
        format!("vetoed: {}", fired.join(", "))
    }
}

/// `--score FILE`: the shipped weights on another pair set, aggregates only.
fn score(file: &str) {
    let pairs = load(&[file]);
    let shipped = parse_models(&std::fs::read_to_string(MODEL_FILE).expect("read the model file"))
        .expect("the model file parses");
    let cosines = cosines(&pairs);
    for (variant, model) in shipped {
        let cosine = match (variant.as_str(), &cosines) {
            ("model", Some(c)) => Some(c),
            ("model", None) => continue,
            _ => None,
        };
        let r = rows(&pairs, cosine.map(|c| c as Cosine<'_>));
        let p: Vec<f64> = r.x.iter().map(|x| model.probability(x)).collect();
        let f = figures(&pairs, &r, &pair_scores(&pairs, &r, &p), model.threshold);
        eprintln!(
            "{file}, {variant} as shipped (threshold {:.4}): F1 {:.3}, hard negatives let through {:.3}, longer restatements caught {:.3}",
            model.threshold, f.f1, f.hard_let_through, f.longer_caught
        );
    }
}

/// The cosine of the model's vectors of every (lesson, proposal) of `pairs`, when
/// `META_UTL_EMBEDDING_MODEL` names a model.
fn cosines(pairs: &[Pair]) -> Option<impl Fn(&str, &str) -> f64> {
    let dir = std::env::var_os("META_UTL_EMBEDDING_MODEL")?;
    let embedder = meta_utl_mcp::embedding::Embedder::load(std::path::Path::new(&dir))
        .expect("load the embedding model");
    let mut texts: Vec<String> = pairs
        .iter()
        .flat_map(|p| p.lessons.iter().cloned().chain([p.proposal.clone()]))
        .collect();
    texts.sort_unstable();
    texts.dedup();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors: HashMap<String, Vec<f32>> = texts
        .iter()
        .cloned()
        .zip(embedder.embed(&refs).expect("embed"))
        .collect();
    Some(move |l: &str, p: &str| cosine_score(&vectors[l], &vectors[p]))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--score") {
        score(args.get(i + 1).expect("--score FILE"));
        return;
    }
    let pairs = load(DEV_SETS);
    eprintln!(
        "{} development pairs over {} tasks",
        pairs.len(),
        pairs.iter().map(|p| p.task + 1).max().unwrap_or(0)
    );
    let lexical_rows = rows(&pairs, None);
    let (lexical, mut header) = train("lexical", LEXICAL_FEATURES, &pairs, &lexical_rows);

    let model = match cosines(&pairs) {
        Some(cosine) => {
            let model_rows = rows(&pairs, Some(&cosine));
            let (m, h) = train("model", MODEL_FEATURES, &pairs, &model_rows);
            header.push_str(&h);
            m
        }
        None => {
            eprintln!("META_UTL_EMBEDDING_MODEL is not set: the model variant is kept");
            let old = std::fs::read_to_string(MODEL_FILE).expect("read the model file");
            let _ = old
                .lines()
                .filter(|l| l.starts_with("# model:"))
                .map(|l| writeln!(header, "{l}"))
                .count();
            parse_models(&old)
                .expect("the model file parses")
                .into_iter()
                .find(|(v, _)| v == "model")
                .map(|(_, m)| m)
                .expect("a model variant")
        }
    };
    let mut out = String::from(
        "# The blacklist classifier's weights (issue 30): logistic regression over the features of\n\
         # src/service/lessons/features.rs, fitted on the development sets (tests/data/README.md) by\n\
         # `cargo run --example train_blacklist` (docs/MATCHING.md). Format: variant, key,\n\
         # tab-separated values (src/service/lessons/classifier.rs, parse_models).\n",
    );
    out.push_str(&header);
    out.push_str(&lexical.to_tsv("lexical"));
    out.push_str(&model.to_tsv("model"));
    std::fs::write(MODEL_FILE, out).expect("write the model file");
    eprintln!("wrote {MODEL_FILE}");
}

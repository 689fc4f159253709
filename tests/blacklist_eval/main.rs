//! Evaluation of blacklist matchers on the development set `tests/data/blacklist_pairs.jsonl`
//! (format and kinds: `tests/data/README.md`), over the crate's public matching API.
//!
//! A matcher is a scoring function `(lesson, proposal) -> f64` on raw strategies (the lexical
//! similarity, or later the cosine of sentence embeddings), a threshold, and optionally the
//! guard. It decides as `matching::decide` does: a proposal is blacklisted when it
//! matches a lesson of its task structurally (exact, contains, contained in), or when some lesson
//! scores at least the threshold and the guard (if any) lets it count. Each pair therefore reduces
//! to `structural` and `effective` = the highest score among the lessons the guard does not
//! stop, and "blacklisted at threshold t" is `structural || effective ≥ t`.
//!
//! Thresholds are chosen by k-fold cross-validation **over tasks**: tasks, in order of first
//! appearance, go to fold `i mod k`; for each fold the threshold maximising F1 on the other folds
//! is applied to it; the held-out decisions of all folds are pooled into one table. The final
//! threshold is then chosen the same way on all pairs. Candidate thresholds are the midpoints
//! between consecutive distinct effective scores; ties in F1 go to the higher threshold.
//!
//! To measure another scorer, e.g. the cosine of L2-normalised sentence embeddings, add a test
//! here:
//!
//! ```text
//! let pairs = dev_set();
//! let cosine = |l: &str, p: &str| dot(&embed(l), &embed(p));       // Fn(&str, &str) -> f64
//! let guard = |l: &str, p: &str| guard::check(&LexicalText::new(l), &LexicalText::new(p));
//! let cv = cross_validate(&score_pairs(&pairs, &cosine, Some(&guard)), 5);
//! eprintln!("{}", table("embedding + guard, held out", &cv.held_out));   // cv.final_threshold
//! ```

#[path = "../common/mod.rs"]
mod common;
mod stats;

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use meta_utl_mcp::service::lessons::guard::GuardReason;
use meta_utl_mcp::service::lessons::matching::{Candidate, decide};
use meta_utl_mcp::service::lessons::text::{normalise_strategy, word_tokens};

/// The development set: thresholds are chosen on it.
const DEV_SET: &str = include_str!("../data/blacklist_pairs.jsonl");
/// The fresh set: never tuned on (see `tests/data/README.md`).
const FRESH_SET: &str = include_str!("../data/blacklist_pairs_fresh.jsonl");

/// What kind of pair (see `tests/data/README.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Verbatim,
    Inflection,
    Synonym,
    Reordering,
    AddedDetail,
    TerseVerbose,
    TensePerson,
    Reversal,
    ChangedTarget,
    ChangedVersionNumber,
    Alternative,
    Unrelated,
}

impl Kind {
    const ALL: [Kind; 12] = [
        Kind::Verbatim,
        Kind::Inflection,
        Kind::Synonym,
        Kind::Reordering,
        Kind::AddedDetail,
        Kind::TerseVerbose,
        Kind::TensePerson,
        Kind::Reversal,
        Kind::ChangedTarget,
        Kind::ChangedVersionNumber,
        Kind::Alternative,
        Kind::Unrelated,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Verbatim => "verbatim",
            Kind::Inflection => "inflection",
            Kind::Synonym => "synonym",
            Kind::Reordering => "reordering",
            Kind::AddedDetail => "added_detail",
            Kind::TerseVerbose => "terse_verbose",
            Kind::TensePerson => "tense_person",
            Kind::Reversal => "reversal",
            Kind::ChangedTarget => "changed_target",
            Kind::ChangedVersionNumber => "changed_version_number",
            Kind::Alternative => "alternative",
            Kind::Unrelated => "unrelated",
        }
    }

    /// Labelled `same`.
    fn is_positive(self) -> bool {
        self < Kind::Reversal
    }

    /// A hard negative: shares almost every word with its lesson.
    fn is_hard_negative(self) -> bool {
        matches!(
            self,
            Kind::Reversal | Kind::ChangedTarget | Kind::ChangedVersionNumber
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Label {
    Same,
    Different,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    task: String,
    strategy: String,
    proposal: String,
    label: Label,
    kind: Kind,
}

/// One labelled pair; `lessons` are all lessons of its task (raw), in order of first appearance.
#[derive(Debug, Clone)]
struct Pair {
    pub task: usize,
    pub lesson: String,
    pub lessons: Vec<String>,
    pub proposal: String,
    pub same: bool,
    pub kind: Kind,
}

/// The development set, checked: labels agree with kinds, each task has 1–4 lessons.
fn dev_set() -> Vec<Pair> {
    load("blacklist_pairs.jsonl", DEV_SET)
}

/// The fresh set, checked likewise.
fn fresh_set() -> Vec<Pair> {
    load("blacklist_pairs_fresh.jsonl", FRESH_SET)
}

fn load(name: &str, jsonl: &str) -> Vec<Pair> {
    let records: Vec<Record> = jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1)))
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
    records
        .iter()
        .map(|r| {
            assert_eq!(
                r.kind.is_positive(),
                r.label == Label::Same,
                "label and kind disagree: {r:?}"
            );
            let ls = &lessons[r.task.as_str()];
            assert!(
                (1..=4).contains(&ls.len()),
                "task {} has {} lessons",
                r.task,
                ls.len()
            );
            Pair {
                task: tasks.iter().position(|t| *t == r.task).expect("task"),
                lesson: r.strategy.clone(),
                lessons: ls.clone(),
                proposal: r.proposal.clone(),
                same: r.label == Label::Same,
                kind: r.kind,
            }
        })
        .collect()
}

/// A pair reduced to what a threshold decides on.
#[derive(Debug, Clone)]
struct Scored {
    pub task: usize,
    pub same: bool,
    pub kind: Kind,
    /// Exact or containment match with some lesson of the task.
    pub structural: bool,
    /// Highest score over the task's lessons.
    pub top: f64,
    /// Highest score over the lessons the guard lets count (−∞ when it stops all).
    pub effective: f64,
    /// The guard's reasons for lessons it stopped, with their scores.
    pub guarded: Vec<(f64, GuardReason)>,
}

impl Scored {
    fn blocked(&self, threshold: f64) -> bool {
        self.structural || self.effective >= threshold
    }

    /// Blocked if the guard were not there.
    fn blocked_unguarded(&self, threshold: f64) -> bool {
        self.structural || self.top >= threshold
    }
}

/// A scoring function on raw lesson and proposal.
type ScoreFn<'a> = &'a dyn Fn(&str, &str) -> f64;
/// A guard on raw lesson and proposal.
type GuardFn<'a> = &'a dyn Fn(&str, &str) -> Option<GuardReason>;

/// Scores every pair against every lesson of its task.
fn score_pairs(pairs: &[Pair], score: ScoreFn<'_>, guard: Option<GuardFn<'_>>) -> Vec<Scored> {
    pairs
        .iter()
        .map(|p| {
            let pn = normalise_strategy(&p.proposal);
            let mut s = Scored {
                task: p.task,
                same: p.same,
                kind: p.kind,
                structural: false,
                top: f64::NEG_INFINITY,
                effective: f64::NEG_INFINITY,
                guarded: Vec::new(),
            };
            for lesson in &p.lessons {
                let ln = normalise_strategy(lesson);
                // Structural rules: decide with an unreachable threshold.
                let d = decide(
                    &pn,
                    [Candidate {
                        normalised: &ln,
                        tokens: word_tokens(&ln),
                        score: 0.0,
                    }],
                    f64::INFINITY,
                );
                if d.blocked.is_some() {
                    s.structural = true;
                }
                let v = score(lesson, &p.proposal);
                assert!(v.is_finite(), "score {v} for {lesson:?} / {:?}", p.proposal);
                s.top = s.top.max(v);
                match guard.and_then(|g| g(lesson, &p.proposal)) {
                    Some(reason) => s.guarded.push((v, reason)),
                    None => s.effective = s.effective.max(v),
                }
            }
            s
        })
        .collect()
}

/// Confusion counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
    pub tn: usize,
}

impl Counts {
    fn add(&mut self, same: bool, blocked: bool) {
        match (same, blocked) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }
    fn n(&self) -> usize {
        self.tp + self.fp + self.fn_ + self.tn
    }
    /// `None` when nothing was blocked.
    fn precision(&self) -> Option<f64> {
        let d = self.tp + self.fp;
        (d > 0).then(|| self.tp as f64 / d as f64)
    }
    /// `None` when there are no positives.
    fn recall(&self) -> Option<f64> {
        let d = self.tp + self.fn_;
        (d > 0).then(|| self.tp as f64 / d as f64)
    }
    /// 2·TP / (2·TP + FP + FN); `None` when there are no positives and nothing was blocked.
    fn f1(&self) -> Option<f64> {
        let d = 2 * self.tp + self.fp + self.fn_;
        (d > 0).then(|| 2.0 * self.tp as f64 / d as f64)
    }
    /// Fraction of negatives not blocked; `None` without negatives.
    fn let_through(&self) -> Option<f64> {
        let d = self.fp + self.tn;
        (d > 0).then(|| self.tn as f64 / d as f64)
    }
}

/// Decisions of a matcher on a set of pairs, by kind.
#[derive(Debug, Clone, Default)]
struct Report {
    pub overall: Counts,
    pub by_kind: HashMap<Kind, Counts>,
    pub hard_negatives: Counts,
    /// Positives the guard stopped that the score alone would have blocked.
    pub guard_blocked_positives: usize,
    /// Hard negatives the guard let through that the score alone would have blocked.
    pub guard_saved_negatives: usize,
}

impl Report {
    fn add(&mut self, s: &Scored, threshold: f64) {
        let blocked = s.blocked(threshold);
        self.overall.add(s.same, blocked);
        self.by_kind.entry(s.kind).or_default().add(s.same, blocked);
        if s.kind.is_hard_negative() {
            self.hard_negatives.add(s.same, blocked);
        }
        let unguarded = s.blocked_unguarded(threshold);
        if s.same && unguarded && !blocked {
            self.guard_blocked_positives += 1;
        }
        if s.kind.is_hard_negative() && unguarded && !blocked {
            self.guard_saved_negatives += 1;
        }
    }

    /// Hard negatives answered not blacklisted.
    fn hard_let_through(&self) -> f64 {
        self.hard_negatives.let_through().unwrap_or(1.0)
    }

    fn f1(&self) -> f64 {
        self.overall.f1().unwrap_or(0.0)
    }
}

/// The report of `threshold` on `scored`.
fn evaluate(scored: &[Scored], threshold: f64) -> Report {
    let mut r = Report::default();
    for s in scored {
        r.add(s, threshold);
    }
    r
}

/// The threshold maximising F1 on `scored` (ties: the higher threshold).
fn choose_threshold(scored: &[&Scored]) -> f64 {
    let mut values: Vec<f64> = scored
        .iter()
        .filter(|s| !s.structural && s.effective.is_finite())
        .map(|s| s.effective)
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let mut candidates: Vec<f64> = values.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
    if let (Some(first), Some(last)) = (values.first(), values.last()) {
        candidates.push(first - 1e-9);
        candidates.push(last + 1e-9);
    }
    let f1 = |t: f64| {
        let mut c = Counts::default();
        for s in scored {
            c.add(s.same, s.blocked(t));
        }
        c.f1().unwrap_or(0.0)
    };
    let mut best = (f64::NEG_INFINITY, f64::INFINITY);
    for t in candidates {
        let f = f1(t);
        if f > best.0 || (f == best.0 && t > best.1) {
            best = (f, t);
        }
    }
    best.1
}

/// Result of [`cross_validate`].
#[derive(Debug, Clone)]
struct CrossValidation {
    /// Pooled held-out decisions.
    pub held_out: Report,
    /// The threshold chosen on the training folds of each fold.
    pub fold_thresholds: Vec<f64>,
    /// The threshold chosen on all pairs.
    pub final_threshold: f64,
    /// The report of the final threshold on all pairs (optimistic: chosen on them).
    pub in_sample: Report,
}

/// k-fold cross-validation over tasks (see the module documentation).
fn cross_validate(scored: &[Scored], k: usize) -> CrossValidation {
    let mut held_out = Report::default();
    let mut fold_thresholds = Vec::new();
    for fold in 0..k {
        let train: Vec<&Scored> = scored.iter().filter(|s| s.task % k != fold).collect();
        let t = choose_threshold(&train);
        fold_thresholds.push(t);
        for s in scored.iter().filter(|s| s.task % k == fold) {
            held_out.add(s, t);
        }
    }
    let all: Vec<&Scored> = scored.iter().collect();
    let final_threshold = choose_threshold(&all);
    CrossValidation {
        held_out,
        fold_thresholds,
        in_sample: evaluate(scored, final_threshold),
        final_threshold,
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "    –".to_owned(), |v| format!("{v:5.2}"))
}

/// The table: overall, hard negatives, then one row per kind.
fn table(title: &str, r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "  {:<24} {:>4} {:>7} {:>5} {:>5} {:>5} {:>7}",
        "kind", "n", "blocked", "P", "R", "F1", "let-thr"
    );
    let mut row = |name: &str, c: &Counts| {
        let _ = writeln!(
            out,
            "  {:<24} {:>4} {:>7} {} {} {} {:>7}",
            name,
            c.n(),
            c.tp + c.fp,
            fmt_opt(c.precision()),
            fmt_opt(c.recall()),
            fmt_opt(c.f1()),
            fmt_opt(c.let_through()),
        );
    };
    row("ALL", &r.overall);
    row("hard negatives", &r.hard_negatives);
    for k in Kind::ALL {
        if let Some(c) = r.by_kind.get(&k) {
            row(k.name(), c);
        }
    }
    let _ = writeln!(
        out,
        "  guard: {} positives stopped that the score alone blocks; {} hard negatives saved",
        r.guard_blocked_positives, r.guard_saved_negatives
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_utl_mcp::service::lessons::guard;
    use meta_utl_mcp::service::lessons::lexical::LexicalText;
    use meta_utl_mcp::service::lessons::matching::{
        LEXICAL_THRESHOLD, decide_lexical, dice_coefficient, lexical_similarity,
    };

    /// Folds of the cross-validation over tasks.
    const FOLDS: usize = 5;

    // Targets, on the development set, held out (pooled over the folds). Set just under what
    // the matcher reaches (figures in the doc of `LEXICAL_THRESHOLD`), so that a change to the
    // word tables or the guard that loses ground fails here.

    /// Lexical score alone, no guard: F1 (issue 15 asks ≥ 0.75).
    const LEXICAL_F1_TARGET: f64 = 0.80;
    /// Lexical score with the guard, as the server decides: F1.
    const LEXICAL_GUARD_F1_TARGET: f64 = 0.95;
    /// Lexical score with the guard: reversals, changed targets and changed numbers answered
    /// not blacklisted.
    const HARD_LET_THROUGH_TARGET: f64 = 0.95;
    /// Positives that the score alone blocks but the guard stops, at most.
    const GUARD_FALSE_STOPS_MAX: usize = 3;

    // Floors on the fresh set (threshold from the development set, nothing chosen on it), set
    // under what it measures now. A regression guard, not a goal.

    /// Lexical with the guard, F1 on the fresh set (first run 0.85; 0.91 after the bug fixes
    /// that run showed).
    const FRESH_F1_FLOOR: f64 = 0.88;
    /// Lexical with the guard, hard negatives let through on the fresh set (first run 0.84;
    /// 0.91 after the fixes).
    const FRESH_HARD_LET_THROUGH_FLOOR: f64 = 0.88;

    fn lexical(l: &str, p: &str) -> f64 {
        lexical_similarity(&LexicalText::new(l), &LexicalText::new(p))
    }

    fn rules(l: &str, p: &str) -> Option<GuardReason> {
        guard::check(&LexicalText::new(l), &LexicalText::new(p))
    }

    /// Today's `similar` rule: word-Dice on the raw tokens.
    fn legacy(l: &str, p: &str) -> f64 {
        let (l, p) = (normalise_strategy(l), normalise_strategy(p));
        dice_coefficient(&word_tokens(&l), &word_tokens(&p))
    }

    /// The misclassified pairs, one line each.
    fn errors(pairs: &[Pair], scored: &[Scored], threshold: f64) -> String {
        let mut out = String::new();
        for (p, s) in pairs.iter().zip(scored) {
            if s.blocked(threshold) != s.same {
                let guarded: Vec<String> = s.guarded.iter().map(|(_, r)| r.to_string()).collect();
                let _ = writeln!(
                    out,
                    "  {} {:<22} score {:.2} {:?} | {:?} {:?}",
                    if s.same { "missed " } else { "blocked" },
                    p.kind.name(),
                    s.top,
                    p.lesson,
                    p.proposal,
                    guarded
                );
            }
        }
        out
    }

    /// Run with `cargo test --lib blacklist_eval -- --nocapture` to see the tables.
    #[test]
    fn blacklist_eval() {
        let dev = dev_set();
        assert!(dev.len() >= 320, "{} pairs", dev.len());
        for k in Kind::ALL {
            let n = dev.iter().filter(|p| p.kind == k).count();
            assert!(n >= 15, "{} has {n} pairs", k.name());
        }

        let legacy_scored = score_pairs(&dev, &legacy, None);
        let legacy_report = evaluate(&legacy_scored, 0.8);
        eprintln!(
            "{}",
            table(
                "development set, today's rule: word Dice >= 0.8",
                &legacy_report
            )
        );

        let alone = cross_validate(&score_pairs(&dev, &lexical, None), FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, lexical alone, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    alone.fold_thresholds, alone.final_threshold
                ),
                &alone.held_out
            )
        );

        let guarded_scored = score_pairs(&dev, &lexical, Some(&rules));
        let guarded = cross_validate(&guarded_scored, FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, lexical + guard, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    guarded.fold_thresholds, guarded.final_threshold
                ),
                &guarded.held_out
            )
        );
        eprintln!(
            "development set, lexical + guard at LEXICAL_THRESHOLD = {LEXICAL_THRESHOLD}, errors:\n{}",
            errors(&dev, &guarded_scored, LEXICAL_THRESHOLD)
        );

        // The constant sits on the plateau the procedure chose: same decisions on every pair.
        let at_constant = evaluate(&guarded_scored, LEXICAL_THRESHOLD);
        assert_eq!(
            at_constant.overall, guarded.in_sample.overall,
            "LEXICAL_THRESHOLD {LEXICAL_THRESHOLD} no longer decides like the cross-validated choice {}",
            guarded.final_threshold
        );
        // The harness decides as the server does.
        for (p, s) in dev.iter().zip(&guarded_scored) {
            let lessons: Vec<String> = p.lessons.iter().map(|l| normalise_strategy(l)).collect();
            let d = decide_lexical(
                &normalise_strategy(&p.proposal),
                lessons.iter().map(|l| (l.as_str(), word_tokens(l))),
            );
            assert_eq!(
                d.blocked.is_some(),
                s.blocked(LEXICAL_THRESHOLD),
                "{:?} / {:?}",
                p.proposal,
                p.lessons
            );
        }

        let fresh = fresh_set();
        let fresh_alone = evaluate(&score_pairs(&fresh, &lexical, None), alone.final_threshold);
        eprintln!(
            "{}",
            table(
                &format!(
                    "fresh set, lexical alone at {:.4} (chosen on the development set)",
                    alone.final_threshold
                ),
                &fresh_alone
            )
        );
        let fresh_scored = score_pairs(&fresh, &lexical, Some(&rules));
        let fresh_guarded = evaluate(&fresh_scored, LEXICAL_THRESHOLD);
        eprintln!(
            "{}",
            table(
                &format!("fresh set, lexical + guard at LEXICAL_THRESHOLD = {LEXICAL_THRESHOLD}"),
                &fresh_guarded
            )
        );
        eprintln!(
            "fresh set, lexical + guard, errors:\n{}",
            errors(&fresh, &fresh_scored, LEXICAL_THRESHOLD)
        );

        assert!(
            alone.held_out.f1() >= LEXICAL_F1_TARGET,
            "lexical alone: held-out F1 {:.3} < {LEXICAL_F1_TARGET}",
            alone.held_out.f1()
        );
        assert!(
            guarded.held_out.f1() >= LEXICAL_GUARD_F1_TARGET,
            "lexical + guard: held-out F1 {:.3} < {LEXICAL_GUARD_F1_TARGET}",
            guarded.held_out.f1()
        );
        assert!(
            guarded.held_out.hard_let_through() >= HARD_LET_THROUGH_TARGET,
            "lexical + guard: hard negatives let through {:.3} < {HARD_LET_THROUGH_TARGET}",
            guarded.held_out.hard_let_through()
        );
        assert!(
            guarded.held_out.guard_blocked_positives <= GUARD_FALSE_STOPS_MAX,
            "the guard stopped {} positives (at most {GUARD_FALSE_STOPS_MAX})",
            guarded.held_out.guard_blocked_positives
        );
        assert!(
            fresh_guarded.f1() >= FRESH_F1_FLOOR,
            "fresh set: F1 {:.3} < {FRESH_F1_FLOOR}",
            fresh_guarded.f1()
        );
        assert!(
            fresh_guarded.hard_let_through() >= FRESH_HARD_LET_THROUGH_FLOOR,
            "fresh set: hard negatives let through {:.3} < {FRESH_HARD_LET_THROUGH_FLOOR}",
            fresh_guarded.hard_let_through()
        );
    }
}

/// The embedding matcher on the development set: the cosine of all-MiniLM-L6-v2 vectors with
/// the guard, as the server decides (needs the weights, found through
/// `META_UTL_EMBEDDING_MODEL`; says it skipped otherwise).
#[cfg(all(test, feature = "embedding"))]
mod embedding_eval {
    use super::*;

    use meta_utl_mcp::embedding::Embedder;
    use meta_utl_mcp::service::lessons::guard;
    use meta_utl_mcp::service::lessons::lexical::LexicalText;
    use meta_utl_mcp::service::lessons::vectors::{EMBEDDING_THRESHOLD, cosine_score};
    use meta_utl_mcp::tools::lessons::check::RELATED_MIN_SCORE;

    /// Folds of the cross-validation over tasks.
    const FOLDS: usize = 5;

    // Targets, held out on the development set (issue 15: precision ≥ 0.85, recall ≥ 0.90,
    // hard negatives let through ≥ 70 %), and floors on the fresh set just under what the
    // matcher reaches (figures in the doc of `EMBEDDING_THRESHOLD`).

    /// Precision, held out.
    const PRECISION_TARGET: f64 = 0.85;
    /// Recall, held out.
    const RECALL_TARGET: f64 = 0.90;
    /// Reversals, changed targets and changed numbers answered not blacklisted, held out.
    const HARD_LET_THROUGH_TARGET: f64 = 0.70;
    /// F1 on the fresh set at `EMBEDDING_THRESHOLD` (measured 0.91).
    const FRESH_F1_FLOOR: f64 = 0.88;
    /// Hard negatives let through on the fresh set (measured 0.91).
    const FRESH_HARD_LET_THROUGH_FLOOR: f64 = 0.85;

    /// Every distinct strategy of `pairs` (lessons and proposals) embedded once.
    fn embed_all(model: &Embedder, pairs: &[Pair]) -> HashMap<String, Vec<f32>> {
        let mut texts: Vec<&str> = pairs
            .iter()
            .flat_map(|p| {
                p.lessons
                    .iter()
                    .map(String::as_str)
                    .chain([p.proposal.as_str()])
            })
            .collect();
        texts.sort_unstable();
        texts.dedup();
        let vectors = model.embed(&texts).expect("embed");
        texts.iter().map(|t| t.to_string()).zip(vectors).collect()
    }

    /// Run with `META_UTL_EMBEDDING_MODEL=DIR cargo test --test blacklist_eval embedding --
    /// --nocapture` to see the tables.
    #[test]
    fn embedding_matcher_meets_its_targets() {
        let Some(dir) = crate::common::real_model("embedding_matcher_meets_its_targets") else {
            return;
        };
        let model = Embedder::load(&dir).expect("load the model");
        let dev = dev_set();
        let fresh = fresh_set();
        let mut vectors = embed_all(&model, &dev);
        vectors.extend(embed_all(&model, &fresh));
        let cosine = |l: &str, p: &str| cosine_score(&vectors[l], &vectors[p]);
        let rules = |l: &str, p: &str| guard::check(&LexicalText::new(l), &LexicalText::new(p));

        let alone = cross_validate(&score_pairs(&dev, &cosine, None), FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, cosine alone, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    alone.fold_thresholds, alone.final_threshold
                ),
                &alone.held_out
            )
        );
        let scored = score_pairs(&dev, &cosine, Some(&rules));
        let cv = cross_validate(&scored, FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, cosine + guard, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    cv.fold_thresholds, cv.final_threshold
                ),
                &cv.held_out
            )
        );
        // The constant sits on the plateau the procedure chose: same decisions on every pair.
        assert_eq!(
            evaluate(&scored, EMBEDDING_THRESHOLD).overall,
            cv.in_sample.overall,
            "EMBEDDING_THRESHOLD {EMBEDDING_THRESHOLD} no longer decides like the \
             cross-validated choice {}",
            cv.final_threshold
        );
        let fresh_report = evaluate(
            &score_pairs(&fresh, &cosine, Some(&rules)),
            EMBEDDING_THRESHOLD,
        );
        eprintln!(
            "{}",
            table(
                &format!(
                    "fresh set, cosine + guard at EMBEDDING_THRESHOLD = {EMBEDDING_THRESHOLD}"
                ),
                &fresh_report
            )
        );
        // Unrelated pairs score under the related-lessons floor.
        let unrelated_max = dev
            .iter()
            .filter(|p| p.kind == Kind::Unrelated)
            .map(|p| cosine(&p.lesson, &p.proposal))
            .fold(0.0, f64::max);
        eprintln!("highest cosine of an unrelated pair: {unrelated_max:.3}");
        assert!(unrelated_max < RELATED_MIN_SCORE, "{unrelated_max}");

        let held = &cv.held_out.overall;
        let (p, r) = (held.precision().unwrap(), held.recall().unwrap());
        assert!(
            p >= PRECISION_TARGET,
            "held-out precision {p:.3} < {PRECISION_TARGET}"
        );
        assert!(
            r >= RECALL_TARGET,
            "held-out recall {r:.3} < {RECALL_TARGET}"
        );
        let hard = cv.held_out.hard_let_through();
        assert!(
            hard >= HARD_LET_THROUGH_TARGET,
            "hard negatives let through {hard:.3} < {HARD_LET_THROUGH_TARGET}"
        );
        assert!(
            fresh_report.f1() >= FRESH_F1_FLOOR,
            "fresh set: F1 {:.3} < {FRESH_F1_FLOOR}",
            fresh_report.f1()
        );
        assert!(
            fresh_report.hard_let_through() >= FRESH_HARD_LET_THROUGH_FLOOR,
            "fresh set: hard negatives let through {:.3} < {FRESH_HARD_LET_THROUGH_FLOOR}",
            fresh_report.hard_let_through()
        );
    }
}

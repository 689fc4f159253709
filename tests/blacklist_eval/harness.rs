//! The evaluation harness shared by every set: pairs and their kinds, scoring a pair against
//! its task's lessons, confusion counts, reports by kind, threshold choice and cross-validation
//! over tasks (see the crate documentation).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use meta_utl_mcp::service::lessons::guard::GuardReason;
use meta_utl_mcp::service::lessons::matching::{Candidate, decide};
use meta_utl_mcp::service::lessons::text::{normalise_strategy, word_tokens};

/// What kind of pair (see `tests/data/README.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
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
    pub const ALL: [Kind; 12] = [
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

    pub fn name(self) -> &'static str {
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
    pub fn is_positive(self) -> bool {
        self < Kind::Reversal
    }

    /// A hard negative: shares almost every word with its lesson.
    pub fn is_hard_negative(self) -> bool {
        matches!(
            self,
            Kind::Reversal | Kind::ChangedTarget | Kind::ChangedVersionNumber
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Same,
    Different,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    task: String,
    strategy: String,
    proposal: String,
    label: Label,
    kind: Kind,
}

/// One labelled pair; `lessons` are all lessons of its task (raw), in order of first appearance.
#[derive(Debug, Clone)]
pub struct Pair {
    pub task: usize,
    pub lesson: String,
    pub lessons: Vec<String>,
    pub proposal: String,
    pub same: bool,
    pub kind: Kind,
    /// The proposal has more word tokens than its lesson ([`word_tokens`] of the normalised
    /// texts): for `terse_verbose`, a longer restatement rather than a note.
    pub longer: bool,
}

/// The first development set (issue 15): thresholds of today's matcher were chosen on it.
const DEV_SET: &str = include_str!("../data/blacklist_pairs.jsonl");
/// The fresh set: never tuned on (see `tests/data/README.md`).
const FRESH_SET: &str = include_str!("../data/blacklist_pairs_fresh.jsonl");
/// The agent-style development set (issue 30): tune and read failures here only.
const AGENT_DEV_SET: &str = include_str!("../data/blacklist_pairs_agent_dev.jsonl");
/// The agent-style frozen test set (issue 30): only aggregate figures are printed, nothing is
/// chosen on it.
const AGENT_TEST_SET: &str = include_str!("../data/blacklist_pairs_agent_test.jsonl");

/// The development set, checked: labels agree with kinds, each task has 1–4 lessons.
pub fn dev_set() -> Vec<Pair> {
    load("blacklist_pairs.jsonl", DEV_SET)
}

/// The fresh set, checked likewise.
pub fn fresh_set() -> Vec<Pair> {
    load("blacklist_pairs_fresh.jsonl", FRESH_SET)
}

/// The agent-style development sets, checked likewise: the first (1,105 pairs), the second
/// (529 pairs) and the third (457 pairs, long text), each written later by another helper,
/// tasks disjoint, as one set.
pub fn agent_dev_set() -> Vec<Pair> {
    let all = format!(
        "{AGENT_DEV_SET}\n{}\n{}",
        include_str!("../data/blacklist_pairs_agent_dev2.jsonl"),
        include_str!("../data/blacklist_pairs_agent_dev3.jsonl")
    );
    load("blacklist_pairs_agent_dev{,2,3}.jsonl", &all)
}

/// The agent-style frozen test set, checked likewise.
pub fn agent_test_set() -> Vec<Pair> {
    load("blacklist_pairs_agent_test.jsonl", AGENT_TEST_SET)
}

/// The held-out agent-style set (`tests/data/README.md`): 328 pairs over 47 tasks.
pub fn agent_holdout_set() -> Vec<Pair> {
    let set = load(
        "blacklist_pairs_agent_holdout.jsonl",
        include_str!("../data/blacklist_pairs_agent_holdout.jsonl"),
    );
    assert_eq!(set.len(), 328, "held-out pairs");
    set
}

/// The second frozen agent-style test set (`tests/data/README.md`): 453 pairs over 58 tasks,
/// written by a helper who had seen neither the matcher nor the other sets, committed before
/// its first score.
pub fn agent_test2_set() -> Vec<Pair> {
    let set = load(
        "blacklist_pairs_agent_test2.jsonl",
        include_str!("../data/blacklist_pairs_agent_test2.jsonl"),
    );
    assert_eq!(set.len(), 453, "second test set pairs");
    set
}

/// The third frozen agent-style test set (`tests/data/README.md`): 477 pairs over 64 tasks, 73
/// long restatements, written by a helper who had seen neither the matcher nor the other sets,
/// committed before its first score.
pub fn agent_test3_set() -> Vec<Pair> {
    let set = load(
        "blacklist_pairs_agent_test3.jsonl",
        include_str!("../data/blacklist_pairs_agent_test3.jsonl"),
    );
    assert_eq!(set.len(), 477, "third test set pairs");
    set
}

/// The fourth frozen agent-style test set (`tests/data/README.md`): 480 pairs over 62 tasks,
/// 74 long restatements, written by a helper who had seen neither the matcher nor the other
/// sets, committed before its first score.
pub fn agent_test4_set() -> Vec<Pair> {
    let set = load(
        "blacklist_pairs_agent_test4.jsonl",
        include_str!("../data/blacklist_pairs_agent_test4.jsonl"),
    );
    assert_eq!(set.len(), 480, "fourth test set pairs");
    set
}

/// Word tokens of a raw strategy, as the matcher counts them.
fn token_count(raw: &str) -> usize {
    word_tokens(&normalise_strategy(raw)).len()
}

/// Parses one JSON Lines set and checks it (labels agree with kinds, 1–4 lessons a task).
pub fn load(name: &str, jsonl: &str) -> Vec<Pair> {
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
                longer: token_count(&r.proposal) > token_count(&r.strategy),
            }
        })
        .collect()
}

/// A pair reduced to what a threshold decides on.
#[derive(Debug, Clone)]
pub struct Scored {
    pub task: usize,
    pub same: bool,
    pub kind: Kind,
    /// See [`Pair::longer`].
    pub longer: bool,
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
    pub fn blocked(&self, threshold: f64) -> bool {
        self.structural || self.effective >= threshold
    }

    /// Blocked if the guard were not there.
    pub fn blocked_unguarded(&self, threshold: f64) -> bool {
        self.structural || self.top >= threshold
    }
}

/// A scoring function on raw lesson and proposal.
pub type ScoreFn<'a> = &'a dyn Fn(&str, &str) -> f64;
/// A guard on raw lesson and proposal.
pub type GuardFn<'a> = &'a dyn Fn(&str, &str) -> Option<GuardReason>;

/// Scores every pair against every lesson of its task.
pub fn score_pairs(pairs: &[Pair], score: ScoreFn<'_>, guard: Option<GuardFn<'_>>) -> Vec<Scored> {
    pairs
        .iter()
        .map(|p| {
            let pn = normalise_strategy(&p.proposal);
            let mut s = Scored {
                task: p.task,
                same: p.same,
                kind: p.kind,
                longer: p.longer,
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
pub struct Counts {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
    pub tn: usize,
}

impl Counts {
    pub fn add(&mut self, same: bool, blocked: bool) {
        match (same, blocked) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }
    pub fn n(&self) -> usize {
        self.tp + self.fp + self.fn_ + self.tn
    }
    /// `None` when nothing was blocked.
    pub fn precision(&self) -> Option<f64> {
        let d = self.tp + self.fp;
        (d > 0).then(|| self.tp as f64 / d as f64)
    }
    /// `None` when there are no positives.
    pub fn recall(&self) -> Option<f64> {
        let d = self.tp + self.fn_;
        (d > 0).then(|| self.tp as f64 / d as f64)
    }
    /// 2·TP / (2·TP + FP + FN); `None` when there are no positives and nothing was blocked.
    pub fn f1(&self) -> Option<f64> {
        let d = 2 * self.tp + self.fp + self.fn_;
        (d > 0).then(|| 2.0 * self.tp as f64 / d as f64)
    }
    /// Fraction of negatives not blocked; `None` without negatives.
    pub fn let_through(&self) -> Option<f64> {
        let d = self.fp + self.tn;
        (d > 0).then(|| self.tn as f64 / d as f64)
    }
}

/// Decisions of a matcher on a set of pairs, by kind.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub overall: Counts,
    pub by_kind: HashMap<Kind, Counts>,
    pub hard_negatives: Counts,
    /// `terse_verbose` positives whose proposal is longer than the lesson ([`Pair::longer`]).
    pub longer_restatements: Counts,
    /// Positives the guard stopped that the score alone would have blocked.
    pub guard_blocked_positives: usize,
    /// Hard negatives the guard let through that the score alone would have blocked.
    pub guard_saved_negatives: usize,
}

impl Report {
    pub fn add(&mut self, s: &Scored, threshold: f64) {
        let blocked = s.blocked(threshold);
        self.overall.add(s.same, blocked);
        self.by_kind.entry(s.kind).or_default().add(s.same, blocked);
        if s.kind.is_hard_negative() {
            self.hard_negatives.add(s.same, blocked);
        }
        if s.kind == Kind::TerseVerbose && s.longer {
            self.longer_restatements.add(s.same, blocked);
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
    pub fn hard_let_through(&self) -> f64 {
        self.hard_negatives.let_through().unwrap_or(1.0)
    }

    /// Overall F1, 0 when undefined.
    pub fn f1(&self) -> f64 {
        self.overall.f1().unwrap_or(0.0)
    }

    /// Longer restatements blacklisted; `None` when there are none.
    pub fn verbose_caught(&self) -> Option<f64> {
        self.longer_restatements.recall()
    }
}

/// The report of `threshold` on `scored`.
pub fn evaluate(scored: &[Scored], threshold: f64) -> Report {
    let mut r = Report::default();
    for s in scored {
        r.add(s, threshold);
    }
    r
}

/// The threshold maximising F1 on `scored` (ties: the higher threshold).
pub fn choose_threshold(scored: &[&Scored]) -> f64 {
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
pub struct CrossValidation {
    /// Pooled held-out decisions.
    pub held_out: Report,
    /// The threshold chosen on the training folds of each fold.
    pub fold_thresholds: Vec<f64>,
    /// The threshold each pair was decided at held out (its fold's), in the pairs' order.
    pub thresholds: Vec<f64>,
    /// The threshold chosen on all pairs.
    pub final_threshold: f64,
    /// The report of the final threshold on all pairs (optimistic: chosen on them).
    pub in_sample: Report,
}

/// k-fold cross-validation over tasks (see the module documentation).
pub fn cross_validate(scored: &[Scored], k: usize) -> CrossValidation {
    let mut held_out = Report::default();
    let mut fold_thresholds = Vec::new();
    let mut thresholds = vec![f64::NAN; scored.len()];
    for fold in 0..k {
        let train: Vec<&Scored> = scored.iter().filter(|s| s.task % k != fold).collect();
        let t = choose_threshold(&train);
        fold_thresholds.push(t);
        for (i, s) in scored
            .iter()
            .enumerate()
            .filter(|(_, s)| s.task % k == fold)
        {
            held_out.add(s, t);
            thresholds[i] = t;
        }
    }
    let all: Vec<&Scored> = scored.iter().collect();
    let final_threshold = choose_threshold(&all);
    CrossValidation {
        held_out,
        fold_thresholds,
        thresholds,
        in_sample: evaluate(scored, final_threshold),
        final_threshold,
    }
}

/// A figure with two decimals, `–` when undefined.
pub fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "    –".to_owned(), |v| format!("{v:5.2}"))
}

/// The table: overall, hard negatives, then one row per kind.
pub fn table(title: &str, r: &Report) -> String {
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
    row("longer restatements", &r.longer_restatements);
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

/// The misclassified pairs, one line each. Only for sets whose failures may be read (never
/// the frozen test set).
pub fn errors(pairs: &[Pair], scored: &[Scored], threshold: f64) -> String {
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

#[cfg(feature = "embedding")]
/// Every distinct strategy of `pairs` (lessons and proposals) embedded once.
pub fn embed_all(
    model: &meta_utl_mcp::embedding::Embedder,
    pairs: &[Pair],
) -> HashMap<String, Vec<f32>> {
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

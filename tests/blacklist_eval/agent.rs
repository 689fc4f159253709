//! The issue-15 matcher (score, threshold and guard: the "before" of issue 30) on the
//! agent-style sets: the development set `blacklist_pairs_agent_dev.jsonl` and the frozen test
//! set `blacklist_pairs_agent_test.jsonl`. The classifier that replaced it: [`crate::classified`].
//!
//! Each matcher (the lexical score with the guard, as `decide_lexical` decides; the cosine of
//! all-MiniLM-L6-v2 vectors with the guard, as `decide` decides with the model) is measured
//!
//! - on the development set, held out: thresholds chosen by cross-validation over tasks
//!   ([`cross_validate`], [`FOLDS`] folds);
//! - on the frozen test set, once, at the threshold chosen on all development pairs;
//! - on both sets at the shipped constant (`LEXICAL_THRESHOLD`, `EMBEDDING_THRESHOLD`, chosen on
//!   the first development set), i.e. what the server answers today.
//!
//! Every figure comes with a 95 % percentile bootstrap interval over **tasks**
//! ([`RESAMPLES`] resamples of the set's tasks with replacement, seed [`SEED`]; each resample
//! keeps each pair's decision, so the interval covers the sampling of tasks, not the choice of
//! the threshold). For the test set only aggregate figures are printed — overall, hard
//! negatives, longer restatements and one row per kind — never a pair.
//!
//! The development set's misclassified pairs are listed when `BLACKLIST_EVAL_ERRORS` is set.

use std::fmt::Write as _;

use crate::harness::*;
use crate::stats::{Estimate, percentile_interval, resample_groups};
use meta_utl_mcp::service::lessons::guard::{self, GuardReason};
use meta_utl_mcp::service::lessons::lexical::LexicalText;

/// Folds of the cross-validation over tasks.
pub const FOLDS: usize = 5;
/// Bootstrap resamples of tasks.
pub const RESAMPLES: usize = 1000;
/// Seed of the bootstrap's generator (the number).
pub const SEED: u64 = 30;
/// Level of the confidence intervals: 0.95, the conventional 95 %, of percentile bootstrap
/// intervals over [`RESAMPLES`] resamples of tasks (`stats.rs`).
const LEVEL: f64 = 0.95;

// Issue 30's targets, on the frozen test set, for the matcher that replaces today's: printed
// beside the figures, asserted once that matcher lands (they then replace the regression
// floors in `lexical` and `embedding` below).

/// F1 with the model.
#[cfg_attr(not(feature = "embedding"), allow(dead_code))]
pub const TARGET_F1_MODEL: f64 = 0.90;
/// F1 of the lexical matcher alone.
pub const TARGET_F1_LEXICAL: f64 = 0.80;
/// Hard negatives (reversal, changed target, changed version or number) let through.
pub const TARGET_HARD_LET_THROUGH: f64 = 0.80;
/// Longer restatements (`terse_verbose` positives longer than their lesson) blacklisted.
pub const TARGET_VERBOSE_CAUGHT: f64 = 0.80;

/// The guard on raw strategies, as the server applies it.
fn rules(l: &str, p: &str) -> Option<GuardReason> {
    guard::check(&LexicalText::new(l), &LexicalText::new(p))
}

/// The report of the pairs `indices` of `scored`, each decided at its threshold.
fn report_of(
    scored: &[Scored],
    thresholds: &[f64],
    indices: impl IntoIterator<Item = usize>,
) -> Report {
    let mut r = Report::default();
    for i in indices {
        r.add(&scored[i], thresholds[i]);
    }
    r
}

/// A matcher's decisions on one set, with the reports of the bootstrap resamples of its tasks.
pub struct Measured {
    /// The report on the whole set.
    pub report: Report,
    /// The reports on [`RESAMPLES`] resamples of the set's tasks.
    resamples: Vec<Report>,
}

impl Measured {
    /// Decides each pair of `scored` at `thresholds` (one a pair) and resamples the tasks.
    pub fn new(scored: &[Scored], thresholds: &[f64]) -> Measured {
        assert_eq!(scored.len(), thresholds.len());
        let tasks = scored.iter().map(|s| s.task + 1).max().unwrap_or(0);
        let mut by_task: Vec<Vec<usize>> = vec![Vec::new(); tasks];
        for (i, s) in scored.iter().enumerate() {
            by_task[s.task].push(i);
        }
        let resamples = resample_groups(tasks, RESAMPLES, SEED)
            .iter()
            .map(|draw| {
                report_of(
                    scored,
                    thresholds,
                    draw.iter().flat_map(|&t| by_task[t].iter().copied()),
                )
            })
            .collect();
        Measured {
            report: report_of(scored, thresholds, 0..scored.len()),
            resamples,
        }
    }

    /// Every pair at one threshold.
    pub fn at(scored: &[Scored], threshold: f64) -> Measured {
        Measured::new(scored, &vec![threshold; scored.len()])
    }

    /// A figure of the report with its interval; `None` when undefined on the whole set.
    fn estimate(&self, figure: impl Fn(&Report) -> Option<f64>) -> Option<Estimate> {
        percentile_interval(
            figure(&self.report),
            self.resamples.iter().map(&figure),
            LEVEL,
        )
    }

    fn precision(&self) -> Option<Estimate> {
        self.estimate(|r| r.overall.precision())
    }

    fn recall(&self) -> Option<Estimate> {
        self.estimate(|r| r.overall.recall())
    }

    fn f1(&self) -> Option<Estimate> {
        self.estimate(|r| r.overall.f1())
    }

    fn hard_let_through(&self) -> Option<Estimate> {
        self.estimate(|r| r.hard_negatives.let_through())
    }

    fn verbose_caught(&self) -> Option<Estimate> {
        self.estimate(Report::verbose_caught)
    }

    /// The share of `kind`'s pairs answered right: blacklisted for a positive kind, let
    /// through for a negative one.
    fn kind_right(&self, kind: Kind) -> Option<Estimate> {
        self.estimate(|r| {
            let c = r.by_kind.get(&kind)?;
            if kind.is_positive() {
                c.recall()
            } else {
                c.let_through()
            }
        })
    }

    /// The figures with their intervals: the headline line, then the table by kind.
    pub fn table(&self, title: &str, f1_target: f64) -> String {
        let show = |e: Option<Estimate>| e.map_or_else(|| "–".to_owned(), |e| e.to_string());
        let mut out = table(title, &self.report);
        let _ = writeln!(
            out,
            "  95 % intervals over tasks ({RESAMPLES} resamples, seed {SEED}):\n    P {}  R {}  F1 {} (target {f1_target:.2})\n    hard negatives let through {} (target {TARGET_HARD_LET_THROUGH:.2})\n    longer restatements caught {} (target {TARGET_VERBOSE_CAUGHT:.2}; n = {})",
            show(self.precision()),
            show(self.recall()),
            show(self.f1()),
            show(self.hard_let_through()),
            show(self.verbose_caught()),
            self.report.longer_restatements.n(),
        );
        let _ = writeln!(out, "    answered right, by kind:");
        for kind in Kind::ALL {
            if let Some(c) = self.report.by_kind.get(&kind) {
                let _ = writeln!(
                    out,
                    "      {:<24} {:>4}  {}",
                    kind.name(),
                    c.n(),
                    show(self.kind_right(kind))
                );
            }
        }
        out
    }

    /// One row of the baseline table in `tests/data/README.md` (Markdown).
    pub fn markdown_row(&self, label: &str) -> String {
        let show = |e: Option<Estimate>| e.map_or_else(|| "–".to_owned(), |e| e.to_string());
        format!(
            "| {label} | {} | {} | {} | {} | {} |",
            show(self.precision()),
            show(self.recall()),
            show(self.f1()),
            show(self.hard_let_through()),
            show(self.verbose_caught()),
        )
    }
}

/// A matcher's figures on both agent sets.
struct Baseline {
    /// Development set, held out over the folds.
    dev_cv: Measured,
    /// Development set at the shipped constant.
    dev_shipped: Measured,
    /// Frozen test set at the threshold chosen on all development pairs.
    test_chosen: Measured,
    /// Frozen test set at the shipped constant.
    test_shipped: Measured,
}

/// Measures a matcher (`score` with the guard, shipped at `shipped`) on the agent sets and
/// prints its tables: per pair on the development set when `BLACKLIST_EVAL_ERRORS` is set,
/// aggregates only on the test set.
fn measure(
    name: &str,
    score: ScoreFn<'_>,
    shipped: f64,
    f1_target: f64,
    dev: &[Pair],
    test: &[Pair],
) -> Baseline {
    let dev_scored = score_pairs(dev, score, Some(&rules));
    let cv = cross_validate(&dev_scored, FOLDS);
    let dev_cv = Measured::new(&dev_scored, &cv.thresholds);
    eprintln!(
        "{}",
        dev_cv.table(
            &format!(
                "agent development set, {name}, held out ({FOLDS} folds by task; thresholds \
                 {:.3?}; on all pairs {:.4})",
                cv.fold_thresholds, cv.final_threshold
            ),
            f1_target
        )
    );
    let dev_shipped = Measured::at(&dev_scored, shipped);
    eprintln!(
        "{}",
        dev_shipped.table(
            &format!("agent development set, {name}, at the shipped {shipped}"),
            f1_target
        )
    );
    if std::env::var_os("BLACKLIST_EVAL_ERRORS").is_some() {
        eprintln!(
            "agent development set, {name} at the shipped {shipped}, errors:\n{}",
            errors(dev, &dev_scored, shipped)
        );
    }

    // The frozen test set: thresholds fixed before it is scored, aggregates only.
    let test_scored = score_pairs(test, score, Some(&rules));
    let test_chosen = Measured::at(&test_scored, cv.final_threshold);
    eprintln!(
        "{}",
        test_chosen.table(
            &format!(
                "agent frozen test set, {name}, at {:.4} (chosen on the development set)",
                cv.final_threshold
            ),
            f1_target
        )
    );
    let test_shipped = Measured::at(&test_scored, shipped);
    eprintln!(
        "{}",
        test_shipped.table(
            &format!("agent frozen test set, {name}, at the shipped {shipped}"),
            f1_target
        )
    );
    let baseline = Baseline {
        dev_cv,
        dev_shipped,
        test_chosen,
        test_shipped,
    };
    eprintln!(
        "baseline rows ({name}): P | R | F1 | hard let through | longer caught\n{}\n{}\n{}\n{}\n",
        baseline
            .dev_cv
            .markdown_row(&format!("{name}, dev, held out")),
        baseline
            .dev_shipped
            .markdown_row(&format!("{name}, dev, at {shipped}")),
        baseline
            .test_chosen
            .markdown_row(&format!("{name}, test, at {:.4}", cv.final_threshold)),
        baseline
            .test_shipped
            .markdown_row(&format!("{name}, test, at {shipped}")),
    );
    baseline
}

/// Regression floors of one matcher on the agent sets: today's figures minus a margin (0.02 on
/// figures over a hundred pairs or more, 0.06 — two pairs — on the 34 longer restatements of the
/// test set), rounded down to two decimals, so that a change that loses ground fails. They are
/// not goals: issue 30's targets (`TARGET_*`, on the frozen test set) replace them when the new
/// matcher lands.
struct Floors {
    /// F1 held out on the development set.
    dev_f1: f64,
    /// Hard negatives let through, held out on the development set.
    dev_hard: f64,
    /// F1 on the test set at the threshold chosen on the development set.
    test_f1: f64,
    /// Hard negatives let through on the test set at that threshold.
    test_hard: f64,
    /// F1 on the test set at the shipped constant.
    shipped_f1: f64,
    /// Hard negatives let through on the test set at the shipped constant.
    shipped_hard: f64,
    /// Longer restatements caught on the test set at the shipped constant.
    shipped_verbose: f64,
}

impl Floors {
    /// Fails on the first figure of `b` under its floor.
    fn check(&self, b: &Baseline) {
        let checks = [
            ("dev held-out F1", b.dev_cv.report.overall.f1(), self.dev_f1),
            (
                "dev held-out hard negatives let through",
                b.dev_cv.report.hard_negatives.let_through(),
                self.dev_hard,
            ),
            ("test F1", b.test_chosen.report.overall.f1(), self.test_f1),
            (
                "test hard negatives let through",
                b.test_chosen.report.hard_negatives.let_through(),
                self.test_hard,
            ),
            (
                "test F1 at the shipped threshold",
                b.test_shipped.report.overall.f1(),
                self.shipped_f1,
            ),
            (
                "test hard negatives let through at the shipped threshold",
                b.test_shipped.report.hard_negatives.let_through(),
                self.shipped_hard,
            ),
            (
                "test longer restatements caught at the shipped threshold",
                b.test_shipped.report.verbose_caught(),
                self.shipped_verbose,
            ),
        ];
        for (what, value, floor) in checks {
            let value = value.unwrap_or_else(|| panic!("{what}: undefined"));
            assert!(value >= floor, "{what}: {value:.3} < floor {floor}");
        }
    }
}

/// The first development set and the frozen test set, on which the issue-15 matcher's
/// baseline was measured (`tests/data/README.md`): its floors belong to that set.
fn baseline_sets() -> (Vec<Pair>, Vec<Pair>) {
    let (dev, test) = sets();
    let first: Vec<Pair> = dev.into_iter().take(1105).collect();
    assert!(
        first.iter().all(|p| p.task < 180),
        "the first set comes first"
    );
    (first, test)
}

/// The sets are what `tests/data/README.md` says they are.
pub fn sets() -> (Vec<Pair>, Vec<Pair>) {
    let (dev, test) = (agent_dev_set(), agent_test_set());
    assert_eq!(dev.len(), 1105 + 529 + 457, "development pairs");
    assert_eq!(test.len(), 455, "test pairs");
    let tasks = |set: &[Pair]| set.iter().map(|p| p.task + 1).max().unwrap_or(0);
    assert_eq!((tasks(&dev), tasks(&test)), (180 + 83 + 62, 61), "tasks");
    (dev, test)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A positive pair of `task` whose effective score is `score`.
    fn positive(task: usize, score: f64) -> Scored {
        Scored {
            task,
            same: true,
            kind: Kind::Synonym,
            longer: false,
            structural: false,
            top: score,
            effective: score,
            guarded: Vec::new(),
        }
    }

    #[test]
    fn resamples_draw_whole_tasks() {
        // Task 0: two positives blocked at 0.5; task 1: two missed. A resample of two tasks
        // holds 0, 1 or 2 copies of task 0, so its recall is 0, 0.5 or 1 (with probabilities
        // 1/4, 1/2, 1/4) — never 0.25 or 0.75, which resampling pairs would give.
        let scored = [
            positive(0, 0.9),
            positive(0, 0.8),
            positive(1, 0.1),
            positive(1, 0.2),
        ];
        let m = Measured::at(&scored, 0.5);
        assert_eq!(m.resamples.len(), RESAMPLES);
        let recalls: Vec<f64> = m
            .resamples
            .iter()
            .map(|r| r.overall.recall().expect("positives"))
            .collect();
        assert!(
            recalls.iter().all(|r| [0.0, 0.5, 1.0].contains(r)),
            "{recalls:?}"
        );
        assert!(m.resamples.iter().all(|r| r.overall.n() == 4));
        let share = |x: f64| recalls.iter().filter(|&&r| r == x).count() as f64 / RESAMPLES as f64;
        assert!((share(0.5) - 0.5).abs() < 0.06, "{}", share(0.5));
        // Both tails hold about a quarter of the resamples, so the 95 % interval is [0, 1].
        let e = m.recall().expect("defined");
        assert_eq!((e.value, e.low, e.high), (0.5, 0.0, 1.0));
        // Undefined on the whole set (no negatives): no interval.
        assert_eq!(m.hard_let_through(), None);
    }
}

#[cfg(test)]
mod lexical {
    use super::*;
    use meta_utl_mcp::service::lessons::matching::{LEXICAL_THRESHOLD, lexical_similarity};

    /// Today's figures (measured on 2026-11-27) minus the margin of [`Floors`].
    const FLOORS: Floors = Floors {
        dev_f1: 0.75,          // 0.775
        dev_hard: 0.91,        // 0.935
        test_f1: 0.79,         // 0.812
        test_hard: 0.86,       // 0.890
        shipped_f1: 0.73,      // 0.757
        shipped_hard: 0.40,    // 0.425
        shipped_verbose: 0.29, // 0.353
    };

    fn lexical(l: &str, p: &str) -> f64 {
        lexical_similarity(&LexicalText::new(l), &LexicalText::new(p))
    }

    /// Run with `cargo test --test blacklist_eval agent -- --nocapture` to see the tables.
    #[test]
    fn agent_sets_lexical() {
        let (dev, test) = baseline_sets();
        let b = measure(
            "lexical + guard",
            &lexical,
            LEXICAL_THRESHOLD,
            TARGET_F1_LEXICAL,
            &dev,
            &test,
        );
        FLOORS.check(&b);
    }
}

#[cfg(all(test, feature = "embedding"))]
mod embedding {
    use super::*;
    use meta_utl_mcp::embedding::Embedder;
    use meta_utl_mcp::service::lessons::vectors::{EMBEDDING_THRESHOLD, cosine_score};

    /// Today's figures (measured on 2026-11-27) minus the margin of [`Floors`].
    const FLOORS: Floors = Floors {
        dev_f1: 0.72,          // 0.749
        dev_hard: 0.81,        // 0.835
        test_f1: 0.76,         // 0.786
        test_hard: 0.80,       // 0.827
        shipped_f1: 0.74,      // 0.768
        shipped_hard: 0.31,    // 0.339
        shipped_verbose: 0.76, // 0.824
    };

    /// Run with `META_UTL_EMBEDDING_MODEL=DIR cargo test --test blacklist_eval agent --
    /// --nocapture` to see the tables.
    #[test]
    fn agent_sets_embedding() {
        let Some(dir) = crate::common::real_model("agent_sets_embedding") else {
            return;
        };
        let model = Embedder::load(&dir).expect("load the model");
        let (dev, test) = baseline_sets();
        let mut vectors = embed_all(&model, &dev);
        vectors.extend(embed_all(&model, &test));
        let cosine = |l: &str, p: &str| cosine_score(&vectors[l], &vectors[p]);
        let b = measure(
            "cosine + guard",
            &cosine,
            EMBEDDING_THRESHOLD,
            TARGET_F1_MODEL,
            &dev,
            &test,
        );
        FLOORS.check(&b);
    }
}

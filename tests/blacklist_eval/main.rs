//! Evaluation of blacklist matchers on the labelled pair sets of `tests/data/` (format, kinds
//! and the rules of each set: `tests/data/README.md`), over the crate's public matching API.
//!
//! - [`harness`]: pairs, scoring, confusion counts, reports by kind, cross-validation;
//! - [`stats`]: the seeded generator, percentiles and bootstrap intervals;
//! - [`old_sets`]: the first development set and the fresh set (issue 15);
//! - [`agent`]: the agent-style development set and frozen test set (issue 30), with 95 %
//!   intervals by resampling tasks: the issue-15 matcher (score, threshold and guard);
//! - [`classified`]: the blacklist classifier of issue 30 on the same sets.
//!
//! Run with `META_UTL_EMBEDDING_MODEL=DIR cargo test --test blacklist_eval -- --nocapture` to
//! see every table (without the variable the embedding matcher's tests say they skipped).
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
//! let pairs = agent_dev_set();
//! let cosine = |l: &str, p: &str| dot(&embed(l), &embed(p));       // Fn(&str, &str) -> f64
//! let guard = |l: &str, p: &str| guard::check(&LexicalText::new(l), &LexicalText::new(p));
//! let cv = cross_validate(&score_pairs(&pairs, &cosine, Some(&guard)), 5);
//! eprintln!("{}", table("embedding + guard, held out", &cv.held_out));   // cv.final_threshold
//! ```

#[path = "../common/mod.rs"]
mod common;

mod agent;
mod classified;
mod harness;
mod old_sets;
mod stats;

//! Recall at the moment of action (the Claude Code plugin's hooks): which lessons a user's
//! prompt is about, and whether a shell command or an edit carries out a lesson's strategy.
//! Pure functions over text; the hooks load the lessons and budget what they show.
//!
//! Both are deliberately conservative, because a hook speaks without being asked: a lesson
//! shown where it does not belong costs the model's attention on every prompt.
//!
//! - **Relevance** ([`relevance`]): the lesson's task id and strategy and the prompt are cut
//!   into the blacklist's lexical content terms ([`LexicalText`]: stems, coding synonyms
//!   folded, stop words dropped); a lesson is relevant when the prompt holds at least
//!   [`MIN_SHARED_TERMS`] of its terms and at least [`MIN_COVERAGE`] of them.
//! - **Carrying out** ([`carries_out`]): a strategy's *distinctive tokens* ([`distinctive_tokens`]:
//!   backticked code, and words holding a digit or one of `/ . _ @ = :` or starting with `-`,
//!   such as `lodash@4.17.15`, `--no-verify`, `tests/checkout.py`, `1.0.100`) are looked for in
//!   the command; it carries the strategy out when at least [`MIN_TOKENS_FOUND`] of them occur
//!   and no more than one is missing. A strategy told in words only ("raise the timeout") has
//!   too few such tokens and is never matched to a command: the prompt hook covers it.

use super::lexical::LexicalText;

/// A relevant lesson shares at least this many content terms with the prompt.
pub const MIN_SHARED_TERMS: usize = 2;

/// A relevant lesson has at least this share (0 to 1) of its content terms in the prompt.
pub const MIN_COVERAGE: f64 = 0.4;

/// A command carries out a strategy when at least this many of the strategy's distinctive
/// tokens occur in it.
pub const MIN_TOKENS_FOUND: usize = 2;

/// How a lesson relates to a prompt: the content terms they share and the lesson's share of
/// them (0 to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relevance {
    /// Distinct content terms of the lesson found in the prompt.
    pub shared: usize,
    /// `shared` over the lesson's distinct content terms; 0 for a lesson without terms.
    pub coverage: f64,
}

impl Relevance {
    /// Whether it clears the bar ([`MIN_SHARED_TERMS`] and [`MIN_COVERAGE`]).
    pub fn is_relevant(&self) -> bool {
        self.shared >= MIN_SHARED_TERMS && self.coverage >= MIN_COVERAGE
    }
}

fn term_set(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = LexicalText::new(text).terms().to_vec();
    terms.sort();
    terms.dedup();
    terms
}

/// How the lesson text `lesson` (its task id and strategy) relates to `prompt`.
pub fn relevance(lesson: &str, prompt: &str) -> Relevance {
    let lesson = term_set(lesson);
    let prompt = term_set(prompt);
    let shared = lesson
        .iter()
        .filter(|t| prompt.binary_search(t).is_ok())
        .count();
    let coverage = if lesson.is_empty() {
        0.0
    } else {
        shared as f64 / lesson.len() as f64
    };
    Relevance { shared, coverage }
}

/// The distinctive tokens of a strategy (see the module documentation), in order, without
/// repeats: backticked spans whole, then words with a digit or one of `/ . _ @ = :` inside, or
/// a leading `-`. Trailing sentence punctuation is dropped; a token of one character is not
/// distinctive.
pub fn distinctive_tokens(strategy: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |t: &str| {
        let t =
            t.trim_matches(|c: char| matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | '!' | '?'));
        let t = t.trim_end_matches(['.', ':']);
        if t.chars().count() > 1 && !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    };
    for (i, part) in strategy.split('`').enumerate() {
        if i % 2 == 1 {
            // Inside backticks: code, whole.
            push(part.trim());
            continue;
        }
        for word in part.split_whitespace() {
            let core = word.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
            let marked = core.chars().any(|c| c.is_ascii_digit())
                || core
                    .trim_start_matches('-')
                    .contains(['/', '.', '_', '@', '=', ':'])
                || (core.starts_with('-') && core.len() > 1);
            if marked {
                push(core);
            }
        }
    }
    out
}

/// Whether `action` (a shell command, or an edit's file path and new text) carries out
/// `strategy`: at least [`MIN_TOKENS_FOUND`] of its [`distinctive_tokens`] occur in it, and at
/// most one does not.
pub fn carries_out(strategy: &str, action: &str) -> bool {
    let tokens = distinctive_tokens(strategy);
    let found = tokens
        .iter()
        .filter(|t| action.contains(t.as_str()))
        .count();
    found >= MIN_TOKENS_FOUND && tokens.len() - found <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinctive_tokens_are_code_versions_paths_and_flags() {
        assert_eq!(
            distinctive_tokens("Pin `lodash` to 4.17.15 with `npm install lodash@4.17.15`."),
            ["lodash", "4.17.15", "npm install lodash@4.17.15"]
        );
        assert_eq!(
            distinctive_tokens("Skip the hooks with --no-verify in tests/checkout.py, then retry."),
            ["--no-verify", "tests/checkout.py"]
        );
        assert!(distinctive_tokens("Raise the timeout and retry the flaky test").is_empty());
    }

    #[test]
    fn a_command_carries_out_a_strategy_only_with_its_tokens() {
        let pin = "Pin `lodash` to 4.17.15 to avoid the prototype pollution warning";
        assert!(carries_out(pin, "npm install lodash@4.17.15 --save-exact"));
        // Another version: the reversal of the lesson's number is not a repeat.
        assert!(!carries_out(pin, "npm install lodash@4.17.21"));
        assert!(!carries_out(pin, "npm test"));
        // Words only: never matched to a command.
        assert!(!carries_out("Raise the timeout", "raise the timeout"));
        let skip = "Commit with `--no-verify` to skip the pre-commit hook in `ci/lint.sh`";
        assert!(carries_out(
            skip,
            "git commit --no-verify -m wip && ci/lint.sh"
        ));
        assert!(!carries_out(skip, "git commit -m wip"));
    }

    #[test]
    fn relevance_needs_shared_terms_and_coverage() {
        let lesson = "flaky checkout test: Increase the checkout integration test timeout to 60 \
                      seconds";
        let r = relevance(
            lesson,
            "The checkout integration test is flaky again, please fix it",
        );
        assert!(r.is_relevant(), "{r:?}");
        let r = relevance(lesson, "Add a dark mode toggle to the settings page");
        assert!(!r.is_relevant(), "{r:?}");
        // One shared word is not enough.
        let r = relevance(lesson, "Write a test for the parser");
        assert!(!r.is_relevant(), "{r:?}");
        assert_eq!(relevance("", "anything").coverage, 0.0);
    }
}

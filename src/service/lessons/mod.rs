//! Lessons learned and the strategy blacklist: the plain types, validation limits and the
//! strategy matcher (SPEC §4 lessons; seed `lessons-blacklist.md`; issue 7).
//!
//! A *lesson* records that a strategy failed on a task, with its root-cause analysis. Before an
//! agent starts a strategy it asks whether a lesson of the same task blacklists it; the match is
//! done here ([`matching`]) on normalised text ([`text`]): exact and containment rules, then a
//! similarity score over a tuned threshold ([`lexical`] terms when no embedding model is loaded),
//! unless the [`guard`] sees a reversal or a changed target (issue 15). `eval` (tests only)
//! measures matchers on the labelled pairs of `tests/data/` and chooses their thresholds. The
//! store keeps lessons unique per (task id, normalised strategy). The directive history (human
//! interventions) is owned by `store::directives`; only its text limits live here.

#[cfg(test)]
pub(crate) mod eval;
pub mod guard;
pub mod lexical;
pub mod matching;
pub mod text;

use chrono::{DateTime, Utc};
use thiserror::Error;
use uuid::Uuid;

pub use guard::GuardReason;
pub use lexical::LexicalText;
pub use matching::{
    Candidate, Decision, LEXICAL_THRESHOLD, MatchType, NearMiss, SIMILARITY_THRESHOLD,
    StrategyMatch, best_match, best_match_tokens, decide, decide_lexical, lexical_similarity,
    match_strategy,
};
pub use text::{FieldError, check_text, fold_text, normalise_strategy, word_spans};

/// Maximum characters of `strategy_description` / `strategy` (issue 7).
pub const MAX_STRATEGY_CHARS: usize = 4096;
/// Maximum characters of `rca_summary` (issue 7).
pub const MAX_RCA_CHARS: usize = 16_384;
/// Maximum characters of an identifier: `task_id`, `source_agent`, `actor` (issue 7).
pub const MAX_ID_CHARS: usize = 256;
/// Maximum characters of a directive `description` (the same budget as a root-cause summary).
pub const MAX_DESCRIPTION_CHARS: usize = MAX_RCA_CHARS;
/// Maximum characters of the `rationale` of `set_lesson_active` (as for every rationale in the
/// server, e.g. `epistemic_action`).
pub const MAX_RATIONALE_CHARS: usize = 1024;
/// Default actor of a directive (issue 7).
pub const DEFAULT_ACTOR: &str = "USER";
/// Default page size of `list_directive_history`.
pub const DEFAULT_HISTORY_LIMIT: u32 = 50;
/// Largest page size of `list_directive_history`.
pub const MAX_HISTORY_LIMIT: u32 = 1000;
/// How many lessons of other tasks `include_related` returns.
pub const RELATED_LESSONS: usize = 5;

/// Why a strategy failed (seed `lessons-blacklist.md`, `failure_type` enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureType {
    /// The agent misread the system's architecture.
    ArchitecturalMisunderstanding,
    /// A tool was used wrongly.
    ToolMisuse,
    /// Incompatible dependencies.
    DependencyConflict,
    /// A bug in the agent's own logic.
    LogicError,
    /// Cause not determined.
    Unknown,
}

impl FailureType {
    /// Wire names in schema order.
    pub const NAMES: &'static [&'static str] = &[
        "ARCHITECTURAL_MISUNDERSTANDING",
        "TOOL_MISUSE",
        "DEPENDENCY_CONFLICT",
        "LOGIC_ERROR",
        "UNKNOWN",
    ];
    const ALL: [FailureType; 5] = [
        FailureType::ArchitecturalMisunderstanding,
        FailureType::ToolMisuse,
        FailureType::DependencyConflict,
        FailureType::LogicError,
        FailureType::Unknown,
    ];

    /// The wire name, e.g. `"TOOL_MISUSE"`.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Parses a wire name (exact, upper case as in the seed's enum).
    ///
    /// # Errors
    /// [`FieldError::InvalidEnum`] naming `failure_type` and the allowed values.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| FieldError::InvalidEnum {
                field: "failure_type",
                value: s.to_owned(),
                allowed: Self::NAMES,
            })
    }
}

/// A stored lesson, as plain fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Lesson {
    /// Lesson id.
    pub id: Uuid,
    /// Task the lesson belongs to (1..256 characters, as given).
    pub task_id: String,
    /// The failed strategy, as given.
    pub strategy_description: String,
    /// [`normalise_strategy`] of `strategy_description`; unique per task.
    pub normalised_strategy: String,
    /// Root-cause analysis summary.
    pub rca_summary: String,
    /// Failure classification.
    pub failure_type: FailureType,
    /// Agent that logged the lesson.
    pub source_agent: String,
    /// Inactive lessons no longer blacklist anything.
    pub is_active: bool,
    /// When it was logged (UTC).
    pub created_at: DateTime<Utc>,
}

/// A validated `log_lesson_learned` request, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewLesson {
    /// Task id.
    pub task_id: String,
    /// Strategy as given.
    pub strategy_description: String,
    /// Its normalised form (never empty).
    pub normalised_strategy: String,
    /// Root-cause summary.
    pub rca_summary: String,
    /// Failure classification.
    pub failure_type: FailureType,
    /// Agent that logs it.
    pub source_agent: String,
}

impl NewLesson {
    /// Validates the raw fields of `log_lesson_learned` and normalises the strategy.
    ///
    /// Limits (characters): `task_id` and `source_agent` 1..=256, `strategy_description`
    /// 1..=4096, `rca_summary` 1..=16384; none may be whitespace-only; the strategy must keep
    /// something after normalisation (punctuation-only is empty); `failure_type` must be one of
    /// [`FailureType::NAMES`]. Fields are checked in the seed's `required` order and the first
    /// failure is reported.
    ///
    /// # Errors
    /// The first [`FieldError`], naming its field.
    pub fn validate(
        task_id: &str,
        strategy_description: &str,
        rca_summary: &str,
        failure_type: &str,
        source_agent: &str,
    ) -> Result<Self, FieldError> {
        check_text("task_id", task_id, MAX_ID_CHARS)?;
        check_text(
            "strategy_description",
            strategy_description,
            MAX_STRATEGY_CHARS,
        )?;
        check_text("rca_summary", rca_summary, MAX_RCA_CHARS)?;
        let failure_type = FailureType::parse(failure_type)?;
        check_text("source_agent", source_agent, MAX_ID_CHARS)?;
        let normalised_strategy = normalise_strategy(strategy_description);
        if normalised_strategy.is_empty() {
            return Err(FieldError::Empty {
                field: "strategy_description",
            });
        }
        Ok(NewLesson {
            task_id: task_id.to_owned(),
            strategy_description: strategy_description.to_owned(),
            normalised_strategy,
            rca_summary: rca_summary.to_owned(),
            failure_type,
            source_agent: source_agent.to_owned(),
        })
    }
}

/// Why a lesson operation could not be done (mapped to the structured `{success: false, error}`
/// results of the lesson tools).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LessonError {
    /// `VALIDATION_ERROR`: a field failed its check.
    #[error("{0}")]
    Validation(#[from] FieldError),
    /// `LESSON_ALREADY_EXISTS`: the task already has a lesson with this normalised strategy.
    #[error("task already has a lesson for this strategy (lesson {existing})")]
    AlreadyExists {
        /// Id of the lesson that already exists.
        existing: Uuid,
    },
    /// `LESSON_NOT_FOUND`: no lesson with this id.
    #[error("no lesson with id {0}")]
    NotFound(Uuid),
}

impl LessonError {
    /// The wire error code: `VALIDATION_ERROR`, `LESSON_ALREADY_EXISTS` or `LESSON_NOT_FOUND`.
    pub fn code(&self) -> &'static str {
        match self {
            LessonError::Validation(_) => "VALIDATION_ERROR",
            LessonError::AlreadyExists { .. } => "LESSON_ALREADY_EXISTS",
            LessonError::NotFound(_) => "LESSON_NOT_FOUND",
        }
    }
}

/// The text indexed for related-lesson search: the word tokens ([`text::word_tokens`]) of the
/// normalised strategy and of the folded root-cause summary, joined by single spaces.
///
/// Tokenising here (UAX #29) rather than only in SQLite's `unicode61` tokenizer makes every Han
/// ideograph its own search term, so Chinese lessons are found by shared characters.
pub fn search_terms(strategy: &str, rca: &str) -> String {
    let s = normalise_strategy(strategy);
    let r = fold_text(rca);
    let mut out = text::word_tokens(&s).join(" ");
    for t in text::word_tokens(&r) {
        out.push(' ');
        out.push_str(t);
    }
    out
}

/// The distinct search terms of a proposal for a full-text query, at most `max` of them, in
/// first-seen order. Terms without any letter or digit (emoji, symbols) are dropped: the
/// full-text index does not index them.
pub fn query_terms(proposal: &str, max: usize) -> Vec<String> {
    let s = normalise_strategy(proposal);
    let mut out: Vec<String> = Vec::new();
    for t in text::word_tokens(&s) {
        if t.chars().any(char::is_alphanumeric) && !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
            if out.len() == max {
                break;
            }
        }
    }
    out
}

/// The outcome of [`check_blacklist`].
#[derive(Debug, Clone, PartialEq)]
pub struct BlacklistHit<'a> {
    /// The lesson that blacklists the proposal.
    pub lesson: &'a Lesson,
    /// How it matched.
    pub matched: StrategyMatch,
}

/// Checks a proposal against a task's lessons: the best match among the **active** ones
/// (see [`best_match`] for the ranking; ties go to the earlier lesson in `lessons`).
///
/// `proposal` is the raw strategy; it is normalised here. Returns `None` for an empty
/// (after normalisation) proposal or when nothing matches. Inactive lessons are skipped.
///
/// This is the in-memory form of the decision. `check_strategy_blacklist` makes the same one
/// in two steps (the task's active normalised strategies from the store, [`best_match`], then
/// the one matched row) so that it never loads the other lessons' summaries.
pub fn check_blacklist<'a>(proposal: &str, lessons: &'a [Lesson]) -> Option<BlacklistHit<'a>> {
    let proposal = normalise_strategy(proposal);
    if proposal.is_empty() {
        return None;
    }
    let active: Vec<&Lesson> = lessons.iter().filter(|l| l.is_active).collect();
    let (i, matched) = best_match(
        &proposal,
        active.iter().map(|l| l.normalised_strategy.as_str()),
    )?;
    Some(BlacklistHit {
        lesson: active[i],
        matched,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(strategy: &str, active: bool) -> Lesson {
        Lesson {
            id: Uuid::from_u128(strategy.len() as u128),
            task_id: "task-1".into(),
            strategy_description: strategy.into(),
            normalised_strategy: normalise_strategy(strategy),
            rca_summary: "rca".into(),
            failure_type: FailureType::LogicError,
            source_agent: "agent".into(),
            is_active: active,
            created_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    #[test]
    fn enums_round_trip_and_reject_unknown() {
        for name in FailureType::NAMES {
            assert_eq!(FailureType::parse(name).unwrap().as_str(), *name);
        }
        let err = FailureType::parse("logic_error").unwrap_err();
        assert_eq!(err.field(), "failure_type");
        assert!(err.to_string().contains("LOGIC_ERROR"), "{err}");
    }

    #[test]
    fn new_lesson_validation_table() {
        let long_strategy = "策".repeat(MAX_STRATEGY_CHARS + 1);
        let long_rca = "x".repeat(MAX_RCA_CHARS + 1);
        let long_id = "é".repeat(MAX_ID_CHARS + 1);
        let max_id = "é".repeat(MAX_ID_CHARS);
        // (task_id, strategy, rca, failure_type, agent, Err(field) or Ok)
        type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, Option<&'a str>);
        let cases: &[Case] = &[
            ("t", "use the cache", "rca", "LOGIC_ERROR", "a", None),
            (&max_id, "use the cache", "rca", "UNKNOWN", &max_id, None),
            (
                "",
                "use the cache",
                "rca",
                "LOGIC_ERROR",
                "a",
                Some("task_id"),
            ),
            (&long_id, "s", "rca", "LOGIC_ERROR", "a", Some("task_id")),
            (
                "t",
                "  ",
                "rca",
                "LOGIC_ERROR",
                "a",
                Some("strategy_description"),
            ),
            (
                "t",
                "?!…",
                "rca",
                "LOGIC_ERROR",
                "a",
                Some("strategy_description"),
            ),
            (
                "t",
                &long_strategy,
                "rca",
                "LOGIC_ERROR",
                "a",
                Some("strategy_description"),
            ),
            ("t", "s", "", "LOGIC_ERROR", "a", Some("rca_summary")),
            ("t", "s", &long_rca, "LOGIC_ERROR", "a", Some("rca_summary")),
            ("t", "s", "rca", "BAD", "a", Some("failure_type")),
            ("t", "s", "rca", "LOGIC_ERROR", "", Some("source_agent")),
            (
                "t",
                "s",
                "rca",
                "LOGIC_ERROR",
                &long_id,
                Some("source_agent"),
            ),
        ];
        for (task, strategy, rca, ft, agent, want) in cases {
            let got = NewLesson::validate(task, strategy, rca, ft, agent);
            match (got, want) {
                (Ok(l), None) => assert!(!l.normalised_strategy.is_empty()),
                (Err(e), Some(field)) => assert_eq!(e.field(), *field, "{e}"),
                (got, want) => panic!("got {got:?}, want error on {want:?}"),
            }
        }
    }

    #[test]
    fn check_blacklist_skips_inactive_and_empty() {
        let lessons = vec![
            lesson("Use the global cache", false),
            lesson("rewrite the parser", true),
        ];
        assert_eq!(check_blacklist("use the global cache", &lessons), None);
        let hit = check_blacklist("REWRITE the parser!", &lessons).expect("hit");
        assert_eq!(hit.lesson.strategy_description, "rewrite the parser");
        assert_eq!(hit.matched.match_type, MatchType::Exact);
        assert_eq!(check_blacklist("   ", &lessons), None);
        assert_eq!(check_blacklist("", &[]), None);
    }

    #[test]
    fn search_and_query_terms() {
        assert_eq!(
            search_terms("Rewrite the PARSER!", "Parser 重写 failed"),
            "rewrite the parser parser 重 写 failed"
        );
        assert_eq!(
            query_terms("the cache, the cache 🚀 now", 10),
            ["the", "cache", "now"]
        );
        assert_eq!(query_terms("a b c d", 2), ["a", "b"]);
        assert!(query_terms("🚀 !!!", 10).is_empty());
    }

    #[test]
    fn error_codes() {
        let v = LessonError::from(FieldError::Empty { field: "task_id" });
        assert_eq!(v.code(), "VALIDATION_ERROR");
        let existing = Uuid::from_u128(7);
        assert_eq!(
            LessonError::AlreadyExists { existing }.code(),
            "LESSON_ALREADY_EXISTS"
        );
        assert_eq!(LessonError::NotFound(existing).code(), "LESSON_NOT_FOUND");
    }
}

//! Lessons learned and the strategy blacklist: the plain types, validation limits and the
//! strategy matcher (SPEC §4 lessons; seed `lessons-blacklist.md`; issue 7).
//!
//! A *lesson* records that a strategy failed on a task, with its root-cause analysis. Before an
//! agent starts a strategy it asks whether a lesson of the same task blacklists it; the match is
//! done here ([`matching`]) on normalised text ([`text`]): exact and containment rules, then a
//! logistic-regression [`classifier`] over the alignment [`features`] of the two strategies
//! (issue 30: [`lexical`] terms, the [`guard`]'s reversal and substitution rules, numbers,
//! identifiers, negation cues, and the embedding cosine when a model is loaded). `tests/blacklist_eval/`
//! measures matchers on the labelled pairs of `tests/data/` and chooses their thresholds. Task
//! ids are compared by their [`TaskKey`] (case, width and surrounding spaces folded); the store
//! keeps lessons unique per (task key, normalised strategy). The directive history (human
//! interventions) is owned by `store::directives`; only its text limits live here.

pub mod classifier;
pub mod features;
pub mod guard;
pub mod lexical;
pub mod matching;
pub mod recall;
pub mod similarity;
pub mod text;
pub mod vectors;

use chrono::{DateTime, Utc};
use thiserror::Error;
use uuid::Uuid;

pub use guard::GuardReason;
pub use lexical::LexicalText;
pub use matching::{
    Candidate, Decision, LEXICAL_THRESHOLD, MatchType, NearMiss, StrategyMatch, decide,
    decide_lexical, lexical_similarity,
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

/// Why a strategy failed (seed `lessons-blacklist.md`, `failure_type` enum). Wire names, in
/// schema order: `ARCHITECTURAL_MISUNDERSTANDING`, `TOOL_MISUSE`, `DEPENDENCY_CONFLICT`,
/// `LOGIC_ERROR`, `UNKNOWN`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
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
    pub const NAMES: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;
    /// Every value, in schema order.
    pub const ALL: [FailureType; 5] = crate::service::vocab::variants();

    /// The wire name, e.g. `"TOOL_MISUSE"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a wire name (exact, upper case as in the seed's enum).
    ///
    /// # Errors
    /// [`FieldError::InvalidEnum`] naming `failure_type` and the allowed values.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        s.parse().map_err(|_| FieldError::InvalidEnum {
            field: "failure_type",
            value: s.to_owned(),
            allowed: Self::NAMES,
        })
    }
}

/// A task id as the lesson and directive tools compare it: [`fold_text`] of the id as given
/// (Unicode case folding, compatibility normalisation — so full-width `ＴＡＳＫ－４２` is
/// `task-42` — and whitespace trimmed, inner runs collapsed to one space). `"TASK-42"`,
/// `" task-42 "` and `"ＴＡＳＫ－４２"` have one key. Ids are stored and shown as given; only
/// comparisons (duplicates, the blacklist, filters) use the key, which the store keeps beside
/// each id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskKey(String);

impl TaskKey {
    /// The key of a task id.
    pub fn of(task_id: &str) -> Self {
        TaskKey(fold_text(task_id))
    }

    /// A key as the store holds it (made by [`TaskKey::of`] when it was stored).
    pub fn from_stored(key: String) -> Self {
        TaskKey(key)
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key's words: split at every character that is not a letter or a digit, so that
    /// `fix-login-redirect`, `fix_login_redirect`, `fix/login-redirect` and
    /// `Fix login redirect` have the same words. Two task ids with the same words name the
    /// same task by the measure of `tests/task_identity.rs` (precision 1.0 on both splits of
    /// the labelled task-id pairs).
    pub fn words(&self) -> Vec<&str> {
        self.0
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect()
    }

    /// [`TaskKey::words`] joined by single spaces: what the store indexes beside each lesson
    /// (`task_words`), so that a check finds a task of the same words in one index lookup.
    pub fn words_key(&self) -> String {
        self.words().join(" ")
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
    /// Task id, as given.
    pub task_id: String,
    /// Its [`TaskKey`]: a task has one lesson per (key, normalised strategy).
    pub task_key: TaskKey,
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
    /// Validates the raw fields of a lesson: [`FailureType::parse`] of `failure_type` first,
    /// then [`NewLesson::new`] for the rest.
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
        let failure_type = FailureType::parse(failure_type)?;
        Self::new(
            task_id,
            strategy_description,
            rca_summary,
            failure_type,
            source_agent,
        )
    }

    /// Checks the fields of a lesson, normalises its strategy and keys its task.
    ///
    /// Limits (characters): `task_id` and `source_agent` 1..=256, `strategy_description`
    /// 1..=4096, `rca_summary` 1..=16384; none may be whitespace-only; the strategy must keep
    /// something after normalisation (punctuation-only is empty). Fields are checked in the
    /// order of the arguments and the first failure is reported.
    ///
    /// # Errors
    /// The first [`FieldError`], naming its field.
    pub fn new(
        task_id: &str,
        strategy_description: &str,
        rca_summary: &str,
        failure_type: FailureType,
        source_agent: &str,
    ) -> Result<Self, FieldError> {
        check_text("task_id", task_id, MAX_ID_CHARS)?;
        check_text(
            "strategy_description",
            strategy_description,
            MAX_STRATEGY_CHARS,
        )?;
        check_text("rca_summary", rca_summary, MAX_RCA_CHARS)?;
        check_text("source_agent", source_agent, MAX_ID_CHARS)?;
        // A strategy of only punctuation (`"???"`) normalises to nothing; it is keyed by its
        // folded text instead, so every non-blank strategy can be logged.
        let normalised_strategy = Some(normalise_strategy(strategy_description))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| fold_text(strategy_description));
        Ok(NewLesson {
            task_id: task_id.to_owned(),
            task_key: TaskKey::of(task_id),
            strategy_description: strategy_description.to_owned(),
            normalised_strategy,
            rca_summary: rca_summary.to_owned(),
            failure_type,
            source_agent: source_agent.to_owned(),
        })
    }
}

/// A lesson operation that the stored lessons refuse (the arguments were valid). The lesson
/// tools answer these as structured failures.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LessonError {
    /// The task already has a lesson with this normalised strategy (active or not).
    #[error("task already has a lesson for this strategy (lesson {existing})")]
    AlreadyExists {
        /// Id of the lesson that already exists.
        existing: Uuid,
    },
    /// No lesson with this id.
    #[error("no lesson with id {0}")]
    NotFound(Uuid),
    /// The task has no lesson with this normalised strategy.
    #[error("task {task_id:?} has no lesson for strategy {strategy:?}")]
    NoLessonFor {
        /// The task id as given.
        task_id: String,
        /// The strategy as given.
        strategy: String,
    },
}

/// The normalised form of a proposal to check against the blacklist, or `None` when there is
/// nothing to match: empty, whitespace-only or punctuation-only text is never blacklisted.
pub fn proposal(strategy: &str) -> Option<String> {
    Some(normalise_strategy(strategy)).filter(|p| !p.is_empty())
}

/// What `set_lesson_active` does to a lesson: the lesson after the change, whether anything
/// changed, and the note recorded in the directive history.
#[derive(Debug, Clone, PartialEq)]
pub struct Activation {
    /// The lesson with its new `is_active`.
    pub after: Lesson,
    /// Whether `is_active` changed (setting the current value again is allowed and recorded).
    pub changed: bool,
    /// The directive-history description: which lesson, what happened, and why.
    pub note: String,
}

/// Plans setting `before.is_active` to `active`, for the reason `rationale`.
pub fn activation(before: &Lesson, active: bool, rationale: &str) -> Activation {
    let verb = if active {
        "re-activated"
    } else {
        "deactivated"
    };
    Activation {
        after: Lesson {
            is_active: active,
            ..before.clone()
        },
        changed: before.is_active != active,
        note: format!(
            "lesson {} {verb} (strategy: {:?}): {rationale}",
            before.id, before.strategy_description
        ),
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
            // Only punctuation: keyed by its folded text (issue 13's schema-truth fix; a
            // pattern saying "not only punctuation" cost 1.8 KB in every tools/list).
            ("t", "?!…", "rca", "LOGIC_ERROR", "a", None),
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
    fn task_keys_fold_case_width_and_surrounding_spaces() {
        let key = TaskKey::of("TASK-42");
        for same in [
            "task-42",
            " task-42 ",
            "ＴＡＳＫ－４２",
            "\u{3000}Task-42\t",
        ] {
            assert_eq!(TaskKey::of(same), key, "{same:?}");
        }
        assert_eq!(key.as_str(), "task-42");
        assert_ne!(TaskKey::of("TASK-421"), key);
        assert_ne!(TaskKey::of("TASK 42"), key);
        let l = NewLesson::validate(" ＴＡＳＫ－４２", "s", "r", "UNKNOWN", "a").unwrap();
        assert_eq!((l.task_id.as_str(), l.task_key), (" ＴＡＳＫ－４２", key));
    }

    #[test]
    fn proposals_and_activations() {
        assert_eq!(proposal("  Use the CACHE! "), Some("use the cache".into()));
        for nothing in ["", "   ", "?!…", "( — )"] {
            assert_eq!(proposal(nothing), None, "{nothing:?}");
        }
        let before = lesson("Use the cache", true);
        let off = activation(&before, false, "obsolete");
        assert!(off.changed && !off.after.is_active);
        assert_eq!(
            off.note,
            format!(
                "lesson {} deactivated (strategy: \"Use the cache\"): obsolete",
                before.id
            )
        );
        let again = activation(&before, true, "still true");
        assert!(!again.changed && again.after.is_active);
        assert!(again.note.contains("re-activated"), "{}", again.note);
    }
}

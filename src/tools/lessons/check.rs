//! `check_strategy_blacklist`: before starting a strategy, ask whether a lesson of the task
//! already says it fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ArgumentCode, Failure, Flag, LessonOut, Reply};
use crate::service::lessons::{
    MAX_ID_CHARS, MAX_STRATEGY_CHARS, MatchType, RELATED_LESSONS, TaskKey, best_match_tokens,
    proposal, query_terms,
};
use crate::store::StoreError;
use crate::store::lessons as lesson_store;
use crate::tools::wire::{NonBlank, OneOf, Text, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// At most this many distinct terms of a proposal go into the related-lessons query.
const MAX_QUERY_TERMS: usize = 64;

/// `check_strategy_blacklist`.
pub struct CheckStrategyBlacklist;

/// Arguments of `check_strategy_blacklist`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckInput {
    /// The task you are working on, as in `log_lesson_learned`. Matching ignores case, width
    /// and surrounding spaces.
    pub task_id: NonBlank<MAX_ID_CHARS>,
    /// The strategy you are about to try, in one sentence. An empty or blank strategy is never
    /// blacklisted.
    pub strategy: Text<MAX_STRATEGY_CHARS>,
    /// Optional, leave out unless you also want advice from other tasks: true adds
    /// `related_lessons`, active lessons of other tasks that share words with the strategy.
    /// They are advisory and never blacklist.
    #[schemars(extend("default" = false))]
    pub include_related: Option<bool>,
}

impl Validate for CheckInput {}

/// The verdict on a strategy.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[schemars(extend(
    "if" = {"properties": {"blacklisted": {"const": true}}},
    "then" = {"required": ["lesson", "match_type", "score"]}
))]
pub struct Checked {
    /// True when an active lesson of this task matches the strategy: it failed before.
    pub blacklisted: bool,
    /// When blacklisted: the lesson that matched (what failed and why).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "LessonOut")]
    pub lesson: Option<LessonOut>,
    /// When blacklisted: how the strategy matched the lesson's: `exact` (the same strategy),
    /// `contains` (yours contains the failed one), `contained_in` (the failed one contains
    /// yours) or `similar` (a close rewording).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "OneOf<MatchType>")]
    pub match_type: Option<OneOf<MatchType>>,
    /// When blacklisted: how close the match is, from 0 to 1 (1 for the same strategy; for
    /// containment, the share of words the shorter strategy makes of the longer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", range(min = 0, max = 1))]
    pub score: Option<f64>,
    /// With `include_related`: lessons of other tasks, most relevant first. Advisory only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Related>")]
    pub related_lessons: Option<Vec<Related>>,
}

/// A lesson of another task that shares words with the strategy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Related {
    /// The lesson.
    pub lesson: LessonOut,
    /// Full-text relevance (SQLite FTS5 bm25; lower is more relevant).
    pub bm25: f64,
    /// Always true: a related lesson does not blacklist anything.
    pub advisory: Flag<true>,
}

/// The answer of `check_strategy_blacklist`.
pub type CheckAnswer = Reply<Checked, Failure<ArgumentCode>>;

impl ToolDef for CheckStrategyBlacklist {
    const NAME: &'static str = "check_strategy_blacklist";
    const TITLE: &'static str = "Check the strategy blacklist";
    fn description() -> String {
        format!(
            "Before you start a strategy on a task, check whether it already failed there: pass \
             the task id and the strategy in one sentence. blacklisted: true means an active \
             lesson of this task matches it (the same strategy, one containing or contained in \
             it, or a close rewording; match_type and score say which): do not retry it; read \
             lesson.rca_summary for why it failed and choose another approach. If you are sure \
             the lesson no longer applies, deactivate it with set_lesson_active. blacklisted: \
             false means no lesson of this task matches. include_related: true also returns up \
             to {RELATED_LESSONS} lessons of other tasks with words in common; they are advice \
             only and never blacklist."
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    type Input = CheckInput;
    type Output = CheckAnswer;

    fn example() -> Value {
        json!({"task_id": "TASK-42", "strategy": "Mock the database layer", "include_related": true})
    }
}

impl ReadTool for CheckStrategyBlacklist {
    fn run(ctx: &ReadCtx<'_>, input: CheckInput) -> Result<Answer<CheckAnswer>, ToolError> {
        let Some(proposal) = proposal(&input.strategy.0) else {
            // Nothing to match: never blacklisted, and the store is not read.
            return Ok(Reply::done(Checked::default()));
        };
        let key = TaskKey::of(input.task_id.as_str());
        // Only the task's active strategies are read; the whole lesson only for the match.
        let candidates = lesson_store::active_strategies(ctx.db, &key)?;
        let tokenised = candidates
            .iter()
            .map(|c| Ok((c.normalised.as_str(), c.tokens()?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut out = Checked::default();
        if let Some((i, matched)) = best_match_tokens(&proposal, tokenised) {
            let lesson = lesson_store::get_by_seq(ctx.db, candidates[i].seq)?.ok_or_else(|| {
                ToolError::Internal("a matched lesson vanished inside its transaction".into())
            })?;
            out.blacklisted = true;
            out.lesson = Some((&lesson).into());
            out.match_type = Some(OneOf(matched.match_type));
            out.score = Some(matched.score);
        }
        if input.include_related == Some(true) {
            let terms = query_terms(&input.strategy.0, MAX_QUERY_TERMS);
            let related = lesson_store::related(ctx.db, &key, &terms, RELATED_LESSONS)?;
            out.related_lessons = Some(
                related
                    .iter()
                    .map(|(l, bm25)| Related {
                        lesson: l.into(),
                        bm25: *bm25,
                        advisory: Flag,
                    })
                    .collect(),
            );
        }
        Ok(Reply::done(out))
    }
}

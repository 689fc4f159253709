//! `check_strategy_blacklist`: before starting a strategy, ask whether a lesson of the task
//! already says it fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ArgumentCode, Failure, Flag, LessonOut, Reply};
use crate::ops::lessons::{self as ops, NearMissLesson, RelatedLesson, Relevance, Verdict};
use crate::semantic::Semantic;
use crate::service::CachedFamily;
use crate::service::lessons::{MAX_ID_CHARS, MAX_STRATEGY_CHARS, MatchType};
use crate::store::Db;
use crate::tools::wire::{NonBlank, OneOf, Text, Validate, WireUuid};
use crate::tools::{
    Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError, WriteCtx, WriteTool,
};

/// The related lessons' cosine floor, where the blacklist evaluation reads it.
pub use crate::ops::lessons::RELATED_MIN_SCORE;

/// `check_strategy_blacklist`.
pub struct CheckStrategyBlacklist;

/// Arguments of `check_strategy_blacklist`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckInput {
    /// The task, as in log_lesson_learned.
    pub task_id: NonBlank<MAX_ID_CHARS>,
    /// The strategy you are about to try, in one sentence.
    pub strategy: Text<MAX_STRATEGY_CHARS>,
    /// Also list close lessons of other tasks (advice only, never blocks).
    pub include_related: Option<bool>,
}

impl Validate for CheckInput {}

/// The verdict on a strategy.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(extend(
    "if" = {"properties": {"blacklisted": {"const": true}}},
    "then" = {"required": ["lesson", "match_type", "score"]}
))]
pub struct Checked {
    /// True when an active lesson of this task matches the strategy: it failed before.
    pub blacklisted: bool,
    /// Which matcher decided a `similar` match.
    pub matcher: Matcher,
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
    /// When blacklisted: how sure the match is, from 0 to 1 (1 for the same strategy; for
    /// containment, the share of words the shorter strategy makes of the longer; for
    /// `similar`, the classifier's probability that it is the same approach).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", range(min = 0, max = 1))]
    pub score: Option<f64>,
    /// When a lesson of the task was compared: the calibrated probability (0 to 1) that the
    /// strategy repeats the failed approach of the best-matching lesson (the one above, else
    /// the closest). blacklisted is probability ≥ matcher.threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", range(min = 0, max = 1))]
    pub probability: Option<f64>,
    /// With probability, where record_prediction is served: close it once you know, with
    /// record_prediction {prediction_id, actual: 1 if your strategy turned out to be the
    /// failed approach again, else 0}.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "WireUuid")]
    pub prediction_id: Option<WireUuid>,
    /// When not blacklisted: the task's lesson closest to the strategy and its similarity score
    /// (0 to 1), for you to judge. Absent when the task has no active lesson.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Closest")]
    pub closest: Option<Closest>,
    /// Lessons that look alike but that the strategy reverses, negates or points at another
    /// target, number or identifier (for example "increase the timeout" against a lesson
    /// "decrease the timeout"): not blacklisted, but read them before you start. Absent when
    /// there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub near_misses: Vec<NearMissOut>,
    /// When this task has no lesson yet in this project: a lesson of another task of the
    /// project whose strategy matches yours (often the same task under another name). Not a
    /// blacklisting; read its rca_summary and task_id before you start.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "OtherTask")]
    pub other_task_lesson: Option<OtherTask>,
    /// With `include_related`: lessons of other tasks, most relevant first. Advisory only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Related>")]
    pub related_lessons: Option<Vec<Related>>,
}

/// The matcher behind a `similar` verdict.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Matcher {
    /// `embedding` (a local sentence-embedding model; cosine similarity) or `lexical` (word
    /// stems, stop words and coding synonyms; used when no model is loaded).
    pub kind: MatcherKind,
    /// The embedding model, for `kind: embedding`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The probability (0 to 1) at or above which a strategy counts as the same as a
    /// lesson's.
    pub threshold: f64,
    /// The project's temperature for lessons (1 until outcomes recalibrated it): the
    /// probability is σ(logit(P)/temperature) of the classifier's P.
    pub temperature: f64,
}

/// Which matcher.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatcherKind {
    /// A local sentence-embedding model.
    Embedding,
    /// Word-level similarity, without a model.
    Lexical,
}

/// The lesson closest to a strategy that was not blacklisted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Closest {
    /// The lesson.
    pub lesson: LessonOut,
    /// Its similarity to the strategy, 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub score: f64,
}

/// A lesson that looks alike but that the classifier judged another approach.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NearMissOut {
    /// The lesson.
    pub lesson: LessonOut,
    /// Its similarity to the strategy, 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub score: f64,
    /// `reversal`, `swapped_order`, `changed_number` or `changed_target`.
    pub reason: String,
    /// What differs, e.g. "reversal: increase vs decrease".
    pub explanation: String,
}

/// A lesson of another task of the project that matches the strategy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OtherTask {
    /// The lesson (its task_id is the task it was learned on).
    pub lesson: LessonOut,
    /// How the strategy matched the lesson's (as `match_type` above).
    #[schemars(with = "OneOf<MatchType>")]
    pub match_type: OneOf<MatchType>,
    /// How sure the match is, 0 to 1 (as `score` above).
    #[schemars(range(min = 0, max = 1))]
    pub score: f64,
    /// Always true: a lesson of another task does not blacklist anything.
    pub advisory: Flag<true>,
}

/// A lesson of another task close to the strategy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Related {
    /// The lesson.
    pub lesson: LessonOut,
    /// With the embedding matcher: the lesson's similarity to the strategy, 0 to 1 (higher
    /// is closer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", range(min = 0, max = 1))]
    pub score: Option<f64>,
    /// With the lexical matcher: full-text relevance (SQLite FTS5 bm25; lower is more
    /// relevant).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub bm25: Option<f64>,
    /// Always true: a related lesson does not blacklist anything.
    pub advisory: Flag<true>,
}

/// The answer of `check_strategy_blacklist`.
pub type CheckAnswer = Reply<Checked, Failure<ArgumentCode>>;

impl ToolDef for CheckStrategyBlacklist {
    const NAME: &'static str = "check_strategy_blacklist";
    const TITLE: &'static str = "Check the strategy blacklist";
    fn description() -> String {
        String::from(
            "Before you try a strategy on a task, check whether it already failed there. \
             blacklisted: true means an active lesson of this task matches (possibly reworded): \
             do not retry it; read lesson.rca_summary and choose another approach. near_misses \
             look alike but reverse or retarget your strategy: read them, then decide.",
        )
    }
    // It records its prediction (to be closed by record_prediction), so it is not read-only.
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = CheckInput;
    type Output = CheckAnswer;

    fn example() -> Value {
        json!({"task_id": "TASK-42", "strategy": "Mock the database layer", "include_related": true})
    }

    fn prepare(semantic: &Semantic, args: &Value) {
        if let Some(strategy) = args.get("strategy").and_then(Value::as_str) {
            semantic.warm(strategy);
        }
    }
}

impl WriteTool for CheckStrategyBlacklist {
    // The predictions it records are read from the store, never cached.
    const FAMILIES: &'static [CachedFamily] = &[];

    fn run(ctx: &mut WriteCtx<'_>, input: CheckInput) -> Result<Answer<CheckAnswer>, ToolError> {
        let verdict = verdict(ctx.db, ctx.semantic, &input)?;
        let (task_id, strategy) = (input.task_id.as_str(), &input.strategy.0);
        let id = ops::record_prediction(ctx.db, &verdict, task_id, strategy, ctx.now)?;
        let mut checked = Checked::from(verdict);
        // Recorded either way (a lesson logged for the strategy closes it); the id only where
        // the caller has record_prediction to close it with.
        checked.prediction_id = id.filter(|_| ctx.closes_predictions).map(WireUuid);
        Ok(Reply::done(checked))
    }
}

/// The check when its prediction cannot be recorded (the write was refused: writes stopped on
/// a damaged file, a full disk): the same verdict and probability, without a `prediction_id`.
impl ReadTool for CheckStrategyBlacklist {
    fn run(ctx: &ReadCtx<'_>, input: CheckInput) -> Result<Answer<CheckAnswer>, ToolError> {
        let verdict = verdict(ctx.db, ctx.semantic, &input)?;
        tracing::warn!("a blacklist check was answered without recording its prediction");
        Ok(Reply::done(Checked::from(verdict)))
    }
}

/// The check's verdict on `input` ([`ops::check`]), for both ways the tool runs.
fn verdict(db: &Db<'_>, semantic: &Semantic, input: &CheckInput) -> Result<Verdict, ToolError> {
    let related = input.include_related == Some(true);
    ops::check(
        db,
        semantic,
        input.task_id.as_str(),
        &input.strategy.0,
        related,
    )
    .map_err(|e| ToolError::Internal(e.to_string()))
}

impl From<Verdict> for Checked {
    fn from(v: Verdict) -> Self {
        let blacklisted = v.blacklisted.as_ref();
        Checked {
            probability: v.prediction.map(|b| b.probability),
            prediction_id: None,
            blacklisted: blacklisted.is_some(),
            matcher: Matcher {
                kind: match v.matcher.model {
                    Some(_) => MatcherKind::Embedding,
                    None => MatcherKind::Lexical,
                },
                model: v.matcher.model,
                threshold: v.matcher.threshold,
                temperature: v.matcher.temperature,
            },
            lesson: blacklisted.map(|m| (&m.lesson).into()),
            match_type: blacklisted.map(|m| OneOf(m.match_type)),
            score: blacklisted.map(|m| m.score),
            closest: v.closest.map(|(l, score)| Closest {
                lesson: (&l).into(),
                score,
            }),
            near_misses: v.near_misses.iter().map(NearMissOut::from).collect(),
            other_task_lesson: v.other_task_lesson.map(|m| OtherTask {
                lesson: (&m.lesson).into(),
                match_type: OneOf(m.match_type),
                score: m.score,
                advisory: Flag,
            }),
            related_lessons: v.related.map(|r| r.iter().map(Related::from).collect()),
        }
    }
}

impl From<&NearMissLesson> for NearMissOut {
    fn from(nm: &NearMissLesson) -> Self {
        NearMissOut {
            lesson: (&nm.lesson).into(),
            score: nm.score,
            reason: nm.reason.wire_name().to_string(),
            explanation: nm.reason.to_string(),
        }
    }
}

impl From<&RelatedLesson> for Related {
    fn from(r: &RelatedLesson) -> Self {
        let (score, bm25) = match r.relevance {
            Relevance::Cosine(s) => (Some(s), None),
            Relevance::Bm25(b) => (None, Some(b)),
        };
        Related {
            lesson: (&r.lesson).into(),
            score,
            bm25,
            advisory: Flag,
        }
    }
}

//! `check_strategy_blacklist`: before starting a strategy, ask whether a lesson of the task
//! already says it fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ArgumentCode, Failure, Flag, LessonOut, Reply};
use std::sync::Arc;

use crate::semantic::{Model, Semantic};
use crate::service::lessons::matching::{
    Candidate, Decision, Variant, decide_classified, decide_lexical,
};
use crate::service::lessons::text::word_tokens;
use crate::service::lessons::vectors::cosine_score;
use crate::service::lessons::{
    Lesson, MAX_ID_CHARS, MAX_STRATEGY_CHARS, MatchType, RELATED_LESSONS, TaskKey, proposal,
    query_terms,
};
use crate::store::StoreError;
use crate::store::lesson_vectors;
use crate::store::lessons::{self as lesson_store, ActiveStrategy};
use crate::tools::wire::{NonBlank, OneOf, Text, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// At most this many distinct terms of a proposal go into the related-lessons query.
const MAX_QUERY_TERMS: usize = 64;
/// With a model, the index is asked for this many times [`RELATED_LESSONS`] candidates, of
/// which the inactive ones are dropped.
const RELATED_OVERFETCH: usize = 4;
/// With a model, related lessons scoring below this cosine are left out: on the development
/// set, pairs labelled `unrelated` score under it (see `tests/blacklist_eval/`).
pub const RELATED_MIN_SCORE: f64 = 0.3;

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
#[derive(Debug, Default, Serialize, JsonSchema)]
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
    /// The classifier's probability (0 to 1) at or above which a strategy counts as the same
    /// as a lesson's.
    pub threshold: f64,
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher {
            kind: MatcherKind::Lexical,
            model: None,
            threshold: Variant::Lexical.classifier().threshold,
        }
    }
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

    fn prepare(semantic: &Semantic, args: &Value) {
        if let Some(strategy) = args.get("strategy").and_then(Value::as_str) {
            semantic.warm(strategy);
        }
    }
}

impl ReadTool for CheckStrategyBlacklist {
    fn run(ctx: &ReadCtx<'_>, input: CheckInput) -> Result<Answer<CheckAnswer>, ToolError> {
        let Some(proposal) = proposal(&input.strategy.0) else {
            // Nothing to match: never blacklisted, and the store is not read.
            return Ok(Reply::done(Checked::default()));
        };
        let key = TaskKey::of(input.task_id.as_str());
        let (candidates, new_task) = task_candidates(ctx, &key)?;
        let tokens = candidates
            .iter()
            .map(ActiveStrategy::tokens)
            .collect::<Result<Vec<_>, StoreError>>()?;
        let semantic = embedding_scores(ctx, &input.strategy.0, &candidates)?;
        let (decision, matcher) = match &semantic {
            Some((model, _, scores)) => {
                let lessons = candidates.iter().zip(tokens).zip(scores);
                let lessons = lessons.map(|((c, tokens), &score)| Candidate {
                    normalised: &c.normalised,
                    tokens,
                    score,
                });
                let matcher = Matcher {
                    kind: MatcherKind::Embedding,
                    model: Some(model.id().to_owned()),
                    threshold: Variant::Model.classifier().threshold,
                };
                (
                    decide_classified(&proposal, lessons, Variant::Model),
                    matcher,
                )
            }
            None => {
                let lessons = candidates.iter().map(|c| c.normalised.as_str()).zip(tokens);
                (decide_lexical(&proposal, lessons), Matcher::default())
            }
        };
        let lesson = |i: usize| -> Result<LessonOut, ToolError> {
            let l = lesson_store::get_by_seq(ctx.db, candidates[i].seq)?.ok_or_else(|| {
                ToolError::Internal("a matched lesson vanished inside its transaction".into())
            })?;
            Ok((&l).into())
        };
        let mut out = verdict(&decision, lesson)?;
        out.matcher = matcher;
        if new_task && !out.blacklisted {
            out.other_task_lesson =
                other_task_lesson(ctx, &proposal, &input.strategy.0, &key, &semantic)?;
        }
        if input.include_related == Some(true) {
            out.related_lessons = Some(match &semantic {
                Some((model, query, _)) => related_by_vector(ctx, model, query, &key)?,
                None => related_by_terms(ctx, &input.strategy.0, &key)?,
            });
        }
        Ok(Reply::done(out))
    }
}

/// The active strategies a check compares with (only strategies are read; whole lessons only
/// for the answer), and whether the project has never used the task id. For a new task id,
/// the lessons of a task with the same words (`fix-login-redirect` for "Fix login redirect")
/// are its own: such ids name the same task with precision 1.00 (`tests/task_identity.rs`).
fn task_candidates(
    ctx: &ReadCtx<'_>,
    key: &TaskKey,
) -> Result<(Vec<ActiveStrategy>, bool), ToolError> {
    let mut candidates = lesson_store::active_strategies(ctx.db, key)?;
    let new_task = candidates.is_empty() && lesson_store::list(ctx.db, Some(key), true)?.is_empty();
    if new_task {
        let words = key.words();
        for other in lesson_store::active_task_keys(ctx.db)? {
            if &other != key && !words.is_empty() && other.words() == words {
                candidates.extend(lesson_store::active_strategies(ctx.db, &other)?);
            }
        }
    }
    Ok((candidates, new_task))
}

/// The proposal's vector and its cosine score against each candidate, when a model is loaded.
/// Candidates without a stored vector of this model (logged before it was installed, and not
/// yet back-filled) are embedded now. `None` (the lexical matcher decides) without a model, or
/// when the engine fails (logged).
type Scored = Option<(Arc<Model>, Arc<[f32]>, Vec<f64>)>;

fn embedding_scores(
    ctx: &ReadCtx<'_>,
    strategy: &str,
    candidates: &[ActiveStrategy],
) -> Result<Scored, ToolError> {
    let Some(model) = ctx.semantic.model() else {
        return Ok(None);
    };
    let stored = candidates
        .iter()
        .map(|c| c.vector(model.id()))
        .collect::<Result<Vec<_>, StoreError>>()?;
    let missing: Vec<&str> = candidates
        .iter()
        .zip(&stored)
        .filter(|(_, v)| v.is_none())
        .map(|(c, _)| c.normalised.as_str())
        .collect();
    if !missing.is_empty() {
        // Embedded here for this check; stored by the embedding thread for the next ones.
        ctx.semantic.request_backfill();
    }
    let embedded = ctx.semantic.embed(&model, strategy).and_then(|query| {
        let fresh = model.embed(&missing)?;
        Ok((query, fresh))
    });
    let (query, fresh) = match embedded {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "embedding failed; this check used the lexical matcher");
            return Ok(None);
        }
    };
    let mut fresh = fresh.into_iter();
    let scores = stored
        .into_iter()
        .map(|v| {
            let v = v.or_else(|| fresh.next()).unwrap_or_default();
            cosine_score(&query, &v)
        })
        .collect();
    Ok(Some((model, query, scores)))
}

/// At most this many lessons of the project's other tasks, the nearest to the proposal, are
/// matched against it when its task is new ([`other_task_lesson`]).
pub const OTHER_TASK_CANDIDATES: usize = 8;

/// For a task the project has no lesson of: the lesson of another task of the project that
/// the blacklist's matcher says the proposal repeats, among the [`OTHER_TASK_CANDIDATES`]
/// nearest active lessons (by vector with a model, else by full-text terms). Advisory: task ids
/// the matcher calls alike name the same task with a precision of only 0.69-0.70 on the
/// labelled task-id pairs (`tests/task_identity.rs`), too low to block an untried strategy.
fn other_task_lesson(
    ctx: &ReadCtx<'_>,
    proposal: &str,
    strategy: &str,
    key: &TaskKey,
    semantic: &Scored,
) -> Result<Option<OtherTask>, ToolError> {
    let lessons: Vec<(Lesson, f64)> = match semantic {
        Some((model, query, _)) => {
            let nearest = ctx.semantic.nearest(
                ctx.db,
                model,
                query,
                key.as_str(),
                OTHER_TASK_CANDIDATES * RELATED_OVERFETCH,
            )?;
            let mut out = Vec::new();
            for (seq, _) in nearest {
                let (Some(lesson), Some(v)) = (
                    lesson_store::get_by_seq(ctx.db, seq)?,
                    lesson_vectors::vector(ctx.db, seq, model.id())?,
                ) else {
                    continue;
                };
                if lesson.is_active {
                    out.push((lesson, cosine_score(query, &v)));
                }
                if out.len() == OTHER_TASK_CANDIDATES {
                    break;
                }
            }
            out
        }
        None => {
            let terms = query_terms(strategy, MAX_QUERY_TERMS);
            lesson_store::related(ctx.db, key, &terms, OTHER_TASK_CANDIDATES)?
        }
    };
    let tokens: Vec<Vec<&str>> = lessons
        .iter()
        .map(|(l, _)| word_tokens(&l.normalised_strategy))
        .collect();
    let decision = match semantic {
        Some(_) => {
            let candidates = lessons
                .iter()
                .zip(tokens)
                .map(|((l, score), tokens)| Candidate {
                    normalised: &l.normalised_strategy,
                    tokens,
                    score: *score,
                });
            decide_classified(proposal, candidates, Variant::Model)
        }
        None => decide_lexical(
            proposal,
            lessons
                .iter()
                .map(|(l, _)| l.normalised_strategy.as_str())
                .zip(tokens),
        ),
    };
    Ok(decision.blocked.map(|(i, matched)| OtherTask {
        lesson: (&lessons[i].0).into(),
        match_type: OneOf(matched.match_type),
        score: matched.score,
        advisory: Flag,
    }))
}

/// Other tasks' active lessons nearest to the proposal's vector, most similar first, at most
/// [`RELATED_LESSONS`] and none below [`RELATED_MIN_SCORE`].
fn related_by_vector(
    ctx: &ReadCtx<'_>,
    model: &Model,
    query: &[f32],
    key: &TaskKey,
) -> Result<Vec<Related>, ToolError> {
    // Inactive lessons are in the index: ask for more than needed, then keep the active ones.
    let nearest = ctx.semantic.nearest(
        ctx.db,
        model,
        query,
        key.as_str(),
        RELATED_LESSONS * RELATED_OVERFETCH,
    )?;
    let mut out = Vec::new();
    for (seq, _) in nearest {
        let (Some(lesson), Some(v)) = (
            lesson_store::get_by_seq(ctx.db, seq)?,
            lesson_vectors::vector(ctx.db, seq, model.id())?,
        ) else {
            continue;
        };
        let score = cosine_score(query, &v);
        if lesson.is_active && score >= RELATED_MIN_SCORE {
            out.push(Related {
                lesson: (&lesson).into(),
                score: Some(score),
                bm25: None,
                advisory: Flag,
            });
        }
    }
    out.sort_by(|a, b| b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)));
    out.truncate(RELATED_LESSONS);
    Ok(out)
}

/// Other tasks' active lessons sharing words with the strategy, by FTS5 bm25.
fn related_by_terms(
    ctx: &ReadCtx<'_>,
    strategy: &str,
    key: &TaskKey,
) -> Result<Vec<Related>, ToolError> {
    let terms = query_terms(strategy, MAX_QUERY_TERMS);
    let related = lesson_store::related(ctx.db, key, &terms, RELATED_LESSONS)?;
    Ok(related
        .iter()
        .map(|(l, bm25)| Related {
            lesson: l.into(),
            score: None,
            bm25: Some(*bm25),
            advisory: Flag,
        })
        .collect())
}

/// The answer's verdict from a decision, with `lesson(i)` reading the `i`-th candidate.
fn verdict(
    d: &Decision,
    lesson: impl Fn(usize) -> Result<LessonOut, ToolError>,
) -> Result<Checked, ToolError> {
    let mut out = Checked::default();
    if let Some((i, matched)) = d.blocked {
        out.blacklisted = true;
        out.lesson = Some(lesson(i)?);
        out.match_type = Some(OneOf(matched.match_type));
        out.score = Some(matched.score);
    } else if let Some((i, score)) = d.best {
        out.closest = Some(Closest {
            lesson: lesson(i)?,
            score,
        });
    }
    for nm in &d.near_misses {
        out.near_misses.push(NearMissOut {
            lesson: lesson(nm.index)?,
            score: nm.score,
            reason: nm.reason.wire_name().to_string(),
            explanation: nm.reason.to_string(),
        });
    }
    Ok(out)
}

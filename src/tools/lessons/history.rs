//! `list_directive_history`: the human interventions recorded for the tasks, newest first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ArgumentCode, DirectiveOut, Failure, Reply};
use crate::service::lessons::{DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT, MAX_ID_CHARS, TaskKey};
use crate::store::directives;
use crate::tools::wire::{Int, NonBlank, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// The largest `offset` accepted: far beyond any history, and below 9·10^15, where a JSON
/// number written as a float (`1e16`) stops being read as an integer.
pub const MAX_OFFSET: i64 = 1_000_000_000_000_000;

/// `list_directive_history`.
pub struct ListDirectiveHistory;

/// Arguments of `list_directive_history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryInput {
    /// Only this task's entries (default all).
    pub task_id: Option<NonBlank<MAX_ID_CHARS>>,
    /// Page size.
    #[schemars(extend("default" = DEFAULT_HISTORY_LIMIT))]
    pub limit: Option<Int<1, { MAX_HISTORY_LIMIT as i64 }>>,
    /// Entries to skip, for the next page.
    #[schemars(extend("default" = 0))]
    pub offset: Option<Int<0, MAX_OFFSET>>,
}

impl Validate for HistoryInput {}

/// One page of the directive history.
#[derive(Debug, Serialize, JsonSchema)]
pub struct History {
    /// Newest first (ties: latest recorded first).
    pub entries: Vec<DirectiveOut>,
    /// Entries matching the filter, over all pages.
    pub total_count: u64,
    /// Whether entries remain after this page.
    pub has_more: bool,
    /// The page size used.
    pub limit: u64,
    /// The entries skipped.
    pub offset: u64,
}

/// The answer of `list_directive_history`.
pub type HistoryAnswer = Reply<History, Failure<ArgumentCode>>;

impl ToolDef for ListDirectiveHistory {
    const NAME: &'static str = "list_directive_history";
    const TITLE: &'static str = "List the directive history";
    fn description() -> String {
        String::from(
            "List recorded human interventions, newest first; pass task_id to see what a person \
             already decided about your task.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    type Input = HistoryInput;
    type Output = HistoryAnswer;

    fn example() -> Value {
        json!({"task_id": "TASK-42", "limit": 10})
    }
}

impl ReadTool for ListDirectiveHistory {
    fn run(ctx: &ReadCtx<'_>, input: HistoryInput) -> Result<Answer<HistoryAnswer>, ToolError> {
        let key = input.task_id.as_ref().map(|t| TaskKey::of(t.as_str()));
        let limit = input
            .limit
            .map_or(u64::from(DEFAULT_HISTORY_LIMIT), |l| l.get() as u64);
        let offset = input.offset.map_or(0, |o| o.get() as u64);
        let (entries, total) =
            directives::list(ctx.db, key.as_ref(), limit as usize, offset as usize)?;
        Ok(Reply::done(History {
            has_more: offset.saturating_add(entries.len() as u64) < total as u64,
            entries: entries.iter().map(DirectiveOut::from).collect(),
            total_count: total as u64,
            limit,
            offset,
        }))
    }
}

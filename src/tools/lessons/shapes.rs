//! What the lesson tools share on the wire: the lesson and directive objects of their answers,
//! the `success` flag, and the enumerations.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

use crate::service::lessons::{FailureType, Lesson, MatchType};
use crate::store::directives::{Directive, InterventionType};
use crate::tools::wire::{Choice, OneOf, Timestamp, WireUuid};

impl Choice for FailureType {
    const ALL: &'static [Self] = &FailureType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for InterventionType {
    const ALL: &'static [Self] = &InterventionType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for MatchType {
    const ALL: &'static [Self] = &MatchType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// A boolean that is always `B` (`success: true` on a successful write, `success: false` on a
/// failure), so that the output schema tells the two shapes of an answer apart. Schema:
/// `{"type": "boolean", "const": B}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag<const B: bool>;

impl<const B: bool> Serialize for Flag<B> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(B)
    }
}

impl<const B: bool> JsonSchema for Flag<B> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(if B { "True" } else { "False" })
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "boolean", "const": B})
    }
}

/// A lesson as the tools show it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LessonOut {
    /// Lesson id.
    pub id: WireUuid,
    /// The task, as it was logged.
    pub task_id: String,
    /// The strategy that failed, as it was logged.
    pub strategy_description: String,
    /// Why it failed: the root-cause analysis.
    pub rca_summary: String,
    /// The kind of cause.
    pub failure_type: OneOf<FailureType>,
    /// Who logged it.
    pub source_agent: String,
    /// Whether it blacklists its strategy (false once deactivated).
    pub is_active: bool,
    /// When it was logged (UTC).
    pub created_at: Timestamp,
}

impl From<&Lesson> for LessonOut {
    fn from(l: &Lesson) -> Self {
        LessonOut {
            id: WireUuid(l.id),
            task_id: l.task_id.clone(),
            strategy_description: l.strategy_description.clone(),
            rca_summary: l.rca_summary.clone(),
            failure_type: OneOf(l.failure_type),
            source_agent: l.source_agent.clone(),
            is_active: l.is_active,
            created_at: Timestamp(l.created_at),
        }
    }
}

/// A directive-history entry: one human intervention.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DirectiveOut {
    /// Entry id.
    pub id: WireUuid,
    /// The task it concerns, as recorded; null when it concerns no single task.
    pub task_id: Option<String>,
    /// `MANUAL_FIX`, `FEEDBACK`, `OVERRIDE` or `ESCALATION`.
    pub intervention_type: OneOf<InterventionType>,
    /// What happened, in words.
    pub description: String,
    /// Who intervened (`USER` unless the caller named someone).
    pub actor: String,
    /// When it was recorded (UTC).
    pub created_at: Timestamp,
}

impl From<&Directive> for DirectiveOut {
    fn from(d: &Directive) -> Self {
        DirectiveOut {
            id: WireUuid(d.id),
            task_id: d.task_id.clone(),
            intervention_type: OneOf(d.intervention_type),
            description: d.description.clone(),
            actor: d.actor.clone(),
            created_at: Timestamp(d.created_at),
        }
    }
}

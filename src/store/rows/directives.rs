//! The backend-neutral part of the directives family: row shapes, decoders and range checks, and
//! the query text both backends share (see `rows/mod.rs`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::service::lessons::TaskKey;
use crate::store::{StoreError, from_us};

/// The actor of the entries the server writes itself (its escalations, the merges of a
/// migration), beside `service::lessons::DEFAULT_ACTOR` for a person.
pub const SERVER_ACTOR: &str = "meta-utl-mcp";

/// The kinds of intervention, named in UPPER_SNAKE case (`MANUAL_FIX`, `FEEDBACK`, `OVERRIDE`,
/// `ESCALATION`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum InterventionType {
    /// A human fixed something by hand.
    ManualFix,
    /// A human's feedback on the agent's work.
    Feedback,
    /// A human or operator overrode stored state (a lesson lifted, λ reset).
    Override,
    /// The server or an agent escalated to a human.
    Escalation,
}

impl InterventionType {
    /// Every type, in schema order.
    pub const ALL: [InterventionType; 4] = crate::service::vocab::variants();

    /// UPPER_SNAKE name as on the wire.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parse an UPPER_SNAKE name (exact).
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// One directive-history entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Directive {
    /// Entry id.
    pub id: Uuid,
    /// The task it concerns, as given (compared by its [`TaskKey`]); `None` for the whole server.
    pub task_id: Option<String>,
    /// What kind of intervention.
    pub intervention_type: InterventionType,
    /// What happened, in words.
    pub description: String,
    /// Who intervened; `service::lessons::DEFAULT_ACTOR` ("USER") by default, [`SERVER_ACTOR`]
    /// for the server's own entries.
    pub actor: String,
    /// When (UTC, whole microseconds).
    pub created_at: DateTime<Utc>,
}

impl Directive {
    /// A new entry with a fresh id.
    pub fn new(
        task_id: Option<String>,
        intervention_type: InterventionType,
        description: impl Into<String>,
        actor: impl Into<String>,
        created_at: DateTime<Utc>,
    ) -> Self {
        Directive {
            id: Uuid::new_v4(),
            task_id,
            intervention_type,
            description: description.into(),
            actor: actor.into(),
            created_at,
        }
    }
}

/// A `directive_history` row as both backends read it (`SELECT id, task_id,
/// intervention_type, description, actor, created_us`), before [`directive_from_row`] checks it.
pub(crate) struct DirectiveRow {
    /// The entry's UUID, as text.
    pub(crate) id: String,
    /// The task it concerns, when it concerns one.
    pub(crate) task_id: Option<String>,
    /// An [`InterventionType`] wire name.
    pub(crate) intervention_type: String,
    /// What was done and why.
    pub(crate) description: String,
    /// Who did it.
    pub(crate) actor: String,
    /// When, in µs since the Unix epoch (UTC).
    pub(crate) created_us: i64,
}

/// The entry of a stored row.
///
/// # Errors
/// [`StoreError::Corrupt`] for an id that is not a UUID, an unknown intervention type, or a
/// time outside chrono's range.
pub(crate) fn directive_from_row(row: DirectiveRow) -> Result<Directive, StoreError> {
    let DirectiveRow {
        id,
        task_id,
        intervention_type: kind,
        description,
        actor,
        created_us,
    } = row;
    Ok(Directive {
        id: Uuid::parse_str(&id)
            .map_err(|e| StoreError::Corrupt(format!("directive id {id:?}: {e}")))?,
        task_id,
        intervention_type: InterventionType::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("intervention type {kind:?}")))?,
        description,
        actor,
        created_at: from_us(created_us)?,
    })
}

/// The stored `task_key` of an entry: its task's [`TaskKey`], `None` without a task.
pub(crate) fn task_key(d: &Directive) -> Option<String> {
    d.task_id
        .as_deref()
        .map(|t| TaskKey::of(t).as_str().to_owned())
}

//! The registry: the tool families in `tools/list` order, and the profile (`--tools`) that
//! decides which of them a server publishes and accepts.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::{Tool, atc, delta_sc, epistemic, lessons, meta_learning};

/// A family of tools, the unit of a tool profile (`--tools`).
/// Named in snake case (`meta_learning`, `atc`, `utl`, `epistemic`, `lessons`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum ToolFamily {
    /// λ weights, accuracy and escalation: `record_prediction`, `get_meta_learning_status`, …
    MetaLearning,
    /// Adaptive threshold calibration: `record_calibration_observations`, …
    Atc,
    /// Surprise and coherence of memory updates: `gwt_compute_delta_sc`.
    DeltaSc,
    /// The belief workspace: `epistemic_action`.
    Epistemic,
    /// Lessons, the strategy blacklist and directives.
    Lessons,
}

impl ToolFamily {
    /// Every family, in `tools/list` order.
    pub const ALL: [ToolFamily; 5] = crate::service::vocab::variants();

    /// The name used by `--tools` / `META_UTL_TOOLS`.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The family's tools.
    pub fn tools(self) -> &'static [Tool] {
        match self {
            ToolFamily::MetaLearning => meta_learning::TOOLS,
            ToolFamily::Atc => atc::TOOLS,
            ToolFamily::DeltaSc => delta_sc::TOOLS,
            ToolFamily::Epistemic => epistemic::TOOLS,
            ToolFamily::Lessons => lessons::TOOLS,
        }
    }

    /// What the model should know about the family: when to use which tool, in a few lines of
    /// the `initialize` instructions.
    pub fn guidance(self) -> &'static str {
        match self {
            ToolFamily::Lessons => {
                "Lessons: before you start a strategy for a task, call check_strategy_blacklist \
                 with the task id and the strategy in a sentence; if it answers blacklisted: true, \
                 read the lesson's root cause and choose another approach. After an approach fails \
                 and you have found why, call log_lesson_learned so that no later session repeats \
                 it. record_directive keeps a human's instruction or fix; list_directive_history \
                 shows them."
            }
            ToolFamily::Epistemic => {
                "Beliefs: while debugging, record each suspected cause with epistemic_action \
                 hypothesize, then verify it with the evidence you find (confidence above 0.5 \
                 supports it, below 0.5 speaks against it); query shows what you already believe \
                 and why."
            }
            ToolFamily::MetaLearning => {
                "Meta-learning: record_prediction feeds a predicted and an actual outcome (for \
                 example a test you expected to pass); the server learns how much to trust \
                 surprise versus coherence. get_meta_learning_status shows accuracy and whether \
                 a human must review; reset_meta_learning is for the human who acknowledges it."
            }
            ToolFamily::Atc => {
                "Calibration: record_calibration_observations feeds (confidence, was it correct) \
                 pairs from your own checks; get_calibration_metrics reports how well confidence \
                 matches reality, and trigger_recalibration adjusts the thresholds when it \
                 drifts."
            }
            ToolFamily::DeltaSc => {
                "Memory updates: with an embedding pipeline that produces all 13 vectors, \
                 gwt_compute_delta_sc scores how surprising and how coherent an update is; close \
                 its prediction_id later with record_prediction."
            }
        }
    }

    /// The structured error object this family answers for invalid arguments, when its
    /// contract has one: the lessons seed's `{success: false, error: "VALIDATION_ERROR",
    /// detail}`. Other families answer the message as text only.
    pub fn argument_error(self, message: &str) -> Option<Value> {
        match self {
            ToolFamily::Lessons => Some(json!({
                "success": false,
                "error": "VALIDATION_ERROR",
                "detail": message,
            })),
            _ => None,
        }
    }
}

/// The tool families a server publishes and accepts (`--tools`); a tool outside the profile is
/// an unknown tool. The default publishes every family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    enabled: [bool; 5],
}

impl Profile {
    /// Every family.
    pub fn all() -> Profile {
        Profile { enabled: [true; 5] }
    }

    /// Only the given families (an empty list publishes nothing).
    pub fn only(families: &[ToolFamily]) -> Profile {
        let mut enabled = [false; 5];
        for f in families {
            enabled[ToolFamily::ALL.iter().position(|x| x == f).expect("listed")] = true;
        }
        Profile { enabled }
    }

    /// Whether `family` is published.
    pub fn includes(&self, family: ToolFamily) -> bool {
        self.enabled[ToolFamily::ALL
            .iter()
            .position(|x| *x == family)
            .expect("listed")]
    }

    /// The published tools, in `tools/list` order, with their family.
    pub fn tools(&self) -> impl Iterator<Item = (ToolFamily, &'static Tool)> + '_ {
        ToolFamily::ALL
            .into_iter()
            .filter(|f| self.includes(*f))
            .flat_map(|f| f.tools().iter().map(move |t| (f, t)))
    }

    /// The published tool called `name` (or one of its aliases), with its family.
    pub fn find(&self, name: &str) -> Option<(ToolFamily, &'static Tool)> {
        self.tools()
            .find(|(_, t)| t.name == name || t.aliases.contains(&name))
    }

    /// The `tools/list` result.
    pub fn list_result(&self) -> Value {
        json!({"tools": self.tools().map(|(_, t)| t.to_json()).collect::<Vec<_>>()})
    }
}

static REGISTRY: LazyLock<Vec<&'static Tool>> =
    LazyLock::new(|| Profile::all().tools().map(|(_, t)| t).collect());

/// Every tool, in `tools/list` order.
pub fn registry() -> &'static [&'static Tool] {
    &REGISTRY
}

/// The tool called `name` (or one of its aliases), in the full registry.
pub fn find(name: &str) -> Option<&'static Tool> {
    Profile::all().find(name).map(|(_, t)| t)
}

//! The belief workspace behind `epistemic_action` (SPEC §4 epistemic; seed
//! `epistemic-action.md`; issue 6): beliefs keyed by normalised target, the five actions, and the
//! workspace summary.
//!
//! Pure: [`apply_action`] takes the stored belief (if any), the validated request, a fresh id and
//! the current time, and returns the new belief plus the one history event to append. The store
//! persists both.

pub mod bayes;

use chrono::{DateTime, Utc};
use thiserror::Error;
use uuid::Uuid;

pub use crate::service::lessons::text::{FieldError, check_text, check_unit_range, fold_text};
pub use bayes::{
    DENIED_BELOW, PROB_MAX, PROB_MIN, VERIFIED_ABOVE, binary_entropy, log_odds_update,
};

/// Maximum characters of a target (seed: `maxLength: 4096`).
pub const MAX_TARGET_CHARS: usize = 4096;
/// Maximum characters of a rationale (seed: `maxLength: 1024`).
pub const MAX_RATIONALE_CHARS: usize = 1024;
/// Confidence used when the request gives none (seed: `default: 0.5`).
pub const DEFAULT_CONFIDENCE: f64 = 0.5;

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident, $field:literal, { $($(#[$vdoc:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
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
        pub enum $name {
            $($(#[$vdoc])* #[strum(serialize = $wire)] $variant),+
        }

        impl $name {
            /// Wire names in schema order.
            pub const NAMES: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;
            /// Every value in schema order.
            pub const ALL: &'static [$name] = <Self as strum::VariantArray>::VARIANTS;

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                self.into()
            }

            /// Parses a wire name (exact, lower case).
            ///
            /// # Errors
            #[doc = concat!("[`FieldError::InvalidEnum`] naming `", $field, "` and the allowed values.")]
            pub fn parse(s: &str) -> Result<Self, FieldError> {
                s.parse().map_err(|_| FieldError::InvalidEnum {
                    field: $field,
                    value: s.to_owned(),
                    allowed: Self::NAMES,
                })
            }
        }
    };
}

wire_enum!(
    /// The five epistemic actions, in the seed's enum order.
    ActionType, "action_type", {
        /// Create or re-affirm a belief (status active, confidence as given).
        Assert = "assert",
        /// Withdraw a belief (status retracted, confidence 0, history kept).
        Retract = "retract",
        /// Look a belief up.
        Query = "query",
        /// Create a tentative belief (status hypothetical).
        Hypothesize = "hypothesize",
        /// Update a belief's confidence with evidence (log-odds).
        Verify = "verify",
    }
);

wire_enum!(
    /// Lifecycle status of a belief.
    BeliefStatus, "status", {
        /// Asserted; confidence as given.
        Active = "active",
        /// Tentative, or verified evidence left it between 0.3 and 0.7.
        Hypothetical = "hypothetical",
        /// Confidence above 0.7 after verification.
        Verified = "verified",
        /// Confidence below 0.3 after verification.
        Denied = "denied",
        /// Withdrawn.
        Retracted = "retracted",
    }
);

wire_enum!(
    /// Kind of uncertainty a belief carries (seed: `context.uncertainty_type`).
    UncertaintyType, "context.uncertainty_type", {
        /// A knowledge gap: more evidence would reduce it.
        Epistemic = "epistemic",
        /// Inherent randomness: more evidence would not reduce it.
        Aleatory = "aleatory",
        /// Both.
        Mixed = "mixed",
    }
);

impl BeliefStatus {
    /// The status that a verified confidence implies.
    ///
    /// ```text
    /// c > 0.7 → verified,   c < 0.3 → denied,   otherwise → hypothetical
    /// ```
    ///
    /// (SPEC §4 epistemic; issue 6.) NaN gives hypothetical.
    pub fn after_verification(confidence: f64) -> Self {
        if confidence > VERIFIED_ABOVE {
            BeliefStatus::Verified
        } else if confidence < DENIED_BELOW {
            BeliefStatus::Denied
        } else {
            BeliefStatus::Hypothetical
        }
    }
}

/// One entry of a belief's action history: what was done, with what input, and its effect.
#[derive(Debug, Clone, PartialEq)]
pub struct BeliefEvent {
    /// The action.
    pub action: ActionType,
    /// The confidence given with the request (the evidence, for `verify`), in [0, 1].
    pub input_confidence: f64,
    /// Status before the action; `None` when the action created the belief.
    pub status_before: Option<BeliefStatus>,
    /// Status after the action.
    pub status_after: BeliefStatus,
    /// Confidence before the action; `None` when the action created the belief.
    pub confidence_before: Option<f64>,
    /// Confidence after the action.
    pub confidence_after: f64,
    /// The request's rationale.
    pub rationale: String,
    /// When (UTC).
    pub at: DateTime<Utc>,
}

/// A belief, as plain fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Belief {
    /// Belief id.
    pub id: Uuid,
    /// The target as first given.
    pub target: String,
    /// [`fold_text`] of the target: the workspace key.
    pub normalised_target: String,
    /// Current status.
    pub status: BeliefStatus,
    /// Current confidence in [0, 1] (0 once retracted).
    pub confidence: f64,
    /// Rationale of the latest action that changed the belief.
    pub rationale: String,
    /// Kind of uncertainty, if ever given (the latest given wins).
    pub uncertainty_type: Option<UncertaintyType>,
    /// Related source nodes: every UUID ever given, first-seen order, no duplicates.
    pub source_nodes: Vec<Uuid>,
    /// When it was created (UTC).
    pub created_at: DateTime<Utc>,
    /// When it last changed (UTC).
    pub updated_at: DateTime<Utc>,
    /// Every action that changed it, oldest first.
    pub history: Vec<BeliefEvent>,
}

/// A validated `epistemic_action` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    /// The action.
    pub action: ActionType,
    /// The target as given (1..=4096 characters).
    pub target: String,
    /// [`fold_text`] of the target (never empty).
    pub normalised_target: String,
    /// Confidence in [0, 1] (default 0.5).
    pub confidence: f64,
    /// Rationale (1..=1024 characters).
    pub rationale: String,
    /// `context.uncertainty_type`, if given.
    pub uncertainty_type: Option<UncertaintyType>,
    /// `context.source_nodes`, parsed.
    pub source_nodes: Vec<Uuid>,
}

impl ActionRequest {
    /// Validates the raw fields of an `epistemic_action` call.
    ///
    /// Checks, in order: `action_type` ∈ [`ActionType::NAMES`]; `target` 1..=4096 characters
    /// and not whitespace-only; `confidence` (default 0.5) finite in [0, 1]; `rationale`
    /// 1..=1024 characters, not whitespace-only; `context.uncertainty_type` ∈
    /// [`UncertaintyType::NAMES`]; every `context.source_nodes` entry a UUID. Lengths are
    /// counted in characters (`chars().count()`), so 4096 Han characters (12 288 bytes) pass.
    ///
    /// # Errors
    /// The first [`FieldError`], naming its field.
    pub fn validate(
        action: &str,
        target: &str,
        confidence: Option<f64>,
        rationale: &str,
        uncertainty_type: Option<&str>,
        source_nodes: &[&str],
    ) -> Result<Self, FieldError> {
        let action = ActionType::parse(action)?;
        let uncertainty_type = uncertainty_type.map(UncertaintyType::parse).transpose()?;
        let source_nodes = source_nodes
            .iter()
            .map(|s| {
                Uuid::parse_str(s).map_err(|_| FieldError::InvalidUuid {
                    field: "context.source_nodes",
                    value: (*s).to_owned(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(
            action,
            target.to_owned(),
            confidence,
            rationale.to_owned(),
            uncertainty_type,
            source_nodes,
        )
    }

    /// A request from typed fields: checks `target` (1..=4096 characters, not blank),
    /// `confidence` (default 0.5, finite in [0, 1]) and `rationale` (1..=1024 characters, not
    /// blank), and computes the workspace key.
    ///
    /// # Errors
    /// The first [`FieldError`], naming its field.
    pub fn new(
        action: ActionType,
        target: String,
        confidence: Option<f64>,
        rationale: String,
        uncertainty_type: Option<UncertaintyType>,
        source_nodes: Vec<Uuid>,
    ) -> Result<Self, FieldError> {
        check_text("target", &target, MAX_TARGET_CHARS)?;
        let confidence = check_unit_range(
            "confidence",
            confidence.unwrap_or(DEFAULT_CONFIDENCE),
            0.0,
            1.0,
        )?;
        check_text("rationale", &rationale, MAX_RATIONALE_CHARS)?;
        let normalised_target = fold_text(&target);
        if normalised_target.is_empty() {
            return Err(FieldError::Empty { field: "target" });
        }
        Ok(ActionRequest {
            action,
            target,
            normalised_target,
            confidence,
            rationale,
            uncertainty_type,
            source_nodes,
        })
    }
}

/// What an action did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `assert` / `hypothesize` created a new belief.
    Created,
    /// `assert` re-affirmed an existing belief.
    Reaffirmed,
    /// `hypothesize` found an existing belief and left it unchanged.
    AlreadyExists,
    /// `verify` updated the confidence.
    Verified,
    /// `retract` withdrew the belief.
    Retracted,
    /// `query` found the belief.
    Found,
    /// `query` found nothing.
    NotFound,
}

/// The result of [`apply_action`].
#[derive(Debug, Clone, PartialEq)]
pub struct ActionResult {
    /// What happened.
    pub outcome: Outcome,
    /// The belief after the action (`None` only for [`Outcome::NotFound`]). When `event` is
    /// `Some`, its `history` already ends with that event.
    pub belief: Option<Belief>,
    /// The history event to persist; `None` when nothing changed (query, hypothesize on an
    /// existing belief).
    pub event: Option<BeliefEvent>,
    /// A one-sentence human-readable summary.
    pub message: String,
}

/// Why an action could not be applied.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum EpistemicError {
    /// `verify` or `retract` on a target with no belief (wire: `BELIEF_NOT_FOUND`).
    #[error("no belief about {target:?}; assert or hypothesize it first")]
    BeliefNotFound {
        /// The target as given.
        target: String,
    },
}

impl EpistemicError {
    /// The wire error code.
    pub fn code(&self) -> &'static str {
        match self {
            EpistemicError::BeliefNotFound { .. } => "BELIEF_NOT_FOUND",
        }
    }
}

fn merge_sources(into: &mut Vec<Uuid>, more: &[Uuid]) {
    for id in more {
        if !into.contains(id) {
            into.push(*id);
        }
    }
}

/// Applies one action to the belief stored under `req.normalised_target` (`existing`, with its
/// history), returning the new state and the event to append.
///
/// | action        | no belief                           | existing belief                                   |
/// |---------------|-------------------------------------|---------------------------------------------------|
/// | `assert`      | create: active, confidence c        | re-affirm: active, confidence c                   |
/// | `hypothesize` | create: hypothetical, confidence c  | unchanged, [`Outcome::AlreadyExists`]             |
/// | `verify`      | `BELIEF_NOT_FOUND`                  | confidence ← [`log_odds_update`]`(prior, c)`, status by [`BeliefStatus::after_verification`] |
/// | `retract`     | `BELIEF_NOT_FOUND`                  | retracted, confidence 0                           |
/// | `query`       | [`Outcome::NotFound`]               | [`Outcome::Found`], unchanged                     |
///
/// A retracted belief can be re-asserted or verified again (its prior 0 is clamped to 0.001).
/// Every change updates `rationale` and `updated_at`, sets `uncertainty_type` if given and adds
/// new `source_nodes`. `new_id` is used only when a belief is created.
///
/// # Errors
/// [`EpistemicError::BeliefNotFound`] for `verify` / `retract` without a belief.
pub fn apply_action(
    existing: Option<Belief>,
    req: &ActionRequest,
    new_id: Uuid,
    now: DateTime<Utc>,
) -> Result<ActionResult, EpistemicError> {
    let Some(mut belief) = existing else {
        let status = match req.action {
            ActionType::Assert => BeliefStatus::Active,
            ActionType::Hypothesize => BeliefStatus::Hypothetical,
            ActionType::Query => {
                return Ok(ActionResult {
                    outcome: Outcome::NotFound,
                    belief: None,
                    event: None,
                    message: format!("no belief about {:?}", req.target),
                });
            }
            ActionType::Verify | ActionType::Retract => {
                return Err(EpistemicError::BeliefNotFound {
                    target: req.target.clone(),
                });
            }
        };
        let event = BeliefEvent {
            action: req.action,
            input_confidence: req.confidence,
            status_before: None,
            status_after: status,
            confidence_before: None,
            confidence_after: req.confidence,
            rationale: req.rationale.clone(),
            at: now,
        };
        let mut source_nodes = Vec::new();
        merge_sources(&mut source_nodes, &req.source_nodes);
        let belief = Belief {
            id: new_id,
            target: req.target.clone(),
            normalised_target: req.normalised_target.clone(),
            status,
            confidence: req.confidence,
            rationale: req.rationale.clone(),
            uncertainty_type: req.uncertainty_type,
            source_nodes,
            created_at: now,
            updated_at: now,
            history: vec![event.clone()],
        };
        return Ok(ActionResult {
            outcome: Outcome::Created,
            message: format!(
                "created {} belief with confidence {}",
                status.as_str(),
                req.confidence
            ),
            belief: Some(belief),
            event: Some(event),
        });
    };

    let (status, confidence, outcome, message) = match req.action {
        ActionType::Query => {
            let message = format!(
                "found {} belief with confidence {} and {} recorded actions",
                belief.status.as_str(),
                belief.confidence,
                belief.history.len()
            );
            return Ok(ActionResult {
                outcome: Outcome::Found,
                belief: Some(belief),
                event: None,
                message,
            });
        }
        ActionType::Hypothesize => {
            let message = format!(
                "a belief about this target already exists (status {}, confidence {}); left unchanged",
                belief.status.as_str(),
                belief.confidence
            );
            return Ok(ActionResult {
                outcome: Outcome::AlreadyExists,
                belief: Some(belief),
                event: None,
                message,
            });
        }
        ActionType::Assert => (
            BeliefStatus::Active,
            req.confidence,
            Outcome::Reaffirmed,
            format!("re-affirmed belief with confidence {}", req.confidence),
        ),
        ActionType::Verify => {
            let posterior = log_odds_update(belief.confidence, req.confidence);
            let status = BeliefStatus::after_verification(posterior);
            (
                status,
                posterior,
                Outcome::Verified,
                format!(
                    "evidence {} moved confidence from {} to {}: {}",
                    req.confidence,
                    belief.confidence,
                    posterior,
                    status.as_str()
                ),
            )
        }
        ActionType::Retract => (
            BeliefStatus::Retracted,
            0.0,
            Outcome::Retracted,
            format!(
                "retracted belief; {} earlier actions kept in its history",
                belief.history.len()
            ),
        ),
    };
    let event = BeliefEvent {
        action: req.action,
        input_confidence: req.confidence,
        status_before: Some(belief.status),
        status_after: status,
        confidence_before: Some(belief.confidence),
        confidence_after: confidence,
        rationale: req.rationale.clone(),
        at: now,
    };
    belief.status = status;
    belief.confidence = confidence;
    belief.rationale = req.rationale.clone();
    belief.updated_at = now;
    if req.uncertainty_type.is_some() {
        belief.uncertainty_type = req.uncertainty_type;
    }
    merge_sources(&mut belief.source_nodes, &req.source_nodes);
    belief.history.push(event.clone());
    Ok(ActionResult {
        outcome,
        belief: Some(belief),
        event: Some(event),
        message,
    })
}

/// Summary of the whole workspace, returned with every action. Plain sums, so the store can
/// build it from SQL aggregates (`count(*)`, `total(confidence)`, `total(entropy)` per status).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkspaceSummary {
    /// Beliefs per status, indexed like [`BeliefStatus::NAMES`].
    pub counts: [u64; 5],
    /// Live (non-retracted) beliefs counted in the means.
    pub live: u64,
    /// Σ confidence over live beliefs.
    pub confidence_sum: f64,
    /// Σ [`binary_entropy`] over live beliefs.
    pub entropy_sum: f64,
}

impl WorkspaceSummary {
    /// Adds one belief (by status and confidence).
    pub fn add(&mut self, status: BeliefStatus, confidence: f64) {
        self.add_group(status, 1, confidence, binary_entropy(confidence));
    }

    /// Adds `count` beliefs of one status with the given sums of confidence and of
    /// [`binary_entropy`] (one row of a `GROUP BY status` aggregate).
    pub fn add_group(
        &mut self,
        status: BeliefStatus,
        count: u64,
        confidence_sum: f64,
        entropy_sum: f64,
    ) {
        self.counts[status as usize] += count;
        if status != BeliefStatus::Retracted {
            self.live += count;
            self.confidence_sum += confidence_sum;
            self.entropy_sum += entropy_sum;
        }
    }

    /// Builds a summary from `(status, confidence)` pairs.
    pub fn from_beliefs<I: IntoIterator<Item = (BeliefStatus, f64)>>(beliefs: I) -> Self {
        let mut s = Self::default();
        for (status, confidence) in beliefs {
            s.add(status, confidence);
        }
        s
    }

    /// Beliefs with the given status.
    pub fn count(&self, status: BeliefStatus) -> u64 {
        self.counts[status as usize]
    }

    /// All beliefs, retracted included.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Mean confidence of the live (non-retracted) beliefs; `None` when there are none.
    ///
    /// ```text
    /// mean_confidence = (1/n) Σ cᵢ   over live beliefs i = 1..n
    /// ```
    pub fn mean_confidence(&self) -> Option<f64> {
        (self.live > 0).then(|| self.confidence_sum / self.live as f64)
    }

    /// Mean binary entropy (bits) of the live beliefs' confidences; `None` when there are none.
    /// 0 means every belief is certain either way, 1 means every belief is a coin flip.
    ///
    /// ```text
    /// mean_entropy = (1/n) Σ H(cᵢ),   H(p) = −p log₂ p − (1−p) log₂(1−p)
    /// ```
    pub fn mean_entropy(&self) -> Option<f64> {
        (self.live > 0).then(|| self.entropy_sum / self.live as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-9;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(secs, 0).expect("valid time")
    }

    fn req(action: &str, target: &str, confidence: Option<f64>) -> ActionRequest {
        ActionRequest::validate(action, target, confidence, "because", None, &[])
            .expect("valid request")
    }

    fn run(existing: Option<Belief>, r: &ActionRequest, secs: i64) -> ActionResult {
        apply_action(existing, r, Uuid::from_u128(secs as u128), t(secs)).expect("applies")
    }

    #[test]
    fn hypothesize_then_verify_twice_reaches_the_log_odds_posterior() {
        // Hand computation: prior 0.6 has odds 0.6/0.4 = 1.5; evidence 0.9 has odds 9; two
        // verifications multiply the odds by 81: 121.5 ⇒ posterior 121.5/122.5 = 0.99183673…
        let r = run(None, &req("hypothesize", "P = NP", Some(0.6)), 1);
        assert_eq!(r.outcome, Outcome::Created);
        let b = r.belief.unwrap();
        assert_eq!(b.status, BeliefStatus::Hypothetical);
        let r = run(Some(b), &req("verify", "p = np", Some(0.9)), 2);
        let b = r.belief.unwrap();
        // After one: odds 13.5 ⇒ 13.5/14.5 = 0.93103448…
        assert!((b.confidence - 13.5 / 14.5).abs() < TOL);
        let r = run(Some(b), &req("verify", "P  =  NP", Some(0.9)), 3);
        let b = r.belief.unwrap();
        assert!((b.confidence - 121.5 / 122.5).abs() < 1e-6);
        assert!((b.confidence - 0.991_836_734_693_877_6).abs() < TOL);
        assert_eq!(b.status, BeliefStatus::Verified);
        assert_eq!(b.history.len(), 3);
        assert_eq!(b.target, "P = NP", "target kept as first given");
        let last = r.event.unwrap();
        assert_eq!(last.status_before, Some(BeliefStatus::Verified));
        assert!((last.confidence_before.unwrap() - 13.5 / 14.5).abs() < TOL);
    }

    #[test]
    fn verify_low_evidence_denies_and_middle_stays_hypothetical() {
        let b = run(None, &req("hypothesize", "x", None), 1).belief.unwrap();
        // Prior 0.5 (odds 1), evidence 0.1 (odds 1/9) ⇒ 0.1 < 0.3 ⇒ denied.
        let d = run(Some(b.clone()), &req("verify", "x", Some(0.1)), 2);
        let d = d.belief.unwrap();
        assert!((d.confidence - 0.1).abs() < TOL);
        assert_eq!(d.status, BeliefStatus::Denied);
        // Evidence 0.6 (odds 1.5) ⇒ 0.6, inside [0.3, 0.7] ⇒ hypothetical.
        let h = run(Some(b), &req("verify", "x", Some(0.6)), 2)
            .belief
            .unwrap();
        assert_eq!(h.status, BeliefStatus::Hypothetical);
    }

    #[test]
    fn status_threshold_table() {
        let cases = [
            (0.71, BeliefStatus::Verified),
            (0.7, BeliefStatus::Hypothetical),
            (0.5, BeliefStatus::Hypothetical),
            (0.3, BeliefStatus::Hypothetical),
            (0.29, BeliefStatus::Denied),
            (f64::NAN, BeliefStatus::Hypothetical),
        ];
        for (c, want) in cases {
            assert_eq!(BeliefStatus::after_verification(c), want, "{c}");
        }
    }

    #[test]
    fn assert_retract_query_and_not_found() {
        let r = run(None, &req("query", "unknown", None), 1);
        assert_eq!((r.outcome, r.belief.is_none()), (Outcome::NotFound, true));
        for action in ["verify", "retract"] {
            let e = apply_action(None, &req(action, "unknown", None), Uuid::nil(), t(1));
            assert_eq!(e.unwrap_err().code(), "BELIEF_NOT_FOUND");
        }
        let b = run(None, &req("assert", "Rust is fast", Some(0.8)), 1)
            .belief
            .unwrap();
        assert_eq!((b.status, b.confidence), (BeliefStatus::Active, 0.8));
        let b = run(Some(b), &req("assert", "RUST IS FAST", Some(0.9)), 2);
        assert_eq!(b.outcome, Outcome::Reaffirmed);
        let b = b.belief.unwrap();
        assert_eq!((b.confidence, b.history.len()), (0.9, 2));
        let r = run(Some(b), &req("retract", "rust is fast", None), 3);
        let b = r.belief.unwrap();
        assert_eq!((b.status, b.confidence), (BeliefStatus::Retracted, 0.0));
        assert_eq!(b.history.len(), 3, "retract keeps history");
        let q = run(Some(b.clone()), &req("query", "Rust is fast", None), 4);
        assert_eq!(q.outcome, Outcome::Found);
        assert!(q.event.is_none());
        assert_eq!(q.belief.unwrap(), b, "query changes nothing");
    }

    #[test]
    fn hypothesize_on_existing_answers_with_it_unchanged() {
        let b = run(None, &req("assert", "a", Some(0.9)), 1).belief.unwrap();
        let r = run(Some(b.clone()), &req("hypothesize", "A", Some(0.2)), 2);
        assert_eq!(r.outcome, Outcome::AlreadyExists);
        assert!(r.event.is_none());
        assert_eq!(r.belief.unwrap(), b);
        assert!(r.message.contains("already exists"), "{}", r.message);
    }

    #[test]
    fn context_is_merged() {
        let n1 = "550e8400-e29b-41d4-a716-446655440000";
        let n2 = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
        let r1 = ActionRequest::validate("assert", "t", None, "r", Some("epistemic"), &[n1]);
        let b = run(None, &r1.unwrap(), 1).belief.unwrap();
        let r2 = ActionRequest::validate("verify", "t", Some(0.7), "r", Some("mixed"), &[n2, n1]);
        let b = run(Some(b), &r2.unwrap(), 2).belief.unwrap();
        assert_eq!(b.uncertainty_type, Some(UncertaintyType::Mixed));
        let want: Vec<Uuid> = [n1, n2]
            .iter()
            .map(|s| Uuid::parse_str(s).unwrap())
            .collect();
        assert_eq!(b.source_nodes, want);
    }

    #[test]
    fn validation_table() {
        let t4096 = "🦀".repeat(MAX_TARGET_CHARS);
        let t4097 = "🦀".repeat(MAX_TARGET_CHARS + 1);
        let r1025 = "é".repeat(MAX_RATIONALE_CHARS + 1);
        let combining = "e\u{301}".repeat(MAX_TARGET_CHARS / 2);
        // (action, target, confidence, rationale, uncertainty, sources, Err(field) or Ok)
        type Case<'a> = (
            &'a str,
            &'a str,
            Option<f64>,
            &'a str,
            Option<&'a str>,
            &'a [&'a str],
            Option<&'a str>,
        );
        let cases: &[Case] = &[
            ("assert", "中文目标", Some(0.5), "r", None, &[], None),
            ("assert", &t4096, None, "r", None, &[], None),
            ("assert", &combining, None, "r", None, &[], None),
            ("assert", &t4097, None, "r", None, &[], Some("target")),
            ("assert", "", None, "r", None, &[], Some("target")),
            ("assert", "   ", None, "r", None, &[], Some("target")),
            ("believe", "t", None, "r", None, &[], Some("action_type")),
            ("assert", "t", Some(1.5), "r", None, &[], Some("confidence")),
            (
                "assert",
                "t",
                Some(-0.1),
                "r",
                None,
                &[],
                Some("confidence"),
            ),
            (
                "assert",
                "t",
                Some(f64::NAN),
                "r",
                None,
                &[],
                Some("confidence"),
            ),
            ("assert", "t", None, "", None, &[], Some("rationale")),
            ("assert", "t", None, &r1025, None, &[], Some("rationale")),
            (
                "assert",
                "t",
                None,
                "r",
                Some("random"),
                &[],
                Some("context.uncertainty_type"),
            ),
            (
                "assert",
                "t",
                None,
                "r",
                None,
                &["not-a-uuid"],
                Some("context.source_nodes"),
            ),
        ];
        for (a, target, c, r, u, s, want) in cases {
            let got = ActionRequest::validate(a, target, *c, r, *u, s);
            match (got, want) {
                (Ok(req), None) => assert!(!req.normalised_target.is_empty()),
                (Err(e), Some(field)) => assert_eq!(e.field(), *field, "{e}"),
                (got, want) => panic!("got {got:?}, want error on {want:?}"),
            }
        }
        assert!(
            t4096.len() > MAX_TARGET_CHARS,
            "4096 emoji are more than 4096 bytes"
        );
    }

    #[test]
    fn workspace_summary_reference_values() {
        // Live beliefs 0.5 (H = 1) and 0.25 (H = 0.811278…); the retracted one is counted but
        // not averaged. Mean confidence 0.375, mean entropy (1 + 0.811278…)/2.
        let s = WorkspaceSummary::from_beliefs([
            (BeliefStatus::Active, 0.5),
            (BeliefStatus::Denied, 0.25),
            (BeliefStatus::Retracted, 0.0),
        ]);
        assert_eq!(s.total(), 3);
        assert_eq!(s.count(BeliefStatus::Active), 1);
        assert_eq!(s.count(BeliefStatus::Denied), 1);
        assert_eq!(s.count(BeliefStatus::Retracted), 1);
        assert_eq!(s.count(BeliefStatus::Verified), 0);
        assert!((s.mean_confidence().unwrap() - 0.375).abs() < TOL);
        let h = 0.5 + 0.75 * (4.0f64 / 3.0).log2();
        assert!((s.mean_entropy().unwrap() - (1.0 + h) / 2.0).abs() < TOL);
        let empty = WorkspaceSummary::default();
        assert_eq!(
            (empty.mean_confidence(), empty.mean_entropy()),
            (None, None)
        );
    }

    #[test]
    fn enum_names_follow_the_seed() {
        assert_eq!(
            ActionType::NAMES,
            ["assert", "retract", "query", "hypothesize", "verify"]
        );
        assert_eq!(UncertaintyType::NAMES, ["epistemic", "aleatory", "mixed"]);
        assert_eq!(
            BeliefStatus::NAMES,
            ["active", "hypothetical", "verified", "denied", "retracted"]
        );
        for n in BeliefStatus::NAMES {
            assert_eq!(BeliefStatus::parse(n).unwrap().as_str(), *n);
        }
    }
}

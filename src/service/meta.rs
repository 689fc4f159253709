//! Meta-learning: the accuracy tracker, adaptive λ weights, lifecycle, escalation and
//! recalibration (gradient step or Bayesian optimisation over λ_s).
//!
//! Pure state and arithmetic: callers pass the time and the replay window in, and persist the
//! events and state this module returns. Rules from SPEC §3 (lifecycle, λ) and §4 meta_learning.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use crate::service::gp::{self, BoConfig};
use crate::service::vocab::{Domain, LAMBDA_MAX, LAMBDA_MIN, Lambdas, NUM_EMBEDDERS};

/// Length of every rolling accuracy window and of the replay window.
pub const WINDOW: usize = 100;
/// Rolling accuracy below this counts a low cycle and raises `accuracy_alert`.
pub const LOW_ACCURACY: f64 = 0.7;
/// Rolling accuracy at or above this clears an alert (`accuracy_recovery`); hysteresis band.
pub const RECOVERY_ACCURACY: f64 = 0.75;
/// |predicted − actual| above this adjusts λ.
pub const ERROR_THRESHOLD: f64 = 0.2;
/// Consecutive low cycles that start a Bayesian recalibration by themselves.
pub const ESCALATION_CYCLES: u32 = 10;
/// Consecutive failed Bayesian runs that escalate to a human.
pub const MAX_BAYESIAN_FAILURES: u32 = 3;
/// Minimum recorded predictions carrying ΔS/ΔC for a Bayesian recalibration.
pub const MIN_BAYESIAN_SAMPLES: usize = 10;
/// Bounds of each per-embedder weight.
pub const EMBEDDER_WEIGHT_MIN: f64 = 0.05;
/// Bounds of each per-embedder weight.
pub const EMBEDDER_WEIGHT_MAX: f64 = 0.9;
/// Acetylcholine level at or below which the learning rate is [`BASE_LEARNING_RATE`]; also the
/// level used when a prediction gives none.
pub const ACH_BASELINE: f64 = 0.001;
/// Acetylcholine level at or above which the learning rate reaches [`MAX_LEARNING_RATE`].
pub const ACH_MAX: f64 = 0.002;
/// Learning rate α of a λ adjustment at the baseline acetylcholine level.
pub const BASE_LEARNING_RATE: f64 = 0.05;
/// Upper bound of the learning rate α.
pub const MAX_LEARNING_RATE: f64 = 0.1;
/// Lower bound of the learning rate α.
pub const MIN_LEARNING_RATE: f64 = 0.01;

/// Lifecycle stage by interaction count (SPEC §3). Names: `infancy`, `growth`, `maturity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "lowercase")]
pub enum LifecycleStage {
    /// Fewer than 50 interactions: base λ (0.7, 0.3).
    Infancy,
    /// 50 to 499 interactions: base λ (0.5, 0.5).
    Growth,
    /// 500 or more interactions: base λ (0.3, 0.7).
    Maturity,
}

impl LifecycleStage {
    /// The stage for an interaction count.
    pub fn for_count(count: u64) -> Self {
        match count {
            0..50 => LifecycleStage::Infancy,
            50..500 => LifecycleStage::Growth,
            _ => LifecycleStage::Maturity,
        }
    }

    /// The stage's base λ.
    pub fn base(self) -> Lambdas {
        match self {
            LifecycleStage::Infancy => Lambdas::pair(0.7, 0.3),
            LifecycleStage::Growth => Lambdas::pair(0.5, 0.5),
            LifecycleStage::Maturity => Lambdas::pair(0.3, 0.7),
        }
    }

    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Escalation status. Names: `normal`, `bayesian_pending`, `human_review_required`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum EscalationStatus {
    /// No escalation under way.
    Normal,
    /// A Bayesian recalibration failed; the next manual recalibration is Bayesian.
    BayesianPending,
    /// Three Bayesian runs failed in a row; an operator must review and `reset_meta_learning`.
    HumanReviewRequired,
}

impl EscalationStatus {
    /// Lowercase name as reported by `get_meta_learning_status`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The kinds of event in the meta-learning log, named in snake case (`lambda_adjustment`, …,
/// `human_escalation`).
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
)]
#[strum(serialize_all = "snake_case", ascii_case_insensitive)]
pub enum EventType {
    /// λ moved after a prediction error above the threshold, or by a recalibration.
    LambdaAdjustment,
    /// A Bayesian recalibration ran (forced, or after 10 low-accuracy cycles).
    BayesianEscalation,
    /// Rolling accuracy fell below 0.7.
    AccuracyAlert,
    /// Rolling accuracy rose back to 0.75 or more.
    AccuracyRecovery,
    /// A λ or embedder weight hit its bound.
    WeightClamped,
    /// An operator reset (`reset_meta_learning`).
    SelfHealing,
    /// Three failed Bayesian runs in a row: a human must review.
    HumanEscalation,
}

impl EventType {
    /// Every event type, in schema order.
    pub const ALL: [EventType; 7] = crate::service::vocab::variants();

    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parse a snake_case name, ignoring ASCII case.
    pub fn parse(s: &str) -> Option<EventType> {
        s.trim().parse().ok()
    }
}

/// One entry of the meta-learning log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When (UTC).
    pub timestamp: DateTime<Utc>,
    /// What kind of event.
    pub event_type: EventType,
    /// predicted − actual of the prediction that caused it, when one did.
    pub prediction_error: Option<f64>,
    /// λ before the event.
    pub lambda_before: Lambdas,
    /// λ after the event.
    pub lambda_after: Lambdas,
    /// Global rolling accuracy at the time, `None` before any prediction.
    pub accuracy_avg: Option<f64>,
    /// Whether the event belongs to an escalation (Bayesian or human).
    pub escalated: bool,
    /// The domain of the prediction that caused it, when one did and had one.
    pub domain: Option<Domain>,
    /// The embedder (0..=12) of the prediction that caused it, when one did.
    pub embedder_index: Option<u8>,
    /// A sentence saying what happened and why.
    pub detail: String,
}

/// One recorded prediction: what was predicted, what happened, and the signals behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// When it was recorded (UTC).
    pub timestamp: DateTime<Utc>,
    /// 0..12, or `None` for an aggregate prediction (e.g. from `gwt_compute_delta_sc`).
    pub embedder_index: Option<u8>,
    /// In [0, 1].
    pub predicted: f64,
    /// In [0, 1].
    pub actual: f64,
    /// Surprise ΔS in [0, 1], when known.
    pub delta_s: Option<f64>,
    /// Coherence ΔC in [0, 1], when known.
    pub delta_c: Option<f64>,
    /// Knowledge domain, when given.
    pub domain: Option<Domain>,
    /// Acetylcholine level (learning-rate modulator), default 0.001.
    pub ach_level: f64,
}

impl Prediction {
    /// Signed error `e = predicted − actual`.
    pub fn error(&self) -> f64 {
        self.predicted - self.actual
    }

    /// Accuracy `1 − min(|e|, 1)`.
    pub fn accuracy(&self) -> f64 {
        1.0 - self.error().abs().min(1.0)
    }
}

/// A λ change and what caused it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adjustment {
    /// Change of λ_s actually applied (after clamping).
    pub delta_s: f64,
    /// Change of λ_c actually applied (= −delta_s).
    pub delta_c: f64,
    /// Learning rate used.
    pub alpha: f64,
    /// The error that triggered it (mean error for a replay step).
    pub trigger_error: f64,
}

/// The learning rate from the acetylcholine level (SPEC §4 meta_learning).
///
/// ```text
/// α = clamp(0.05 · (1 + (clamp(ach, 0.001, 0.002) − 0.001) / 0.001), 0.01, 0.1)
/// ```
/// ([`BASE_LEARNING_RATE`], [`ACH_BASELINE`], [`ACH_MAX`], [`MIN_LEARNING_RATE`],
/// [`MAX_LEARNING_RATE`]), so α runs linearly from 0.05 at ach ≤ 0.001 to 0.1 at ach ≥ 0.002.
/// NaN ach is treated as 0.001.
pub fn learning_rate(ach: f64) -> f64 {
    let ach = if ach.is_nan() { ACH_BASELINE } else { ach };
    (BASE_LEARNING_RATE * (1.0 + (ach.clamp(ACH_BASELINE, ACH_MAX) - ACH_BASELINE) / ACH_BASELINE))
        .clamp(MIN_LEARNING_RATE, MAX_LEARNING_RATE)
}

/// A bounded rolling window of accuracies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    values: VecDeque<f64>,
}

impl Window {
    /// A window holding `values` (oldest first); only the newest [`WINDOW`] are kept.
    pub fn from_values(values: impl IntoIterator<Item = f64>) -> Self {
        let mut w = Window::default();
        for v in values {
            w.push(v);
        }
        w
    }

    /// Append a value, dropping the oldest beyond [`WINDOW`].
    pub fn push(&mut self, v: f64) {
        if self.values.len() == WINDOW {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    /// Mean of the window, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        if self.values.is_empty() {
            None
        } else {
            Some(self.values.iter().sum::<f64>() / self.values.len() as f64)
        }
    }

    /// The values, oldest first.
    pub fn values(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.values.iter().copied()
    }

    /// Number of values held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The whole meta-learning state. Every field is plain and persisted by `store::meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaState {
    /// Current λ.
    pub lambdas: Lambdas,
    /// Recorded predictions so far (drives the lifecycle stage).
    pub interaction_count: u64,
    /// Global rolling accuracy.
    pub global: Window,
    /// Per-embedder rolling accuracy, index 0..12.
    pub embedders: [Window; NUM_EMBEDDERS],
    /// Consecutive recorded predictions with global rolling accuracy below [`LOW_ACCURACY`].
    pub consecutive_low: u32,
    /// Whether an accuracy alert is raised (cleared by recovery to [`RECOVERY_ACCURACY`]).
    pub alert_active: bool,
    /// Consecutive failed Bayesian recalibrations.
    pub bayesian_failures: u32,
    /// Set after [`MAX_BAYESIAN_FAILURES`]; cleared only by an operator reset.
    pub human_review_required: bool,
    /// λ adjustments applied so far.
    pub adjustment_count: u64,
    /// Time of the last applied λ adjustment.
    pub last_adjustment_at: Option<DateTime<Utc>>,
}

impl Default for MetaState {
    fn default() -> Self {
        MetaState {
            lambdas: LifecycleStage::Infancy.base(),
            interaction_count: 0,
            global: Window::default(),
            embedders: Default::default(),
            consecutive_low: 0,
            alert_active: false,
            bayesian_failures: 0,
            human_review_required: false,
            adjustment_count: 0,
            last_adjustment_at: None,
        }
    }
}

/// What `record_prediction` did.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordOutcome {
    /// This prediction's accuracy.
    pub accuracy: f64,
    /// This prediction's signed error.
    pub error: f64,
    /// The λ adjustment applied, if |e| exceeded [`ERROR_THRESHOLD`].
    pub adjustment: Option<Adjustment>,
    /// Events to log, in order.
    pub events: Vec<Event>,
    /// True when [`ESCALATION_CYCLES`] consecutive low cycles were reached: the caller runs a
    /// Bayesian recalibration now (see [`MetaState::plan_bayesian`]).
    pub escalate: bool,
}

/// What recording one prediction did ([`MetaState::record_and_escalate`]): everything the
/// caller persists and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// This prediction's accuracy `1 − min(|e|, 1)`.
    pub accuracy: f64,
    /// This prediction's signed error `e = predicted − actual`.
    pub error: f64,
    /// The λ adjustment applied, if |e| exceeded [`ERROR_THRESHOLD`].
    pub adjustment: Option<Adjustment>,
    /// The automatic Bayesian recalibration this prediction started by completing
    /// [`ESCALATION_CYCLES`] consecutive low cycles, already applied; `None` when none ran.
    pub bayesian: Option<RecalibrationPlan>,
    /// Whether that recalibration was the [`MAX_BAYESIAN_FAILURES`]-th failure in a row and
    /// escalated to a human (a `human_escalation` event is then among `events`).
    pub human_escalation: bool,
    /// Events to log, in order.
    pub events: Vec<Event>,
    /// The embedder whose accuracy window changed besides the global window.
    pub embedder_window: Option<u8>,
}

/// What a manual recalibration asks for ([`MetaState::recalibrate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecalibrationRequest {
    /// Bayesian optimisation even when no escalation is pending.
    pub force_bayesian: bool,
    /// The domain whose predictions form the replay window, `None` for all.
    pub domain: Option<Domain>,
    /// Compute only; change nothing.
    pub dry_run: bool,
}

/// What a manual recalibration did ([`MetaState::recalibrate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Recalibration {
    /// The plan computed (applied unless the request was a dry run).
    pub plan: RecalibrationPlan,
    /// Events to log, in order; empty for a dry run.
    pub events: Vec<Event>,
    /// λ before and after, when the run changed λ (an operator override to record); never for
    /// a dry run.
    pub lambda_change: Option<(Lambdas, Lambdas)>,
}

/// Recalibration method. Names: `gradient`, `bayesian`, `none`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::IntoStaticStr, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Method {
    /// One gradient step of λ_s on the replay window.
    Gradient,
    /// Bayesian optimisation (GP + Expected Improvement) of λ_s.
    Bayesian,
    /// Nothing could be evaluated (an empty replay window).
    None,
}

/// A computed recalibration, not yet applied.
#[derive(Debug, Clone, PartialEq)]
pub struct RecalibrationPlan {
    /// How λ was searched.
    pub method: Method,
    /// Whether the best λ found is applied (see SPEC §4: at least as good as the current λ on
    /// the replay window, and at least the low-accuracy threshold).
    pub success: bool,
    /// λ before the plan.
    pub previous: Lambdas,
    /// λ after applying the plan (equal to `previous` when it fails).
    pub new: Lambdas,
    /// The change of λ, when the plan changes it.
    pub adjustment: Option<Adjustment>,
    /// Objective evaluations (Bayesian only).
    pub bo_iterations: Option<usize>,
    /// Max Expected Improvement at the last proposal (Bayesian only).
    pub expected_improvement: Option<f64>,
    /// Replay accuracy of the previous λ on the replay window, when it could be evaluated.
    pub replay_accuracy_before: Option<f64>,
    /// Replay accuracy of the new λ on the replay window, when it could be evaluated.
    pub replay_accuracy_after: Option<f64>,
    /// Number of predictions the plan was computed from.
    pub samples: usize,
    /// Why it failed.
    pub error: Option<String>,
}

/// Replay accuracy of λ_s on predictions carrying ΔS and ΔC:
///
/// ```text
/// acc(λ_s) = mean_i [ 1 − min(|λ_s·ΔS_i + (1 − λ_s)·ΔC_i − actual_i|, 1) ]
/// ```
/// `None` when no prediction carries both signals.
pub fn replay_accuracy(lambda_s: f64, replay: &[Prediction]) -> Option<f64> {
    let (l, _) = Lambdas::from_s(lambda_s);
    let mut n = 0usize;
    let mut sum = 0.0;
    for p in replay {
        if let (Some(ds), Some(dc)) = (p.delta_s, p.delta_c) {
            n += 1;
            sum += 1.0 - (l.learning_score(ds, dc) - p.actual).abs().min(1.0);
        }
    }
    (n > 0).then(|| sum / n as f64)
}

impl MetaState {
    /// The lifecycle stage for the current interaction count.
    pub fn stage(&self) -> LifecycleStage {
        LifecycleStage::for_count(self.interaction_count)
    }

    /// Base λ of the current stage.
    pub fn base_lambdas(&self) -> Lambdas {
        self.stage().base()
    }

    /// Global rolling accuracy, `None` before any prediction.
    pub fn current_accuracy(&self) -> Option<f64> {
        self.global.mean()
    }

    /// Escalation status derived from the counters.
    pub fn escalation_status(&self) -> EscalationStatus {
        if self.human_review_required {
            EscalationStatus::HumanReviewRequired
        } else if self.bayesian_failures > 0 {
            EscalationStatus::BayesianPending
        } else {
            EscalationStatus::Normal
        }
    }

    /// Per-embedder rolling accuracy, `None` where an embedder has no data.
    pub fn embedder_accuracy(&self) -> [Option<f64>; NUM_EMBEDDERS] {
        std::array::from_fn(|i| self.embedders[i].mean())
    }

    /// Per-embedder weights proportional to rolling accuracy, each in
    /// [[`EMBEDDER_WEIGHT_MIN`], [`EMBEDDER_WEIGHT_MAX`]], summing to 1.
    ///
    /// An embedder without data counts with the mean accuracy of those with data (all equal
    /// when none has data). Bounds are enforced by iterative clamp-and-renormalise: clamped
    /// weights are fixed and the remaining mass is shared in proportion among the others.
    pub fn embedder_weights(&self) -> [f64; NUM_EMBEDDERS] {
        let acc = self.embedder_accuracy();
        let known: Vec<f64> = acc.iter().flatten().copied().collect();
        let fill = if known.is_empty() {
            1.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        let raw: [f64; NUM_EMBEDDERS] = std::array::from_fn(|i| acc[i].unwrap_or(fill).max(0.0));
        bounded_proportional(&raw, EMBEDDER_WEIGHT_MIN, EMBEDDER_WEIGHT_MAX)
    }

    fn event(&self, now: DateTime<Utc>, event_type: EventType, before: Lambdas) -> Event {
        Event {
            timestamp: now,
            event_type,
            prediction_error: None,
            lambda_before: before,
            lambda_after: self.lambdas,
            accuracy_avg: self.current_accuracy(),
            escalated: false,
            domain: None,
            embedder_index: None,
            detail: String::new(),
        }
    }

    /// An event caused by prediction `p`: it carries `p`'s error, domain and embedder.
    fn caused_by(
        &self,
        p: &Prediction,
        now: DateTime<Utc>,
        event_type: EventType,
        before: Lambdas,
        detail: String,
    ) -> Event {
        Event {
            prediction_error: Some(p.error()),
            domain: p.domain,
            embedder_index: p.embedder_index,
            detail,
            ..self.event(now, event_type, before)
        }
    }

    /// Record one prediction outcome (SPEC §4 `record_prediction`).
    ///
    /// Updates the global and per-embedder windows, the lifecycle (moving λ by the change of
    /// base on a stage change), adjusts λ when |e| > [`ERROR_THRESHOLD`] with the delta rule
    ///
    /// ```text
    /// with ΔS, ΔC:  δ_s = −α · e · (ΔS − ΔC)      (gradient of ½e² for L = λ_s·ΔS + λ_c·ΔC)
    /// otherwise:    δ_s = −α · e                  (the seed's rule)
    /// δ_c = −δ_s,   λ_s clamped to [0.1, 0.9]
    /// ```
    /// and counts low cycles with alert/recovery hysteresis. Inputs are assumed validated
    /// (finite, in [0, 1], embedder index < 13). The escalation it may call for is left to the
    /// caller; [`MetaState::record_and_escalate`] runs it.
    pub fn record_prediction(&mut self, p: &Prediction, now: DateTime<Utc>) -> RecordOutcome {
        let mut events = Vec::new();
        self.interaction_count += 1;
        self.global.push(p.accuracy());
        if let Some(i) = p.embedder_index {
            self.embedders[usize::from(i)].push(p.accuracy());
        }
        self.follow_lifecycle(p, now, &mut events);
        let adjustment = self.adjust_toward(p, now, &mut events);
        let escalate = self.count_cycle(p, now, &mut events);
        RecordOutcome {
            accuracy: p.accuracy(),
            error: p.error(),
            adjustment,
            events,
            escalate,
        }
    }

    /// After the interaction count moved: on a stage change, move λ by the change of base.
    fn follow_lifecycle(&mut self, p: &Prediction, now: DateTime<Utc>, events: &mut Vec<Event>) {
        let stage_before = LifecycleStage::for_count(self.interaction_count - 1);
        let stage_after = self.stage();
        if stage_after == stage_before {
            return;
        }
        let before = self.lambdas;
        let shift = stage_after.base().s() - stage_before.base().s();
        let (l, clamped) = Lambdas::from_s(self.lambdas.s() + shift);
        self.lambdas = l;
        let lifecycle = |detail: String, event_type| Event {
            domain: p.domain,
            detail,
            ..self.event(now, event_type, before)
        };
        events.push(lifecycle(
            format!(
                "lifecycle stage {} -> {}: λ moved by the change of base ({shift:+.2})",
                stage_before.as_str(),
                stage_after.as_str()
            ),
            EventType::LambdaAdjustment,
        ));
        if clamped {
            events.push(lifecycle(
                "λ_s clamped to [0.1, 0.9] after a lifecycle change".into(),
                EventType::WeightClamped,
            ));
        }
    }

    /// The delta-rule step of λ when |e| > [`ERROR_THRESHOLD`] (see [`Self::record_prediction`]).
    fn adjust_toward(
        &mut self,
        p: &Prediction,
        now: DateTime<Utc>,
        events: &mut Vec<Event>,
    ) -> Option<Adjustment> {
        let error = p.error();
        if error.abs() <= ERROR_THRESHOLD {
            return None;
        }
        let alpha = learning_rate(p.ach_level);
        let raw = match (p.delta_s, p.delta_c) {
            (Some(ds), Some(dc)) => -alpha * error * (ds - dc),
            _ => -alpha * error,
        };
        let before = self.lambdas;
        let (l, clamped) = Lambdas::from_s(before.s() + raw);
        self.lambdas = l;
        let applied = l.s() - before.s();
        self.adjustment_count += 1;
        self.last_adjustment_at = Some(now);
        events.push(self.caused_by(
            p,
            now,
            EventType::LambdaAdjustment,
            before,
            format!(
                "|error| {:.4} > 0.2: δ_s = {applied:+.6} (α = {alpha})",
                error.abs()
            ),
        ));
        if clamped {
            events.push(self.caused_by(
                p,
                now,
                EventType::WeightClamped,
                before,
                format!(
                    "λ_s step {raw:+.6} clamped to the range [0.1, 0.9] (applied {applied:+.6})"
                ),
            ));
        }
        Some(Adjustment {
            delta_s: applied,
            delta_c: -applied,
            alpha,
            trigger_error: error,
        })
    }

    /// Count a low cycle (or reset the count) with alert/recovery hysteresis; `true` when
    /// [`ESCALATION_CYCLES`] consecutive low cycles call for a Bayesian recalibration.
    fn count_cycle(&mut self, p: &Prediction, now: DateTime<Utc>, events: &mut Vec<Event>) -> bool {
        let acc = self.current_accuracy().unwrap_or(1.0);
        let mut escalate = false;
        if acc < LOW_ACCURACY {
            self.consecutive_low += 1;
            if !self.alert_active {
                self.alert_active = true;
                events.push(self.caused_by(
                    p,
                    now,
                    EventType::AccuracyAlert,
                    self.lambdas,
                    format!("rolling accuracy {acc:.4} fell below 0.7"),
                ));
            }
            escalate = self.consecutive_low >= ESCALATION_CYCLES && !self.human_review_required;
        } else {
            self.consecutive_low = 0;
        }
        if self.alert_active && acc >= RECOVERY_ACCURACY {
            self.alert_active = false;
            events.push(self.caused_by(
                p,
                now,
                EventType::AccuracyRecovery,
                self.lambdas,
                format!("rolling accuracy {acc:.4} recovered to 0.75 or more"),
            ));
        }
        escalate
    }

    /// Record one prediction and run the escalation it calls for: the operation behind the
    /// `record_prediction` tool.
    ///
    /// Does [`Self::record_prediction`]; when that completes [`ESCALATION_CYCLES`] consecutive
    /// low cycles, plans a Bayesian recalibration ([`Self::plan_bayesian`]) over `replay()` and
    /// applies it as an automatic run ([`Self::apply_plan`]), which may escalate to a human
    /// after [`MAX_BAYESIAN_FAILURES`] failed runs in a row. `replay` must return the replay
    /// window with `p` already in it (the newest [`WINDOW`] recorded predictions, oldest
    /// first); it is called only when a recalibration runs, so the common case reads nothing.
    ///
    /// On return `self` holds the new state: persist it (the global window and, when
    /// [`Recorded::embedder_window`] is set, that embedder's window changed) and log
    /// [`Recorded::events`].
    ///
    /// # Errors
    /// The error of `replay`; `self` is then partly updated and must be reloaded.
    pub fn record_and_escalate<E>(
        &mut self,
        p: &Prediction,
        now: DateTime<Utc>,
        replay: impl FnOnce() -> Result<Vec<Prediction>, E>,
    ) -> Result<Recorded, E> {
        let outcome = self.record_prediction(p, now);
        let mut events = outcome.events;
        let mut bayesian = None;
        let mut human_escalation = false;
        if outcome.escalate {
            let plan = self.plan_bayesian(&replay()?);
            let applied = self.apply_plan(&plan, true, p.domain, now);
            human_escalation = applied
                .iter()
                .any(|e| e.event_type == EventType::HumanEscalation);
            events.extend(applied);
            bayesian = Some(plan);
        }
        Ok(Recorded {
            accuracy: outcome.accuracy,
            error: outcome.error,
            adjustment: outcome.adjustment,
            bayesian,
            human_escalation,
            events,
            embedder_window: p.embedder_index,
        })
    }

    /// Whether an escalation is pending, so that a manual recalibration is Bayesian even when
    /// not forced: a Bayesian run failed, a human review is required, or [`ESCALATION_CYCLES`]
    /// low cycles are counted.
    pub fn escalation_pending(&self) -> bool {
        self.escalation_status() != EscalationStatus::Normal
            || self.consecutive_low >= ESCALATION_CYCLES
    }

    /// A manual recalibration (the `trigger_lambda_recalibration` tool) over `replay`, the
    /// replay window of `req.domain` (or of all domains): Bayesian when forced or when
    /// [`Self::escalation_pending`], else a gradient step. Applied unless `req.dry_run`; a dry
    /// run changes nothing, not even counters, and returns no events.
    pub fn recalibrate(
        &mut self,
        req: &RecalibrationRequest,
        replay: &[Prediction],
        now: DateTime<Utc>,
    ) -> Recalibration {
        let plan = if req.force_bayesian || self.escalation_pending() {
            self.plan_bayesian(replay)
        } else {
            self.plan_gradient(replay)
        };
        if req.dry_run {
            return Recalibration {
                plan,
                events: Vec::new(),
                lambda_change: None,
            };
        }
        let before = self.lambdas;
        let events = self.apply_plan(&plan, false, req.domain, now);
        let lambda_change = (self.lambdas != before).then_some((before, self.lambdas));
        Recalibration {
            plan,
            events,
            lambda_change,
        }
    }

    /// A gradient recalibration over the replay window (newest [`WINDOW`] predictions), not
    /// applied.
    ///
    /// ```text
    /// predictions with ΔS, ΔC:  e_i = λ_s·ΔS_i + λ_c·ΔC_i − actual_i,  δ_s = −α · mean(e_i·(ΔS_i − ΔC_i))
    /// otherwise (seed rule):    e_i = predicted_i − actual_i,          δ_s = −α · mean(e_i)
    /// ```
    /// with α = [`learning_rate`] of the mean ach level. Fails (method `none`) on an empty window.
    pub fn plan_gradient(&self, replay: &[Prediction]) -> RecalibrationPlan {
        let previous = self.lambdas;
        let mut plan = RecalibrationPlan {
            method: Method::Gradient,
            success: false,
            previous,
            new: previous,
            adjustment: None,
            bo_iterations: None,
            expected_improvement: None,
            replay_accuracy_before: replay_accuracy(previous.s(), replay),
            replay_accuracy_after: None,
            samples: replay.len(),
            error: None,
        };
        if replay.is_empty() {
            plan.method = Method::None;
            plan.error = Some("no recorded predictions in the replay window".into());
            return plan;
        }
        let alpha =
            learning_rate(replay.iter().map(|p| p.ach_level).sum::<f64>() / replay.len() as f64);
        let with_signals: Vec<(f64, f64, f64)> = replay
            .iter()
            .filter_map(|p| Some((p.delta_s?, p.delta_c?, p.actual)))
            .collect();
        let (raw, mean_error) = if with_signals.is_empty() {
            let me = replay.iter().map(Prediction::error).sum::<f64>() / replay.len() as f64;
            (-alpha * me, me)
        } else {
            let n = with_signals.len() as f64;
            let mut grad = 0.0;
            let mut me = 0.0;
            for (ds, dc, actual) in &with_signals {
                let e = previous.learning_score(*ds, *dc) - actual;
                grad += e * (ds - dc);
                me += e;
            }
            (-alpha * grad / n, me / n)
        };
        let (new, _) = Lambdas::from_s(previous.s() + raw);
        let applied = new.s() - previous.s();
        plan.success = true;
        plan.new = new;
        plan.adjustment = Some(Adjustment {
            delta_s: applied,
            delta_c: -applied,
            alpha,
            trigger_error: mean_error,
        });
        plan.replay_accuracy_after = replay_accuracy(new.s(), replay);
        plan
    }

    /// A Bayesian recalibration (Gaussian process + Expected Improvement over λ_s ∈ [0.1, 0.9],
    /// objective [`replay_accuracy`]), not applied.
    ///
    /// Succeeds when the best λ_s scores at least as well as the current λ_s and at least
    /// [`LOW_ACCURACY`]. Fails with a reason when fewer than [`MIN_BAYESIAN_SAMPLES`]
    /// predictions carry ΔS/ΔC, or when the best stays under 0.7.
    pub fn plan_bayesian(&self, replay: &[Prediction]) -> RecalibrationPlan {
        let previous = self.lambdas;
        let usable = replay
            .iter()
            .filter(|p| p.delta_s.is_some() && p.delta_c.is_some())
            .count();
        let before = replay_accuracy(previous.s(), replay);
        let mut plan = RecalibrationPlan {
            method: Method::Bayesian,
            success: false,
            previous,
            new: previous,
            adjustment: None,
            bo_iterations: None,
            expected_improvement: None,
            replay_accuracy_before: before,
            replay_accuracy_after: before,
            samples: usable,
            error: None,
        };
        if usable < MIN_BAYESIAN_SAMPLES {
            plan.error = Some(format!(
                "Bayesian recalibration needs at least {MIN_BAYESIAN_SAMPLES} recorded predictions carrying delta_s and delta_c in the replay window; found {usable}"
            ));
            return plan;
        }
        let objective = |s: f64| replay_accuracy(s, replay).unwrap_or(0.0);
        let outcome = match gp::maximize_1d(objective, LAMBDA_MIN, LAMBDA_MAX, &BoConfig::default())
        {
            Ok(o) => o,
            Err(e) => {
                plan.error = Some(format!("Bayesian optimisation failed: {e}"));
                return plan;
            }
        };
        plan.bo_iterations = Some(outcome.evaluations);
        plan.expected_improvement = Some(outcome.expected_improvement);
        let current = before.unwrap_or(0.0);
        if outcome.best_y < LOW_ACCURACY {
            plan.error = Some(format!(
                "best replay accuracy {:.4} (at λ_s = {:.4}) stays under the 0.7 threshold",
                outcome.best_y, outcome.best_x
            ));
            return plan;
        }
        plan.success = true;
        if outcome.best_y > current {
            let (new, _) = Lambdas::from_s(outcome.best_x);
            plan.new = new;
            plan.replay_accuracy_after = Some(outcome.best_y);
            plan.adjustment = Some(Adjustment {
                delta_s: new.s() - previous.s(),
                delta_c: previous.s() - new.s(),
                alpha: 0.0,
                trigger_error: 1.0 - current,
            });
        }
        plan
    }

    /// Apply a plan: set λ, update counters, and return the events to log.
    ///
    /// A Bayesian success clears the escalation (failures, low-cycle count); a Bayesian failure
    /// counts toward [`MAX_BAYESIAN_FAILURES`], after which `human_review_required` is set and a
    /// `human_escalation` event is returned. `automatic` marks runs started by escalation.
    pub fn apply_plan(
        &mut self,
        plan: &RecalibrationPlan,
        automatic: bool,
        domain: Option<Domain>,
        now: DateTime<Utc>,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        let before = self.lambdas;
        if plan.method == Method::Bayesian {
            let mut e = self.event(now, EventType::BayesianEscalation, before);
            e.escalated = true;
            e.domain = domain;
            e.lambda_after = plan.new;
            e.detail = format!(
                "{} Bayesian recalibration over {} predictions: {}",
                if automatic { "automatic" } else { "manual" },
                plan.samples,
                match &plan.error {
                    None => format!(
                        "λ_s {:.4} -> {:.4}, replay accuracy {:?} -> {:?}",
                        plan.previous.s(),
                        plan.new.s(),
                        plan.replay_accuracy_before,
                        plan.replay_accuracy_after
                    ),
                    Some(err) => format!("failed: {err}"),
                }
            );
            events.push(e);
            if plan.success {
                self.bayesian_failures = 0;
                self.consecutive_low = 0;
            } else {
                self.bayesian_failures += 1;
                self.consecutive_low = 0;
                if self.bayesian_failures >= MAX_BAYESIAN_FAILURES && !self.human_review_required {
                    self.human_review_required = true;
                    let mut e = self.event(now, EventType::HumanEscalation, before);
                    e.escalated = true;
                    e.domain = domain;
                    e.detail = format!(
                        "{} Bayesian recalibrations failed in a row; human review required (acknowledge with reset_meta_learning)",
                        self.bayesian_failures
                    );
                    events.push(e);
                }
            }
        }
        if let Some(adj) = plan.adjustment.filter(|a| plan.success && a.delta_s != 0.0) {
            self.lambdas = plan.new;
            self.adjustment_count += 1;
            self.last_adjustment_at = Some(now);
            let mut e = self.event(now, EventType::LambdaAdjustment, before);
            e.domain = domain;
            e.prediction_error = Some(adj.trigger_error);
            e.escalated = plan.method == Method::Bayesian;
            e.detail = format!("{} recalibration: δ_s = {:+.6}", plan.method, adj.delta_s);
            events.push(e);
        }
        events
    }

    /// Operator reset (SPEC §4 `reset_meta_learning`). Returns the `self_healing` event.
    pub fn reset(&mut self, scope: ResetScope, rationale: &str, now: DateTime<Utc>) -> Event {
        let before = self.lambdas;
        if matches!(scope, ResetScope::Lambdas | ResetScope::All) {
            self.lambdas = self.base_lambdas();
        }
        if matches!(scope, ResetScope::Escalation | ResetScope::All) {
            self.consecutive_low = 0;
            self.bayesian_failures = 0;
            self.human_review_required = false;
        }
        if scope.empties_windows() {
            self.global = Window::default();
            self.embedders = Default::default();
            self.alert_active = false;
        }
        let mut e = self.event(now, EventType::SelfHealing, before);
        e.detail = format!("operator reset ({scope}): {rationale}");
        e
    }
}

/// What `reset_meta_learning` resets. Names: `lambdas`, `escalation`, `all`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::IntoStaticStr, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum ResetScope {
    /// λ back to the stage's base.
    Lambdas,
    /// Low-cycle count, Bayesian failures and human-review flag cleared.
    Escalation,
    /// Both, and the rolling accuracy windows emptied. The log and interaction count stay.
    All,
}

impl ResetScope {
    /// Every scope, in schema order.
    pub const ALL: [ResetScope; 3] = crate::service::vocab::variants();

    /// Whether [`MetaState::reset`] of this scope empties the rolling accuracy windows (only
    /// `all` does); the store rewrites the windows exactly then.
    pub fn empties_windows(self) -> bool {
        self == ResetScope::All
    }
}

/// Proportional weights `w_i ∝ raw_i` bounded to [lo, hi] with Σw = 1.
///
/// Iterative clamp-and-renormalise: weights that fall outside the bounds are fixed at the bound
/// and the remaining mass is redistributed in proportion among the free ones until none
/// violates. Requires `n·lo ≤ 1 ≤ n·hi`. All-zero input gives equal weights.
pub fn bounded_proportional(raw: &[f64], lo: f64, hi: f64) -> [f64; NUM_EMBEDDERS] {
    let n = raw.len().min(NUM_EMBEDDERS);
    let mut w = [0.0; NUM_EMBEDDERS];
    let mut fixed = [false; NUM_EMBEDDERS];
    for _ in 0..=n {
        let fixed_mass: f64 = (0..n).filter(|&i| fixed[i]).map(|i| w[i]).sum();
        let free_raw: f64 = (0..n).filter(|&i| !fixed[i]).map(|i| raw[i]).sum();
        let free_count = (0..n).filter(|&i| !fixed[i]).count();
        if free_count == 0 {
            break;
        }
        let mass = 1.0 - fixed_mass;
        for i in (0..n).filter(|&i| !fixed[i]) {
            w[i] = if free_raw > 0.0 {
                mass * raw[i] / free_raw
            } else {
                mass / free_count as f64
            };
        }
        let mut changed = false;
        for i in 0..n {
            if !fixed[i] && (w[i] < lo || w[i] > hi) {
                w[i] = w[i].clamp(lo, hi);
                fixed[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    const TOL: f64 = 1e-12;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn pred(predicted: f64, actual: f64) -> Prediction {
        Prediction {
            timestamp: now(),
            embedder_index: Some(0),
            predicted,
            actual,
            delta_s: None,
            delta_c: None,
            domain: None,
            ach_level: 0.001,
        }
    }

    #[test]
    fn learning_rate_follows_the_ach_formula() {
        let cases = [
            (0.0, 0.05),
            (0.001, 0.05),
            (0.0015, 0.075),
            (0.002, 0.1),
            (1.0, 0.1),
            (f64::NAN, 0.05),
        ];
        for (ach, want) in cases {
            assert!((learning_rate(ach) - want).abs() < TOL, "ach {ach}");
        }
    }

    #[test]
    fn seed_rule_adjusts_lambda_by_minus_alpha_error() {
        let mut m = MetaState::default();
        let out = m.record_prediction(&pred(0.8, 0.5), now());
        let adj = out.adjustment.expect("error 0.3 > 0.2 adjusts");
        // δ_s = −0.05 · 0.3 = −0.015 from λ_s = 0.7
        assert!((adj.delta_s + 0.015).abs() < TOL);
        assert!((m.lambdas.s() - 0.685).abs() < TOL);
        assert!((m.lambdas.s() + m.lambdas.c() - 1.0).abs() < TOL);
        assert_eq!(m.adjustment_count, 1);
    }

    #[test]
    fn small_errors_do_not_adjust() {
        let mut m = MetaState::default();
        let out = m.record_prediction(&pred(0.8, 0.7), now());
        assert!(out.adjustment.is_none());
        assert_eq!(m.lambdas, LifecycleStage::Infancy.base());
    }

    #[test]
    fn lambda_clamps_and_logs_weight_clamped() {
        let mut m = MetaState {
            lambdas: Lambdas::pair(0.9, 0.1),
            ..MetaState::default()
        };
        let out = m.record_prediction(&pred(0.0, 1.0), now()); // δ_s = +0.05
        assert!((m.lambdas.s() - 0.9).abs() < TOL);
        assert!(
            out.events
                .iter()
                .any(|e| e.event_type == EventType::WeightClamped)
        );
    }

    #[test]
    fn lifecycle_stage_change_moves_lambda_by_change_of_base() {
        let mut m = MetaState {
            interaction_count: 49,
            lambdas: Lambdas::pair(0.65, 0.35),
            ..MetaState::default()
        };
        m.record_prediction(&pred(0.5, 0.5), now());
        assert_eq!(m.stage(), LifecycleStage::Growth);
        // base moved 0.7 -> 0.5, so λ_s moves by −0.2
        assert!((m.lambdas.s() - 0.45).abs() < TOL);
    }

    #[test]
    fn escalation_after_ten_low_cycles_with_hysteresis() {
        let mut m = MetaState::default();
        let mut alerts = 0;
        let mut escalate_at = None;
        for i in 0..10 {
            let out = m.record_prediction(&pred(0.0, 0.5), now()); // accuracy 0.5
            alerts += out
                .events
                .iter()
                .filter(|e| e.event_type == EventType::AccuracyAlert)
                .count();
            if out.escalate && escalate_at.is_none() {
                escalate_at = Some(i + 1);
            }
        }
        assert_eq!(alerts, 1, "one alert while the accuracy stays low");
        assert_eq!(escalate_at, Some(10));
        assert_eq!(m.consecutive_low, 10);
        // Recovery needs ≥ 0.75: one perfect prediction brings the mean to 5.5/11 = 0.5, not enough.
        let out = m.record_prediction(&pred(0.5, 0.5), now());
        assert!(
            !out.events
                .iter()
                .any(|e| e.event_type == EventType::AccuracyRecovery)
        );
    }

    #[test]
    fn record_and_escalate_reads_the_replay_window_only_when_it_escalates() {
        let mut m = MetaState::default();
        let mut reads = 0;
        let mut runs = Vec::new();
        for i in 1..=30 {
            let p = pred(0.9, 0.3); // accuracy 0.4, no ΔS/ΔC: every Bayesian run fails
            let r = m
                .record_and_escalate(&p, now(), || {
                    reads += 1;
                    Ok::<_, ()>(vec![p.clone(); 5])
                })
                .unwrap();
            assert_eq!(r.embedder_window, Some(0));
            if let Some(plan) = &r.bayesian {
                assert!(!plan.success);
                runs.push((i, r.human_escalation));
                assert!(
                    r.events
                        .iter()
                        .any(|e| e.event_type == EventType::BayesianEscalation)
                );
            }
        }
        assert_eq!(reads, 3);
        assert_eq!(runs, [(10, false), (20, false), (30, true)]);
        assert_eq!(m.escalation_status(), EscalationStatus::HumanReviewRequired);
        // Escalated to a human: no further automatic runs.
        let r = m
            .record_and_escalate(&pred(0.9, 0.3), now(), || Err("not read"))
            .unwrap();
        assert!(r.bayesian.is_none());
    }

    #[test]
    fn a_dry_run_recalibration_changes_nothing() {
        let mut m = MetaState::default();
        for _ in 0..12 {
            m.record_prediction(&pred(0.9, 0.4), now());
        }
        let replay = vec![pred(0.9, 0.4); 12];
        let before = m.clone();
        for force_bayesian in [false, true] {
            let req = RecalibrationRequest {
                force_bayesian,
                domain: None,
                dry_run: true,
            };
            let r = m.recalibrate(&req, &replay, now());
            assert!(r.events.is_empty() && r.lambda_change.is_none());
            assert_eq!(m, before);
        }
        // Ten low cycles are pending: the manual run is Bayesian without being forced.
        assert!(m.escalation_pending());
        let req = RecalibrationRequest {
            force_bayesian: false,
            domain: Some(Domain::Code),
            dry_run: false,
        };
        let r = m.recalibrate(&req, &replay, now());
        assert_eq!(r.plan.method, Method::Bayesian);
        assert_eq!(r.events[0].domain, Some(Domain::Code));
        assert_eq!(m.bayesian_failures, 1);
    }

    #[test]
    fn recovery_needs_to_cross_the_upper_band() {
        let mut m = MetaState::default();
        m.record_prediction(&pred(0.0, 0.4), now()); // acc 0.6: alert
        assert!(m.alert_active);
        m.record_prediction(&pred(0.5, 0.5), now()); // mean 0.8: recovery
        assert!(!m.alert_active);
        assert_eq!(m.consecutive_low, 0);
    }

    #[test]
    fn embedder_weights_are_bounded_and_sum_to_one() {
        let mut m = MetaState::default();
        m.embedders[0] = Window::from_values([1.0; 5]);
        m.embedders[1] = Window::from_values([0.0; 5]);
        let w = m.embedder_weights();
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        for (i, wi) in w.iter().enumerate() {
            assert!(
                (EMBEDDER_WEIGHT_MIN - 1e-12..=EMBEDDER_WEIGHT_MAX + 1e-12).contains(wi),
                "w[{i}] = {wi}"
            );
        }
        assert!(
            (w[1] - EMBEDDER_WEIGHT_MIN).abs() < TOL,
            "zero accuracy gets the floor"
        );
        assert!(w[0] > w[2], "accurate embedder outweighs the unknown ones");
        let equal = MetaState::default().embedder_weights();
        for wi in equal {
            assert!((wi - 1.0 / 13.0).abs() < TOL);
        }
    }

    fn hidden_lambda_predictions(lambda_star: f64, n: usize, seed: u64) -> Vec<(f64, f64, f64)> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let ds: f64 = rng.random();
                let dc: f64 = rng.random();
                (ds, dc, lambda_star * ds + (1.0 - lambda_star) * dc)
            })
            .collect()
    }

    #[test]
    fn delta_rule_moves_lambda_toward_the_hidden_lambda() {
        for (lambda_star, start) in [(0.2, 0.7), (0.85, 0.3)] {
            let mut m = MetaState {
                interaction_count: 1000, // maturity: no stage changes during the run
                lambdas: Lambdas::from_s(start).0,
                ..MetaState::default()
            };
            let mut moved_toward = 0;
            let mut adjustments = 0;
            for (ds, dc, actual) in hidden_lambda_predictions(lambda_star, 500, 7) {
                let predicted = m.lambdas.learning_score(ds, dc);
                let gap_before = (m.lambdas.s() - lambda_star).abs();
                let out = m.record_prediction(
                    &Prediction {
                        delta_s: Some(ds),
                        delta_c: Some(dc),
                        ..pred(predicted, actual)
                    },
                    now(),
                );
                if out.adjustment.is_some() {
                    adjustments += 1;
                    if (m.lambdas.s() - lambda_star).abs() < gap_before {
                        moved_toward += 1;
                    }
                }
            }
            assert!(
                adjustments > 0,
                "λ* {lambda_star}: errors above 0.2 must occur"
            );
            assert_eq!(
                moved_toward, adjustments,
                "every adjustment moves toward λ*"
            );
            // The delta rule stops once errors fall under 0.2; it ends closer than it started.
            assert!((m.lambdas.s() - lambda_star).abs() < (start - lambda_star).abs());
        }
    }

    #[test]
    fn bayesian_recalibration_recovers_the_hidden_lambda() {
        for lambda_star in [0.2, 0.35, 0.62, 0.85] {
            let mut m = MetaState {
                lambdas: Lambdas::from_s(0.5).0,
                ..MetaState::default()
            };
            let replay: Vec<Prediction> = hidden_lambda_predictions(lambda_star, WINDOW, 11)
                .into_iter()
                .map(|(ds, dc, actual)| Prediction {
                    delta_s: Some(ds),
                    delta_c: Some(dc),
                    ..pred(0.5 * ds + 0.5 * dc, actual)
                })
                .collect();
            let plan = m.plan_bayesian(&replay);
            assert!(plan.success, "λ* {lambda_star}: {:?}", plan.error);
            assert!(
                (plan.new.s() - lambda_star).abs() < 0.02,
                "λ* {lambda_star}: found {}",
                plan.new.s()
            );
            let events = m.apply_plan(&plan, false, None, now());
            assert!((m.lambdas.s() - plan.new.s()).abs() < TOL);
            assert!(
                events
                    .iter()
                    .any(|e| e.event_type == EventType::BayesianEscalation)
            );
        }
    }

    #[test]
    fn bayesian_needs_ten_samples_and_three_failures_escalate_to_a_human() {
        let mut m = MetaState::default();
        let replay = vec![
            Prediction {
                delta_s: Some(0.5),
                delta_c: Some(0.5),
                ..pred(0.5, 0.5)
            };
            9
        ];
        for round in 1..=3 {
            let plan = m.plan_bayesian(&replay);
            assert!(!plan.success);
            assert!(plan.error.as_deref().unwrap().contains("at least 10"));
            let events = m.apply_plan(&plan, true, None, now());
            assert_eq!(m.bayesian_failures, round);
            let human = events
                .iter()
                .any(|e| e.event_type == EventType::HumanEscalation);
            assert_eq!(human, round == 3);
        }
        assert_eq!(m.escalation_status(), EscalationStatus::HumanReviewRequired);
        m.reset(ResetScope::Escalation, "reviewed", now());
        assert_eq!(m.escalation_status(), EscalationStatus::Normal);
    }

    #[test]
    fn bayesian_fails_when_no_lambda_reaches_the_threshold() {
        let m = MetaState::default();
        // actual is always far from any convex combination of ΔS and ΔC.
        let replay = vec![
            Prediction {
                delta_s: Some(0.0),
                delta_c: Some(0.0),
                ..pred(0.0, 1.0)
            };
            20
        ];
        let plan = m.plan_bayesian(&replay);
        assert!(!plan.success);
        assert!(plan.error.unwrap().contains("under the 0.7"));
        assert_eq!(plan.new, m.lambdas);
    }

    #[test]
    fn gradient_plan_steps_down_the_replay_error() {
        let m = MetaState::default(); // λ_s = 0.7
        // Hidden λ* = 0.3: gradient must lower λ_s.
        let replay: Vec<Prediction> = hidden_lambda_predictions(0.3, 50, 3)
            .into_iter()
            .map(|(ds, dc, actual)| Prediction {
                delta_s: Some(ds),
                delta_c: Some(dc),
                ..pred(0.0, actual)
            })
            .collect();
        let plan = m.plan_gradient(&replay);
        assert!(plan.success);
        assert!(plan.new.s() < 0.7);
        assert!(plan.replay_accuracy_after.unwrap() > plan.replay_accuracy_before.unwrap());
        let empty = m.plan_gradient(&[]);
        assert_eq!(empty.method, Method::None);
        assert!(!empty.success);
    }

    #[test]
    fn parse_is_case_insensitive_and_strict() {
        assert_eq!(Domain::parse("Medical"), Some(Domain::Medical));
        assert_eq!(Domain::parse("finance"), None);
        assert_eq!(
            EventType::parse("ACCURACY_ALERT"),
            Some(EventType::AccuracyAlert)
        );
        assert_eq!(EventType::parse("invalid_type"), None);
    }
}

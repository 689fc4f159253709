//! `record_calibration_observations`: the data path in. Each observation says what confidence
//! an embedder reported and whether it turned out right; they feed the per-embedder windows,
//! the drift trackers and the session-threshold bandits.

use chrono::SubsecRound;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::output::MetricsPairOut;
use super::{AtcDomain, DEFAULT_DOMAIN, EmbedderNo, Items};
use crate::service::CachedFamily;
use crate::service::atc::bandit::CANDIDATES;
use crate::service::atc::metrics::CalibrationStatus;
use crate::service::atc::thresholds::ThresholdName;
use crate::service::atc::{Observation, ObservationFilter};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::atc as atc_store;
use crate::tools::wire::{Num, OneOf, Timestamp, UnitInterval, Validate, rfc3339};
use crate::tools::{
    Annotations, Answer, REQUEST_KEY_DESCRIPTION, RequestKey, ToolDef, ToolError, WriteCtx,
    WriteTool,
};

/// Most observations accepted in one call.
pub const MAX_OBSERVATIONS_PER_CALL: usize = 10_000;

/// How far ahead of the server's clock an observation's timestamp may be (clock skew between
/// machines); a later one would count in every calibration window as "recent" for years.
pub const MAX_CLOCK_SKEW_SECONDS: i64 = 300;

/// `record_calibration_observations`.
pub struct RecordCalibrationObservations;

/// Arguments of `record_calibration_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// One per result whose outcome you learned.
    pub observations: Items<ObservationInput, 1, MAX_OBSERVATIONS_PER_CALL>,
    /// See [`REQUEST_KEY_DESCRIPTION`].
    #[schemars(description = REQUEST_KEY_DESCRIPTION)]
    pub request_key: Option<RequestKey>,
}

impl Validate for RecordInput {}

/// One observation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationInput {
    /// The embedder, E1..E13 as 1-13 (1 semantic, 5 causal, 7 code, …).
    pub embedder_id: EmbedderNo,
    /// The confidence it reported, before any temperature scaling.
    pub confidence: Num<UnitInterval>,
    /// Whether the result turned out right.
    pub correct: bool,
    /// The task's domain.
    #[schemars(extend("default" = DEFAULT_DOMAIN))]
    pub domain: Option<OneOf<AtcDomain>>,
    /// The named threshold you applied, if any (feeds its drift tracker).
    pub threshold_name: Option<OneOf<ThresholdName>>,
    /// The threshold value you applied, if any.
    pub threshold_used: Option<Num<UnitInterval>>,
    /// When it was observed (RFC 3339; default now; at most 5 minutes ahead).
    pub timestamp: Option<Timestamp>,
}

impl ObservationInput {
    /// The service observation; the time is truncated to the store's microseconds, so memory
    /// equals what a restart reads back.
    fn observation(&self, now: chrono::DateTime<chrono::Utc>) -> Observation {
        Observation {
            timestamp: self.timestamp.map_or(now, |t| t.0.trunc_subsecs(6)),
            embedder_id: self.embedder_id.get() as u8,
            confidence: self.confidence.get(),
            correct: self.correct,
            domain: self.domain.map_or(Domain::General, |d| d.get().0),
            threshold_name: self.threshold_name.map(OneOf::get),
            threshold_used: self.threshold_used.map(Num::get),
        }
    }
}

/// The answer of `record_calibration_observations`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordAnswer {
    /// Observations recorded.
    pub accepted: usize,
    /// Observations that credited a session-threshold bandit candidate.
    pub bandit_updates: usize,
    /// Observations that updated a threshold drift tracker.
    pub threshold_drift_updates: usize,
    /// Older observations dropped from full windows.
    pub evicted: usize,
    /// Observations now kept per embedder, E1 first.
    pub window_sizes: [usize; NUM_EMBEDDERS],
    /// Calibration of every kept observation, after this call.
    pub metrics_after: MetricsPairOut,
    /// Status band of the temperature-scaled metrics; null without observations.
    pub status: Option<OneOf<CalibrationStatus>>,
}

impl ToolDef for RecordCalibrationObservations {
    const NAME: &'static str = "record_calibration_observations";
    const TITLE: &'static str = "Record calibration observations";
    fn description() -> String {
        format!(
            "Record whether embedders' reported confidences turned out right, once you know; \
             the calibration tools learn only from these. A threshold_used among {CANDIDATES:?} \
             also trains the domain's session-threshold bandit."
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    type Input = RecordInput;
    type Output = RecordAnswer;

    fn example() -> Value {
        json!({"observations": [
            {"embedder_id": 7, "confidence": 0.82, "correct": true, "domain": "Code"},
            {"embedder_id": 1, "confidence": 0.9, "correct": false, "domain": "Code",
             "threshold_name": "theta_acc", "threshold_used": 0.75}
        ]})
    }
}

impl WriteTool for RecordCalibrationObservations {
    const FAMILIES: &'static [CachedFamily] = &[CachedFamily::Atc];

    fn request_key(input: &RecordInput) -> Option<&str> {
        input.request_key.as_ref().map(|k| k.0.as_str())
    }

    fn run(ctx: &mut WriteCtx<'_>, input: RecordInput) -> Result<Answer<RecordAnswer>, ToolError> {
        let latest = ctx.now + chrono::Duration::seconds(MAX_CLOCK_SKEW_SECONDS);
        if let Some((i, t)) = input
            .observations
            .0
            .iter()
            .enumerate()
            .find_map(|(i, o)| o.timestamp.filter(|t| t.0 > latest).map(|t| (i, t)))
        {
            return Err(ToolError::invalid(format!(
                "observations[{i}]: field 'timestamp' is in the future ({}); at most \
                 {MAX_CLOCK_SKEW_SECONDS} s ahead of the server's clock ({}) is accepted",
                rfc3339(t.0),
                rfc3339(ctx.now)
            )));
        }
        let observations: Vec<Observation> = input
            .observations
            .0
            .iter()
            .map(|o| o.observation(ctx.now))
            .collect();
        let atc = &mut ctx.svc.atc;
        let sum = atc
            .ingest_batch(&observations)
            .map_err(|e| ToolError::invalid(format!("observations[{}]: {}", e.index, e.error)))?;
        atc_store::insert_observations(ctx.db, &observations)?;
        atc_store::save(ctx.db, atc)?;
        let after = atc.metrics(&ObservationFilter::default());
        Ok(Answer::ok(RecordAnswer {
            accepted: sum.accepted,
            bandit_updates: sum.bandit_updates,
            threshold_drift_updates: sum.threshold_drift_updates,
            evicted: sum.evicted,
            window_sizes: atc.window_sizes(),
            status: after.calibrated.as_ref().map(|m| OneOf(m.status())),
            metrics_after: (&after).into(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::wire;

    #[test]
    fn observations_are_read_as_the_service_needs_them() {
        let now = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let input: RecordInput = wire::parse(&json!({"observations": [
            {"embedder_id": 5, "confidence": 0.25, "correct": false, "domain": "legal",
             "threshold_name": "theta_warn", "threshold_used": 0.6,
             "timestamp": "2024-01-15T10:30:00.1234567Z"},
            {"embedder_id": 1, "confidence": 1, "correct": true}
        ]}))
        .unwrap();
        let o = input.observations.0[0].observation(now);
        assert_eq!(o.embedder_id, 5);
        assert_eq!(o.domain, Domain::Legal);
        assert_eq!(o.threshold_name, Some(ThresholdName::ThetaWarn));
        assert_eq!(o.threshold_used, Some(0.6));
        assert_eq!(o.timestamp.timestamp_subsec_nanos(), 123_456_000);
        let o = input.observations.0[1].observation(now);
        assert_eq!((o.timestamp, o.domain), (now, Domain::General));
        let bad = [
            json!({"confidence": 0.5, "correct": true}),
            json!({"embedder_id": 14, "confidence": 0.5, "correct": true}),
            json!({"embedder_id": 1, "confidence": 1.5, "correct": true}),
            json!({"embedder_id": 1, "confidence": 0.5}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": "yes"}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": true, "threshold_name": "theta_x"}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": true, "timestamp": "now"}),
            json!({"embedder_id": 1, "confidence": 0.5, "correct": true, "extra": 1}),
            json!(7),
        ];
        for v in bad {
            assert!(
                wire::parse::<RecordInput>(&json!({ "observations": [v] })).is_err(),
                "{v}"
            );
        }
    }
}

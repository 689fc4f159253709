//! `get_threshold_status`: a domain's adaptive thresholds, the embedders' temperatures and
//! calibration, the session-threshold bandit, drift, and whether Level 4 is due.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use super::output::{DriftOut, MetricsPairOut};
use super::{AtcDomain, DEFAULT_DOMAIN, EmbedderNo};
use crate::service::atc::bandit::ThompsonBandit;
use crate::service::atc::metrics::CalibrationStatus;
use crate::service::atc::status::{EmbedderStatus, ThresholdEntry, ThresholdStatus};
use crate::service::atc::thresholds::ThresholdName;
use crate::service::outcomes::Source;
use crate::service::vocab::{Domain, EMBEDDER_NAMES};
use crate::tools::wire::{OneOf, Timestamp, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// `get_threshold_status`.
pub struct GetThresholdStatus;

/// Arguments of `get_threshold_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {
    /// Whose thresholds, bandit and drift to show.
    #[schemars(extend("default" = DEFAULT_DOMAIN))]
    pub domain: Option<OneOf<AtcDomain>>,
    /// Only this embedder (default all).
    pub embedder_id: Option<EmbedderNo>,
}

impl Validate for StatusInput {}

/// The answer of `get_threshold_status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusAnswer {
    /// The domain shown.
    pub domain: OneOf<AtcDomain>,
    /// The domain's strictness in [0, 1]: how conservative its default thresholds are
    /// (medical is the strictest, creative the loosest).
    pub strictness: f64,
    /// Every named threshold of the domain.
    pub thresholds: ThresholdTable,
    /// Each embedder's temperature and calibration (or the one asked for).
    pub embedders: Vec<EmbedderOut>,
    /// The domain's session-threshold bandit (Thompson sampling).
    pub bandit: BanditOut,
    /// Drift of the domain's thresholds and of the embedders' calibration.
    pub drift: DriftOut,
    /// Status band of the domain's temperature-scaled calibration; null without data.
    pub calibration_status: Option<OneOf<CalibrationStatus>>,
    /// When threshold optimisation (level 4) last ran for the domain (UTC); null if never.
    pub last_level4_run: Option<Timestamp>,
    /// Whether threshold optimisation (level 4) is due: enough observations, and calibration
    /// Poor or worse, or a week since the last run.
    pub should_optimize_level4: bool,
    /// This project's own judgements as calibration sources: `lessons` (closed blacklist
    /// checks) and `beliefs` (resolved hypotheses), whatever the domain.
    pub sources: Vec<SourceStatusOut>,
}

/// One source of the project's own outcomes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceStatusOut {
    /// `lessons` or `beliefs`.
    pub source: OneOf<Source>,
    /// Resolved outcomes kept.
    pub outcomes: usize,
    /// The source's temperature (1 until level 2 fits one).
    pub temperature: f64,
    /// Status band of its calibrated ECE; null without outcomes.
    pub calibration_status: Option<OneOf<CalibrationStatus>>,
    /// Level 1: EWMA of calibrated confidence − outcome (0 is calibrated).
    pub drift_ewma: f64,
    /// Level 1: |EWMA| / σ.
    pub drift_score: f64,
    /// When the source stays miscalibrated after recalibration: what a person should look at.
    pub escalation: Option<String>,
}

/// One threshold: its value, default and valid range.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ThresholdOut {
    /// Current value.
    pub value: f64,
    /// Default for the domain.
    pub default: f64,
    /// Smallest allowed value.
    pub min: f64,
    /// Largest allowed value.
    pub max: f64,
}

/// Every named threshold, as an object keyed by name (`theta_opt`, `theta_acc`, …).
#[derive(Debug)]
pub struct ThresholdTable(pub Vec<(ThresholdName, ThresholdOut)>);

impl Serialize for ThresholdTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, t) in &self.0 {
            map.serialize_entry(name.as_str(), t)?;
        }
        map.end()
    }
}

impl JsonSchema for ThresholdTable {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ThresholdTable")
    }
    fn inline_schema() -> bool {
        true
    }
    /// Every name required, each value a [`ThresholdOut`] (stated once, not once per name).
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = ThresholdName::ALL.iter().map(|n| n.as_str()).collect();
        json_schema!({
            "type": "object",
            "required": names,
            "propertyNames": {"enum": names},
            "additionalProperties": g.subschema_for::<ThresholdOut>(),
        })
    }
}

impl From<&ThresholdEntry> for ThresholdOut {
    fn from(t: &ThresholdEntry) -> Self {
        ThresholdOut {
            value: t.value,
            default: t.default,
            min: t.range.0,
            max: t.range.1,
        }
    }
}

/// One embedder's temperature and calibration.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EmbedderOut {
    /// Embedder id, 1–13.
    pub embedder_id: u8,
    /// Embedder name.
    pub name: &'static str,
    /// Current temperature T: calibrated confidence = σ(logit(confidence) / T); above 1
    /// softens over-confident embedders.
    pub temperature: f64,
    /// Its default temperature.
    pub default_temperature: f64,
    /// Smallest temperature a refit may choose.
    pub min_temperature: f64,
    /// Largest temperature a refit may choose.
    pub max_temperature: f64,
    /// Observations kept for it.
    pub samples: usize,
    /// Calibration of its observations.
    pub metrics: MetricsPairOut,
}

impl From<&EmbedderStatus> for EmbedderOut {
    fn from(e: &EmbedderStatus) -> Self {
        EmbedderOut {
            embedder_id: e.embedder_id,
            name: EMBEDDER_NAMES[usize::from(e.embedder_id) - 1],
            temperature: e.temperature,
            default_temperature: e.range.default,
            min_temperature: e.range.lo,
            max_temperature: e.range.hi,
            samples: e.samples,
            metrics: (&e.metrics).into(),
        }
    }
}

/// A session-threshold bandit: per candidate threshold, how often it worked.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BanditOut {
    /// The candidate thresholds.
    pub candidates: Vec<f64>,
    /// Outcomes that were right, per candidate.
    pub successes: Vec<u64>,
    /// Outcomes that were wrong, per candidate.
    pub failures: Vec<u64>,
    /// Posterior mean success rate per candidate, (successes + 1) / (outcomes + 2).
    pub posterior_means: Vec<f64>,
    /// Outcomes recorded in all.
    pub total_pulls: u64,
    /// The domain's session threshold (the last level 3 selection); null before any.
    pub selected_threshold: Option<f64>,
}

impl BanditOut {
    fn new(b: &ThompsonBandit, selected: Option<f64>) -> Self {
        BanditOut {
            candidates: b.candidates().to_vec(),
            successes: b.successes().to_vec(),
            failures: b.failures().to_vec(),
            posterior_means: b.posterior_means(),
            total_pulls: b.total_pulls(),
            selected_threshold: selected,
        }
    }
}

impl From<&ThresholdStatus> for StatusAnswer {
    fn from(s: &ThresholdStatus) -> Self {
        StatusAnswer {
            domain: OneOf(AtcDomain(s.domain)),
            strictness: s.strictness,
            thresholds: ThresholdTable(s.thresholds.iter().map(|t| (t.name, t.into())).collect()),
            embedders: s.embedders.iter().map(EmbedderOut::from).collect(),
            bandit: BanditOut::new(&s.bandit, s.selected_threshold),
            drift: (&s.drift).into(),
            calibration_status: s.calibration_status.map(OneOf),
            last_level4_run: s.last_level4_run.map(Timestamp),
            should_optimize_level4: s.should_optimize_level4,
            sources: Vec::new(),
        }
    }
}

impl ToolDef for GetThresholdStatus {
    const NAME: &'static str = "get_threshold_status";
    const TITLE: &'static str = "Calibration threshold status";
    fn description() -> String {
        String::from(
            "A domain's adaptive confidence thresholds and what they learn from: each \
             embedder's temperature and calibration, the session-threshold bandit and drift. \
             Use it before trigger_recalibration.",
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    type Input = StatusInput;
    type Output = StatusAnswer;

    fn example() -> Value {
        json!({"domain": "Code"})
    }
}

impl ReadTool for GetThresholdStatus {
    fn run(ctx: &ReadCtx<'_>, input: StatusInput) -> Result<Answer<StatusAnswer>, ToolError> {
        let domain = input.domain.map_or(Domain::General, |d| d.get().0);
        let embedder = input.embedder_id.map(|e| e.get() as u8);
        let status = ctx.svc.atc.threshold_status(domain, embedder, ctx.now);
        let mut out = StatusAnswer::from(&status);
        for a in crate::ops::outcomes::assess_own(ctx.db)? {
            let escalation = a.escalation();
            out.sources.push(SourceStatusOut {
                source: OneOf(a.source),
                outcomes: a.outcomes.len(),
                temperature: a.temperature,
                calibration_status: a.status.map(OneOf),
                drift_ewma: a.drift.ewma,
                drift_score: a.drift.score,
                escalation,
            });
        }
        Ok(Answer::ok(out))
    }
}

//! `get_calibration_metrics`: how well the recorded confidences of a recent period match their
//! outcomes, and which recalibration levels are worth running.

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::output::{BinOut, MetricsOut, bins, recommendations};
use super::sources::{self, SourceOut};
use super::{AtcDomain, EmbedderNo, LevelNo, level_list};
use crate::service::atc::ObservationFilter;
use crate::service::atc::advice::Assessment;
use crate::service::atc::metrics::{CalibrationStatus, N_BINS};
use crate::service::outcomes::Source;
use crate::service::vocab::Domain;
use crate::tools::wire::{Choice, OneOf, Timestamp, Validate};
use crate::tools::{Annotations, Answer, ReadCtx, ReadTool, ToolDef, ToolError};

/// How far back `get_calibration_metrics` looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
pub enum Timeframe {
    /// The last hour: `1h`.
    #[strum(serialize = "1h")]
    Hour,
    /// The last 24 hours: `24h`.
    #[strum(serialize = "24h")]
    Day,
    /// The last 7 days: `7d`.
    #[strum(serialize = "7d")]
    Week,
    /// The last 30 days: `30d`.
    #[strum(serialize = "30d")]
    Month,
}

impl Timeframe {
    /// The length of the period.
    pub fn duration(self) -> Duration {
        match self {
            Timeframe::Hour => Duration::hours(1),
            Timeframe::Day => Duration::hours(24),
            Timeframe::Week => Duration::days(7),
            Timeframe::Month => Duration::days(30),
        }
    }
}

impl Choice for Timeframe {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = true;
    fn name(self) -> &'static str {
        self.into()
    }
}

/// `get_calibration_metrics`.
pub struct GetCalibrationMetrics;

/// Arguments of `get_calibration_metrics`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsInput {
    /// The period before now.
    #[schemars(extend("default" = "24h"))]
    pub timeframe: Option<OneOf<Timeframe>>,
    /// Only this domain (default all; drift and level 4 then for General).
    pub domain: Option<OneOf<AtcDomain>>,
    /// Only this embedder (default all).
    pub embedder_id: Option<EmbedderNo>,
    /// Include the reliability bins, raw and calibrated.
    pub include_bins: Option<bool>,
    /// lessons: closed checks; beliefs: resolved hypotheses (default observations).
    pub source: Option<OneOf<Source>>,
}

impl Validate for MetricsInput {
    fn validate(&self) -> Result<(), ToolError> {
        let Some(source) = self.source.map(OneOf::get) else {
            return Ok(());
        };
        for (field, given) in [
            ("domain", self.domain.is_some()),
            ("embedder_id", self.embedder_id.is_some()),
        ] {
            if given && source != Source::Observations {
                return Err(ToolError::invalid(format!(
                    "field '{field}' applies to source observations only, got source {}",
                    source.as_str()
                )));
            }
        }
        Ok(())
    }
}

/// The answer of `get_calibration_metrics`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MetricsAnswer {
    /// The period measured.
    pub timeframe: OneOf<Timeframe>,
    /// Its start (UTC): observations at or after this time count.
    pub since: Timestamp,
    /// The domain filter; null for every domain.
    pub domain: Option<OneOf<AtcDomain>>,
    /// The embedder filter; null for every embedder.
    pub embedder_id: Option<u8>,
    /// Observations measured.
    pub observation_count: usize,
    /// Calibration after each embedder's temperature scaling (what the thresholds see); null
    /// without observations.
    pub metrics: Option<MetricsOut>,
    /// Calibration of the confidences as reported; null without observations.
    pub raw_metrics: Option<MetricsOut>,
    /// Status band of `metrics`; null without observations.
    pub status: Option<OneOf<CalibrationStatus>>,
    /// Whether some recalibration level is worth running.
    pub should_recalibrate: bool,
    /// The levels worth running, ascending: from the status band (Good: 2; Acceptable: 2, 3;
    /// Poor, Critical: 2, 4) and from drift; level 2 only while refitting the temperatures
    /// would change one by more than 1 %.
    pub recommended_levels: Vec<LevelNo>,
    /// What the status means and one sentence per recommended level.
    pub recommendations: Vec<String>,
    /// Whether threshold optimisation (level 4) is due for the domain; false when no
    /// observation was measured.
    pub should_optimize_level4: bool,
    /// Reliability bins, when asked for with include_bins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability: Option<Reliability>,
    /// The source measured: `observations` (record_calibration_observations), `lessons`
    /// (closed blacklist checks) or `beliefs` (resolved hypotheses) of this project.
    pub source: OneOf<Source>,
    /// Without source: each source's calibration over the period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_source: Option<Vec<SourceOut>>,
    /// For lessons or beliefs: the source's temperature (σ(logit(p)/T) maps the raw
    /// confidence to the calibrated one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

/// Reliability bins, raw and calibrated (empty lists without observations).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Reliability {
    /// Of the confidences as reported.
    pub raw: Vec<BinOut>,
    /// Of the temperature-scaled confidences.
    pub calibrated: Vec<BinOut>,
}

impl ToolDef for GetCalibrationMetrics {
    const NAME: &'static str = "get_calibration_metrics";
    const TITLE: &'static str = "Calibration metrics";
    fn description() -> String {
        let bands: Vec<String> = CalibrationStatus::BANDS
            .iter()
            .map(|(s, below)| format!("{} < {below}", s.as_str()))
            .collect();
        format!(
            "Measure how well recorded confidences match outcomes: ECE and MCE over {N_BINS} \
             equal-width bins and the Brier score, raw and after temperature scaling, with a \
             status band ({}, else Critical) and the levels worth running.",
            bands.join(", ")
        )
    }
    const ANNOTATIONS: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    type Input = MetricsInput;
    type Output = MetricsAnswer;

    fn example() -> Value {
        json!({"timeframe": "7d", "domain": "Code", "include_bins": true})
    }
}

impl ReadTool for GetCalibrationMetrics {
    fn run(ctx: &ReadCtx<'_>, input: MetricsInput) -> Result<Answer<MetricsAnswer>, ToolError> {
        let timeframe = input.timeframe.map_or(Timeframe::Day, OneOf::get);
        let domain = input.domain.map(|d| d.get().0);
        let since = ctx.now - timeframe.duration();
        let filter = ObservationFilter {
            since: Some(since),
            domain,
            embedder_id: input.embedder_id.map(|e| e.get() as u8),
        };
        let a = ctx
            .svc
            .atc
            .assess(&filter, domain.unwrap_or(Domain::General), ctx.now);
        let include_bins = input.include_bins.unwrap_or(false);
        match input.source.map(OneOf::get) {
            Some(source @ (Source::Lessons | Source::Beliefs)) => {
                let s = sources::assess(ctx.db, source, Some(since))?;
                Ok(Answer::ok(source_answer(
                    timeframe,
                    since,
                    &s,
                    include_bins,
                )))
            }
            given => {
                let mut out = answer(timeframe, since, &filter, &a, include_bins);
                if given.is_none() {
                    let mut all = vec![SourceOut::new(Source::Observations, &a.metrics, None)];
                    for source in crate::ops::outcomes::OWN_SOURCES {
                        let s = sources::assess(ctx.db, source, Some(since))?;
                        all.push(SourceOut::new(source, &s.metrics, Some(s.temperature)));
                    }
                    out.by_source = Some(all);
                }
                Ok(Answer::ok(out))
            }
        }
    }
}

/// The answer for the lessons or beliefs source.
fn source_answer(
    timeframe: Timeframe,
    since: DateTime<Utc>,
    s: &sources::Assessment,
    include_bins: bool,
) -> MetricsAnswer {
    let (raw, calibrated) = (s.metrics.raw.as_ref(), s.metrics.calibrated.as_ref());
    MetricsAnswer {
        timeframe: OneOf(timeframe),
        since: Timestamp(since),
        domain: None,
        embedder_id: None,
        observation_count: s.outcomes.len(),
        metrics: calibrated.map(MetricsOut::from),
        raw_metrics: raw.map(MetricsOut::from),
        status: s.status.map(OneOf),
        should_recalibrate: !s.levels.is_empty(),
        recommended_levels: level_list(&s.levels),
        recommendations: s.recommendations(),
        should_optimize_level4: false,
        reliability: include_bins.then(|| Reliability {
            raw: bins(raw),
            calibrated: bins(calibrated),
        }),
        source: OneOf(s.source),
        by_source: None,
        temperature: Some(s.temperature),
    }
}

fn answer(
    timeframe: Timeframe,
    since: DateTime<Utc>,
    filter: &ObservationFilter,
    a: &Assessment,
    include_bins: bool,
) -> MetricsAnswer {
    let (raw, calibrated) = (a.metrics.raw.as_ref(), a.metrics.calibrated.as_ref());
    let mut recommendations = recommendations(a.status, &a.levels);
    if a.status.is_none() {
        recommendations.insert(
            0,
            format!(
                "No observations in the last {}: record some with record_calibration_observations.",
                timeframe.name()
            ),
        );
    }
    MetricsAnswer {
        timeframe: OneOf(timeframe),
        since: Timestamp(since),
        domain: filter.domain.map(|d| OneOf(AtcDomain(d))),
        embedder_id: filter.embedder_id,
        observation_count: raw.map_or(0, |m| m.count),
        metrics: calibrated.map(MetricsOut::from),
        raw_metrics: raw.map(MetricsOut::from),
        status: a.status.map(OneOf),
        should_recalibrate: !a.levels.is_empty(),
        recommended_levels: level_list(&a.levels),
        recommendations,
        should_optimize_level4: a.should_optimize_level4,
        reliability: include_bins.then(|| Reliability {
            raw: bins(raw),
            calibrated: bins(calibrated),
        }),
        source: OneOf(Source::Observations),
        by_source: None,
        temperature: None,
    }
}

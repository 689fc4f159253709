//! The memory's own judgements as calibration sources (issue 31): a project's lessons source
//! (closed blacklist checks) and beliefs source (resolved hypotheses), assessed and
//! recalibrated for the calibration tools and the console. A source has one temperature per
//! project ([`outcome_store`]); level 1 is its drift, level 2 refits its temperature.

use chrono::{DateTime, Utc};

use crate::service::atc::metrics::CalibrationStatus;
use crate::service::atc::state::MetricsPair;
use crate::service::atc::temperature::{RangeBound, TemperatureFit};
use crate::service::outcomes::{self, Outcome, Source, SourceDrift};
use crate::store::directives::{self, Directive, InterventionType};
use crate::store::outcomes::{self as outcome_store, SourceTemperature};
use crate::store::{Db, StoreError};

/// One source's calibration in a project, at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// The source.
    pub source: Source,
    /// Its outcomes in the period, oldest first.
    pub outcomes: Vec<Outcome>,
    /// Its current temperature (1 until fitted).
    pub temperature: f64,
    /// Calibration: as stated, and under the current temperature.
    pub metrics: MetricsPair,
    /// Level 1.
    pub drift: SourceDrift,
    /// Status band of the calibrated metrics; `None` without outcomes.
    pub status: Option<CalibrationStatus>,
    /// Levels worth running: 2 while a refit would move the temperature by more than 1 %.
    pub levels: Vec<u8>,
    /// Whether level 2 has stored a temperature for the source (else it is the default 1).
    pub recalibrated: bool,
}

impl Assessment {
    /// The escalation the source stands in: recalibrated and still miscalibrated (calibrated
    /// ECE ≥ [`ESCALATE_ECE`]) over at least [`outcomes::MIN_CALIBRATION_OUTCOMES`] outcomes
    /// (see [`refit`]); the advice for a person, or `None`.
    pub fn escalation(&self) -> Option<String> {
        if !self.recalibrated || self.outcomes.len() < outcomes::MIN_CALIBRATION_OUTCOMES {
            return None;
        }
        self.metrics
            .calibrated
            .as_ref()
            .filter(|m| m.ece >= ESCALATE_ECE)
            .map(|m| escalation_advice(self.source, m.ece, self.outcomes.len()))
    }
}

/// The sources of the project's own judgements, in the order reports list them.
pub const OWN_SOURCES: [Source; 2] = [Source::Lessons, Source::Beliefs];

/// The [`Assessment`] of each of [`OWN_SOURCES`] over all their outcomes: what `status`,
/// `escalations`, `get_threshold_status` and the report show.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn assess_own(db: &Db<'_>) -> Result<Vec<Assessment>, StoreError> {
    OWN_SOURCES
        .into_iter()
        .map(|source| assess(db, source, None))
        .collect()
}

/// The [`Assessment`] of `source` (lessons or beliefs) over the outcomes resolved since `since`
/// (all when `None`).
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn assess(
    db: &Db<'_>,
    source: Source,
    since: Option<DateTime<Utc>>,
) -> Result<Assessment, StoreError> {
    let outcomes = outcome_store::outcomes(db, source, since)?;
    let stored = outcome_store::stored_temperature(db, source)?;
    let temperature = stored.map_or(outcomes::TEMPERATURE_RANGE.default, |t| t.temperature);
    let metrics = outcomes::metrics(&outcomes, temperature);
    let status = metrics.calibrated.as_ref().map(|m| m.status());
    let drift = outcomes::drift(&outcomes, temperature, status);
    let levels = if outcomes::refit_would_move(&outcomes, temperature) {
        vec![2]
    } else {
        Vec::new()
    };
    Ok(Assessment {
        source,
        outcomes,
        temperature,
        metrics,
        drift,
        status,
        levels,
        recalibrated: stored.is_some(),
    })
}

/// What a level-1 or level-2 run on a lessons or beliefs source found and did.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRun {
    /// Before the run.
    pub before: Assessment,
    /// The new temperature, when level 2 fitted one (stored unless dry run).
    pub fitted: Option<(f64, Option<RangeBound>)>,
    /// Why level 2 fitted nothing.
    pub skipped: Option<String>,
    /// Calibration of the same outcomes after the run.
    pub after: MetricsPair,
    /// Levels still worth running.
    pub levels: Vec<u8>,
    /// The escalation to a person the run recorded ([`refit`]), if any.
    pub escalated: Option<String>,
}

/// A source's calibrated ECE at or above this after a recalibration escalates to a person:
/// the lower edge of the Poor band ([`CalibrationStatus::from_ece`]).
pub const ESCALATE_ECE: f64 = 0.15;

/// What a person should look at when `source` stays miscalibrated after recalibration
/// (calibrated ECE `ece` over `n` outcomes).
pub fn escalation_advice(source: Source, ece: f64, n: usize) -> String {
    match source {
        Source::Lessons => format!(
            "The blacklist's probabilities stay miscalibrated after recalibration (ECE {ece:.3} \
             over {n} closed checks): review the lessons the checks got wrong \
             (`meta-utl-mcp lessons list`, `lessons show ID`); a lesson worded too broadly blocks \
             new approaches, one too narrow lets repeats through."
        ),
        Source::Beliefs => format!(
            "The agents' stated confidence stays miscalibrated after recalibration (ECE {ece:.3} \
             over {n} resolved beliefs): read the beliefs in the report (`meta-utl-mcp report`) \
             and how their confidence was stated."
        ),
        Source::Observations => format!(
            "The observations stay miscalibrated after recalibration (ECE {ece:.3} over {n})."
        ),
    }
}

/// Store temperature `t`, fitted on `resolved` (the source's outcomes), for `source` of this
/// project at `now`. When enough outcomes ([`outcomes::MIN_CALIBRATION_OUTCOMES`]) stay
/// miscalibrated under it (calibrated ECE ≥ [`ESCALATE_ECE`]), the source escalates to a
/// person: an `ESCALATION` entry in the directive history says which source and what to look
/// at; returns that advice. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn refit(
    db: &Db<'_>,
    source: Source,
    resolved: &[Outcome],
    t: f64,
    now: DateTime<Utc>,
) -> Result<Option<String>, StoreError> {
    outcome_store::set_temperature(
        db,
        &SourceTemperature {
            source,
            temperature: t,
            outcomes: resolved.len() as u64,
            fitted_at: now,
        },
    )?;
    let ece = outcomes::metrics(resolved, t)
        .calibrated
        .map_or(0.0, |m| m.ece);
    if resolved.len() < outcomes::MIN_CALIBRATION_OUTCOMES || ece < ESCALATE_ECE {
        return Ok(None);
    }
    let advice = escalation_advice(source, ece, resolved.len());
    let d = Directive::new(
        None,
        InterventionType::Escalation,
        format!("Calibration of source {}: {advice}", source.as_str()),
        directives::SERVER_ACTOR,
        now,
    );
    directives::insert(db, &d)?;
    Ok(Some(advice))
}

/// Run level `level` (1 or 2) on `source` of this project; level 2 stores the fitted
/// temperature unless `dry_run`. Call inside a write transaction.
///
/// # Errors
/// [`StoreError`] on SQL failure.
pub fn run(
    db: &Db<'_>,
    source: Source,
    level: u8,
    dry_run: bool,
    now: DateTime<Utc>,
) -> Result<SourceRun, StoreError> {
    let before = assess(db, source, None)?;
    if level != 2 {
        return Ok(SourceRun {
            after: before.metrics.clone(),
            levels: before.levels.clone(),
            before,
            fitted: None,
            skipped: None,
            escalated: None,
        });
    }
    let (fitted, skipped) = match outcomes::fit(&before.outcomes) {
        TemperatureFit::Fitted(f) => (Some((f.temperature, f.at_bound)), None),
        TemperatureFit::Skipped(why) => (None, Some(why.message())),
    };
    let mut after = before.metrics.clone();
    let mut levels = before.levels.clone();
    let mut escalated = None;
    if let Some((t, _)) = fitted
        && !dry_run
    {
        escalated = refit(db, source, &before.outcomes, t, now)?;
        after = outcomes::metrics(&before.outcomes, t);
        levels = if outcomes::refit_would_move(&before.outcomes, t) {
            vec![2]
        } else {
            Vec::new()
        };
    }
    Ok(SourceRun {
        before,
        fitted,
        skipped,
        after,
        levels,
        escalated,
    })
}

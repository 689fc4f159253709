//! Adaptive threshold calibration (ATC): thresholds, calibration metrics and the four levels.
//!
//! Reading order:
//! - [`thresholds`]: the 20-name catalogue per domain, defaults, ranges and order invariants.
//! - [`metrics`]: ECE, MCE, Brier score, reliability bins and status bands.
//! - [`drift`]: Level 1, EWMA drift trackers and their recommendations.
//! - [`temperature`]: Level 2, temperature scaling fitted by NLL per embedder.
//! - [`bandit`]: Level 3, Thompson sampling over threshold candidates.
//! - [`level4`]: Level 4, balanced-accuracy optimisation of `theta_acc` by GP + EI.
//! - [`state`]: [`AtcState`], the aggregate the server holds and the store persists.
//! - [`status`]: everything about one domain in one read (`get_threshold_status`).
//! - [`advice`]: which levels are worth running, and whether Level 4 is due.
//! - [`recalibrate`]: one level on demand, as a typed report (`trigger_recalibration`).
//!
//! Everything here is pure: no I/O, no serde, no clocks (`now` is passed in as a
//! `DateTime<Utc>`), randomness only from an RNG passed in. Persistence: `store::atc`; tools:
//! `tools::atc`.

pub mod advice;
pub mod bandit;
pub mod drift;
pub mod level4;
pub mod metrics;
pub mod recalibrate;
pub mod state;
pub mod status;
pub mod temperature;
pub mod thresholds;

pub use state::{AtcState, Observation, ObservationFilter, RunMode};

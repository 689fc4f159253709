//! The ATC threshold catalogue: 20 named thresholds per domain, their defaults, ranges and order.
//!
//! Source: `THRESHOLDS.md` (project design) and SPEC §3–§4 atc. Each domain has a strictness `s`
//! (medical 1.0, code 0.9, legal 0.8, research 0.5, general 0.5, creative 0.2); a threshold's
//! default for a domain is its formula evaluated at that `s`. Every value is bounded by its valid
//! range, and two strict orders always hold:
//!
//! ```text
//! theta_opt > theta_acc > theta_warn
//! theta_obsolescence_high > theta_obsolescence_mid > theta_obsolescence_low
//! ```

use std::fmt;

use thiserror::Error;

use crate::service::vocab::Domain;

/// Strictness `s ∈ [0, 1]` (THRESHOLDS.md): medical 1.0, code 0.9, legal 0.8, research 0.5,
/// general 0.5, creative 0.2.
pub fn strictness(domain: Domain) -> f64 {
    match domain {
        Domain::Medical => 1.0,
        Domain::Code => 0.9,
        Domain::Legal => 0.8,
        Domain::Research => 0.5,
        Domain::General => 0.5,
        Domain::Creative => 0.2,
    }
}

/// One of the 20 named thresholds of the catalogue (THRESHOLDS.md), in table order. Named in
/// snake case (`ThetaMemorySim` is `theta_memory_sim`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
#[allow(missing_docs)]
pub enum ThresholdName {
    ThetaOpt,
    ThetaAcc,
    ThetaWarn,
    ThetaDup,
    ThetaEdge,
    ThetaGate,
    ThetaHypersync,
    ThetaFragmentation,
    ThetaMemorySim,
    ThetaReflexHit,
    ThetaConsolidation,
    ThetaDreamActivity,
    ThetaSemanticLeap,
    ThetaShortcutConf,
    ThetaJohari,
    ThetaBlindSpot,
    ThetaObsolescenceLow,
    ThetaObsolescenceHigh,
    ThetaObsolescenceMid,
    ThetaDriftSlope,
}

/// Number of thresholds in the catalogue.
pub const THRESHOLD_COUNT: usize = 20;

impl ThresholdName {
    /// All 20 names in THRESHOLDS.md table order (also the index order of [`ThresholdName::index`]).
    pub const ALL: [ThresholdName; THRESHOLD_COUNT] = crate::service::vocab::variants();

    /// Snake-case wire name, e.g. `"theta_acc"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses an exact snake-case name (`"theta_acc"`). Returns `None` for anything else.
    pub fn parse(name: &str) -> Option<ThresholdName> {
        name.parse().ok()
    }

    /// Position in [`ThresholdName::ALL`], `0..20`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Valid range `[lo, hi]` (inclusive), THRESHOLDS.md.
    pub fn range(self) -> (f64, f64) {
        match self {
            ThresholdName::ThetaOpt => (0.60, 0.90),
            ThresholdName::ThetaAcc => (0.55, 0.85),
            ThresholdName::ThetaWarn => (0.40, 0.70),
            ThresholdName::ThetaDup => (0.80, 0.98),
            ThresholdName::ThetaEdge => (0.50, 0.85),
            ThresholdName::ThetaGate => (0.65, 0.95),
            ThresholdName::ThetaHypersync => (0.90, 0.99),
            ThresholdName::ThetaFragmentation => (0.35, 0.65),
            ThresholdName::ThetaMemorySim => (0.35, 0.75),
            ThresholdName::ThetaReflexHit => (0.70, 0.95),
            ThresholdName::ThetaConsolidation => (0.05, 0.30),
            ThresholdName::ThetaDreamActivity => (0.05, 0.30),
            ThresholdName::ThetaSemanticLeap => (0.50, 0.90),
            ThresholdName::ThetaShortcutConf => (0.50, 0.85),
            ThresholdName::ThetaJohari => (0.35, 0.65),
            ThresholdName::ThetaBlindSpot => (0.35, 0.65),
            ThresholdName::ThetaObsolescenceLow => (0.20, 0.50),
            ThresholdName::ThetaObsolescenceHigh => (0.65, 0.90),
            ThresholdName::ThetaObsolescenceMid => (0.45, 0.75),
            ThresholdName::ThetaDriftSlope => (0.001, 0.01),
        }
    }

    /// Default value at strictness `s` (THRESHOLDS.md formulas):
    ///
    /// ```text
    /// theta_opt 0.75 + 0.10·s          theta_reflex_hit       0.80 + 0.10·s
    /// theta_acc 0.70 + 0.08·s          theta_consolidation    0.10 + 0.10·s
    /// theta_warn 0.55 + 0.05·s         theta_dream_activity   0.15 − 0.05·s
    /// theta_dup 0.90                   theta_semantic_leap    0.70 − 0.10·s
    /// theta_edge 0.70                  theta_shortcut_conf    0.70 + 0.10·s
    /// theta_gate 0.75 + 0.15·s         theta_johari           0.50
    /// theta_hypersync 0.93 + 0.04·s    theta_blind_spot       0.50
    /// theta_fragmentation 0.50 − 0.10·s  theta_obsolescence_low  0.30 + 0.10·s
    /// theta_memory_sim 0.50 + 0.15·s   theta_obsolescence_high 0.75 + 0.10·s
    /// theta_drift_slope 0.01 − 0.009·s theta_obsolescence_mid  (low + high) / 2
    /// ```
    ///
    /// For every `s ∈ [0, 1]` the result lies in [`ThresholdName::range`].
    pub fn default_at(self, s: f64) -> f64 {
        match self {
            ThresholdName::ThetaOpt => 0.75 + 0.10 * s,
            ThresholdName::ThetaAcc => 0.70 + 0.08 * s,
            ThresholdName::ThetaWarn => 0.55 + 0.05 * s,
            ThresholdName::ThetaDup => 0.90,
            ThresholdName::ThetaEdge => 0.70,
            ThresholdName::ThetaGate => 0.75 + 0.15 * s,
            ThresholdName::ThetaHypersync => 0.93 + 0.04 * s,
            ThresholdName::ThetaFragmentation => 0.50 - 0.10 * s,
            ThresholdName::ThetaMemorySim => 0.50 + 0.15 * s,
            ThresholdName::ThetaReflexHit => 0.80 + 0.10 * s,
            ThresholdName::ThetaConsolidation => 0.10 + 0.10 * s,
            ThresholdName::ThetaDreamActivity => 0.15 - 0.05 * s,
            ThresholdName::ThetaSemanticLeap => 0.70 - 0.10 * s,
            ThresholdName::ThetaShortcutConf => 0.70 + 0.10 * s,
            ThresholdName::ThetaJohari => 0.50,
            ThresholdName::ThetaBlindSpot => 0.50,
            ThresholdName::ThetaObsolescenceLow => 0.30 + 0.10 * s,
            ThresholdName::ThetaObsolescenceHigh => 0.75 + 0.10 * s,
            ThresholdName::ThetaObsolescenceMid => {
                (ThresholdName::ThetaObsolescenceLow.default_at(s)
                    + ThresholdName::ThetaObsolescenceHigh.default_at(s))
                    / 2.0
            }
            ThresholdName::ThetaDriftSlope => 0.01 - 0.009 * s,
        }
    }
}

impl fmt::Display for ThresholdName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The strict orders that must always hold, each as `(higher, middle, lower)`.
pub const ORDER_CHAINS: [[ThresholdName; 3]; 2] = [
    [
        ThresholdName::ThetaOpt,
        ThresholdName::ThetaAcc,
        ThresholdName::ThetaWarn,
    ],
    [
        ThresholdName::ThetaObsolescenceHigh,
        ThresholdName::ThetaObsolescenceMid,
        ThresholdName::ThetaObsolescenceLow,
    ],
];

/// Gap kept between `theta_acc` and a neighbour that [`ThresholdSet::apply_theta_acc`] has to
/// move: the neighbour lands exactly this far from the new `theta_acc`.
pub const ORDER_GAP: f64 = 0.01;

/// Why a threshold value was refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ThresholdError {
    /// The value is NaN or infinite.
    #[error("{name} must be a finite number, got {value}")]
    NotFinite {
        /// Threshold concerned.
        name: ThresholdName,
        /// Offending value.
        value: f64,
    },
    /// The value is outside the threshold's valid range.
    #[error("{name} = {value} is outside its valid range [{lo}, {hi}]")]
    OutOfRange {
        /// Threshold concerned.
        name: ThresholdName,
        /// Offending value.
        value: f64,
        /// Inclusive lower bound.
        lo: f64,
        /// Inclusive upper bound.
        hi: f64,
    },
    /// The value would break `higher > lower` for a pair of an order chain.
    #[error(
        "order violated: {higher} ({higher_value}) must be greater than {lower} ({lower_value})"
    )]
    OrderViolation {
        /// The threshold that must be greater.
        higher: ThresholdName,
        /// Its value (after the refused change).
        higher_value: f64,
        /// The threshold that must be smaller.
        lower: ThresholdName,
        /// Its value (after the refused change).
        lower_value: f64,
    },
}

/// The 20 current threshold values of one domain. Always in range and in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdSet {
    domain: Domain,
    values: [f64; THRESHOLD_COUNT],
}

/// What [`ThresholdSet::apply_theta_acc`] changed: `(before, after)` of each of the three.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThetaAccChange {
    /// `theta_opt` before and after (moved only when it would not stay above `theta_acc`).
    pub theta_opt: (f64, f64),
    /// `theta_acc` before and after.
    pub theta_acc: (f64, f64),
    /// `theta_warn` before and after (moved only when it would not stay below `theta_acc`).
    pub theta_warn: (f64, f64),
}

impl ThresholdSet {
    /// The domain's defaults: every formula of [`ThresholdName::default_at`] at the domain's
    /// strictness.
    pub fn defaults(domain: Domain) -> ThresholdSet {
        let s = strictness(domain);
        let mut values = [0.0; THRESHOLD_COUNT];
        for name in ThresholdName::ALL {
            values[name.index()] = name.default_at(s);
        }
        ThresholdSet { domain, values }
    }

    /// Rebuilds a set from stored values (indexed by [`ThresholdName::index`]).
    ///
    /// # Errors
    /// The first value that is not finite, out of range, or out of order.
    pub fn from_values(
        domain: Domain,
        values: [f64; THRESHOLD_COUNT],
    ) -> Result<ThresholdSet, ThresholdError> {
        let set = ThresholdSet { domain, values };
        set.validate()?;
        Ok(set)
    }

    /// The domain of this set.
    pub fn domain(&self) -> Domain {
        self.domain
    }

    /// All 20 values, indexed by [`ThresholdName::index`].
    pub fn values(&self) -> &[f64; THRESHOLD_COUNT] {
        &self.values
    }

    /// Current value of `name`.
    pub fn get(&self, name: ThresholdName) -> f64 {
        self.values[name.index()]
    }

    /// Sets `name` to `value` if the result is in range and keeps both orders; otherwise the set
    /// is unchanged.
    ///
    /// # Errors
    /// [`ThresholdError::NotFinite`], [`ThresholdError::OutOfRange`] or
    /// [`ThresholdError::OrderViolation`].
    pub fn set(&mut self, name: ThresholdName, value: f64) -> Result<(), ThresholdError> {
        let mut candidate = self.clone();
        candidate.values[name.index()] = value;
        candidate.validate()?;
        *self = candidate;
        Ok(())
    }

    /// Applies a new `theta_acc` (e.g. Level 4's optimum), moving `theta_opt` and `theta_warn`
    /// only when needed to keep `theta_opt > theta_acc > theta_warn`:
    ///
    /// ```text
    /// theta_opt'  = theta_opt             if theta_opt > θ,  else θ + ORDER_GAP
    /// theta_warn' = theta_warn            if theta_warn < θ, else θ − ORDER_GAP
    /// ```
    ///
    /// Given `θ ∈ [0.55, 0.85]`, both moved values stay in their ranges (`θ + 0.01 ≤ 0.86 ≤ 0.90`,
    /// `θ − 0.01 ≥ 0.54 ≥ 0.40`), so the only refusals are for `θ` itself.
    ///
    /// # Errors
    /// [`ThresholdError::NotFinite`] or [`ThresholdError::OutOfRange`] for `θ` outside
    /// `theta_acc`'s range `[0.55, 0.85]`; the set is then unchanged.
    pub fn apply_theta_acc(&mut self, theta: f64) -> Result<ThetaAccChange, ThresholdError> {
        check_range(ThresholdName::ThetaAcc, theta)?;
        let before_opt = self.get(ThresholdName::ThetaOpt);
        let before_acc = self.get(ThresholdName::ThetaAcc);
        let before_warn = self.get(ThresholdName::ThetaWarn);
        let opt = if before_opt > theta {
            before_opt
        } else {
            theta + ORDER_GAP
        };
        let warn = if before_warn < theta {
            before_warn
        } else {
            theta - ORDER_GAP
        };
        let mut candidate = self.clone();
        candidate.values[ThresholdName::ThetaOpt.index()] = opt;
        candidate.values[ThresholdName::ThetaAcc.index()] = theta;
        candidate.values[ThresholdName::ThetaWarn.index()] = warn;
        candidate.validate()?;
        *self = candidate;
        Ok(ThetaAccChange {
            theta_opt: (before_opt, opt),
            theta_acc: (before_acc, theta),
            theta_warn: (before_warn, warn),
        })
    }

    fn validate(&self) -> Result<(), ThresholdError> {
        for name in ThresholdName::ALL {
            check_range(name, self.get(name))?;
        }
        for chain in ORDER_CHAINS {
            for pair in chain.windows(2) {
                let (higher, lower) = (pair[0], pair[1]);
                if self.get(higher) <= self.get(lower) {
                    return Err(ThresholdError::OrderViolation {
                        higher,
                        higher_value: self.get(higher),
                        lower,
                        lower_value: self.get(lower),
                    });
                }
            }
        }
        Ok(())
    }
}

fn check_range(name: ThresholdName, value: f64) -> Result<(), ThresholdError> {
    if !value.is_finite() {
        return Err(ThresholdError::NotFinite { name, value });
    }
    let (lo, hi) = name.range();
    if value < lo || value > hi {
        return Err(ThresholdError::OutOfRange {
            name,
            value,
            lo,
            hi,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-12;

    #[test]
    fn names_round_trip_and_are_unique() {
        for (i, name) in ThresholdName::ALL.into_iter().enumerate() {
            assert_eq!(name.index(), i);
            assert_eq!(ThresholdName::parse(name.as_str()), Some(name));
        }
        assert_eq!(ThresholdName::parse("THETA_ACC"), None);
        assert_eq!(ThresholdName::parse("theta_nope"), None);
        for (i, d) in Domain::ALL.into_iter().enumerate() {
            assert_eq!(d.index(), i);
            assert_eq!(Domain::parse(d.display_name()), Some(d));
        }
    }

    #[test]
    fn defaults_match_the_worked_examples() {
        // THRESHOLDS.md: general (s = 0.5): theta_opt 0.80, theta_acc 0.74, theta_warn 0.575,
        // theta_gate 0.825. Medical (s = 1): theta_drift_slope 0.01 − 0.009 = 0.001 (the bound).
        let cases = [
            (Domain::General, ThresholdName::ThetaOpt, 0.80),
            (Domain::General, ThresholdName::ThetaAcc, 0.74),
            (Domain::General, ThresholdName::ThetaWarn, 0.575),
            (Domain::General, ThresholdName::ThetaGate, 0.825),
            (Domain::Medical, ThresholdName::ThetaDriftSlope, 0.001),
            (Domain::Medical, ThresholdName::ThetaGate, 0.90),
            (Domain::Creative, ThresholdName::ThetaFragmentation, 0.48),
            // (0.30 + 0.09 + 0.75 + 0.09) / 2 = 0.615
            (Domain::Code, ThresholdName::ThetaObsolescenceMid, 0.615),
            (Domain::Legal, ThresholdName::ThetaDup, 0.90),
        ];
        for (domain, name, expected) in cases {
            let got = ThresholdSet::defaults(domain).get(name);
            assert!(
                (got - expected).abs() < TOL,
                "{domain} {name}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn every_default_is_valid_for_every_domain() {
        for domain in Domain::ALL {
            let set = ThresholdSet::defaults(domain);
            assert_eq!(ThresholdSet::from_values(domain, *set.values()), Ok(set));
        }
    }

    #[test]
    fn set_refuses_out_of_range_and_order_breaking_values() {
        let mut set = ThresholdSet::defaults(Domain::General);
        let before = set.clone();
        let refusals = [
            (ThresholdName::ThetaAcc, f64::NAN),
            (ThresholdName::ThetaAcc, 0.86),
            (ThresholdName::ThetaAcc, 0.5499),
            // General: opt 0.80, warn 0.575 → acc must be in (0.575, 0.80).
            (ThresholdName::ThetaAcc, 0.80),
            (ThresholdName::ThetaAcc, 0.575),
            (ThresholdName::ThetaWarn, 0.74),
            (ThresholdName::ThetaObsolescenceMid, 0.80),
            (ThresholdName::ThetaDriftSlope, 0.0),
        ];
        for (name, value) in refusals {
            assert!(set.set(name, value).is_err(), "{name} = {value} accepted");
            assert_eq!(set, before);
        }
        assert_eq!(
            set.set(ThresholdName::ThetaAcc, 0.80),
            Err(ThresholdError::OrderViolation {
                higher: ThresholdName::ThetaOpt,
                higher_value: 0.80,
                lower: ThresholdName::ThetaAcc,
                lower_value: 0.80,
            })
        );
        set.set(ThresholdName::ThetaAcc, 0.70).unwrap();
        assert_eq!(set.get(ThresholdName::ThetaAcc), 0.70);
        set.set(ThresholdName::ThetaDup, 0.98).unwrap();
        assert_eq!(set.get(ThresholdName::ThetaDup), 0.98);
    }

    #[test]
    fn apply_theta_acc_moves_neighbours_only_when_needed() {
        // General defaults: opt 0.80, acc 0.74, warn 0.575.
        struct Case {
            theta: f64,
            opt: f64,
            warn: f64,
        }
        let cases = [
            Case {
                theta: 0.70,
                opt: 0.80,
                warn: 0.575,
            },
            Case {
                theta: 0.85,
                opt: 0.86,
                warn: 0.575,
            },
            Case {
                theta: 0.80,
                opt: 0.81,
                warn: 0.575,
            },
            Case {
                theta: 0.55,
                opt: 0.80,
                warn: 0.54,
            },
            Case {
                theta: 0.575,
                opt: 0.80,
                warn: 0.565,
            },
        ];
        for c in cases {
            let mut set = ThresholdSet::defaults(Domain::General);
            let change = set.apply_theta_acc(c.theta).unwrap();
            assert_eq!(set.get(ThresholdName::ThetaAcc), c.theta);
            assert!((set.get(ThresholdName::ThetaOpt) - c.opt).abs() < TOL);
            assert!((set.get(ThresholdName::ThetaWarn) - c.warn).abs() < TOL);
            assert_eq!(change.theta_acc.0, 0.74);
            assert_eq!(change.theta_opt.1, set.get(ThresholdName::ThetaOpt));
            assert_eq!(change.theta_warn.1, set.get(ThresholdName::ThetaWarn));
        }
        let mut set = ThresholdSet::defaults(Domain::Medical);
        let before = set.clone();
        assert!(matches!(
            set.apply_theta_acc(0.9),
            Err(ThresholdError::OutOfRange { .. })
        ));
        assert!(matches!(
            set.apply_theta_acc(f64::INFINITY),
            Err(ThresholdError::NotFinite { .. })
        ));
        assert_eq!(set, before);
    }

    #[test]
    fn apply_theta_acc_is_valid_across_its_whole_range_for_every_domain() {
        for domain in Domain::ALL {
            for k in 0..=300 {
                let theta = 0.55 + 0.30 * k as f64 / 300.0;
                let theta = theta.min(0.85);
                let mut set = ThresholdSet::defaults(domain);
                set.apply_theta_acc(theta).unwrap();
                assert!(ThresholdSet::from_values(domain, *set.values()).is_ok());
            }
        }
    }
}

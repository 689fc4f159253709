//! The confidence-calibration tools: `record_calibration_observations` (the data path in),
//! `get_threshold_status`, `get_calibration_metrics` and `trigger_recalibration` (levels 1–4).
//!
//! One file per tool; this one holds the wire vocabulary they share (domains answered
//! capitalised and accepted in any case, threshold names, levels, embedder ids, bounded lists)
//! and `output.rs` the answer pieces they share (metrics, drift). Contract: SPEC §4 atc, issue
//! 4, and the seed's exact `level` messages. The numerics are in `service::atc`.

mod levels;
mod metrics;
mod output;
mod recalibrate;
mod record;
pub mod sources;
mod status;

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::Tool;
use super::wire::{self, Choice, FIELD, Int};
use crate::service::atc::metrics::CalibrationStatus;
use crate::service::atc::thresholds::ThresholdName;
use crate::service::vocab::{Domain, NUM_EMBEDDERS};

pub use metrics::{GetCalibrationMetrics, MetricsInput, Timeframe};
pub use recalibrate::{RecalibrateInput, TriggerRecalibration};
pub use record::{
    MAX_CLOCK_SKEW_SECONDS, MAX_OBSERVATIONS_PER_CALL, ObservationInput,
    RecordCalibrationObservations, RecordInput,
};
pub use status::{GetThresholdStatus, StatusInput};

/// The tools of this family, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    Tool::write::<RecordCalibrationObservations>(),
    Tool::read::<GetThresholdStatus>(),
    Tool::read::<GetCalibrationMetrics>(),
    Tool::write::<TriggerRecalibration>(),
];

/// An embedder id `1..=13` (E1..E13).
pub type EmbedderNo = Int<1, { NUM_EMBEDDERS as i64 }>;

/// A domain as the calibration tools spell it: answered capitalised
/// ([`Domain::display_name`], `"Code"`), accepted in any ASCII case (`"code"`, `"CODE"`).
/// (The meta-learning tools answer lowercase with their own newtype.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtcDomain(pub Domain);

impl Choice for AtcDomain {
    const ALL: &'static [Self] = &[
        AtcDomain(Domain::Code),
        AtcDomain(Domain::Medical),
        AtcDomain(Domain::Legal),
        AtcDomain(Domain::Creative),
        AtcDomain(Domain::Research),
        AtcDomain(Domain::General),
    ];
    const CASE_INSENSITIVE: bool = true;
    fn name(self) -> &'static str {
        self.0.display_name()
    }
}

/// The default domain where one is optional.
pub const DEFAULT_DOMAIN: &str = "General";

impl Choice for ThresholdName {
    const ALL: &'static [Self] = &ThresholdName::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for CalibrationStatus {
    const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// The seed's advice after an invalid or missing `level`.
pub const LEVEL_HINT: &str = "Must be 1, 2, 3, or 4.";

/// A recalibration level, 1 to 4. A JSON number with no fractional part (`2.0`) counts, as in
/// JSON Schema. Any other value is refused with the seed's message,
/// `Invalid level 5. Must be 1, 2, 3, or 4.`. Schema: `{"type": "integer", "minimum": 1,
/// "maximum": 4}`; written as that integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelNo(pub u8);

impl<'de> Deserialize<'de> for LevelNo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match wire::integer(&v) {
            Some(l @ 1..=4) => Ok(LevelNo(l as u8)),
            _ => Err(D::Error::custom(format!(
                "Invalid {FIELD} {}. {LEVEL_HINT}",
                wire::shown(&v)
            ))),
        }
    }
}

impl Serialize for LevelNo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

impl JsonSchema for LevelNo {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Level")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": 4})
    }
}

/// Levels as written on the wire.
pub fn level_list(levels: &[u8]) -> Vec<LevelNo> {
    levels.iter().copied().map(LevelNo).collect()
}

/// A list of `MIN..=MAX` items. Schema: `{"type": "array", "items": …, "minItems": MIN,
/// "maxItems": MAX}`. Message for a wrong length: `field 'NAME' must hold MIN..=MAX NAME, got
/// N` (e.g. `field 'observations' must hold 1..=10000 observations, got 0`).
///
/// A generic value type that belongs in `wire.rs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Items<T, const MIN: usize, const MAX: usize>(pub Vec<T>);

impl<T, const MIN: usize, const MAX: usize> Items<T, MIN, MAX> {
    /// The items.
    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<'de, T: Deserialize<'de>, const MIN: usize, const MAX: usize> Deserialize<'de>
    for Items<T, MIN, MAX>
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Vec::<T>::deserialize(d)?;
        if !(MIN..=MAX).contains(&items.len()) {
            return Err(D::Error::custom(format!(
                "field '{FIELD}' must hold {MIN}..={MAX} {FIELD}, got {}",
                items.len()
            )));
        }
        Ok(Items(items))
    }
}

impl<T: JsonSchema, const MIN: usize, const MAX: usize> JsonSchema for Items<T, MIN, MAX> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("Items_{}", T::schema_name()))
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": g.subschema_for::<T>(),
            "minItems": MIN,
            "maxItems": MAX,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::ToolError;
    use crate::tools::wire::{OneOf, Validate};

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        level: LevelNo,
        domain: Option<OneOf<AtcDomain>>,
        items: Option<Items<EmbedderNo, 1, 3>>,
    }

    impl Validate for Sample {}

    fn message(v: Value) -> String {
        match wire::parse::<Sample>(&v) {
            Err(ToolError::InvalidParams(m)) => m,
            other => panic!("{v}: {other:?}"),
        }
    }

    #[test]
    fn level_messages_are_the_seeds() {
        for (level, shown) in [
            (json!(5), "5"),
            (json!(0), "0"),
            (json!(2.5), "2.5"),
            (json!("2"), "\"2\""),
            (json!(true), "true"),
        ] {
            assert_eq!(
                message(json!({ "level": level })),
                format!("Invalid level {shown}. Must be 1, 2, 3, or 4.")
            );
        }
        let s: Sample = wire::parse(&json!({"level": 4.0, "domain": "cOdE"})).unwrap();
        assert_eq!(s.level, LevelNo(4));
        assert_eq!(s.domain.unwrap().get(), AtcDomain(Domain::Code));
    }

    #[test]
    fn domains_answer_capitalised_and_refuse_other_words() {
        assert_eq!(
            serde_json::to_value(OneOf(AtcDomain(Domain::Research))).unwrap(),
            json!("Research")
        );
        assert_eq!(
            message(json!({"level": 1, "domain": " code "})),
            "Invalid domain \" code \". Valid values: Code, Medical, Legal, Creative, Research, General"
        );
    }

    #[test]
    fn item_counts_are_bounded() {
        assert_eq!(
            message(json!({"level": 1, "items": []})),
            "field 'items' must hold 1..=3 items, got 0"
        );
        assert_eq!(
            message(json!({"level": 1, "items": [1, 2, 3, 4]})),
            "field 'items' must hold 1..=3 items, got 4"
        );
        assert!(message(json!({"level": 1, "items": {}})).contains("must be an array"));
        assert_eq!(
            message(json!({"level": 1, "items": [1, 14]})),
            "items[1]: must be an integer in 1..=13, got 14"
        );
        let schema = wire::input_schema::<Sample>();
        assert_eq!(
            schema["properties"]["items"],
            json!({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 13},
                   "minItems": 1, "maxItems": 3})
        );
        assert_eq!(
            schema["properties"]["level"],
            json!({"type": "integer", "minimum": 1, "maximum": 4})
        );
    }
}

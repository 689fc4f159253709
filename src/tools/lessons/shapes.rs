//! What the lesson tools share on the wire: the lesson and directive objects of their answers,
//! the `success` flag, the strategy text a lesson is logged with, and the enumerations.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::service::lessons::{
    FailureType, Lesson, MAX_STRATEGY_CHARS, MatchType, normalise_strategy,
};
use crate::store::directives::{Directive, InterventionType};
use crate::tools::wire::{Choice, NonBlank, OneOf, Timestamp, WireUuid, non_blank_pattern};

impl Choice for FailureType {
    const ALL: &'static [Self] = &FailureType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for InterventionType {
    const ALL: &'static [Self] = &InterventionType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for MatchType {
    const ALL: &'static [Self] = &MatchType::ALL;
    const CASE_INSENSITIVE: bool = false;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// A boolean that is always `B` (`success: true` on a successful write, `success: false` on a
/// failure), so that the output schema tells the two shapes of an answer apart. Schema:
/// `{"type": "boolean", "const": B}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag<const B: bool>;

impl<const B: bool> Serialize for Flag<B> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(B)
    }
}

impl<const B: bool> JsonSchema for Flag<B> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(if B { "True" } else { "False" })
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "boolean", "const": B})
    }
}

/// The characters that [`normalise_strategy`] strips or drops entirely (whitespace and
/// punctuation, and the few characters whose compatibility form is only those), in the Basic
/// Multilingual Plane, as a regex class body. A strategy made only of them normalises to
/// nothing and cannot be logged. Generated from `normalise_strategy` itself; the test
/// `strategy_void_class_is_what_normalisation_strips` regenerates it and fails with the new
/// value when the Unicode tables change.
///
/// Only `\uXXXX` escapes, which ECMAScript, Rust and Python regexes read alike; outside the BMP
/// no escape is portable, so a strategy of only supplementary-plane punctuation (e.g. U+10100
/// AEGEAN WORD SEPARATOR LINE) passes the schema and is refused by the server.
pub const STRATEGY_VOID_CLASS: &str = concat!(
    "\\u0009-\\u000d\\u0020-\\u0023\\u0025-\\u002a\\u002c-\\u002f\\u003a\\u003b\\u003f\\u0040",
    "\\u005b-\\u005d\\u005f\\u007b\\u007d\\u0085\\u00a0\\u00a1\\u00a7\\u00ab\\u00b6\\u00b7\\u00bb",
    "\\u00bf\\u037e\\u0387\\u055a-\\u055f\\u0589\\u058a\\u05be\\u05c0\\u05c3\\u05c6\\u05f3\\u05f4",
    "\\u0609\\u060a\\u060c\\u060d\\u061b\\u061d-\\u061f\\u066a-\\u066d\\u06d4\\u0700-\\u070d",
    "\\u07f7-\\u07f9\\u0830-\\u083e\\u085e\\u0964\\u0965\\u0970\\u09fd\\u0a76\\u0af0\\u0c77\\u0c84",
    "\\u0df4\\u0e4f\\u0e5a\\u0e5b\\u0f04-\\u0f12\\u0f14\\u0f3a-\\u0f3d\\u0f85\\u0fd0-\\u0fd4\\u0fd9",
    "\\u0fda\\u104a-\\u104f\\u10fb\\u1360-\\u1368\\u1400\\u166e\\u1680\\u169b\\u169c\\u16eb-\\u16ed",
    "\\u1735\\u1736\\u17d4-\\u17d6\\u17d8-\\u17da\\u1800-\\u180a\\u1944\\u1945\\u1a1e\\u1a1f",
    "\\u1aa0-\\u1aa6\\u1aa8-\\u1aad\\u1b4e\\u1b4f\\u1b5a-\\u1b60\\u1b7d-\\u1b7f\\u1bfc-\\u1bff",
    "\\u1c3b-\\u1c3f\\u1c7e\\u1c7f\\u1cc0-\\u1cc7\\u1cd3\\u2000-\\u200a\\u2010-\\u2016\\u2018-\\u2029",
    "\\u202f-\\u203d\\u203f-\\u2043\\u2045-\\u2051\\u2053-\\u205f\\u207d\\u207e\\u208d\\u208e",
    "\\u2308-\\u230b\\u2329\\u232a\\u2768-\\u2775\\u27c5\\u27c6\\u27e6-\\u27ef\\u2983-\\u2998",
    "\\u29d8-\\u29db\\u29fc\\u29fd\\u2cf9-\\u2cfc\\u2cfe\\u2cff\\u2d70\\u2e00-\\u2e2e\\u2e30-\\u2e4f",
    "\\u2e52-\\u2e5d\\u3000-\\u3003\\u3008-\\u3011\\u3014-\\u301f\\u3030\\u303d\\u30a0\\u30fb\\ua4fe",
    "\\ua4ff\\ua60d-\\ua60f\\ua673\\ua67e\\ua6f2-\\ua6f7\\ua874-\\ua877\\ua8ce\\ua8cf\\ua8f8-\\ua8fa",
    "\\ua8fc\\ua92e\\ua92f\\ua95f\\ua9c1-\\ua9cd\\ua9de\\ua9df\\uaa5c-\\uaa5f\\uaade\\uaadf\\uaaf0",
    "\\uaaf1\\uabeb\\ufd3e\\ufd3f\\ufe10-\\ufe19\\ufe30-\\ufe48\\ufe4d-\\ufe52\\ufe54-\\ufe61\\ufe63",
    "\\ufe68\\ufe6a\\ufe6b\\uff01-\\uff03\\uff05-\\uff0a\\uff0c-\\uff0f\\uff1a\\uff1b\\uff1f\\uff20",
    "\\uff3b-\\uff3d\\uff3f\\uff5b\\uff5d\\uff5f-\\uff65",
);

/// A strategy to log: 1 to [`MAX_STRATEGY_CHARS`] characters, not blank, and not only
/// punctuation (something must remain after [`normalise_strategy`]). Kept as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyText(pub String);

impl<'de> Deserialize<'de> for StrategyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let NonBlank(s) = NonBlank::<MAX_STRATEGY_CHARS>::deserialize(d)?;
        if normalise_strategy(&s).is_empty() {
            return Err(D::Error::custom(
                "must name a strategy in words, not only punctuation and spaces",
            ));
        }
        Ok(StrategyText(s))
    }
}

impl JsonSchema for StrategyText {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("StrategyText")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_STRATEGY_CHARS,
            "allOf": [
                {"pattern": non_blank_pattern()},
                {"pattern": format!("[^{STRATEGY_VOID_CLASS}]")},
            ],
        })
    }
}

/// A lesson as the tools show it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LessonOut {
    /// Lesson id.
    pub id: WireUuid,
    /// The task, as it was logged.
    pub task_id: String,
    /// The strategy that failed, as it was logged.
    pub strategy_description: String,
    /// Why it failed: the root-cause analysis.
    pub rca_summary: String,
    /// The kind of cause.
    pub failure_type: OneOf<FailureType>,
    /// Who logged it.
    pub source_agent: String,
    /// Whether it blacklists its strategy (false once deactivated).
    pub is_active: bool,
    /// When it was logged (UTC).
    pub created_at: Timestamp,
}

impl From<&Lesson> for LessonOut {
    fn from(l: &Lesson) -> Self {
        LessonOut {
            id: WireUuid(l.id),
            task_id: l.task_id.clone(),
            strategy_description: l.strategy_description.clone(),
            rca_summary: l.rca_summary.clone(),
            failure_type: OneOf(l.failure_type),
            source_agent: l.source_agent.clone(),
            is_active: l.is_active,
            created_at: Timestamp(l.created_at),
        }
    }
}

/// A directive-history entry: one human intervention.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DirectiveOut {
    /// Entry id.
    pub id: WireUuid,
    /// The task it concerns, as recorded; null when it concerns no single task.
    pub task_id: Option<String>,
    /// `MANUAL_FIX`, `FEEDBACK`, `OVERRIDE` or `ESCALATION`.
    pub intervention_type: OneOf<InterventionType>,
    /// What happened, in words.
    pub description: String,
    /// Who intervened (`USER` unless the caller named someone).
    pub actor: String,
    /// When it was recorded (UTC).
    pub created_at: Timestamp,
}

impl From<&Directive> for DirectiveOut {
    fn from(d: &Directive) -> Self {
        DirectiveOut {
            id: WireUuid(d.id),
            task_id: d.task_id.clone(),
            intervention_type: OneOf(d.intervention_type),
            description: d.description.clone(),
            actor: d.actor.clone(),
            created_at: Timestamp(d.created_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `normalise_strategy` leaves nothing of `c` alone.
    fn void(c: char) -> bool {
        normalise_strategy(c.encode_utf8(&mut [0; 4])).is_empty()
    }

    /// [`STRATEGY_VOID_CLASS`] as it should be: the ranges of BMP characters that are void.
    fn void_class() -> String {
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for c in ('\0'..='\u{ffff}').filter(|&c| void(c)) {
            let cp = u32::from(c);
            match ranges.last_mut() {
                Some((_, hi)) if *hi + 1 == cp => *hi = cp,
                _ => ranges.push((cp, cp)),
            }
        }
        ranges
            .iter()
            .map(|&(lo, hi)| match hi - lo {
                0 => format!("\\u{lo:04x}"),
                1 => format!("\\u{lo:04x}\\u{hi:04x}"),
                _ => format!("\\u{lo:04x}-\\u{hi:04x}"),
            })
            .collect()
    }

    #[test]
    fn strategy_void_class_is_what_normalisation_strips() {
        let want = void_class();
        assert!(
            STRATEGY_VOID_CLASS == want,
            "STRATEGY_VOID_CLASS is out of date; set it to\n\"{want}\""
        );
    }

    #[test]
    fn a_strategy_is_void_exactly_when_each_of_its_characters_is() {
        // Void and non-void characters, including ones that compose or decompose around their
        // neighbours (combining marks, compatibility forms, full-width punctuation).
        let alphabet = [
            '.',
            '!',
            ' ',
            '\u{3000}',
            '…',
            '「',
            '‗',
            '‾',
            '\u{301}',
            '\u{338}',
            'e',
            '=',
            'ß',
            'Ｘ',
            '！',
            '\u{feff}',
            '🚀',
            '\u{10100}',
            '¨',
            '-',
        ];
        let n = alphabet.len();
        for i in 0..n * n * n {
            let s: String = [alphabet[i % n], alphabet[i / n % n], alphabet[i / n / n]]
                .into_iter()
                .collect();
            assert_eq!(
                normalise_strategy(&s).is_empty(),
                s.chars().all(void),
                "{s:?}"
            );
        }
    }
}

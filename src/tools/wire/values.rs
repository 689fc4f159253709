//! The value types of the wire: each checks one field while it is read and describes the same
//! rule in the schema (see the module above for the contract).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

use super::{FIELD, MAX_ECHOED_CHARS, kind, shown, value};

macro_rules! inline_schema {
    ($name:expr) => {
        fn schema_name() -> Cow<'static, str> {
            Cow::Borrowed($name)
        }
        fn inline_schema() -> bool {
            true
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Numbers

/// The closed range of a [`Num`].
pub trait Range {
    /// Smallest allowed value.
    const LO: f64;
    /// Largest allowed value.
    const HI: f64;
}

/// The closed unit interval [0, 1]: probabilities, confidences, accuracies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitInterval;

impl Range for UnitInterval {
    const LO: f64 = 0.0;
    const HI: f64 = 1.0;
}

/// A finite number in `[R::LO, R::HI]`. Schema: `{"type": "number", "minimum", "maximum"}`.
/// Messages: `must be a finite number in [lo, hi], got …` and `must be in [lo, hi], got x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Num<R>(pub f64, PhantomData<R>);

impl<R> Num<R> {
    /// The number.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl<'de, R: Range> Deserialize<'de> for Num<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        let x = v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
            D::Error::custom(format!(
                "must be a finite number in [{}, {}], got {}",
                R::LO,
                R::HI,
                shown(&v)
            ))
        })?;
        if !(R::LO..=R::HI).contains(&x) {
            return Err(D::Error::custom(format!(
                "must be in [{}, {}], got {x}",
                R::LO,
                R::HI
            )));
        }
        Ok(Num(x, PhantomData))
    }
}

impl<R: Range> JsonSchema for Num<R> {
    inline_schema!("Number");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "number", "minimum": bound(R::LO), "maximum": bound(R::HI)})
    }
}

/// A range bound as JSON: an integer when it is one (`1`, not `1.0`: the same number to a
/// validator, in fewer bytes).
fn bound(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// An integer in `LO..=HI`. A JSON number with no fractional part (`10.0`) is an integer, as
/// JSON Schema counts it. Schema: `{"type": "integer", "minimum": LO, "maximum": HI}`.
/// Message: `must be an integer in LO..=HI, got …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const LO: i64, const HI: i64>(pub i64);

impl<const LO: i64, const HI: i64> Int<LO, HI> {
    /// The integer.
    pub fn get(self) -> i64 {
        self.0
    }
}

/// The integer value of `v` when it is a JSON number with no fractional part within ±2^53 (or
/// any `i64`), else `None`.
pub fn integer(v: &Value) -> Option<i64> {
    let Value::Number(n) = v else { return None };
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
            .map(|f| f as i64)
    })
}

impl<'de, const LO: i64, const HI: i64> Deserialize<'de> for Int<LO, HI> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        match integer(&v) {
            Some(n) if (LO..=HI).contains(&n) => Ok(Int(n)),
            _ => Err(D::Error::custom(format!(
                "must be an integer in {LO}..={HI}, got {}",
                shown(&v)
            ))),
        }
    }
}

impl<const LO: i64, const HI: i64> JsonSchema for Int<LO, HI> {
    inline_schema!("Integer");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": LO, "maximum": HI})
    }
}

// ---------------------------------------------------------------------------------------------
// Text

/// Whether `c` is blank: a character of ECMAScript's `\s` (WhiteSpace and LineTerminator:
/// TAB, LF, VT, FF, CR, the space separators of category Zs, U+2028, U+2029 and U+FEFF), which
/// is how JSON Schema validators read the `\S` of [`non_blank_pattern`]; and U+0085 NEXT LINE,
/// which Unicode (and so Rust's `trim` and the text folding behind every key) counts as white
/// space. The one text the schema and the server judge differently is therefore one made only
/// of U+0085 (and ECMAScript blanks): spelling the class out instead of `\S` would cost 110
/// bytes per text field in every `tools/list`.
pub fn is_blank_char(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// The pattern of a string with at least one non-blank character ([`is_blank_char`]).
pub fn non_blank_pattern() -> String {
    r"\S".to_string()
}

fn string<'de, D: Deserializer<'de>>(d: D, max: usize) -> Result<String, D::Error> {
    let v = value(d)?;
    let Value::String(s) = v else {
        return Err(D::Error::custom(format!(
            "must be a string of at most {max} characters, got {}",
            kind(&v)
        )));
    };
    let n = s.chars().count();
    if n > max {
        return Err(D::Error::custom(format!(
            "must be at most {max} characters, got {n}"
        )));
    }
    Ok(s)
}

/// A string of at most `MAX` characters (Unicode scalar values, as JSON Schema's `maxLength`
/// counts them); may be empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<const MAX: usize>(pub String);

impl<'de, const MAX: usize> Deserialize<'de> for Text<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        string(d, MAX).map(Text)
    }
}

impl<const MAX: usize> JsonSchema for Text<MAX> {
    inline_schema!("Text");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "maxLength": MAX})
    }
}

/// A string of 1 to `MAX` characters with at least one non-blank character (see
/// [`is_blank_char`]). Kept as given; callers trim or fold as their rules say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonBlank<const MAX: usize>(pub String);

impl<const MAX: usize> NonBlank<MAX> {
    /// The text as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for NonBlank<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = string(d, MAX)?;
        if s.chars().all(is_blank_char) {
            return Err(D::Error::custom(format!(
                "must not be empty or blank (1 to {MAX} characters, not only whitespace)"
            )));
        }
        Ok(NonBlank(s))
    }
}

impl<const MAX: usize> JsonSchema for NonBlank<MAX> {
    inline_schema!("NonBlankText");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX,
            "pattern": non_blank_pattern(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Identifiers and times

/// The pattern of a hyphenated UUID (any case), the one form accepted.
pub const UUID_PATTERN: &str = "^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$";

/// A UUID in its hyphenated form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (hex digits, any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireUuid(pub Uuid);

impl<'de> Deserialize<'de> for WireUuid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        let parsed = match &v {
            Value::String(s) if s.len() == 36 && s.as_bytes()[8] == b'-' => Uuid::try_parse(s).ok(),
            _ => None,
        };
        parsed.map(WireUuid).ok_or_else(|| {
            D::Error::custom(format!(
                "must be a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), got {}",
                shown(&v)
            ))
        })
    }
}

impl Serialize for WireUuid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl JsonSchema for WireUuid {
    inline_schema!("Uuid");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "uuid", "pattern": UUID_PATTERN})
    }
}

/// The pattern of an RFC 3339 date-time (`2024-01-15T10:30:00Z`, `…T10:30:00.5+02:00`): its
/// shape only. Field ranges (month 13, hour 24) are refused by the reader as the calendar is
/// (the known schema-truth gap of [`Timestamp`]): spelling them out cost 190 bytes per
/// timestamp field in every request a client sends to its model.
pub const TIMESTAMP_PATTERN: &str =
    r"^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$";

/// The one timestamp format on the wire: RFC 3339 in UTC with `Z` and microseconds
/// (`2024-01-15T10:30:00.000000Z`), the store's resolution.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A point in time. Read from any RFC 3339 date-time (offsets converted to UTC); written with
/// [`rfc3339`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub DateTime<Utc>);

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        let parsed = match &v {
            Value::String(s) if s.is_ascii() && s.len() >= 20 && s.as_bytes()[10] != b' ' => {
                DateTime::parse_from_rfc3339(s).ok()
            }
            _ => None,
        };
        parsed
            .map(|t| Timestamp(t.with_timezone(&Utc)))
            .ok_or_else(|| {
                let shown = match &v {
                    Value::String(s) => s.chars().take(MAX_ECHOED_CHARS).collect(),
                    other => shown(other),
                };
                D::Error::custom(format!(
                    "Invalid timestamp format '{shown}' in field '{FIELD}'. Expected RFC 3339 / ISO 8601 (e.g. 2024-01-15T10:30:00Z)"
                ))
            })
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&rfc3339(self.0))
    }
}

impl JsonSchema for Timestamp {
    inline_schema!("Timestamp");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date-time", "pattern": TIMESTAMP_PATTERN})
    }
}

// ---------------------------------------------------------------------------------------------
// Enumerations

/// A service enumeration published on the wire by name.
pub trait Choice: Copy + 'static {
    /// Every value, in schema order.
    const ALL: &'static [Self];
    /// Whether any ASCII case is accepted (`"CODE"`, `"code"`, `"Code"`).
    const CASE_INSENSITIVE: bool;
    /// The wire name of a value, in its canonical casing.
    fn name(self) -> &'static str;
}

/// A value of a [`Choice`], read by name (exact or ASCII case-insensitive, as the choice says)
/// and written by its canonical name. Message: `Invalid NAME "x". Valid values: a, b, …`.
/// Schema: `enum` of the canonical names only, also for a case-insensitive choice: the schema
/// is stricter than the server there (a model is shown the one spelling to send; a script
/// sending another casing is still served), and a pattern spelling every casing
/// (`[Cc][Oo][Dd][Ee]|…`) cost up to 400 bytes per field in every request to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneOf<T>(pub T);

impl<T: Choice> OneOf<T> {
    /// The value.
    pub fn get(self) -> T {
        self.0
    }

    fn lookup(s: &str) -> Option<T> {
        T::ALL.iter().copied().find(|c| {
            if T::CASE_INSENSITIVE {
                c.name().eq_ignore_ascii_case(s)
            } else {
                c.name() == s
            }
        })
    }
}

impl<'de, T: Choice> Deserialize<'de> for OneOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        let found = v.as_str().and_then(Self::lookup);
        found.map(OneOf).ok_or_else(|| {
            let names: Vec<&str> = T::ALL.iter().map(|c| c.name()).collect();
            D::Error::custom(format!(
                "Invalid {FIELD} {}. Valid values: {}",
                shown(&v),
                names.join(", ")
            ))
        })
    }
}

impl<T: Choice> Serialize for OneOf<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<T: Choice> JsonSchema for OneOf<T> {
    inline_schema!("Choice");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = T::ALL.iter().map(|c| c.name()).collect();
        json_schema!({"type": "string", "enum": names})
    }
}

impl<T: Choice> fmt::Display for OneOf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

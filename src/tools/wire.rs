//! Wire types: the typed arguments and answers of the tools, and the JSON Schemas derived from
//! them, so that a field is written once and the published schema tells the truth.
//!
//! Every tool declares an input struct (`Deserialize + JsonSchema`, `deny_unknown_fields`) and an
//! output struct (`Serialize + JsonSchema`). [`parse`] reads `arguments` into the input struct and
//! turns serde's errors into messages that name the field and what is allowed;
//! [`input_schema`] / [`output_schema`] derive the published schemas with `schemars`. The value
//! types here carry their rules in both directions: [`Num`] and [`Int`] (ranges), [`Text`] and
//! [`NonBlank`] (lengths in characters, non-blank), [`WireUuid`], [`Timestamp`] (RFC 3339) and
//! [`OneOf`] (enumerations). Rules between fields go in [`Validate`] and, for the schema, in an
//! `if`/`then` or `oneOf` attached with `#[schemars(extend(...))]`.
//!
//! Schema truth, the contract this module keeps: every call the published `inputSchema` accepts
//! is accepted by the server, and every call the server rejects for its arguments is invalid
//! under the schema (tested in `tests/schema_truth.rs`). The one rule JSON Schema cannot state is
//! the calendar: `2023-02-30T00:00:00Z` matches the timestamp pattern and is refused.
//!
//! Portability (MCP clients differ): no `type` arrays (a nullable value is `anyOf` with
//! `{"type": "null"}`), subschemas inlined (no `$ref`), no `$schema`, and only the standard
//! `format`s (`date-time`, `uuid`).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::ToolError;

// ---------------------------------------------------------------------------------------------
// Parsing arguments

/// Rules between fields that the types alone cannot check (for example "either `prediction_id`
/// or `embedder_index`"). The same rule must be stated in the input schema.
pub trait Validate {
    /// Check the rules.
    ///
    /// # Errors
    /// [`ToolError::InvalidParams`] naming the fields and what is allowed.
    fn validate(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

/// Read a `tools/call` `arguments` value (an object, or absent/`null` for no arguments) into the
/// input type `T`, then check its cross-field rules.
///
/// # Errors
/// [`ToolError::InvalidParams`] whose message names the field (with its path, such as
/// `observations[3]: field 'confidence' …`) and what is allowed.
pub fn parse<T: DeserializeOwned + Validate>(arguments: &Value) -> Result<T, ToolError> {
    static EMPTY: std::sync::LazyLock<Value> =
        std::sync::LazyLock::new(|| Value::Object(Map::new()));
    let arguments = match arguments {
        Value::Null => &*EMPTY,
        Value::Object(_) => arguments,
        other => {
            return Err(ToolError::invalid(format!(
                "arguments must be an object, got {}",
                kind(other)
            )));
        }
    };
    reject_nulls(arguments, &mut Vec::new())?;
    let input: T = serde_path_to_error::deserialize(arguments).map_err(explain)?;
    input.validate()?;
    Ok(input)
}

/// The JSON type of a value as a noun phrase for messages ("a string", "null", …).
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Client text echoed in a message is cut to this many characters, with `…` after it.
pub const MAX_ECHOED_CHARS: usize = 60;

/// Client text such as a tool name, cut to [`MAX_ECHOED_CHARS`] characters with `…` after it.
pub fn clipped(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(MAX_ECHOED_CHARS) {
        Some((i, _)) => Cow::Owned(format!("{}…", &s[..i])),
        None => Cow::Borrowed(s),
    }
}

/// `v` as JSON, cut to [`MAX_ECHOED_CHARS`] characters.
pub fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > MAX_ECHOED_CHARS {
        format!("{}…", s.chars().take(MAX_ECHOED_CHARS).collect::<String>())
    } else {
        s
    }
}

/// The placeholder a value type's message uses where the field's name goes (for messages that
/// do not start with "field 'NAME'", such as the seeds' `Invalid level 5. Must be 1, 2, 3, or 4.`).
pub const FIELD: &str = "{field}";

/// Turn a serde error at a path into the message the caller sees.
fn explain(e: serde_path_to_error::Error<serde_json::Error>) -> ToolError {
    use serde_path_to_error::Segment;
    let inner = e.inner().to_string();
    let mut parts: Vec<String> = Vec::new();
    for seg in e.path().iter() {
        match seg {
            Segment::Map { key } => parts.push(key.clone()),
            Segment::Seq { index } => match parts.last_mut() {
                Some(last) => last.push_str(&format!("[{index}]")),
                None => parts.push(format!("[{index}]")),
            },
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    // serde reports a missing or unknown field at the object holding it.
    if let Some(name) = between(&inner, "missing field `", "`") {
        parts.push(name.to_string());
        let (pre, field) = locate(&parts);
        return ToolError::invalid(format!("{pre}missing required field '{field}'"));
    }
    if let Some(rest) = inner.strip_prefix("unknown field `") {
        let (name, allowed) = rest.split_once('`').unwrap_or((rest, ""));
        // The path may already end in the unknown key.
        if parts.last().is_none_or(|p| p != name) {
            parts.push(name.to_string());
        }
        let allowed: Vec<&str> = allowed.split('`').skip(1).step_by(2).collect();
        let allowed = if allowed.is_empty() {
            "none".to_string()
        } else {
            allowed.join(", ")
        };
        let (pre, field) = locate(&parts);
        return ToolError::invalid(format!(
            "{pre}unknown field '{field}'; allowed fields: {allowed}"
        ));
    }
    if parts.is_empty() {
        return ToolError::invalid(format!("arguments: {}", plain(&inner)));
    }
    let (pre, field) = locate(&parts);
    let what = plain(&inner);
    if field.is_empty() {
        // An element of an array that is not what it should be: "observations[1]: must be …".
        let at = pre.trim_end_matches(": ");
        return ToolError::invalid(format!("{at}: {}", what.replace(FIELD, at)));
    }
    if what.contains(FIELD) {
        ToolError::invalid(format!("{pre}{}", what.replace(FIELD, &field)))
    } else if what.starts_with("is required") {
        ToolError::invalid(format!("{pre}missing required field '{field}' (got null)"))
    } else {
        ToolError::invalid(format!("{pre}field '{field}' {what}"))
    }
}

/// Split a path into the prefix up to the last array element (`"observations[0]: "`) and the
/// dotted field name after it (`"confidence"`, `"context.uncertainty_type"`; empty when the path
/// ends at an array element).
fn locate(parts: &[String]) -> (String, String) {
    match parts.iter().rposition(|p| p.ends_with(']')) {
        Some(k) => (
            format!("{}: ", parts[..=k].join(".")),
            parts[k + 1..].join("."),
        ),
        None => (String::new(), parts.join(".")),
    }
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(start)?;
    rest.split_once(end).map(|(a, _)| a)
}

/// serde's own messages ("invalid type: string \"x\", expected a boolean") in our wording
/// ("must be a boolean, got \"x\""); our value types' messages pass through.
fn plain(inner: &str) -> String {
    let Some(rest) = inner
        .strip_prefix("invalid type: ")
        .or_else(|| inner.strip_prefix("invalid value: "))
    else {
        return inner.to_string();
    };
    let (got, expected) = rest
        .rsplit_once(", expected ")
        .unwrap_or((rest, "a valid value"));
    let expected = if expected.starts_with("struct ") || expected == "a map" {
        "an object"
    } else if expected == "a sequence" {
        "an array"
    } else {
        expected
    };
    let got = got
        .replace("floating point ", "")
        .replace("integer ", "")
        .replace("boolean ", "")
        .replace('`', "");
    format!("must be {expected}, got {got}")
}

/// Read any JSON value for a value type's own checks (scalars are cheap to copy). `null` never
/// reaches a value type in an optional field (`Option` takes it), so here it means a required
/// field was given as `null`.
fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Err(D::Error::custom("is required (got null)")),
        v => Ok(v),
    }
}

// ---------------------------------------------------------------------------------------------
// Schemas

/// The settings every published schema is generated with: JSON Schema 2020-12 keywords,
/// subschemas inlined, no `$schema`, then [`Portable`].
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(Portable)
}

/// The published `inputSchema` of an input type (root `type: object`).
pub fn input_schema<T: JsonSchema>() -> Value {
    let schema = settings()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = object_root(schema);
    strip_null(&mut v);
    v
}

/// The published `outputSchema` of an output type (root `type: object`).
pub fn output_schema<T: JsonSchema>() -> Value {
    let schema = settings()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    object_root(schema)
}

fn object_root(schema: Schema) -> Value {
    let mut v = schema.to_value();
    if let Some(obj) = v.as_object_mut() {
        // The tool's own title and description say what the root is.
        obj.remove("title");
        obj.remove("description");
        obj.insert("type".into(), Value::from("object"));
    }
    v
}

/// Formats every JSON Schema tool knows; schemars' numeric formats (`double`, `uint8`, …) are
/// dropped.
const STANDARD_FORMATS: &[&str] = &["date-time", "uuid"];

/// Rewrites a generated schema for portability: a `type` array becomes `anyOf` of one
/// `{"type": …}` branch per type, the other keywords staying beside it (each applies to its own
/// type only: `minimum` to numbers, `maxLength` to strings, `properties` to objects), and
/// non-standard `format`s go.
#[derive(Debug, Clone, Copy)]
struct Portable;

impl Transform for Portable {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::String(f)) = obj.get("format")
            && !STANDARD_FORMATS.contains(&f.as_str())
        {
            obj.remove("format");
        }
        if let Some(Value::Array(_)) = obj.get("type")
            && let Some(Value::Array(types)) = obj.remove("type")
        {
            let branches: Vec<Value> = types
                .into_iter()
                .map(|t| serde_json::json!({ "type": t }))
                .collect();
            match obj.remove("anyOf") {
                // Both a type list and an anyOf: keep both, under allOf.
                Some(any) => {
                    obj.insert(
                        "allOf".into(),
                        serde_json::json!([{"anyOf": branches}, {"anyOf": any}]),
                    );
                }
                None => {
                    obj.insert("anyOf".into(), Value::Array(branches));
                }
            }
        }
    }
}

/// Inputs never hold `null`: an optional field is left out, not set to null. Removes every null
/// alternative from an input schema (`{"type": "null"}` branches, null in `enum`, `"default":
/// null`), so the schema says what [`parse`] accepts.
fn strip_null(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            for child in obj.values_mut() {
                strip_null(child);
            }
            if obj.get("default").is_some_and(Value::is_null) {
                obj.remove("default");
            }
            if let Some(Value::Array(e)) = obj.get_mut("enum") {
                e.retain(|x| !x.is_null());
            }
            if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
                branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
                if branches.len() == 1
                    && let Some(Value::Object(only)) = branches.pop()
                {
                    obj.remove("anyOf");
                    for (k, x) in only {
                        obj.entry(k).or_insert(x);
                    }
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_null),
        _ => {}
    }
}

/// Refuse `null` anywhere in the arguments, naming where (see [`strip_null`]).
fn reject_nulls(v: &Value, path: &mut Vec<String>) -> Result<(), ToolError> {
    match v {
        Value::Object(obj) => {
            for (k, x) in obj {
                path.push(k.clone());
                if x.is_null() {
                    let (pre, field) = locate(path);
                    return Err(ToolError::invalid(format!(
                        "{pre}field '{field}' must not be null; leave it out to use its default"
                    )));
                }
                reject_nulls(x, path)?;
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                if x.is_object() || x.is_array() {
                    let last = path.pop().unwrap_or_default();
                    path.push(format!("{last}[{i}]"));
                    reject_nulls(x, path)?;
                    path.pop();
                    path.push(last);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

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
        json_schema!({"type": "number", "minimum": R::LO, "maximum": R::HI})
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

/// The characters a blank string consists of: ECMAScript's `\s` (WhiteSpace and
/// LineTerminator) plus U+0085, written out so that every regex engine reads the pattern alike
/// (Rust's, Python's and ECMAScript's `\s` differ at U+0085, U+FEFF and U+001C–U+001F).
const BLANK_CLASS: &str =
    r"\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff";

/// Whether `c` is in [`BLANK_CLASS`].
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

/// The pattern of a string with at least one non-blank character.
pub fn non_blank_pattern() -> String {
    format!("[^{BLANK_CLASS}]")
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
pub const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

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

/// The pattern of an RFC 3339 date-time (`2024-01-15T10:30:00Z`, `…T10:30:00.5+02:00`).
pub const TIMESTAMP_PATTERN: &str = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";

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
    /// What the message calls a bad value ("domain", "timeframe"); the field name is used when
    /// this is `None`.
    const NOUN: Option<&'static str> = None;
    /// Every value, in schema order.
    const ALL: &'static [Self];
    /// Whether any ASCII case is accepted (`"CODE"`, `"code"`, `"Code"`).
    const CASE_INSENSITIVE: bool;
    /// The wire name of a value, in its canonical casing.
    fn name(self) -> &'static str;
}

/// A value of a [`Choice`], read by name (exact or ASCII case-insensitive, as the choice says)
/// and written by its canonical name. Message: `Invalid NAME "x". Valid values: a, b, …`.
/// Schema: `enum` of the canonical names; for a case-insensitive choice also a `pattern`
/// accepting every casing, as `anyOf`.
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
                "Invalid {} {}. Valid values: {}",
                T::NOUN.unwrap_or(FIELD),
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

/// A pattern matching `names` in any ASCII case, e.g. `^(?:[Cc][Oo][Dd][Ee]|…)$`.
fn any_case_pattern(names: &[&str]) -> String {
    let alts: Vec<String> = names
        .iter()
        .map(|n| {
            n.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
                    } else if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        })
        .collect();
    format!("^(?:{})$", alts.join("|"))
}

impl<T: Choice> JsonSchema for OneOf<T> {
    inline_schema!("Choice");
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = T::ALL.iter().map(|c| c.name()).collect();
        if T::CASE_INSENSITIVE {
            json_schema!({
                "type": "string",
                "anyOf": [{"enum": names}, {"pattern": any_case_pattern(&names)}],
            })
        } else {
            json_schema!({"type": "string", "enum": names})
        }
    }
}

impl<T: Choice> fmt::Display for OneOf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Colour {
        Red,
        Green,
    }

    impl Choice for Colour {
        const ALL: &'static [Self] = &[Colour::Red, Colour::Green];
        const CASE_INSENSITIVE: bool = true;
        fn name(self) -> &'static str {
            match self {
                Colour::Red => "Red",
                Colour::Green => "Green",
            }
        }
    }

    /// A sample input using every value type (read only through its schema and parser).
    #[allow(dead_code)]
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        /// A probability.
        p: Num<UnitInterval>,
        /// A page size.
        #[serde(default)]
        limit: Option<Int<1, 1000>>,
        /// A name.
        #[serde(default)]
        name: Option<NonBlank<10>>,
        /// A colour.
        #[serde(default)]
        colour: Option<OneOf<Colour>>,
        /// When.
        #[serde(default)]
        at: Option<Timestamp>,
        /// Items.
        #[serde(default)]
        items: Vec<Item>,
        /// A flag.
        #[serde(default)]
        dry_run: bool,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        id: WireUuid,
        confidence: Num<UnitInterval>,
    }

    impl Validate for Sample {}

    fn err(v: Value) -> String {
        match parse::<Sample>(&v).unwrap_err() {
            ToolError::InvalidParams(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_name_the_field_and_what_is_allowed() {
        let cases = [
            (json!({}), "missing required field 'p'"),
            (json!({"p": null}), "field 'p' must not be null"),
            (
                json!({"p": 0, "limit": null}),
                "field 'limit' must not be null",
            ),
            (json!({"p": 1.5}), "field 'p' must be in [0, 1], got 1.5"),
            (
                json!({"p": "x"}),
                "field 'p' must be a finite number in [0, 1], got \"x\"",
            ),
            (
                json!({"p": 0, "limit": 0}),
                "field 'limit' must be an integer in 1..=1000, got 0",
            ),
            (
                json!({"p": 0, "name": "  "}),
                "field 'name' must not be empty or blank",
            ),
            (
                json!({"p": 0, "colour": "blue"}),
                "Invalid colour \"blue\". Valid values: Red, Green",
            ),
            (
                json!({"p": 0, "at": "yesterday"}),
                "Invalid timestamp format 'yesterday' in field 'at'",
            ),
            (
                json!({"p": 0, "dry_run": "yes"}),
                "field 'dry_run' must be a boolean, got string \"yes\"",
            ),
            (
                json!({"p": 0, "x": 1}),
                "unknown field 'x'; allowed fields: p, limit, name, colour, at, items, dry_run",
            ),
            (json!({"p": 0, "items": [5]}), "items[0]: must be an object"),
            (
                json!({"p": 0, "items": [{"id": "550e8400-e29b-41d4-a716-446655440000", "confidence": 2}]}),
                "items[0]: field 'confidence' must be in [0, 1], got 2",
            ),
            (
                json!({"p": 0, "items": [{"id": "nope", "confidence": 1}]}),
                "items[0]: field 'id' must be a UUID",
            ),
            (
                json!({"p": 0, "items": [{"confidence": 1}]}),
                "items[0]: missing required field 'id'",
            ),
            (
                json!({"p": 0, "items": [{"id": "550e8400-e29b-41d4-a716-446655440000", "confidence": 1, "z": 0}]}),
                "items[0]: unknown field 'z'",
            ),
        ];
        for (args, want) in cases {
            let got = err(args.clone());
            assert!(got.contains(want), "{args}: got {got:?}, want {want:?}");
        }
        assert!(matches!(
            parse::<Sample>(&json!([1])),
            Err(ToolError::InvalidParams(m)) if m == "arguments must be an object, got an array"
        ));
    }

    #[test]
    fn values_are_read_as_the_schema_describes() {
        let s: Sample = parse(&json!({
            "p": 1, "limit": 10.0, "colour": "gREEN", "at": "2024-01-15T10:30:00+02:00",
            "name": " a ", "dry_run": true, "items": []
        }))
        .unwrap();
        assert_eq!(s.p.get(), 1.0);
        assert_eq!(s.limit.unwrap().get(), 10);
        assert_eq!(s.colour.unwrap().get(), Colour::Green);
        assert_eq!(rfc3339(s.at.unwrap().0), "2024-01-15T08:30:00.000000Z");
        assert!(s.dry_run);
        // An optional field is left out, never null; the schema says so.
        assert!(parse::<Sample>(&json!({"p": 0})).unwrap().limit.is_none());
        let e = parse::<Sample>(&json!({"p": 0, "items": [{"id": null}]})).unwrap_err();
        assert_eq!(
            e,
            ToolError::invalid(
                "items[0]: field 'id' must not be null; leave it out to use its default"
            )
        );
    }

    #[test]
    fn schemas_are_portable() {
        let schema = input_schema::<Sample>();
        let text = schema.to_string();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert!(
            !text.contains("$ref") && !text.contains("$schema"),
            "{text}"
        );
        fn no_type_arrays(v: &Value) -> bool {
            match v {
                Value::Object(m) => {
                    !matches!(m.get("type"), Some(Value::Array(_)))
                        && m.values().all(no_type_arrays)
                }
                Value::Array(a) => a.iter().all(no_type_arrays),
                _ => true,
            }
        }
        assert!(no_type_arrays(&schema), "{text}");
        assert!(!text.contains("\"format\":\"double\""), "{text}");
        let limit = &schema["properties"]["limit"];
        assert_eq!(limit["type"], "integer", "{limit}");
        assert!(!text.contains("null"), "{text}");
        // Outputs keep their nulls, as anyOf.
        let out = output_schema::<Option<Item>>();
        assert_eq!(
            out["anyOf"],
            json!([{"type": "object"}, {"type": "null"}]),
            "{out}"
        );
        assert_eq!(schema["required"], json!(["p"]));
    }

    #[test]
    fn the_schema_and_the_parser_agree_on_edge_values() {
        let schema = input_schema::<Sample>();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let edges = [
            json!(null),
            json!(""),
            json!("   "),
            json!("\u{85}"),
            json!("\u{feff}"),
            json!("a"),
            json!("Red"),
            json!("RED"),
            json!("2024-02-29T00:00:00Z"),
            json!("2024-01-15 10:30:00Z"),
            json!("550e8400-e29b-41d4-a716-446655440000"),
            json!("{550e8400-e29b-41d4-a716-446655440000}"),
            json!(0),
            json!(1),
            json!(1.5),
            json!(-1),
            json!(1000),
            json!(1001),
            json!(10.0),
            json!(9_223_372_036_854_775_807_i64),
            json!(true),
            json!([]),
            json!({}),
        ];
        for field in ["p", "limit", "name", "colour", "at", "dry_run", "items"] {
            for v in &edges {
                let mut args = json!({"p": 0.5});
                args[field] = v.clone();
                let schema_ok = validator.is_valid(&args);
                let server_ok = parse::<Sample>(&args).is_ok();
                assert_eq!(schema_ok, server_ok, "{args}");
            }
        }
    }
}

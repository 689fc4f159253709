//! Wire types: the typed arguments and answers of the tools, and the JSON Schemas derived from
//! them, so that a field is written once and the published schema tells the truth.
//!
//! Every tool declares an input struct (`Deserialize + JsonSchema`, `deny_unknown_fields`) and an
//! output struct (`Serialize + JsonSchema`). [`parse`] reads `arguments` into the input struct and
//! turns serde's errors into messages that name the field and what is allowed;
//! [`input_schema`] / [`output_schema`] derive the published schemas with `schemars`. The value
//! types here carry their rules in both directions: [`Num`] and [`Int`] (ranges), [`Text`] and
//! [`NonBlank`] (lengths in characters, non-blank), [`WireUuid`], [`Timestamp`] (RFC 3339) and
//! [`OneOf`] (enumerations). Rules between top-level fields go in [`Validate`] and, for the
//! model, in the fields' descriptions ("send either this, or task_id and strategy"): the
//! Anthropic API refuses `oneOf`, `anyOf`, `allOf`, `not` and `if`/`then`/`else` at the top of
//! a tool's input schema, and Claude Code drops such a tool without a word. Nested, they are
//! fine.
//!
//! Schema truth, the contract this module keeps: every call the published `inputSchema` accepts
//! is accepted by the server, but for the rules between top-level fields ([`parse_fields`]
//! accepts what only those refuse), and every call the server rejects for a field's own rule is
//! invalid under the schema (tested in `tests/schema_truth.rs`). The schema may be stricter
//! than the server in one way: it names the canonical spelling of a case-insensitive choice
//! ([`canonical_choices`]). Two known gaps, both documented where they arise: the timestamp
//! pattern states the shape, not the ranges and the calendar (`2023-02-30T00:00:00Z` matches
//! it and is refused), and a text made only of U+0085 NEXT LINE passes the `\S` pattern and is
//! refused as blank ([`is_blank_char`]). Patterns are ECMAScript regular expressions, as JSON
//! Schema defines them.
//!
//! Every byte of an input schema is sent to the model with every request of clients such as
//! Claude Code (budgets and the test with the real client: `tests/claude_code.rs`): no
//! defaults or ranges repeated in prose, `false` defaults left unsaid.
//!
//! Portability (MCP clients differ): no `type` arrays (a nullable value is `anyOf` with
//! `{"type": "null"}`), subschemas inlined (a tool that repeats a large part, the fingerprint
//! of `gwt_compute_delta_sc`, refers to it under `$defs` with a local `$ref`, JSON Schema
//! 2020-12), no `$schema`, and only the standard `format`s (`date-time`, `uuid`).

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::ToolError;
use crate::protocol::jsonrpc::LONE_SURROGATE;

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
    let input: T = parse_fields(arguments)?;
    input.validate()?;
    Ok(input)
}

/// [`parse`] without the cross-field rules ([`Validate`]): each field checked alone, as the
/// input schema states it. A call this accepts and [`parse`] refuses breaks a rule between
/// fields, which the schema states only in the fields' descriptions: clients refuse `oneOf`,
/// `allOf`, `if`/`then` and `not` at the top of a tool's input schema (the Anthropic API, and
/// Claude Code, which drops such a tool).
///
/// # Errors
/// As [`parse`], for a field's own rules.
pub fn parse_fields<T: DeserializeOwned>(arguments: &Value) -> Result<T, ToolError> {
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
    // The fast path allocates nothing for the path: only a refusal is explained with one (a
    // 10,000-observation call spent two thirds of its parse building paths it never used).
    if has_null_or_nul(arguments) {
        reject_nulls(arguments, &mut Vec::new())?;
        reject_nul_chars(arguments, &mut Vec::new())?;
    }
    match T::deserialize(arguments) {
        Ok(input) => Ok(input),
        Err(_) => {
            let e = serde_path_to_error::deserialize::<_, T>(arguments)
                .err()
                .expect("the same input fails the same way");
            Err(explain(e))
        }
    }
}

/// `args` with every enumerated value in the spelling its input schema names, where it matches
/// one of the schema's `enum` strings up to ASCII case (found through `properties`, `items`
/// and local `$ref`s). The schema names one spelling of a case-insensitive choice ([`OneOf`]),
/// the server accepts any: a call the schema refuses and the server accepts is within schema
/// truth when this mapping makes it valid.
pub fn canonical_choices(schema: &Value, args: &Value) -> Value {
    fn walk(root: &Value, schema: &Value, v: &Value) -> Value {
        let schema = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => r
                .strip_prefix('#')
                .and_then(|p| root.pointer(p))
                .unwrap_or(schema),
            None => schema,
        };
        match v {
            Value::String(s) => schema
                .get("enum")
                .and_then(Value::as_array)
                .and_then(|e| {
                    e.iter()
                        .filter_map(Value::as_str)
                        .find(|c| c.eq_ignore_ascii_case(s))
                })
                .map_or_else(|| v.clone(), Value::from),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| {
                        let sub = schema.get("properties").and_then(|p| p.get(k));
                        (
                            k.clone(),
                            sub.map_or_else(|| x.clone(), |s| walk(root, s, x)),
                        )
                    })
                    .collect(),
            ),
            Value::Array(a) => match schema.get("items") {
                Some(items) => Value::Array(a.iter().map(|x| walk(root, items, x)).collect()),
                None => v.clone(),
            },
            _ => v.clone(),
        }
    }
    walk(schema, schema, args)
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

pub use crate::protocol::mcp::MAX_ECHOED_CHARS;

/// Client text such as a tool name, cut to [`MAX_ECHOED_CHARS`] characters with `…` after it.
pub use crate::protocol::mcp::clip as clipped;

/// `v` as JSON, cut to [`MAX_ECHOED_CHARS`] characters.
pub fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > MAX_ECHOED_CHARS {
        format!("{}…", s.chars().take(MAX_ECHOED_CHARS).collect::<String>())
    } else {
        s
    }
}

/// serde's own messages are cut to this many characters before they are reworded (a wrongly
/// typed 16 MiB string would otherwise be copied into the message several times).
const MAX_INNER_CHARS: usize = 200;

/// The placeholder a value type's message uses where the field's name goes (for messages that
/// do not start with "field 'NAME'", such as the seeds' `Invalid level 5. Must be 1, 2, 3, or 4.`).
pub const FIELD: &str = "{field}";

/// Turn a serde error at a path into the message the caller sees.
fn explain(e: serde_path_to_error::Error<serde_json::Error>) -> ToolError {
    use serde_path_to_error::Segment;
    // serde quotes a wrongly typed string whole ("invalid type: string \"…16 MB…\""): keep
    // only the start of the message before any further copy is made of it.
    let inner = {
        let full = e.inner().to_string();
        let (head, tail) = match full.rfind(", expected ") {
            Some(i) => full.split_at(i),
            None => (full.as_str(), ""),
        };
        match head.char_indices().nth(MAX_INNER_CHARS) {
            Some((i, _)) => format!("{}…\"{tail}", &head[..i]),
            None => full,
        }
    };
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

/// Read any JSON value for a value type's own checks (scalars are cheap to copy). A `null`
/// member of an object is refused before reading ([`parse`]); one that reaches a value type is
/// an array element.
pub(super) fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Err(D::Error::custom("must not be null")),
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

/// Whether `v` holds what [`parse`] refuses before reading: a member of an object whose value
/// is `null`, anywhere in `v` (a `null` element of an array is left to the types), or a string
/// with the NUL character (U+0000) or an escaped lone surrogate ([`LONE_SURROGATE`]). No text
/// field may hold NUL: it means nothing in a strategy, a rationale or a name, and PostgreSQL's
/// text cannot store it, so it is refused on every backend alike. One walk that allocates
/// nothing
/// (numbers in arrays are skipped), so a call with neither pays only the walk.
pub fn has_null_or_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(['\0', LONE_SURROGATE]),
        Value::Object(m) => m.values().any(|x| x.is_null() || has_null_or_nul(x)),
        Value::Array(a) => a.iter().any(|x| !x.is_number() && has_null_or_nul(x)),
        _ => false,
    }
}

/// Refuse a string holding U+0000 anywhere in the arguments, naming where.
fn reject_nul_chars(v: &Value, path: &mut Vec<String>) -> Result<(), ToolError> {
    match v {
        Value::String(s) if s.contains('\0') => Err(ToolError::invalid(format!(
            "field '{}' contains the NUL character (U+0000), which no text field may hold; \
             remove it",
            path.join(".")
        ))),
        Value::String(s) if s.contains(LONE_SURROGATE) => Err(ToolError::invalid(format!(
            "field '{}' contains an escaped lone UTF-16 surrogate (such as \\ud800 without its \
             pair; or U+FDD0, which stands for one), which is not a character; send the text \
             as UTF-8, or each character outside the BMP as a surrogate pair",
            path.join(".")
        ))),
        Value::Object(obj) => {
            for (k, x) in obj {
                path.push(k.clone());
                reject_nul_chars(x, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let last = path.pop().unwrap_or_default();
                path.push(format!("{last}[{i}]"));
                reject_nul_chars(x, path)?;
                path.pop();
                path.push(last);
            }
            Ok(())
        }
        _ => Ok(()),
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

mod values;
pub use values::*;

#[cfg(test)]
pub(crate) mod tests;

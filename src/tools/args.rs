//! Argument reading for tool handlers: typed getters that turn a bad value into a `-32602`
//! message naming the field, what was given and what is allowed.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::ToolError;

/// The `arguments` object of a `tools/call`.
pub struct Args<'a> {
    map: &'a Map<String, Value>,
    value: &'a Value,
}

/// The JSON type of a value as a noun phrase for error messages ("a string", "null", …).
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

fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl<'a> Args<'a> {
    /// Read `arguments`: an object, or absent/null (no arguments).
    ///
    /// # Errors
    /// `-32602` when `arguments` is another JSON type.
    pub fn new(value: &'a Value) -> Result<Self, ToolError> {
        match value {
            Value::Object(map) => Ok(Args { map, value }),
            Value::Null => Ok(Args { map: &EMPTY, value }),
            other => Err(ToolError::invalid(format!(
                "arguments must be an object, got {}",
                kind(other)
            ))),
        }
    }

    /// The `arguments` object as given.
    pub fn value(&self) -> &'a Value {
        self.value
    }

    /// Reject members not in `allowed`.
    ///
    /// # Errors
    /// `-32602` naming the first unknown field and listing the allowed ones.
    pub fn deny_unknown(&self, allowed: &[&str]) -> Result<(), ToolError> {
        if let Some(k) = self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(ToolError::invalid(format!(
                "unknown field '{k}'; allowed fields: {}",
                allowed.join(", ")
            )));
        }
        Ok(())
    }

    /// The raw value of a field, treating JSON null as absent.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// A required field's raw value.
    ///
    /// # Errors
    /// `-32602` "missing required field".
    pub fn require(&self, name: &str) -> Result<&'a Value, ToolError> {
        self.get(name)
            .ok_or_else(|| ToolError::invalid(format!("missing required field '{name}'")))
    }

    /// An optional boolean, `default` when absent.
    ///
    /// # Errors
    /// `-32602` when present and not a boolean.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, ToolError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(ToolError::invalid(format!(
                "field '{name}' must be a boolean (true or false), got {}",
                shown(v)
            ))),
        }
    }

    /// An optional finite number in `[lo, hi]`.
    ///
    /// # Errors
    /// `-32602` when present and not a finite number in range.
    pub fn f64_in(&self, name: &str, lo: f64, hi: f64) -> Result<Option<f64>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let x = v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
            ToolError::invalid(format!(
                "field '{name}' must be a finite number in [{lo}, {hi}], got {}",
                shown(v)
            ))
        })?;
        if !(lo..=hi).contains(&x) {
            return Err(ToolError::invalid(format!(
                "field '{name}' must be in [{lo}, {hi}], got {x}"
            )));
        }
        Ok(Some(x))
    }

    /// A required finite number in `[lo, hi]`.
    ///
    /// # Errors
    /// `-32602` when missing, not a finite number, or out of range.
    pub fn req_f64_in(&self, name: &str, lo: f64, hi: f64) -> Result<f64, ToolError> {
        self.require(name)?;
        Ok(self
            .f64_in(name, lo, hi)?
            .expect("required field is present"))
    }

    /// An optional integer in `[lo, hi]`.
    ///
    /// # Errors
    /// `-32602` when present and not an integer in range.
    pub fn int_in(&self, name: &str, lo: i64, hi: i64) -> Result<Option<i64>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let bad = || {
            ToolError::invalid(format!(
                "field '{name}' must be an integer in {lo}..={hi}, got {}",
                shown(v)
            ))
        };
        let n = match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                })
                .ok_or_else(bad)?,
            _ => return Err(bad()),
        };
        if !(lo..=hi).contains(&n) {
            return Err(bad());
        }
        Ok(Some(n))
    }

    /// An optional string.
    ///
    /// # Errors
    /// `-32602` when present and not a string.
    pub fn str(&self, name: &str) -> Result<Option<&'a str>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(ToolError::invalid(format!(
                "field '{name}' must be a string, got {}",
                kind(v)
            ))),
        }
    }

    /// An optional value of an enumeration, parsed by `parse`; the message lists `allowed`.
    ///
    /// # Errors
    /// `-32602` naming the field, the value and the allowed values.
    pub fn enumeration<T>(
        &self,
        name: &str,
        allowed: &[&str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let invalid = || {
            ToolError::invalid(format!(
                "Invalid {name} {}. Valid values: {}",
                shown(v),
                allowed.join(", ")
            ))
        };
        match v {
            Value::String(s) => parse(s).map(Some).ok_or_else(invalid),
            _ => Err(invalid()),
        }
    }

    /// An optional RFC 3339 timestamp.
    ///
    /// # Errors
    /// `-32602` naming the field and the expected format.
    pub fn timestamp(&self, name: &str) -> Result<Option<DateTime<Utc>>, ToolError> {
        let Some(s) = self.str(name)? else {
            return Ok(None);
        };
        DateTime::parse_from_rfc3339(s.trim())
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| {
                ToolError::invalid(format!(
                    "Invalid timestamp format '{s}' in field '{name}'. Expected RFC 3339 / ISO 8601 (e.g. 2024-01-15T10:30:00Z)"
                ))
            })
    }

    /// An optional UUID.
    ///
    /// # Errors
    /// `-32602` naming the field.
    pub fn uuid(&self, name: &str) -> Result<Option<Uuid>, ToolError> {
        let Some(s) = self.str(name)? else {
            return Ok(None);
        };
        Uuid::parse_str(s.trim())
            .map(Some)
            .map_err(|_| ToolError::invalid(format!("field '{name}' must be a UUID, got {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(r: Result<impl std::fmt::Debug, ToolError>) -> String {
        match r.unwrap_err() {
            ToolError::InvalidParams(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_name_the_field_and_the_allowed_values() {
        let v = json!({"limit": 0, "x": "nan", "dry_run": "yes", "t": "yesterday", "e": "bogus"});
        let a = Args::new(&v).unwrap();
        assert!(err(a.int_in("limit", 1, 1000)).contains("'limit' must be an integer in 1..=1000"));
        assert!(err(a.f64_in("x", 0.0, 1.0)).contains("'x'"));
        assert!(err(a.bool_or("dry_run", false)).contains("'dry_run' must be a boolean"));
        assert!(err(a.timestamp("t")).contains("Invalid timestamp format 'yesterday'"));
        let m = err(a.enumeration("e", &["a", "b"], |_| None::<()>));
        assert!(m.contains("bogus") && m.contains("a, b"), "{m}");
        assert!(err(a.deny_unknown(&["limit"])).contains("unknown field"));
        assert!(
            err(a.req_f64_in("missing", 0.0, 1.0)).contains("missing required field 'missing'")
        );
    }

    #[test]
    fn null_counts_as_absent_and_integral_floats_are_integers() {
        let v = json!({"limit": null, "offset": 10.0});
        let a = Args::new(&v).unwrap();
        assert_eq!(a.int_in("limit", 1, 1000).unwrap(), None);
        assert_eq!(a.int_in("offset", 0, 100).unwrap(), Some(10));
        assert!(Args::new(&json!([1])).is_err());
        assert!(Args::new(&Value::Null).is_ok());
    }
}

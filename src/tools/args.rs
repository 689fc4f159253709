//! The `arguments` of a `tools/call` as handed to a handler: an object, or nothing.
//!
//! Handlers read it into their typed input with [`super::wire::parse`], which names the field
//! and what is allowed in every refusal; this type only checks that `arguments` is an object.

use serde_json::{Map, Value};

use super::ToolError;
use super::wire::kind;

/// The `arguments` object of a `tools/call`.
pub struct Args<'a> {
    value: &'a Value,
}

static EMPTY: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::Object(Map::new()));

impl<'a> Args<'a> {
    /// Read `arguments`: an object, or absent/null (no arguments).
    ///
    /// # Errors
    /// `InvalidParams` when `arguments` is another JSON type.
    pub fn new(value: &'a Value) -> Result<Self, ToolError> {
        match value {
            Value::Object(_) => Ok(Args { value }),
            Value::Null => Ok(Args { value: &EMPTY }),
            other => Err(ToolError::invalid(format!(
                "arguments must be an object, got {}",
                kind(other)
            ))),
        }
    }

    /// The `arguments` object as given (an empty object for absent arguments).
    pub fn value(&self) -> &'a Value {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_an_object_or_nothing() {
        assert_eq!(Args::new(&Value::Null).unwrap().value(), &json!({}));
        assert_eq!(
            Args::new(&json!({"a": 1})).unwrap().value(),
            &json!({"a": 1})
        );
        assert_eq!(
            Args::new(&json!([1])).err(),
            Some(ToolError::invalid(
                "arguments must be an object, got an array"
            ))
        );
    }
}

//! Tests of the wire layer: messages, schemas, and agreement between the two.

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

/// Schema truth on one call, the verdict of the published schema: the schema and [`parse`]
/// agree, or differ in one of the two documented ways. The schema may be stricter in the
/// casing of an enumerated value (it names one spelling, the server accepts any:
/// [`canonical_choices`] makes the call valid); and [`parse`] may refuse for a rule between
/// fields only ([`parse_fields`] accepts the call), which the schema states in the fields'
/// descriptions instead of a top-level combinator no client accepts.
pub(crate) fn assert_agree<T: DeserializeOwned + Validate>(
    schema: &Value,
    validator: &jsonschema::Validator,
    args: &Value,
) -> bool {
    let schema_ok = validator.is_valid(args);
    let parsed = parse::<T>(args).map(drop);
    let name = std::any::type_name::<T>();
    match (schema_ok, &parsed) {
        (true, Ok(())) | (false, Err(_)) => {}
        (false, Ok(())) => assert!(
            validator.is_valid(&canonical_choices(schema, args)),
            "{name} {args}: the schema refuses a call the parser accepts, and not for casing"
        ),
        (true, Err(e)) => assert!(
            parse_fields::<T>(args).is_ok(),
            "{name} {args}: the schema accepts a call the parser refuses for a field: {e:?}"
        ),
    }
    schema_ok
}

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
                !matches!(m.get("type"), Some(Value::Array(_))) && m.values().all(no_type_arrays)
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
        // "\u{85}" alone is the documented gap of `is_blank_char`.
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
            assert_agree::<Sample>(&schema, &validator, &args);
        }
    }
}

#[test]
fn a_nul_character_in_any_text_is_refused_naming_the_field() {
    assert_eq!(
        err(json!({"p": 0, "name": "a\u{0}b"})),
        "field 'name' contains the NUL character (U+0000), which no text field may hold; \
         remove it"
    );
    let e = parse::<Sample>(&json!({"p": 0, "items": [{"id": "x\u{0}"}]})).unwrap_err();
    assert_eq!(
        e,
        ToolError::invalid(
            "field 'items[0].id' contains the NUL character (U+0000), which no text field may \
             hold; remove it"
        )
    );
    // Other control characters are text like any other.
    assert!(parse::<Sample>(&json!({"p": 0, "name": "a\u{1}b"})).is_ok());
}

//! Schema truth: for every tool, the published `inputSchema` and the server agree on which
//! arguments are acceptable. Each case starts from the tool's example arguments and changes one
//! place: a value re-drawn from that place's schema (mostly valid), an edge value (`""`, `"   "`,
//! `null`, 2^63, −1, 0, 1.5, 5,000 characters, `[]`, `{}`, …), a removed field or an unknown
//! one. The verdict of the schema (checked with the `jsonschema` crate) must equal the server's:
//! accepted, or refused as invalid arguments, but for two documented differences: the schema
//! names one spelling of a case-insensitive choice (a call it refuses only for casing, which
//! `wire::canonical_choices` mends, is served), and rules between top-level fields are stated
//! in the fields' descriptions, not as a top-level `oneOf`/`if` that clients refuse
//! (`common::CROSS_FIELD_RULES`). Seeded, so a failure is reproducible; the number of cases per tool
//! is printed.

mod common;

use std::collections::BTreeMap;

use meta_utl_mcp::store::{DbPath, Store};
use meta_utl_mcp::tools::{self, App, CallError, wire};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};

/// Cases per tool (issue 13 asks for at least 500).
const CASES_PER_TOOL: usize = 500;
/// Seed of the case generator.
const SEED: u64 = 0x5eed_7077;

/// Rules a portable JSON Schema cannot state, documented where they arise: a call the schema
/// accepts and the server refuses with one of these messages is counted and printed, not
/// failed. (tool, words of the server's message, why the schema cannot say it)
const KNOWN_GAPS: &[(&str, &str, &str)] = &[
    (
        "gwt_compute_delta_sc",
        "must have the same length",
        "two arrays of equal length (a sparse vector's indices and values)",
    ),
    (
        "gwt_compute_delta_sc",
        "strictly ascending",
        "an ascending order (uniqueItems states only distinctness)",
    ),
    (
        "*",
        "Invalid timestamp format",
        "field ranges and the calendar (2023-13-45T25:61:00Z matches the pattern)",
    ),
];

/// The values every place is also tried with.
fn edge_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(""),
        json!("   "),
        json!("\u{3000}"),
        json!("x"),
        json!("CODE"),
        json!("code"),
        json!("550e8400-e29b-41d4-a716-446655440000"),
        json!("2024-01-15T10:30:00Z"),
        json!("x".repeat(5000)),
        json!(9_223_372_036_854_775_808_u64),
        json!(-1),
        json!(0),
        json!(1),
        json!(3),
        json!(1.5),
        json!(0.5),
        json!(1e300),
        json!(true),
        json!([]),
        json!([1]),
        json!({}),
    ]
}

/// A path into an arguments object: keys and array indices.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Places worth changing in `v`, up to `depth` levels down (an array contributes its first
/// element; long numeric arrays contribute only themselves).
fn places(v: &Value, depth: usize, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    if depth == 0 {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(Step::Key(k.clone()));
                out.push(prefix.clone());
                places(x, depth - 1, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            if let Some(first) = a.first()
                && (first.is_object() || a.len() <= 16)
            {
                prefix.push(Step::Index(0));
                out.push(prefix.clone());
                places(first, depth - 1, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut cur = v;
    for s in path {
        cur = match s {
            Step::Key(k) => cur.get_mut(k)?,
            Step::Index(i) => cur.get_mut(*i)?,
        };
    }
    Some(cur)
}

/// The schema that describes the value at `path` (through `properties`, `items`, and the
/// branches of `anyOf` / `oneOf` / `allOf` that name the key).
fn schema_at<'a>(schema: &'a Value, path: &[Step]) -> Option<&'a Value> {
    let mut cur = schema;
    for s in path {
        cur = match s {
            Step::Key(k) => find_property(cur, k)?,
            Step::Index(_) => cur.get("items")?,
        };
    }
    Some(cur)
}

fn find_property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    if let Some(p) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(p);
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = schema.get(k) {
            for b in branches {
                if let Some(p) = find_property(b, key) {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// A value drawn from `schema`: within its ranges, lengths and enumerations where it states
/// them, and arbitrary where it does not.
fn sample(schema: &Value, rng: &mut StdRng) -> Value {
    if let Some(Value::Array(e)) = schema.get("enum") {
        return e[rng.random_range(0..e.len())].clone();
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(k) {
            let mut merged = schema.clone();
            let obj = merged.as_object_mut().unwrap();
            obj.remove(k);
            let b = &branches[rng.random_range(0..branches.len())];
            for (bk, bv) in b.as_object().into_iter().flatten() {
                obj.insert(bk.clone(), bv.clone());
            }
            return sample(&merged, rng);
        }
    }
    let pattern = schema.get("pattern").and_then(Value::as_str).unwrap_or("");
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(rng.random_bool(0.5)),
        Some("integer") => {
            let lo = schema["minimum"].as_i64().unwrap_or(-5);
            let hi = schema["maximum"].as_i64().unwrap_or(lo + 1000);
            let hi = hi.min(lo.saturating_add(10_000));
            json!(rng.random_range(lo..=hi))
        }
        Some("number") => {
            let lo = schema["minimum"].as_f64().unwrap_or(-10.0);
            let hi = schema["maximum"].as_f64().unwrap_or(lo + 100.0);
            match rng.random_range(0..4) {
                0 => json!(lo),
                1 => json!(hi),
                _ => json!(lo + (hi - lo) * rng.random::<f64>()),
            }
        }
        Some("string") if pattern.starts_with("^[0-9a-fA-F]{8}") => {
            json!(uuid::Uuid::from_u128(rng.random()).to_string())
        }
        Some("string") if pattern.starts_with("^[0-9]{4}-") => {
            let day = rng.random_range(1..=28);
            json!(format!(
                "2026-0{}-{day:02}T12:00:00Z",
                rng.random_range(1..=9)
            ))
        }
        Some("string") => {
            let min = schema["minLength"].as_u64().unwrap_or(0) as usize;
            let max = schema["maxLength"].as_u64().unwrap_or(40).min(60) as usize;
            let n = rng.random_range(min.max(1)..=max.max(min.max(1)));
            let words = [
                "retry",
                "the",
                "cache",
                "Ünïcode",
                "日本",
                "test",
                "build",
                "flaky",
            ];
            let mut s = String::new();
            while s.chars().count() < n {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(words[rng.random_range(0..words.len())]);
            }
            json!(s.chars().take(n).collect::<String>())
        }
        Some("array") => {
            let min = schema["minItems"].as_u64().unwrap_or(0) as usize;
            let max = schema["maxItems"].as_u64().unwrap_or(3).min(4) as usize;
            let n = rng.random_range(min.min(4)..=max.max(min.min(4)));
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            json!((0..n).map(|_| sample(&items, rng)).collect::<Vec<_>>())
        }
        Some("object") => {
            let mut m = Map::new();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (k, p) in schema["properties"].as_object().into_iter().flatten() {
                if required.contains(&k.as_str()) || rng.random_bool(0.5) {
                    m.insert(k.clone(), sample(p, rng));
                }
            }
            Value::Object(m)
        }
        _ => edge_values()[rng.random_range(0..edge_values().len())].clone(),
    }
}

/// One case: the example with one place changed.
fn mutate(example: &Value, schema: &Value, rng: &mut StdRng) -> Value {
    let mut args = example.clone();
    let mut all = Vec::new();
    places(example, 3, &mut Vec::new(), &mut all);
    let roll = rng.random_range(0..100);
    if all.is_empty() || roll < 4 {
        // A field nobody knows, at the top.
        args.as_object_mut()
            .map(|m| m.insert("no_such_field".into(), json!(1)));
        return args;
    }
    let path = &all[rng.random_range(0..all.len())];
    if roll < 12 {
        // Remove a field.
        if let Some((Step::Key(k), parent)) = path.split_last()
            && let Some(Value::Object(m)) = at_mut(&mut args, parent)
        {
            m.remove(k);
        }
        return args;
    }
    let new = if roll < 55 {
        match schema_at(schema, path) {
            Some(s) => sample(s, rng),
            None => json!("unknown place"),
        }
    } else {
        let edges = edge_values();
        edges[rng.random_range(0..edges.len())].clone()
    };
    if let Some(slot) = at_mut(&mut args, path) {
        *slot = new;
    }
    args
}

#[test]
fn every_schema_accepts_exactly_what_the_server_accepts() {
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut report = BTreeMap::new();
    let mut failures = Vec::new();
    let mut known: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut casing: BTreeMap<&str, usize> = BTreeMap::new();
    for tool in tools::registry() {
        let app = App::new(Store::open(&DbPath::Memory).unwrap()).unwrap();
        let schema = (tool.input_schema)();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let example = (tool.example)();
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..CASES_PER_TOOL {
            let args = mutate(&example, &schema, &mut rng);
            let schema_ok = validator.is_valid(&args);
            let server_ok = match app.call(tool.name, &args) {
                Ok(_) => true,
                Err(CallError::InvalidArguments { .. }) => false,
                Err(CallError::Rpc(e)) => {
                    failures.push(format!("{} {args}: internal error {e:?}", tool.name));
                    continue;
                }
            };
            if server_ok {
                accepted += 1;
            } else {
                refused += 1;
            }
            if schema_ok != server_ok {
                let refusal = match app.call(tool.name, &args) {
                    Err(CallError::InvalidArguments { message, .. }) => Some(message),
                    _ => None,
                };
                let gap = refusal.as_deref().and_then(|m| {
                    KNOWN_GAPS
                        .iter()
                        .chain(common::CROSS_FIELD_RULES)
                        .find(|(t, words, _)| (*t == "*" || *t == tool.name) && m.contains(words))
                });
                if server_ok && validator.is_valid(&wire::canonical_choices(&schema, &args)) {
                    *casing.entry(tool.name).or_insert(0) += 1;
                    continue;
                }
                if let (true, Some((_, _, why))) = (schema_ok, gap) {
                    *known.entry((tool.name, *why)).or_insert(0) += 1;
                    continue;
                }
                let why = match refusal {
                    Some(message) => message,
                    _ => validator
                        .iter_errors(&args)
                        .map(|e| e.to_string())
                        .collect::<Vec<_>>()
                        .join("; "),
                };
                let shown: String = args.to_string().chars().take(300).collect();
                failures.push(format!(
                    "{}: schema says {}, server says {}: {shown} ({why})",
                    tool.name,
                    if schema_ok { "valid" } else { "invalid" },
                    if server_ok { "accepted" } else { "refused" },
                ));
            }
        }
        report.insert(tool.name, (accepted, refused));
    }
    for (name, (a, r)) in &report {
        eprintln!(
            "schema truth: {name}: {} cases, {a} accepted, {r} refused",
            a + r
        );
    }
    for ((name, why), n) in &known {
        eprintln!("schema truth: {name}: {n} refusals of a rule no schema states: {why}");
    }
    for (name, n) in &casing {
        eprintln!(
            "schema truth: {name}: {n} calls served whose choice the schema spells in another case"
        );
    }
    assert!(
        failures.is_empty(),
        "{} disagreements, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(15)].join("\n")
    );
}

//! The schema fast path (`schema::simple`) must give the full validator's verdict on every
//! instance, and must leave every schema it does not wholly understand to the full validator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_server::schema::CompiledSchema;
use serde_json::{Value, json};

/// Schemas inside the subset: what schemars writes for plain argument structs, and more.
fn simple_schemas() -> Vec<Value> {
    vec![
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Echo",
            "type": "object", "properties": {"message": {"type": "string",
            "description": "The text to echo back."}}, "required": ["message"]}),
        json!({"type": "object", "properties": {
            "a": {"type": "integer", "format": "int64"},
            "b": {"type": "integer", "format": "uint32", "minimum": 0},
            "c": {"type": ["string", "null"]},
            "d": {"type": "number", "format": "double", "exclusiveMinimum": -1.5, "maximum": 10},
            "e": {"type": "boolean", "default": false},
            "f": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3}}},
            "required": ["a", "b"], "additionalProperties": false}),
        json!({"type": "object", "additionalProperties": {"type": "integer",
            "exclusiveMaximum": 18446744073709551615u64, "minimum": -9223372036854775808i64}}),
        json!({"properties": {"x": true, "y": false, "a/b~c": {"type": "null"}}}),
        json!({"type": ["object", "array"], "items": {"type": "object", "required": ["k"]}}),
        json!({"type": "string", "minLength": 2, "maxLength": 4, "examples": ["ab"],
            "readOnly": true, "deprecated": false, "$comment": "c"}),
        json!({"type": "integer", "minimum": 1.5, "maximum": 9007199254740993u64}),
        json!({"type": "object", "properties": {}, "required": []}),
        json!({}),
        json!({"type": "object", "properties": {
            "level": {"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}]},
            "inner": {"$ref": "#/$defs/Inner"},
            "flag": {"const": true}, "tag": {"enum": ["a", "b", null]}},
            "$defs": {"Level": {"type": "string", "enum": ["debug", "info", "x@example.com"]},
                "Inner": {"type": "object", "properties": {"k": {"$ref": "#/$defs/Level"}},
                    "required": ["k"]}}}),
        json!({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 5},
            {"const": "ab"}, {"enum": ["ab", "a"]}]}),
        json!({"allOf": [{"type": ["object", "array"]}, {"required": ["k"]}],
            "anyOf": [{"type": "object"}, {"items": {"type": "string"}}]}),
        schema_of::<Args>(),
        json!({"type": "string", "enum": ["a", "b"]}),
        json!({"type": "object", "properties": {"m": {"$ref": "#/$defs/M"}},
            "$defs": {"M": {"type": "string"}}}),
    ]
}

/// A unit enum with documented variants, as schemars writes it (`oneOf` of `const`s).
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Level {
    /// Quiet.
    Debug,
    /// Loud.
    Info,
}

/// A nested struct.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Inner {
    k: Level,
    x: Option<u32>,
}

/// Arguments with an optional enum, a nested struct and a list.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Args {
    message: String,
    level: Option<Level>,
    inner: Option<Inner>,
    a: Vec<i64>,
}

fn schema_of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap()
}

/// Schemas outside it: the full validator decides, and reports invalid ones.
fn full_schemas() -> Vec<Value> {
    vec![
        json!({"type": "string", "format": "email"}),
        json!({"format": "date"}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}),
        json!({"type": "object", "patternProperties": {"^x": {"type": "string"}}}),
        json!({"type": "strng"}),
        json!({"type": ["string", "string"]}),
        json!({"required": ["a", "a"]}),
        json!({"minLength": -1}),
        json!({"title": 5}),
        json!({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}),
        json!({"$defs": {"A": {"properties": {"n": {"$ref": "#/$defs/B"}}},
            "B": {"items": {"$ref": "#/$defs/A"}}}, "$ref": "#/$defs/A"}),
        json!({"$ref": "#/$defs/Missing"}),
        json!({"$ref": "#"}),
        json!({"enum": [1, 2]}),
        json!({"enum": []}),
        json!({"const": {"a": 1}}),
        json!({"anyOf": []}),
        json!({"properties": {"a": {"$defs": {}}}}),
    ]
}

/// A deterministic pool of instances: scalars at the edges, and nested objects and arrays.
fn instances() -> Vec<Value> {
    let scalars = vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(1),
        json!(1.0),
        json!(1.5),
        json!(-1.5),
        json!(-2.0),
        json!(10),
        json!(10.0),
        json!(10.5),
        json!(9007199254740993u64),
        json!(9007199254740992u64),
        json!(18446744073709551615u64),
        json!(-9223372036854775808i64),
        json!(1e300),
        json!(""),
        json!("a"),
        json!("ab"),
        json!("héé"),
        json!("🦀🦀🦀🦀"),
        json!("abcde"),
        json!("x@example.com"),
        json!("debug"),
        json!("info"),
        json!({"k": "debug"}),
        json!({"k": "info", "x": 3}),
        json!({"k": "loud"}),
    ];
    let mut out = scalars.clone();
    out.push(json!([]));
    out.push(json!({}));
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let keys = [
        "message", "a", "b", "c", "d", "e", "f", "k", "x", "y", "a/b~c", "zz", "level", "inner",
        "flag", "tag",
    ];
    for _ in 0..600 {
        let mut m = serde_json::Map::new();
        for _ in 0..next(5) {
            let v = match next(4) {
                0 => json!([scalars[next(scalars.len())], scalars[next(scalars.len())]]),
                1 => json!({"k": scalars[next(scalars.len())]}),
                _ => scalars[next(scalars.len())].clone(),
            };
            m.insert(keys[next(keys.len())].to_owned(), v);
        }
        out.push(Value::Object(m.clone()));
        out.push(json!([Value::Object(m), {"k": 1}]));
    }
    out
}

fn full_verdict(schema: &Value, instance: &Value) -> bool {
    let mut s = schema.clone();
    if let Value::Object(m) = &mut s {
        m.entry("$schema")
            .or_insert_with(|| json!("https://json-schema.org/draft/2020-12/schema"));
    }
    jsonschema::validator_for(&s)
        .expect("a valid schema")
        .is_valid(instance)
}

#[test]
fn fast_path_verdicts_equal_the_full_validator() {
    let pool = instances();
    let mut checked = 0;
    for schema in simple_schemas() {
        let compiled = CompiledSchema::compile(schema.as_object().unwrap()).unwrap();
        assert!(compiled.is_simple(), "expected the fast path for {schema}");
        for instance in &pool {
            let ours = compiled.validate(instance);
            assert_eq!(
                ours.is_ok(),
                full_verdict(&schema, instance),
                "schema {schema}\ninstance {instance}\nfast path said {ours:?}"
            );
            if let Err(errors) = ours {
                assert!(!errors.is_empty() && errors.len() <= 20);
            }
            checked += 1;
        }
    }
    assert!(checked > 15_000, "only {checked} verdicts compared");
}

#[test]
fn other_schemas_go_to_the_full_validator() {
    for schema in full_schemas() {
        // Either refused at registration, as before, or compiled by the full validator.
        if let Ok(c) = CompiledSchema::compile(schema.as_object().unwrap()) {
            assert!(!c.is_simple(), "{schema} should not take the fast path");
        }
    }
    // Malformed values are still refused when registered, by the full validator.
    for bad in [
        json!({"type": "strng"}),
        json!({"minLength": -1}),
        json!({"required": ["a", "a"]}),
    ] {
        assert!(
            CompiledSchema::compile(bad.as_object().unwrap()).is_err(),
            "{bad} should be refused"
        );
    }
}

#[test]
fn fast_path_errors_name_the_place() {
    let schema = json!({"type": "object", "properties": {"a/b": {"type": "object",
        "properties": {"n": {"type": "integer"}}}}, "required": ["m"]});
    let c = CompiledSchema::compile(schema.as_object().unwrap()).unwrap();
    assert!(c.is_simple());
    let errors = c.validate(&json!({"a/b": {"n": "x"}})).unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.contains(&"\"m\" is a required property".to_owned()));
    assert!(errors.contains(&"/a~1b/n: \"x\" is not of type \"integer\"".to_owned()));
}

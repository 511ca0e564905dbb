//! JSON Schema compilation for tool inputs and outputs.
//!
//! A schema without `$schema` is JSON Schema 2020-12 (the MCP default). An explicit `$schema`
//! naming draft-04, draft-06, draft-07, 2019-09 or 2020-12 is honoured; any other dialect is
//! refused with a clear error when the tool is registered, not when it is called.
//!
//! Schemas made only of plain typed properties are checked by a fast path (`simple`), which needs no
//! start-up work; every other schema by the `jsonschema` crate, with the same verdicts.

mod simple;

use std::fmt;

use jsonschema::Validator;
use oxmcp_types::JsonObject;
use serde_json::Value;

/// Why a schema cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// `$schema` names a dialect we do not implement.
    #[error(
        "unsupported JSON Schema dialect {0:?} (supported: 2020-12, 2019-09, draft-07, draft-06, draft-04)"
    )]
    UnsupportedDialect(String),
    /// The schema is not a valid schema of its dialect.
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
}

const KNOWN_DIALECTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
];

/// A compiled schema.
pub struct CompiledSchema {
    check: Check,
}

/// Who checks instances.
enum Check {
    /// The subset [`simple`] handles.
    Simple(Box<simple::Simple>),
    /// The full validator.
    Full(Box<Validator>),
}

/// Most violations reported for one instance.
const MAX_ERRORS: usize = 20;

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompiledSchema")
    }
}

impl CompiledSchema {
    /// Compiles a schema, checking its dialect.
    ///
    /// # Errors
    /// [`SchemaError`] for an unknown dialect or an invalid schema.
    pub fn compile(schema: &JsonObject) -> Result<Self, SchemaError> {
        let mut schema = Value::Object(schema.clone());
        if let Some(s) = simple::Simple::parse(&schema) {
            return Ok(Self {
                check: Check::Simple(Box::new(s)),
            });
        }
        match schema.get("$schema") {
            None => {
                if let Value::Object(m) = &mut schema {
                    m.insert(
                        "$schema".to_owned(),
                        Value::String(KNOWN_DIALECTS[0].to_owned()),
                    );
                }
            }
            Some(Value::String(d)) => {
                let norm = d.trim_end_matches('#').replace(
                    "https://json-schema.org/draft-0",
                    "http://json-schema.org/draft-0",
                );
                if !KNOWN_DIALECTS.contains(&norm.as_str()) {
                    return Err(SchemaError::UnsupportedDialect(d.clone()));
                }
            }
            Some(other) => return Err(SchemaError::UnsupportedDialect(other.to_string())),
        }
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self {
            check: Check::Full(Box::new(validator)),
        })
    }

    /// Whether the fast path (plain typed properties only) checks this schema.
    pub fn is_simple(&self) -> bool {
        matches!(self.check, Check::Simple(_))
    }

    /// Validates an instance; on failure, every error as `path: message`.
    ///
    /// # Errors
    /// The list of violations.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<String>> {
        let validator = match &self.check {
            Check::Simple(s) => return s.validate(instance, MAX_ERRORS),
            Check::Full(v) => v,
        };
        if validator.is_valid(instance) {
            return Ok(());
        }
        Err(validator
            .iter_errors(instance)
            .take(MAX_ERRORS)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{path}: {e}")
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn dialects() {
        let s = CompiledSchema::compile(&obj(json!({
            "type":"object","properties":{"a":{"type":"number"}},"required":["a"]})))
        .unwrap();
        assert!(s.validate(&json!({"a":1})).is_ok());
        let errs = s.validate(&json!({"a":"x"})).unwrap_err();
        assert!(errs[0].contains("/a"), "{errs:?}");
        // draft-07: `dependencies` is a draft-07 keyword, ignored in 2020-12.
        // `prefixItems` is a 2020-12 keyword: unknown (ignored) in draft-07.
        let d7 = CompiledSchema::compile(&obj(json!({
            "$schema":"http://json-schema.org/draft-07/schema#",
            "type":"array","prefixItems":[{"type":"string"}]})))
        .unwrap();
        assert!(d7.validate(&json!([1])).is_ok());
        let d2020 = CompiledSchema::compile(&obj(json!({
            "type":"array","prefixItems":[{"type":"string"}]})))
        .unwrap();
        assert!(d2020.validate(&json!([1])).is_err());
        assert_eq!(
            CompiledSchema::compile(&obj(json!({"$schema":"http://example.com/my-dialect"})))
                .unwrap_err(),
            SchemaError::UnsupportedDialect("http://example.com/my-dialect".into())
        );
        assert!(matches!(
            CompiledSchema::compile(&obj(json!({"type": 5}))),
            Err(SchemaError::Invalid(_))
        ));
    }
}

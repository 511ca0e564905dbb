//! A fast path for the schemas most tools have: objects of plain typed properties.
//!
//! The full validator (the `jsonschema` crate) costs about 1.1 ms and 3 MB the first time a
//! process compiles any schema, because it builds the 2020-12 meta-schema first. A server that
//! starts for one call (stdio) pays that before its first answer. A schema made only of the
//! keywords below, each with a well-formed value, is checked here instead; anything else,
//! including every keyword this module does not know and every malformed value, goes to the
//! full validator, which also reports why a schema is invalid. The verdicts are the same as
//! the full validator's (a differential test holds this module to it).
//!
//! Keywords: `type`, `properties`, `required`, `additionalProperties`, `items`, `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, the
//! annotations (`title`, `description`, `$comment`, `default`, `examples`, `readOnly`,
//! `writeOnly`, `deprecated`), `format` where the type excludes strings (it constrains only
//! strings), boolean schemas, and a top-level `$schema` naming 2020-12.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// JSON types, as bits.
const TYPES: [(&str, u8); 7] = [
    ("null", 1),
    ("boolean", 2),
    ("object", 4),
    ("array", 8),
    ("number", 16),
    ("string", 32),
    ("integer", 64),
];

/// A schema of the subset, ready to check instances.
#[derive(Debug, Default)]
pub(crate) struct Simple {
    /// A boolean schema: `true` accepts everything, `false` nothing.
    always: Option<bool>,
    /// Allowed types (bits of [`TYPES`]); `None`: any.
    types: Option<u8>,
    properties: Vec<(String, Simple)>,
    required: Vec<String>,
    additional: Option<Box<Simple>>,
    items: Option<Box<Simple>>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
}

impl Simple {
    /// The schema, when it is wholly inside the subset and well formed; `None` otherwise.
    pub(crate) fn parse(schema: &Value) -> Option<Simple> {
        if let Value::Object(m) = schema {
            match m.get("$schema") {
                None => {}
                Some(Value::String(d)) if d.trim_end_matches('#') == DIALECT_2020_12 => {}
                Some(_) => return None,
            }
        }
        Self::parse_at(schema, true)
    }

    fn parse_at(schema: &Value, top: bool) -> Option<Simple> {
        let m = match schema {
            Value::Bool(b) => {
                return Some(Simple {
                    always: Some(*b),
                    ..Simple::default()
                });
            }
            Value::Object(m) => m,
            _ => return None,
        };
        let mut s = Simple::default();
        let mut format = false;
        for (k, v) in m {
            match k.as_str() {
                "$schema" if top => {}
                "title" | "description" | "$comment" => {
                    v.as_str()?;
                }
                "default" => {}
                "examples" => {
                    v.as_array()?;
                }
                "readOnly" | "writeOnly" | "deprecated" => {
                    v.as_bool()?;
                }
                "format" => {
                    v.as_str()?;
                    format = true;
                }
                "type" => s.types = Some(parse_types(v)?),
                "properties" => {
                    for (name, sub) in v.as_object()? {
                        s.properties
                            .push((name.clone(), Self::parse_at(sub, false)?));
                    }
                }
                "required" => s.required = unique_strings(v)?,
                "additionalProperties" => {
                    s.additional = Some(Box::new(Self::parse_at(v, false)?));
                }
                "items" => s.items = Some(Box::new(Self::parse_at(v, false)?)),
                "minimum" => s.minimum = Some(v.as_number()?.clone()),
                "maximum" => s.maximum = Some(v.as_number()?.clone()),
                "exclusiveMinimum" => s.exclusive_minimum = Some(v.as_number()?.clone()),
                "exclusiveMaximum" => s.exclusive_maximum = Some(v.as_number()?.clone()),
                "minLength" => s.min_length = Some(v.as_u64()?),
                "maxLength" => s.max_length = Some(v.as_u64()?),
                _ => return None,
            }
        }
        // `format` constrains strings only; where strings are allowed, leave it to the full
        // validator (whether it asserts depends on the dialect's vocabularies).
        if format && s.types.is_none_or(|t| t & type_bit("string") != 0) {
            return None;
        }
        Some(s)
    }

    /// Checks an instance; each violation as `path: message` (path a JSON pointer, left out
    /// at the root), at most `limit`.
    pub(crate) fn validate(&self, instance: &Value, limit: usize) -> Result<(), Vec<String>> {
        if self.is_valid(instance) {
            return Ok(());
        }
        let mut errors = Vec::new();
        self.check(instance, &mut String::new(), &mut errors, limit);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The verdict alone: no paths or messages built, nothing allocated.
    fn is_valid(&self, v: &Value) -> bool {
        if let Some(b) = self.always {
            return b;
        }
        if self.types.is_some_and(|t| t & type_of(v) == 0) {
            return false;
        }
        match v {
            Value::Object(m) => {
                self.required.iter().all(|name| m.contains_key(name))
                    && m.iter().all(|(key, value)| {
                        match self.properties.iter().find(|(name, _)| name == key) {
                            Some((_, s)) => s.is_valid(value),
                            None => self.additional.as_ref().is_none_or(|s| s.is_valid(value)),
                        }
                    })
            }
            Value::Array(items) => self
                .items
                .as_ref()
                .is_none_or(|s| items.iter().all(|i| s.is_valid(i))),
            Value::Number(n) => {
                let ok = |bound: &Option<Number>, bad: Ordering, exclusive: bool| {
                    bound.as_ref().is_none_or(|b| {
                        let o = compare(n, b);
                        o != bad && !(exclusive && o == Ordering::Equal)
                    })
                };
                ok(&self.minimum, Ordering::Less, false)
                    && ok(&self.maximum, Ordering::Greater, false)
                    && ok(&self.exclusive_minimum, Ordering::Less, true)
                    && ok(&self.exclusive_maximum, Ordering::Greater, true)
            }
            Value::String(s) => {
                if self.min_length.is_none() && self.max_length.is_none() {
                    return true;
                }
                let chars = s.chars().count() as u64;
                self.min_length.is_none_or(|min| chars >= min)
                    && self.max_length.is_none_or(|max| chars <= max)
            }
            Value::Null | Value::Bool(_) => true,
        }
    }

    /// Every violation, with its place (the slow path, for invalid instances only).
    fn check(&self, v: &Value, path: &mut String, errors: &mut Vec<String>, limit: usize) {
        let mut fail = |path: &str, msg: String| {
            if errors.len() < limit {
                errors.push(if path.is_empty() {
                    msg
                } else {
                    format!("{path}: {msg}")
                });
            }
        };
        if let Some(b) = self.always {
            if !b {
                fail(path, format!("False schema does not allow {v}"));
            }
            return;
        }
        if let Some(t) = self.types
            && t & type_of(v) == 0
        {
            fail(path, format!("{v} is not of type {}", type_names(t)));
        }
        match v {
            Value::Object(m) => self.check_object(m, path, errors, limit),
            Value::Array(items) => {
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        let len = path.len();
                        path.push('/');
                        path.push_str(&i.to_string());
                        schema.check(item, path, errors, limit);
                        path.truncate(len);
                    }
                }
            }
            Value::Number(n) => {
                let bounds = [
                    (&self.minimum, Ordering::Less, false, "less than"),
                    (&self.maximum, Ordering::Greater, false, "greater than"),
                    (
                        &self.exclusive_minimum,
                        Ordering::Less,
                        true,
                        "less than or equal to",
                    ),
                    (
                        &self.exclusive_maximum,
                        Ordering::Greater,
                        true,
                        "greater than or equal to",
                    ),
                ];
                for (bound, bad, exclusive, words) in bounds {
                    if let Some(b) = bound {
                        let o = compare(n, b);
                        if o == bad || (exclusive && o == Ordering::Equal) {
                            fail(path, format!("{n} is {words} the limit {b}"));
                        }
                    }
                }
            }
            Value::String(s) => {
                let chars = || s.chars().count() as u64;
                if self.min_length.is_some_and(|min| chars() < min) {
                    fail(path, format!("{v} is shorter than the limit"));
                }
                if self.max_length.is_some_and(|max| chars() > max) {
                    fail(path, format!("{v} is longer than the limit"));
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }

    fn check_object(
        &self,
        m: &Map<String, Value>,
        path: &mut String,
        errors: &mut Vec<String>,
        limit: usize,
    ) {
        for name in &self.required {
            if !m.contains_key(name) && errors.len() < limit {
                let msg = format!("{} is a required property", Value::String(name.clone()));
                errors.push(if path.is_empty() {
                    msg
                } else {
                    format!("{path}: {msg}")
                });
            }
        }
        for (key, value) in m {
            let schema = match self.properties.iter().find(|(name, _)| name == key) {
                Some((_, s)) => s,
                None => match &self.additional {
                    Some(s) => s,
                    None => continue,
                },
            };
            let len = path.len();
            path.push('/');
            // A JSON pointer escapes `~` and `/`.
            path.push_str(&key.replace('~', "~0").replace('/', "~1"));
            schema.check(value, path, errors, limit);
            path.truncate(len);
        }
    }
}

fn type_bit(name: &str) -> u8 {
    TYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, b)| *b)
}

/// `type`: one name, or a non-empty list of distinct names.
fn parse_types(v: &Value) -> Option<u8> {
    match v {
        Value::String(s) => Some(type_bit(s)).filter(|b| *b != 0),
        Value::Array(list) if !list.is_empty() => {
            let mut bits = 0;
            for name in list {
                let b = type_bit(name.as_str()?);
                if b == 0 || bits & b != 0 {
                    return None;
                }
                bits |= b;
            }
            Some(bits)
        }
        _ => None,
    }
}

/// `required`: distinct strings.
fn unique_strings(v: &Value) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for s in v.as_array()? {
        let s = s.as_str()?;
        if out.iter().any(|o| o == s) {
            return None;
        }
        out.push(s.to_owned());
    }
    Some(out)
}

/// The type bits an instance satisfies (an integer-valued number is also an `integer`).
fn type_of(v: &Value) -> u8 {
    match v {
        Value::Null => type_bit("null"),
        Value::Bool(_) => type_bit("boolean"),
        Value::Object(_) => type_bit("object"),
        Value::Array(_) => type_bit("array"),
        Value::String(_) => type_bit("string"),
        Value::Number(n) => {
            let integral = n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0);
            type_bit("number") | if integral { type_bit("integer") } else { 0 }
        }
    }
}

fn type_names(bits: u8) -> String {
    let names: Vec<String> = TYPES
        .iter()
        .filter(|(_, b)| bits & b != 0)
        .map(|(n, _)| format!("{n:?}"))
        .collect();
    match names.len() {
        1 => names[0].clone(),
        _ => format!("any of {}", names.join(", ")),
    }
}

/// Numeric order of two JSON numbers, exact for integers of any size serde_json holds.
fn compare(a: &Number, b: &Number) -> Ordering {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x.cmp(&y);
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x.cmp(&y);
    }
    // One is a u64 above i64::MAX and the other a negative i64.
    match (a.as_u64(), b.as_i64(), a.as_i64(), b.as_u64()) {
        (Some(_), Some(y), _, _) if y < 0 => return Ordering::Greater,
        (_, _, Some(x), Some(_)) if x < 0 => return Ordering::Less,
        _ => {}
    }
    let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
}

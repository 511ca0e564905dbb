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
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, `enum` and
//! `const` of strings, booleans and null, `anyOf`, `oneOf`, `allOf`, `$ref` to a top-level
//! `$defs` entry (`#/$defs/Name`, no cycles), the annotations (`title`, `description`,
//! `$comment`, `default`, `examples`, `readOnly`, `writeOnly`, `deprecated`), `format` where
//! the type excludes strings (it constrains only strings), boolean schemas, and a top-level
//! `$schema` naming 2020-12. That is what schemars writes for argument structs of plain
//! fields, nested structs, `Option`s and unit enums.

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
#[derive(Debug)]
pub(crate) struct Simple {
    root: Node,
    /// The top-level `$defs`, which `$ref`s point into by index.
    defs: Vec<Node>,
}

/// One schema object of the subset.
#[derive(Debug, Default)]
struct Node {
    /// A boolean schema: `true` accepts everything, `false` nothing.
    always: Option<bool>,
    /// Allowed types (bits of [`TYPES`]); `None`: any.
    types: Option<u8>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    /// `enum` and `const`: the instance must be one of each list.
    choices: Vec<Vec<Value>>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    all_of: Vec<Node>,
    /// `$ref`: an index into [`Simple::defs`].
    reference: Option<usize>,
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
        let empty = Map::new();
        let defs = match schema.get("$defs") {
            None => &empty,
            Some(d) => d.as_object()?,
        };
        let names: Vec<&str> = defs.keys().map(String::as_str).collect();
        let simple = Simple {
            root: Node::parse(schema, true, &names)?,
            defs: defs
                .values()
                .map(|d| Node::parse(d, false, &names))
                .collect::<Option<_>>()?,
        };
        simple.acyclic().then_some(simple)
    }

    /// Whether following `$ref`s can never come back to where it started.
    fn acyclic(&self) -> bool {
        // 0 unvisited, 1 on the current path, 2 done.
        fn visit(i: usize, edges: &[Vec<usize>], state: &mut [u8]) -> bool {
            match state[i] {
                1 => return false,
                2 => return true,
                _ => {}
            }
            state[i] = 1;
            let ok = edges[i].iter().all(|&j| visit(j, edges, state));
            state[i] = 2;
            ok
        }
        let edges: Vec<Vec<usize>> = self
            .defs
            .iter()
            .map(|d| {
                let mut refs = Vec::new();
                d.refs(&mut refs);
                refs
            })
            .collect();
        let mut state = vec![0u8; self.defs.len()];
        (0..self.defs.len()).all(|i| visit(i, &edges, &mut state))
    }

    /// Checks an instance; each violation as `path: message` (path a JSON pointer, left out
    /// at the root), at most `limit`.
    pub(crate) fn validate(&self, instance: &Value, limit: usize) -> Result<(), Vec<String>> {
        if self.root.is_valid(instance, &self.defs) {
            return Ok(());
        }
        let mut errors = Vec::new();
        let mut out = Errors {
            list: &mut errors,
            limit,
            defs: &self.defs,
        };
        self.root.check(instance, &mut String::new(), &mut out);
        if errors.is_empty() {
            // The verdict is what counts; a message is owed.
            errors.push(format!("{instance} is not valid"));
        }
        Err(errors)
    }
}

/// Where the slow path collects violations.
struct Errors<'a> {
    list: &'a mut Vec<String>,
    limit: usize,
    defs: &'a [Node],
}

impl Errors<'_> {
    fn push(&mut self, path: &str, msg: String) {
        if self.list.len() < self.limit {
            self.list.push(if path.is_empty() {
                msg
            } else {
                format!("{path}: {msg}")
            });
        }
    }
}

impl Node {
    fn parse(schema: &Value, top: bool, defs: &[&str]) -> Option<Node> {
        let m = match schema {
            Value::Bool(b) => {
                return Some(Node {
                    always: Some(*b),
                    ..Node::default()
                });
            }
            Value::Object(m) => m,
            _ => return None,
        };
        let list = |v: &Value| -> Option<Vec<Node>> {
            let items = v.as_array().filter(|a| !a.is_empty())?;
            items.iter().map(|i| Node::parse(i, false, defs)).collect()
        };
        let mut s = Node::default();
        let mut format = false;
        for (k, v) in m {
            match k.as_str() {
                "$schema" | "$defs" if top => {}
                "$ref" => {
                    let name = v.as_str()?.strip_prefix("#/$defs/")?;
                    if name.contains(['~', '/', '%']) {
                        return None;
                    }
                    s.reference = Some(defs.iter().position(|d| *d == name)?);
                }
                "enum" => s.choices.push(plain_values(v.as_array()?)?),
                "const" => s.choices.push(plain_values(std::slice::from_ref(v))?),
                "anyOf" => s.any_of = list(v)?,
                "oneOf" => s.one_of = list(v)?,
                "allOf" => s.all_of = list(v)?,
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
                            .push((name.clone(), Node::parse(sub, false, defs)?));
                    }
                }
                "required" => s.required = unique_strings(v)?,
                "additionalProperties" => {
                    s.additional = Some(Box::new(Node::parse(v, false, defs)?));
                }
                "items" => s.items = Some(Box::new(Node::parse(v, false, defs)?)),
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

    /// Every `$ref` index inside this node.
    fn refs(&self, out: &mut Vec<usize>) {
        out.extend(self.reference);
        let subs = self.properties.iter().map(|(_, n)| n);
        let subs = subs
            .chain(self.additional.as_deref())
            .chain(self.items.as_deref());
        let subs = subs
            .chain(&self.any_of)
            .chain(&self.one_of)
            .chain(&self.all_of);
        for n in subs {
            n.refs(out);
        }
    }

    /// The verdict alone: no paths or messages built, nothing allocated.
    fn is_valid(&self, v: &Value, defs: &[Node]) -> bool {
        if let Some(b) = self.always {
            return b;
        }
        if self.types.is_some_and(|t| t & type_of(v) == 0)
            || !self.choices.iter().all(|c| c.contains(v))
            || !self.reference.is_none_or(|i| defs[i].is_valid(v, defs))
            || !self.all_of.iter().all(|n| n.is_valid(v, defs))
            || !(self.any_of.is_empty() || self.any_of.iter().any(|n| n.is_valid(v, defs)))
            || !(self.one_of.is_empty()
                || self.one_of.iter().filter(|n| n.is_valid(v, defs)).count() == 1)
        {
            return false;
        }
        match v {
            Value::Object(m) => {
                self.required.iter().all(|name| m.contains_key(name))
                    && m.iter().all(|(key, value)| {
                        self.schema_of(key).is_none_or(|s| s.is_valid(value, defs))
                    })
            }
            Value::Array(items) => self
                .items
                .as_ref()
                .is_none_or(|s| items.iter().all(|i| s.is_valid(i, defs))),
            Value::Number(n) => self.bounds().iter().all(|(bound, bad, exclusive, _)| {
                bound.is_none_or(|b| {
                    let o = compare(n, b);
                    o != *bad && !(*exclusive && o == Ordering::Equal)
                })
            }),
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

    /// The schema a property's value must meet: its own, else `additionalProperties`.
    fn schema_of(&self, key: &str) -> Option<&Node> {
        match self.properties.iter().find(|(name, _)| name == key) {
            Some((_, s)) => Some(s),
            None => self.additional.as_deref(),
        }
    }

    /// The numeric limits: the bound, the order that breaks it, whether equality breaks it
    /// too, and the words for the message.
    fn bounds(&self) -> [(Option<&Number>, Ordering, bool, &'static str); 4] {
        [
            (self.minimum.as_ref(), Ordering::Less, false, "less than"),
            (
                self.maximum.as_ref(),
                Ordering::Greater,
                false,
                "greater than",
            ),
            (
                self.exclusive_minimum.as_ref(),
                Ordering::Less,
                true,
                "less than or equal to",
            ),
            (
                self.exclusive_maximum.as_ref(),
                Ordering::Greater,
                true,
                "greater than or equal to",
            ),
        ]
    }

    /// Every violation, with its place (the slow path, for invalid instances only).
    fn check(&self, v: &Value, path: &mut String, out: &mut Errors<'_>) {
        if let Some(b) = self.always {
            if !b {
                out.push(path, format!("False schema does not allow {v}"));
            }
            return;
        }
        if let Some(t) = self.types
            && t & type_of(v) == 0
        {
            out.push(path, format!("{v} is not of type {}", type_names(t)));
        }
        self.check_combined(v, path, out);
        match v {
            Value::Object(m) => self.check_object(m, path, out),
            Value::Array(items) => {
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        let len = path.len();
                        path.push('/');
                        path.push_str(&i.to_string());
                        schema.check(item, path, out);
                        path.truncate(len);
                    }
                }
            }
            Value::Number(n) => {
                for (bound, bad, exclusive, words) in self.bounds() {
                    if let Some(b) = bound {
                        let o = compare(n, b);
                        if o == bad || (exclusive && o == Ordering::Equal) {
                            out.push(path, format!("{n} is {words} the limit {b}"));
                        }
                    }
                }
            }
            Value::String(s) => {
                let chars = || s.chars().count() as u64;
                if self.min_length.is_some_and(|min| chars() < min) {
                    out.push(path, format!("{v} is shorter than the limit"));
                }
                if self.max_length.is_some_and(|max| chars() > max) {
                    out.push(path, format!("{v} is longer than the limit"));
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }

    /// `enum`, `const`, `$ref`, `allOf`, `anyOf`, `oneOf`.
    fn check_combined(&self, v: &Value, path: &mut String, out: &mut Errors<'_>) {
        let defs = out.defs;
        for choices in &self.choices {
            if !choices.contains(v) {
                let list: Vec<String> = choices.iter().map(Value::to_string).collect();
                out.push(path, format!("{v} is not one of [{}]", list.join(", ")));
            }
        }
        if let Some(i) = self.reference {
            defs[i].check(v, path, out);
        }
        for n in &self.all_of {
            n.check(v, path, out);
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|n| n.is_valid(v, defs)) {
            out.push(
                path,
                format!("{v} is not valid under any of the schemas listed in 'anyOf'"),
            );
        }
        if !self.one_of.is_empty() {
            match self.one_of.iter().filter(|n| n.is_valid(v, defs)).count() {
                1 => {}
                0 => out.push(
                    path,
                    format!("{v} is not valid under any of the schemas listed in 'oneOf'"),
                ),
                _ => out.push(
                    path,
                    format!("{v} is valid under more than one of the schemas listed in 'oneOf'"),
                ),
            }
        }
    }

    fn check_object(&self, m: &Map<String, Value>, path: &mut String, out: &mut Errors<'_>) {
        for name in &self.required {
            if !m.contains_key(name) {
                let msg = format!("{} is a required property", Value::String(name.clone()));
                out.push(path, msg);
            }
        }
        for (key, value) in m {
            let Some(schema) = self.schema_of(key) else {
                continue;
            };
            let len = path.len();
            path.push('/');
            // A JSON pointer escapes `~` and `/`.
            path.push_str(&key.replace('~', "~0").replace('/', "~1"));
            schema.check(value, path, out);
            path.truncate(len);
        }
    }
}

/// `enum` or `const` values, when each is a string, a boolean or null (equality of numbers,
/// arrays and objects is left to the full validator) and they are distinct.
fn plain_values(values: &[Value]) -> Option<Vec<Value>> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    for v in values {
        if !matches!(v, Value::String(_) | Value::Bool(_) | Value::Null) || out.contains(v) {
            return None;
        }
        out.push(v.clone());
    }
    (!out.is_empty()).then_some(out)
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

//! JSON ⇄ protobuf, without loss.

use serde_json::{Map, Number, Value as Json};

use crate::messages::{Error, Field, Id, ListValue, Message, Struct, Value, id, value};
use crate::{ProtoError, malformed};

fn not_a_message(why: impl Into<String>) -> ProtoError {
    ProtoError::NotAMessage(why.into())
}

/// The protobuf form of one JSON-RPC message.
///
/// # Errors
/// [`ProtoError::NotAMessage`] for JSON that is not a JSON-RPC 2.0 message: not an object,
/// no `"jsonrpc": "2.0"`, a member JSON-RPC does not have, an id that is not a string, an
/// integer or null, an error without an integer code and a string message.
pub fn to_proto(json: &Json) -> Result<Message, ProtoError> {
    let obj = json
        .as_object()
        .ok_or_else(|| not_a_message("not an object"))?;
    if obj.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return Err(not_a_message("no \"jsonrpc\": \"2.0\""));
    }
    let mut m = Message::default();
    for (key, v) in obj {
        match key.as_str() {
            "jsonrpc" => {}
            "id" => m.id = Some(id_to_proto(v)?),
            "method" => {
                m.method = v
                    .as_str()
                    .ok_or_else(|| not_a_message("method is not a string"))?
                    .to_owned();
            }
            "params" => m.params = Some(value_to_proto(v)),
            "result" => m.result = Some(value_to_proto(v)),
            "error" => m.error = Some(error_to_proto(v)?),
            other => return Err(not_a_message(format!("unexpected member {other:?}"))),
        }
    }
    Ok(m)
}

fn id_to_proto(v: &Json) -> Result<Id, ProtoError> {
    let kind = match v {
        Json::Null => id::Kind::Null(true),
        Json::String(s) => id::Kind::Text(s.clone()),
        Json::Number(n) => id::Kind::Number(
            n.as_i64()
                .ok_or_else(|| not_a_message("an id that is not an integer"))?,
        ),
        _ => return Err(not_a_message("an id that is not a string, integer or null")),
    };
    Ok(Id { kind: Some(kind) })
}

fn error_to_proto(v: &Json) -> Result<Error, ProtoError> {
    let obj = v
        .as_object()
        .ok_or_else(|| not_a_message("error is not an object"))?;
    let mut e = Error::default();
    for (key, v) in obj {
        match key.as_str() {
            "code" => {
                e.code = v
                    .as_i64()
                    .ok_or_else(|| not_a_message("error code is not an integer"))?;
            }
            "message" => {
                e.message = v
                    .as_str()
                    .ok_or_else(|| not_a_message("error message is not a string"))?
                    .to_owned();
            }
            "data" => e.data = Some(value_to_proto(v)),
            other => return Err(not_a_message(format!("unexpected error member {other:?}"))),
        }
    }
    Ok(e)
}

/// Whether member `key` of `obj` holds binary contents as base64: a resource's `blob` (an
/// object with a `uri`), or the `data` of image and audio content.
fn is_binary(obj: &Map<String, Json>, key: &str) -> bool {
    match key {
        "blob" => obj.contains_key("uri"),
        "data" => matches!(
            obj.get("type").and_then(Json::as_str),
            Some("image" | "audio")
        ),
        _ => false,
    }
}

fn value_to_proto(v: &Json) -> Value {
    let kind = match v {
        Json::Null => value::Kind::NullValue(true),
        Json::Bool(b) => value::Kind::BoolValue(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => value::Kind::IntValue(i),
            (None, Some(u), _) => value::Kind::UintValue(u),
            (None, None, Some(f)) => value::Kind::DoubleValue(f),
            (None, None, None) => value::Kind::StringValue(n.to_string()),
        },
        Json::String(s) => value::Kind::StringValue(s.clone()),
        Json::Array(items) => value::Kind::ListValue(ListValue {
            values: items.iter().map(value_to_proto).collect(),
        }),
        Json::Object(obj) => value::Kind::StructValue(Struct {
            fields: obj
                .iter()
                .map(|(key, v)| {
                    let binary = match v {
                        Json::String(s) if is_binary(obj, key) => {
                            crate::base64::canonical(s.as_bytes())
                        }
                        _ => None,
                    };
                    let value = match binary {
                        Some(bytes) => Value {
                            kind: Some(value::Kind::BytesValue(bytes)),
                        },
                        None => value_to_proto(v),
                    };
                    Field {
                        key: key.clone(),
                        value: Some(value),
                    }
                })
                .collect(),
        }),
    };
    Value { kind: Some(kind) }
}

/// The JSON of a protobuf message.
///
/// # Errors
/// [`ProtoError::Malformed`] for a message JSON-RPC cannot have: no method and no id, a
/// value without a kind, a double that is not finite.
pub fn from_proto(m: &Message) -> Result<Json, ProtoError> {
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), Json::from("2.0"));
    if let Some(id) = &m.id {
        let v = match &id.kind {
            Some(id::Kind::Number(n)) => Json::from(*n),
            Some(id::Kind::Text(s)) => Json::from(s.clone()),
            Some(id::Kind::Null(_)) => Json::Null,
            None => return Err(malformed("an id without a kind")),
        };
        obj.insert("id".into(), v);
    }
    if !m.method.is_empty() {
        obj.insert("method".into(), Json::from(m.method.clone()));
    }
    if let Some(p) = &m.params {
        obj.insert("params".into(), value_from_proto(p)?);
    }
    if let Some(r) = &m.result {
        obj.insert("result".into(), value_from_proto(r)?);
    }
    if let Some(e) = &m.error {
        let mut err = Map::new();
        err.insert("code".into(), Json::from(e.code));
        err.insert("message".into(), Json::from(e.message.clone()));
        if let Some(d) = &e.data {
            err.insert("data".into(), value_from_proto(d)?);
        }
        obj.insert("error".into(), Json::Object(err));
    }
    if m.method.is_empty() && m.id.is_none() {
        return Err(malformed("neither a method nor an id"));
    }
    Ok(Json::Object(obj))
}

fn value_from_proto(v: &Value) -> Result<Json, ProtoError> {
    Ok(match &v.kind {
        None => return Err(malformed("a value without a kind")),
        Some(value::Kind::NullValue(_)) => Json::Null,
        Some(value::Kind::BoolValue(b)) => Json::Bool(*b),
        Some(value::Kind::IntValue(i)) => Json::from(*i),
        Some(value::Kind::UintValue(u)) => Json::from(*u),
        Some(value::Kind::DoubleValue(f)) => Json::Number(
            Number::from_f64(*f).ok_or_else(|| malformed("a number that is not finite"))?,
        ),
        Some(value::Kind::StringValue(s)) => Json::from(s.clone()),
        Some(value::Kind::BytesValue(b)) => Json::from(crate::base64::encode(b)),
        Some(value::Kind::ListValue(l)) => Json::Array(
            l.values
                .iter()
                .map(value_from_proto)
                .collect::<Result<_, _>>()?,
        ),
        Some(value::Kind::StructValue(s)) => {
            let mut obj = Map::new();
            for f in &s.fields {
                let v = match &f.value {
                    Some(v) => value_from_proto(v)?,
                    None => return Err(malformed("a field without a value")),
                };
                obj.insert(f.key.clone(), v);
            }
            Json::Object(obj)
        }
    })
}

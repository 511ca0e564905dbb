//! A protobuf message written straight out as JSON text, without building a
//! `serde_json::Value` tree in between: what a server does with a protobuf body before it
//! handles it like a JSON one. Decoding it then costs the decoded message and the text, no
//! more than parsing the same message from JSON.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::ProtoError;
use crate::messages::{Error, Id, ListValue, Message, Struct, Value, id, value};

/// The JSON text of a protobuf message: the same JSON as [`crate::from_proto`] gives, with
/// object keys in their order on the wire.
///
/// # Errors
/// [`ProtoError::Malformed`] for a message JSON-RPC cannot have: no method and no id, a
/// value without a kind, a field without a value, a double that is not finite.
pub fn to_json_text(m: &Message) -> Result<Vec<u8>, ProtoError> {
    if m.method.is_empty() && m.id.is_none() {
        return Err(ProtoError::Malformed("neither a method nor an id".into()));
    }
    serde_json::to_vec(&JsonMessage(m)).map_err(|e| ProtoError::Malformed(e.to_string()))
}

struct JsonMessage<'a>(&'a Message);

impl Serialize for JsonMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        if let Some(id) = &m.id {
            map.serialize_entry("id", &JsonId(id))?;
        }
        if !m.method.is_empty() {
            map.serialize_entry("method", &m.method)?;
        }
        if let Some(p) = &m.params {
            map.serialize_entry("params", &JsonValue(p))?;
        }
        if let Some(r) = &m.result {
            map.serialize_entry("result", &JsonValue(r))?;
        }
        if let Some(e) = &m.error {
            map.serialize_entry("error", &JsonError(e))?;
        }
        map.end()
    }
}

struct JsonId<'a>(&'a Id);

impl Serialize for JsonId<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.kind {
            Some(id::Kind::Number(n)) => s.serialize_i64(*n),
            Some(id::Kind::Text(t)) => s.serialize_str(t),
            Some(id::Kind::Null(_)) => s.serialize_unit(),
            None => Err(S::Error::custom("an id without a kind")),
        }
    }
}

struct JsonError<'a>(&'a Error);

impl Serialize for JsonError<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("code", &e.code)?;
        map.serialize_entry("message", &e.message)?;
        if let Some(d) = &e.data {
            map.serialize_entry("data", &JsonValue(d))?;
        }
        map.end()
    }
}

struct JsonValue<'a>(&'a Value);

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.kind {
            None => Err(S::Error::custom("a value without a kind")),
            Some(value::Kind::NullValue(_)) => s.serialize_unit(),
            Some(value::Kind::BoolValue(b)) => s.serialize_bool(*b),
            Some(value::Kind::IntValue(i)) => s.serialize_i64(*i),
            Some(value::Kind::UintValue(u)) => s.serialize_u64(*u),
            Some(value::Kind::DoubleValue(f)) if f.is_finite() => s.serialize_f64(*f),
            Some(value::Kind::DoubleValue(_)) => {
                Err(S::Error::custom("a number that is not finite"))
            }
            Some(value::Kind::StringValue(t)) => s.serialize_str(t),
            Some(value::Kind::BytesValue(b)) => {
                // Base64 has nothing to escape: written as it is, not checked byte by byte
                // (for a 1 MiB blob that check was a quarter of a client's work).
                let mut text = String::with_capacity(b.len().div_ceil(3) * 4 + 2);
                text.push('"');
                STANDARD.encode_string(b, &mut text);
                text.push('"');
                serde_json::value::RawValue::from_string(text)
                    .map_err(S::Error::custom)?
                    .serialize(s)
            }
            Some(value::Kind::ListValue(l)) => JsonList(l).serialize(s),
            Some(value::Kind::StructValue(o)) => JsonStruct(o).serialize(s),
        }
    }
}

struct JsonList<'a>(&'a ListValue);

impl Serialize for JsonList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.values.len()))?;
        for v in &self.0.values {
            seq.serialize_element(&JsonValue(v))?;
        }
        seq.end()
    }
}

struct JsonStruct<'a>(&'a Struct);

impl Serialize for JsonStruct<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.fields.len()))?;
        for f in &self.0.fields {
            let Some(v) = &f.value else {
                return Err(S::Error::custom("a field without a value"));
            };
            map.serialize_entry(&f.key, &JsonValue(v))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{from_proto, to_proto};
    use serde_json::json;

    #[test]
    fn the_same_json_as_from_proto() {
        let messages = [
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "arguments": {"a": [1, -2, 3.5, null, true, "s", {"z": 1, "b": []}], "n": 18446744073709551615_u64}, "_meta": {"k": "v"}}}),
            json!({"jsonrpc": "2.0", "id": "t", "result": {"contents": [{"uri": "file:///a", "blob": "AAEC"}, {"type": "image", "data": "AAEC", "mimeType": "image/png"}]}}),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error", "data": {"why": "x"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ];
        for m in messages {
            let proto = to_proto(&m).unwrap();
            let text = to_json_text(&proto).unwrap();
            let back: serde_json::Value = serde_json::from_slice(&text).unwrap();
            assert_eq!(back, from_proto(&proto).unwrap());
            assert_eq!(back, m);
        }
    }

    #[test]
    fn what_from_proto_refuses_is_refused() {
        let mut m = to_proto(&json!({"jsonrpc": "2.0", "id": 1, "result": {"a": 1}})).unwrap();
        if let Some(Value {
            kind: Some(value::Kind::StructValue(s)),
        }) = &mut m.result
        {
            s.fields[0].value = Some(Value { kind: None });
        }
        let e = to_json_text(&m).unwrap_err();
        assert!(e.to_string().contains("a value without a kind"), "{e}");
        m.result = Some(Value {
            kind: Some(value::Kind::DoubleValue(f64::NAN)),
        });
        assert!(to_json_text(&m).is_err());
        let none = Message::default();
        assert!(to_json_text(&none).is_err());
    }
}

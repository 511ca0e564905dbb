//! JSON text read straight into the protobuf form, without building a `serde_json::Value`
//! tree in between: what a server does with an answer its engine encoded as JSON when the
//! client asked for protobuf. The reverse of `json_out`.

use std::fmt;

use prost::Message as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::ProtoError;
use crate::messages::{Batch, Error, Field, Id, ListValue, Message, Struct, Value, id, value};

/// The protobuf bytes of the JSON text of a JSON-RPC message, or of a batch (a JSON array):
/// the same bytes as [`crate::encode`] of the parsed text gives, with object members in
/// their order in the text, in one pass over the text.
///
/// # Errors
/// [`ProtoError::NotAMessage`] for text that is not JSON, or JSON that is not a message.
pub fn encode_json_text(text: &str) -> Result<Vec<u8>, ProtoError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let encoded = Top
        .deserialize(&mut de)
        .and_then(|bytes| de.end().map(|()| bytes))
        .map_err(|e| ProtoError::NotAMessage(e.to_string()))?;
    Ok(encoded)
}

/// The protobuf form of the JSON text of one JSON-RPC message: the same message as
/// [`crate::to_proto`] of the parsed text gives, in one pass over the text.
///
/// # Errors
/// [`ProtoError::NotAMessage`] for text that is not JSON, or JSON that is not a message.
pub fn to_proto_text(text: &str) -> Result<Message, ProtoError> {
    let mut de = serde_json::Deserializer::from_str(text);
    MessageSeed
        .deserialize(&mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| ProtoError::NotAMessage(e.to_string()))
}

/// One message (an object) or a batch (an array), encoded.
struct Top;

impl<'de> DeserializeSeed<'de> for Top {
    type Value = Vec<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or a batch of them")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<u8>, A::Error> {
        Ok(MessageVisitor.visit_map(map)?.encode_to_vec())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut messages = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(m) = seq.next_element_seed(MessageSeed)? {
            messages.push(m);
        }
        Ok(Batch { messages }.encode_to_vec())
    }
}

struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Message;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Message, D::Error> {
        d.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut m = Message::default();
        let mut versioned = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "jsonrpc" => {
                    let v: std::borrow::Cow<'de, str> = map.next_value()?;
                    versioned = v == "2.0";
                }
                "id" => m.id = Some(map.next_value_seed(IdSeed)?),
                "method" => m.method = map.next_value()?,
                "params" => m.params = Some(map.next_value_seed(ValueSeed::ANY)?),
                "result" => m.result = Some(map.next_value_seed(ValueSeed::ANY)?),
                "error" => m.error = Some(map.next_value_seed(ErrorSeed)?),
                other => return Err(de::Error::custom(format!("unexpected member {other:?}"))),
            }
        }
        if !versioned {
            return Err(de::Error::custom("no \"jsonrpc\": \"2.0\""));
        }
        Ok(m)
    }
}

struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = Id;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Id, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed {
    type Value = Id;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id that is a string, an integer or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
        Ok(Id {
            kind: Some(id::Kind::Null(true)),
        })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        Ok(Id {
            kind: Some(id::Kind::Text(v.to_owned())),
        })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        Ok(Id {
            kind: Some(id::Kind::Number(v)),
        })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        let n = i64::try_from(v).map_err(|_| E::custom("an id that is not an integer"))?;
        self.visit_i64(n)
    }
}

struct ErrorSeed;

impl<'de> DeserializeSeed<'de> for ErrorSeed {
    type Value = Error;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Error, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ErrorSeed {
    type Value = Error;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Error, A::Error> {
        let mut e = Error::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "code" => e.code = map.next_value()?,
                "message" => e.message = map.next_value()?,
                "data" => e.data = Some(map.next_value_seed(ValueSeed::ANY)?),
                other => {
                    let _: IgnoredAny = map.next_value()?;
                    return Err(de::Error::custom(format!(
                        "unexpected error member {other:?}"
                    )));
                }
            }
        }
        Ok(e)
    }
}

/// A JSON value. `maybe_binary` for the value of a `blob` or `data` member: a string that is
/// canonical base64 becomes bytes, decoded straight from the input (not copied as text
/// first). Whether it holds binary contents is known only at the end of its object
/// ([`binary_in_bytes`]).
#[derive(Clone, Copy)]
struct ValueSeed {
    maybe_binary: bool,
}

impl ValueSeed {
    const ANY: Self = Self {
        maybe_binary: false,
    };
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn kind(kind: value::Kind) -> Value {
    Value { kind: Some(kind) }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(kind(value::Kind::NullValue(true)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(kind(value::Kind::BoolValue(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(kind(value::Kind::IntValue(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(kind(match i64::try_from(v) {
            Ok(i) => value::Kind::IntValue(i),
            Err(_) => value::Kind::UintValue(v),
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(kind(value::Kind::DoubleValue(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        if self.maybe_binary
            && let Some(bytes) = crate::base64::canonical(v.as_bytes())
        {
            return Ok(kind(value::Kind::BytesValue(bytes)));
        }
        Ok(kind(value::Kind::StringValue(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        if self.maybe_binary {
            return self.visit_str(&v);
        }
        Ok(kind(value::Kind::StringValue(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element_seed(ValueSeed::ANY)? {
            values.push(v);
        }
        Ok(kind(value::Kind::ListValue(ListValue { values })))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed {
                maybe_binary: matches!(key.as_str(), "blob" | "data"),
            })?;
            fields.push(Field {
                key,
                value: Some(value),
            });
        }
        binary_in_bytes(&mut fields);
        Ok(kind(value::Kind::StructValue(Struct { fields })))
    }
}

/// Binary contents as bytes, as `convert` has them: a resource's `blob` (an object with a
/// `uri`), the `data` of image and audio content, when their text is canonical base64.
/// [`ValueSeed`] decoded every `blob` and `data` it could; those of an object that does not
/// hold binary contents go back to the same text.
fn binary_in_bytes(fields: &mut [Field]) {
    let has_uri = fields.iter().any(|f| f.key == "uri");
    let media = fields
        .iter()
        .rfind(|f| f.key == "type")
        .and_then(|f| match f.value.as_ref().and_then(|v| v.kind.as_ref()) {
            Some(value::Kind::StringValue(s)) => Some(s.as_str()),
            _ => None,
        })
        .is_some_and(|t| matches!(t, "image" | "audio"));
    for f in fields.iter_mut() {
        let binary = (f.key == "blob" && has_uri) || (f.key == "data" && media);
        if binary {
            continue;
        }
        // JSON has no bytes: a value in bytes here was decoded by `ValueSeed`.
        if let Some(Value {
            kind: Some(value::Kind::BytesValue(bytes)),
        }) = &f.value
        {
            let text = crate::base64::encode(bytes);
            f.value = Some(kind(value::Kind::StringValue(text)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The same message as parsing the text and encoding the value gives.
    fn same(v: &serde_json::Value) {
        let text = serde_json::to_string(v).unwrap();
        let streamed = encode_json_text(&text).unwrap();
        let decoded = match v {
            serde_json::Value::Array(_) => crate::decode_batch(&streamed).unwrap(),
            _ => crate::decode(&streamed).unwrap(),
        };
        assert_eq!(&decoded, v);
        let through_value = crate::encode(v).unwrap();
        assert_eq!(streamed.len(), through_value.len(), "{v}");
        if v.is_object() {
            assert_eq!(
                to_proto_text(&text).unwrap(),
                crate::to_proto(v).unwrap(),
                "{v}"
            );
        }
    }

    #[test]
    fn the_text_encodes_as_its_value_does() {
        same(&json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}));
        same(
            &json!({"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no","data":[1,-2,2.5,null,true]}}),
        );
        same(
            &json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"big":u64::MAX,"neg":i64::MIN}}),
        );
        same(&json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}));
        same(
            &json!([{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"x":"y"}}]),
        );
        // Binary contents go as bytes, and come back as the same base64 text.
        same(
            &json!({"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"f://x","blob":"AAEC"}],
            "content":[{"type":"image","data":"iVBORw==","mimeType":"image/png"},
                       {"type":"text","data":"AAEC"}]}}),
        );
        // Whether a member is binary is known at the end of its object, in any order.
        same(&json!({"jsonrpc":"2.0","id":1,"result":{
            "a":{"blob":"AAEC","name":"no uri"},
            "b":{"data":"AAEC","type":"audio","mimeType":"audio/wav"},
            "c":{"blob":"AAE=","uri":"f://y"},
            "d":{"blob":"AAF=","uri":"f://not-canonical"},
            "e":{"data":{"blob":"AAEC"},"type":"image"},
            "f":{"data":7,"blob":null,"uri":"f://z"}}}));
    }

    #[test]
    fn binary_members_become_bytes() {
        let text = r#"{"jsonrpc":"2.0","id":1,"result":{"uri":"f://x","blob":"AAEC"}}"#;
        let m = <Message as prost::Message>::decode(&encode_json_text(text).unwrap()[..]).unwrap();
        let Some(value::Kind::StructValue(s)) = m.result.unwrap().kind else {
            panic!("a struct")
        };
        assert_eq!(
            s.fields[1].value.as_ref().unwrap().kind,
            Some(value::Kind::BytesValue(vec![0, 1, 2]))
        );
    }

    #[test]
    fn what_is_not_a_message_is_refused() {
        for bad in [
            "not json",
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"other":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} trailing"#,
            "42",
        ] {
            assert!(
                matches!(encode_json_text(bad), Err(ProtoError::NotAMessage(_))),
                "{bad}"
            );
        }
    }
}

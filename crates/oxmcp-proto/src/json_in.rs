//! JSON text read straight into the protobuf form, without building a `serde_json::Value`
//! tree in between: what a server does with an answer its engine encoded as JSON when the
//! client asked for protobuf. The reverse of `json_out`.

use std::fmt;

use prost::Message as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::ProtoError;
use crate::long_strings::{self, Shortened};
use crate::messages::{Batch, Error, Field, Id, ListValue, Message, Struct, Value, id, value};

/// The protobuf bytes of the JSON text of a JSON-RPC message, or of a batch (a JSON array):
/// the same bytes as [`crate::encode`] of the parsed text gives, with object members in
/// their order in the text, in one pass over the text.
///
/// # Errors
/// [`ProtoError::NotAMessage`] for text that is not JSON, or JSON that is not a message.
pub fn encode_json_text(text: &str) -> Result<Vec<u8>, ProtoError> {
    parse(text, |de, long| Top(long).deserialize(de))
}

/// The protobuf form of the JSON text of one JSON-RPC message: the same message as
/// [`crate::to_proto`] of the parsed text gives, in one pass over the text.
///
/// # Errors
/// [`ProtoError::NotAMessage`] for text that is not JSON, or JSON that is not a message.
pub fn to_proto_text(text: &str) -> Result<Message, ProtoError> {
    parse(text, |de, long| MessageSeed(long).deserialize(de))
}

/// Where long strings were emptied from the text being parsed ([`Shortened`]), if they were.
type Long<'c> = Option<&'c Shortened<'c>>;

/// `read` over `text`, its long strings found ahead of serde_json when it has any (and the
/// whole text parsed as it is if that does not give the answer with every one of them
/// restored; serde_json's error is always that of the text as it is).
fn parse<T>(
    text: &str,
    read: impl for<'a> Fn(
        &mut serde_json::Deserializer<serde_json::de::StrRead<'a>>,
        Long<'a>,
    ) -> Result<T, serde_json::Error>,
) -> Result<T, ProtoError> {
    if let Some(short) = Shortened::of(text)
        && let Ok(v) = read_whole(&short.text, Some(&short), &read)
        && short.complete()
    {
        #[cfg(test)]
        SHORTENED.with(|n| n.set(n.get() + 1));
        return Ok(v);
    }
    read_whole(text, None, &read).map_err(|e| ProtoError::NotAMessage(e.to_string()))
}

#[cfg(test)]
thread_local! {
    /// Texts answered with their long strings emptied (on this thread).
    static SHORTENED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// `read` over `text`, which must hold nothing after what it reads.
fn read_whole<'a, T>(
    text: &'a str,
    long: Long<'a>,
    read: &impl Fn(
        &mut serde_json::Deserializer<serde_json::de::StrRead<'a>>,
        Long<'a>,
    ) -> Result<T, serde_json::Error>,
) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = read(&mut de, long)?;
    de.end().map(|()| v)
}

/// One message (an object) or a batch (an array), encoded.
struct Top<'c>(Long<'c>);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Vec<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or a batch of them")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<u8>, A::Error> {
        Ok(MessageVisitor(self.0).visit_map(map)?.encode_to_vec())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut messages = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(m) = seq.next_element_seed(MessageSeed(self.0))? {
            messages.push(m);
        }
        Ok(Batch { messages }.encode_to_vec())
    }
}

struct MessageSeed<'c>(Long<'c>);

impl<'de> DeserializeSeed<'de> for MessageSeed<'_> {
    type Value = Message;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Message, D::Error> {
        d.deserialize_map(MessageVisitor(self.0))
    }
}

struct MessageVisitor<'c>(Long<'c>);

impl<'de> Visitor<'de> for MessageVisitor<'_> {
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
                "params" => m.params = Some(map.next_value_seed(ValueSeed::any(self.0))?),
                "result" => m.result = Some(map.next_value_seed(ValueSeed::any(self.0))?),
                "error" => m.error = Some(map.next_value_seed(ErrorSeed(self.0))?),
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

struct ErrorSeed<'c>(Long<'c>);

impl<'de> DeserializeSeed<'de> for ErrorSeed<'_> {
    type Value = Error;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Error, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ErrorSeed<'_> {
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
                "data" => e.data = Some(map.next_value_seed(ValueSeed::any(self.0))?),
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
struct ValueSeed<'c> {
    maybe_binary: bool,
    long: Long<'c>,
}

impl<'c> ValueSeed<'c> {
    fn any(long: Long<'c>) -> Self {
        Self {
            maybe_binary: false,
            long,
        }
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn kind(kind: value::Kind) -> Value {
    Value { kind: Some(kind) }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
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
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Value, E> {
        let Some(contents) = self.long.and_then(|long| long.restore(v)) else {
            return self.visit_str(v);
        };
        if self.maybe_binary
            && let Some(bytes) = crate::base64::canonical(contents.as_bytes())
        {
            return Ok(kind(value::Kind::BytesValue(bytes)));
        }
        if !long_strings::plain(contents) {
            return Err(E::custom("a control character in a string"));
        }
        Ok(kind(value::Kind::StringValue(contents.to_owned())))
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
        while let Some(v) = seq.next_element_seed(ValueSeed::any(self.long))? {
            values.push(v);
        }
        Ok(kind(value::Kind::ListValue(ListValue { values })))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed {
                maybe_binary: matches!(key.as_str(), "blob" | "data"),
                long: self.long,
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

    /// Long strings (found ahead of serde_json) in every place a string can be: as binary
    /// contents, as text, in keys, a method, an id, an error's message, escaped or not.
    #[test]
    fn long_strings_encode_as_short_ones_do() {
        let blob = "QUJD".repeat(4096);
        let text = "é text ".repeat(2048);
        // Each case, and whether its long strings were emptied (else it was parsed whole).
        let same = |v: &serde_json::Value, emptied: bool| {
            let before = SHORTENED.with(std::cell::Cell::get);
            same(v);
            let after = SHORTENED.with(std::cell::Cell::get);
            assert_eq!(after > before, emptied, "{:.200}", v.to_string());
            // The same bytes and message as parsing the text whole.
            let text = serde_json::to_string(v).unwrap();
            let whole = read_whole(&text, None, &|de, long| Top(long).deserialize(de)).unwrap();
            assert_eq!(
                encode_json_text(&text).unwrap(),
                whole,
                "{:.200}",
                v.to_string()
            );
            if v.is_object() {
                let whole =
                    read_whole(&text, None, &|de, long| MessageSeed(long).deserialize(de)).unwrap();
                assert_eq!(to_proto_text(&text).unwrap(), whole);
            }
        };
        same(
            &json!({"jsonrpc":"2.0","id":1,"result":{"contents":[
            {"uri":"f://x","blob": blob},
            {"uri":"f://y","text": text},
            {"blob": blob, "name": "no uri"}]}}),
            true,
        );
        same(
            &json!({"jsonrpc":"2.0","id":1,"result":{"content":[
            {"type":"image","data": blob,"mimeType":"image/png"},
            {"type":"text","text": format!("{text}\n\"{text}")}]}}),
            true,
        );
        same(
            &json!({"jsonrpc":"2.0","id":1,"result":{ blob.clone(): [blob, 1, {"k": text}]}}),
            false,
        );
        same(
            &json!({"jsonrpc":"2.0","method": text,"params":{"a": blob}}),
            false,
        );
        same(
            &json!({"jsonrpc":"2.0","id": blob,"result":{"a": blob}}),
            false,
        );
        same(
            &json!({"jsonrpc":"2.0","id":1,"error":{"code":1,"message": text,"data": blob}}),
            false,
        );
        same(
            &json!({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data": blob}}),
            true,
        );
        same(
            &json!([{"jsonrpc":"2.0","id":1,"result":{"blob": blob, "uri":"u"}},
                     {"jsonrpc":"2.0","id":2,"result":{"t": text}}]),
            true,
        );
        // In params, as a whole result, as an array's element.
        same(
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a": blob}}}),
            true,
        );
        same(&json!({"jsonrpc":"2.0","id":1,"result": text}), true);
        same(
            &json!({"jsonrpc":"2.0","id":1,"result": [blob, text, "s", blob]}),
            true,
        );
    }

    /// What serde_json refuses in a long string is refused, with serde_json's own error.
    #[test]
    fn long_strings_are_checked_as_short_ones_are() {
        let blob = "QUJD".repeat(4096);
        for bad in [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{blob}{}{blob}"}}}}"#,
                '\u{1}'
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"uri":"u","blob":"{blob}{}"}}}}"#,
                '\u{1f}'
            ),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{blob}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{blob}"}}}} "{blob}""#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"{blob}":{{}}}}"#),
        ] {
            let expected = serde_json::from_str::<serde_json::Value>(&bad)
                .err()
                .map(|e| e.to_string());
            match encode_json_text(&bad) {
                Err(ProtoError::NotAMessage(e)) => {
                    if let Some(expected) = expected {
                        assert_eq!(e, expected);
                    }
                }
                other => panic!("{other:?} for a text of {} bytes", bad.len()),
            }
            assert!(to_proto_text(&bad).is_err());
        }
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

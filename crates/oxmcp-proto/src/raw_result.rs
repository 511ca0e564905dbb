//! The result of a plain success response in protobuf as raw JSON, for a client's engine to
//! take decoded: written from the protobuf message and not parsed again. Through its
//! JSON text, the engine found the end of the result (the base64 of a 1 MiB blob, 1.4 MB of
//! one string) with serde_json's scan before the client read it into its type with another.

use serde::Serialize;
use serde::ser::SerializeStruct;
use serde_json::value::RawValue;

use crate::ProtoError;
use crate::messages::{Message, id};

/// The name serde_json's serializer knows a raw value by (its own `RawValue` serializes as
/// a struct of this name, with one field of this name holding the text).
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// JSON text that serde_json's serializer writes as it is.
struct Raw<'a>(&'a str);

impl Serialize for Raw<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut raw = s.serialize_struct(RAW_TOKEN, 1)?;
        raw.serialize_field(RAW_TOKEN, self.0)?;
        raw.end()
    }
}

/// Whether serde_json, as linked, makes a [`Raw`] into a `RawValue` of its text (asked once).
fn raw_works() -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORKS.get_or_init(|| {
        serde_json::value::to_raw_value(&Raw(r#"{"a" : [1]}"#))
            .is_ok_and(|r| r.get() == r#"{"a" : [1]}"#)
    })
}

/// The result of `m` as raw JSON when `m` is a plain success response: an id that is a
/// number or a string, a result, and no method, params or error. `None` for any other
/// message (hand that on as its JSON text, [`crate::to_json_text`], for the reader of
/// JSON-RPC to say what is wrong with it if anything is).
///
/// The text is the same as the result's in [`crate::to_json_text`]; it is written by this
/// crate, so it is valid JSON and is not parsed to check it. The id is the caller's to take
/// from `m` and to hold to its own rules (a JSON-RPC reader's limit on the length of a
/// string id, say), as it would reading the message's JSON text.
///
/// # Errors
/// [`ProtoError::Malformed`] for a result JSON cannot have (a value without a kind, a
/// double that is not finite).
pub fn plain_result(m: &Message) -> Option<Result<Box<RawValue>, ProtoError>> {
    let plain = m.method.is_empty() && m.params.is_none() && m.error.is_none();
    let id = m.id.as_ref().and_then(|id| id.kind.as_ref());
    let result = m.result.as_ref()?;
    if !plain || !matches!(id, Some(id::Kind::Number(_) | id::Kind::Text(_))) {
        return None;
    }
    // Room for binary contents as base64 (a third more), so a large result is written
    // without growing the buffer.
    let wire = prost::Message::encoded_len(result);
    let mut text = String::with_capacity(wire + wire / 3 + 64);
    if let Err(e) = crate::json_out::write_value(&mut text, result) {
        return Some(Err(e));
    }
    let raw = if raw_works() {
        serde_json::value::to_raw_value(&Raw(&text))
    } else {
        RawValue::from_string(text)
    };
    Some(raw.map_err(|e| ProtoError::Malformed(e.to_string())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::to_proto;
    use serde_json::json;

    #[test]
    fn raw_values_are_made_without_a_parse() {
        assert!(raw_works());
    }

    #[test]
    fn a_plain_result_is_the_result_of_the_json_text() {
        let blob = "QUJD".repeat(1000);
        for m in [
            json!({"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"f://x","blob": blob}]}}),
            json!({"jsonrpc":"2.0","id":"s","result":{"t":"a\"b\\c\u{1} é 😀","n":[1,-2.5,null,true,{}]}}),
            json!({"jsonrpc":"2.0","id":1,"result":[]}),
        ] {
            let proto = to_proto(&m).unwrap();
            let raw = plain_result(&proto).unwrap().unwrap();
            let text = crate::to_json_text(&proto).unwrap();
            let whole: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string(&whole["result"]).unwrap(), raw.get());
            let value: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
            assert_eq!(value, m["result"]);
        }
    }

    #[test]
    fn other_messages_have_none() {
        for m in [
            json!({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}),
            json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        ] {
            assert!(plain_result(&to_proto(&m).unwrap()).is_none(), "{m}");
        }
        // A result beside a method or an error is not plain: the JSON text says what is wrong.
        let mut m = to_proto(&json!({"jsonrpc":"2.0","id":1,"result":{}})).unwrap();
        m.method = "x".to_owned();
        assert!(plain_result(&m).is_none());
        let mut m = to_proto(&json!({"jsonrpc":"2.0","id":1,"result":{}})).unwrap();
        m.id = None;
        assert!(plain_result(&m).is_none());
        let mut m = to_proto(&json!({"jsonrpc":"2.0","id":1,"result":{}})).unwrap();
        m.result = Some(crate::Value {
            kind: Some(crate::messages::value::Kind::DoubleValue(f64::INFINITY)),
        });
        assert!(plain_result(&m).unwrap().is_err());
    }
}

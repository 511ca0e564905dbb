//! A protobuf message written straight out as JSON text, without building a
//! `serde_json::Value` tree in between: what a client does with an answer in protobuf before
//! the rest of the stack reads it like a JSON one. Binary contents are written as base64
//! straight into the text; everything else as serde_json writes it.

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
        return Err(malformed("neither a method nor an id"));
    }
    // Room for the binary contents as base64 (a third more), so a large answer is written
    // without growing the buffer.
    let wire = prost::Message::encoded_len(m);
    let mut out = Vec::with_capacity(wire + wire / 3 + 64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
    if let Some(id) = &m.id {
        out.extend_from_slice(br#","id":"#);
        write_id(&mut out, id)?;
    }
    if !m.method.is_empty() {
        out.extend_from_slice(br#","method":"#);
        scalar(&mut out, &m.method)?;
    }
    for (key, v) in [
        (&br#","params":"#[..], &m.params),
        (br#","result":"#, &m.result),
    ] {
        if let Some(v) = v {
            out.extend_from_slice(key);
            write_value(&mut out, v)?;
        }
    }
    if let Some(e) = &m.error {
        out.extend_from_slice(br#","error":"#);
        write_error(&mut out, e)?;
    }
    out.push(b'}');
    Ok(out)
}

fn malformed(why: &str) -> ProtoError {
    ProtoError::Malformed(why.to_owned())
}

/// A string or number, as serde_json writes it.
fn scalar<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<(), ProtoError> {
    serde_json::to_writer(out, v).map_err(|e| ProtoError::Malformed(e.to_string()))
}

fn write_id(out: &mut Vec<u8>, id: &Id) -> Result<(), ProtoError> {
    match &id.kind {
        Some(id::Kind::Number(n)) => scalar(out, n),
        Some(id::Kind::Text(t)) => scalar(out, t),
        Some(id::Kind::Null(_)) => {
            out.extend_from_slice(b"null");
            Ok(())
        }
        None => Err(malformed("an id without a kind")),
    }
}

fn write_error(out: &mut Vec<u8>, e: &Error) -> Result<(), ProtoError> {
    out.extend_from_slice(br#"{"code":"#);
    scalar(out, &e.code)?;
    out.extend_from_slice(br#","message":"#);
    scalar(out, &e.message)?;
    if let Some(d) = &e.data {
        out.extend_from_slice(br#","data":"#);
        write_value(out, d)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_value(out: &mut Vec<u8>, v: &Value) -> Result<(), ProtoError> {
    match &v.kind {
        None => return Err(malformed("a value without a kind")),
        Some(value::Kind::NullValue(_)) => out.extend_from_slice(b"null"),
        Some(value::Kind::BoolValue(b)) => {
            out.extend_from_slice(if *b { b"true" } else { b"false" });
        }
        Some(value::Kind::IntValue(i)) => scalar(out, i)?,
        Some(value::Kind::UintValue(u)) => scalar(out, u)?,
        Some(value::Kind::DoubleValue(f)) if f.is_finite() => scalar(out, f)?,
        Some(value::Kind::DoubleValue(_)) => return Err(malformed("a number that is not finite")),
        Some(value::Kind::StringValue(t)) => scalar(out, t)?,
        Some(value::Kind::BytesValue(b)) => {
            // Base64 has nothing to escape: written as it is, not checked byte by byte.
            out.push(b'"');
            crate::base64::encode_into(b, out);
            out.push(b'"');
        }
        Some(value::Kind::ListValue(l)) => write_list(out, l)?,
        Some(value::Kind::StructValue(o)) => write_struct(out, o)?,
    }
    Ok(())
}

fn write_list(out: &mut Vec<u8>, l: &ListValue) -> Result<(), ProtoError> {
    out.push(b'[');
    for (i, v) in l.values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_value(out, v)?;
    }
    out.push(b']');
    Ok(())
}

fn write_struct(out: &mut Vec<u8>, o: &Struct) -> Result<(), ProtoError> {
    out.push(b'{');
    for (i, f) in o.fields.iter().enumerate() {
        let Some(v) = &f.value else {
            return Err(malformed("a field without a value"));
        };
        if i > 0 {
            out.push(b',');
        }
        scalar(out, &f.key)?;
        out.push(b':');
        write_value(out, v)?;
    }
    out.push(b'}');
    Ok(())
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

//! A protobuf message written straight out as JSON text, without building a
//! `serde_json::Value` tree in between: what a client does with an answer in protobuf, and a
//! server with a request in it, before the rest of the stack reads it like a JSON one.
//! Binary contents are written as base64 straight into the text; everything else as
//! serde_json writes it.

use std::io;

use crate::messages::{Error, Id, ListValue, Message, Struct, Value, id, value};
use crate::{ProtoError, malformed};

/// The JSON text of a protobuf message: the same JSON as [`crate::from_proto`] gives, with
/// object keys in their order on the wire.
///
/// # Errors
/// [`ProtoError::Malformed`] for a message JSON-RPC cannot have: no method and no id, a
/// value without a kind, a field without a value, a double that is not finite.
pub fn to_json_text(m: &Message) -> Result<String, ProtoError> {
    json_text_of(m, prost::Message::encoded_len(m))
}

/// [`to_json_text`] of a message whose protobuf form is `wire` bytes long.
pub(crate) fn json_text_of(m: &Message, wire: usize) -> Result<String, ProtoError> {
    if m.method.is_empty() && m.id.is_none() {
        return Err(malformed("neither a method nor an id"));
    }
    // Room for the binary contents as base64 (a third more), so a large answer is written
    // without growing the buffer.
    let mut out = String::with_capacity(wire + wire / 3 + 64);
    out.push_str(r#"{"jsonrpc":"2.0""#);
    if let Some(id) = &m.id {
        out.push_str(r#","id":"#);
        write_id(&mut out, id)?;
    }
    if !m.method.is_empty() {
        out.push_str(r#","method":"#);
        scalar(&mut out, &m.method)?;
    }
    for (key, v) in [(r#","params":"#, &m.params), (r#","result":"#, &m.result)] {
        if let Some(v) = v {
            out.push_str(key);
            write_value(&mut out, v)?;
        }
    }
    if let Some(e) = &m.error {
        out.push_str(r#","error":"#);
        write_error(&mut out, e)?;
    }
    out.push('}');
    Ok(out)
}

/// A string or number, as serde_json writes it.
fn scalar<T: serde::Serialize + ?Sized>(out: &mut String, v: &T) -> Result<(), ProtoError> {
    serde_json::to_writer(Text(out), v).map_err(|e| ProtoError::Malformed(e.to_string()))
}

/// What serde_json writes, kept as text. Each piece it writes is whole UTF-8 (a run of the
/// string, an escape, a number): checking each is cheap, and the text needs no check after.
struct Text<'a>(&'a mut String);

impl io::Write for Text<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let piece =
            std::str::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        self.0.push_str(piece);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn write_id(out: &mut String, id: &Id) -> Result<(), ProtoError> {
    match &id.kind {
        Some(id::Kind::Number(n)) => scalar(out, n),
        Some(id::Kind::Text(t)) => scalar(out, t),
        Some(id::Kind::Null(_)) => {
            out.push_str("null");
            Ok(())
        }
        None => Err(malformed("an id without a kind")),
    }
}

fn write_error(out: &mut String, e: &Error) -> Result<(), ProtoError> {
    out.push_str(r#"{"code":"#);
    scalar(out, &e.code)?;
    out.push_str(r#","message":"#);
    scalar(out, &e.message)?;
    if let Some(d) = &e.data {
        out.push_str(r#","data":"#);
        write_value(out, d)?;
    }
    out.push('}');
    Ok(())
}

pub(crate) fn write_value(out: &mut String, v: &Value) -> Result<(), ProtoError> {
    match &v.kind {
        None => return Err(malformed("a value without a kind")),
        Some(value::Kind::NullValue(_)) => out.push_str("null"),
        Some(value::Kind::BoolValue(b)) => {
            out.push_str(if *b { "true" } else { "false" });
        }
        Some(value::Kind::IntValue(i)) => scalar(out, i)?,
        Some(value::Kind::UintValue(u)) => scalar(out, u)?,
        Some(value::Kind::DoubleValue(f)) if f.is_finite() => scalar(out, f)?,
        Some(value::Kind::DoubleValue(_)) => return Err(malformed("a number that is not finite")),
        Some(value::Kind::StringValue(t)) => scalar(out, t)?,
        Some(value::Kind::BytesValue(b)) => {
            // Base64 has nothing to escape: written as it is, not checked byte by byte.
            out.push('"');
            crate::base64::encode_into(b, out);
            out.push('"');
        }
        Some(value::Kind::ListValue(l)) => write_list(out, l)?,
        Some(value::Kind::StructValue(o)) => write_struct(out, o)?,
    }
    Ok(())
}

fn write_list(out: &mut String, l: &ListValue) -> Result<(), ProtoError> {
    out.push('[');
    for (i, v) in l.values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_value(out, v)?;
    }
    out.push(']');
    Ok(())
}

fn write_struct(out: &mut String, o: &Struct) -> Result<(), ProtoError> {
    out.push('{');
    for (i, f) in o.fields.iter().enumerate() {
        let Some(v) = &f.value else {
            return Err(malformed("a field without a value"));
        };
        if i > 0 {
            out.push(',');
        }
        scalar(out, &f.key)?;
        out.push(':');
        write_value(out, v)?;
    }
    out.push('}');
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
            json!({"jsonrpc": "2.0", "id": "q\"\\", "result": {"t\n": "a\"b\\c\u{1}\u{1f}\t é 😀 \u{2028}", "d": -0.5e-300}}),
        ];
        for m in messages {
            let proto = to_proto(&m).unwrap();
            let text = to_json_text(&proto).unwrap();
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
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

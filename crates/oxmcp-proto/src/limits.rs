//! Limits on what untrusted protobuf bytes may decode to, checked on the wire form before
//! anything is decoded.
//!
//! Protobuf is denser than JSON in the worst case: an empty list value or an empty field is
//! two bytes on the wire, and each becomes a decoded element of 32 to 56 bytes, then a JSON
//! value, then JSON text. A 4 MiB body of them used to decode into two million elements and
//! cost the server 80 to 170 MB, more than the worst 4 MiB JSON body (about 95 MB). Capping
//! the elements at a quarter of the body limit (one element per four bytes: what a list of
//! `null`s, numbers or empty lists costs in protobuf) keeps a protobuf message within what
//! the same request costs in JSON, and refuses the bodies built to amplify.
//!
//! [`scan`] walks the wire form of a message without allocating: it counts the elements
//! (the entries of repeated fields, each a slot of its own once decoded: list items, object
//! fields, the messages of a batch) and the nesting of messages, and refuses the bytes as
//! soon as either passes its limit.

use crate::{ProtoError, malformed};

/// Limits on one decoded protobuf message (or batch, or gRPC envelope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeLimits {
    /// Most elements in all: list items, object fields and batch entries.
    pub max_elements: usize,
    /// Most levels of nesting (a JSON array or object is two: its `Value` and its
    /// `ListValue` or `Struct`).
    pub max_depth: usize,
}

/// The most levels of nesting: prost's own recursion limit.
pub const MAX_DEPTH: usize = 100;

impl DecodeLimits {
    /// The limits for messages of at most `max_bytes`: one element per four bytes (a
    /// protobuf message then costs no more to decode than the same message in JSON), at
    /// least 1,024, and [`MAX_DEPTH`] levels.
    pub const fn for_bytes(max_bytes: usize) -> Self {
        let elements = max_bytes / 4;
        Self {
            max_elements: if elements < 1024 { 1024 } else { elements },
            max_depth: MAX_DEPTH,
        }
    }

    /// These limits with at most `max_elements` elements.
    #[must_use]
    pub const fn max_elements(mut self, max_elements: usize) -> Self {
        self.max_elements = max_elements;
        self
    }

    /// These limits with at most `max_depth` levels of nesting.
    #[must_use]
    pub const fn max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }
}

impl Default for DecodeLimits {
    /// The limits for 4 MiB messages (the default HTTP body limit): 1,048,576 elements,
    /// [`MAX_DEPTH`] levels.
    fn default() -> Self {
        Self::for_bytes(4 * 1024 * 1024)
    }
}

/// The message types of `mcp.proto`, for the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// A JSON-RPC `Message`.
    Message,
    /// A `Batch` of messages.
    Batch,
    /// A gRPC `Envelope`.
    Envelope,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Envelope,
    Batch,
    Message,
    Id,
    Error,
    Value,
    List,
    Struct,
    Field,
}

/// Whether field `number` of a `kind` is a repeated one, each entry an element.
fn repeated(kind: Kind, number: u64) -> bool {
    matches!((kind, number), (Kind::List | Kind::Struct | Kind::Batch, 1))
}

/// The message type of field `number` of a `kind`, when it is a message.
fn child(kind: Kind, number: u64) -> Option<Kind> {
    match (kind, number) {
        (Kind::Envelope, 2) | (Kind::Batch, 1) => Some(Kind::Message),
        (Kind::Message, 1) => Some(Kind::Id),
        (Kind::Message, 3 | 4) | (Kind::Error, 3) | (Kind::List, 1) | (Kind::Field, 2) => {
            Some(Kind::Value)
        }
        (Kind::Message, 5) => Some(Kind::Error),
        (Kind::Value, 8) => Some(Kind::List),
        (Kind::Value, 9) => Some(Kind::Struct),
        (Kind::Struct, 1) => Some(Kind::Field),
        _ => None,
    }
}

/// Checks protobuf bytes of a `root` against `limits` without decoding them.
///
/// # Errors
/// [`ProtoError::TooLarge`] past a limit; [`ProtoError::Malformed`] for bytes that are not
/// protobuf (a truncated field, a group).
pub fn scan(bytes: &[u8], root: Root, limits: &DecodeLimits) -> Result<(), ProtoError> {
    let kind = match root {
        Root::Message => Kind::Message,
        Root::Batch => Kind::Batch,
        Root::Envelope => Kind::Envelope,
    };
    let mut walk = Walk {
        limits,
        elements: 0,
    };
    walk.message(bytes, kind, 0)
}

struct Walk<'a> {
    limits: &'a DecodeLimits,
    elements: usize,
}

impl Walk<'_> {
    fn message(&mut self, mut bytes: &[u8], kind: Kind, depth: usize) -> Result<(), ProtoError> {
        while !bytes.is_empty() {
            let key = varint(&mut bytes)?;
            match key & 7 {
                0 => {
                    varint(&mut bytes)?;
                }
                1 => bytes = skip(bytes, 8)?,
                5 => bytes = skip(bytes, 4)?,
                2 => {
                    let len = usize::try_from(varint(&mut bytes)?)
                        .map_err(|_| malformed("a length past the end"))?;
                    let inner = bytes
                        .get(..len)
                        .ok_or_else(|| malformed("a length past the end"))?;
                    bytes = &bytes[len..];
                    if let Some(inner_kind) = child(kind, key >> 3) {
                        self.enter(depth + 1, repeated(kind, key >> 3))?;
                        self.message(inner, inner_kind, depth + 1)?;
                    }
                }
                _ => return Err(malformed("a group or an unknown wire type")),
            }
        }
        Ok(())
    }

    /// Enters a message at `depth`, one more element if `counted`.
    fn enter(&mut self, depth: usize, counted: bool) -> Result<(), ProtoError> {
        self.elements += usize::from(counted);
        if self.elements > self.limits.max_elements {
            return Err(ProtoError::TooLarge(format!(
                "the message has more than {} values (fields, list items and the like); \
                 send it as JSON or split it",
                self.limits.max_elements
            )));
        }
        if depth > self.limits.max_depth {
            return Err(ProtoError::TooLarge(format!(
                "the message nests values deeper than {} levels",
                self.limits.max_depth
            )));
        }
        Ok(())
    }
}

fn skip(bytes: &[u8], n: usize) -> Result<&[u8], ProtoError> {
    bytes
        .get(n..)
        .ok_or_else(|| malformed("a fixed-size field past the end"))
}

/// Reads a base-128 varint (at most 10 bytes).
fn varint(bytes: &mut &[u8]) -> Result<u64, ProtoError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Ok(value);
        }
    }
    Err(malformed("a varint that does not end"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{decode, decode_with, encode};
    use serde_json::{Value as Json, json};

    fn call(params: Json) -> Vec<u8> {
        encode(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
            .unwrap()
    }

    #[test]
    fn counts_list_items_and_fields() {
        // Two fields and three list items (the empty list holds none): five elements.
        let bytes = call(json!({"a": [1, "two", []], "b": null}));
        let exact = DecodeLimits::default().max_elements(5);
        assert!(scan(&bytes, Root::Message, &exact).is_ok());
        let short = exact.max_elements(4);
        let e = scan(&bytes, Root::Message, &short).unwrap_err();
        assert!(matches!(e, ProtoError::TooLarge(_)), "{e}");
        assert!(e.to_string().contains("more than 4 values"), "{e}");
    }

    #[test]
    fn a_body_of_empty_elements_is_refused_before_decoding() {
        // The default limits are those of a 4 MiB body: one element per four bytes.
        assert_eq!(DecodeLimits::default().max_elements, 1 << 20);
        // An `arguments` struct of empty fields (2 bytes each) fills 4 MiB with two million.
        let mut fields = Vec::new();
        for _ in 0..(2 << 20) - 100 {
            fields.extend_from_slice(&[0x0a, 0x00]);
        }
        let value = [&[0x4a][..], &varint_bytes(fields.len()), &fields].concat();
        let params = [&[0x1a][..], &varint_bytes(value.len()), &value].concat();
        let bytes = [&[0x12, 0x01, b'x'][..], &params].concat();
        assert!(bytes.len() <= 4 << 20);
        let e = decode(&bytes).unwrap_err();
        assert!(matches!(e, ProtoError::TooLarge(_)), "{e}");
        // Lists of empty lists (4 bytes each) fit the cap exactly when they fill the body.
        let items: Vec<Json> = (0..1000).map(|_| json!([])).collect();
        let small = call(json!({"message": items}));
        assert!(decode_with(&small, &DecodeLimits::for_bytes(small.len())).is_ok());
    }

    #[test]
    fn ordinary_messages_pass() {
        let numbers: Vec<u32> = (0..100_000).collect();
        let bytes = call(json!({"name": "sum", "arguments": {"numbers": numbers}}));
        let v = decode(&bytes).unwrap();
        assert_eq!(v["params"]["arguments"]["numbers"][99_999], 99_999);
        // The limits scale with the message size they are for.
        assert!(decode_with(&bytes, &DecodeLimits::for_bytes(bytes.len())).is_ok());
        assert_eq!(
            DecodeLimits::for_bytes(10).max_elements,
            1024,
            "never below 1,024"
        );
    }

    #[test]
    fn nesting_is_capped() {
        let mut deep = json!(1);
        for _ in 0..60 {
            deep = json!([deep]);
        }
        let e = decode(&call(deep)).unwrap_err();
        assert!(e.to_string().contains("deeper than 100 levels"), "{e}");
        let mut fine = json!(1);
        for _ in 0..40 {
            fine = json!([fine]);
        }
        assert!(decode(&call(fine)).is_ok());
    }

    #[test]
    fn bad_bytes_are_malformed_not_a_panic() {
        for bytes in [&[0x1a, 0x05, 0x4a][..], &[0xff; 11], &[0x0b], &[0x09, 1, 2]] {
            let e = scan(bytes, Root::Message, &DecodeLimits::default()).unwrap_err();
            assert!(matches!(e, ProtoError::Malformed(_)), "{bytes:?}: {e}");
        }
    }

    fn varint_bytes(mut n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }
}

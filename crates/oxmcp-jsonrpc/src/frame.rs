//! Frames: what one read of a transport holds, a single message or a batch (a JSON array of
//! messages, allowed only by protocol 2025-03-26).

use std::fmt;

use serde::de::{Deserializer as _, Error as _, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::message::{DecodeError, Message};

/// What one read of the transport holds: a single message or a batch.
#[derive(Debug)]
pub enum Frame {
    /// One message (or why it could not be read).
    Single(Result<Message, DecodeError>),
    /// A JSON array of messages, each decoded on its own.
    Batch(Vec<Result<Message, DecodeError>>),
}

impl Frame {
    /// Decodes a frame, a batch of any length. An empty array is a single -32600 error.
    ///
    /// A batch's entries are all decoded, so memory grows with their number: on input from
    /// a peer, use [`Frame::decode_limited`].
    pub fn decode(bytes: &[u8]) -> Frame {
        Self::decode_limited(bytes, usize::MAX)
    }

    /// Decodes a frame holding at most `max_entries` batch entries. A longer batch is a
    /// single -32600 error ("batch of more than N entries", `"id": null`), found while
    /// parsing: entries past the limit are not decoded, so a batch of millions of entries
    /// costs no more memory than its text. An empty array is a single -32600 error.
    ///
    /// The text after the first `max_entries + 1` entries is not parsed: an over-long batch
    /// whose tail is not valid JSON is reported as over the limit, not as a parse error
    /// (it is still checked to be UTF-8).
    pub fn decode_limited(bytes: &[u8], max_entries: usize) -> Frame {
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                return Frame::Single(Err(DecodeError::parse(format!("invalid UTF-8: {e}"))));
            }
        };
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first != Some(b'[') {
            return Frame::Single(Message::decode_str(text));
        }
        let mut over = false;
        let mut de = serde_json::Deserializer::from_str(text);
        let items = de
            .deserialize_seq(Entries {
                max: max_entries,
                over: &mut over,
            })
            .and_then(|items| de.end().map(|()| items));
        match items {
            Ok(items) if items.is_empty() => {
                Frame::Single(Err(DecodeError::invalid(None, true, "empty batch")))
            }
            Ok(items) => Frame::Batch(items),
            Err(_) if over => Frame::Single(Err(DecodeError::invalid(
                None,
                true,
                format!("batch of more than {max_entries} entries"),
            ))),
            Err(e) => Frame::Single(Err(DecodeError::parse(e))),
        }
    }
}

/// Reads a batch entry by entry, each borrowed from the input, and stops after `max`.
struct Entries<'o> {
    max: usize,
    over: &'o mut bool,
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = Vec<Result<Message, DecodeError>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            if items.len() == self.max {
                *self.over = true;
                return Err(A::Error::custom("batch over the limit"));
            }
            items.push(Message::decode_str(raw.get()));
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(f: &Frame) -> Option<i32> {
        match f {
            Frame::Single(Err(e)) => Some(e.error.code.0),
            _ => None,
        }
    }

    #[test]
    fn batches() {
        assert_eq!(code(&Frame::decode(b"[]")), Some(-32600));
        let Frame::Batch(items) = Frame::decode(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},1]"#,
        ) else {
            panic!("batch expected")
        };
        assert_eq!(items.len(), 3);
        assert!(items[0].is_ok() && items[1].is_ok() && items[2].is_err());
        assert_eq!(code(&Frame::decode(b"[1,")), Some(-32700));
        assert_eq!(code(&Frame::decode(b"[1] x")), Some(-32700));
    }

    #[test]
    fn the_entry_limit_is_checked_while_parsing() {
        let ones = |n: usize| format!("[{}]", vec!["1"; n].join(","));
        assert!(matches!(
            Frame::decode_limited(ones(3).as_bytes(), 3),
            Frame::Batch(items) if items.len() == 3
        ));
        let over = Frame::decode_limited(ones(4).as_bytes(), 3);
        let Frame::Single(Err(e)) = &over else {
            panic!("one error expected: {over:?}")
        };
        assert_eq!((e.error.code.0, e.id.as_ref()), (-32600, None));
        assert_eq!(e.error.data, Some("batch of more than 3 entries".into()));
        // Parsing stopped at the fourth entry: the rest is never read.
        let bad_tail = Frame::decode_limited(b"[1,1,1,1,{oops", 3);
        assert_eq!(code(&bad_tail), Some(-32600));
        assert_eq!(code(&Frame::decode_limited(b"[1,1,{oops", 3)), Some(-32700));
        // Not a batch: the limit does not apply.
        assert!(matches!(
            Frame::decode_limited(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, 0),
            Frame::Single(Ok(_))
        ));
        assert_eq!(code(&Frame::decode_limited(b"[1]", 0)), Some(-32600));
        assert_eq!(code(&Frame::decode_limited(b"[1,\xff]", 0)), Some(-32700));
    }
}

//! The protobuf form of MCP's JSON-RPC messages, as `proto/mcp.proto` describes: the body
//! of `application/mcp+protobuf`, and the protobuf form of the gRPC envelope. Imports no
//! other crate of ours.
//!
//! [`to_proto`] and [`from_proto`] convert between a JSON-RPC message as JSON and its
//! protobuf form without loss: JSON → protobuf → JSON gives the same JSON value (numbers,
//! nulls, nesting, key order, unknown fields and `_meta` included). Binary contents (a
//! resource's `blob`, image and audio `data`) travel as raw bytes instead of base64.
//! [`to_proto_text`] and [`encode_json_text`] read JSON text straight into the protobuf
//! form, and [`to_json_text`] writes it out again, with no `serde_json::Value` in between.
//!
//! ```
//! let json = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
//! let bytes = oxmcp_proto::encode(&json).unwrap();
//! assert_eq!(oxmcp_proto::decode(&bytes).unwrap(), json);
//! ```
//!
//! Decoding untrusted bytes is bounded: [`decode`], [`decode_batch`] and
//! [`decode_envelope`] first walk the wire form and refuse, before decoding anything, a
//! message with more elements or deeper nesting than its [`DecodeLimits`] allow (by default
//! one element per four bytes of a 4 MiB message; see the `limits` module).

mod base64;
mod convert;
mod json_in;
mod json_out;
mod limits;
mod long_strings;
mod messages;
mod raw_result;

pub use convert::{from_proto, to_proto};
pub use json_in::{encode_json_text, to_proto_text};
pub use json_out::to_json_text;
pub use limits::{DecodeLimits, MAX_DEPTH, Root, scan};
pub use messages::*;
pub use raw_result::plain_result;

use prost::Message as _;

/// The media type of the protobuf encoding over HTTP.
pub const MEDIA_TYPE: &str = "application/mcp+protobuf";

/// The SSE event name of a message in the protobuf encoding: its `data` is the base64 of
/// the protobuf message (SSE is text). Plain JSON messages keep the default event name.
pub const SSE_EVENT: &str = "mcp+protobuf";

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The JSON is not a JSON-RPC message (or batch) this encoding can carry.
    #[error("not a JSON-RPC message: {0}")]
    NotAMessage(String),
    /// The bytes are not a protobuf `Message` (or `Batch`).
    #[error("malformed protobuf: {0}")]
    Malformed(String),
    /// The bytes would decode into more elements, or deeper nesting, than the
    /// [`DecodeLimits`] allow; nothing was decoded.
    #[error("protobuf message too large: {0}")]
    TooLarge(String),
}

/// [`ProtoError::Malformed`] saying `why`.
pub(crate) fn malformed(why: &str) -> ProtoError {
    ProtoError::Malformed(why.to_owned())
}

/// The protobuf bytes of a JSON-RPC message, or of a batch (a JSON array).
///
/// # Errors
/// [`ProtoError::NotAMessage`] for JSON that is not a message.
pub fn encode(json: &serde_json::Value) -> Result<Vec<u8>, ProtoError> {
    match json {
        serde_json::Value::Array(items) => {
            let messages = items.iter().map(to_proto).collect::<Result<Vec<_>, _>>()?;
            Ok(Batch { messages }.encode_to_vec())
        }
        one => Ok(to_proto(one)?.encode_to_vec()),
    }
}

/// The JSON of a protobuf `Message`, within the default [`DecodeLimits`].
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Message`, [`ProtoError::TooLarge`]
/// past the limits.
pub fn decode(bytes: &[u8]) -> Result<serde_json::Value, ProtoError> {
    decode_with(bytes, &DecodeLimits::default())
}

/// The JSON of a protobuf `Message`, within `limits`.
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Message`, [`ProtoError::TooLarge`]
/// past the limits.
pub fn decode_with(bytes: &[u8], limits: &DecodeLimits) -> Result<serde_json::Value, ProtoError> {
    scan(bytes, Root::Message, limits)?;
    let m = Message::decode(bytes).map_err(|e| ProtoError::Malformed(e.to_string()))?;
    from_proto(&m)
}

/// The JSON text of a protobuf `Message`, within `limits`, written without a
/// `serde_json::Value` in between ([`to_json_text`]): what a server hands on as if the
/// message had come as JSON, at no more cost than that.
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Message`, [`ProtoError::TooLarge`]
/// past the limits.
pub fn decode_json_text(bytes: &[u8], limits: &DecodeLimits) -> Result<String, ProtoError> {
    json_out::json_text_of(&decode_message(bytes, limits)?, bytes.len())
}

/// A protobuf `Message`, within `limits`.
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Message`, [`ProtoError::TooLarge`]
/// past the limits.
pub fn decode_message(bytes: &[u8], limits: &DecodeLimits) -> Result<Message, ProtoError> {
    scan(bytes, Root::Message, limits)?;
    Message::decode(bytes).map_err(|e| ProtoError::Malformed(e.to_string()))
}

/// A gRPC `Envelope`, within `limits`.
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not an `Envelope`, [`ProtoError::TooLarge`]
/// past the limits.
pub fn decode_envelope(bytes: &[u8], limits: &DecodeLimits) -> Result<Envelope, ProtoError> {
    scan(bytes, Root::Envelope, limits)?;
    Envelope::decode(bytes).map_err(|e| ProtoError::Malformed(e.to_string()))
}

/// The JSON array of a protobuf `Batch`, within the default [`DecodeLimits`].
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Batch`, [`ProtoError::TooLarge`]
/// past the limits.
pub fn decode_batch(bytes: &[u8]) -> Result<serde_json::Value, ProtoError> {
    scan(bytes, Root::Batch, &DecodeLimits::default())?;
    let b = Batch::decode(bytes).map_err(|e| ProtoError::Malformed(e.to_string()))?;
    let items = b
        .messages
        .iter()
        .map(from_proto)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(serde_json::Value::Array(items))
}

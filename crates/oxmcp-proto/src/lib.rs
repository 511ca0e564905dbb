//! The protobuf form of MCP's JSON-RPC messages, as `proto/mcp.proto` describes: the body
//! of `application/mcp+protobuf`, and the protobuf form of the gRPC envelope.
//!
//! [`to_proto`] and [`from_proto`] convert between a JSON-RPC message as JSON and its
//! protobuf form without loss: JSON → protobuf → JSON gives the same JSON value (numbers,
//! nulls, nesting, key order, unknown fields and `_meta` included). Binary contents (a
//! resource's `blob`, image and audio `data`) travel as raw bytes instead of base64.
//!
//! ```
//! let json = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
//! let bytes = oxmcp_proto::encode(&json).unwrap();
//! assert_eq!(oxmcp_proto::decode(&bytes).unwrap(), json);
//! ```

mod convert;
mod messages;

pub use convert::{from_proto, to_proto};
pub use messages::*;

use prost::Message as _;

/// The media type of the protobuf encoding over HTTP.
pub const MEDIA_TYPE: &str = "application/mcp+protobuf";

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The JSON is not a JSON-RPC message (or batch) this encoding can carry.
    #[error("not a JSON-RPC message: {0}")]
    NotAMessage(String),
    /// The bytes are not a protobuf `Message` (or `Batch`).
    #[error("malformed protobuf: {0}")]
    Malformed(String),
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

/// The JSON of a protobuf `Message`.
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Message`.
pub fn decode(bytes: &[u8]) -> Result<serde_json::Value, ProtoError> {
    let m = Message::decode(bytes).map_err(|e| ProtoError::Malformed(e.to_string()))?;
    from_proto(&m)
}

/// The JSON array of a protobuf `Batch`.
///
/// # Errors
/// [`ProtoError::Malformed`] for bytes that are not a `Batch`.
pub fn decode_batch(bytes: &[u8]) -> Result<serde_json::Value, ProtoError> {
    let b = Batch::decode(bytes).map_err(|e| ProtoError::Malformed(e.to_string()))?;
    let items = b
        .messages
        .iter()
        .map(from_proto)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(serde_json::Value::Array(items))
}

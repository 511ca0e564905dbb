//! Strict JSON-RPC 2.0 for the Model Context Protocol: ids, messages, error objects, batch
//! frames, and the transport boundary ([`Inbound`], [`Outbound`], [`TransportError`]).
//! Imports no other crate of ours.
//!
//! Decoding is strict where laxness has bitten other SDKs: a response with both `result` and
//! `error` is rejected, null request ids are rejected, and every decode error says whether
//! it can be answered (and with which id).
//!
//! ```
//! use oxmcp_jsonrpc::{Message, RequestId};
//! let m = Message::decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(m.method(), Some("ping"));
//! ```

pub mod error;
pub mod frame;
pub mod id;
pub mod message;
pub mod transport;

pub use error::{ErrorCode, ErrorObject, echo, printable};
pub use frame::Frame;
pub use id::RequestId;
pub use message::{
    DecodeError, MAX_ID_LEN, Message, Notification, RawJson, Request, Response, encode_batch,
    parse_params, to_raw,
};
pub use serde_json::value::RawValue;
pub use transport::{
    Answered, Decoded, Failure, Inbound, OutKind, OutMessage, Outbound, TransportContext,
    TransportError,
};

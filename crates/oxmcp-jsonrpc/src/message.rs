//! JSON-RPC 2.0 messages with strict decoding.
//!
//! Params and results stay as raw JSON ([`RawValue`]) until a handler asks for a type, so the
//! message loop parses each byte once.

use serde::de::{Deserializer, Error as _};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{ErrorCode, ErrorObject};
use crate::id::RequestId;

/// Raw JSON text.
pub type RawJson = Box<RawValue>;

/// A request: expects a response with the same id.
#[derive(Debug, Clone)]
pub struct Request {
    /// Request id.
    pub id: RequestId,
    /// Method name.
    pub method: String,
    /// Params (an object in MCP), if any.
    pub params: Option<RawJson>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// Method name.
    pub method: String,
    /// Params, if any.
    pub params: Option<RawJson>,
}

/// A response: a result or an error for one request id.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request it answers; `None` only for errors about unreadable requests.
    pub id: Option<RequestId>,
    /// The outcome.
    pub outcome: Result<RawJson, ErrorObject>,
}

/// Any JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// Why a message could not be decoded, with the id when it could be recovered so the error
/// can be answered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct DecodeError {
    /// The id of the offending request, when known.
    pub id: Option<RequestId>,
    /// Whether the message looked like a request (so an error response is owed).
    pub answerable: bool,
    /// The error to answer with.
    pub error: ErrorObject,
}

impl DecodeError {
    pub(crate) fn parse(e: impl std::fmt::Display) -> Self {
        Self {
            id: None,
            answerable: true,
            error: ErrorObject::parse_error(e),
        }
    }
    pub(crate) fn invalid(
        id: Option<RequestId>,
        answerable: bool,
        detail: impl std::fmt::Display,
    ) -> Self {
        Self {
            id,
            answerable,
            error: ErrorObject::invalid_request(detail),
        }
    }
}

/// Whether the text holds a `\uD800`..`\uDFFF` escape (any case).
fn has_surrogate_escape(bytes: &[u8]) -> bool {
    // Most messages have no backslash at all: one fast pass (memchr's, many bytes a step)
    // finds none. A byte-at-a-time search was a tenth of a client's work on a 1 MiB answer.
    let mut rest = bytes;
    while let Some(i) = memchr::memchr(b'\\', rest) {
        if let [_, b'u', d, x, ..] = rest[i..]
            && d | 0x20 == b'd'
            && matches!(x | 0x20, b'8' | b'9' | b'a'..=b'f')
        {
            return true;
        }
        // Skip the escaped character too, so `\\u` is not read as an escape.
        rest = rest.get(i + 2..).unwrap_or_default();
    }
    false
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The members of a message, borrowed from the input: nothing is copied or allocated until
/// the message is known to be valid.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn raw_value(raw: &RawValue) -> Value {
    // The raw text was validated by the parser that produced it.
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

impl Message {
    /// Decodes one message from JSON bytes.
    ///
    /// # Errors
    /// -32700 for bytes that are not JSON (or not UTF-8), -32600 for JSON that is not a valid
    /// message (wrong `jsonrpc`, null or non-scalar id, non-string method, scalar params,
    /// a response with both or neither of `result` and `error`).
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        // Members we skip are not decoded, so their bytes would go unchecked: JSON text is
        // UTF-8 as a whole (found by fuzzing: invalid UTF-8 inside an unknown member).
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::decode_str(text),
            Err(e) => Err(DecodeError::parse(format!("invalid UTF-8: {e}"))),
        }
    }

    /// Decodes one message from a JSON string. It is parsed as text, so serde_json does not
    /// check the UTF-8 of its strings and raw members again (on a 1 MiB answer, one more
    /// pass over its bytes).
    ///
    /// # Errors
    /// As [`Message::decode`].
    pub fn decode_str(text: &str) -> Result<Message, DecodeError> {
        let bytes = text.as_bytes();
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first != Some(b'{') {
            // Valid JSON that is not an object is an invalid request; invalid JSON a parse error.
            return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Err(DecodeError::invalid(
                    None,
                    true,
                    "message is not a JSON object",
                )),
                Err(e) => Err(DecodeError::parse(e)),
            };
        }
        let wire: Wire<'_> = match serde_json::from_str(text) {
            Ok(w) => w,
            Err(e) if e.is_data() => {
                // Well-formed JSON with a member of the wrong type (e.g. non-object params).
                // Not through `Value`, which keeps the last of duplicate keys: an id given
                // twice is not recovered at all.
                #[derive(Deserialize)]
                struct IdOnly<'a> {
                    #[serde(borrow)]
                    id: Option<&'a RawValue>,
                }
                let id = serde_json::from_str::<IdOnly<'_>>(text)
                    .ok()
                    .and_then(|v| v.id)
                    .and_then(|raw| RequestId::from_value(&raw_value(raw)))
                    .filter(|id| !matches!(id, RequestId::String(s) if s.len() > MAX_ID_LEN));
                return Err(DecodeError::invalid(id, true, e));
            }
            Err(e) => return Err(DecodeError::parse(e)),
        };
        // Raw params and results are not decoded here, so their escapes are unchecked; a
        // lone UTF-16 surrogate would be invalid Unicode downstream. Rare: check only then.
        if has_surrogate_escape(bytes)
            && let Err(e) = serde_json::from_str::<Value>(text)
        {
            return Err(DecodeError::parse(e));
        }
        Self::from_wire(wire)
    }

    fn from_wire(w: Wire<'_>) -> Result<Message, DecodeError> {
        let id = wire_id(&w)?;
        check_version(&w, id.as_ref())?;
        match w.method {
            Some(method) => request_from_wire(
                method,
                w.params,
                w.result.is_some() || w.error.is_some(),
                id,
            ),
            None => response_from_wire(w.result, w.error, id),
        }
    }
}

/// The longest string id a message may carry, in bytes. Ids travel with every answer and
/// are kept while their request runs (and, on a scaled-out server, in the shared store): a
/// longer one is refused as an invalid request (answered with `"id": null`). Real clients
/// use numbers or short strings (a UUID is 36 bytes).
pub const MAX_ID_LEN: usize = 1024;

/// The id of a message: a string or an integer, or null on an error response to input
/// whose id could not be read.
fn wire_id(w: &Wire<'_>) -> Result<Option<RequestId>, DecodeError> {
    match w.id.map(raw_value) {
        None => Ok(None),
        // An error response to input whose id could not be read (found by fuzzing: we
        // wrote this form but did not read it back).
        Some(Value::Null) if w.method.is_none() && w.error.is_some() && w.result.is_none() => {
            Ok(None)
        }
        Some(Value::String(s)) if s.len() > MAX_ID_LEN => Err(DecodeError::invalid(
            None,
            w.method.is_some(),
            format!(
                "id is a string of {} bytes, over the limit of {MAX_ID_LEN}",
                s.len()
            ),
        )),
        Some(v) => match RequestId::from_value(&v) {
            Some(id) => Ok(Some(id)),
            None => Err(DecodeError::invalid(
                None,
                w.method.is_some(),
                format!("id must be a string or an integer, got {v}"),
            )),
        },
    }
}

/// `"jsonrpc": "2.0"`, exactly.
fn check_version(w: &Wire<'_>, id: Option<&RequestId>) -> Result<(), DecodeError> {
    let version = w.jsonrpc.map(|raw| match raw.get() {
        r#""2.0""# => Value::String("2.0".to_owned()),
        _ => raw_value(raw),
    });
    match &version {
        Some(Value::String(s)) if s == "2.0" => Ok(()),
        other => {
            let got = other
                .as_ref()
                .map_or("nothing".to_owned(), Value::to_string);
            Err(DecodeError::invalid(
                id.cloned(),
                w.method.is_some() || w.result.is_none(),
                format!("jsonrpc must be \"2.0\", got {got}"),
            ))
        }
    }
}

/// A request (with an id) or a notification: a string method, no result or error, and
/// params that are an object or an array.
fn request_from_wire(
    method: &RawValue,
    params: Option<&RawValue>,
    has_outcome: bool,
    id: Option<RequestId>,
) -> Result<Message, DecodeError> {
    let Value::String(method) = raw_value(method) else {
        return Err(DecodeError::invalid(id, true, "method must be a string"));
    };
    if has_outcome {
        return Err(DecodeError::invalid(
            id,
            true,
            "a request must not carry result or error",
        ));
    }
    if let Some(p) = params {
        let c = p.get().as_bytes().first().copied();
        if !matches!(c, Some(b'{' | b'[')) {
            return Err(DecodeError::invalid(
                id,
                true,
                "params must be an object or an array",
            ));
        }
    }
    let params = params.map(ToOwned::to_owned);
    Ok(match id {
        Some(id) => Message::Request(Request { id, method, params }),
        None => Message::Notification(Notification { method, params }),
    })
}

/// A response: exactly one of `result` and `error`, and an id unless it is an error.
fn response_from_wire(
    result: Option<&RawValue>,
    error: Option<&RawValue>,
    id: Option<RequestId>,
) -> Result<Message, DecodeError> {
    let outcome = match (result, error) {
        (Some(r), None) => Ok(r.to_owned()),
        (None, Some(e)) => match serde_json::from_str::<ErrorObject>(e.get()) {
            Ok(e) => Err(e),
            Err(e) => {
                return Err(DecodeError::invalid(
                    None,
                    true,
                    format!("bad error object: {e}"),
                ));
            }
        },
        (Some(_), Some(_)) => {
            return Err(DecodeError::invalid(
                None,
                true,
                "response has both result and error",
            ));
        }
        (None, None) => {
            // Neither a request nor a response: Invalid Request with `"id": null` (an
            // id here may be one of ours, from a broken response, so it is not echoed).
            return Err(DecodeError::invalid(
                None,
                true,
                "message has neither method nor result/error",
            ));
        }
    };
    if id.is_none() && outcome.is_ok() {
        return Err(DecodeError::invalid(None, true, "response without id"));
    }
    Ok(Message::Response(Response { id, outcome }))
}

impl Message {
    /// Encodes the message as compact JSON.
    pub fn encode(&self) -> String {
        if let Message::Response(Response {
            id,
            outcome: Ok(result),
        }) = self
        {
            return encode_result(id.as_ref(), result);
        }
        // Serializing our own types cannot fail: all keys are strings, raw values are valid.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"encode failed: {}"}}}}"#,
                e.to_string().replace('"', "'")
            )
        })
    }

    /// A request with typed params.
    ///
    /// # Errors
    /// If `params` cannot be serialized.
    pub fn request<P: Serialize>(
        id: RequestId,
        method: &str,
        params: &P,
    ) -> Result<Message, serde_json::Error> {
        Ok(Message::Request(Request {
            id,
            method: method.to_owned(),
            params: Some(to_raw(params)?),
        }))
    }

    /// A notification with typed params.
    ///
    /// # Errors
    /// If `params` cannot be serialized.
    pub fn notification<P: Serialize>(
        method: &str,
        params: &P,
    ) -> Result<Message, serde_json::Error> {
        Ok(Message::Notification(Notification {
            method: method.to_owned(),
            params: Some(to_raw(params)?),
        }))
    }

    /// A success response.
    pub fn result(id: RequestId, result: RawJson) -> Message {
        Message::Response(Response {
            id: Some(id),
            outcome: Ok(result),
        })
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Message {
        Message::Response(Response {
            id,
            outcome: Err(error),
        })
    }

    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

/// Serializes a value into raw JSON. What serde_json writes is taken as it is, not parsed
/// again: a `Serialize` implementation that breaks serde's rules (a map key without its
/// value) would give text that is not JSON.
///
/// # Errors
/// If the value cannot be serialized.
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, serde_json::Error> {
    // What serde_json writes is JSON: not parsed again to check it.
    serde_json::value::to_raw_value(value)
}

/// Parses raw params into a type; absent params parse as `{}`.
///
/// # Errors
/// -32602 naming what was wrong.
pub fn parse_params<T: serde::de::DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    let text = params.map_or("{}", RawValue::get);
    serde_json::from_str(text)
        .map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}")))
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request(r) => {
                m.serialize_entry("id", &r.id)?;
                m.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                m.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                m.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(v) => m.serialize_entry("result", v)?,
                    Err(e) => m.serialize_entry("error", e)?,
                }
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        Message::from_wire(w).map_err(|e| D::Error::custom(e.error.data.unwrap_or(Value::Null)))
    }
}

/// A success response's text, the same as serde's (`jsonrpc`, `id`, `result`), in a buffer
/// sized for it once: through serde, a large result filled its buffer exactly and the closing
/// brace then copied it all into one twice its size.
fn encode_result(id: Option<&RequestId>, result: &RawValue) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const MIDDLE: &str = r#","result":"#;
    // Every answer comes here: a number id (the common case) is written from the stack.
    let mut digits = itoa::Buffer::new();
    let quoted;
    let id: &str = match id {
        Some(RequestId::Number(n)) => digits.format(*n),
        Some(RequestId::String(s)) => {
            quoted = serde_json::to_string(s).unwrap_or_else(|_| "null".to_owned());
            &quoted
        }
        None => "null",
    };
    let result = result.get();
    let mut line = String::with_capacity(HEAD.len() + id.len() + MIDDLE.len() + result.len() + 1);
    line.push_str(HEAD);
    line.push_str(id);
    line.push_str(MIDDLE);
    line.push_str(result);
    line.push('}');
    line
}

/// Encodes several messages as one JSON array.
pub fn encode_batch(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap_or_else(|_| "[]".to_owned())
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;

//! [`RequestMeta`]: what a request says about itself outside its method's own params (its
//! `_meta`, the multi round-trip `requestState` and `inputResponses`, the name it is about),
//! read from the params text in one pass that skips everything else (the arguments).

use std::cell::Cell;
use std::fmt;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::common::{JsonObject, meta_keys};

/// The part of a request's params that the layers around its handler read: `_meta` (the
/// era, client info and capabilities, log level, progress token, trace context of a
/// 2026-07-28 request), `requestState` and `inputResponses` (multi round-trip retries), and
/// what the request is about (`name`, `uri`, `taskId`).
///
/// Built once per request by [`RequestMeta::parse`]; the method's typed params are parsed
/// separately, by its handler. A transport that parses it (Streamable HTTP checks the
/// `Mcp-*` headers against it) hands it on, so the server does not parse it again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestMeta {
    meta: Option<JsonObject>,
    request_state: Option<Value>,
    input_responses: Option<Value>,
    name: Option<String>,
    uri: Option<String>,
    task_id: Option<String>,
}

thread_local! {
    static PARSES: Cell<u64> = const { Cell::new(0) };
}

/// How many times [`RequestMeta::parse`] read params text on this thread (for tests that
/// prove a request's params are read once).
#[doc(hidden)]
pub fn parses_on_this_thread() -> u64 {
    PARSES.with(Cell::get)
}

impl RequestMeta {
    /// Reads a request's params: one pass over the text, keeping `_meta` (when an object),
    /// `requestState`, `inputResponses` and the string members `name`, `uri` and `taskId`,
    /// and skipping the rest. Params that are absent or not an object say nothing.
    pub fn parse(params: Option<&RawValue>) -> Self {
        let Some(raw) = params else {
            return Self::default();
        };
        PARSES.with(|n| n.set(n.get().saturating_add(1)));
        serde_json::from_str::<Envelope>(raw.get())
            .map(|e| e.0)
            .unwrap_or_default()
    }

    /// The request's `_meta`, if it is an object.
    pub fn meta(&self) -> Option<&JsonObject> {
        self.meta.as_ref()
    }

    /// One member of `_meta`.
    pub fn meta_field(&self, key: &str) -> Option<&Value> {
        self.meta.as_ref()?.get(key)
    }

    /// `_meta`'s protocol version member (2026-07-28 requests carry one), whatever its type.
    pub fn protocol_version(&self) -> Option<&Value> {
        self.meta_field(meta_keys::PROTOCOL_VERSION)
    }

    /// `requestState`, as sent (a string when well formed).
    pub fn request_state(&self) -> Option<&Value> {
        self.request_state.as_ref()
    }

    /// `inputResponses`, as sent (an object of results when well formed).
    pub fn input_responses(&self) -> Option<&Value> {
        self.input_responses.as_ref()
    }

    /// `name` (of a tool or prompt), when a string.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// `uri` (of a resource), when a string.
    pub fn uri(&self) -> Option<&str> {
        self.uri.as_deref()
    }

    /// `taskId` (of a task), when a string.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// The name the request is about: its `name`, else its `uri`, else empty.
    pub fn subject(&self) -> &str {
        self.name().or_else(|| self.uri()).unwrap_or_default()
    }
}

/// The one-pass reader behind [`RequestMeta::parse`].
struct Envelope(RequestMeta);

#[derive(Deserialize)]
#[serde(field_identifier)]
enum Field {
    #[serde(rename = "_meta")]
    Meta,
    #[serde(rename = "requestState")]
    RequestState,
    #[serde(rename = "inputResponses")]
    InputResponses,
    #[serde(rename = "name")]
    Name,
    #[serde(rename = "uri")]
    Uri,
    #[serde(rename = "taskId")]
    TaskId,
    #[serde(other)]
    Other,
}

fn string(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request params (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut m = RequestMeta::default();
        // As with a JSON object read whole, a member sent twice counts as its last value.
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Meta => {
                    m.meta = match map.next_value::<Value>()? {
                        Value::Object(o) => Some(o),
                        _ => None,
                    }
                }
                Field::RequestState => m.request_state = Some(map.next_value()?),
                Field::InputResponses => m.input_responses = Some(map.next_value()?),
                Field::Name => m.name = string(map.next_value()?),
                Field::Uri => m.uri = string(map.next_value()?),
                Field::TaskId => m.task_id = string(map.next_value()?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Envelope(m))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> RequestMeta {
        let raw = RawValue::from_string(text.to_owned()).unwrap();
        RequestMeta::parse(Some(&raw))
    }

    #[test]
    fn reads_the_envelope_and_skips_the_rest() {
        let before = parses_on_this_thread();
        let m = parse(
            r#"{"name":"t","arguments":{"_meta":{"x":1},"name":"inner"},"requestState":"s",
                "inputResponses":{"k":{}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(parses_on_this_thread(), before + 1);
        assert_eq!(m.subject(), "t");
        assert_eq!(m.request_state(), Some(&Value::from("s")));
        assert!(m.input_responses().unwrap().is_object());
        assert_eq!(m.protocol_version(), Some(&Value::from("2026-07-28")));
        assert_eq!(
            m.meta().unwrap().len(),
            1,
            "the arguments' _meta is not the request's"
        );
    }

    #[test]
    fn odd_params_say_nothing() {
        assert_eq!(RequestMeta::parse(None), RequestMeta::default());
        assert_eq!(parse("[1,2]"), RequestMeta::default());
        let m = parse(r#"{"_meta":3,"name":4,"uri":"u","taskId":"t"}"#);
        assert_eq!(m.meta(), None);
        assert_eq!(m.subject(), "u");
        assert_eq!(m.task_id(), Some("t"));
        assert_eq!(parse(r#"{"name":"a","name":"b"}"#).name(), Some("b"));
    }
}

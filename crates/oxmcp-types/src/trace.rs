//! W3C Trace Context in `_meta` (`traceparent`, `tracestate`): how a request carries the
//! trace it belongs to, so that a server (and a gateway's upstream) joins it.

use serde_json::Value;

use crate::common::JsonObject;

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// A request's trace context: a valid `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, ids not
/// all zero) and its `tracestate`, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `traceparent`.
    pub traceparent: String,
    /// `tracestate`.
    pub tracestate: Option<String>,
}

fn lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `s` is a `traceparent` this code understands (version 00, or a later version's
/// first four fields).
pub fn valid_traceparent(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(version), Some(trace), Some(span), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let rest_ok = match version {
        "00" => parts.next().is_none(),
        "ff" => false,
        v => lower_hex(v, 2),
    };
    rest_ok
        && lower_hex(version, 2)
        && lower_hex(trace, 32)
        && lower_hex(span, 16)
        && lower_hex(flags, 2)
        && trace.bytes().any(|b| b != b'0')
        && span.bytes().any(|b| b != b'0')
}

impl TraceContext {
    /// The trace context in a `_meta` object, if it holds a valid one.
    pub fn from_meta(meta: &JsonObject) -> Option<TraceContext> {
        let parent = meta.get(TRACEPARENT)?.as_str()?;
        if !valid_traceparent(parent) {
            return None;
        }
        Some(TraceContext {
            traceparent: parent.to_owned(),
            tracestate: meta
                .get(TRACESTATE)
                .and_then(Value::as_str)
                .filter(|s| s.len() <= 512)
                .map(str::to_owned),
        })
    }

    /// Writes it into a `_meta` object (entries already there are kept).
    pub fn insert_into(&self, meta: &mut JsonObject) {
        meta.entry(TRACEPARENT.to_owned())
            .or_insert_with(|| Value::String(self.traceparent.clone()));
        if let Some(state) = &self.tracestate {
            meta.entry(TRACESTATE.to_owned())
                .or_insert_with(|| Value::String(state.clone()));
        }
    }

    /// The trace id (32 hex digits).
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or_default()
    }

    /// The parent span id (16 hex digits).
    pub fn parent_id(&self) -> &str {
        self.traceparent.get(36..52).unwrap_or_default()
    }

    /// Whether the trace is sampled (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.traceparent
            .get(53..55)
            .and_then(|f| u8::from_str_radix(f, 16).ok())
            .is_some_and(|f| f & 1 == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(valid_traceparent(ok));
        assert!(!valid_traceparent(
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
        ));
        assert!(!valid_traceparent(
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"
        ));
        assert!(!valid_traceparent(
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        assert!(!valid_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"
        ));
        assert!(valid_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"
        ));
        let mut meta = JsonObject::new();
        meta.insert(TRACEPARENT.into(), ok.into());
        meta.insert(TRACESTATE.into(), "congo=t61rcWkgMzE".into());
        let t = TraceContext::from_meta(&meta).unwrap();
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id(), "00f067aa0ba902b7");
        assert!(t.sampled());
        let mut out = JsonObject::new();
        t.insert_into(&mut out);
        assert_eq!(out, meta);
    }
}

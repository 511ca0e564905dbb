//! OpenTelemetry (feature `otel`): each request that carries a W3C trace context in `_meta`
//! runs in a `tracing` span whose OpenTelemetry parent is that context, so the server's
//! spans (and those of its handlers) join the caller's trace when a
//! `tracing-opentelemetry` layer is installed.

use std::str::FromStr;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use oxmcp_types::TraceContext;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span a request runs in: `mcp.request`, a child of the caller's span.
pub(crate) fn request_span(method: &str, trace: &TraceContext) -> tracing::Span {
    let span = tracing::info_span!(
        "mcp.request",
        otel.name = %method,
        otel.kind = "server",
        rpc.system = "jsonrpc",
        rpc.method = %method,
    );
    let (Ok(trace_id), Ok(span_id)) = (
        TraceId::from_hex(trace.trace_id()),
        SpanId::from_hex(trace.parent_id()),
    ) else {
        return span;
    };
    let flags = if trace.sampled() {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let state = trace
        .tracestate
        .as_deref()
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    let remote = SpanContext::new(trace_id, span_id, flags, true, state);
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    span
}

//! OpenTelemetry (feature `otel`): each request carries the current span's W3C trace
//! context in `_meta` (`traceparent`, `tracestate`), so the server joins the caller's trace
//! when a `tracing-opentelemetry` layer is installed. A context the caller set on the
//! request ([`oxmcp_engine::RequestOptions::trace`]) wins.

use opentelemetry::trace::TraceContextExt;
use oxmcp_engine::RequestOptions;
use oxmcp_types::TraceContext;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The current span's trace context, when it belongs to a (valid) OpenTelemetry trace.
pub(crate) fn current() -> Option<TraceContext> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    if !sc.is_valid() {
        return None;
    }
    let state = sc.trace_state().header();
    Some(TraceContext {
        traceparent: format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        ),
        tracestate: (!state.is_empty()).then_some(state),
    })
}

/// Adds the current trace context to `options`.
pub(crate) fn inject(options: &mut RequestOptions) {
    if let Some(trace) = current() {
        trace.insert_into(options.meta.get_or_insert_with(Default::default));
    }
}

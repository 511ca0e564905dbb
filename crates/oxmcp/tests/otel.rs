//! W3C trace context over Streamable HTTP, with the `otel` feature: a client call made in
//! an OpenTelemetry span carries its `traceparent`; the server runs the request in a span
//! of the same trace (a child of the client's), and the handler sees both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use serde_json::json;
use tokio::net::TcpListener;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn server() -> Server {
    Server::builder("otel-test", "1")
        .tool(
            "trace",
            "what the request's trace is",
            |ctx: Ctx, _a: Nothing| async move {
                let cx = tracing::Span::current().context();
                let span = cx.span();
                let here = span.span_context();
                let sent = ctx
                    .trace_context()
                    .map(|t| t.traceparent)
                    .unwrap_or_default();
                Ok::<_, String>(oxmcp::server::Structured(json!({
                    "sent": sent,
                    "serverTrace": here.trace_id().to_string(),
                    "serverSpan": here.span_id().to_string(),
                })))
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_server_joins_the_clients_trace_in_both_eras() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let http = oxmcp::http::StreamableHttp::new(server(), oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    let url = format!("http://{addr}/mcp");

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let remote = Remote::default()
            .handlers(ClientHandlers::new())
            .client(ClientConfig::default().era(era));
        let client = connect(&url, remote).await.unwrap();
        let span = tracing::info_span!("client-op");
        let (trace_id, span_id) = {
            let cx = span.context();
            let s = cx.span();
            let sc = s.span_context();
            (sc.trace_id().to_string(), sc.span_id().to_string())
        };
        let r = client
            .call_tool("trace", Default::default())
            .instrument(span)
            .await
            .unwrap();
        let v = r.structured_content.unwrap();
        let sent = v["sent"].as_str().unwrap();
        assert_eq!(sent, format!("00-{trace_id}-{span_id}-01"), "{era:?}");
        assert_eq!(v["serverTrace"], trace_id.as_str(), "{era:?}: {v}");
        assert_ne!(
            v["serverSpan"],
            span_id.as_str(),
            "{era:?}: a span of its own"
        );
        client.close().await;
    }
    // Outside any span nothing is sent.
    let client = connect(&url, Remote::default()).await.unwrap();
    let r = client.call_tool("trace", Default::default()).await.unwrap();
    assert_eq!(r.structured_content.unwrap()["sent"], "");
    client.close().await;
    let _ = provider.force_flush();
    let names: Vec<String> = exporter
        .get_finished_spans()
        .unwrap()
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    assert!(names.iter().any(|n| n == "tools/call"), "{names:?}");
}

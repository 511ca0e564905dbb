//! The metrics layer records OpenTelemetry metrics too (features `otel` and `metrics`): the
//! `mcp.server.operation.duration` histogram, with the MCP semantic conventions' attributes,
//! read back through the SDK's in-memory exporter after real calls over Streamable HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::layer::Metrics;
use oxmcp::server::{Ctx, Server};
use serde_json::json;
use tokio::net::TcpListener;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

#[tokio::test]
async fn operations_are_recorded_as_opentelemetry_metrics() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    // Before the instruments are made: they come from the global provider.
    opentelemetry::global::set_meter_provider(provider.clone());
    let metrics = Metrics::new().with_opentelemetry();
    let server = Server::builder("otel-metrics", "1")
        .tool("echo", "Echoes", |_ctx: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .layer(metrics.layer())
        .build()
        .unwrap();
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    let remote = Remote::default().client(ClientConfig::default().era(EraChoice::Legacy));
    let c = connect(&url, remote).await.unwrap();
    for _ in 0..2 {
        c.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "m"}}),
        )
        .await
        .unwrap();
    }
    c.request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await
        .unwrap_err();
    c.close().await;
    provider.force_flush().unwrap();

    let exported = exporter.get_finished_metrics().unwrap();
    let histogram = exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == "mcp.server.operation.duration")
        .expect("the operation histogram");
    let AggregatedMetrics::F64(MetricData::Histogram(h)) = histogram.data() else {
        panic!("a histogram of seconds: {:?}", histogram.data());
    };
    let count = |want: &[KeyValue]| {
        h.data_points()
            .filter(|p| want.iter().all(|kv| p.attributes().any(|a| a == kv)))
            .map(|p| p.count())
            .sum::<u64>()
    };
    let echo = [
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.tool.name", "echo"),
    ];
    assert_eq!(count(&echo), 2);
    let unknown = [
        KeyValue::new("gen_ai.tool.name", "_other"),
        KeyValue::new("error.type", "-32602"),
    ];
    assert_eq!(count(&unknown), 1);
}

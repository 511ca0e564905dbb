//! Fixture server for the official conformance suite: Streamable HTTP at
//! `http://127.0.0.1:$PORT/mcp` (PORT defaults to 3000; 0 picks a free port). The same
//! server is also served over WebSocket at `/ws` and over gRPC on the same port, so that
//! its exact outputs can be checked on every transport.
//!
//! `MCP_CONFORMANCE_NO_DNS_PROTECTION=1` switches DNS-rebinding protection off: the negative
//! self-test that proves the suite's check can fail.

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let protect = std::env::var("MCP_CONFORMANCE_NO_DNS_PROTECTION").is_err();
    let config = oxmcp_http::HttpConfig::default()
        .dns_rebinding_protection(protect)
        .response_mode(oxmcp_http::ResponseMode::Sse)
        .sse_retry(Duration::from_millis(500));
    let server = mcp_conformance::server()?;
    let ws = oxmcp_ws::WebSocket::new(
        server.clone(),
        config.clone(),
        oxmcp_ws::WsConfig::default(),
    );
    let grpc = oxmcp_grpc::Grpc::new(server.clone(), config.clone());
    let tools = server.clone();
    let http = oxmcp_http::StreamableHttp::new(server, config).with_param_headers(move |name| {
        tools
            .tool(name)
            .map(|t| t.header_params())
            .unwrap_or_default()
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!(
        "mcp-conformance-server listening on http://{addr}/mcp (WebSocket at ws://{addr}/ws, gRPC at grpc://{addr})"
    );
    let app = oxmcp_grpc::split(http.router().merge(ws.router()), grpc.router());
    oxmcp_http::serve_router(listener, app).await?;
    Ok(())
}

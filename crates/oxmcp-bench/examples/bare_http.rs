//! Run with: cargo run --release -p oxmcp-bench --example bare_http -- 127.0.0.1:18099
//!
//! The baseline for HTTP benches: a bare axum server that answers every POST with one JSON-RPC
//! result (echoing the request id), good for both `initialize` and `tools/call`, its text the
//! request's `params.arguments.message` (or "hello"), with no MCP machinery and no sessions.
//! Driven by `oxmcp-bench URL --clients N` like a real server, every answer checked.

#[path = "bare/reply.rs"]
mod reply;

use axum::http::StatusCode;
use axum::response::IntoResponse;

async fn answer(body: axum::body::Bytes) -> axum::response::Response {
    match reply::answer(&body) {
        Err(()) => StatusCode::BAD_REQUEST.into_response(),
        Ok(None) => StatusCode::ACCEPTED.into_response(),
        Ok(Some(reply)) => ([("content-type", "application/json")], reply).into_response(),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18099".to_owned());
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(answer).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    oxmcp_http::serve_router(listener, app).await
}

//! Run with: cargo run --release -p mcp-cli --example bare_http -- 127.0.0.1:18099
//!
//! The baseline for HTTP benches: a bare axum server that answers every POST with one JSON-RPC
//! result (echoing the request id), good for both `initialize` and `tools/call`, its text the
//! request's `params.arguments.message` (or "hello"), with no MCP machinery and no sessions.
//! Driven by `mcp bench URL --clients N` like a real server, every answer checked.

use axum::http::StatusCode;
use axum::response::IntoResponse;

async fn answer(body: axum::body::Bytes) -> axum::response::Response {
    let Ok(msg) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = msg.get("id") else {
        return StatusCode::ACCEPTED.into_response();
    };
    let text = msg["params"]["arguments"]["message"]
        .as_str()
        .unwrap_or("hello");
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "bare-http", "version": "0"},
        "content": [{"type": "text", "text": text}],
    }});
    ([("content-type", "application/json")], reply.to_string()).into_response()
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
    mcp_http::serve_router(listener, app).await
}

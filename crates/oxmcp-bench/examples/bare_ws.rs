//! Run with: cargo run --release -p oxmcp-bench --example bare_ws -- 127.0.0.1:18098
//!
//! The floor for WebSocket benches: axum's WebSocket at `/ws` (subprotocol `mcp`) answering
//! each text frame with one JSON-RPC result (see `bare/reply.rs`), with no MCP machinery.
//! Driven by `oxmcp-bench ws://ADDR/ws` like a real server, every answer checked.

#[path = "bare/reply.rs"]
mod reply;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};

async fn serve(mut socket: WebSocket) {
    while let Some(Ok(frame)) = socket.recv().await {
        let Message::Text(text) = frame else { continue };
        let Ok(Some(reply)) = reply::answer(text.as_bytes()) else {
            continue;
        };
        if socket.send(Message::Text(reply.into())).await.is_err() {
            break;
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18098".to_owned());
    let app = axum::Router::new().route(
        "/ws",
        axum::routing::get(|ws: WebSocketUpgrade| async move {
            ws.protocols(["mcp"]).on_upgrade(serve)
        }),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    oxmcp_http::serve_router(listener, app).await
}

//! Run with: cargo run --release -p oxmcp-bench --example bare_grpc -- 127.0.0.1:18097
//!
//! The floor for gRPC benches: tonic's server handler for `mcp.v1.Mcp/Connect` answering each
//! envelope with one JSON-RPC result in a JSON envelope (see `bare/reply.rs`), with no MCP
//! machinery. Driven by `oxmcp-bench grpc://ADDR` like a real server, every answer checked.

#[path = "bare/reply.rs"]
mod reply;

use oxmcp_proto::{Envelope, envelope::Body};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

type Answers = ReceiverStream<Result<Envelope, Status>>;

async fn stream(
    call: tonic::Request<Streaming<Envelope>>,
) -> Result<tonic::Response<Answers>, Status> {
    let mut inbound = call.into_inner();
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        while let Ok(Some(envelope)) = inbound.message().await {
            let json = match envelope.body {
                Some(Body::Json(bytes)) => bytes,
                Some(Body::Message(m)) => match oxmcp_proto::from_proto(&m) {
                    Ok(v) => v.to_string().into_bytes(),
                    Err(_) => continue,
                },
                None => continue,
            };
            let Ok(Some(reply)) = reply::answer(&json) else {
                continue;
            };
            let envelope = Envelope {
                body: Some(Body::Json(reply.into_bytes())),
            };
            if tx.send(Ok(envelope)).await.is_err() {
                break;
            }
        }
    });
    Ok(tonic::Response::new(ReceiverStream::new(rx)))
}

async fn connect(request: axum::extract::Request) -> axum::response::Response {
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    tonic::server::Grpc::new(codec)
        .streaming(tower::service_fn(stream), request)
        .await
        .map(axum::body::Body::new)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18097".to_owned());
    let app = axum::Router::new().route("/mcp.v1.Mcp/Connect", axum::routing::post(connect));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    oxmcp_http::serve_router(listener, app).await
}

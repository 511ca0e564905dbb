//! Criterion benches: JSON-RPC encode/decode, and an in-process tools/call round trip through
//! the real engine on both sides. Run with: cargo bench -p mcp-cli --bench core
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_client::{Client, ClientConfig, ClientHandlers};
use mcp_jsonrpc::Message;
use mcp_types::JsonObject;
use serde_json::json;

const CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello world"},"_meta":{"progressToken":7}}}"#;

fn codec(c: &mut Criterion) {
    c.bench_function("decode tools/call", |b| {
        b.iter(|| Message::decode(CALL.as_bytes()).unwrap())
    });
    let msg = Message::decode(CALL.as_bytes()).unwrap();
    c.bench_function("encode tools/call", |b| b.iter(|| msg.encode()));
    c.bench_function("decode+typed params", |b| {
        b.iter(|| {
            let Message::Request(r) = Message::decode(CALL.as_bytes()).unwrap() else {
                unreachable!()
            };
            mcp_jsonrpc::parse_params::<mcp_types::CallToolParams>(r.params.as_deref()).unwrap()
        })
    });
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        let server = mcp_server::Server::builder("bench", "1")
            .tool(
                "echo",
                "echo",
                |_ctx: mcp_server::Ctx, a: Echo| async move { Ok::<_, String>(a.message) },
            )
            .build()
            .unwrap();
        let (c, srv) = mcp_transport::duplex();
        tokio::spawn(async move { server.serve(srv.incoming, srv.outgoing).await });
        Client::connect(
            c.incoming,
            c.outgoing,
            ClientHandlers::new(),
            ClientConfig::default(),
        )
        .await
        .unwrap()
    });
    let mut args = JsonObject::new();
    args.insert("message".into(), json!("hello"));
    c.bench_function("in-process tools/call round trip", |b| {
        b.iter(|| rt.block_on(client.call_tool("echo", args.clone())).unwrap())
    });
}

criterion_group!(benches, codec, round_trip);
criterion_main!(benches);

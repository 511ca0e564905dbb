//! Criterion benches of the hot path, step by step and whole:
//! - `codec/*`: JSON-RPC decode and encode of a `tools/call` line;
//! - `validate/*`: the echo arguments against their schema, on the fast path and on the full
//!   validator (the same schema with one keyword the fast path leaves to it);
//! - `stdio/server line in, line out`: one `tools/call` line through `Server::serve` on the
//!   transport's channels (decode, route, validate, handle, encode), no client;
//! - `stdio/server line in, line out, metrics layer`: the same through a server with the
//!   metrics layer (`oxmcp serve`'s default over HTTP): the layer's cost is the difference;
//! - `stdio/in-process round trip`: the SDK client and server over an in-memory duplex;
//! - `http/POST tools/call`: one request through the Streamable HTTP router in process
//!   (admission, session, decode, route, validate, handle, encode, response), no socket.
//!
//! Run with: cargo bench -p oxmcp-bench --bench core
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use axum::body::Body;
use axum::http::{Request, header};
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::BodyExt;
use oxmcp_client::{Client, ClientConfig, ClientHandlers};
use oxmcp_jsonrpc::{Inbound, Message, Outbound};
use oxmcp_server::schema::CompiledSchema;
use oxmcp_types::JsonObject;
use serde_json::json;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tower::ServiceExt;

const CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello world"},"_meta":{"progressToken":7}}}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to echo back.
    message: String,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn echo_server() -> oxmcp_server::Server {
    echo_builder().build().unwrap()
}

fn echo_builder() -> oxmcp_server::ServerBuilder {
    oxmcp_server::Server::builder("bench", "1").tool(
        "echo",
        "echo",
        |_ctx: oxmcp_server::Ctx, a: Echo| async move { Ok::<_, String>(a.message) },
    )
}

fn codec(c: &mut Criterion) {
    c.bench_function("codec/decode tools/call", |b| {
        b.iter(|| Message::decode(CALL.as_bytes()).unwrap())
    });
    let msg = Message::decode(CALL.as_bytes()).unwrap();
    c.bench_function("codec/encode tools/call", |b| b.iter(|| msg.encode()));
    c.bench_function("codec/decode + typed params", |b| {
        b.iter(|| {
            let Message::Request(r) = Message::decode(CALL.as_bytes()).unwrap() else {
                unreachable!()
            };
            oxmcp_jsonrpc::parse_params::<oxmcp_types::CallToolParams>(r.params.as_deref()).unwrap()
        })
    });
}

fn validate(c: &mut Criterion) {
    let schema = serde_json::to_value(schemars::schema_for!(Echo)).unwrap();
    let fast = CompiledSchema::compile(schema.as_object().unwrap()).unwrap();
    assert!(fast.is_simple());
    // `pattern` is outside the fast path's keywords: the same schema on the full validator.
    let mut full_schema = schema;
    full_schema["properties"]["message"]["pattern"] = json!(".*");
    let full = CompiledSchema::compile(full_schema.as_object().unwrap()).unwrap();
    assert!(!full.is_simple());
    let args = json!({"message": "hello world"});
    c.bench_function("validate/echo arguments, fast path", |b| {
        b.iter(|| fast.validate(&args).unwrap())
    });
    c.bench_function("validate/echo arguments, full validator", |b| {
        b.iter(|| full.validate(&args).unwrap())
    });
}

/// Sends one line to the server and waits for its response line.
async fn exchange(
    tx: &mpsc::Sender<Inbound>,
    rx: &mut mpsc::Receiver<Outbound>,
    line: &str,
) -> String {
    tx.send(Inbound::Frame(line.as_bytes().to_vec()))
        .await
        .unwrap();
    loop {
        if let Some(Outbound::Message(m)) = rx.recv().await
            && matches!(m.kind, oxmcp_jsonrpc::OutKind::Response { .. })
        {
            return m.line;
        }
    }
}

/// `server` on the transport's channels, initialized: its input and output.
fn serving(
    rt: &Runtime,
    server: oxmcp_server::Server,
) -> (mpsc::Sender<Inbound>, mpsc::Receiver<Outbound>) {
    rt.block_on(async {
        let (in_tx, in_rx) = mpsc::channel::<Inbound>(64);
        let (out_tx, out_rx) = mpsc::channel::<Outbound>(64);
        tokio::spawn(async move { server.serve(in_rx, out_tx).await });
        let mut out_rx = out_rx;
        exchange(&in_tx, &mut out_rx, INIT).await;
        in_tx
            .send(Inbound::Frame(INITIALIZED.as_bytes().to_vec()))
            .await
            .unwrap();
        (in_tx, out_rx)
    })
}

fn stdio(c: &mut Criterion) {
    let rt = runtime();
    let (tx, mut rx) = serving(&rt, echo_server());
    let answer = rt.block_on(exchange(&tx, &mut rx, CALL));
    assert!(answer.contains(r#""text":"hello world""#), "{answer}");
    c.bench_function("stdio/server line in, line out", |b| {
        b.iter(|| rt.block_on(exchange(&tx, &mut rx, CALL)))
    });
    let metrics = oxmcp_server::layer::Metrics::new();
    let layered = echo_builder().layer(metrics.layer()).build().unwrap();
    let (tx, mut rx) = serving(&rt, layered);
    let answer = rt.block_on(exchange(&tx, &mut rx, CALL));
    assert!(answer.contains(r#""text":"hello world""#), "{answer}");
    c.bench_function("stdio/server line in, line out, metrics layer", |b| {
        b.iter(|| rt.block_on(exchange(&tx, &mut rx, CALL)))
    });
    let text = metrics.render();
    assert!(text.contains(r#"gen_ai_tool_name="echo""#), "{text}");

    let client = rt.block_on(async {
        let server = echo_server();
        let (c, srv) = oxmcp_transport::duplex();
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
    c.bench_function("stdio/in-process round trip", |b| {
        b.iter(|| rt.block_on(client.call_tool("echo", args.clone())).unwrap())
    });
}

fn post(body: &'static str, session: Option<&str>) -> Request<Body> {
    let mut r = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1:8080")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.body(Body::from(body)).unwrap()
}

fn http(c: &mut Criterion) {
    let rt = runtime();
    let (router, session) = rt.block_on(async {
        let http =
            oxmcp_http::StreamableHttp::new(echo_server(), oxmcp_http::HttpConfig::default());
        let router = http.router();
        let res = router.clone().oneshot(post(INIT, None)).await.unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = res.into_body().collect().await.unwrap();
        let res = router
            .clone()
            .oneshot(post(INITIALIZED, Some(&session)))
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        (router, session)
    });
    let call = || async {
        let res = router
            .clone()
            .oneshot(post(CALL, Some(&session)))
            .await
            .unwrap();
        assert!(res.status().is_success());
        res.into_body().collect().await.unwrap().to_bytes()
    };
    let body = rt.block_on(call());
    assert!(
        String::from_utf8_lossy(&body).contains(r#""text":"hello world""#),
        "{body:?}"
    );
    c.bench_function("http/POST tools/call (in process, JSON response)", |b| {
        b.iter(|| rt.block_on(call()))
    });
}

criterion_group!(benches, codec, validate, stdio, http);
criterion_main!(benches);

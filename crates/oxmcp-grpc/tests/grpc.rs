//! MCP over gRPC (`mcp.v1.Mcp`), over real HTTP/2 sockets: our client against our server,
//! and raw envelopes (bad ones included) against the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The helpers of oxmcp-http's endpoint tests (servers, clients, SSE), shared rather than copied.
#[path = "../../oxmcp-http/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use oxmcp_grpc::client::{GrpcClientConfig, call as grpc_call, connect as grpc_connect};
use oxmcp_grpc::{CALL_PATH, CONNECT_PATH, Form, Grpc};
use oxmcp_http::HttpConfig;
use oxmcp_proto::{Envelope, envelope::Body};
use oxmcp_server::Server;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

async fn endpoint_with(server: Server, config: HttpConfig) -> String {
    let grpc = Grpc::new(server, config);
    let base = listen(oxmcp_grpc::split(axum::Router::new(), grpc.router())).await;
    base.replacen("http://", "grpc://", 1)
}

async fn endpoint(config: HttpConfig) -> String {
    endpoint_with(server(), config).await
}

/// A `Connect` stream driven by hand.
struct Raw {
    tx: Option<mpsc::Sender<Envelope>>,
    rx: tonic::Streaming<Envelope>,
}

async fn raw_with(url: &str, metadata: &[(&'static str, &str)]) -> Result<Raw, tonic::Status> {
    let base = url.replacen("grpc://", "http://", 1);
    let channel = tonic::transport::Endpoint::from_shared(base)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let (tx, rx) = mpsc::channel(16);
    let mut request = tonic::Request::new(ReceiverStream::new(rx));
    for (k, v) in metadata {
        request.metadata_mut().insert(*k, v.parse().unwrap());
    }
    let path = axum::http::uri::PathAndQuery::from_static(CONNECT_PATH);
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    let rx = grpc.streaming(request, path, codec).await?.into_inner();
    Ok(Raw { tx: Some(tx), rx })
}

async fn raw(url: &str) -> Raw {
    raw_with(url, &[]).await.unwrap()
}

fn json_envelope(v: &Value) -> Envelope {
    Envelope {
        body: Some(Body::Json(v.to_string().into_bytes())),
    }
}

fn proto_envelope(v: &Value) -> Envelope {
    Envelope {
        body: Some(Body::Message(oxmcp_proto::to_proto(v).unwrap())),
    }
}

impl Raw {
    async fn send(&self, e: Envelope) {
        self.tx.as_ref().unwrap().send(e).await.unwrap();
    }
    async fn send_json(&self, v: Value) {
        self.send(json_envelope(&v)).await;
    }
    /// The next envelope: its form and its JSON; `Err` with the status that ended the stream
    /// (`Ok` status: code `Ok`).
    async fn next(&mut self) -> Result<(Form, Value), Code> {
        let m = tokio::time::timeout(Duration::from_secs(10), self.rx.message())
            .await
            .expect("an envelope in time");
        match m {
            Ok(Some(e)) => {
                let form = Form::of(&e).unwrap();
                let bytes = oxmcp_grpc::to_json(e).unwrap();
                Ok((form, serde_json::from_slice(&bytes).unwrap()))
            }
            Ok(None) => Err(Code::Ok),
            Err(s) => Err(s.code()),
        }
    }
    /// The next message that is not a notification.
    async fn answer(&mut self) -> Value {
        loop {
            let (_, v) = self.next().await.unwrap();
            if v.get("method").is_none() {
                return v;
            }
        }
    }
}

fn init() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})
}

fn echo(id: u64, message: &str, modern: bool) -> Value {
    let mut params = json!({"name": "echo", "arguments": {"message": message}});
    if modern {
        params["_meta"] = modern_meta();
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

#[tokio::test]
async fn our_client_in_both_forms_and_the_unary_call() {
    let url = endpoint(HttpConfig::default()).await;
    for form in [Form::Json, Form::Protobuf] {
        let config = GrpcClientConfig::default().form(form);
        let (channels, link) = grpc_connect(&url, config.clone()).await.unwrap();
        let client = client_over(channels, link).await;
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "echo"));
        let args = json!({"message": "over gRPC"})
            .as_object()
            .cloned()
            .unwrap();
        let r = client.call_tool("chatty_echo", args).await.unwrap();
        assert_eq!(r.content[0].as_text(), Some("over gRPC"), "{form:?}");
        client.close().await;

        // The unary method: one 2026-07-28 request, its answer.
        let answer = grpc_call(&url, &echo(7, "unary", true), &config)
            .await
            .unwrap();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["content"][0]["text"], "unary", "{answer}");
    }
}

#[tokio::test]
async fn envelopes_of_both_eras_and_bad_ones() {
    let url = endpoint(HttpConfig::default()).await;
    let mut s = raw(&url).await;
    s.send_json(init()).await;
    let (form, init) = s.next().await.unwrap();
    assert_eq!(form, Form::Json);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    s.send_json(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    // The first envelope was JSON: a protobuf request is answered in JSON too.
    s.send(proto_envelope(&echo(1, "hi", false))).await;
    let (form, r) = s.next().await.unwrap();
    assert_eq!(
        (form, &r["result"]["content"][0]["text"]),
        (Form::Json, &json!("hi"))
    );
    // An empty envelope: Invalid Request, and the stream goes on.
    s.send(Envelope { body: None }).await;
    let (_, e) = s.next().await.unwrap();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    // Bytes that are not JSON: a parse error, and the stream goes on.
    s.send(Envelope {
        body: Some(Body::Json(b"{not json".to_vec())),
    })
    .await;
    let (_, e) = s.next().await.unwrap();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    s.send_json(json!({"jsonrpc":"2.0","id":3,"method":"ping"}))
        .await;
    assert_eq!(s.next().await.unwrap().1["result"], json!({}));

    // 2026-07-28 on another stream, in the protobuf form: answered in the protobuf form.
    let mut m = raw(&url).await;
    m.send(proto_envelope(&echo(9, "modern", true))).await;
    let (form, r) = m.next().await.unwrap();
    assert_eq!(form, Form::Protobuf);
    assert_eq!(r["result"]["content"][0]["text"], "modern", "{r}");

    // `mcp-encoding` chooses the form whatever the client sends.
    let mut p = raw_with(&url, &[("mcp-encoding", "protobuf")])
        .await
        .unwrap();
    p.send_json(echo(10, "chosen", true)).await;
    let (form, r) = p.next().await.unwrap();
    assert_eq!(form, Form::Protobuf);
    assert_eq!(r["result"]["content"][0]["text"], "chosen");
}

#[tokio::test]
async fn refusals_are_grpc_statuses() {
    let url = endpoint(HttpConfig::default()).await;
    let e = raw_with(&url, &[("mcp-encoding", "xml")])
        .await
        .err()
        .unwrap();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let e = raw_with(&url, &[("mcp-protocol-version", "1999-01-01")])
        .await
        .err()
        .unwrap();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    // A notification is not a call.
    let config = GrpcClientConfig::default();
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let e = grpc_call(&url, &note, &config).await.unwrap_err();
    assert!(e.to_string().contains("InvalidArgument"), "{e}");
    // Another method of the service, or another service: UNIMPLEMENTED.
    let channel = tonic::transport::Endpoint::from_shared(url.replacen("grpc://", "http://", 1))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    let path = axum::http::uri::PathAndQuery::from_static("/mcp.v1.Mcp/Nope");
    let e = grpc
        .unary(
            tonic::Request::new(json_envelope(&echo(1, "x", true))),
            path,
            codec,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    // A unary call of an unparseable message: a JSON-RPC parse error as the answer.
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    grpc.ready().await.unwrap();
    let path = axum::http::uri::PathAndQuery::from_static(CALL_PATH);
    let bad = Envelope {
        body: Some(Body::Json(b"[1,".to_vec())),
    };
    let answer = grpc
        .unary(tonic::Request::new(bad), path, codec)
        .await
        .unwrap()
        .into_inner();
    let answer: Value = serde_json::from_slice(&oxmcp_grpc::to_json(answer).unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
}

#[tokio::test]
async fn an_oversized_message_ends_the_stream_after_what_was_accepted() {
    let url = endpoint(HttpConfig::default().max_body(1024)).await;
    let mut s = raw(&url).await;
    let slow = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":200},"_meta":modern_meta()}});
    s.send_json(slow).await;
    s.send_json(json!({"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"x".repeat(4096)}}))
        .await;
    let r = s.answer().await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 200", "{r}");
    let end = s.next().await.unwrap_err();
    assert!(
        matches!(
            end,
            Code::OutOfRange | Code::ResourceExhausted | Code::Internal
        ),
        "{end:?}"
    );
}

#[tokio::test]
async fn a_half_closed_stream_is_answered_then_ends() {
    let url = endpoint(HttpConfig::default()).await;
    let mut s = raw(&url).await;
    let slow = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":150},"_meta":modern_meta()}});
    s.send_json(slow).await;
    s.tx = None;
    let r = s.answer().await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 150", "{r}");
    assert_eq!(s.next().await.unwrap_err(), Code::Ok);
}

#[tokio::test]
async fn a_reset_stream_cancels_its_requests() {
    let dropped = Arc::new(AtomicBool::new(false));
    let url = endpoint_with(flooding_server(dropped.clone()), HttpConfig::default()).await;
    let s = raw(&url).await;
    let stuck = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stuck","arguments":{},"_meta":modern_meta()}});
    s.send_json(stuck).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!dropped.load(Ordering::SeqCst));
    drop(s);
    assert!(
        until(5, || dropped.load(Ordering::SeqCst)).await,
        "the call was cancelled with its stream"
    );
}

#[tokio::test]
async fn a_slow_reader_loses_nothing() {
    let url = endpoint_with(flooding_server(Arc::default()), HttpConfig::default()).await;
    let mut s = raw(&url).await;
    s.send_json(init()).await;
    s.next().await.unwrap();
    s.send_json(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    s.send_json(
        json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}),
    )
    .await;
    s.next().await.unwrap();
    let n = 3000; // about 3 MiB: far more than the HTTP/2 windows and the queues hold
    s.send_json(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"n":n}}}))
        .await;
    // Not reading for a while: the server waits (flow control) instead of dropping.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut flood = Flooded::default();
    while flood.take(s.next().await.unwrap().1) {}
    flood.check(n);
}

#[tokio::test]
async fn calls_need_the_bearer_token() {
    let auth = oxmcp_http::HttpAuth {
        verifier: Arc::new(OneToken),
        metadata: json!({"resource": "http://127.0.0.1/mcp", "authorization_servers": ["https://as.example"]}),
        metadata_url: "http://127.0.0.1/.well-known/oauth-protected-resource/mcp".into(),
        scopes: Default::default(),
    };
    let url = endpoint(HttpConfig::default().auth(Some(Arc::new(auth)))).await;
    let e = raw_with(&url, &[]).await.err().unwrap();
    assert_eq!(e.code(), Code::Unauthenticated);
    let challenge = e
        .metadata()
        .get("www-authenticate")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    let e = raw_with(&url, &[("authorization", "Bearer nope")])
        .await
        .err()
        .unwrap();
    assert_eq!(e.code(), Code::Unauthenticated);
    let unary = grpc_call(&url, &echo(1, "x", true), &GrpcClientConfig::default())
        .await
        .unwrap_err();
    assert!(unary.to_string().contains("Unauthenticated"), "{unary}");

    let good = GrpcClientConfig::default()
        .headers(vec![("Authorization".into(), "Bearer let-me-in".into())]);
    let (channels, link) = grpc_connect(&url, good.clone()).await.unwrap();
    let client = client_over(channels, link).await;
    assert!(!client.list_tools().await.unwrap().is_empty());
    client.close().await;
    let answer = grpc_call(&url, &echo(2, "let in", true), &good)
        .await
        .unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "let in");
}

/// Shutdown: no more input, the request in flight is still answered, then UNAVAILABLE.
#[tokio::test]
async fn shutdown_answers_what_was_accepted_then_ends() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let url = endpoint(HttpConfig::default().shutdown(shutdown.clone())).await;
    let mut s = raw(&url).await;
    s.send_json(json!({"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"sleep","arguments":{"ms":300},"_meta": modern_meta()}}))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    shutdown.cancel();
    let r = s.answer().await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 300", "{r}");
    assert_eq!(s.next().await.unwrap_err(), Code::Unavailable);
}

/// One port: gRPC by content type, everything else to the HTTP router.
#[tokio::test]
async fn split_serves_both_on_one_port() {
    let http = oxmcp_http::StreamableHttp::new(server(), HttpConfig::default());
    let grpc = Grpc::new(server(), HttpConfig::default());
    let base = listen(oxmcp_grpc::split(http.router(), grpc.router())).await;
    let url = format!("{base}/mcp");
    let r = modern_post(&url, 1, "tools/list", None, json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let grpc_url = base.replacen("http://", "grpc://", 1);
    let answer = grpc_call(
        &grpc_url,
        &echo(3, "same port", true),
        &GrpcClientConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "same port");
}

/// Per-tool scopes hold on every message of a stream, not only at its start: a tool whose
/// scope the token lacks is refused with a JSON-RPC error, the stream goes on.
#[tokio::test]
async fn per_tool_scopes_hold_on_every_message() {
    let mut scopes = oxmcp_http::ScopePolicy::default();
    scopes.tools.insert("sleep".into(), vec!["admin".into()]);
    let auth = oxmcp_http::HttpAuth {
        verifier: Arc::new(BasicScope),
        metadata: json!({"resource": "http://127.0.0.1/mcp", "authorization_servers": ["https://as.example"]}),
        metadata_url: "http://127.0.0.1/.well-known/oauth-protected-resource/mcp".into(),
        scopes,
    };
    let url = endpoint(HttpConfig::default().auth(Some(Arc::new(auth)))).await;
    let mut s = raw_with(&url, &[("authorization", "Bearer t")])
        .await
        .unwrap();
    let sleep = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"_meta":modern_meta()}});
    s.send_json(sleep.clone()).await;
    let (_, e) = s.next().await.unwrap();
    assert_eq!(e["id"], 1, "{e}");
    assert_eq!(e["error"]["data"]["error"], "insufficient_scope", "{e}");
    assert_eq!(e["error"]["data"]["scope"], "admin", "{e}");
    s.send_json(echo(2, "allowed", true)).await;
    let (_, r) = s.next().await.unwrap();
    assert_eq!(r["result"]["content"][0]["text"], "allowed", "{r}");
    // The unary method too.
    let config =
        GrpcClientConfig::default().headers(vec![("authorization".into(), "Bearer t".into())]);
    let answer = grpc_call(&url, &sleep, &config).await.unwrap();
    assert_eq!(
        answer["error"]["data"]["error"], "insufficient_scope",
        "{answer}"
    );
}

/// At most `max_sessions` streams at once: the next is RESOURCE_EXHAUSTED, and a slot is
/// free again once a stream ends.
#[tokio::test]
async fn open_streams_are_capped() {
    let url = endpoint(HttpConfig::default().max_sessions(2)).await;
    let first = raw(&url).await;
    let _second = raw(&url).await;
    let e = raw_with(&url, &[]).await.err().unwrap();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let e = grpc_call(&url, &echo(1, "x", true), &GrpcClientConfig::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("ResourceExhausted"), "{e}");
    drop(first);
    let mut freed = false;
    for _ in 0..50 {
        if let Ok(mut s) = raw_with(&url, &[]).await {
            s.send_json(echo(2, "after", true)).await;
            assert_eq!(s.answer().await["result"]["content"][0]["text"], "after");
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "a slot came free when a stream ended");
}

/// A lone request is answered on the stream's own task, under the loop's rules: its id stays
/// taken while it runs, other requests go on beside it, a cancellation stops it (no answer,
/// the stream goes on), and a notification sent before a request is handled before it.
#[tokio::test]
async fn requests_answered_on_the_stream_task_keep_the_loop_rules() {
    let dropped = Arc::new(AtomicBool::new(false));
    let url = endpoint_with(flooding_server(dropped.clone()), HttpConfig::default()).await;
    let mut s = raw(&url).await;
    s.send_json(init()).await;
    s.answer().await;
    s.send_json(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    // Straight after notifications/initialized: served, not refused as uninitialized.
    s.send_json(echo(1, "first", false)).await;
    assert_eq!(s.answer().await["result"]["content"][0]["text"], "first");
    let stuck = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stuck","arguments":{}}});
    s.send_json(stuck.clone()).await;
    s.send_json(stuck).await;
    let e = s.answer().await;
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (json!(2), json!(-32600)),
        "{e}"
    );
    s.send_json(echo(3, "beside", false)).await;
    assert_eq!(s.answer().await["result"]["content"][0]["text"], "beside");
    s.send_json(
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}),
    )
    .await;
    assert!(
        until(5, || dropped.load(Ordering::SeqCst)).await,
        "the cancelled handler was stopped"
    );
    s.send_json(json!({"jsonrpc":"2.0","id":4,"method":"ping"}))
        .await;
    let r = s.answer().await;
    assert_eq!(r["id"], 4, "no answer for the cancelled request: {r}");
}

/// A stream half-closed with a request still running, then reset: the request is cancelled
/// with the stream, wherever it runs (a half-close alone lets it finish).
#[tokio::test]
async fn a_half_closed_then_reset_stream_cancels_its_requests() {
    let dropped = Arc::new(AtomicBool::new(false));
    let url = endpoint_with(flooding_server(dropped.clone()), HttpConfig::default()).await;
    let mut s = raw(&url).await;
    let stuck = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stuck","arguments":{},"_meta":modern_meta()}});
    s.send_json(stuck).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.tx = None;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!dropped.load(Ordering::SeqCst), "a half-close lets it run");
    drop(s);
    assert!(
        until(5, || dropped.load(Ordering::SeqCst)).await,
        "the call was cancelled with its stream"
    );
}

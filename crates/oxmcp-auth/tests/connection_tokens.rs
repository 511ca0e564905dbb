//! Long-lived connections keep checking their bearer token, over real sockets against the test
//! authorization server: a WebSocket connection, a gRPC `Connect` stream or unary `Call`, a
//! legacy HTTP+SSE stream and Streamable HTTP's GET and `subscriptions/listen` streams end
//! when their token expires (WebSocket close 1008, gRPC `UNAUTHENTICATED`, the SSE stream
//! ends) or when the authorization server revokes it (introspection, re-checked every
//! `token_recheck_interval`); a client that presents a fresh token of the same principal
//! keeps its connection and session past the first token's expiry, and another principal's
//! token is refused; a slow check of a fresh token does not hold up its connection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::{SinkExt, StreamExt};
use oxmcp_auth::server::{
    Introspection, IntrospectionConfig, JwtConfig, JwtVerifier, ScopePolicy, TokenVerifier, protect,
};
use oxmcp_grpc::Grpc;
use oxmcp_http::{HttpConfig, LegacySse, StreamableHttp};
use oxmcp_proto::{Envelope, envelope::Body};
use oxmcp_ws::{WebSocket, WsConfig};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// How long a connection may take to notice that its token is gone (generous: the checks
/// happen within about a second here).
const NOTICE: Duration = Duration::from_secs(20);

/// Every transport of one protected server on one listener: its base URL (`http://ADDR`).
async fn serve_all(issuer: &str, make: impl FnOnce(&str) -> Arc<dyn TokenVerifier>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{base}/mcp");
    let verifier = make(&url);
    let scopes = ScopePolicy::default().all(vec!["mcp".into()]);
    let auth = protect(&url, vec![issuer.to_owned()], verifier, scopes, None).unwrap();
    let config = HttpConfig::default()
        .auth(Some(Arc::new(auth)))
        .token_recheck_interval(Duration::from_secs(1));
    let server = oxmcp_server();
    let http = StreamableHttp::new(server.clone(), config.clone()).router();
    let legacy = LegacySse::new(server.clone(), config.clone()).router();
    let ws = WebSocket::new(server.clone(), config.clone(), WsConfig::default()).router();
    let grpc = Grpc::new(server, config).router();
    let app = oxmcp_grpc::split(http.merge(legacy).merge(ws), grpc);
    tokio::spawn(async move { oxmcp_http::serve_router(listener, app).await });
    base
}

fn jwt_verifier(issuer: &str) -> impl FnOnce(&str) -> Arc<dyn TokenVerifier> {
    let issuer = issuer.to_owned();
    move |url: &str| {
        let mut cfg = JwtConfig::new(&issuer, url);
        cfg.min_refetch = Duration::ZERO;
        Arc::new(JwtVerifier::new(cfg).unwrap())
    }
}

/// The audience the introspection answers name (they must name one).
const INTROSPECTED_FOR: &str = "https://rs.example/mcp";

fn introspection(issuer: &str) -> Arc<dyn TokenVerifier> {
    Arc::new(
        Introspection::new(IntrospectionConfig {
            issuer: Some(issuer.to_owned()),
            cache_for: Duration::from_secs(1),
            max_cached: 100,
            ..IntrospectionConfig::new(
                format!("{issuer}/introspect"),
                "rs",
                "rs-secret",
                INTROSPECTED_FOR,
            )
        })
        .unwrap(),
    )
}

/// A JWT for `sub` at the server at `base`, expiring in `secs` seconds.
fn jwt(issuer: &str, base: &str, sub: &str, secs: u64) -> String {
    token_for(
        issuer,
        &format!("{base}/mcp"),
        sub,
        "mcp",
        json!({"exp": now() + secs}),
    )
}

fn initialize(id: u64) -> Value {
    let mut v: Value = serde_json::from_str(INIT).unwrap();
    v["id"] = json!(id);
    v
}

fn whoami(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"whoami","arguments":{}}})
}

fn initialized() -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"})
}

// ---- WebSocket ------------------------------------------------------------------------

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws_open(base: &str, token: &str) -> Socket {
    let url = format!("{}/ws", base.replacen("http://", "ws://", 1));
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    tokio_tungstenite::connect_async(req).await.unwrap().0
}

/// The next message that is not a notification, or the close code.
async fn ws_next(socket: &mut Socket, within: Duration) -> Result<Value, u16> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next())
            .await
            .map_err(|_| 0u16)?;
        match frame {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v.get("method").is_none() {
                    return Ok(v);
                }
            }
            Some(Ok(Message::Close(f))) => return Err(f.map_or(1005, |f| u16::from(f.code))),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Err(1006),
        }
    }
}

async fn ws_send(socket: &mut Socket, v: Value) {
    socket
        .send(Message::Text(v.to_string().into()))
        .await
        .unwrap();
}

/// An initialized WebSocket session whose `whoami` answers.
async fn ws_session(base: &str, token: &str) -> Socket {
    let mut s = ws_open(base, token).await;
    ws_send(&mut s, initialize(0)).await;
    ws_next(&mut s, NOTICE).await.unwrap();
    ws_send(&mut s, initialized()).await;
    ws_send(&mut s, whoami(1)).await;
    let answer = ws_next(&mut s, NOTICE).await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    s
}

/// Waits for the socket to close while calling `whoami` every 200 ms: the close code.
async fn ws_closes(mut s: Socket) -> u16 {
    let deadline = tokio::time::Instant::now() + NOTICE;
    let mut id = 100;
    loop {
        if tokio::time::Instant::now() > deadline {
            return 0;
        }
        id += 1;
        if s.send(Message::Text(whoami(id).to_string().into()))
            .await
            .is_err()
        {
            return 1006;
        }
        match ws_next(&mut s, Duration::from_millis(200)).await {
            Ok(_) | Err(0) => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(code) => return code,
        }
    }
}

// ---- gRPC -----------------------------------------------------------------------------

struct GrpcStream {
    tx: mpsc::Sender<Envelope>,
    rx: tonic::Streaming<Envelope>,
}

async fn grpc_open(base: &str, token: &str) -> GrpcStream {
    let channel = tonic::transport::Endpoint::from_shared(base.to_owned())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let (tx, rx) = mpsc::channel(16);
    let mut request = tonic::Request::new(ReceiverStream::new(rx));
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let path = axum::http::uri::PathAndQuery::from_static(oxmcp_grpc::CONNECT_PATH);
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    let rx = grpc
        .streaming(request, path, codec)
        .await
        .unwrap()
        .into_inner();
    GrpcStream { tx, rx }
}

impl GrpcStream {
    async fn send(&self, v: Value) -> bool {
        let envelope = Envelope {
            body: Some(Body::Json(v.to_string().into_bytes())),
        };
        self.tx.send(envelope).await.is_ok()
    }

    /// The next message that is not a notification, or the status that ended the stream.
    async fn next(&mut self, within: Duration) -> Result<Value, tonic::Code> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let m = tokio::time::timeout_at(deadline, self.rx.message())
                .await
                .map_err(|_| tonic::Code::DeadlineExceeded)?;
            match m {
                Ok(Some(e)) => {
                    let v: Value =
                        serde_json::from_slice(&oxmcp_grpc::to_json(e).unwrap()).unwrap();
                    if v.get("method").is_none() {
                        return Ok(v);
                    }
                }
                Ok(None) => return Err(tonic::Code::Ok),
                Err(s) => return Err(s.code()),
            }
        }
    }
}

async fn grpc_session(base: &str, token: &str) -> GrpcStream {
    let mut s = grpc_open(base, token).await;
    s.send(initialize(0)).await;
    s.next(NOTICE).await.unwrap();
    s.send(initialized()).await;
    s.send(whoami(1)).await;
    let answer = s.next(NOTICE).await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    s
}

/// Waits for the stream to end while calling `whoami` every 200 ms: its status.
async fn grpc_ends(mut s: GrpcStream) -> tonic::Code {
    let deadline = tokio::time::Instant::now() + NOTICE;
    let mut id = 100;
    loop {
        if tokio::time::Instant::now() > deadline {
            return tonic::Code::DeadlineExceeded;
        }
        id += 1;
        s.send(whoami(id)).await;
        match s.next(Duration::from_millis(200)).await {
            Ok(_) | Err(tonic::Code::DeadlineExceeded) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(code) => return code,
        }
    }
}

// ---- legacy HTTP+SSE ------------------------------------------------------------------

struct Sse {
    base: String,
    endpoint: String,
    events: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    pending: String,
}

impl Sse {
    async fn open(base: &str, token: &str) -> Sse {
        let r = reqwest::Client::new()
            .get(format!("{base}/sse"))
            .header("accept", "text/event-stream")
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let mut sse = Sse {
            base: base.to_owned(),
            endpoint: String::new(),
            events: r.bytes_stream().boxed(),
            pending: String::new(),
        };
        let (event, data) = sse.next_event(NOTICE).await.unwrap();
        assert_eq!(event, "endpoint");
        sse.endpoint = data;
        sse
    }

    /// The next event (name, data); `None` when the stream ended, or nothing came in time.
    async fn next_event(&mut self, within: Duration) -> Option<(String, String)> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let mut event = "message".to_owned();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(e) = line.strip_prefix("event: ") {
                        event = e.to_owned();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                if !data.is_empty() {
                    return Some((event, data));
                }
                continue;
            }
            match tokio::time::timeout_at(deadline, self.events.next()).await {
                Ok(Some(Ok(chunk))) => self.pending.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }

    async fn post(&self, token: &str, v: Value) -> u16 {
        reqwest::Client::new()
            .post(format!("{}{}", self.base, self.endpoint))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(v.to_string())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// The next answer on the stream, `None` if it ended (or nothing came in time).
    async fn answer(&mut self, within: Duration) -> Option<Value> {
        loop {
            let (_, data) = self.next_event(within).await?;
            let v: Value = serde_json::from_str(&data).unwrap();
            if v.get("method").is_none() {
                return Some(v);
            }
        }
    }
}

async fn sse_session(base: &str, token: &str) -> Sse {
    let mut s = Sse::open(base, token).await;
    assert_eq!(s.post(token, initialize(0)).await, 202);
    s.answer(NOTICE).await.unwrap();
    assert_eq!(s.post(token, initialized()).await, 202);
    assert_eq!(s.post(token, whoami(1)).await, 202);
    let answer = s.answer(NOTICE).await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    s
}

/// Whether the stream ends within [`NOTICE`] (posting `whoami` with `token` every 200 ms,
/// whose answers keep coming while it is open).
async fn sse_ends(mut s: Sse, token: &str) -> bool {
    let deadline = tokio::time::Instant::now() + NOTICE;
    let mut id = 100;
    while tokio::time::Instant::now() < deadline {
        id += 1;
        let _ = s.post(token, whoami(id)).await;
        let next = tokio::time::timeout(Duration::from_millis(400), s.next_event(NOTICE));
        if let Ok(None) = next.await {
            return true;
        }
    }
    false
}

// ---- the tests --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_jwt_ends_every_long_lived_connection() {
    let (issuer, _as) = start_as().await;
    let base = serve_all(&issuer, jwt_verifier(&issuer)).await;
    let token = jwt(&issuer, &base, "alice", 3);
    let ws = ws_session(&base, &token).await;
    let grpc = grpc_session(&base, &token).await;
    let sse = sse_session(&base, &token).await;
    let (code, status, ended) = tokio::join!(ws_closes(ws), grpc_ends(grpc), sse_ends(sse, &token));
    // The WebSocket closes with 1008 (policy), the gRPC stream ends UNAUTHENTICATED, the
    // legacy SSE stream ends: at the token's exp.
    assert_eq!(
        (code, status, ended),
        (1008, tonic::Code::Unauthenticated, true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_opaque_token_ends_every_long_lived_connection() {
    let (issuer, st) = start_as().await;
    let base = serve_all(&issuer, |_| introspection(&issuer)).await;
    st.lock().opaque.insert(
        "opaque-1".into(),
        json!({"active": true, "sub": "dave", "scope": "mcp", "exp": now() + 3600, "iss": issuer, "aud": INTROSPECTED_FOR}),
    );
    let ws = ws_session(&base, "opaque-1").await;
    let grpc = grpc_session(&base, "opaque-1").await;
    let sse = sse_session(&base, "opaque-1").await;
    // Still valid a few checks later.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut ws = ws;
    ws_send(&mut ws, whoami(2)).await;
    let answer = ws_next(&mut ws, NOTICE).await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    st.lock().opaque.remove("opaque-1");
    let (code, status, ended) =
        tokio::join!(ws_closes(ws), grpc_ends(grpc), sse_ends(sse, "opaque-1"));
    // Once the token is revoked: 1008, UNAUTHENTICATED, the end of the SSE stream.
    assert_eq!(
        (code, status, ended),
        (1008, tonic::Code::Unauthenticated, true)
    );
}

/// Our client over `url` with `token`: the client (`whoami` answers) and what presents fresh
/// tokens.
async fn our_client(
    url: &str,
    token: &str,
) -> (oxmcp_client::Client, oxmcp_http::reauth::Reauthorizer) {
    let headers = vec![("authorization".to_owned(), format!("Bearer {token}"))];
    let (handlers, config) = (
        oxmcp_client::ClientHandlers::new(),
        oxmcp_client::ClientConfig::default(),
    );
    if url.starts_with("ws") {
        let settings = oxmcp_ws::client::WsClientConfig::default().headers(headers);
        let (channels, link) = oxmcp_ws::client::connect(url, settings).await.unwrap();
        let reauthorizer = link.reauthorizer();
        let client = oxmcp_client::Client::connect_over(channels, link, handlers, config);
        (client.await.unwrap(), reauthorizer)
    } else {
        let settings = oxmcp_grpc::client::GrpcClientConfig::default().headers(headers);
        let (channels, link) = oxmcp_grpc::client::connect(url, settings).await.unwrap();
        let reauthorizer = link.reauthorizer();
        let client = oxmcp_client::Client::connect_over(channels, link, handlers, config);
        (client.await.unwrap(), reauthorizer)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_token_keeps_the_session_past_the_first_tokens_expiry() {
    let (issuer, _as) = start_as().await;
    let base = serve_all(&issuer, jwt_verifier(&issuer)).await;
    let short = jwt(&issuer, &base, "alice", 3);
    let ws_url = format!("{}/ws", base.replacen("http://", "ws://", 1));
    let grpc_url = base.replacen("http://", "grpc://", 1);
    let mut clients = Vec::new();
    for url in [&ws_url, &grpc_url] {
        let (client, reauthorizer) = our_client(url, &short).await;
        assert!(call_text(&client, "whoami").await.is_ok(), "{url}");
        // Another principal's token, or no valid token at all, is refused; the old one stays.
        let bob = jwt(&issuer, &base, "bob", 600);
        let e = reauthorizer.present(&bob).await.unwrap_err();
        assert!(e.to_string().contains("another principal"), "{url}: {e}");
        let e = reauthorizer.present("not-a-token").await.unwrap_err();
        assert!(e.to_string().contains("-32001"), "{url}: {e}");
        // A fresh token of alice's is taken, and its exp is told back.
        let fresh = jwt(&issuer, &base, "alice", 600);
        let exp = reauthorizer.present(&fresh).await.unwrap();
        assert!(exp.is_some_and(|e| e >= now() + 500), "{url}: {exp:?}");
        clients.push(client);
    }
    // The legacy stream takes the fresh token of any POST of its principal.
    let mut sse = sse_session(&base, &short).await;
    let fresh = jwt(&issuer, &base, "alice", 600);
    assert_eq!(sse.post(&fresh, whoami(2)).await, 202);
    assert!(sse.answer(NOTICE).await.is_some());
    // Past the first token's exp, everything still works, in the same sessions.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for client in &clients {
        assert!(call_text(client, "whoami").await.is_ok());
    }
    assert_eq!(sse.post(&fresh, whoami(3)).await, 202);
    let answer = sse.answer(NOTICE).await.expect("the stream is still open");
    assert_eq!(answer["id"], 3, "{answer}");
    // A POST with the older token (still within the verifier's clock-skew allowance) does
    // not take the stream back to it.
    assert_eq!(sse.post(&short, whoami(4)).await, 202);
    assert_eq!(sse.answer(NOTICE).await.expect("open")["id"], 4);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sse.post(&fresh, whoami(5)).await, 202);
    assert_eq!(sse.answer(NOTICE).await.expect("still open")["id"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_client_presents_a_token_on_the_websocket() {
    let (issuer, _as) = start_as().await;
    let base = serve_all(&issuer, jwt_verifier(&issuer)).await;
    let short = jwt(&issuer, &base, "alice", 3);
    let mut s = ws_session(&base, &short).await;
    let present = |id: u64, token: &str| json!({"jsonrpc":"2.0","id":id,"method":"oxmcp/authorize","params":{"token":token}});
    ws_send(&mut s, present(7, &jwt(&issuer, &base, "mallory", 600))).await;
    let refused = ws_next(&mut s, NOTICE).await.unwrap();
    assert_eq!(refused["id"], 7);
    assert_eq!(
        refused["error"]["code"],
        oxmcp_http::reauth::TOKEN_REFUSED,
        "{refused}"
    );
    assert_eq!(
        refused["error"]["data"]["error"], "invalid_token",
        "{refused}"
    );
    ws_send(
        &mut s,
        json!({"jsonrpc":"2.0","id":8,"method":"oxmcp/authorize","params":{}}),
    )
    .await;
    assert_eq!(
        ws_next(&mut s, NOTICE).await.unwrap()["error"]["code"],
        -32602
    );
    ws_send(&mut s, present(9, &jwt(&issuer, &base, "alice", 600))).await;
    let taken = ws_next(&mut s, NOTICE).await.unwrap();
    assert!(taken["result"]["expiresAt"].is_u64(), "{taken}");
    tokio::time::sleep(Duration::from_secs(5)).await;
    ws_send(&mut s, whoami(10)).await;
    let answer = ws_next(&mut s, NOTICE).await.expect("still open");
    assert_eq!(answer["id"], 10, "{answer}");
}

/// Whether an SSE response body ends within [`NOTICE`] (keep-alive comments do not count).
async fn http_stream_ends(mut r: reqwest::Response) -> bool {
    let deadline = tokio::time::Instant::now() + NOTICE;
    loop {
        match tokio::time::timeout_at(deadline, r.chunk()).await {
            Err(_) => return false,
            Ok(Ok(Some(_))) => {}
            Ok(_) => return true,
        }
    }
}

/// Streamable HTTP's long-lived streams hold their token too: the standalone GET stream of a
/// 2025-11-25 session and a 2026-07-28 `subscriptions/listen` stream end at the token's
/// `exp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_jwt_ends_the_streamable_http_streams() {
    let (issuer, _as) = start_as().await;
    let base = serve_all(&issuer, jwt_verifier(&issuer)).await;
    let url = format!("{base}/mcp");
    let token = jwt(&issuer, &base, "alice", 3);
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    };
    let init = post(initialize(1)).send().await.unwrap();
    assert_eq!(init.status(), 200);
    let sid = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let note = post(initialized())
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(note.status(), 202);
    let get = http
        .get(&url)
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let listen = json!({"jsonrpc":"2.0","id":2,"method":"subscriptions/listen",
        "params":{"notifications":{"toolsListChanged":true},"_meta":meta}});
    let listen = post(listen)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .send()
        .await
        .unwrap();
    assert_eq!(listen.status(), 200);
    let (get_ended, listen_ended) = tokio::join!(http_stream_ends(get), http_stream_ends(listen));
    assert_eq!((get_ended, listen_ended), (true, true));
}

/// One gRPC unary `Call` of `request` with `token`: its answer, or the status it ended with.
async fn grpc_call(base: &str, token: &str, request: Value) -> Result<Value, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(base.to_owned())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let mut call = tonic::Request::new(Envelope {
        body: Some(Body::Json(request.to_string().into_bytes())),
    });
    call.metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let path = axum::http::uri::PathAndQuery::from_static(oxmcp_grpc::CALL_PATH);
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    let answer = grpc.unary(call, path, codec).await?.into_inner();
    Ok(serde_json::from_slice(&oxmcp_grpc::to_json(answer).unwrap()).unwrap())
}

/// `request` as a 2026-07-28 request (its `_meta` says who is asking, and in which revision).
fn modern(mut request: Value) -> Value {
    request["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    request
}

/// A 2026-07-28 call of the `sleep` tool, which takes a minute.
fn slow_call(id: u64) -> Value {
    modern(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"sleep","arguments":{"secs":60}}}))
}

/// A gRPC unary `Call` holds its token like a `Connect` stream: a slow tool call through
/// `Call` ends `UNAUTHENTICATED` at the token's `exp`, and when an opaque token is revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_call_ends_with_its_token() {
    let (issuer, st) = start_as().await;
    let base = serve_all(&issuer, jwt_verifier(&issuer)).await;
    let token = jwt(&issuer, &base, "alice", 3);
    // The call works with a good token (a `whoami` is answered).
    let answer = grpc_call(&base, &token, modern(whoami(1))).await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    let call = grpc_call(&base, &token, slow_call(2));
    let ended = tokio::time::timeout(NOTICE, call).await;
    let status = ended
        .expect("the call ends at the token's exp")
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");

    let base = serve_all(&issuer, |_| introspection(&issuer)).await;
    st.lock().opaque.insert(
        "opaque-call".into(),
        json!({"active": true, "sub": "dave", "scope": "mcp", "exp": now() + 3600, "iss": issuer, "aud": INTROSPECTED_FOR}),
    );
    let call = tokio::spawn({
        let base = base.clone();
        async move { grpc_call(&base, "opaque-call", slow_call(3)).await }
    });
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!call.is_finished(), "the call runs while its token is good");
    st.lock().opaque.remove("opaque-call");
    let ended = tokio::time::timeout(NOTICE, call).await;
    let status = ended
        .expect("the call ends once its token is revoked")
        .unwrap()
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
}

/// A fresh token whose check is slow (its introspection takes 3 s) does not hold up the
/// connection it is presented on: a `ping` sent right after the presentation is answered
/// first, on a WebSocket and on a gRPC `Connect` stream; the presentation's answer follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_token_check_does_not_hold_up_the_connection() {
    let (issuer, st) = start_as().await;
    let base = serve_all(&issuer, |_| introspection(&issuer)).await;
    {
        let mut s = st.lock();
        for token in ["opaque-1", "slow-ws", "slow-grpc"] {
            s.opaque.insert(
                token.into(),
                json!({"active": true, "sub": "dave", "scope": "mcp", "exp": now() + 3600, "iss": issuer, "aud": INTROSPECTED_FOR}),
            );
        }
        s.slow.insert("slow-ws".into(), Duration::from_secs(3));
        s.slow.insert("slow-grpc".into(), Duration::from_secs(3));
    }
    let present = |token: &str| json!({"jsonrpc":"2.0","id":7,"method":"oxmcp/authorize","params":{"token":token}});
    let ping = json!({"jsonrpc":"2.0","id":8,"method":"ping"});

    let mut ws = ws_session(&base, "opaque-1").await;
    ws_send(&mut ws, present("slow-ws")).await;
    ws_send(&mut ws, ping.clone()).await;
    // Another presentation while one is being checked is answered at once: not now.
    let mut again = present("opaque-1");
    again["id"] = json!(9);
    ws_send(&mut ws, again).await;
    let mut first_two = Vec::new();
    for _ in 0..2 {
        let answer = ws_next(&mut ws, NOTICE).await.unwrap();
        if answer["id"] == 9 {
            assert_eq!(answer["error"]["code"], -32000, "{answer}");
        }
        first_two.push(answer["id"].clone());
    }
    first_two.sort_by_key(|id| id.as_u64());
    assert_eq!(
        first_two,
        [8, 9],
        "the ping or the second presentation waited for the token check"
    );
    let last = ws_next(&mut ws, NOTICE).await.unwrap();
    assert_eq!(last["id"], 7, "{last}");
    assert!(last.get("result").is_some(), "the token was taken: {last}");

    let mut grpc = grpc_session(&base, "opaque-1").await;
    grpc.send(present("slow-grpc")).await;
    grpc.send(ping).await;
    let first = grpc.next(NOTICE).await.unwrap();
    assert_eq!(
        first["id"], 8,
        "the ping waited for the token check: {first}"
    );
    let second = grpc.next(NOTICE).await.unwrap();
    assert_eq!(second["id"], 7, "{second}");
    assert!(
        second.get("result").is_some(),
        "the token was taken: {second}"
    );
}

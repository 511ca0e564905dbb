//! The HTTP transports host any service (`oxmcp_engine::Serve`), not only `oxmcp_server::Server`:
//! here a hand-written JSON-RPC service, over Streamable HTTP sessions, 2026-07-28 requests
//! and the legacy HTTP+SSE transport, on real sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use oxmcp_engine::{Connection, EngineConfig, HandlerResult, Peer, RequestContext, Serve, Service};
use oxmcp_http::{HttpConfig, LegacySse, StreamableHttp};
use oxmcp_jsonrpc::{ErrorObject, Notification, Request, to_raw};
use serde_json::{Value, json};

/// Answers `initialize` and `shout` (the text upper-cased); counts connections served.
#[derive(Default)]
struct Shouter {
    connections: AtomicUsize,
}

struct ShoutService;

impl Service for ShoutService {
    fn call(&self, request: Request, _ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
        Box::pin(async move {
            let params: Value = request
                .params
                .as_deref()
                .map(|p| serde_json::from_str(p.get()).unwrap())
                .unwrap_or(Value::Null);
            let result = match request.method.as_str() {
                "initialize" => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "shouter", "version": "1"}
                }),
                "shout" => json!({ "text": params["text"].as_str().unwrap_or("").to_uppercase() }),
                other => return Err(ErrorObject::method_not_found(other)),
            };
            Ok(to_raw(&result).unwrap())
        })
    }

    fn notify(&self, _notification: Notification, _peer: &Peer) {}
}

impl Serve for Shouter {
    fn engine_config(&self) -> EngineConfig {
        EngineConfig::default()
    }

    fn serve(&self, connection: Connection) -> BoxFuture<'static, ()> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        let peer = Peer::with_config(connection.outgoing, &connection.config);
        Box::pin(oxmcp_engine::run(
            peer,
            connection.incoming,
            Arc::new(ShoutService),
            connection.config,
        ))
    }
}

async fn listen(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { oxmcp_http::serve_router(listener, router).await });
    base
}

fn post(url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(s) = session {
        r = r
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    r
}

#[tokio::test]
async fn streamable_http_hosts_a_hand_written_service() {
    let shouter = Arc::new(Shouter::default());
    let http = StreamableHttp::new(
        shouter.clone(),
        HttpConfig::default().response_mode(oxmcp_http::ResponseMode::Json),
    );
    let url = format!("{}/mcp", listen(http.router()).await);
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = post(&url, None, &init).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "shouter");
    let done = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let r = post(&url, Some(&session), &done).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let shout = json!({"jsonrpc":"2.0","id":1,"method":"shout","params":{"text":"hi"}});
    let r = post(&url, Some(&session), &shout).send().await.unwrap();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(
        answer,
        json!({"jsonrpc":"2.0","id":1,"result":{"text":"HI"}})
    );
    let unknown = json!({"jsonrpc":"2.0","id":2,"method":"whisper"});
    let r = post(&url, Some(&session), &unknown).send().await.unwrap();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32601);
    assert_eq!(shouter.connections.load(Ordering::Relaxed), 1);
    assert_eq!(http.session_count(), 1);
}

#[tokio::test]
async fn a_2026_request_runs_on_its_own_connection_of_the_service() {
    let shouter = Arc::new(Shouter::default());
    let http = StreamableHttp::new(shouter.clone(), HttpConfig::default());
    let url = format!("{}/mcp", listen(http.router()).await);
    let shout = json!({"jsonrpc":"2.0","id":7,"method":"shout","params":{"text":"modern",
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}});
    for _ in 0..2 {
        let r = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "shout")
            .body(shout.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let answer: Value = r.json().await.unwrap();
        assert_eq!(answer["result"]["text"], "MODERN");
    }
    assert_eq!(shouter.connections.load(Ordering::Relaxed), 2);
    assert_eq!(http.session_count(), 0, "no session for 2026-07-28");
}

#[tokio::test]
async fn legacy_sse_hosts_a_hand_written_service() {
    let shouter = Arc::new(Shouter::default());
    let legacy = LegacySse::new(shouter.clone(), HttpConfig::default());
    let base = listen(legacy.router()).await;
    let mut stream = reqwest::Client::new()
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut parser = oxmcp_http::sse::SseParser::new(1 << 20);
    let mut events = Vec::new();
    let mut endpoint = None;
    while endpoint.is_none() || events.len() < 2 {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.chunk())
            .await
            .expect("an event in time")
            .unwrap()
            .expect("the stream stays open");
        for e in parser.push(&chunk) {
            if e.event == "endpoint" {
                let path = e.data.clone();
                endpoint = Some(format!("{base}{path}"));
                let client = reqwest::Client::new();
                for body in [
                    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                        "protocolVersion":"2024-11-05","capabilities":{},
                        "clientInfo":{"name":"t","version":"1"}}}),
                    json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                    json!({"jsonrpc":"2.0","id":1,"method":"shout","params":{"text":"old"}}),
                ] {
                    let r = client
                        .post(format!("{base}{path}"))
                        .header("content-type", "application/json")
                        .body(body.to_string())
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 202);
                }
            } else {
                events.push(serde_json::from_str::<Value>(&e.data).unwrap());
            }
        }
    }
    assert_eq!(events[0]["result"]["serverInfo"]["name"], "shouter");
    assert_eq!(
        events[1],
        json!({"jsonrpc":"2.0","id":1,"result":{"text":"OLD"}})
    );
    assert_eq!(shouter.connections.load(Ordering::Relaxed), 1);
}

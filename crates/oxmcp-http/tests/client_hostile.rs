//! The client transport against hostile or broken servers, over real sockets on 127.0.0.1:
//! redirects to another origin, and what the client must never send there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, ConnectError};
use oxmcp_http::HttpClientConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;
use common::{connect_with, listen, until};

/// What a fake server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    /// When it arrived.
    at: Instant,
    method: String,
    path: String,
    headers: HeaderMap,
    body: String,
}

impl Seen {
    /// The JSON-RPC method and id of the body, if it is a single message.
    fn rpc(&self) -> (Option<String>, Value) {
        let v: Value = serde_json::from_str(&self.body).unwrap_or(Value::Null);
        (v["method"].as_str().map(str::to_owned), v["id"].clone())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// An axum server answering every request with `answer`; its base URL and what it saw.
async fn fake<F>(answer: F) -> (String, Log)
where
    F: Fn(&Seen) -> Response + Clone + Send + Sync + 'static,
{
    let log: Log = Arc::default();
    let l = log.clone();
    let app = axum::Router::new().fallback(move |req: Request| {
        let (answer, log) = (answer.clone(), l.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20)
                .await
                .unwrap_or_default();
            let seen = Seen {
                at: Instant::now(),
                method: parts.method.to_string(),
                path: parts.uri.to_string(),
                headers: parts.headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            log.lock().unwrap().push(seen.clone());
            answer(&seen)
        }
    });
    (listen(app).await, log)
}

/// The answer to `initialize`: tools declared, a session id, the version asked for.
fn initialize_ok(seen: &Seen) -> Response {
    let v: Value = serde_json::from_str(&seen.body).unwrap();
    let body = json!({
        "jsonrpc": "2.0",
        "id": v["id"],
        "result": {
            "protocolVersion": v["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"}
        }
    });
    (
        [
            ("content-type", "application/json"),
            ("mcp-session-id", "session-1"),
        ],
        body.to_string(),
    )
        .into_response()
}

fn redirect_to(location: String) -> Response {
    (
        StatusCode::TEMPORARY_REDIRECT,
        [("location", location)],
        "moved",
    )
        .into_response()
}

/// A raw TCP listener that records every connection made to it and the bytes it received.
struct Recorder {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    async fn start() -> Recorder {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let slot = {
                    let mut s = s.lock().unwrap();
                    s.push("<connected>".to_owned());
                    s.len() - 1
                };
                let s = s.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 1 << 16];
                    let read =
                        tokio::time::timeout(Duration::from_millis(500), sock.read(&mut buf));
                    let n = read.await.ok().and_then(Result::ok).unwrap_or(0);
                    s.lock().unwrap()[slot] = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let _ = sock
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                              content-length: 0\r\nconnection: close\r\n\r\n",
                        )
                        .await;
                });
            }
        });
        Recorder { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Asserts that nothing at all arrived. A connection never made leaves no sign to wait
    /// for: callers have already seen the client refuse (an error, or the session closed), so
    /// a request that went there anyway would be under way; 200 ms are for such a straggler.
    async fn assert_untouched(&self) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let seen = self.seen.lock().unwrap().clone();
        assert!(
            seen.is_empty(),
            "the other origin was contacted {} time(s): {seen:#?}",
            seen.len()
        );
    }
}

fn secrets() -> HttpClientConfig {
    HttpClientConfig::default().headers(vec![
        ("Authorization".into(), "Bearer s3cret".into()),
        ("X-Api-Key".into(), "k3y".into()),
    ])
}

/// Connects and performs the handshake with `config`; `None` if it hangs.
async fn handshake_with(
    url: &str,
    http: HttpClientConfig,
    config: ClientConfig,
) -> Option<Result<Client, ConnectError>> {
    let handshake = connect_with(url, http, ClientHandlers::new(), config);
    tokio::time::timeout(Duration::from_secs(20), handshake)
        .await
        .ok()
        .map(|(client, _handle)| client)
}

/// The client after its handshake with `config`, which must succeed.
async fn connected(url: &str, http: HttpClientConfig, config: ClientConfig) -> Client {
    handshake_with(url, http, config)
        .await
        .expect("the handshake hung")
        .expect("the handshake failed")
}

/// [`handshake_with`] the default client settings.
async fn handshake(url: &str, http: HttpClientConfig) -> Option<Result<Client, ConnectError>> {
    handshake_with(url, http, ClientConfig::default()).await
}

/// Waits until the server has seen a request like `what`.
async fn wait_for(log: &Log, what: impl Fn(&Seen) -> bool) -> bool {
    until(5, || log.lock().unwrap().iter().any(&what)).await
}

#[tokio::test]
async fn no_request_follows_a_redirect_to_another_origin() {
    let other = Recorder::start().await;
    let target = other.url("/mcp");
    // A session is set up normally; then every request is sent to another port.
    let (base, log) = fake(move |seen| match seen.rpc().0.as_deref() {
        Some("initialize") => initialize_ok(seen),
        Some("notifications/initialized") => StatusCode::ACCEPTED.into_response(),
        _ => redirect_to(target.clone()),
    })
    .await;
    let (client, handle) = connect_with(
        &format!("{base}/mcp"),
        secrets(),
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await;
    let client = client.unwrap();
    assert_eq!(handle.session_id().as_deref(), Some("session-1"));
    // A request (POST with a session id and a body).
    let listed = tokio::time::timeout(Duration::from_secs(5), client.list_tools()).await;
    // The standalone GET stream.
    assert!(wait_for(&log, |s| s.method == "GET").await, "no GET stream");
    // The DELETE that ends the session.
    handle.close().await;
    assert!(wait_for(&log, |s| s.method == "DELETE").await, "no DELETE");
    other.assert_untouched().await;
    let e = listed
        .expect("a refused redirect must not hang the call")
        .unwrap_err();
    let CallError::Transport(e) = e else {
        panic!("{e:?}")
    };
    assert_eq!(e.status(), Some(307), "{e:?}");
    assert!(e.to_string().contains("redirect"), "{e}");
}

#[tokio::test]
async fn modern_requests_follow_no_redirect_to_another_origin() {
    let other = Recorder::start().await;
    let target = other.url("/mcp");
    let (base, log) = fake(move |_| redirect_to(target.clone())).await;
    let config = ClientConfig::default().era(oxmcp_client::EraChoice::Modern);
    let client = handshake_with(&format!("{base}/mcp"), secrets(), config).await;
    other.assert_untouched().await;
    let seen = log.lock().unwrap().clone();
    assert_eq!(seen[0].headers["mcp-method"], "server/discover", "{seen:?}");
    let Some(Err(ConnectError::Initialize(CallError::Transport(e)))) = client else {
        panic!("connected through a redirect, or hung")
    };
    assert_eq!(e.status(), Some(307));
}

#[tokio::test]
async fn the_legacy_stream_follows_no_redirect_to_another_origin() {
    let other = Recorder::start().await;
    let target = other.url("/sse");
    // Not a Streamable HTTP server (405 to the POST probe); its GET is redirected away.
    let (base, log) = fake(move |seen| match seen.method.as_str() {
        "GET" => redirect_to(target.clone()),
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    })
    .await;
    let client = handshake(&format!("{base}/sse"), secrets()).await;
    assert!(log.lock().unwrap().iter().any(|s| s.method == "GET"));
    other.assert_untouched().await;
    let Some(Err(ConnectError::Initialize(CallError::Transport(e)))) = client else {
        panic!("connected through a redirect, or hung")
    };
    assert_eq!(e.status(), Some(307));
    assert!(e.to_string().contains("not followed"), "{e}");
}

#[tokio::test]
async fn legacy_posts_follow_no_redirect_to_another_origin() {
    let other = Recorder::start().await;
    let target = other.url("/message");
    // A legacy server whose message endpoint redirects to another port.
    let (base, _log) = fake(
        move |seen| match (seen.method.as_str(), seen.path.as_str()) {
            ("GET", "/sse") => {
                let first = futures::stream::once(async {
                    Ok::<_, std::convert::Infallible>("event: endpoint\ndata: /message\n\n")
                });
                let body = axum::body::Body::from_stream(futures::StreamExt::chain(
                    first,
                    futures::stream::pending(),
                ));
                ([("content-type", "text/event-stream")], body).into_response()
            }
            ("POST", "/message") => redirect_to(target.clone()),
            _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        },
    )
    .await;
    let client = handshake(&format!("{base}/sse"), secrets()).await;
    other.assert_untouched().await;
    let Some(Err(ConnectError::Initialize(CallError::Transport(e)))) = client else {
        panic!("connected through a redirect, or hung")
    };
    assert_eq!(e.status(), Some(307));
}

#[tokio::test]
async fn redirects_within_the_origin_keep_headers_and_body() {
    // `/old` moved to `/mcp` on the same server (a trailing-slash redirect is the usual case).
    let (base, log) = fake(
        move |seen| match (seen.path.as_str(), seen.rpc().0.as_deref()) {
            ("/old", _) => redirect_to("/mcp".to_owned()),
            (_, Some("initialize")) => initialize_ok(seen),
            (_, Some("tools/list")) => {
                let body = json!({"jsonrpc": "2.0", "id": seen.rpc().1, "result": {"tools": []}});
                ([("content-type", "application/json")], body.to_string()).into_response()
            }
            (_, Some(_)) => StatusCode::ACCEPTED.into_response(),
            (_, None) => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        },
    )
    .await;
    let client = handshake(&format!("{base}/old"), secrets())
        .await
        .unwrap()
        .unwrap();
    assert!(client.list_tools().await.unwrap().is_empty());
    // Every POST reached `/mcp` through the redirect with its headers and body.
    let log = log.lock().unwrap().clone();
    let posts: Vec<&Seen> = log.iter().filter(|s| s.method == "POST").collect();
    let methods = |path: &str| -> Vec<String> {
        let on = posts.iter().filter(|s| s.path == path);
        on.map(|s| s.rpc().0.unwrap_or_default()).collect()
    };
    for m in ["initialize", "tools/list"] {
        assert!(
            methods("/old").contains(&m.to_owned()),
            "{m} sent to the URL given"
        );
        assert!(
            methods("/mcp").contains(&m.to_owned()),
            "{m} redirected with its body"
        );
    }
    for s in posts.iter().filter(|s| s.path == "/mcp") {
        assert_eq!(s.headers["authorization"], "Bearer s3cret");
        assert_eq!(s.headers["x-api-key"], "k3y");
        if s.rpc().0.as_deref() != Some("initialize") {
            assert_eq!(s.headers["mcp-session-id"], "session-1");
        }
    }
}

/// A legacy HTTP+SSE server: 405 to every POST, and an SSE stream announcing `endpoint`.
async fn legacy_announcing(endpoint: String) -> String {
    let (base, _log) = fake(move |seen| match seen.method.as_str() {
        "GET" => {
            let event = format!("event: endpoint\ndata: {endpoint}\n\n");
            let first = futures::stream::once(async { Ok::<_, std::convert::Infallible>(event) });
            let body = axum::body::Body::from_stream(futures::StreamExt::chain(
                first,
                futures::stream::pending(),
            ));
            ([("content-type", "text/event-stream")], body).into_response()
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    })
    .await;
    base
}

#[tokio::test]
async fn a_legacy_endpoint_on_another_origin_is_refused() {
    let other = Recorder::start().await;
    let b = other.addr;
    // Endpoints naming the other listener; the client must refuse them with a clear error.
    for endpoint in [
        format!("http://{b}/message"),
        format!("//{b}/message"),
        format!("/\\{b}/message"),
        format!("\\\\{b}\\message"),
        format!("http://{}@{b}/message", "127.0.0.1:1"),
        format!(" http://{b}/message"),
    ] {
        let base = legacy_announcing(endpoint.clone()).await;
        let client = handshake(&format!("{base}/sse"), secrets()).await;
        let Some(Err(ConnectError::Initialize(CallError::Transport(e)))) = client else {
            panic!("{endpoint:?}: connected, or hung")
        };
        assert!(
            e.to_string().contains("another origin"),
            "{endpoint:?}: {e}"
        );
    }
    // A relative endpoint resolves against the URL, as a browser would: against a URL without
    // a path, `127.0.0.1:PORT/message` is the path `/127.0.0.1:PORT/message` on the same server.
    let base = legacy_announcing(format!("{b}/message")).await;
    let client = handshake(&base, secrets()).await;
    other.assert_untouched().await;
    assert!(
        matches!(client, Some(Err(_))),
        "the fake server has no such path"
    );
}

/// A server whose SSE streams say `retry: 0` and end at once: the POST answer to `tools/list`
/// (without the response) and every GET.
async fn retry_zero_server() -> (String, Log) {
    let stream = || {
        let body = "id: 1\nretry: 0\n\n";
        ([("content-type", "text/event-stream")], body).into_response()
    };
    fake(
        move |seen| match (seen.method.as_str(), seen.rpc().0.as_deref()) {
            ("GET", _) => stream(),
            (_, Some("initialize")) => initialize_ok(seen),
            (_, Some("tools/list")) => stream(),
            _ => StatusCode::ACCEPTED.into_response(),
        },
    )
    .await
}

/// The time between the first GET the server receives and the `n`th after it (waiting up to
/// 20 s for them): at least `n` reconnection delays.
async fn time_for_gets(log: &Log, n: usize) -> Duration {
    let gets = || -> Vec<Instant> {
        let log = log.lock().unwrap();
        log.iter()
            .filter(|s| s.method == "GET")
            .map(|s| s.at)
            .collect()
    };
    let reopened = until(20, || gets().len() > n).await;
    let at = gets();
    assert!(reopened, "the stream is still reopened: {} GETs", at.len());
    at[n] - at[0]
}

#[tokio::test]
async fn retry_zero_does_not_make_the_standalone_stream_spin() {
    let (base, log) = retry_zero_server().await;
    let _client = handshake(&format!("{base}/mcp"), HttpClientConfig::default())
        .await
        .unwrap()
        .unwrap();
    let floor = HttpClientConfig::default().min_reconnect_delay;
    assert_eq!(floor, Duration::from_millis(100));
    let spent = time_for_gets(&log, 5).await;
    assert!(
        spent >= 5 * floor,
        "5 reopened GETs in {spent:?} with a {floor:?} floor"
    );
}

#[tokio::test]
async fn retry_zero_does_not_make_resumption_spin() {
    let (base, log) = retry_zero_server().await;
    let http = HttpClientConfig::default().standalone_stream(false);
    let client = handshake(&format!("{base}/mcp"), http)
        .await
        .unwrap()
        .unwrap();
    // The answer never comes: the call keeps resuming its stream until it is dropped.
    let call = tokio::spawn(async move { client.list_tools().await });
    let spent = time_for_gets(&log, 5).await;
    call.abort();
    assert!(
        spent >= 5 * Duration::from_millis(100),
        "5 resumption GETs in {spent:?} with a 100 ms floor"
    );
}

/// A server whose `tools/list` pages are all empty, each with a `nextCursor` from `cursor`.
async fn endless_pages(
    cursor: impl Fn(usize) -> String + Clone + Send + Sync + 'static,
) -> (String, Log) {
    let pages = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    fake(move |seen| match seen.rpc() {
        (Some(m), _) if m == "initialize" => initialize_ok(seen),
        (Some(m), id) if m == "tools/list" => {
            let n = pages.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let result = json!({"tools": [], "nextCursor": cursor(n)});
            let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
            ([("content-type", "application/json")], body.to_string()).into_response()
        }
        _ => StatusCode::ACCEPTED.into_response(),
    })
    .await
}

fn pages_asked(log: &Log) -> usize {
    let log = log.lock().unwrap();
    log.iter()
        .filter(|s| s.rpc().0.as_deref() == Some("tools/list"))
        .count()
}

/// `list_tools` of a client with `config` against the server at `base`: why it failed.
async fn list_tools_fails(base: &str, config: ClientConfig) -> String {
    let client = connected(&format!("{base}/mcp"), HttpClientConfig::default(), config).await;
    let listed = tokio::time::timeout(Duration::from_secs(20), client.list_tools())
        .await
        .expect("list_tools never ended");
    let Err(CallError::Protocol(why)) = listed else {
        panic!("{listed:?}")
    };
    why
}

#[tokio::test]
async fn list_tools_stops_on_a_repeated_cursor() {
    let (base, log) = endless_pages(|_| "again".to_owned()).await;
    let why = list_tools_fails(&base, ClientConfig::default()).await;
    assert!(why.contains("\"again\"") && why.contains("repeat"), "{why}");
    assert_eq!(pages_asked(&log), 2);
}

#[tokio::test]
async fn list_tools_stops_after_max_pages() {
    assert_eq!(ClientConfig::default().max_pages, 1000);
    let (base, log) = endless_pages(|n| format!("page-{n}")).await;
    let config = ClientConfig::default().max_pages(20);
    let why = list_tools_fails(&base, config).await;
    assert!(why.contains("20 pages"), "{why}");
    assert_eq!(pages_asked(&log), 20);
}

/// A server that sends its server-to-client messages only on the standalone GET stream (as
/// the TypeScript SDK does for requests not tied to one of the client's) and drops them when
/// none is open, and that is slow to accept `initialized`: requests the client sends right
/// after the handshake must wait for the GET stream, or their messages are lost.
#[tokio::test]
async fn requests_after_the_handshake_wait_for_the_standalone_stream() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stream_open = Arc::new(AtomicBool::new(false));
    let on_post = stream_open.clone();
    let on_get = stream_open.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: String| {
            let stream_open = on_post.clone();
            async move {
                let v: Value = serde_json::from_str(&body).unwrap();
                let answer = |result: Value| {
                    (
                        [
                            ("content-type", "application/json"),
                            ("mcp-session-id", "session-1"),
                        ],
                        json!({"jsonrpc":"2.0","id":v["id"],"result":result}).to_string(),
                    )
                        .into_response()
                };
                match v["method"].as_str() {
                    Some("initialize") => answer(json!({
                        "protocolVersion": v["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "slow-to-accept", "version": "1"}
                    })),
                    Some("notifications/initialized") => {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        StatusCode::ACCEPTED.into_response()
                    }
                    Some("tools/call") => {
                        let seen = if stream_open.load(Ordering::SeqCst) {
                            "with stream"
                        } else {
                            "no stream"
                        };
                        answer(json!({"content":[{"type":"text","text":seen}]}))
                    }
                    _ => answer(json!({})),
                }
            }
        })
        .get(move || {
            let stream_open = on_get.clone();
            async move {
                stream_open.store(true, Ordering::SeqCst);
                let first = futures::stream::once(async {
                    Ok::<_, std::convert::Infallible>(axum::body::Bytes::from("id: 0\ndata: \n\n"))
                });
                let body = axum::body::Body::from_stream(first.chain(futures::stream::pending()));
                ([("content-type", "text/event-stream")], body).into_response()
            }
        }),
    );
    let url = format!("{}/mcp", listen(app).await);
    let client = handshake(&url, HttpClientConfig::default())
        .await
        .unwrap()
        .unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("anything", serde_json::Map::new()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(r.content[0].as_text(), Some("with stream"));
}

/// A server that answers `initialize`, then `tools/list` with a JSON body of `len` bytes
/// declared in `Content-Length`, of which it sends only the first 1 KiB and then nothing
/// more for a minute.
async fn stalled_body_of(len: usize) -> String {
    let (base, _log) = fake(move |seen| match seen.rpc() {
        (Some(method), _) if method == "initialize" => initialize_ok(seen),
        (Some(_), id) if !id.is_null() => {
            let start = futures::stream::iter([Ok::<_, std::io::Error>(vec![b' '; 1024])]);
            let stall = futures::stream::once(async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(Vec::new())
            });
            Response::builder()
                .header("content-type", "application/json")
                .header("content-length", len.to_string())
                .body(axum::body::Body::from_stream(start.chain(stall)))
                .unwrap()
        }
        _ => StatusCode::ACCEPTED.into_response(),
    })
    .await;
    base
}

/// A body declared longer than `max_message` is refused at its headers: the client does not
/// wait for bytes it would refuse anyway (a server could hold the call open that way). A
/// body declared within the limit is still waited for.
#[tokio::test]
async fn a_body_declared_past_max_message_is_refused_unread() {
    let http = HttpClientConfig::default()
        .max_message(64 * 1024)
        .standalone_stream(false);
    let base = stalled_body_of(10 * 1024 * 1024).await;
    let client = connected(
        &format!("{base}/mcp"),
        http.clone(),
        ClientConfig::default(),
    )
    .await;
    let listed = tokio::time::timeout(Duration::from_secs(5), client.list_tools())
        .await
        .expect("the client waited for a body it must refuse");
    let why = format!("{:?}", listed.unwrap_err());
    assert!(why.contains("larger than 65536 bytes"), "{why}");

    let base = stalled_body_of(32 * 1024).await;
    let client = connected(&format!("{base}/mcp"), http, ClientConfig::default()).await;
    let waited = tokio::time::timeout(Duration::from_secs(2), client.list_tools()).await;
    assert!(
        waited.is_err(),
        "a body within the limit was not waited for"
    );
}

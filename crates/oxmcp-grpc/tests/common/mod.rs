//! The harness every HTTP test file shares: a demo server, serving it (or any router) on a
//! real socket on 127.0.0.1, raw POSTs, sessions, reading a JSON or SSE answer, and waiting
//! for a condition.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use oxmcp_client::{Client, ClientConfig, ClientHandlers, ConnectError};
use oxmcp_http::{HttpClientConfig, HttpClientHandle, HttpConfig, ServeOptions, StreamableHttp};
use oxmcp_server::{Ctx, Server, ServerBuilder};
use oxmcp_types::LoggingLevel;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Echo {
    pub message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Nothing {}

/// The tools [`with_tools`] adds, in the order it adds them.
pub const TOOLS: &[&str] = &[
    "sleep",
    "chatty_sleep",
    "echo",
    "chatty_echo",
    "chatty",
    "polling",
    "boom",
];

/// Sleeps `ms` ms, or less if the request is cancelled meanwhile (its handler then returns
/// at once, as a well-behaved one does, rather than hold its slot for the engine's grace).
async fn nap(c: &Ctx, ms: u64) {
    tokio::select! {
        () = c.cancellation().cancelled() => {}
        () = tokio::time::sleep(Duration::from_millis(ms)) => {}
    }
}

/// Adds the test tools to `builder`:
/// - `sleep {ms}` answers "slept MS" after MS ms (or returns early if cancelled; nothing is
///   sent then); `chatty_sleep {ms}` logs first;
/// - `echo {message}` answers the message; `chatty_echo {message}` logs "echoing" first;
/// - `chatty {}` logs "working", then answers "done";
/// - `polling {}` closes its SSE stream, then answers "late answer" 50 ms later;
/// - `boom {}` panics.
pub fn with_tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool("sleep", "sleeps", |c: Ctx, a: Sleep| async move {
            nap(&c, a.ms).await;
            Ok::<_, String>(format!("slept {}", a.ms))
        })
        .tool(
            "chatty_sleep",
            "logs, then sleeps",
            |c: Ctx, a: Sleep| async move {
                c.log(LoggingLevel::Info, None, json!("going to sleep"))
                    .await;
                nap(&c, a.ms).await;
                Ok::<_, String>(format!("slept {}", a.ms))
            },
        )
        .tool("echo", "echoes", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .tool(
            "chatty_echo",
            "logs, then echoes",
            |c: Ctx, a: Echo| async move {
                c.log(LoggingLevel::Info, None, json!("echoing")).await;
                Ok::<_, String>(a.message)
            },
        )
        .tool(
            "chatty",
            "logs, then answers",
            |c: Ctx, _a: Nothing| async move {
                c.log(LoggingLevel::Info, None, json!("working")).await;
                Ok::<_, String>("done")
            },
        )
        .tool(
            "polling",
            "closes its stream, answers later",
            |c: Ctx, _a: Nothing| async move {
                c.peer().close_stream().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok::<_, String>("late answer")
            },
        )
        .tool("boom", "panics", |_c: Ctx, _a: Nothing| async move {
            if true {
                panic!("boom on purpose");
            }
            Ok::<_, String>("unreachable")
        })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Flood {
    pub n: usize,
}

/// The test tools, plus `flood {n}` (n log messages of 1 KiB, then "flooded") and `stuck`
/// (never answers; `dropped` is set when its call is cancelled).
pub fn flooding_server(dropped: Arc<AtomicBool>) -> Server {
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    with_tools(Server::builder("grpc-test", "1"))
        .tool("flood", "logs n times", |c: Ctx, a: Flood| async move {
            for i in 0..a.n {
                c.log(
                    LoggingLevel::Info,
                    None,
                    json!(format!("{i:04} {}", "x".repeat(1024))),
                )
                .await;
            }
            Ok::<_, String>("flooded")
        })
        .tool("stuck", "never answers", move |_c: Ctx, _a: Nothing| {
            let guard = SetOnDrop(dropped.clone());
            async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, String>("woke")
            }
        })
        .build()
        .unwrap()
}

/// What a client read of `flood {n}`: the log messages' numbers, then the result.
#[derive(Default)]
pub struct Flooded {
    logs: Vec<String>,
    result: Option<Value>,
}

impl Flooded {
    /// Takes one message; false once the result has come.
    pub fn take(&mut self, v: Value) -> bool {
        if v["method"] == "notifications/message" {
            self.logs
                .push(v["params"]["data"].as_str().unwrap()[..4].to_owned());
            return true;
        }
        self.result = Some(v);
        false
    }

    /// Every one of the `n` log messages came, in order, then the result.
    pub fn check(&self, n: usize) {
        let result = self.result.as_ref().expect("the result");
        assert_eq!(
            result["result"]["content"][0]["text"], "flooded",
            "{result}"
        );
        let expected: Vec<String> = (0..n).map(|i| format!("{i:04}")).collect();
        assert_eq!(self.logs, expected, "every log message, in order");
    }
}

/// A client over a transport's channels, with no handlers and the default settings.
pub async fn client_over(
    channels: oxmcp_transport::Channels,
    link: impl oxmcp_transport::Link,
) -> Client {
    Client::connect_over(
        channels,
        link,
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await
    .unwrap()
}

/// A server with the [`TOOLS`] of [`with_tools`].
pub fn server() -> Server {
    with_tools(Server::builder("test", "1")).build().unwrap()
}

/// An endpoint served on 127.0.0.1 until `shutdown` is cancelled.
pub struct Running {
    pub url: String,
    pub addr: SocketAddr,
    pub http: StreamableHttp,
    pub shutdown: CancellationToken,
    pub done: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves [`server`] with these settings on 127.0.0.1.
pub async fn start(config: HttpConfig, options: ServeOptions) -> Running {
    start_with(server(), config, options).await
}

/// Serves `server` with these settings on 127.0.0.1 (`config.shutdown` is `Running::shutdown`).
pub async fn start_with(server: Server, config: HttpConfig, options: ServeOptions) -> Running {
    let shutdown = CancellationToken::new();
    let config = config.shutdown(shutdown.clone());
    let http = StreamableHttp::new(server, config);
    serve(http, shutdown, options).await
}

/// Serves an endpoint (built by the caller) on 127.0.0.1.
pub async fn serve(
    http: StreamableHttp,
    shutdown: CancellationToken,
    options: ServeOptions,
) -> Running {
    let router = http.router();
    serve_routed(http, router, shutdown, options).await
}

/// Serves `router` (the endpoint's, with layers around it) on 127.0.0.1.
pub async fn serve_routed(
    http: StreamableHttp,
    router: axum::Router,
    shutdown: CancellationToken,
    options: ServeOptions,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let token = shutdown.clone();
    let done = tokio::spawn(async move {
        oxmcp_http::serve_router_with(listener, router, options, token.cancelled_owned()).await
    });
    Running {
        url: format!("http://{addr}/mcp"),
        addr,
        http,
        shutdown,
        done,
    }
}

/// Serves any router on 127.0.0.1 for the rest of the test; its base URL (`http://ADDR`).
pub async fn listen(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { oxmcp_http::serve_router(listener, router).await });
    base
}

/// The protocol version the tests' sessions speak.
pub const VERSION: &str = "2025-11-25";

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A POST of a JSON-RPC body accepting JSON or SSE, in `session` if given.
pub fn post(
    url: &str,
    session: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    post_with(&reqwest::Client::new(), url, session, body)
}

/// [`post`] through the client `http`.
pub fn post_with(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    let mut r = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r
}

/// A GET for the standalone SSE stream of `session`.
pub fn get_stream(url: &str, session: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
}

/// A DELETE ending `session`.
pub fn delete(url: &str, session: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .delete(url)
        .header("mcp-session-id", session)
}

/// An `initialize` at [`VERSION`], with an `Authorization` header if given.
pub async fn init(url: &str, auth: Option<&str>) -> reqwest::Response {
    let mut r = post(url, None, INIT);
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    r.send().await.unwrap()
}

/// A new, initialized session; its id.
pub async fn session(url: &str) -> String {
    Session::open(url).await.id
}

/// An initialized session as its client sees it: every request in it carries its id and
/// its protocol version.
#[derive(Clone)]
pub struct Session {
    pub http: reqwest::Client,
    pub url: String,
    pub id: String,
    pub version: String,
}

impl Session {
    /// `initialize` at [`VERSION`], then `notifications/initialized`.
    pub async fn open(url: &str) -> Self {
        Self::open_with(&reqwest::Client::new(), url, VERSION).await
    }

    /// [`Session::open`] at `version`.
    pub async fn open_at(url: &str, version: &str) -> Self {
        Self::open_with(&reqwest::Client::new(), url, version).await
    }

    /// [`Session::open`] at `version`, through the client `http`.
    pub async fn open_with(http: &reqwest::Client, url: &str, version: &str) -> Self {
        let r = post_with(http, url, None, INIT.replace(VERSION, version))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = r.bytes().await;
        let s = Session {
            http: http.clone(),
            url: url.to_owned(),
            id,
            version: version.to_owned(),
        };
        let r = s.post(INITIALIZED).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        assert!(r.text().await.unwrap().is_empty());
        s
    }

    /// A POST in the session.
    pub fn post(&self, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
        post_with(&self.http, &self.url, Some(&self.id), body)
            .header("mcp-protocol-version", &self.version)
    }

    /// A GET for an SSE stream of the session (standalone, or resumed with `Last-Event-ID`).
    pub fn get(&self) -> reqwest::RequestBuilder {
        self.http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
    }

    /// A DELETE ending the session.
    pub fn delete(&self) -> reqwest::RequestBuilder {
        self.http
            .delete(&self.url)
            .header("mcp-session-id", &self.id)
    }
}

/// An SSE body: the ids of its events, and the JSON of those that carry data.
pub fn sse(body: &str) -> (Vec<String>, Vec<Value>) {
    let mut p = oxmcp_http::sse::SseParser::new(1 << 20);
    let events = p.push(body.as_bytes());
    let ids = events.iter().filter_map(|e| e.id.clone()).collect();
    let data = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| serde_json::from_str(&e.data).unwrap_or_else(|err| panic!("{err}: {:?}", e.data)))
        .collect();
    (ids, data)
}

/// The JSON-RPC response of a JSON or SSE answer.
pub async fn answer(r: reqwest::Response) -> Value {
    let is_sse = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = r.text().await.unwrap();
    if !is_sse {
        return serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    }
    sse(&text)
        .1
        .into_iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {text:?}"))
}

pub fn call(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
        .to_string()
}

pub async fn ping_ok(url: &str, session: &str) {
    let r = post(
        url,
        Some(session),
        r#"{"jsonrpc":"2.0","id":77,"method":"ping"}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(answer(r).await["result"], json!({}));
}

/// The `_meta` of a 2026-07-28 request: version, client info and capabilities.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A 2026-07-28 request (no session): `params` get [`modern_meta`] unless they have a
/// `_meta`; the headers name the version, `method` and `name` (if given).
pub fn modern_post(
    url: &str,
    id: u64,
    method: &str,
    name: Option<&str>,
    params: Value,
) -> reqwest::RequestBuilder {
    let mut params = params;
    if params.get("_meta").is_none() {
        params["_meta"] = modern_meta();
    }
    let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
    let mut r = post(url, None, body.to_string())
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        r = r.header("mcp-name", n);
    }
    r
}

/// A client of `url` over the HTTP client transport once its handshake is done (or how the
/// handshake failed), and the transport's handle.
pub async fn connect_with(
    url: &str,
    http: HttpClientConfig,
    handlers: ClientHandlers,
    config: ClientConfig,
) -> (Result<Client, ConnectError>, HttpClientHandle) {
    let t = oxmcp_http::client::connect(url, http).unwrap();
    let client = Client::connect(t.incoming, t.outgoing, handlers, config).await;
    (client, t.handle)
}

/// A client of `url` with the default settings, and the transport's handle.
pub async fn connect(url: &str) -> (Client, HttpClientHandle) {
    let (client, handle) = connect_with(
        url,
        HttpClientConfig::default(),
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await;
    (client.unwrap(), handle)
}

/// Waits until `f` holds (checked every millisecond), at most `secs` seconds; whether it did.
pub async fn until(secs: u64, f: impl Fn() -> bool) -> bool {
    poll(secs, Duration::from_millis(1), || std::future::ready(f())).await
}

/// [`until`] for a condition that has to be awaited, a request say (checked every 10 ms).
pub async fn until_async<F, Fut>(secs: u64, f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    poll(secs, Duration::from_millis(10), f).await
}

async fn poll<F, Fut>(secs: u64, every: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(every).await;
    }
    true
}

/// Accepts the one token "let-me-in", as subject "alice".
#[derive(Debug)]
pub struct OneToken;

impl oxmcp_http::TokenVerifier for OneToken {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<oxmcp_http::Identity, oxmcp_http::TokenError>> {
        let ok = token == "let-me-in";
        Box::pin(async move {
            if ok {
                Ok(oxmcp_http::Identity {
                    subject: "alice".into(),
                    ..Default::default()
                })
            } else {
                Err(oxmcp_http::TokenError::Invalid("unknown token".into()))
            }
        })
    }
}

/// Accepts any token as subject "bob" with the scope "basic" only.
#[derive(Debug)]
pub struct BasicScope;

impl oxmcp_http::TokenVerifier for BasicScope {
    fn verify<'a>(
        &'a self,
        _token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<oxmcp_http::Identity, oxmcp_http::TokenError>> {
        Box::pin(async move {
            Ok(oxmcp_http::Identity {
                subject: "bob".into(),
                scopes: vec!["basic".into()],
                ..Default::default()
            })
        })
    }
}

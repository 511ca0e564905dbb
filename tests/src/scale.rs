//! What the scale-out tests run: a real Redis (`redis-server` from PATH, on a free loopback
//! port, no persistence), real `oxmcp serve --store` instances, and a round-robin HTTP proxy in
//! front of them.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::{http_messages, serve_http};

/// A `redis-server` child process on 127.0.0.1.
#[derive(Debug)]
pub struct Redis {
    child: Option<Child>,
    /// The port it listens on.
    pub port: u16,
}

/// A loopback port free at the time of the call.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Redis {
    /// Starts Redis on a free port.
    pub async fn start() -> Redis {
        Self::start_on(free_port()).await
    }

    /// Starts Redis on `port` (for a restart on the same address).
    pub async fn start_on(port: u16) -> Redis {
        Self::start_with(port, &[]).await
    }

    /// Starts Redis on `port` with extra arguments.
    pub async fn start_with(port: u16, extra: &[&str]) -> Redis {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(["--enable-debug-command", "local"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): install Debian's redis-server package \
                     (scripts/test.sh does when run as root)"
                )
            });
        let r = Redis {
            child: Some(child),
            port,
        };
        for _ in 0..200 {
            if r.try_cli(&["PING"]).as_deref() == Some("PONG") {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("redis-server did not answer on port {port}");
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn try_cli(&self, args: &[&str]) -> Option<String> {
        let out = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Runs a `redis-cli` command; its output.
    pub fn cli(&self, args: &[&str]) -> String {
        self.try_cli(args).expect("redis-cli runs")
    }

    /// The keys matching `pattern`.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let out = self.cli(&["--scan", "--pattern", pattern]);
        out.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// How many times Redis ran `command` (lower case, e.g. `expire`) since it started.
    pub fn calls_of(&self, command: &str) -> u64 {
        let stats = self.cli(&["INFO", "commandstats"]);
        let prefix = format!("cmdstat_{command}:calls=");
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Stops Redis (SIGKILL: an outage, not a clean shutdown).
    pub async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
            let _ = c.wait().await;
        }
    }
}

/// A Redis Cluster of three masters (no replicas) on free loopback ports.
#[derive(Debug)]
pub struct Cluster {
    /// The three masters.
    pub nodes: Vec<Redis>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts three cluster-enabled nodes and joins them (`redis-cli --cluster create`).
    pub async fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = Vec::new();
        for i in 0..3 {
            let port = free_port();
            let conf = dir.path().join(format!("nodes-{i}.conf"));
            let child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-config-file"])
                .arg(&conf)
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .expect("redis-server runs");
            let node = Redis {
                child: Some(child),
                port,
            };
            for _ in 0..200 {
                if node.try_cli(&["PING"]).as_deref() == Some("PONG") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            nodes.push(node);
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        for _ in 0..200 {
            let ok = nodes.iter().all(|n| {
                n.try_cli(&["CLUSTER", "INFO"])
                    .is_some_and(|i| i.contains("cluster_state:ok"))
            });
            if ok {
                return Cluster { nodes, _dir: dir };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the cluster did not come up");
    }

    /// `redis+cluster://` with two of the nodes (the third is found from them).
    pub fn url(&self) -> String {
        format!(
            "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.nodes[0].port, self.nodes[1].port
        )
    }

    /// Keys matching `pattern` on every node.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        self.nodes.iter().flat_map(|n| n.keys(pattern)).collect()
    }
}

/// A store the instances share: Redis or PostgreSQL, each started by the tests.
pub trait Shared {
    /// The `--store` URL.
    fn store_url(&self) -> String;
    /// Whether the store still holds anything of session `sid`.
    fn holds_session(&self, sid: &str) -> bool;
}

impl Shared for Redis {
    fn store_url(&self) -> String {
        self.url()
    }
    fn holds_session(&self, sid: &str) -> bool {
        !self.keys(&format!("mcp:{{{sid}}}:*")).is_empty()
    }
}

impl Shared for crate::postgres::Postgres {
    fn store_url(&self) -> String {
        self.url()
    }
    fn holds_session(&self, sid: &str) -> bool {
        let rows = self.psql(&format!(
            "SELECT (SELECT count(*) FROM mcp.sessions WHERE id = '{sid}')
                  + (SELECT count(*) FROM mcp.streams WHERE session = '{sid}')
                  + (SELECT count(*) FROM mcp.state_scopes WHERE scope = 's:{sid}')"
        ));
        rows != "0"
    }
}

/// An `oxmcp serve --store` instance.
#[derive(Debug)]
pub struct Instance {
    /// The `oxmcp serve` process.
    pub child: Child,
    /// Its Streamable HTTP endpoint.
    pub url: String,
    /// Its `--instance-id`.
    pub name: String,
}

impl Instance {
    /// An instance whose store is `store` (Redis or PostgreSQL), with extra `oxmcp serve`
    /// arguments.
    pub async fn start(store: &impl Shared, name: &str, extra: &[&str]) -> Instance {
        Self::start_url(&store.store_url(), name, extra).await
    }

    /// An instance whose store is at `url`.
    pub async fn start_url(url: &str, name: &str, extra: &[&str]) -> Instance {
        let url = url.to_owned();
        let mut args = vec![
            "--listen",
            "127.0.0.1:0",
            "--store",
            &url,
            "--instance-id",
            name,
        ];
        args.extend_from_slice(extra);
        let (child, url) = serve_http(&args).await;
        Instance {
            child,
            url,
            name: name.to_owned(),
        }
    }

    /// The instance's process id.
    pub fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }

    /// SIGKILL: the instance dies without a word.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
    }
}

/// A round-robin HTTP proxy: each request goes to the next backend (one that refuses the
/// connection is skipped); responses stream back as they come.
#[derive(Debug)]
pub struct Proxy {
    /// The proxy's endpoint (`/mcp`).
    pub url: String,
    /// Requests each backend answered.
    pub hits: Arc<Vec<AtomicUsize>>,
}

struct ProxyState {
    backends: Vec<String>,
    next: AtomicUsize,
    hits: Arc<Vec<AtomicUsize>>,
    http: reqwest::Client,
    /// The backend the last request went to.
    last: Mutex<usize>,
}

impl Proxy {
    /// Starts the proxy on a free port in front of `backends`.
    pub async fn start(backends: &[&Instance]) -> Proxy {
        let hits: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let state = Arc::new(ProxyState {
            backends: backends.iter().map(|b| b.url.clone()).collect(),
            next: AtomicUsize::new(0),
            hits: hits.clone(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(2))
                .build()
                .unwrap(),
            last: Mutex::new(0),
        });
        let app = axum::Router::new().fallback(forward).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Proxy { url, hits }
    }

    /// Requests each backend answered so far.
    pub fn hits(&self) -> Vec<usize> {
        self.hits
            .iter()
            .map(|h| h.load(Ordering::Relaxed))
            .collect()
    }
}

async fn forward(State(p): State<Arc<ProxyState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    let n = p.backends.len();
    for _ in 0..n {
        let i = p.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut r = p.http.request(parts.method.clone(), &p.backends[i]);
        for (k, v) in &parts.headers {
            if k != "host" && k != "content-length" {
                r = r.header(k, v);
            }
        }
        match r.body(body.clone()).send().await {
            Ok(resp) => {
                p.hits[i].fetch_add(1, Ordering::Relaxed);
                *p.last.lock() = i;
                let mut out = Response::builder().status(resp.status());
                for (k, v) in resp.headers() {
                    if k != "content-length" && k != "transfer-encoding" {
                        out = out.header(k, v);
                    }
                }
                return out.body(Body::from_stream(resp.bytes_stream())).unwrap();
            }
            Err(e) if e.is_connect() => continue,
            Err(_) => {
                return Response::builder().status(502).body(Body::empty()).unwrap();
            }
        }
    }
    Response::builder().status(502).body(Body::empty()).unwrap()
}

/// A POST to `url` in session `sid` (`version`), answered as JSON or SSE.
pub fn post(url: &str, sid: &str, version: &str, body: &Value) -> reqwest::RequestBuilder {
    post_with(&reqwest::Client::new(), url, sid, version, body)
}

/// [`post`] on `client`: many calls at once share one client (and its connection pool)
/// instead of each building its own.
pub fn post_with(
    client: &reqwest::Client,
    url: &str,
    sid: &str,
    version: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", version)
        .body(body.to_string())
        .timeout(Duration::from_secs(30))
}

/// POSTs and reads the whole answer: status and messages.
pub async fn call(url: &str, sid: &str, version: &str, body: &Value) -> (u16, Vec<Value>) {
    let r = post(url, sid, version, body).send().await.unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = r.text().await.unwrap();
    (status, http_messages(&ct, &text))
}

/// The text of a tool result.
pub fn result_text(m: &Value) -> String {
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool result, got {m}"))
        .to_owned()
}

/// A `tools/call` request.
pub fn tool(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}})
}

/// One SSE event as read: its id and its message (if it carried one).
#[derive(Debug, Clone)]
pub struct SseEvent {
    /// The event's `id`.
    pub id: Option<String>,
    /// The message in its `data`.
    pub data: Option<Value>,
}

/// Reads an SSE body event by event.
#[derive(Debug)]
pub struct SseReader {
    resp: reqwest::Response,
    parser: oxmcp_http::sse::SseParser,
    queue: std::collections::VecDeque<SseEvent>,
}

impl SseReader {
    /// Reads the body of `resp`.
    pub fn new(resp: reqwest::Response) -> Self {
        SseReader {
            resp,
            parser: oxmcp_http::sse::SseParser::new(64 << 20),
            queue: Default::default(),
        }
    }

    /// The next event (`None`: the stream ended or broke).
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(e);
            }
            let chunk = self.resp.chunk().await.ok()??;
            for e in self.parser.push(&chunk) {
                self.queue.push_back(SseEvent {
                    id: e.id.clone(),
                    data: (!e.data.is_empty()).then(|| serde_json::from_str(&e.data).unwrap()),
                });
            }
        }
    }

    /// The next event with a message, within `secs` seconds (`None`: the stream ended).
    pub async fn next_message(&mut self, secs: u64) -> Option<SseEvent> {
        loop {
            while let Some(e) = self.queue.pop_front() {
                if e.data.is_some() {
                    return Some(e);
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(secs), self.resp.chunk())
                .await
                .expect("an SSE event in time")
                .ok()??;
            for e in self.parser.push(&chunk) {
                self.queue.push_back(SseEvent {
                    id: e.id.clone(),
                    data: (!e.data.is_empty()).then(|| serde_json::from_str(&e.data).unwrap()),
                });
            }
        }
    }
}

/// An `initialize` at `version`, declaring sampling, without a session: the answer.
pub async fn initialize(url: &str, version: &str) -> reqwest::Response {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":version,"capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}});
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap()
}

/// `initialize` (at `version`, with sampling) and `notifications/initialized` through
/// `url`; the session id.
pub async fn open_session(url: &str, version: &str) -> String {
    let r = initialize(url, version).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let (status, _) = call(url, &sid, version, &note).await;
    assert_eq!(status, 202);
    sid
}

/// A GET resuming session `sid`'s stream after event `last` (`Last-Event-ID`).
pub fn resume(url: &str, sid: &str, version: &str, last: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", version)
        .header("last-event-id", last)
}

/// DELETE of session `sid`; the status.
pub async fn delete(url: &str, sid: &str, version: &str) -> u16 {
    reqwest::Client::new()
        .delete(url)
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", version)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The client's answer to the sampling request `ask`: a text from the model.
pub fn sampled(ask: &Value, text: &str) -> Value {
    json!({"jsonrpc":"2.0","id":ask["id"],"result":{"role":"assistant","content":{"type":"text","text":text},"model":"m"}})
}

/// The first status other than 200 that an `echo` call on session `sid` at `url` gets,
/// calling again every 20 ms for at most `within` (`None`: every call succeeded). What another
/// instance did to a session reaches this one through the store's bus, a moment later.
pub async fn ended_within(url: &str, sid: &str, version: &str, within: Duration) -> Option<u16> {
    let t0 = std::time::Instant::now();
    let mut id = 1_000_000;
    loop {
        id += 1;
        let (status, _) = call(url, sid, version, &tool(id, "echo", json!({"message":"x"}))).await;
        if status != 200 {
            return Some(status);
        }
        if t0.elapsed() > within {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

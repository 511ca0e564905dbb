//! The raw Streamable HTTP driver's wire: JSON-RPC POSTed straight over hyper's HTTP/1.1
//! client, one connection per worker, each answer decoded and checked (status, content type,
//! JSON or SSE body, `jsonrpc`, `id`, then the result). Far lighter per call than the SDK's
//! `Client`, so the figures are the server's more than the driver's.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::check::{Failure, clip};

/// Longest wait for one answer.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);
/// The version asked for in `initialize`.
pub(crate) const LEGACY: &str = "2025-11-25";
/// The stateless revision.
pub(crate) const MODERN: &str = "2026-07-28";

/// Where requests go: the resolved address, the `Host` header, the path.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    addr: SocketAddr,
    authority: String,
    path: String,
    /// Streamable HTTP, WebSocket or gRPC.
    kind: Kind,
}

/// What an [`Endpoint`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Streamable HTTP (`http://`).
    Http,
    /// WebSocket (`ws://`).
    Ws,
    /// gRPC (`grpc://`, plain HTTP/2).
    Grpc,
}

impl Endpoint {
    /// The resolved address, the `Host` header and the path.
    pub(crate) fn parts(&self) -> (SocketAddr, &str, &str) {
        (self.addr, &self.authority, &self.path)
    }

    /// What the endpoint speaks.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether each connection is a session of its own (WebSocket, gRPC), not Streamable
    /// HTTP.
    pub(crate) fn is_stream(&self) -> bool {
        self.kind != Kind::Http
    }

    pub(crate) async fn resolve(url: &str) -> anyhow::Result<Endpoint> {
        let uri: hyper::Uri = url
            .parse()
            .with_context(|| format!("{url:?} is not a URL"))?;
        let kind = match uri.scheme_str() {
            Some("http") => Kind::Http,
            Some("ws") => Kind::Ws,
            Some("grpc") => Kind::Grpc,
            _ => bail!(
                "the raw driver speaks plain http://, ws:// and grpc:// only; use --driver client for {url}"
            ),
        };
        let authority = uri.authority().context("the URL has no host")?.to_string();
        let host = uri.host().context("the URL has no host")?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(80);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .with_context(|| format!("cannot resolve {host}"))?
            .collect();
        // The first address that accepts a connection (`localhost` may name ::1 first while
        // the server listens on 127.0.0.1 only); else the first, whose errors are counted.
        let mut addr = *addrs
            .first()
            .with_context(|| format!("{host} has no address"))?;
        for a in &addrs {
            if tokio::net::TcpStream::connect(a).await.is_ok() {
                addr = *a;
                break;
            }
        }
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Endpoint {
            addr,
            authority,
            path,
            kind,
        })
    }
}

fn transport(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Transport(format!("{what}: {e}"))
}

/// How a body was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    Json,
    Sse,
    Other,
}

impl Body {
    /// The kind of body a `Content-Type` announces (compared without regard to case).
    pub(crate) fn of(content_type: &str) -> Body {
        let is = |media: &str| {
            content_type
                .get(..media.len())
                .is_some_and(|c| c.eq_ignore_ascii_case(media))
        };
        if is("application/json") {
            Body::Json
        } else if is("text/event-stream") {
            Body::Sse
        } else {
            Body::Other
        }
    }
}

/// An HTTP answer, read whole.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) kind: Body,
    pub(crate) content_type: String,
    pub(crate) session: Option<String>,
    pub(crate) body: Bytes,
}

/// One HTTP/1.1 connection.
pub(crate) struct Conn {
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    pub(crate) async fn open(ep: &Endpoint) -> Result<Conn, Failure> {
        let tcp = tokio::time::timeout(TIMEOUT, tokio::net::TcpStream::connect(ep.addr))
            .await
            .map_err(|_| Failure::Timeout)?
            .map_err(|e| transport("connect", e))?;
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| transport("handshake", e))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { sender })
    }

    /// Sends a request and reads its whole answer, within [`TIMEOUT`].
    pub(crate) async fn send(
        &mut self,
        ep: &Endpoint,
        method: hyper::Method,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, Failure> {
        tokio::time::timeout(TIMEOUT, self.exchange(ep, method, headers, body))
            .await
            .map_err(|_| Failure::Timeout)?
    }

    /// POSTs a JSON-RPC body.
    pub(crate) async fn post(
        &mut self,
        ep: &Endpoint,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, Failure> {
        self.send(ep, hyper::Method::POST, headers, body).await
    }

    async fn exchange(
        &mut self,
        ep: &Endpoint,
        method: hyper::Method,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, Failure> {
        self.sender
            .ready()
            .await
            .map_err(|e| transport("connection", e))?;
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(ep.path.as_str())
            .header(HOST, ep.authority.as_str())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| transport("request", e))?;
        let resp = self
            .sender
            .send_request(req)
            .await
            .map_err(|e| transport("send", e))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let kind = Body::of(&content_type);
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| transport("body", e))?
            .to_bytes();
        Ok(Reply {
            status,
            kind,
            content_type,
            session,
            body,
        })
    }
}

/// A JSON-RPC message as received; `R` is the expected result.
#[derive(Deserialize)]
struct Message<R> {
    jsonrpc: Option<String>,
    id: Option<Value>,
    method: Option<String>,
    result: Option<R>,
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    #[serde(default)]
    message: String,
}

/// The data of each complete event of an SSE body (empty ones, like a priming event, left out).
pub(crate) fn sse_data(body: &[u8]) -> Vec<Cow<'_, [u8]>> {
    let mut events = Vec::new();
    let mut data: Option<Cow<'_, [u8]>> = None;
    for line in body.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if let Some(d) = data.take().filter(|d| !d.is_empty()) {
                events.push(d);
            }
            continue;
        }
        let Some(value) = line.strip_prefix(b"data:") else {
            continue; // id:, event:, retry:, comments
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        data = Some(match data.take() {
            None => Cow::Borrowed(value),
            Some(before) => {
                let mut joined = before.into_owned();
                joined.push(b'\n');
                joined.extend_from_slice(value);
                Cow::Owned(joined)
            }
        });
    }
    events
}

/// The JSON-RPC error of a refused request's body, or the start of the body.
fn refusal(reply: &Reply) -> String {
    match serde_json::from_slice::<Message<Value>>(&reply.body) {
        Ok(Message { error: Some(e), .. }) => e.message,
        _ => clip(&String::from_utf8_lossy(&reply.body)),
    }
}

/// Checks a decoded message is the answer to `id` and takes its result.
fn result_of<R>(m: Message<R>, id: u64) -> Result<R, Failure> {
    if let Some(e) = m.error {
        return Err(Failure::Rpc(e.code, e.message));
    }
    if m.jsonrpc.as_deref() != Some("2.0") {
        return Err(Failure::Wrong(format!("jsonrpc is {:?}", m.jsonrpc)));
    }
    if m.id.as_ref().and_then(Value::as_u64) != Some(id) {
        let got = m.id.map_or_else(|| "none".to_owned(), |v| v.to_string());
        return Err(Failure::Wrong(format!("id {got}, expected {id}")));
    }
    m.result
        .ok_or_else(|| Failure::Wrong("neither result nor error".to_owned()))
}

fn undecodable(e: &serde_json::Error) -> Failure {
    Failure::Wrong(format!("undecodable answer: {e}"))
}

/// The result answering request `id` in a reply: status 200, then a JSON body or the SSE
/// event carrying the response (notifications and requests on the stream are skipped).
pub(crate) fn answer<R: DeserializeOwned>(reply: &Reply, id: u64) -> Result<R, Failure> {
    if reply.status != 200 {
        return Err(Failure::Http(reply.status, refusal(reply)));
    }
    match reply.kind {
        Body::Json => {
            let m: Message<R> = serde_json::from_slice(&reply.body).map_err(|e| undecodable(&e))?;
            result_of(m, id)
        }
        Body::Sse => {
            for data in sse_data(&reply.body) {
                let m: Message<R> = serde_json::from_slice(&data).map_err(|e| undecodable(&e))?;
                if m.method.is_none() {
                    return result_of(m, id);
                }
            }
            Err(Failure::Wrong(
                "the SSE stream ended without the response".to_owned(),
            ))
        }
        Body::Other => Err(Failure::Wrong(format!(
            "content type {:?}",
            reply.content_type
        ))),
    }
}

/// A tool result, as far as the check needs it.
#[derive(Deserialize)]
pub(crate) struct ToolResult {
    content: Vec<Item>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

impl ToolResult {
    pub(crate) fn failed(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text items' texts.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.content
            .iter()
            .filter(|i| i.kind == "text")
            .filter_map(|i| i.text.as_deref())
    }
}

#[derive(Deserialize)]
struct InitializeResult {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
}

/// A legacy session: its id (servers may not assign one) and the negotiated version.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: Option<String>,
    pub(crate) version: String,
}

impl Session {
    /// The headers of each request in this session.
    pub(crate) fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![("mcp-protocol-version", self.version.clone())];
        if let Some(id) = &self.id {
            h.push(("mcp-session-id", id.clone()));
        }
        h
    }
}

/// The `initialize` request (id 0) every transport opens a legacy session with.
pub(crate) fn initialize_request() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")}}})
    .to_string()
    .into_bytes()
}

/// The notification that ends the legacy handshake.
pub(crate) const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Checks a message (a WebSocket or gRPC connection's) is the answer to `initialize`: a
/// JSON-RPC 2.0 result for id 0 with a protocol version.
pub(crate) fn initialize_answer(message: &[u8]) -> Result<(), Failure> {
    let m: Message<InitializeResult> =
        serde_json::from_slice(message).map_err(|e| undecodable(&e))?;
    result_of(m, 0).map(drop)
}

/// `initialize` (request id 0) and `notifications/initialized`, both checked.
pub(crate) async fn initialize(conn: &mut Conn, ep: &Endpoint) -> Result<Session, Failure> {
    let reply = conn
        .post(ep, &[], Bytes::from(initialize_request()))
        .await?;
    let result: InitializeResult = answer(&reply, 0)?;
    let session = Session {
        id: reply.session,
        version: result.protocol_version,
    };
    let headers = session.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let reply = conn
        .post(ep, &headers, Bytes::from_static(INITIALIZED))
        .await?;
    if !(200..300).contains(&reply.status) {
        return Err(Failure::Http(reply.status, refusal(&reply)));
    }
    Ok(session)
}

/// Ends a session (DELETE); what the server answers does not matter.
pub(crate) async fn end(conn: &mut Conn, ep: &Endpoint, session: &Session) {
    if session.id.is_none() {
        return;
    }
    let headers = session.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let _ = conn
        .send(ep, hyper::Method::DELETE, &headers, Bytes::new())
        .await;
}

/// The body of a `tools/call`, built once, with the call number spliced in where it goes:
/// the request id, and after the message (`<message>-<n>`).
pub(crate) struct Template(Vec<Piece>);

enum Piece {
    Text(Vec<u8>),
    Number,
}

/// Stands for the call number while the template is serialised (DEL is never escaped).
const MARK: &str = "\u{7f}n\u{7f}";

impl Template {
    /// `arguments` with their `message` (if a string) suffixed; `meta` for 2026-07-28.
    pub(crate) fn tools_call(
        tool: &str,
        arguments: &oxmcp_types::JsonObject,
        message_base: Option<&str>,
        meta: Option<Value>,
    ) -> Template {
        let mut args = arguments.clone();
        if let Some(base) = message_base {
            args.insert(
                "message".to_owned(),
                Value::String(format!("{base}-{MARK}")),
            );
        }
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let body = json!({"jsonrpc": "2.0", "id": MARK, "method": "tools/call", "params": params})
            .to_string();
        let quoted = format!("\"{MARK}\"");
        let mut pieces = Vec::new();
        for (i, part) in body.split(quoted.as_str()).enumerate() {
            if i > 0 {
                pieces.push(Piece::Number);
            }
            for (j, text) in part.split(MARK).enumerate() {
                if j > 0 {
                    pieces.push(Piece::Number);
                }
                pieces.push(Piece::Text(text.as_bytes().to_vec()));
            }
        }
        Template(pieces)
    }

    /// Call `n`'s body, appended to `out` (nothing allocated once `out` has grown).
    pub(crate) fn render_into(&self, n: u64, out: &mut Vec<u8>) {
        let mut number = itoa::Buffer::new();
        let number = number.format(n).as_bytes();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Number => out.extend_from_slice(number),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(t: &Template, n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        t.render_into(n, &mut out);
        out
    }

    #[test]
    fn template_puts_the_number_in_the_id_and_the_message() {
        let args = json!({"message": "he said \"hi\"", "k": 1});
        let t = Template::tools_call(
            "echo",
            args.as_object().unwrap(),
            Some("he said \"hi\""),
            Some(json!({"io.modelcontextprotocol/protocolVersion": MODERN})),
        );
        let v: Value = serde_json::from_slice(&rendered(&t, 42)).unwrap();
        assert_eq!(v["id"], 42);
        assert_eq!(v["params"]["arguments"]["message"], "he said \"hi\"-42");
        assert_eq!(v["params"]["arguments"]["k"], 1);
        assert_eq!(v["params"]["name"], "echo");
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            MODERN
        );
        let plain = Template::tools_call("add", &oxmcp_types::JsonObject::new(), None, None);
        let v: Value = serde_json::from_slice(&rendered(&plain, 7)).unwrap();
        assert_eq!(v["id"], 7);
    }

    #[test]
    fn sse_events_and_priming() {
        let body = b"id: 1\ndata:\n\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: keep\ndata: x\n\ndata: cut";
        let events = sse_data(body);
        assert_eq!(events.len(), 2);
        assert_eq!(&*events[0], b"{\"a\":\n1}");
        assert_eq!(&*events[1], b"x");
    }

    fn reply(status: u16, kind: Body, body: &str) -> Reply {
        Reply {
            status,
            kind,
            content_type: String::new(),
            session: None,
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn answers_are_checked() {
        let ok = r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"m-5"}]}}"#;
        let r: ToolResult = answer(&reply(200, Body::Json, ok), 5).unwrap();
        assert_eq!(r.texts().collect::<String>(), "m-5");
        assert!(!r.failed());
        let sse = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}}\n\ndata: {ok}\n\n"
        );
        assert!(answer::<ToolResult>(&reply(200, Body::Sse, &sse), 5).is_ok());
        let wrong_id = answer::<ToolResult>(&reply(200, Body::Json, ok), 6);
        assert!(matches!(wrong_id, Err(Failure::Wrong(m)) if m.contains("id 5")));
        let busy = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Too many open streams"}}"#;
        assert_eq!(
            answer::<ToolResult>(&reply(429, Body::Json, busy), 5).err(),
            Some(Failure::Http(429, "Too many open streams".into()))
        );
        assert_eq!(
            answer::<ToolResult>(&reply(200, Body::Json, busy), 5).err(),
            Some(Failure::Rpc(-32000, "Too many open streams".into()))
        );
        assert!(answer::<ToolResult>(&reply(200, Body::Other, ok), 5).is_err());
        assert!(answer::<ToolResult>(&reply(200, Body::Sse, "data:\n\n"), 5).is_err());
        let no_content = r#"{"jsonrpc":"2.0","id":5,"result":{}}"#;
        assert!(answer::<ToolResult>(&reply(200, Body::Json, no_content), 5).is_err());
    }
}

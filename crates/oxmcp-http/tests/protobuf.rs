//! `application/mcp+protobuf` over Streamable HTTP: the server takes protobuf bodies and
//! answers in protobuf when asked; our client opts in, and falls back to JSON on a 415.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::middleware::Next;
use common::*;
use oxmcp_client::{Client, ClientConfig, ClientHandlers, EraChoice};
use oxmcp_http::{BodyEncoding, HttpClientConfig, HttpConfig, ServeOptions, StreamableHttp};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn proto_post(url: &str, session: Option<&str>, json: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/mcp+protobuf")
        .header("accept", "application/mcp+protobuf, text/event-stream")
        .body(oxmcp_proto::encode(json).unwrap());
    if let Some(s) = session {
        r = r
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", VERSION);
    }
    r
}

async fn proto_answer(r: reqwest::Response) -> Value {
    assert_eq!(r.headers()["content-type"], "application/mcp+protobuf");
    oxmcp_proto::decode(&r.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn the_server_takes_and_gives_protobuf() {
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let init: Value = serde_json::from_str(INIT).unwrap();
    let r = proto_post(&s.url, None, &init).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let v = proto_answer(r).await;
    assert_eq!(v["result"]["protocolVersion"], VERSION, "{v}");
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let r = proto_post(&s.url, Some(&sid), &note).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let call = serde_json::from_str(&call(1, "echo", json!({"message": "in protobuf"}))).unwrap();
    let v = proto_answer(proto_post(&s.url, Some(&sid), &call).send().await.unwrap()).await;
    assert_eq!(v["result"]["content"][0]["text"], "in protobuf");
    // An error answer is in protobuf too; malformed protobuf is a parse error.
    let unknown = json!({"jsonrpc":"2.0","id":2,"method":"no/such"});
    let v = proto_answer(
        proto_post(&s.url, Some(&sid), &unknown)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let r = reqwest::Client::new()
        .post(&s.url)
        .header("content-type", "application/mcp+protobuf")
        .header("accept", "application/json, text/event-stream")
        .body(vec![0xff, 0xff, 0x01])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32700, "{v}");
}

/// Records the Content-Type of every POST.
async fn served(seen: Arc<Mutex<Vec<String>>>, json_only: bool) -> String {
    let shutdown = CancellationToken::new();
    let config = HttpConfig::default().shutdown(shutdown.clone());
    let http = StreamableHttp::new(server(), config);
    let router = http.router().layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let seen = seen.clone();
            async move {
                let ct = req
                    .headers()
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                let refuse = json_only && ct == "application/mcp+protobuf";
                seen.lock().unwrap().push(ct);
                if refuse {
                    return axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
                }
                next.run(req).await
            }
        },
    ));
    serve_routed(http, router, shutdown, ServeOptions::default())
        .await
        .url
}

use axum::response::IntoResponse;

async fn client(url: &str) -> Client {
    client_in(url, ClientConfig::default()).await
}

async fn client_in(url: &str, config: ClientConfig) -> Client {
    let t = oxmcp_http::client::connect(
        url,
        HttpClientConfig::default()
            .encoding(BodyEncoding::Protobuf)
            .standalone_stream(false),
    )
    .unwrap();
    let (channels, link) = t.into_parts();
    Client::connect_over(channels, link, ClientHandlers::new(), config)
        .await
        .unwrap()
}

#[tokio::test]
async fn our_client_speaks_protobuf_and_falls_back_on_415() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = served(seen.clone(), false).await;
    let c = client(&url).await;
    let r = c
        .call_tool(
            "echo",
            json!({"message": "p"}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("p"));
    let posted = seen.lock().unwrap().clone();
    assert!(
        posted
            .iter()
            .filter(|c| !c.is_empty())
            .all(|c| c == "application/mcp+protobuf"),
        "{posted:?}"
    );
    c.close().await;

    // A server that takes JSON only: one 415, then JSON.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = served(seen.clone(), true).await;
    let c = client(&url).await;
    let r = c
        .call_tool(
            "echo",
            json!({"message": "j"}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("j"));
    let posted = seen.lock().unwrap().clone();
    assert_eq!(posted[0], "application/mcp+protobuf", "{posted:?}");
    assert!(
        posted[1..]
            .iter()
            .filter(|c| !c.is_empty())
            .all(|c| c == "application/json"),
        "{posted:?}"
    );
    c.close().await;
}

/// The events of an SSE body: (event name, data) in order, priming events included.
fn events(body: &str) -> Vec<(String, String)> {
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty() && !b.starts_with(':'))
        .map(|b| {
            let mut name = "message".to_owned();
            let mut data = String::new();
            for line in b.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    name = e.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (name, data)
        })
        .collect()
}

fn decode_event(data: &str) -> Value {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    oxmcp_proto::decode(&bytes).unwrap()
}

/// SSE answers in protobuf: each message event is `event: mcp+protobuf` with base64
/// protobuf data; the priming event (id, retry, no data) stays as it is.
#[tokio::test]
async fn sse_events_in_protobuf() {
    let s = start(
        HttpConfig::default().response_mode(oxmcp_http::ResponseMode::Sse),
        ServeOptions::default(),
    )
    .await;
    let init: Value = serde_json::from_str(INIT).unwrap();
    let r = proto_post(&s.url, None, &init).send().await.unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let body = r.text().await.unwrap();
    let evs = events(&body);
    assert!(body.contains("id: "), "{body}");
    let last = evs.last().unwrap();
    assert_eq!(last.0, "mcp+protobuf", "{body}");
    assert_eq!(decode_event(&last.1)["result"]["protocolVersion"], VERSION);
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    proto_post(&s.url, Some(&sid), &note).send().await.unwrap();
    let set = json!({"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info"}});
    proto_post(&s.url, Some(&sid), &set).send().await.unwrap();
    let chatty: Value =
        serde_json::from_str(&call(1, "chatty_echo", json!({"message": "sse"}))).unwrap();
    let body = proto_post(&s.url, Some(&sid), &chatty)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let messages: Vec<Value> = events(&body)
        .into_iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(name, d)| {
            assert_eq!(name, "mcp+protobuf", "{body}");
            decode_event(&d)
        })
        .collect();
    assert_eq!(
        messages[0]["method"], "notifications/message",
        "{messages:?}"
    );
    assert_eq!(messages[1]["result"]["content"][0]["text"], "sse");
    // A JSON client on the same server still gets JSON events.
    let body = post(
        &s.url,
        Some(&sid),
        call(2, "echo", json!({"message": "json"})),
    )
    .send()
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(
        body.contains("event: message") && body.contains("\"json\""),
        "{body}"
    );
}

/// Our client in protobuf over an SSE server: POST streams and the GET stream decode.
#[tokio::test]
async fn our_client_reads_protobuf_events() {
    let s = start(
        HttpConfig::default().response_mode(oxmcp_http::ResponseMode::Sse),
        ServeOptions::default(),
    )
    .await;
    let logs = Arc::new(Mutex::new(Vec::new()));
    let seen = logs.clone();
    let handlers = ClientHandlers::new().on_event(move |e| {
        if let oxmcp_client::ServerEvent::Log(l) = e {
            seen.lock().unwrap().push(l.data.to_string());
        }
    });
    let t = oxmcp_http::client::connect(
        &s.url,
        HttpClientConfig::default().encoding(BodyEncoding::Protobuf),
    )
    .unwrap();
    let (channels, link) = t.into_parts();
    let c = Client::connect_over(channels, link, handlers, ClientConfig::default())
        .await
        .unwrap();
    c.set_log_level(oxmcp_types::LoggingLevel::Info)
        .await
        .unwrap();
    let r = c
        .call_tool(
            "chatty_echo",
            json!({"message": "p"}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("p"));
    assert!(
        until(5, || logs
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.contains("echoing")))
        .await,
        "the log event decoded"
    );
    // `polling` ends its POST stream first: the answer comes on the resumed GET stream.
    let r = c
        .call_tool("polling", json!({}).as_object().cloned().unwrap())
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("late answer"));
    c.close().await;
}

/// A 2026-07-28 request (no session) answered in protobuf: a plain answer, an error answer
/// with the HTTP status its code calls for, an SSE answer's events, and a refusal made before
/// the request reached the server.
#[tokio::test]
async fn modern_answers_and_refusals_in_protobuf() {
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let proto = |id: u64, method: &str, name: Option<&str>, mut params: Value| {
        params["_meta"] = modern_meta();
        params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        let mut r = reqwest::Client::new()
            .post(&s.url)
            .header("content-type", "application/json")
            .header("accept", "application/mcp+protobuf, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(body.to_string());
        if let Some(n) = name {
            r = r.header("mcp-name", n);
        }
        r
    };
    let echo = |message: &str| json!({"name": "echo", "arguments": {"message": message}});

    let r = proto(1, "tools/call", Some("echo"), echo("modern")).send();
    let v = proto_answer(r.await.unwrap()).await;
    assert_eq!(v["result"]["content"][0]["text"], "modern", "{v}");

    let r = proto(2, "no/such", None, json!({})).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let v = proto_answer(r).await;
    assert_eq!(v["error"]["code"], -32601, "{v}");

    // Refused by the header checks, before the server saw it: in protobuf too.
    let r = proto(3, "tools/call", Some("other"), echo("x")).send();
    let r = r.await.unwrap();
    assert_eq!(r.status(), 400);
    let v = proto_answer(r).await;
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["error"]["code"], -32020, "{v}");

    // A log message before the answer: an SSE stream, each event in protobuf.
    let chatty = json!({"name": "chatty_echo", "arguments": {"message": "streamed"}});
    let r = proto(4, "tools/call", Some("chatty_echo"), chatty).send();
    let body = r.await.unwrap().text().await.unwrap();
    let messages: Vec<Value> = events(&body)
        .into_iter()
        .map(|(name, d)| {
            assert_eq!(name, "mcp+protobuf", "{body}");
            decode_event(&d)
        })
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/message");
    assert_eq!(messages[1]["result"]["content"][0]["text"], "streamed");
}

/// A legacy request refused before it reached a session (no session id) is answered in
/// protobuf when the client takes it.
#[tokio::test]
async fn legacy_refusals_in_protobuf() {
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let call = serde_json::from_str(&call(1, "echo", json!({"message": "x"}))).unwrap();
    let r = proto_post(&s.url, None, &call).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let v = proto_answer(r).await;
    assert_eq!(v["error"]["code"], -32600, "{v}");
}

/// Plain results in protobuf reach our client decoded, not as JSON text: a binary resource
/// of 300 KB comes back byte for byte over both eras, and the version that `initialize`
/// negotiated (read from its decoded result) is on the requests after it.
#[tokio::test]
async fn our_client_reads_binary_contents_in_protobuf() {
    use base64::Engine as _;
    use oxmcp_server::Server;
    use oxmcp_types::{ReadResourceResult, Resource, ResourceContents};
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let blob = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let mut resource = Resource::default();
    resource.uri = "test://blob".to_owned();
    resource.name = "blob".to_owned();
    let served_blob = blob.clone();
    let server = with_tools(Server::builder("test", "1"))
        .resource(resource, move |_c, uri| {
            let blob = served_blob.clone();
            async move {
                let mut r = ReadResourceResult::default();
                r.contents = vec![
                    ResourceContents::default()
                        .with_uri(uri)
                        .with_blob(Some(blob)),
                ];
                Ok(r)
            }
        })
        .build()
        .unwrap();
    let versions = Arc::new(Mutex::new(Vec::new()));
    let seen = versions.clone();
    let shutdown = CancellationToken::new();
    let http = StreamableHttp::new(server, HttpConfig::default().shutdown(shutdown.clone()));
    let router = http.router().layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let seen = seen.clone();
            async move {
                let posted = (
                    header_of(&req, "content-type").unwrap_or_default(),
                    header_of(&req, "mcp-protocol-version"),
                );
                seen.lock().unwrap().push(posted);
                next.run(req).await
            }
        },
    ));
    let url = serve_routed(http, router, shutdown, ServeOptions::default())
        .await
        .url;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        versions.lock().unwrap().clear();
        let c = client_in(&url, ClientConfig::default().era(era)).await;
        let read = c.read_resource("test://blob").await.unwrap();
        assert_eq!(read.contents.len(), 1);
        assert_eq!(read.contents[0].blob.as_deref(), Some(blob.as_str()));
        let echoed = c
            .call_tool(
                "echo",
                json!({"message": "p"}).as_object().cloned().unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(echoed.content[0].as_text(), Some("p"));
        let negotiated = c.protocol_version().to_string();
        c.close().await;
        let posts = versions.lock().unwrap().clone();
        assert!(posts.len() >= 2, "{era:?}: {posts:?}");
        let after = match era {
            EraChoice::Legacy => {
                assert!(
                    posts[0].1.is_none(),
                    "initialize goes without a version: {posts:?}"
                );
                &posts[1..]
            }
            _ => &posts[..],
        };
        for (ct, version) in after {
            if !ct.is_empty() {
                assert_eq!(ct, "application/mcp+protobuf", "{era:?}: {posts:?}");
                assert_eq!(
                    version.as_deref(),
                    Some(negotiated.as_str()),
                    "{era:?}: {posts:?}"
                );
            }
        }
    }
}

fn header_of(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

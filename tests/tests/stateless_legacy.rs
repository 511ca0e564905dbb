//! `oxmcp serve --stateless`: legacy (2024-11-05 to 2025-11-25) clients served without
//! sessions. The Python and TypeScript SDKs' clients work against it and never see an
//! `Mcp-Session-Id`; raw HTTP shows each POST is self-contained (no initialize needed, a
//! session id ignored, nothing kept from one POST to the next), GET and DELETE are 405, two
//! instances with nothing shared both answer one client, and the 2026-07-28 era is as before.
//! Without --stateless, sessions are still required.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_tests::serve_http;
use serde_json::{Value, json};

const V: &str = "2025-11-25";

/// A legacy POST of `body` with these extra headers: status, `Mcp-Session-Id`, messages.
async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Option<String>, Vec<Value>) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let session = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = r.text().await.unwrap();
    (status, session, oxmcp_tests::http_messages(&ct, &text))
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":V,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":arguments}})
}

/// The text of a tool result.
fn text(m: &Value) -> &str {
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {m}"))
}

/// What an SDK script saw: the demo's tools, the echo, `slow`'s progress on its POST's own
/// stream, and not one `Mcp-Session-Id`, neither received nor sent.
fn check_sdk_run(sdk: &str, seen: &Value) {
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"slow"),
        "{sdk}: {seen}"
    );
    assert_eq!(seen["echo"], "hello stateless", "{sdk}: {seen}");
    assert_eq!(seen["echo_error"], false, "{sdk}");
    assert_eq!(seen["slow"], "done after 3 steps", "{sdk}");
    assert_eq!(
        seen["progress"], 3,
        "{sdk}: progress comes on the POST's stream"
    );
    assert_eq!(
        seen["session_id"],
        Value::Null,
        "{sdk}: the client holds no session id"
    );
    let exchanges = seen["exchanges"].as_array().unwrap();
    let posts = exchanges.iter().filter(|e| e["method"] == "POST").count();
    assert!(
        posts >= 5,
        "{sdk}: initialize, initialized, list, 2 calls: {seen}"
    );
    for e in exchanges {
        assert_eq!(
            e["session"],
            Value::Null,
            "{sdk}: a response carried a session id: {e}"
        );
        assert_eq!(e["sent_session"], Value::Null, "{sdk}: {e}");
        let want = matches!(
            (e["method"].as_str(), e["status"].as_u64()),
            (Some("POST"), Some(200 | 202)) | (Some("GET"), Some(405))
        );
        assert!(want, "{sdk}: unexpected exchange {e}");
    }
}

/// The Python SDK's client (mcp 1.30.0) connects, lists, calls `echo` and `slow`.
#[tokio::test]
async fn the_python_sdk_works_without_sessions() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let seen = oxmcp_tests::python::run_script("stateless_client.py", &[&url]).await;
    check_sdk_run("python", &seen);
}

/// The TypeScript SDK's client does the same; its GET for a standalone stream gets 405,
/// which it takes as "no such stream".
#[tokio::test]
async fn the_typescript_sdk_works_without_sessions() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let seen = oxmcp_tests::node::run_script("stateless_client.mjs", &[&url]).await;
    check_sdk_run("typescript", &seen);
    let get = seen["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["method"] == "GET" && e["status"] == 405);
    assert!(get, "the SDK tried the GET stream and got 405: {seen}");
}

/// initialize has no session id; a call without initialize (and one with a made-up session
/// id) is answered; nothing lasts from one POST to the next; GET and DELETE are 405.
#[tokio::test]
async fn each_legacy_post_stands_alone() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let (status, session, m) = post(&url, &[], initialize(1)).await;
    assert_eq!((status, session), (200, None), "{m:?}");
    assert_eq!(m[0]["result"]["protocolVersion"], V);
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let (status, session, _) = post(&url, &[], initialized).await;
    assert_eq!((status, session), (202, None));
    let version = [("mcp-protocol-version", V)];
    let (status, session, m) =
        post(&url, &version, call(2, "echo", json!({"message":"alone"}))).await;
    assert_eq!((status, session), (200, None), "{m:?}");
    assert_eq!(text(&m[0]), "alone");
    // No version header: 2025-03-26 is assumed (batches are part of it).
    let batch =
        json!([call(3, "echo", json!({"message":"a"})), {"jsonrpc":"2.0","id":4,"method":"ping"}]);
    let (status, _, m) = post(&url, &[], batch).await;
    assert_eq!(status, 200, "{m:?}");
    assert_eq!(m[0].as_array().map(Vec::len), Some(2), "{m:?}");
    // A session id is ignored, as the SDKs' stateless servers do.
    let with_id = [
        ("mcp-protocol-version", V),
        ("mcp-session-id", "0123456789abcdef"),
    ];
    let (status, session, m) = post(&url, &with_id, call(5, "echo", json!({"message":"id"}))).await;
    assert_eq!((status, session), (200, None), "{m:?}");
    assert_eq!(text(&m[0]), "id");
    // The working directory `cd` sets is the request's own state: gone with it.
    let (_, _, m) = post(&url, &version, call(6, "cd", json!({"path":"docs"}))).await;
    assert_eq!(text(&m[0]), "/docs");
    let (_, _, m) = post(&url, &version, call(7, "pwd", json!({}))).await;
    assert_eq!(text(&m[0]), "/", "nothing lasts from one POST to the next");
    let client = reqwest::Client::new();
    let get = client
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405);
    let delete = client
        .delete(&url)
        .header("mcp-session-id", "0123456789abcdef")
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 405);
}

/// What needs a session: a request to the client fails at once (the tool says the client
/// cannot elicit, instead of waiting for an answer no state would get); a subscription is
/// -32601.
#[tokio::test]
async fn what_needs_a_session_fails_clearly() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let version = [("mcp-protocol-version", V)];
    let started = std::time::Instant::now();
    let (status, _, m) = post(&url, &version, call(1, "ask", json!({}))).await;
    assert_eq!(status, 200);
    assert_eq!(m.last().unwrap()["result"]["isError"], true, "{m:?}");
    assert!(text(m.last().unwrap()).contains("elicitation"), "{m:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "answered at once"
    );
    let subscribe = json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"demo://info"}});
    let (status, _, m) = post(&url, &version, subscribe).await;
    assert_eq!(status, 200);
    assert_eq!(oxmcp_tests::code(&m[0]), -32601, "{m:?}");
}

/// Two instances that share nothing (no store): a client's initialize goes to one and its
/// calls alternate between both, as behind a load balancer without sticky routing.
#[tokio::test]
async fn two_instances_serve_one_client_without_a_store() {
    let (_a, a) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let (_b, b) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let (status, session, _) = post(&a, &[], initialize(1)).await;
    assert_eq!((status, session), (200, None));
    let version = [("mcp-protocol-version", V)];
    for (i, url) in [&b, &a, &b].into_iter().enumerate() {
        let id = i as i64 + 2;
        let (status, _, m) = post(
            url,
            &version,
            call(id, "echo", json!({"message": id.to_string()})),
        )
        .await;
        assert_eq!(status, 200, "{url}: {m:?}");
        assert_eq!(text(&m[0]), id.to_string());
    }
}

/// The 2026-07-28 era is as before on a stateless server.
#[tokio::test]
async fn modern_requests_are_unchanged() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0", "--stateless"]).await;
    let mut params = json!({"name":"echo","arguments":{"message":"modern"}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let (status, session, m) = post(&url, &headers, body).await;
    assert_eq!((status, session), (200, None), "{m:?}");
    assert_eq!(text(&m[0]), "modern");
}

/// Without --stateless a legacy client still needs its session: initialize makes one, and a
/// call, a GET or a DELETE without it is refused.
#[tokio::test]
async fn without_stateless_sessions_are_required() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0"]).await;
    let (status, session, _) = post(&url, &[], initialize(1)).await;
    assert_eq!(status, 200);
    assert!(session.is_some(), "initialize makes a session");
    let version = [("mcp-protocol-version", V)];
    let (status, _, _) = post(&url, &version, call(2, "echo", json!({"message":"x"}))).await;
    assert_eq!(status, 400, "a call without a session is refused");
    let client = reqwest::Client::new();
    let get = client
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 400);
    let delete = client.delete(&url).send().await.unwrap();
    assert_eq!(delete.status(), 400);
}

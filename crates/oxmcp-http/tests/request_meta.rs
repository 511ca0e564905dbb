//! A 2026-07-28 request's params are read once for everything around its handler: the
//! Streamable HTTP header checks read its `RequestMeta` and hand it on, and the server's era,
//! context and multi round-trip state read the same one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{answer, modern_post, start_with};
use oxmcp_http::{HttpConfig, ServeOptions};
use oxmcp_types::request_meta::parses_on_this_thread;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// The server, the HTTP client and the engine all run on this one thread, so the thread's
/// count of `RequestMeta::parse` calls is the request's.
#[tokio::test(flavor = "current_thread")]
async fn a_modern_tools_call_reads_its_params_once_per_round() {
    let asking = oxmcp_server::Server::builder("asking", "1")
        .tool(
            "ask",
            "asks a name",
            |ctx: oxmcp_server::Ctx, _a: NoArgs| async move {
                assert_eq!(ctx.meta().unwrap()["progressToken"], "p1");
                let params: oxmcp_types::ElicitParams = serde_json::from_value(json!({
                    "message": "name?",
                    "requestedSchema": {"type":"object","properties":{"name":{"type":"string"}}}
                }))
                .unwrap();
                let r = ctx.elicit(&params).await.map_err(|e| e.to_string())?;
                let name = r
                    .content
                    .and_then(|c| c.get("name").and_then(|n| n.as_str().map(str::to_owned)))
                    .unwrap_or_default();
                Ok::<_, String>(format!("named {name}"))
            },
        )
        .build()
        .unwrap();
    let s = start_with(asking, HttpConfig::default(), ServeOptions::default()).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "progressToken": "p1"
    });
    let call = |extra: Value| {
        let mut params = json!({"_meta": meta, "name": "ask", "arguments": {}});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        modern_post(&s.url, 1, "tools/call", Some("ask"), params).send()
    };

    let before = parses_on_this_thread();
    let first = answer(call(json!({})).await.unwrap()).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(parses_on_this_thread() - before, 1, "the first round");

    let key = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let retry = json!({
        "requestState": first["result"]["requestState"],
        "inputResponses": { key: {"action": "accept", "content": {"name": "Ada"}} }
    });
    let before = parses_on_this_thread();
    let done = answer(call(retry).await.unwrap()).await;
    assert_eq!(done["result"]["content"][0]["text"], "named Ada", "{done}");
    assert_eq!(parses_on_this_thread() - before, 1, "the retry");
}

/// A 2026-07-28 request is served on its own: it is no session of the server's (nothing to
/// broadcast to, nothing for the next request to scan), even while its handler runs.
#[tokio::test]
async fn a_modern_request_in_flight_is_no_session_of_the_server() {
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let started = std::sync::Arc::new(tokio::sync::Notify::new());
    let (held, began) = (release.clone(), started.clone());
    let server = oxmcp_server::Server::builder("waiting", "1")
        .tool(
            "wait",
            "waits to be released",
            move |_ctx: oxmcp_server::Ctx, _a: NoArgs| {
                let (held, began) = (held.clone(), began.clone());
                async move {
                    began.notify_one();
                    held.notified().await;
                    Ok::<_, String>("released")
                }
            },
        )
        .build()
        .unwrap();
    let s = start_with(
        server.clone(),
        HttpConfig::default(),
        ServeOptions::default(),
    )
    .await;
    let params = json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        },
        "name": "wait",
        "arguments": {}
    });
    let call = tokio::spawn(modern_post(&s.url, 1, "tools/call", Some("wait"), params).send());
    started.notified().await;
    assert_eq!(server.session_count(), 0, "a modern request in flight");
    release.notify_one();
    let done = answer(call.await.unwrap().unwrap()).await;
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
}

/// `Mcp-Param-*` headers are checked against the arguments they mirror, read from the
/// request's text: a match (plain or base64 sentinel) is served, a missing or different
/// header is a 400 with HeaderMismatch (-32020), and an argument nested deeper or left out
/// does not count.
#[tokio::test]
async fn mcp_param_headers_are_checked_against_the_arguments() {
    use tokio_util::sync::CancellationToken;
    let shutdown = CancellationToken::new();
    let config = HttpConfig::default().shutdown(shutdown.clone());
    let http =
        oxmcp_http::StreamableHttp::new(common::server(), config).with_param_headers(|tool| {
            match tool {
                "echo" => vec![("Message".to_owned(), "message".to_owned())],
                _ => Vec::new(),
            }
        });
    let s = common::serve(http, shutdown, ServeOptions::default()).await;
    let call = |args: Value, header: Option<&str>| {
        let params = json!({"name": "echo", "arguments": args});
        let mut r = modern_post(&s.url, 7, "tools/call", Some("echo"), params);
        if let Some(h) = header {
            r = r.header("mcp-param-message", h);
        }
        r.send()
    };
    let ok = call(json!({"message": "héllo"}), Some("=?base64?aMOpbGxv?=")).await;
    let ok = ok.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(answer(ok).await["result"]["content"][0]["text"], "héllo");
    let ok = call(json!({"message": "plain"}), Some("plain"))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);

    for (args, header, says) in [
        (
            json!({"message": "a"}),
            Some("b"),
            "does not match body value 'a'",
        ),
        (json!({"message": "a"}), None, "header is required"),
        (
            json!({"message": "a"}),
            Some("=?base64?!!?="),
            "not valid base64",
        ),
    ] {
        let r = call(args, header).await.unwrap();
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32020, "{v}");
        assert_eq!(v["id"], 7, "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    // Not the argument: nothing to mirror, so no header is needed (the tool then refuses
    // its arguments itself).
    let r = call(json!({"other": {"message": "a"}}), None)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

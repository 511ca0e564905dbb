//! The client against a real server in the same process (`oxmcp_transport::duplex()`): typed
//! calls in both eras, and the transport's `Link` closed with the client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, ConnectError, EraChoice};
use oxmcp_server::{Ctx, Server};
use oxmcp_transport::{Exit, Link};
use oxmcp_types::JsonObject;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

fn server() -> Server {
    Server::builder("in-process", "1")
        .tool("echo", "echo", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .text_resource("test://readme", "readme", "text/plain", "read me")
        .build()
        .unwrap()
}

/// Counts how often it was closed.
struct Counting(Arc<AtomicUsize>);

impl Link for Counting {
    fn close(self: Box<Self>) -> BoxFuture<'static, Option<Exit>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { None })
    }
}

async fn connect(era: EraChoice, closes: &Arc<AtomicUsize>) -> Result<Client, ConnectError> {
    let (ours, theirs) = oxmcp_transport::duplex();
    let s = server();
    tokio::spawn(async move { s.serve(theirs.incoming, theirs.outgoing).await });
    let config = ClientConfig::default().era(era);
    Client::connect_over(
        ours,
        Counting(closes.clone()),
        ClientHandlers::new(),
        config,
    )
    .await
}

fn args(v: serde_json::Value) -> JsonObject {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn typed_calls_in_both_eras_and_the_link_closes_once() {
    for (era, modern) in [(EraChoice::Legacy, false), (EraChoice::Auto, true)] {
        let closes = Arc::new(AtomicUsize::new(0));
        let client = connect(era, &closes).await.unwrap();
        assert_eq!(client.is_modern(), modern);
        assert_eq!(client.server().server_info.name, "in-process");
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        let r = client
            .call_tool("echo", args(json!({"message":"hi"})))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("hi"));
        let read = client.read_resource("test://readme").await.unwrap();
        assert_eq!(
            serde_json::to_value(&read.contents[0]).unwrap()["text"],
            "read me"
        );
        // The server declared no prompts: refused locally, nothing sent.
        let refused = client.list_prompts(None).await.unwrap_err();
        assert!(matches!(refused, CallError::Protocol(_)), "{refused:?}");
        client.ping().await.unwrap();
        assert_eq!(closes.load(Ordering::SeqCst), 0);
        client.close().await;
        assert_eq!(closes.load(Ordering::SeqCst), 1, "closed with the client");
    }
}

#[tokio::test]
async fn a_failed_handshake_closes_the_link() {
    // A modern-only client against a server that speaks only the handshake era.
    let legacy_only = Server::builder("old", "1")
        .config(oxmcp_server::ServerConfig::default().modern(false))
        .build()
        .unwrap();
    let (ours, theirs) = oxmcp_transport::duplex();
    tokio::spawn(async move { legacy_only.serve(theirs.incoming, theirs.outgoing).await });
    let closes = Arc::new(AtomicUsize::new(0));
    let config = ClientConfig::default().era(EraChoice::Modern);
    let r = Client::connect_over(
        ours,
        Counting(closes.clone()),
        ClientHandlers::new(),
        config,
    )
    .await;
    assert!(r.is_err());
    assert_eq!(closes.load(Ordering::SeqCst), 1);
}

/// A 2024-11-05 server as they were: `completion/complete` answered, but no `completions`
/// capability (the capability came in 2025-03-26). A stdio child written in Python.
const OLD_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2024-11-05", "capabilities": {"prompts": {}},
             "serverInfo": {"name": "old", "version": "1"}}
    elif m["method"] == "completion/complete":
        r = {"completion": {"values": ["alpha", "alpine"], "hasMore": False}}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                          "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

#[tokio::test]
async fn complete_works_against_a_2024_11_05_server() {
    let config =
        ClientConfig::default().protocol_version(oxmcp_types::ProtocolVersion::V2024_11_05);
    let args = vec!["-c".to_owned(), OLD_SERVER.to_owned()];
    let c = Client::spawn("python3", &args, ClientHandlers::new(), config)
        .await
        .unwrap();
    assert_eq!(
        c.protocol_version(),
        oxmcp_types::ProtocolVersion::V2024_11_05
    );
    let params: oxmcp_types::CompleteParams = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": "al"},
    }))
    .unwrap();
    let r = c.complete(&params).await.unwrap();
    assert_eq!(r.completion.values, ["alpha", "alpine"]);
    c.close().await;
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// What the `roots` tool says.
async fn roots_of(c: &Client) -> String {
    let r = c.call_tool("roots", args(json!({}))).await.unwrap();
    r.content[0].as_text().unwrap().to_owned()
}

/// A legacy session keeps the client's roots until the client says they changed; then the
/// server reads them again by itself and tells its `on_roots_changed` hook.
#[tokio::test]
async fn the_server_rereads_roots_when_they_change() {
    use std::sync::Mutex;
    let heard: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let hook = heard.clone();
    let server = Server::builder("roots", "1")
        .tool(
            "roots",
            "the client's roots",
            |c: Ctx, _a: Nothing| async move {
                let roots = c.roots().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(
                    roots
                        .iter()
                        .map(|r| r.uri.clone())
                        .collect::<Vec<_>>()
                        .join(","),
                )
            },
        )
        .on_roots_changed(move |roots| {
            let uris = roots.iter().map(|r| r.uri.clone()).collect();
            hook.lock().unwrap().push(uris);
        })
        .build()
        .unwrap();
    let (ours, theirs) = oxmcp_transport::duplex();
    tokio::spawn(async move { server.serve(theirs.incoming, theirs.outgoing).await });
    let current = Arc::new(Mutex::new(vec!["file:///a".to_owned()]));
    let asked = Arc::new(AtomicUsize::new(0));
    let (now, count) = (current.clone(), asked.clone());
    let handlers = ClientHandlers::new().roots(move || {
        count.fetch_add(1, Ordering::SeqCst);
        let roots: Vec<oxmcp_types::Root> = now
            .lock()
            .unwrap()
            .iter()
            .map(|u| serde_json::from_value(json!({"uri": u})).unwrap())
            .collect();
        async move { Ok(oxmcp_types::ListRootsResult::default().with_roots(roots)) }
    });
    let closes = Arc::new(AtomicUsize::new(0));
    let c = Client::connect_over(ours, Counting(closes), handlers, ClientConfig::default())
        .await
        .unwrap();
    assert_eq!(roots_of(&c).await, "file:///a");
    assert_eq!(roots_of(&c).await, "file:///a");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "kept, not asked again");

    *current.lock().unwrap() = vec!["file:///b".to_owned(), "file:///c".to_owned()];
    c.notify_roots_changed().await.unwrap();
    for _ in 0..100 {
        if !heard.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        *heard.lock().unwrap(),
        vec![vec!["file:///b".to_owned(), "file:///c".to_owned()]]
    );
    assert_eq!(roots_of(&c).await, "file:///b,file:///c");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "read once more, by the server itself"
    );
    c.close().await;
}

/// Sampling with tools: the server offers tools only to a client that declares
/// `sampling.tools`, and the model's tool call comes back typed as `tool_use`.
#[tokio::test]
async fn sampling_with_tools_needs_the_capability() {
    let server = Server::builder("sampler", "1")
        .tool(
            "plan",
            "asks the model, with a tool",
            |c: Ctx, _a: Nothing| async move {
                let params: oxmcp_types::CreateMessageParams = serde_json::from_value(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "weather?"}}],
                    "maxTokens": 50,
                    "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
                    "toolChoice": {"mode": "required"},
                }))
                .unwrap();
                assert_eq!(
                    params.tool_choice.as_ref().and_then(|t| t.mode),
                    Some(oxmcp_types::ToolChoiceMode::Required)
                );
                let r = c.create_message(&params).await.map_err(|e| e.to_string())?;
                match &r.content {
                    oxmcp_types::OneOrMany::One(oxmcp_types::Content::ToolUse(u)) => {
                        Ok::<_, String>(format!("{} {}", u.name, u.input))
                    }
                    other => Err(format!("unexpected {other:?}")),
                }
            },
        )
        .build()
        .unwrap();
    for declared in [true, false] {
        let server = server.clone();
        let (ours, theirs) = oxmcp_transport::duplex();
        tokio::spawn(async move { server.serve(theirs.incoming, theirs.outgoing).await });
        let mut handlers = ClientHandlers::new().sampling(|p| async move {
            let tools = p.tools.unwrap_or_default();
            let content: oxmcp_types::Content = serde_json::from_value(json!({
                "type": "tool_use", "id": "u1", "name": tools[0].name, "input": {"city": "Paris"},
            }))
            .unwrap();
            Ok(
                oxmcp_types::CreateMessageResult::new("m", oxmcp_types::OneOrMany::One(content))
                    .with_role(oxmcp_types::Role::Assistant)
                    .with_stop_reason(Some("toolUse".into())),
            )
        });
        if declared {
            handlers = handlers.sampling_tools();
        }
        let closes = Arc::new(AtomicUsize::new(0));
        let c = Client::connect_over(ours, Counting(closes), handlers, ClientConfig::default())
            .await
            .unwrap();
        let r = c.call_tool("plan", args(json!({}))).await.unwrap();
        let text = r.content[0].as_text().unwrap().to_owned();
        if declared {
            assert_eq!(text, r#"get_weather {"city":"Paris"}"#);
        } else {
            assert!(r.failed(), "{text}");
            assert!(text.contains("sampling.tools"), "{text}");
        }
        c.close().await;
    }
}

/// URL-mode elicitation required (-32042): the tool says which URL the user must visit, the
/// server says when that is done (`notifications/elicitation/complete`), and the retry works.
#[tokio::test]
async fn url_elicitation_required_then_complete_then_retry() {
    use std::sync::atomic::AtomicBool;
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let server = Server::builder("url", "1")
        .tool(
            "connect",
            "needs an account link",
            move |c: Ctx, _a: Nothing| {
                let flag = flag.clone();
                async move {
                    if flag.load(Ordering::SeqCst) {
                        return Ok("connected".to_owned());
                    }
                    // The user finishes in the browser later; then the server says so.
                    let peer = c.peer().clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        flag.store(true, Ordering::SeqCst);
                        let params = oxmcp_types::ElicitationCompleteParams::default()
                            .with_elicitation_id("e1".into());
                        let _ = peer
                            .notify::<oxmcp_types::methods::ElicitationComplete>(&params)
                            .await;
                    });
                    Err(oxmcp_server::url_elicitation_required(vec![
                        oxmcp_types::ElicitParams::url(
                            "e1",
                            "https://example.com/connect?e=e1",
                            "Link your account",
                        ),
                    ]))
                }
            },
        )
        .build()
        .unwrap();
    let (ours, theirs) = oxmcp_transport::duplex();
    tokio::spawn(async move { server.serve(theirs.incoming, theirs.outgoing).await });
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let handlers = ClientHandlers::new().on_event(move |e| {
        if let oxmcp_client::ServerEvent::ElicitationComplete(id) = e {
            let _ = tx.send(id);
        }
    });
    let closes = Arc::new(AtomicUsize::new(0));
    let c = Client::connect_over(ours, Counting(closes), handlers, ClientConfig::default())
        .await
        .unwrap();
    let e = c.call_tool("connect", args(json!({}))).await.unwrap_err();
    let asked = oxmcp_client::url_elicitations(&e).expect("a -32042 error");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].mode.as_deref(), Some("url"));
    assert_eq!(asked[0].elicitation_id.as_deref(), Some("e1"));
    assert_eq!(
        asked[0].url.as_deref(),
        Some("https://example.com/connect?e=e1")
    );
    let id = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .expect("the completion in time")
        .unwrap();
    assert_eq!(id, "e1");
    let r = c.call_tool("connect", args(json!({}))).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("connected"));
    assert!(oxmcp_client::url_elicitations(&CallError::Closed).is_none());
    c.close().await;
}

/// A stdio server that lists tools with output schemas and answers as the argument says:
/// matching structured content, none, or content of the wrong shape.
const LYING_SERVER: &str = r#"
import json, sys
schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "liar", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [
            {"name": "count", "inputSchema": {"type": "object"}, "outputSchema": schema},
            {"name": "plain", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        how = m["params"].get("arguments", {}).get("how")
        r = {"content": [{"type": "text", "text": "x"}]}
        if how == "good":
            r["structuredContent"] = {"n": 3}
        elif how == "bad":
            r["structuredContent"] = {"n": "three"}
        elif how == "error":
            r["isError"] = True
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                          "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

#[tokio::test]
async fn structured_content_is_checked_against_the_output_schema() {
    let argv = vec!["-c".to_owned(), LYING_SERVER.to_owned()];
    let spawn = |validate_output| {
        let config = ClientConfig::default().validate_output(validate_output);
        Client::spawn("python3", &argv, ClientHandlers::new(), config)
    };
    let c = spawn(true).await.unwrap();
    c.list_tools().await.unwrap();
    let how = |h: &str| args(json!({ "how": h }));
    let good = c.call_tool("count", how("good")).await.unwrap();
    assert_eq!(good.structured_content, Some(json!({"n": 3})));
    let bad = c.call_tool("count", how("bad")).await.unwrap_err();
    assert!(
        bad.to_string().contains("does not match its outputSchema"),
        "{bad}"
    );
    let none = c.call_tool("count", how("none")).await.unwrap_err();
    assert!(none.to_string().contains("no structuredContent"), "{none}");
    // A tool error is not checked; nor is a tool without an output schema.
    assert_eq!(
        c.call_tool("count", how("error")).await.unwrap().is_error,
        Some(true)
    );
    c.call_tool("plain", how("bad")).await.unwrap();
    c.close().await;

    // Switched off, what the server says is passed on.
    let c = spawn(false).await.unwrap();
    c.list_tools().await.unwrap();
    let bad = c.call_tool("count", how("bad")).await.unwrap();
    assert_eq!(bad.structured_content, Some(json!({"n": "three"})));
    c.close().await;
}

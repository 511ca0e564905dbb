//! The client library against the real demo server in a child process, and child-process
//! shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, RequestOptions, ServerEvent};
use oxmcp_transport::{ChildConfig, ChildProcess, Exit};
use oxmcp_types::{
    CompleteParams, CompletionArgument, CompletionReference, JsonObject, LoggingLevel,
};
use serde_json::{Value, json};

use oxmcp_tests::oxmcp;

fn obj(v: serde_json::Value) -> JsonObject {
    v.as_object().cloned().unwrap()
}

async fn demo(handlers: ClientHandlers) -> Client {
    Client::spawn(
        oxmcp(),
        &["serve", "--stdio"],
        handlers,
        ClientConfig::default(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn typed_methods_against_the_demo_server() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let client = demo(ClientHandlers::new().on_event(move |e| sink.lock().unwrap().push(e))).await;
    assert_eq!(client.server().server_info.name, "mcp-demo");
    client.ping().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 16);
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert!(add.output_schema.is_some());
    let r = client
        .call_tool("add", obj(json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 3.0})));
    let r = client.call_tool("fail", JsonObject::new()).await.unwrap();
    assert!(r.failed());
    let e = client
        .call_tool("nope", JsonObject::new())
        .await
        .unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32602);

    // Progress reaches the caller and resets the timeout: 4 steps of 300 ms with an 800 ms
    // timeout (exact timing semantics are tested with virtual time in oxmcp-engine).
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = RequestOptions::default()
        .timeout(Duration::from_millis(800))
        .on_progress(move |p| s2.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with("slow", obj(json!({"steps": 4, "delay_ms": 300})), &opts)
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("done after 4 steps"));
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);

    // Without progress the same timeout fires, and the server is told.
    let opts = RequestOptions::default().timeout(Duration::from_millis(200));
    let e = client
        .call_tool_with("slow", obj(json!({"steps": 1, "delay_ms": 2000})), &opts)
        .await;
    assert!(matches!(e, Err(CallError::Timeout(_))), "{e:?}");
    client.ping().await.unwrap();

    let res = client.list_resources(None).await.unwrap();
    assert_eq!(res.resources.len(), 3);
    let r = client.read_resource("demo://greeting/Linus").await.unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("Hello, Linus!"));
    let e = client.read_resource("demo://missing").await.unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32002);
    client.subscribe("demo://readme").await.unwrap();
    client.unsubscribe("demo://readme").await.unwrap();
    let p = client
        .get_prompt("greet", [("name".to_owned(), "Ada".to_owned())].into())
        .await
        .unwrap();
    assert_eq!(p.messages.len(), 1);
    let c = client
        .complete(&CompleteParams::new(
            CompletionReference::Resource {
                uri: "demo://greeting/{name}".into(),
            },
            CompletionArgument::default()
                .with_name("name".into())
                .with_value("a".into()),
        ))
        .await
        .unwrap();
    assert_eq!(c.completion.values, ["Ada", "Alan"]);
    client.set_log_level(LoggingLevel::Warning).await.unwrap();
    client
        .call_tool("log", obj(json!({"message": "quiet", "level": "info"})))
        .await
        .unwrap();
    client
        .call_tool("log", obj(json!({"message": "loud", "level": "error"})))
        .await
        .unwrap();
    let logs: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Log(l) => Some(l.data.clone()),
            _ => None,
        })
        .collect();
    // The first is from the timed-out `slow` call: the server was told, and dropped it.
    assert_eq!(logs, [json!("slow: cancelled after step 0"), json!("loud")]);
    assert_eq!(client.close().await, Some(Exit::Closed));
}

#[tokio::test]
async fn stray_stdout_lines_are_skipped() {
    let bin = oxmcp();
    let script = format!("echo 'starting up...'; echo '{{not json'; exec {bin} serve --stdio");
    let client = Client::spawn(
        "sh",
        &["-c", &script],
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await
    .unwrap();
    client.ping().await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 16);
    client.close().await;
}

/// Wires a server and a client together in-process over the real engine on both sides.
fn pipe() -> (
    (
        tokio::sync::mpsc::Receiver<oxmcp_jsonrpc::Inbound>,
        tokio::sync::mpsc::Sender<oxmcp_jsonrpc::Outbound>,
    ),
    (
        tokio::sync::mpsc::Receiver<oxmcp_jsonrpc::Inbound>,
        tokio::sync::mpsc::Sender<oxmcp_jsonrpc::Outbound>,
    ),
) {
    let (a, b) = oxmcp_transport::duplex();
    ((a.incoming, a.outgoing), (b.incoming, b.outgoing))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test]
async fn undeclared_capabilities_are_refused_both_ways() {
    let server = oxmcp_server::Server::builder("tools-only", "1")
        .logging(false)
        .tool(
            "noop",
            "does nothing",
            |_ctx: oxmcp_server::Ctx, _a: NoArgs| async move { Ok::<_, String>("ok") },
        )
        .build()
        .unwrap();
    let ((s_in, s_out), (c_in, c_out)) = pipe();
    tokio::spawn(async move { server.serve(s_in, s_out).await });
    let client = Client::connect(c_in, c_out, ClientHandlers::new(), ClientConfig::default())
        .await
        .unwrap();
    let caps = client.server_capabilities();
    assert!(caps.tools.is_some());
    assert!(caps.prompts.is_none() && caps.resources.is_none() && caps.logging.is_none());
    // Refused locally, without a round trip.
    assert!(matches!(
        client.list_prompts(None).await,
        Err(CallError::Protocol(_))
    ));
    assert!(matches!(
        client.set_log_level(LoggingLevel::Debug).await,
        Err(CallError::Protocol(_))
    ));
    // And the server refuses them too.
    let e = client
        .peer()
        .request_raw("prompts/list", json!({}), &RequestOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32601);
    let e = client
        .peer()
        .request_raw(
            "logging/setLevel",
            json!({"level":"debug"}),
            &RequestOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32601);
    assert_eq!(
        client
            .call_tool("noop", JsonObject::new())
            .await
            .unwrap()
            .content[0]
            .as_text(),
        Some("ok")
    );
}

fn alive(pid: i32) -> bool {
    // A zombie still has a /proc entry; count it as dead only when reaped or state Z.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn stubborn_children_are_killed_with_their_group() {
    // Ignores EOF and SIGTERM, and starts a grandchild that does the same.
    let script = "trap '' TERM; (trap '' TERM; while :; do sleep 0.05; done) & echo $!; while :; do sleep 0.05; done";
    let config = ChildConfig::default()
        .stdin_grace(Duration::from_millis(200))
        .term_grace(Duration::from_millis(200));
    for _ in 0..3 {
        let (mut child, mut io) =
            ChildProcess::spawn("sh", ["-c", script], config.clone()).unwrap();
        let pid = i32::try_from(child.id().unwrap()).unwrap();
        let line = io.incoming.recv().await.unwrap();
        let oxmcp_jsonrpc::Inbound::Frame(line) = line else {
            panic!("not a frame: {line:?}")
        };
        let grandchild: i32 = String::from_utf8(line).unwrap().trim().parse().unwrap();
        assert!(alive(grandchild));
        assert_eq!(child.shutdown().await.unwrap(), Exit::Killed);
        assert!(!alive(pid), "child left behind");
        // The grandchild is reparented to init, which reaps it shortly after the kill.
        let mut gone = false;
        for _ in 0..100 {
            if !alive(grandchild) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "grandchild {grandchild} survived");
    }
    // A polite child exits when its stdin closes.
    let (mut child, _io) =
        ChildProcess::spawn("cat", Vec::<String>::new(), config.clone()).unwrap();
    assert_eq!(child.shutdown().await.unwrap(), Exit::Closed);
    // One that exits on SIGTERM.
    let (mut child, _io) =
        ChildProcess::spawn("sh", ["-c", "while :; do sleep 0.05; done"], config).unwrap();
    assert_eq!(child.shutdown().await.unwrap(), Exit::Terminated);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Topic {
    topic: String,
}

#[tokio::test]
async fn server_to_client_requests_and_notifications() {
    use oxmcp_types::{
        Content, CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams,
        ElicitResult, ListRootsResult, OneOrMany, Role, Root, SamplingMessage,
    };
    let server = oxmcp_server::Server::builder("s2c", "1")
        .tool(
            "ask",
            "asks the user",
            |ctx: oxmcp_server::Ctx, _a: NoArgs| async move {
                let schema = json!({"type":"object","properties":{
                "name":{"type":"string"},
                "color":{"type":"string","default":"blue"},
                "count":{"type":"integer","default":3}}});
                let params = ElicitParams::default()
                    .with_message("Who are you?".into())
                    .with_requested_schema(schema.as_object().cloned());
                let r = ctx.elicit(&params).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(serde_json::to_string(&r.content).unwrap())
            },
        )
        .tool(
            "sample",
            "asks the model",
            |ctx: oxmcp_server::Ctx, a: Topic| async move {
                let params = CreateMessageParams {
                    messages: vec![SamplingMessage::new(
                        Role::User,
                        OneOrMany::One(Content::text(a.topic)),
                    )],
                    model_preferences: None,
                    system_prompt: None,
                    include_context: None,
                    temperature: None,
                    max_tokens: 10,
                    stop_sequences: None,
                    metadata: None,
                    tools: None,
                    tool_choice: None,
                    meta: None,
                    extra: JsonObject::new(),
                };
                let r = ctx
                    .create_message(&params)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(format!(
                    "{}:{}",
                    r.model,
                    serde_json::to_string(&r.content).unwrap()
                ))
            },
        )
        .tool(
            "roots",
            "lists roots",
            |ctx: oxmcp_server::Ctx, _a: NoArgs| async move {
                let r = ctx.list_roots().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(
                    r.roots
                        .iter()
                        .map(|r| r.uri.clone())
                        .collect::<Vec<_>>()
                        .join(","),
                )
            },
        )
        .text_resource("test://r", "r", "text/plain", "x")
        .build()
        .unwrap();

    // A client with all three handlers.
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let handlers = ClientHandlers::new()
        .elicitation(|p: ElicitParams| async move {
            assert_eq!(p.message, "Who are you?");
            let mut content = JsonObject::new();
            content.insert("name".into(), json!("Ada"));
            content.insert("count".into(), json!(7));
            Ok(ElicitResult::cancel()
                .with_action(ElicitAction::Accept)
                .with_content(Some(content)))
        })
        .sampling(|_p| async move {
            Ok(
                CreateMessageResult::new("test-model", OneOrMany::One(Content::text("hi")))
                    .with_role(Role::Assistant),
            )
        })
        .roots(|| async {
            Ok(ListRootsResult::default().with_roots(vec![
                Root::default().with_uri("file:///a".into()),
                Root::default().with_uri("file:///b".into()),
            ]))
        })
        .on_event(move |e| sink.lock().unwrap().push(e));
    let ((s_in, s_out), (c_in, c_out)) = pipe();
    let srv = server.clone();
    tokio::spawn(async move { srv.serve(s_in, s_out).await });
    let client = Client::connect(c_in, c_out, handlers, ClientConfig::default())
        .await
        .unwrap();
    let r = client.call_tool("ask", JsonObject::new()).await.unwrap();
    let content: Value = serde_json::from_str(r.content[0].as_text().unwrap()).unwrap();
    // Defaults are filled in only for the fields the user left out.
    assert_eq!(content, json!({"name":"Ada","count":7,"color":"blue"}));
    let r = client
        .call_tool("sample", obj(json!({"topic":"t"})))
        .await
        .unwrap();
    assert_eq!(
        r.content[0].as_text(),
        Some(r#"test-model:{"type":"text","text":"hi"}"#)
    );
    let r = client.call_tool("roots", JsonObject::new()).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("file:///a,file:///b"));

    // list_changed and resource updates reach the client.
    client.subscribe("test://r").await.unwrap();
    assert!(server.remove_tool("roots"));
    server.notify_resource_updated("test://r");
    server.notify_resource_updated("test://not-subscribed");
    client.ping().await.unwrap();
    let seen: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .map(|e| format!("{e:?}"))
        .collect();
    assert!(seen.iter().any(|e| e == "ToolsChanged"), "{seen:?}");
    assert_eq!(
        seen.iter()
            .filter(|e| e.starts_with("ResourceUpdated"))
            .count(),
        1,
        "{seen:?}"
    );
    assert_eq!(client.list_tools().await.unwrap().len(), 2);

    // A client without handlers: the server refuses to send what the client did not declare.
    let ((s_in, s_out), (c_in, c_out)) = pipe();
    tokio::spawn(async move { server.serve(s_in, s_out).await });
    let bare = Client::connect(c_in, c_out, ClientHandlers::new(), ClientConfig::default())
        .await
        .unwrap();
    let r = bare.call_tool("ask", JsonObject::new()).await.unwrap();
    assert!(r.failed());
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .contains("does not support elicitation")
    );
    let r = bare
        .call_tool("sample", obj(json!({"topic":"t"})))
        .await
        .unwrap();
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .contains("does not support sampling")
    );
}

fn auto() -> ClientConfig {
    ClientConfig::default().era(oxmcp_client::EraChoice::Auto)
}

#[tokio::test]
async fn auto_client_speaks_2026_to_the_dual_era_demo() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let handlers = ClientHandlers::new().on_event(move |e| sink.lock().unwrap().push(e));
    let client = Client::spawn(oxmcp(), &["serve", "--stdio"], handlers, auto())
        .await
        .unwrap();
    assert!(client.is_modern());
    assert_eq!(
        client.protocol_version(),
        oxmcp_types::ProtocolVersion::V2026_07_28
    );
    assert_eq!(client.server().server_info.name, "mcp-demo");
    client.ping().await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 16);
    let r = client
        .call_tool("add", obj(json!({"a": 2, "b": 2})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 4.0})));
    assert_eq!(r.result_type, Some(oxmcp_types::ResultType::Complete));
    // Progress still reaches the caller.
    let seen = Arc::new(Mutex::new(0));
    let s2 = seen.clone();
    let opts = RequestOptions::default().on_progress(move |_| *s2.lock().unwrap() += 1);
    client
        .call_tool_with("slow", obj(json!({"steps": 2, "delay_ms": 1})), &opts)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), 2);
    // Logging: the level travels in _meta.
    client
        .call_tool("log", obj(json!({"message": "before"})))
        .await
        .unwrap();
    client.set_log_level(LoggingLevel::Info).await.unwrap();
    client
        .call_tool("log", obj(json!({"message": "after"})))
        .await
        .unwrap();
    let logs: Vec<Value> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Log(l) => Some(l.data.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(logs, [json!("after")]);
    let e = client.read_resource("demo://missing").await.unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32602);
    assert!(matches!(
        client.subscribe("demo://readme").await,
        Err(CallError::Protocol(_))
    ));
    client.close().await;
}

fn echo_server(config: oxmcp_server::ServerConfig) -> oxmcp_server::Server {
    oxmcp_server::Server::builder("era-test", "1")
        .config(config)
        .tool(
            "echo",
            "echo",
            |_c: oxmcp_server::Ctx, a: Topic| async move { Ok::<_, String>(a.topic) },
        )
        .build()
        .unwrap()
}

async fn connect_in_process(
    server: oxmcp_server::Server,
    config: ClientConfig,
) -> Result<Client, oxmcp_client::ConnectError> {
    let ((s_in, s_out), (c_in, c_out)) = pipe();
    tokio::spawn(async move { server.serve(s_in, s_out).await });
    Client::connect(c_in, c_out, ClientHandlers::new(), config).await
}

#[tokio::test]
async fn auto_client_against_legacy_only_and_modern_only_servers() {
    let legacy_only = oxmcp_server::ServerConfig::default().modern(false);
    let c = connect_in_process(echo_server(legacy_only), auto())
        .await
        .unwrap();
    assert!(!c.is_modern(), "falls back to initialize");
    assert_eq!(
        c.protocol_version(),
        oxmcp_types::ProtocolVersion::V2025_11_25
    );
    let r = c
        .call_tool("echo", obj(json!({"topic": "old"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("old"));

    let modern_only = oxmcp_server::ServerConfig::default().legacy(false);
    let c = connect_in_process(echo_server(modern_only.clone()), auto())
        .await
        .unwrap();
    assert!(c.is_modern());
    let r = c
        .call_tool("echo", obj(json!({"topic": "new"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("new"));
    // A legacy-only client cannot talk to a modern-only server, and says so.
    assert!(
        connect_in_process(echo_server(modern_only), ClientConfig::default())
            .await
            .is_err()
    );
    // And a modern-only client refuses a legacy-only server.
    let legacy_only = oxmcp_server::ServerConfig::default().modern(false);
    let modern = ClientConfig::default().era(oxmcp_client::EraChoice::Modern);
    assert!(
        connect_in_process(echo_server(legacy_only), modern)
            .await
            .is_err()
    );
}

fn mrtr_server() -> oxmcp_server::Server {
    use oxmcp_types::{ElicitParams, InputRequest, InputRequests};
    oxmcp_server::Server::builder("mrtr", "1")
        .tool("greet", "asks for a name, then a confirmation", |ctx: oxmcp_server::Ctx, _a: NoArgs| async move {
            let params = ElicitParams::default().with_message("What is your name?".into()).with_requested_schema(json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}).as_object().cloned());
            let first = ctx.elicit(&params).await.map_err(|e| e.to_string())?;
            let name = first.content.and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned)).unwrap_or_default();
            // A second round, two inputs at once.
            let mut more = InputRequests::new();
            more.insert("confirm".into(), InputRequest { method: "elicitation/create".into(), params: Some(json!({"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}})) });
            more.insert("roots".into(), InputRequest { method: "roots/list".into(), params: None });
            let answers = ctx.request_inputs(more).await.map_err(|e| e.to_string())?;
            let ok = answers["confirm"]["content"]["ok"].as_bool().unwrap_or(false);
            let roots = answers["roots"]["roots"].as_array().map_or(0, Vec::len);
            Ok::<_, String>(format!("hello {name} ok={ok} roots={roots}"))
        })
        .build()
        .unwrap()
}

fn mrtr_handlers() -> ClientHandlers {
    use oxmcp_types::{ElicitAction, ElicitResult, ListRootsResult, Root};
    ClientHandlers::new()
        .elicitation(|p| async move {
            let mut content = JsonObject::new();
            if p.message.starts_with("What") {
                content.insert("name".into(), json!("Ada"));
            } else {
                content.insert("ok".into(), json!(true));
            }
            Ok(ElicitResult::cancel()
                .with_action(ElicitAction::Accept)
                .with_content(Some(content)))
        })
        .roots(|| async {
            Ok(ListRootsResult::default()
                .with_roots(vec![Root::default().with_uri("file:///w".into())]))
        })
}

#[tokio::test]
async fn one_mrtr_handler_gives_the_same_answer_in_both_eras() {
    let legacy =
        connect_in_process_with(mrtr_server(), mrtr_handlers(), ClientConfig::default()).await;
    assert!(!legacy.is_modern());
    let modern = connect_in_process_with(mrtr_server(), mrtr_handlers(), auto()).await;
    assert!(modern.is_modern());
    let a = legacy.call_tool("greet", JsonObject::new()).await.unwrap();
    let b = modern.call_tool("greet", JsonObject::new()).await.unwrap();
    assert_eq!(a.content[0].as_text(), Some("hello Ada ok=true roots=1"));
    assert_eq!(a.content, b.content, "same handler, same answer, both eras");
    assert_eq!(b.result_type, Some(oxmcp_types::ResultType::Complete));
}

#[tokio::test]
async fn request_state_cannot_be_forged_or_moved() {
    let server = mrtr_server();
    let client = connect_in_process_with(
        server,
        ClientHandlers::new()
            .elicitation(|_| async { Err(oxmcp_jsonrpc::ErrorObject::internal("unused")) }),
        auto(),
    )
    .await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}}});
    let opts = RequestOptions::default();
    // Round 1 by hand: input_required with a signed state.
    let r: Value = client
        .peer()
        .request_as(
            "tools/call",
            &json!({"_meta": meta, "name":"greet","arguments":{}}),
            &opts,
        )
        .await
        .unwrap();
    assert_eq!(r["resultType"], "input_required");
    let state = r["requestState"].as_str().unwrap().to_owned();
    let key = r["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let responses = json!({ key.clone(): {"action":"accept","content":{"name":"Eve"}} });
    // Tampered.
    let e = client.peer().request_raw("tools/call", json!({"_meta": meta, "name":"greet","arguments":{},"inputResponses": responses, "requestState": format!("{state}-TAMPERED")}), &opts).await.unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32602);
    // Moved to another tool name.
    let e = client.peer().request_raw("tools/call", json!({"_meta": meta, "name":"other","arguments":{},"inputResponses": responses, "requestState": state}), &opts).await.unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32602);
    // Invalid inputResponses.
    let e = client.peer().request_raw("tools/call", json!({"_meta": meta, "name":"greet","arguments":{},"inputResponses": {key.clone(): 12345}}), &opts).await.unwrap_err();
    assert_eq!(e.rpc().unwrap().code.0, -32602);
    // The genuine state moves on to the next round.
    let r: Value = client.peer().request_as("tools/call", &json!({"_meta": meta, "name":"greet","arguments":{},"inputResponses": responses, "requestState": state}), &opts).await.unwrap();
    assert_eq!(r["resultType"], "input_required");
    assert!(
        r["inputRequests"].get("confirm").is_some() && r["inputRequests"].get("roots").is_some()
    );
    // Without the capability the modern request fails with -32021 naming it.
    let no_caps = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}});
    let e = client
        .peer()
        .request_raw(
            "tools/call",
            json!({"_meta": no_caps, "name":"greet","arguments":{}}),
            &opts,
        )
        .await
        .unwrap_err();
    let e = e.rpc().unwrap();
    assert_eq!(e.code.0, -32021);
    assert!(e.data.as_ref().unwrap()["requiredCapabilities"]["elicitation"].is_object());
}

async fn connect_in_process_with(
    server: oxmcp_server::Server,
    handlers: ClientHandlers,
    config: ClientConfig,
) -> Client {
    let ((s_in, s_out), (c_in, c_out)) = pipe();
    tokio::spawn(async move { server.serve(s_in, s_out).await });
    Client::connect(c_in, c_out, handlers, config)
        .await
        .unwrap()
}

#[tokio::test]
async fn listen_streams_typed_changes_and_lists_are_cached() {
    let server = echo_server(oxmcp_server::ServerConfig::default());
    let client = connect_in_process_with(server.clone(), ClientHandlers::new(), auto()).await;
    assert!(client.is_modern());
    let filter = oxmcp_types::ListenFilter::default()
        .with_tools_list_changed(Some(true))
        .with_resource_subscriptions(Some(vec!["test://watched".into()]));
    let mut sub = client.listen(filter).unwrap();
    match sub.next().await.unwrap() {
        ServerEvent::Other { method, .. } => {
            assert_eq!(method, "notifications/subscriptions/acknowledged")
        }
        other => panic!("expected the acknowledgement first, got {other:?}"),
    }
    // Cached: the list is served again without asking while fresh.
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    let extra = oxmcp_types::Tool::default()
        .with_name("extra".into())
        .with_description(Some("added".into()))
        .with_input_schema(json!({"type":"object"}).as_object().cloned().unwrap());
    let handler: oxmcp_server::ToolFn =
        Arc::new(|_, _| Box::pin(async { Ok(oxmcp_types::CallToolResult::text("x")) }));
    server.add_tool(extra, handler).unwrap();
    assert!(matches!(
        sub.next().await.unwrap(),
        ServerEvent::ToolsChanged
    ));
    // The change notification invalidated the cache.
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
    server.notify_resource_updated("test://other");
    server.notify_resource_updated("test://watched");
    match sub.next().await.unwrap() {
        ServerEvent::ResourceUpdated(uri) => {
            assert_eq!(uri, "test://watched", "only subscribed URIs arrive")
        }
        other => panic!("{other:?}"),
    }
    // Without a subscription the client hears nothing: the cached list is served (ttlMs)...
    drop(sub);
    tokio::task::yield_now().await;
    assert!(server.remove_tool("extra"));
    assert_eq!(
        client.list_tools().await.unwrap().len(),
        2,
        "served from the cache"
    );
    // ...until it is invalidated.
    client.invalidate_lists();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    // A legacy session has no listen.
    let legacy = connect_in_process_with(
        echo_server(oxmcp_server::ServerConfig::default()),
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await;
    assert!(matches!(
        legacy.listen(Default::default()),
        Err(CallError::Protocol(_))
    ));
}

/// The client commands speak `--era auto` by default: `oxmcp tools` and `oxmcp call` work
/// against a server that speaks only 2026-07-28; `--era legacy` cannot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_commands_default_to_era_auto() {
    let modern_only = oxmcp_server::ServerConfig::default().legacy(false);
    let http = oxmcp_http::StreamableHttp::new(echo_server(modern_only), Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(oxmcp_http::serve_router(listener, http.router()));
    let mcp = |args: Vec<&str>| {
        tokio::process::Command::new(oxmcp())
            .args(args)
            .env("MCP_LOG", "off")
            .output()
    };
    let out = mcp(vec!["tools", &url]).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("echo"));
    let out = mcp(vec!["call", &url, "echo", r#"{"topic":"modern"}"#])
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "modern");
    let out = mcp(vec!["tools", "--era", "legacy", &url]).await.unwrap();
    assert!(
        !out.status.success(),
        "a legacy-only client cannot talk to it"
    );
}

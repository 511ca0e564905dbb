//! The fixture's exact outputs (a green suite run alone proves little: its checks are
//! structural), in memory and from the real fixture binary over every transport:
//! Streamable HTTP, WebSocket, and gRPC in both envelope forms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use oxmcp_client::{Client, ClientConfig, ClientHandlers};
use oxmcp_types::{
    Content, CreateMessageResult, ElicitAction, ElicitResult, JsonObject, OneOrMany, Role,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The transports the scripts run over.
const TRANSPORTS: &[&str] = &["memory", "http", "ws", "grpc", "grpc+protobuf"];

/// The fixture binary on a free port; killed when dropped.
struct Fixture {
    _child: tokio::process::Child,
    addr: String,
}

async fn fixture() -> Fixture {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-conformance-server"))
        .env("PORT", "0")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the fixture starts")
        .unwrap()
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Fixture {
        _child: child,
        addr,
    }
}

async fn connect(fixture: &Fixture, transport: &str, handlers: ClientHandlers) -> Client {
    let config = ClientConfig::default();
    let addr = &fixture.addr;
    let connected = match transport {
        "memory" => {
            let (client_end, server_end) = oxmcp_transport::duplex();
            let server = mcp_conformance::server().unwrap();
            tokio::spawn(
                async move { server.serve(server_end.incoming, server_end.outgoing).await },
            );
            Client::connect(client_end.incoming, client_end.outgoing, handlers, config).await
        }
        "http" => {
            let url = format!("http://{addr}/mcp");
            let (channels, session) = oxmcp_http::client::connect(&url, Default::default())
                .unwrap()
                .into_parts();
            Client::connect_over(channels, session, handlers, config).await
        }
        "ws" => {
            let url = format!("ws://{addr}/ws");
            let (channels, link) = oxmcp_ws::client::connect(&url, Default::default())
                .await
                .unwrap();
            Client::connect_over(channels, link, handlers, config).await
        }
        grpc => {
            let form = if grpc.ends_with("protobuf") {
                oxmcp_grpc::Form::Protobuf
            } else {
                oxmcp_grpc::Form::Json
            };
            let settings = oxmcp_grpc::client::GrpcClientConfig::default().form(form);
            let (channels, link) = oxmcp_grpc::client::connect(&format!("grpc://{addr}"), settings)
                .await
                .unwrap();
            Client::connect_over(channels, link, handlers, config).await
        }
    };
    connected.unwrap_or_else(|e| panic!("{transport}: {e}"))
}

fn content(r: &oxmcp_types::CallToolResult) -> Value {
    serde_json::to_value(&r.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_return_exactly_what_the_suite_expects() {
    let fixture = fixture().await;
    for transport in TRANSPORTS {
        let c = connect(&fixture, transport, handlers()).await;
        tools_script(&c).await;
        c.close().await;
    }
}

/// The client side the tools need: sampling and elicitation answers.
fn handlers() -> ClientHandlers {
    ClientHandlers::new()
        .sampling(|p| async move {
            let OneOrMany::One(c) = &p.messages[0].content else {
                panic!()
            };
            assert_eq!(c.as_text(), Some("hello"));
            assert_eq!(p.max_tokens, 100);
            Ok(CreateMessageResult::new(
                "test-model",
                OneOrMany::One(Content::text("This is a test response from the client")),
            )
            .with_role(Role::Assistant)
            .with_stop_reason(Some("endTurn".into())))
        })
        .elicitation(|p| async move {
            let mut content = JsonObject::new();
            if p.message == "Who?" {
                content.insert("username".into(), json!("testuser"));
                content.insert("email".into(), json!("test@example.com"));
            }
            Ok(ElicitResult::cancel()
                .with_action(ElicitAction::Accept)
                .with_content(Some(content)))
        })
}

async fn tools_script(c: &Client) {
    assert_eq!(c.server().server_info.name, "mcp-conformance-test-server");
    let call = |name: &'static str, args: Value| async move {
        c.call_tool(name, args.as_object().cloned().unwrap())
            .await
            .unwrap()
    };
    assert_eq!(
        content(&call("test_simple_text", json!({})).await),
        json!([{"type":"text","text":"This is a simple text response for testing."}])
    );
    let img = content(&call("test_image_content", json!({})).await);
    assert_eq!(
        img,
        json!([{"type":"image","data":mcp_conformance::PNG,"mimeType":"image/png"}])
    );
    let audio = content(&call("test_audio_content", json!({})).await);
    assert_eq!(audio[0]["mimeType"], "audio/wav");
    assert_eq!(
        content(&call("test_embedded_resource", json!({})).await),
        json!([{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}])
    );
    let mixed = content(&call("test_multiple_content_types", json!({})).await);
    assert_eq!(mixed[0]["text"], "Multiple content types test:");
    assert_eq!(mixed[1]["type"], "image");
    assert_eq!(
        mixed[2]["resource"]["text"],
        r#"{"test":"data","value":123}"#
    );
    let err = call("test_error_handling", json!({})).await;
    assert!(err.failed());
    assert_eq!(
        err.content[0].as_text(),
        Some("This tool intentionally returns an error for testing")
    );
    let s = call("test_sampling", json!({"prompt":"hello"})).await;
    assert_eq!(
        s.content[0].as_text(),
        Some("LLM response: This is a test response from the client")
    );
    let e = call("test_elicitation", json!({"message":"Who?"})).await;
    assert_eq!(
        e.content[0].as_text(),
        Some(
            r#"User response: action=accept, content={"email":"test@example.com","username":"testuser"}"#
        )
    );
    // The client fills the SEP-1034 defaults in, so they come back typed.
    let d = call("test_elicitation_sep1034_defaults", json!({})).await;
    let text = d.content[0].as_text().unwrap();
    let body: Value = serde_json::from_str(text.split_once("content=").unwrap().1).unwrap();
    assert_eq!(
        body,
        json!({"name":"John Doe","age":30,"score":95.5,"status":"active","verified":true})
    );
    let tools = c.list_tools().await.unwrap();
    assert!(!tools.is_empty());
    assert!(tools.iter().all(|t| t.description.is_some()));
    let schema = &tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .unwrap()
        .input_schema;
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["properties"]["address"]["$ref"], "#/$defs/address");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts_are_exact() {
    let fixture = fixture().await;
    for transport in TRANSPORTS {
        let c = connect(&fixture, transport, ClientHandlers::new()).await;
        resources_script(&c).await;
        c.close().await;
    }
}

async fn resources_script(c: &Client) {
    let r = c.read_resource("test://static-text").await.unwrap();
    assert_eq!(
        r.contents[0].text.as_deref(),
        Some("This is the content of the static text resource.")
    );
    let r = c.read_resource("test://static-binary").await.unwrap();
    assert_eq!(r.contents[0].blob.as_deref(), Some(mcp_conformance::PNG));
    let r = c.read_resource("test://template/123/data").await.unwrap();
    let body: Value = serde_json::from_str(r.contents[0].text.as_deref().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"id":"123","templateTest":true,"data":"Data for ID: 123"})
    );
    c.subscribe("test://watched-resource").await.unwrap();
    c.unsubscribe("test://watched-resource").await.unwrap();
    let args = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let p = c.get_prompt("test_simple_prompt", args(&[])).await.unwrap();
    assert_eq!(
        p.messages[0].content.as_text(),
        Some("This is a simple prompt for testing.")
    );
    let p = c
        .get_prompt(
            "test_prompt_with_arguments",
            args(&[("arg1", "hello"), ("arg2", "world")]),
        )
        .await
        .unwrap();
    assert_eq!(
        p.messages[0].content.as_text(),
        Some("Prompt with arguments: arg1='hello', arg2='world'")
    );
    let p = c
        .get_prompt(
            "test_prompt_with_embedded_resource",
            args(&[("resourceUri", "test://example-resource")]),
        )
        .await
        .unwrap();
    let Content::Resource(r) = &p.messages[0].content else {
        panic!("resource expected")
    };
    assert_eq!(r.resource.uri, "test://example-resource");
    assert_eq!(
        p.messages[1].content.as_text(),
        Some("Please process the embedded resource above.")
    );
    let p = c
        .get_prompt("test_prompt_with_image", args(&[]))
        .await
        .unwrap();
    assert!(matches!(p.messages[0].content, Content::Image(_)));
    let prompts = c.list_prompts(None).await.unwrap();
    assert!(!prompts.prompts.is_empty());
    assert!(prompts.prompts.iter().all(|p| p.description.is_some()));
}

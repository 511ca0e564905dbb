//! The same client script over every transport of `oxmcp serve` (stdio, Streamable HTTP in
//! JSON and in protobuf, WebSocket): tools, structured output, progress, logging, errors, sampling, elicitation,
//! resources, subscriptions, prompts, completion and cancellation give the same transcript.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxmcp_client::{Client, ClientConfig, ClientHandlers, RequestOptions, ServerEvent};
use oxmcp_types::{
    Content, CreateMessageResult, ElicitAction, ElicitResult, JsonObject, OneOrMany, Role,
};
use serde_json::{Value, json};

fn obj(v: Value) -> JsonObject {
    v.as_object().cloned().unwrap()
}

fn handlers(events: Arc<Mutex<Vec<String>>>) -> ClientHandlers {
    ClientHandlers::new()
        .sampling(|_p| async move {
            Ok(CreateMessageResult::new(
                "parity-model",
                OneOrMany::One(Content::text("the model says hi")),
            )
            .with_role(Role::Assistant))
        })
        .elicitation(|_p| async move {
            Ok(ElicitResult::cancel()
                .with_action(ElicitAction::Accept)
                .with_content(Some(obj(json!({"name": "Ada"})))))
        })
        .on_event(move |e| {
            let line = match e {
                ServerEvent::Log(p) => format!("log {}", p.data),
                ServerEvent::ResourceUpdated(uri) => format!("updated {uri}"),
                other => format!("{other:?}"),
            };
            events.lock().unwrap().push(line);
        })
}

fn text(r: &oxmcp_types::CallToolResult) -> String {
    r.content[0].as_text().unwrap_or_default().to_owned()
}

/// Runs the script; the transcript.
async fn script(client: &Client, events: &Arc<Mutex<Vec<String>>>) -> Vec<(String, Value)> {
    let mut t: Vec<(String, Value)> = Vec::new();
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    t.push(("tools".into(), json!(names)));
    let r = client
        .call_tool("echo", obj(json!({"message": "parity"})))
        .await
        .unwrap();
    t.push(("echo".into(), json!(text(&r))));
    let r = client
        .call_tool("add", obj(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    t.push(("add".into(), json!(r.structured_content)));
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let opts =
        RequestOptions::default().on_progress(move |p| seen.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with("slow", obj(json!({"steps": 3, "delay_ms": 10})), &opts)
        .await
        .unwrap();
    t.push(("slow".into(), json!([text(&r), *steps.lock().unwrap()])));
    client
        .set_log_level(oxmcp_types::LoggingLevel::Debug)
        .await
        .unwrap();
    let r = client
        .call_tool("log", obj(json!({"message": "logged", "level": "warning"})))
        .await
        .unwrap();
    t.push(("log".into(), json!(text(&r))));
    let r = client
        .call_tool("fail", obj(json!({"reason": "on purpose"})))
        .await
        .unwrap();
    t.push(("fail".into(), json!([r.is_error, text(&r)])));
    let r = client
        .call_tool("sample", obj(json!({"prompt": "hello"})))
        .await
        .unwrap();
    t.push(("sample".into(), json!(text(&r))));
    let r = client.call_tool("ask", JsonObject::new()).await.unwrap();
    t.push(("ask".into(), json!(text(&r))));
    let r = client.read_resource("demo://readme").await.unwrap();
    t.push(("read".into(), serde_json::to_value(&r.contents).unwrap()));
    let prompts: Vec<String> = client
        .list_prompts(None)
        .await
        .unwrap()
        .prompts
        .into_iter()
        .map(|p| p.name)
        .collect();
    t.push(("prompts".into(), json!(prompts)));
    let mut args = std::collections::BTreeMap::new();
    args.insert("name".to_owned(), "Ada".to_owned());
    let p = client.get_prompt("greet", args).await.unwrap();
    t.push(("greet".into(), serde_json::to_value(&p.messages).unwrap()));
    let params = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": "A"}
    }))
    .unwrap();
    let c = client.complete(&params).await.unwrap();
    t.push(("complete".into(), json!(c.completion.values)));
    client.subscribe("demo://readme").await.unwrap();
    client
        .call_tool("touch", obj(json!({"uri": "demo://readme"})))
        .await
        .unwrap();
    // Cancellation: a call given up by its timeout is cancelled, and the session goes on.
    let quick = RequestOptions::default().timeout(Duration::from_millis(300));
    let e = client
        .call_tool_with("slow", obj(json!({"steps": 50, "delay_ms": 100})), &quick)
        .await
        .unwrap_err();
    t.push((
        "timeout".into(),
        json!(format!("{e}").contains("timed out")),
    ));
    client.ping().await.unwrap();
    // The tool logs that it stopped once the cancellation reaches it; that notification may
    // come after the ping's answer.
    for _ in 0..500 {
        if events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.contains("slow: cancelled"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut seen: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.starts_with("log ") || e.starts_with("updated "))
        // How far the cancelled call got depends on timing; that it was cancelled does not.
        .map(|e| match e.find("cancelled after step") {
            Some(i) => e[..i + "cancelled".len()].to_owned(),
            None => e.clone(),
        })
        .collect();
    seen.sort();
    t.push(("events".into(), json!(seen)));
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transport_gives_the_same_transcript() {
    let mcp = oxmcp_tests::oxmcp();
    let (_server, http_url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let ws_url = http_url
        .replacen("http://", "ws://", 1)
        .replace("/mcp", "/ws");
    let mut transcripts = Vec::new();
    let grpc_url = http_url
        .replacen("http://", "grpc://", 1)
        .replace("/mcp", "");
    for transport in [
        "stdio",
        "http",
        "http+protobuf",
        "ws",
        "grpc",
        "grpc+protobuf",
    ] {
        let events = Arc::new(Mutex::new(Vec::new()));
        let h = handlers(events.clone());
        let config = ClientConfig::default();
        let client = match transport {
            "stdio" => Client::spawn(mcp, &["serve".to_owned(), "--stdio".to_owned()], h, config)
                .await
                .unwrap(),
            "http" => {
                let t = oxmcp_http::client::connect(&http_url, Default::default()).unwrap();
                let (channels, session) = t.into_parts();
                Client::connect_over(channels, session, h, config)
                    .await
                    .unwrap()
            }
            "http+protobuf" => {
                let settings = oxmcp_http::HttpClientConfig::default()
                    .encoding(oxmcp_http::BodyEncoding::Protobuf);
                let (channels, session) = oxmcp_http::client::connect(&http_url, settings)
                    .unwrap()
                    .into_parts();
                Client::connect_over(channels, session, h, config)
                    .await
                    .unwrap()
            }
            "grpc" | "grpc+protobuf" => {
                let settings =
                    oxmcp_grpc::client::GrpcClientConfig::default().form(if transport == "grpc" {
                        oxmcp_grpc::Form::Json
                    } else {
                        oxmcp_grpc::Form::Protobuf
                    });
                let (channels, link) = oxmcp_grpc::client::connect(&grpc_url, settings)
                    .await
                    .unwrap();
                Client::connect_over(channels, link, h, config)
                    .await
                    .unwrap()
            }
            "ws" => {
                let (channels, link) = oxmcp_ws::client::connect(&ws_url, Default::default())
                    .await
                    .unwrap();
                Client::connect_over(channels, link, h, config)
                    .await
                    .unwrap()
            }
            other => unreachable!("{other}"),
        };
        let t = tokio::time::timeout(Duration::from_secs(60), script(&client, &events))
            .await
            .unwrap_or_else(|_| panic!("{transport}: the script finishes"));
        client.close().await;
        transcripts.push((transport, t));
    }
    let (_, first) = &transcripts[0];
    let get = |k: &str| first.iter().find(|(n, _)| n == k).unwrap().1.clone();
    // What the script must have seen, on stdio...
    assert_eq!(get("echo"), "parity");
    assert_eq!(get("add"), json!({"sum": 5.0}));
    assert_eq!(get("slow")[1].as_array().unwrap().len(), 3, "{first:?}");
    assert_eq!(get("fail")[0], true);
    assert!(
        get("sample")
            .as_str()
            .unwrap()
            .contains("the model says hi"),
        "{first:?}"
    );
    assert_eq!(get("ask"), "Hello, Ada!");
    assert_eq!(get("timeout"), true);
    let events = get("events");
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "updated demo://readme"),
        "{events}"
    );
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("logged")),
        "{events}"
    );
    // The cancellation reached the server (the tool logs that it stopped).
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("slow: cancelled")),
        "{events}"
    );
    // ...and the same on every other transport.
    for (transport, t) in &transcripts[1..] {
        for ((name, a), (_, b)) in first.iter().zip(t) {
            assert_eq!(a, b, "{name}: stdio and {transport} differ");
        }
        assert_eq!(first.len(), t.len());
    }
}

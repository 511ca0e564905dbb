//! A server driven in-process over `oxmcp_transport::duplex()`: raw JSON-RPC in, answers out,
//! no process and no socket. One test per method family.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use oxmcp_jsonrpc::{Inbound, Outbound};
use oxmcp_server::{Ctx, Server, ServerConfig};
use oxmcp_types::{
    CompleteResult, Completion, GetPromptResult, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, ResourceContents, ResourceTemplate, Role,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn server() -> Server {
    let mut b = Server::builder("in-process", "1")
        .config(ServerConfig::default().page_size(2))
        .tool("echo", "echo", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .tool("ask", "asks the user", |c: Ctx, _a: Nothing| async move {
            let form = json!({"message": "name?", "requestedSchema": {"type": "object"}});
            let answer: Value = c.input("name", "elicitation/create", form).await?;
            Ok::<_, oxmcp_server::InputError>(format!("hi {}", answer["content"]["name"]))
        })
        .text_resource("test://readme", "readme", "text/plain", "read me")
        .resource_template(
            ResourceTemplate::default()
                .with_uri_template("test://greeting/{name}".into())
                .with_name("greeting".into()),
            |_c: Ctx, uri: String, vars: BTreeMap<String, String>| async move {
                let text = format!("hello {}", vars["name"]);
                Ok(
                    ReadResourceResult::default().with_contents(vec![ResourceContents::text(
                        uri,
                        Some("text/plain"),
                        text,
                    )]),
                )
            },
        )
        .prompt(
            Prompt::default()
                .with_name("greet".into())
                .with_arguments(Some(vec![
                    PromptArgument::default()
                        .with_name("who".into())
                        .with_required(Some(true)),
                ])),
            |_c: Ctx, args: BTreeMap<String, String>| async move {
                Ok(
                    GetPromptResult::default().with_messages(vec![PromptMessage::text(
                        Role::User,
                        format!("greet {}", args["who"]),
                    )]),
                )
            },
        )
        .completion(|_c: Ctx, p| async move {
            let values = ["ada", "alan", "bob"]
                .iter()
                .filter(|n| n.starts_with(&p.argument.value))
                .map(|n| (*n).to_owned())
                .collect();
            Ok::<_, oxmcp_jsonrpc::ErrorObject>(
                CompleteResult::default().with_completion(
                    Completion::default()
                        .with_values(values)
                        .with_total(None)
                        .with_has_more(Some(false)),
                ),
            )
        });
    for i in 0..3 {
        b = b.tool(
            &format!("extra{i}"),
            "more",
            |_c: Ctx, _a: Nothing| async move { Ok::<_, String>(String::new()) },
        );
    }
    b.build().unwrap()
}

/// One in-process connection to a fresh server.
struct Wire {
    tx: mpsc::Sender<Outbound>,
    rx: mpsc::Receiver<Inbound>,
}

impl Wire {
    fn start() -> Self {
        Self::start_with(server())
    }

    fn start_with(server: Server) -> Self {
        let (client, srv) = oxmcp_transport::duplex();
        tokio::spawn(async move { server.serve(srv.incoming, srv.outgoing).await });
        Wire {
            tx: client.outgoing,
            rx: client.incoming,
        }
    }

    async fn send(&self, v: Value) {
        let kind = oxmcp_jsonrpc::OutKind::Notification {
            method: String::new(),
        };
        self.tx
            .send(Outbound::unrelated(v.to_string(), kind))
            .await
            .unwrap();
    }

    async fn recv(&mut self) -> Value {
        let got = tokio::time::timeout(Duration::from_secs(10), self.rx.recv())
            .await
            .expect("an answer in time")
            .expect("the connection is open");
        match got {
            oxmcp_jsonrpc::Inbound::Frame(bytes) => serde_json::from_slice(&bytes).unwrap(),
            other => panic!("not a frame: {other:?}"),
        }
    }

    /// Sends request `id` and returns its answer (skipping notifications).
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        loop {
            let v = self.recv().await;
            if v["id"] == id && v.get("method").is_none() {
                return v;
            }
        }
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let init = self
            .call(
                0,
                "initialize",
                json!({"protocolVersion":version,"capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}),
            )
            .await;
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        init
    }
}

fn modern(params: Value) -> Value {
    let mut p = params;
    p["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    p
}

#[tokio::test]
async fn lifecycle_and_version_negotiation() {
    let mut w = Wire::start();
    let early = w.call(1, "tools/list", json!({})).await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert_eq!(w.call(2, "ping", json!({})).await["result"], json!({}));
    let init = w.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "in-process");
    let again = w
        .call(3, "initialize", json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}))
        .await;
    assert_eq!(again["error"]["code"], -32600, "initialize twice");
    let unknown = w.call(4, "no/such/method", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);

    let mut w = Wire::start();
    let init = w.initialize("1999-01-01").await;
    assert_eq!(
        init["result"]["protocolVersion"], "2025-11-25",
        "an unknown version gets the newest legacy one"
    );
}

#[tokio::test]
async fn tools_pages_calls_and_validation() {
    let mut w = Wire::start();
    w.initialize("2025-11-25").await;
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for id in 1..10 {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({ "cursor": cursor })
        };
        let page = w.call(id, "tools/list", params).await;
        let tools = page["result"]["tools"].as_array().unwrap();
        assert!(tools.len() <= 2, "page size 2");
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = page["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names.len(), 5, "{names:?}");
    let bad_cursor = w.call(20, "tools/list", json!({"cursor":"nonsense"})).await;
    assert_eq!(bad_cursor["error"]["code"], -32602);
    let ok = w
        .call(
            21,
            "tools/call",
            json!({"name":"echo","arguments":{"message":"hi"}}),
        )
        .await;
    assert_eq!(ok["result"]["content"][0]["text"], "hi");
    let invalid = w
        .call(
            22,
            "tools/call",
            json!({"name":"echo","arguments":{"message":7}}),
        )
        .await;
    assert_eq!(invalid["result"]["isError"], true, "{invalid}");
    let unknown = w.call(23, "tools/call", json!({"name":"nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602);
}

#[tokio::test]
async fn resources_templates_and_subscriptions() {
    let mut w = Wire::start();
    w.initialize("2025-11-25").await;
    let read = w
        .call(1, "resources/read", json!({"uri":"test://readme"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "read me");
    let templ = w
        .call(2, "resources/read", json!({"uri":"test://greeting/ada"}))
        .await;
    assert_eq!(templ["result"]["contents"][0]["text"], "hello ada");
    let missing = w
        .call(3, "resources/read", json!({"uri":"test://none"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let listed = w.call(4, "resources/templates/list", json!({})).await;
    assert_eq!(
        listed["result"]["resourceTemplates"][0]["uriTemplate"],
        "test://greeting/{name}"
    );
    let sub = w
        .call(5, "resources/subscribe", json!({"uri":"test://readme"}))
        .await;
    assert_eq!(sub["result"], json!({}));
    let unsub = w
        .call(6, "resources/unsubscribe", json!({"uri":"test://readme"}))
        .await;
    assert_eq!(unsub["result"], json!({}));
}

#[tokio::test]
async fn prompts_completion_and_logging() {
    let mut w = Wire::start();
    w.initialize("2025-11-25").await;
    let missing = w.call(1, "prompts/get", json!({"name":"greet"})).await;
    assert_eq!(missing["error"]["code"], -32602, "a required argument");
    let got = w
        .call(
            2,
            "prompts/get",
            json!({"name":"greet","arguments":{"who":"ada"}}),
        )
        .await;
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "greet ada");
    let completed = w
        .call(
            3,
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}),
        )
        .await;
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["ada", "alan"])
    );
    let level = w
        .call(4, "logging/setLevel", json!({"level":"error"}))
        .await;
    assert_eq!(level["result"], json!({}));
}

#[tokio::test]
async fn a_2026_request_needs_no_handshake_and_asks_for_input_in_rounds() {
    let mut w = Wire::start();
    let discovered = w.call(1, "server/discover", modern(json!({}))).await;
    assert!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    let ping = w.call(2, "ping", modern(json!({}))).await;
    assert_eq!(ping["error"]["code"], -32601, "no ping in 2026-07-28");
    let echo = w
        .call(
            3,
            "tools/call",
            modern(json!({"name":"echo","arguments":{"message":"new"}})),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "new");
    // The first round asks; the retry with the answer and the signed state completes.
    let asked = w
        .call(
            4,
            "tools/call",
            modern(json!({"name":"ask","arguments":{}})),
        )
        .await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let mut retry = modern(json!({"name":"ask","arguments":{}}));
    retry["inputResponses"] = json!({"name": {"action":"accept","content":{"name":"ada"}}});
    retry["requestState"] = state;
    let answered = w.call(5, "tools/call", retry).await;
    assert_eq!(
        answered["result"]["content"][0]["text"], "hi \"ada\"",
        "{answered}"
    );
}

/// Tool names outside SEP-986 are refused when registered, by the builder and at run time.
#[tokio::test]
async fn tool_names_follow_sep_986() {
    let echo = |name: &str| {
        Server::builder("names", "1")
            .tool(name, "echo", |_c: Ctx, a: Echo| async move {
                Ok::<_, String>(a.message)
            })
            .build()
    };
    for good in ["getUser", "DATA_EXPORT_v2", "admin.tools.list"] {
        assert!(echo(good).is_ok(), "{good}");
    }
    let long = "t".repeat(129);
    for bad in ["get user", "a,b", "", long.as_str(), "tool/x"] {
        match echo(bad) {
            Err(oxmcp_server::BuildError::ToolName { name, .. }) => assert_eq!(name, bad),
            Err(other) => panic!("{bad:?}: {other}"),
            Ok(_) => panic!("{bad:?} was accepted"),
        }
    }
    let server = echo("ok").unwrap();
    let tool = oxmcp_types::Tool::default()
        .with_name("not ok".into())
        .with_input_schema(serde_json::from_value(json!({"type": "object"})).unwrap());
    let handler: oxmcp_server::ToolFn = std::sync::Arc::new(|_c, _a| {
        Box::pin(async { Ok(oxmcp_types::CallToolResult::text("x")) })
    });
    let refused = server.add_tool(tool, handler);
    assert!(
        matches!(refused, Err(oxmcp_server::BuildError::ToolName { .. })),
        "{refused:?}"
    );
}

/// A tool with what 2025-06-18 added (a title, an output schema, structured content, a
/// resource link) and audio (2025-03-26).
fn newer_server() -> Server {
    let tool: oxmcp_types::Tool = serde_json::from_value(json!({
        "name": "report",
        "title": "A Report",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}},
    }))
    .unwrap();
    let handler: oxmcp_server::ToolFn = std::sync::Arc::new(|_c, _a| {
        Box::pin(async {
            Ok(serde_json::from_value(json!({
                "content": [
                    {"type": "resource_link", "uri": "test://readme", "name": "readme", "title": "Read Me"},
                    {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                ],
                "structuredContent": {"n": 1},
            }))
            .unwrap())
        })
    });
    Server::builder("fit", "1")
        .raw_tool(tool, handler)
        .text_resource("test://readme", "readme", "text/plain", "read me")
        .build()
        .unwrap()
}

/// Each legacy revision gets results it can read: newer fields left out, newer content
/// turned into text.
#[tokio::test]
async fn results_fit_the_negotiated_version() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let mut w = Wire::start_with(newer_server());
        w.initialize(version).await;
        let tools = w.call(1, "tools/list", json!({})).await;
        let tool = &tools["result"]["tools"][0];
        let r = w
            .call(2, "tools/call", json!({"name": "report", "arguments": {}}))
            .await;
        let result = &r["result"];
        let content = &result["content"];
        if version == "2025-06-18" {
            assert_eq!(tool["title"], "A Report", "{tools}");
            assert!(tool.get("outputSchema").is_some());
            assert_eq!(result["structuredContent"], json!({"n": 1}), "{r}");
            assert_eq!(content[0]["type"], "resource_link");
            assert_eq!(content[1]["type"], "audio");
            continue;
        }
        assert!(tool.get("title").is_none(), "{version}: {tools}");
        assert!(tool.get("outputSchema").is_none(), "{version}: {tools}");
        assert!(result.get("structuredContent").is_none(), "{version}: {r}");
        assert_eq!(
            content[0],
            json!({"type": "text", "text": "Resource: Read Me (test://readme)"}),
            "{version}"
        );
        if version == "2024-11-05" {
            assert_eq!(content[1]["type"], "text", "{r}");
            assert!(content[1]["text"].as_str().unwrap().contains("audio/wav"));
        } else {
            assert_eq!(content[1]["type"], "audio", "{r}");
        }
    }
}

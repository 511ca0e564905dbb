//! Servers built with the attribute macros, run over Streamable HTTP and used by a client in
//! both eras (legacy `initialize` and 2026-07-28): tool definitions (names, descriptions,
//! input schemas, annotations, output schemas), calls sharing `&self` state, `Ctx`
//! injection (progress), argument validation, `Err` as `isError`, prompts, a static resource
//! and a template, per-argument completion; free functions added with `ServerBuilder::add`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use oxmcp::client::{Client, ClientConfig, EraChoice};
use oxmcp::engine::RequestOptions;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Args, Ctx, Json, Server, completion, prompt, resource, server, tool};
use oxmcp::types::{CompleteParams, JsonObject, PromptMessage, Role};
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[derive(Default)]
struct Shop {
    calls: AtomicU64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Total {
    /// The count after this call.
    count: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// What to order.
    item: String,
    /// How many.
    quantity: u32,
}

/// A shop to test the macros.
#[server(name = "shop", version = "2.0.0")]
impl Shop {
    /// Counts calls, reporting progress.
    #[tool(title = "Counter", idempotent = false, open_world = false)]
    async fn count(&self, ctx: Ctx, by: Option<u64>) -> Json<Total> {
        ctx.progress(0.5, Some(1.0), Some("halfway".to_owned()))
            .await;
        let by = by.unwrap_or(1);
        Json(Total {
            count: self.calls.fetch_add(by, Ordering::SeqCst) + by,
        })
    }

    /// Places an order.
    #[tool(name = "place-order", destructive, icons = ["https://example.com/cart.png"])]
    async fn order(&self, Args(order): Args<Order>) -> Result<String, String> {
        if order.quantity == 0 {
            return Err("nothing to order".to_owned());
        }
        Ok(format!("{} x {}", order.quantity, order.item))
    }

    #[tool(read_only, description = "Adds two numbers.")]
    async fn add(
        &self,
        #[schemars(description = "The first term.")] a: i64,
        #[arg(description = "The second term.")] b: i64,
    ) -> i64 {
        a + b
    }

    /// Greets someone.
    #[prompt]
    async fn greet(
        &self,
        #[arg(description = "Who to greet.")] name: String,
        style: Option<String>,
    ) -> String {
        match style {
            Some(s) => format!("Greet {name} in a {s} way."),
            None => format!("Greet {name}."),
        }
    }

    /// A file of the shop.
    #[resource("shop:///files/{path}", mime = "text/plain")]
    async fn file(&self, path: String) -> Result<String, String> {
        if path == "missing" {
            return Err(format!("no file {path}"));
        }
        Ok(format!("contents of {path}"))
    }

    /// The shop's logo.
    #[resource("shop:///logo", name = "logo", mime = "image/png")]
    async fn logo(&self) -> Vec<u8> {
        vec![0x89, b'P', b'N', b'G']
    }

    #[completion(prompt = "greet", argument = "name")]
    async fn names(&self, typed: String) -> Vec<String> {
        let _ = typed;
        ["alice", "albert", "bob"].map(str::to_owned).to_vec()
    }

    /// Not registered: an ordinary method.
    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Echoes the message.
#[tool(read_only)]
async fn echo(message: String) -> String {
    message
}

/// Says hello.
#[prompt(name = "hello")]
async fn hello_prompt(_ctx: Ctx) -> Vec<PromptMessage> {
    vec![PromptMessage::text(Role::Assistant, "Hello!")]
}

/// Today's motto.
#[resource("motto://today")]
async fn motto(uri: String) -> String {
    format!("{uri}: keep going")
}

/// Completes the motto's nothing: the plain form.
#[completion]
async fn complete_all(params: CompleteParams) -> oxmcp::types::CompleteResult {
    oxmcp::server::completion_result(&params.argument.value, vec!["x".to_owned()])
}

async fn serve(server: Server) -> String {
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    format!("http://{addr}/mcp")
}

async fn client(url: &str, era: EraChoice) -> Client {
    let remote = Remote::default().client(ClientConfig::default().era(era));
    connect(url, remote).await.unwrap()
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn tool_json<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {tools}"))
}

async fn check_definitions(c: &Client, era: EraChoice) {
    let tools = c.request("tools/list", json!({})).await.unwrap();
    let count = tool_json(&tools, "count");
    assert_eq!(count["description"], "Counts calls, reporting progress.");
    assert_eq!(count["title"], "Counter", "{era:?}");
    assert_eq!(count["annotations"]["idempotentHint"], false);
    assert_eq!(count["annotations"]["openWorldHint"], false);
    assert_eq!(count["inputSchema"]["type"], "object");
    assert!(count["inputSchema"]["properties"]["by"].is_object());
    assert!(
        count["inputSchema"]
            .get("required")
            .is_none_or(|r| r == &json!([]))
    );
    let out = &count["outputSchema"];
    assert_eq!(out["type"], "object", "{era:?}: {count}");
    assert_eq!(out["required"], json!(["count"]));

    let order = tool_json(&tools, "place-order");
    assert_eq!(order["annotations"]["destructiveHint"], true);
    assert_eq!(order["icons"][0]["src"], "https://example.com/cart.png");
    let mut required: Vec<String> =
        serde_json::from_value(order["inputSchema"]["required"].clone()).unwrap();
    required.sort();
    assert_eq!(required, ["item", "quantity"]);
    assert_eq!(
        order["inputSchema"]["properties"]["item"]["description"],
        "What to order."
    );
    assert!(order.get("outputSchema").is_none());

    let add = tool_json(&tools, "add");
    assert_eq!(add["description"], "Adds two numbers.");
    assert_eq!(add["annotations"]["readOnlyHint"], true);
    let props = &add["inputSchema"]["properties"];
    assert_eq!(props["a"]["description"], "The first term.");
    assert_eq!(props["b"]["description"], "The second term.");
    assert_eq!(
        tool_json(&tools, "echo")["annotations"]["readOnlyHint"],
        true
    );
}

async fn check_calls(c: &Client, shop: &Shop, era: EraChoice) {
    let before = shop.calls();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options =
        RequestOptions::default().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let r = c
        .call_tool_with("count", obj(json!({"by": 2})), &options)
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"count": before + 2})));
    assert_eq!(
        *seen.lock().unwrap(),
        [0.5],
        "{era:?}: progress through Ctx"
    );
    let r = c.call_tool("count", JsonObject::new()).await.unwrap();
    assert_eq!(r.structured_content, Some(json!({"count": before + 3})));
    assert_eq!(
        shop.calls(),
        before + 3,
        "the state is shared with the caller's Arc"
    );

    let r = c
        .call_tool("place-order", obj(json!({"item": "tea", "quantity": 2})))
        .await
        .unwrap();
    assert!(!r.failed());
    assert_eq!(r.content[0].as_text(), Some("2 x tea"));
    let r = c
        .call_tool("place-order", obj(json!({"item": "tea", "quantity": 0})))
        .await
        .unwrap();
    assert!(r.failed(), "{era:?}: Err is isError");
    assert_eq!(r.content[0].as_text(), Some("nothing to order"));
    let r = c
        .call_tool("add", obj(json!({"a": 1, "b": "two"})))
        .await
        .unwrap();
    assert!(r.failed(), "{era:?}: invalid arguments are refused");
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .contains("Invalid arguments")
    );
    let r = c
        .call_tool("add", obj(json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("3"));
    let r = c
        .call_tool("echo", obj(json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("hi"));
}

async fn check_prompts_resources(c: &Client, era: EraChoice) {
    let prompts = c.request("prompts/list", json!({})).await.unwrap();
    let greet = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "greet")
        .unwrap();
    assert_eq!(greet["description"], "Greets someone.");
    assert_eq!(
        greet["arguments"],
        json!([
            {"name": "name", "description": "Who to greet.", "required": true},
            {"name": "style", "required": false}
        ])
    );
    let args = BTreeMap::from([("name".to_owned(), "Ann".to_owned())]);
    let r = c.get_prompt("greet", args).await.unwrap();
    assert_eq!(r.messages[0].role, Role::User);
    assert_eq!(
        r.messages[0].content.as_text(),
        Some("Greet Ann."),
        "{era:?}"
    );
    let r = c.get_prompt("hello", BTreeMap::new()).await.unwrap();
    assert_eq!(r.messages[0].content.as_text(), Some("Hello!"));
    assert!(c.get_prompt("greet", BTreeMap::new()).await.is_err());

    let r = c.read_resource("shop:///files/a.txt").await.unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("contents of a.txt"));
    assert_eq!(r.contents[0].mime_type.as_deref(), Some("text/plain"));
    assert!(c.read_resource("shop:///files/missing").await.is_err());
    let r = c.read_resource("shop:///logo").await.unwrap();
    assert_eq!(r.contents[0].blob.as_deref(), Some("iVBORw=="), "{era:?}");
    let r = c.read_resource("motto://today").await.unwrap();
    assert_eq!(
        r.contents[0].text.as_deref(),
        Some("motto://today: keep going")
    );

    let params: CompleteParams = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": "Al"}
    }))
    .unwrap();
    let r = c.complete(&params).await.unwrap();
    assert_eq!(r.completion.values, ["alice", "albert"], "{era:?}");
    assert_eq!(r.completion.total, Some(2));
    assert_eq!(r.completion.has_more, Some(false));
}

#[tokio::test]
async fn a_macro_built_server_in_both_eras() {
    let shop = Arc::new(Shop::default());
    let server = Server::builder("shop", "2.0.0")
        .add(shop.clone())
        .add(echo)
        .add(hello_prompt)
        .add(motto)
        .build()
        .unwrap();
    let url = serve(server).await;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let c = client(&url, era).await;
        check_definitions(&c, era).await;
        check_calls(&c, &shop, era).await;
        check_prompts_resources(&c, era).await;
        c.close().await;
    }
}

#[tokio::test]
async fn into_server_names_it_and_free_functions_stay_callable() {
    let server = Shop::default().into_server().unwrap();
    let url = serve(server).await;
    let c = client(&url, EraChoice::Legacy).await;
    let init = c.server();
    let info = &init.server_info;
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("shop", "2.0.0")
    );
    assert_eq!(
        init.instructions.as_deref(),
        Some("A shop to test the macros."),
        "the impl block's doc comment"
    );
    c.close().await;
    assert_eq!(echo::call("x".to_owned()).await, "x");
}

#[tokio::test]
async fn completion_forms_exclude_each_other() {
    let both = Shop::default().builder().add(complete_all).build();
    assert!(
        both.is_err(),
        "a completion function and per-argument completers"
    );
    let plain = Server::builder("p", "1")
        .add(complete_all)
        .add(motto)
        .build();
    assert!(plain.is_ok());
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[test]
fn the_builder_takes_the_output_schema_from_json() {
    let server = Server::builder("b", "1")
        .tool("t", "A total.", |_ctx: Ctx, _a: NoArgs| async move {
            Ok::<_, String>(Json(Total { count: 1 }))
        })
        .tool("s", "Plain text.", |_ctx: Ctx, _a: NoArgs| async move {
            Ok::<_, String>("x".to_owned())
        })
        .build()
        .unwrap();
    let schema = server.tool("t").unwrap().output_schema.unwrap();
    assert_eq!(
        schema["properties"]["count"]["description"],
        "The count after this call."
    );
    assert!(server.tool("s").unwrap().output_schema.is_none());
}

//! Servers built with a [`ServerHandler`]: lists computed per caller, in both eras, over a
//! real transport (`oxmcp_transport::duplex()`) with the real client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, EraChoice, ServerEvent};
use oxmcp_engine::{Connection, EngineConfig, Serve};
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::dynamic::{paginate, unknown_tool};
use oxmcp_server::{BuildError, Ctx, HandlerCapabilities, Server, ServerHandler};
use oxmcp_transport::{Exit, Link};
use oxmcp_types::{CallToolParams, CallToolResult, JsonObject, ListToolsResult, Tool};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Nothing to close.
struct NoLink;

impl Link for NoLink {
    fn close(self: Box<Self>) -> BoxFuture<'static, Option<Exit>> {
        Box::pin(async { None })
    }
}

fn tool(name: &str, schema: Value) -> Tool {
    Tool::default()
        .with_name(name.to_owned())
        .with_description(Some(format!("the {name} tool")))
        .with_input_schema(serde_json::from_value(schema).unwrap())
}

fn object() -> Value {
    json!({"type": "object"})
}

/// Each tenant (the verified principal) sees its own tools and `shared`; tools come from a
/// list that the test may change.
#[derive(Default)]
struct Tenants {
    extra: Mutex<Vec<String>>,
    calls: AtomicUsize,
}

impl Tenants {
    fn visible(&self, ctx: &Ctx) -> Vec<Tool> {
        let mut tools = match ctx.principal() {
            Some("alice") => vec![tool("alpha", object())],
            Some("bob") => vec![tool("beta", object())],
            _ => Vec::new(),
        };
        tools.push(tool(
            "add",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }),
        ));
        let mut shaped = tool("shaped", object());
        shaped.output_schema = Some(
            serde_json::from_value(json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            }))
            .unwrap(),
        );
        tools.push(shaped);
        tools.extend(self.extra.lock().iter().map(|n| tool(n, object())));
        tools
    }
}

impl ServerHandler for Tenants {
    async fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        // Pages of two, to see that the handler's cursors pass through.
        let (tools, next_cursor) = paginate(&self.visible(ctx), cursor.as_deref(), 2)?;
        Ok(ListToolsResult::default()
            .with_tools(tools)
            .with_next_cursor(next_cursor))
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if !self.visible(&ctx).iter().any(|t| t.name == params.name) {
            return Err(unknown_tool(&params.name));
        }
        let args = params.arguments.unwrap_or_default();
        Ok(match params.name.as_str() {
            "add" => {
                let n = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                CallToolResult::text(n.to_string())
            }
            "shaped" => CallToolResult::text("{}")
                .with_structured_content(Some(json!({"n": "not a number"}))),
            name => CallToolResult::text(format!("{} called {name}", ctx.principal().unwrap())),
        })
    }
}

/// Serves `server` to a client of `era` whose connection the transport says is `principal`'s.
async fn connect(
    server: &Server,
    principal: &str,
    era: EraChoice,
    handlers: ClientHandlers,
) -> Client {
    let (ours, theirs) = oxmcp_transport::duplex();
    let (s, who) = (server.clone(), principal.to_owned());
    tokio::spawn(async move {
        let connection = Connection {
            incoming: theirs.incoming,
            outgoing: theirs.outgoing,
            config: EngineConfig::default(),
            principal: Some(who),
            direct: None,
            parking: None,
            session: None,
        };
        Serve::serve(&s, connection).await;
    });
    let config = ClientConfig::default().era(era);
    Client::connect_over(ours, NoLink, handlers, config)
        .await
        .unwrap()
}

fn tenants() -> (Server, Arc<Tenants>) {
    let handler = Arc::new(Tenants::default());
    let server = Server::builder("dynamic", "1")
        .handler(Shared(handler.clone()))
        .build()
        .unwrap();
    (server, handler)
}

/// The test's handler, shared with the test.
struct Shared(Arc<Tenants>);

impl ServerHandler for Shared {
    async fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        self.0.list_tools(ctx, cursor).await
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        self.0.call_tool(ctx, params).await
    }
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn text(r: &CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn rpc(e: CallError) -> ErrorObject {
    match e {
        CallError::Rpc(e) => e,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

#[tokio::test]
async fn each_caller_lists_and_calls_its_own_tools_in_both_eras() {
    let (server, _) = tenants();
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let alice = connect(&server, "alice", era, ClientHandlers::new()).await;
        let bob = connect(&server, "bob", era, ClientHandlers::new()).await;
        let caps = alice.server_capabilities();
        assert_eq!(caps.tools.as_ref().unwrap().list_changed, Some(true));
        assert!(caps.prompts.is_none() && caps.resources.is_none());
        // Three tools in pages of two: the client follows the handler's cursor.
        let first = alice.list_tools_page(None).await.unwrap();
        assert_eq!(names(&first.tools), ["alpha", "add"], "{era:?}");
        assert!(first.next_cursor.is_some());
        // Computed per caller: not to be shared between callers by a cache.
        if matches!(era, EraChoice::Modern) {
            assert_eq!(first.cache_scope, Some(oxmcp_types::CacheScope::Private));
        }
        assert_eq!(
            names(&alice.list_tools().await.unwrap()),
            ["alpha", "add", "shaped"]
        );
        assert_eq!(
            names(&bob.list_tools().await.unwrap()),
            ["beta", "add", "shaped"]
        );
        let r = alice.call_tool("alpha", JsonObject::new()).await.unwrap();
        assert_eq!(text(&r), "alice called alpha", "{era:?}");
        let r = bob.call_tool("beta", JsonObject::new()).await.unwrap();
        assert_eq!(text(&r), "bob called beta");
        // Not bob's: the handler's own "Unknown tool" (-32602), as a registry answers.
        let e = rpc(bob.call_tool("alpha", JsonObject::new()).await.unwrap_err());
        assert_eq!(e.code.0, -32602, "{era:?}");
        assert!(e.message.contains("Unknown tool: alpha"), "{}", e.message);
        alice.close().await;
        bob.close().await;
    }
}

#[tokio::test]
async fn arguments_of_a_listed_tool_are_validated_before_the_handler_runs() {
    let (server, handler) = tenants();
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let c = connect(&server, "alice", era, ClientHandlers::new()).await;
        let before = handler.calls.load(Ordering::SeqCst);
        let bad: JsonObject = serde_json::from_value(json!({"a": 1, "b": "two"})).unwrap();
        let r = c.call_tool("add", bad).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{era:?}");
        assert!(
            text(&r).starts_with("Invalid arguments for tool add"),
            "{}",
            text(&r)
        );
        assert_eq!(handler.calls.load(Ordering::SeqCst), before, "not called");
        let good: JsonObject = serde_json::from_value(json!({"a": 1, "b": 2})).unwrap();
        assert_eq!(text(&c.call_tool("add", good).await.unwrap()), "3");
        // A structured result that does not match the listed outputSchema is the server's
        // error, not the tool's answer.
        let e = rpc(c.call_tool("shaped", JsonObject::new()).await.unwrap_err());
        assert_eq!(e.code.0, -32603, "{era:?}");
        assert!(e.message.contains("outputSchema"), "{}", e.message);
        c.close().await;
    }
}

/// Serves nothing but what its capabilities say; every method is the trait's default.
struct Defaults(HandlerCapabilities);

impl ServerHandler for Defaults {
    fn capabilities(&self) -> HandlerCapabilities {
        self.0
    }
}

#[tokio::test]
async fn defaults_answer_empty_lists_and_unknown_names_and_undeclared_families_are_not_found() {
    let all = HandlerCapabilities::none()
        .with_tools()
        .with_prompts()
        .with_resources()
        .with_completions();
    for (era, not_found) in [(EraChoice::Legacy, -32002), (EraChoice::Modern, -32602)] {
        let server = Server::builder("defaults", "1")
            .handler(Defaults(all))
            .build()
            .unwrap();
        let c = connect(&server, "alice", era, ClientHandlers::new()).await;
        let caps = c.server_capabilities();
        assert!(caps.tools.as_ref().unwrap().list_changed.is_none());
        assert!(caps.completions.is_some());
        assert!(c.list_tools().await.unwrap().is_empty());
        assert!(c.list_prompts(None).await.unwrap().prompts.is_empty());
        assert!(c.list_resources(None).await.unwrap().resources.is_empty());
        let templates = c.list_resource_templates(None).await.unwrap();
        assert!(templates.resource_templates.is_empty());
        let e = rpc(c.call_tool("nope", JsonObject::new()).await.unwrap_err());
        assert_eq!((e.code.0, e.data), (-32602, Some(json!({"tool": "nope"}))));
        let e = rpc(c.get_prompt("nope", Default::default()).await.unwrap_err());
        assert_eq!(e.code.0, -32602);
        let e = rpc(c.read_resource("test://nope").await.unwrap_err());
        assert_eq!(e.code.0, not_found, "{era:?}");
        let done = c
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}),
            )
            .await
            .unwrap();
        assert_eq!(done["completion"]["values"], json!([]));
        c.close().await;

        // Tools alone by default: the other families are not declared, so not found.
        let server = Server::builder("tools-only", "1")
            .handler(Defaults(HandlerCapabilities::default()))
            .build()
            .unwrap();
        let c = connect(&server, "alice", era, ClientHandlers::new()).await;
        assert!(c.server_capabilities().prompts.is_none());
        for method in ["prompts/list", "resources/list", "completion/complete"] {
            let e = rpc(c.request(method, json!({})).await.unwrap_err());
            assert_eq!(e.code.0, -32601, "{era:?} {method}");
        }
        c.close().await;
    }
}

#[tokio::test]
async fn a_handler_announces_that_its_list_changed() {
    let (server, handler) = tenants();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handlers = ClientHandlers::new().on_event(move |e| {
        if matches!(e, ServerEvent::ToolsChanged) {
            let _ = tx.send(());
        }
    });
    let c = connect(&server, "alice", EraChoice::Legacy, handlers).await;
    assert_eq!(c.list_tools().await.unwrap().len(), 3);
    handler.extra.lock().push("gamma".to_owned());
    server.notify_tool_list_changed();
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("list_changed arrives")
        .unwrap();
    let tools = c.list_tools().await.unwrap();
    assert_eq!(names(&tools), ["alpha", "add", "shaped", "gamma"]);
    c.close().await;

    // 2026-07-28: a subscriptions/listen stream hears it.
    let c = connect(&server, "alice", EraChoice::Modern, ClientHandlers::new()).await;
    let filter = oxmcp_types::ListenFilter::default().with_tools_list_changed(Some(true));
    let mut listening = c.listen(filter).unwrap();
    // Until the stream is open a change may go unheard: announce until one arrives.
    let heard = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            server.notify_tool_list_changed();
            let next = tokio::time::timeout(Duration::from_millis(100), listening.next());
            if let Ok(Some(ServerEvent::ToolsChanged)) = next.await {
                return;
            }
        }
    });
    heard.await.expect("the listen stream hears the change");
    c.close().await;
}

#[tokio::test]
async fn a_handler_and_registered_items_on_one_builder_do_not_build() {
    let e = Server::builder("both", "1")
        .handler(Defaults(HandlerCapabilities::default()))
        .text_resource("test://a", "a", "text/plain", "a")
        .build()
        .unwrap_err();
    assert!(
        matches!(e, BuildError::HandlerAndRegistry { kind: "resource" }),
        "{e}"
    );
    // Declaring a family up front is fine: the handler serves it.
    let server = Server::builder("declared", "1")
        .handler(Defaults(HandlerCapabilities::default()))
        .declare_prompts()
        .build()
        .unwrap();
    assert!(server.capabilities().prompts.is_some());
}

/// A handler may answer from a registry-built server: delegating is plain calls.
struct Delegating(Server);

impl ServerHandler for Delegating {
    async fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        self.0.list_tools(ctx, cursor).await
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        self.0.peek_tool(name)
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        self.0.call_tool(ctx, params).await
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

#[tokio::test]
async fn a_handler_may_delegate_to_a_registry_built_server() {
    let fixed = Server::builder("fixed", "1")
        .tool("echo", "echo", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .build()
        .unwrap();
    let server = Server::builder("outer", "1")
        .handler(Delegating(fixed))
        .build()
        .unwrap();
    assert!(
        server.tool("echo").is_some(),
        "peek_tool is what Server::tool reads"
    );
    let c = connect(&server, "alice", EraChoice::Modern, ClientHandlers::new()).await;
    assert_eq!(names(&c.list_tools().await.unwrap()), ["echo"]);
    let args: JsonObject = serde_json::from_value(json!({"message": "hi"})).unwrap();
    assert_eq!(text(&c.call_tool("echo", args).await.unwrap()), "hi");
    let r = c.call_tool("echo", JsonObject::new()).await.unwrap();
    assert_eq!(r.is_error, Some(true), "validated");
    c.close().await;
}

/// One tool that may run as a task.
struct Slow;

impl ServerHandler for Slow {
    async fn list_tools(
        &self,
        _ctx: &Ctx,
        _cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        let mut t = tool("slow", object());
        t.execution = Some(
            oxmcp_types::ToolExecution::default()
                .with_task_support(Some(oxmcp_types::TaskSupport::Optional)),
        );
        Ok(ListToolsResult::default().with_tools(vec![t]))
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        _params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(CallToolResult::text(format!(
            "task {}",
            ctx.task_id().is_some()
        )))
    }
}

#[tokio::test]
async fn a_listed_tool_that_allows_tasks_runs_as_one_in_both_eras() {
    let server = Server::builder("tasks", "1")
        .handler(Slow)
        .tasks(oxmcp_server::TaskConfig::default())
        .build()
        .unwrap();
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let c = connect(&server, "alice", era, ClientHandlers::new()).await;
        c.list_tools().await.unwrap();
        let task = match c.call_tool_as_task("slow", JsonObject::new(), None).await {
            Ok(oxmcp_client::ToolCall::Task(task)) => task,
            other => panic!("{era:?}: not a task: {other:?}"),
        };
        let result = c.task(&task.task_id).wait(|_| {}).await.unwrap();
        assert_eq!(text(&result), "task true", "{era:?}");
        c.close().await;
    }
}

//! MCP middleware ([`oxmcp::server::layer`]) over Streamable HTTP in both eras: layers run in
//! the order they were added (config's first, then the builder's), a layer can rewrite the
//! params a handler sees, refuse a call before its handler runs, and read the target and the
//! outcome; the same layers wrap a `ServerHandler` server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp::client::{CallError, ClientConfig, EraChoice};
use oxmcp::engine::HandlerResult;
use oxmcp::jsonrpc::{ErrorCode, ErrorObject, RawValue};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::layer::{Layer, Layers, McpRequest, Next, Outcome, Registered, Target};
use oxmcp::server::{Ctx, Server, ServerConfig, ServerHandler};
use oxmcp::types::{
    CallToolParams, CallToolResult, ListToolsResult, ReadResourceResult, Resource,
    ResourceContents, Tool,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::TcpListener;

type Log = Arc<Mutex<Vec<String>>>;

/// Notes `NAME>method target registered` on the way in and `<NAME outcome` on the way out.
struct Note(&'static str, Log);

impl Layer for Note {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let target = req
            .target()
            .map(|t| t.name().to_owned())
            .unwrap_or_default();
        let known = matches!(req.registered(), Registered::Yes);
        self.1
            .lock()
            .push(format!("{}>{} {target} {known}", self.0, req.method()));
        let (name, log) = (self.0, self.1.clone());
        let answer = next.run(req);
        Box::pin(async move {
            let answer = answer.await;
            log.lock()
                .push(format!("<{name} {:?}", Outcome::of(&answer)));
            answer
        })
    }
}

/// Shouts: the `message` argument of `echo` in capitals.
struct Shout;

impl Layer for Shout {
    fn call(&self, mut req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        if matches!(req.target(), Some(Target::Tool(n)) if n == "echo") {
            let mut params: Value = req.params_as().unwrap();
            let loud = params["arguments"]["message"]
                .as_str()
                .unwrap()
                .to_uppercase();
            params["arguments"]["message"] = json!(loud);
            req.set_params(Some(RawValue::from_string(params.to_string()).unwrap()));
        }
        next.run(req)
    }
}

/// Refuses calls of `delete`.
struct NoDelete;

impl Layer for NoDelete {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        if matches!(req.target(), Some(Target::Tool(n)) if n == "delete") {
            let e = ErrorObject::new(ErrorCode::INVALID_REQUEST, "delete is not allowed here");
            return Box::pin(async move { Err(e) });
        }
        next.run(req)
    }
}

/// Keeps a `Seen` of each request and notes, after the answer, the target it reads there.
struct Watch(Log);

impl Layer for Watch {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let seen = req.seen();
        let log = self.0.clone();
        let answer = next.run(req);
        Box::pin(async move {
            let answer = answer.await;
            let target = seen.target().map(|t| t.name().to_owned());
            log.lock().push(format!("seen {target:?}"));
            answer
        })
    }
}

/// Passes every request on untouched, keeping nothing of it.
struct Pass;

impl Layer for Pass {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        next.run(req)
    }
}

/// Reads the target itself (so it is known before the server parses the params), then
/// passes the request on.
struct Peek;

impl Layer for Peek {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let _ = req.target();
        next.run(req)
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

async fn serve(server: Server) -> String {
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    format!("http://{addr}/mcp")
}

fn client(era: EraChoice) -> Remote {
    Remote::default().client(ClientConfig::default().era(era))
}

/// Calls `echo` with the message `hi`: the result.
async fn echo_hi(c: &oxmcp::client::Client) -> Value {
    c.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}}),
    )
    .await
    .unwrap()
}

fn rpc_code(e: &CallError) -> Option<i32> {
    match e {
        CallError::Rpc(o) => Some(o.code.0),
        _ => None,
    }
}

#[tokio::test]
async fn layers_run_in_order_rewrite_and_refuse_in_both_eras() {
    let log: Log = Arc::default();
    let config = ServerConfig::default().layers(Layers::new().with(Note("config", log.clone())));
    let server = Server::builder("layers", "1")
        .config(config)
        .tool("echo", "Echoes", |_ctx: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .tool("delete", "Deletes", |_ctx: Ctx, _a: Value| async move {
            Ok::<_, String>("deleted".to_owned())
        })
        .layer(Note("outer", log.clone()))
        .layer(Shout)
        .layer(NoDelete)
        .layer(Note("inner", log.clone()))
        .build()
        .unwrap();
    let url = serve(server).await;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let c = connect(&url, client(era)).await.unwrap();
        log.lock().clear();
        let r = echo_hi(&c).await;
        assert_eq!(r["content"][0]["text"], "HI", "{era:?}: rewritten: {r}");
        assert_eq!(
            *log.lock(),
            [
                "config>tools/call echo true",
                "outer>tools/call echo true",
                "inner>tools/call echo true",
                "<inner Ok",
                "<outer Ok",
                "<config Ok",
            ],
            "{era:?}"
        );
        log.lock().clear();
        let e = c
            .request("tools/call", json!({"name": "delete", "arguments": {}}))
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&e), Some(-32600), "{era:?}: {e}");
        assert_eq!(
            *log.lock(),
            [
                "config>tools/call delete true",
                "outer>tools/call delete true",
                "<outer Error(-32600)",
                "<config Error(-32600)",
            ],
            "{era:?}: refused before the inner layer and the handler"
        );
        log.lock().clear();
        let e = c
            .request("tools/call", json!({"name": "nope", "arguments": {}}))
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&e), Some(-32602), "{era:?}: {e}");
        assert_eq!(log.lock()[0], "config>tools/call nope false", "{era:?}");
        log.lock().clear();
        c.request("tools/list", json!({})).await.unwrap();
        assert_eq!(log.lock()[0], "config>tools/list  false", "{era:?}");
        c.close().await;
    }
}

/// A handler's server: one tool, `delete`.
struct Handler;

impl ServerHandler for Handler {
    async fn list_tools(
        &self,
        _ctx: &Ctx,
        _cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        Ok(ListToolsResult::default().with_tools(vec![Tool::default().with_name("delete".into())]))
    }

    async fn call_tool(
        &self,
        _ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        Ok(CallToolResult::text(format!("{} ran", params.name)))
    }
}

#[tokio::test]
async fn layers_wrap_a_server_handler_too() {
    let log: Log = Arc::default();
    let server = Server::builder("handler", "1")
        .handler(Handler)
        .layer(Note("only", log.clone()))
        .layer(NoDelete)
        .build()
        .unwrap();
    let url = serve(server).await;
    let c = connect(&url, client(EraChoice::Legacy)).await.unwrap();
    let e = c
        .request("tools/call", json!({"name": "delete", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(rpc_code(&e), Some(-32600), "{e}");
    let r = c
        .request("tools/call", json!({"name": "other", "arguments": {}}))
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "other ran", "{r}");
    // Only the handler knows its tools.
    assert_eq!(
        *log.lock(),
        [
            "only>tools/call delete false",
            "<only Error(-32600)",
            "only>tools/call other false",
            "<only Ok",
        ]
    );
    c.close().await;
}

/// A layer that only keeps a `Seen` reads the target the server parsed from the params: as
/// the last layer, with layers that keep nothing inside or outside it, and after a layer
/// read the target itself (the server notes the target only while someone watches).
#[tokio::test]
async fn a_kept_seen_reads_the_target_the_server_parsed() {
    for layers in ["W", "WP", "WPP", "PW", "PPWP", "WK", "KW"] {
        let log: Log = Arc::default();
        let mut builder =
            Server::builder("seen", "1").tool("echo", "Echoes", |_ctx: Ctx, a: Echo| async move {
                Ok::<_, String>(a.message)
            });
        for kind in layers.chars() {
            builder = match kind {
                'W' => builder.layer(Watch(log.clone())),
                'K' => builder.layer(Peek),
                _ => builder.layer(Pass),
            };
        }
        let url = serve(builder.build().unwrap()).await;
        for era in [EraChoice::Legacy, EraChoice::Modern] {
            let c = connect(&url, client(era)).await.unwrap();
            log.lock().clear();
            let r = echo_hi(&c).await;
            assert_eq!(r["content"][0]["text"], "hi", "{era:?}: {r}");
            c.request("tools/list", json!({})).await.unwrap();
            assert_eq!(
                *log.lock(),
                [r#"seen Some("echo")"#, "seen None"],
                "{era:?}, layers {layers}"
            );
            c.close().await;
        }
    }
}

/// `resources/subscribe`, `resources/unsubscribe` and `resources/read` name their resource to
/// a layer that keeps a `Seen`, as the `Target` docs say.
#[tokio::test]
async fn resource_requests_name_their_resource_to_a_kept_seen() {
    let log: Log = Arc::default();
    let uri = "file:///notes.txt";
    let resource = Resource::default()
        .with_uri(uri.into())
        .with_name("notes".into());
    let server = Server::builder("seen", "1")
        .resource(resource, |_ctx, uri: String| async move {
            Ok::<_, ErrorObject>(
                ReadResourceResult::default()
                    .with_contents(vec![ResourceContents::text(uri, None, "hi")]),
            )
        })
        .layer(Watch(log.clone()))
        .build()
        .unwrap();
    let url = serve(server).await;
    let c = connect(&url, client(EraChoice::Legacy)).await.unwrap();
    for method in [
        "resources/subscribe",
        "resources/read",
        "resources/unsubscribe",
    ] {
        c.request(method, json!({"uri": uri})).await.unwrap();
    }
    let seen = format!("seen Some({uri:?})");
    assert_eq!(*log.lock(), [seen.clone(), seen.clone(), seen]);
    c.close().await;
}

/// A server whose only layer is the metrics layer records inline, without the layers'
/// machinery: the same series and counts as the layer among others, for answers, tool
/// errors, JSON-RPC errors, lists and resources, in both eras.
#[tokio::test]
async fn metrics_record_the_same_alone_and_among_other_layers() {
    use oxmcp::server::layer::Metrics;
    let mut rendered = Vec::new();
    for among_others in [false, true] {
        let metrics = Metrics::new();
        let uri = "file:///notes.txt";
        let mut builder = Server::builder("metrics", "1")
            .tool("echo", "Echoes", |_ctx: Ctx, a: Echo| async move {
                Ok::<_, String>(a.message)
            })
            .tool("fail", "Fails", |_ctx: Ctx, _a: Echo| async move {
                Err::<String, _>("no".to_owned())
            })
            .resource(
                Resource::default()
                    .with_uri(uri.into())
                    .with_name("notes".into()),
                |_ctx, uri: String| async move {
                    Ok::<_, ErrorObject>(
                        ReadResourceResult::default()
                            .with_contents(vec![ResourceContents::text(uri, None, "hi")]),
                    )
                },
            )
            .layer(metrics.layer());
        if among_others {
            builder = builder.layer(Pass);
        }
        let url = serve(builder.build().unwrap()).await;
        for era in [EraChoice::Legacy, EraChoice::Modern] {
            let c = connect(&url, client(era)).await.unwrap();
            echo_hi(&c).await;
            echo_hi(&c).await;
            let failed = c
                .request(
                    "tools/call",
                    json!({"name": "fail", "arguments": {"message": "x"}}),
                )
                .await
                .unwrap();
            assert_eq!(failed["isError"], true, "{failed}");
            let unknown = c
                .request("tools/call", json!({"name": "nobody", "arguments": {}}))
                .await
                .unwrap_err();
            assert!(rpc_code(&unknown).is_some(), "{unknown:?}");
            c.request("tools/list", json!({})).await.unwrap();
            c.request("resources/read", json!({"uri": uri}))
                .await
                .unwrap();
            c.request("resources/read", json!({"uri": "file:///none"}))
                .await
                .unwrap_err();
            // Methods nobody serves: unknown, and one this server does not offer.
            for method in ["x/unknown", "prompts/list"] {
                let e = c.request(method, json!({})).await.unwrap_err();
                assert_eq!(rpc_code(&e), Some(-32601), "{method}: {e:?}");
            }
            c.close().await;
        }
        let text = metrics.render();
        assert!(text.contains("mcp_server_requests_in_flight 0"), "{text}");
        let mut counts: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with("mcp_server_operation_duration_seconds_count{"))
            .map(str::to_owned)
            .collect();
        counts.sort();
        rendered.push(counts);
    }
    let (alone, among) = (&rendered[0], &rendered[1]);
    assert!(
        alone
            .iter()
            .any(|l| l.contains(r#"gen_ai_tool_name="echo""#) && l.ends_with(" 4")),
        "{alone:#?}"
    );
    assert!(
        alone
            .iter()
            .any(|l| l.contains(r#"error_type="tool_error""#)),
        "{alone:#?}"
    );
    assert!(
        alone
            .iter()
            .any(|l| l.contains(r#"mcp_resource_uri="file:///notes.txt""#)),
        "{alone:#?}"
    );
    assert!(
        alone
            .iter()
            .any(|l| l.contains(r#"mcp_method_name="x/unknown""#)),
        "{alone:#?}"
    );
    assert_eq!(alone, among);
}

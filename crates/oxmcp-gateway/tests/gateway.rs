//! The gateway as a library, over real sockets and a real child process: a gateway built in
//! code in front of an upstream served in this process over Streamable HTTP on 127.0.0.1 and
//! an upstream run as a stdio child (this very test binary, started again with
//! `OXMCP_GATEWAY_TEST_CHILD=1`, serves it: hence `harness = false`, so that nothing but the
//! protocol is written on the child's stdout). It lists the upstreams' tools under their
//! prefixes, forwards calls and reads, and refuses an unknown tool and a subscription to a
//! resource no upstream lists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, EraChoice};
use oxmcp_gateway::{Config, Gateway, Upstream};
use oxmcp_jsonrpc::ErrorCode;
use oxmcp_server::{Ctx, Server};
use oxmcp_types::JsonObject;

/// Set in the environment of the stdio child: it serves [`child_server`] on stdin/stdout.
const CHILD: &str = "OXMCP_GATEWAY_TEST_CHILD";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Message {
    /// The text.
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    /// One number.
    a: i64,
    /// The other.
    b: i64,
}

/// The upstream served over Streamable HTTP: `shout` and one listed resource.
fn web_server() -> Server {
    Server::builder("web", "1.0.0")
        .tool(
            "shout",
            "Shouts the message back",
            |_ctx: Ctx, m: Message| async move { Ok::<_, String>(m.message.to_uppercase()) },
        )
        .text_resource(
            "demo://readme",
            "readme",
            "text/plain",
            "Hello from the web",
        )
        .build()
        .unwrap()
}

/// The upstream run as a stdio child: `add`.
fn child_server() -> Server {
    Server::builder("child", "1.0.0")
        .tool("add", "Adds two numbers", |_ctx: Ctx, p: Pair| async move {
            Ok::<_, String>((p.a + p.b).to_string())
        })
        .build()
        .unwrap()
}

/// Serves `server` over Streamable HTTP on a free port of 127.0.0.1: its URL.
async fn serve_http(server: Server) -> String {
    let http = oxmcp_http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(oxmcp_http::serve_router(listener, http.router()));
    url
}

/// A client of `url` over Streamable HTTP, speaking `era`.
async fn client(url: &str, era: EraChoice) -> Client {
    let t = oxmcp_http::client::connect(url, Default::default()).unwrap();
    let config = ClientConfig::default().era(era);
    Client::connect(t.incoming, t.outgoing, ClientHandlers::new(), config)
        .await
        .unwrap()
}

fn args(pairs: &[(&str, serde_json::Value)]) -> JsonObject {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// The stdio upstream: this binary again, as the child.
fn child_upstream() -> Upstream {
    let exe = std::env::current_exe().unwrap();
    Upstream::command("child", [exe.to_string_lossy().into_owned()]).with_env(CHILD, "1")
}

/// The tool names `client` is offered, sorted.
async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

fn rpc_code(e: &CallError) -> Option<ErrorCode> {
    match e {
        CallError::Rpc(e) => Some(e.code),
        _ => None,
    }
}

async fn a_gateway_built_in_code_lists_prefixed_tools_and_forwards() {
    let web = serve_http(web_server()).await;
    let config = Config::default()
        .with_upstream(Upstream::url("web", web))
        .with_upstream(child_upstream());
    let gateway = Gateway::builder(config).start().await.unwrap();
    let url = serve_http(gateway.server().clone()).await;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let c = client(&url, era).await;
        assert_eq!(
            tool_names(&c).await,
            ["child__add", "web__shout"],
            "{era:?}"
        );
        let r = c
            .call_tool("web__shout", args(&[("message", "hello".into())]))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("HELLO"));
        let r = c
            .call_tool("child__add", args(&[("a", 2.into()), ("b", 3.into())]))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("5"));
        let read = c
            .read_resource("gateway://web/demo://readme")
            .await
            .unwrap();
        let text = serde_json::to_value(&read.contents).unwrap()[0]["text"].clone();
        assert_eq!(text, "Hello from the web");
        c.close().await;
    }
    gateway.stop().await;
}

async fn unknown_tools_and_unlisted_subscriptions_are_refused() {
    let web = serve_http(web_server()).await;
    let config = Config::default().with_upstream(Upstream::url("web", web));
    let gateway = Gateway::builder(config).start().await.unwrap();
    let url = serve_http(gateway.server().clone()).await;
    let c = client(&url, EraChoice::Legacy).await;
    for name in ["web__nope", "shout", "other__shout"] {
        let e = c.call_tool(name, JsonObject::new()).await.unwrap_err();
        assert_eq!(rpc_code(&e), Some(ErrorCode::INVALID_PARAMS), "{name}: {e}");
    }
    // Only what the upstream lists may be subscribed to; the rest never reaches it.
    c.subscribe("gateway://web/demo://readme").await.unwrap();
    for uri in [
        "gateway://web/demo://secret",
        "demo://readme",
        "gateway://nobody/x",
    ] {
        let e = c.subscribe(uri).await.unwrap_err();
        assert_eq!(rpc_code(&e), Some(ErrorCode::INVALID_PARAMS), "{uri}: {e}");
    }
    c.close().await;
    gateway.stop().await;
}

async fn a_bridge_exposes_names_as_they_are() {
    let web = serve_http(web_server()).await;
    let config = Config::bridge(Upstream::url("upstream", web), "the web server");
    assert_eq!(config.bridged(), Some("the web server"));
    let gateway = Gateway::builder(config).start().await.unwrap();
    let url = serve_http(gateway.server().clone()).await;
    let c = client(&url, EraChoice::Auto).await;
    assert_eq!(tool_names(&c).await, ["shout"]);
    let r = c
        .call_tool("shout", args(&[("message", "as is".into())]))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("AS IS"));
    c.close().await;
    gateway.stop().await;
}

async fn configs_read_from_toml_are_checked() {
    let config = Config::from_toml(
        "heartbeat_ms = 1000\n[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n\
         [[upstream]]\nname = \"b\"\nurl = \"http://127.0.0.1:1/mcp\"\nera = \"legacy\"\n",
    )
    .unwrap();
    assert_eq!(config.heartbeat_ms, 1000);
    assert_eq!(config.upstream.len(), 2);
    assert_eq!(config.upstream[1].era, EraChoice::Legacy);
    for (text, want) in [
        ("surprise = 1\n", "unknown field"),
        ("[[upstream]]\nname = \"a\"\n", "exactly one of"),
        (
            "[[upstream]]\nname = \"a__b\"\ncommand = [\"x\"]\n",
            "upstream name",
        ),
        ("max_interrupted_per_principal = 0\n", "at least 1"),
    ] {
        let e = Config::from_toml(text).unwrap_err();
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
    // A config built in code is checked when started.
    let twice = Config::default()
        .with_upstream(Upstream::command("a", ["x"]))
        .with_upstream(Upstream::command("a", ["y"]));
    let e = Gateway::builder(twice).start().await.unwrap_err();
    assert!(matches!(e, oxmcp_gateway::Error::Config(_)), "{e}");
}

type Case = fn() -> Pin<Box<dyn Future<Output = ()>>>;

fn main() -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if std::env::var_os(CHILD).is_some() {
        runtime.block_on(async {
            let (io, writer) = oxmcp_transport::stdio(oxmcp_transport::DEFAULT_MAX_LINE);
            child_server().serve(io.incoming, io.outgoing).await;
            let _ = writer.await;
        });
        return std::process::ExitCode::SUCCESS;
    }
    let cases: [(&str, Case); 4] = [
        (
            "a_gateway_built_in_code_lists_prefixed_tools_and_forwards",
            || Box::pin(a_gateway_built_in_code_lists_prefixed_tools_and_forwards()),
        ),
        (
            "unknown_tools_and_unlisted_subscriptions_are_refused",
            || Box::pin(unknown_tools_and_unlisted_subscriptions_are_refused()),
        ),
        ("a_bridge_exposes_names_as_they_are", || {
            Box::pin(a_bridge_exposes_names_as_they_are())
        }),
        ("configs_read_from_toml_are_checked", || {
            Box::pin(configs_read_from_toml_are_checked())
        }),
    ];
    // `cargo test -p oxmcp-gateway --test gateway NAME` runs the cases whose name holds NAME.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = 0;
    for (name, case) in cases {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let run = runtime.spawn_blocking({
            let handle = runtime.handle().clone();
            move || handle.block_on(tokio::time::timeout(Duration::from_secs(60), case()))
        });
        match runtime.block_on(run) {
            Ok(Ok(())) => println!("test {name} ... ok"),
            Ok(Err(_)) => {
                println!("test {name} ... FAILED (timed out)");
                failed += 1;
            }
            Err(panic) => {
                println!("test {name} ... FAILED ({panic})");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        println!("{failed} failed");
        std::process::ExitCode::FAILURE
    }
}

//! `mcp serve --config`: a gateway over a stdio upstream and an HTTP upstream, all real
//! processes and sockets; a legacy and a modern client call tools of both, progress passes
//! through, and the HTTP upstream is killed and restarted during the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_client::{Client, ClientConfig, ClientHandlers, EraChoice, RequestOptions};
use mcp_http::HttpClientConfig;
use mcp_types::JsonObject;
use serde_json::json;

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn client(url: &str, era: EraChoice) -> Client {
    let t = mcp_http::client::connect(url, HttpClientConfig::default()).unwrap();
    let config = ClientConfig {
        era,
        ..ClientConfig::default()
    };
    Client::connect(t.incoming, t.outgoing, ClientHandlers::new(), config)
        .await
        .unwrap()
}

fn args(v: serde_json::Value) -> JsonObject {
    serde_json::from_value(v).unwrap()
}

async fn names(c: &Client) -> Vec<String> {
    c.invalidate_lists();
    let mut n: Vec<String> = c
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    n.sort();
    n
}

async fn until(c: &Client, what: &str, pred: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = names(c).await;
        if pred(&n) {
            return n;
        }
        assert!(Instant::now() < deadline, "{what}: tools are {n:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_over_a_stdio_and_an_http_upstream() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let (upstream, upstream_url) = common::serve_http(&["--listen", &listen]).await;
    let dir = std::env::temp_dir().join(format!("mcp-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("mcp.toml");
    std::fs::write(
        &config,
        format!(
            r#"heartbeat_ms = 200

[[upstream]]
name = "local"
command = ["{MCP}", "serve", "--stdio"]
deny_tools = ["fail"]

[[upstream]]
name = "remote"
url = "{upstream_url}"
allow_tools = ["echo", "slow"]
"#
        ),
    )
    .unwrap();
    let (_gateway, url) = common::serve_http(&[
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ])
    .await;

    let legacy = client(&url, EraChoice::Legacy).await;
    let modern = client(&url, EraChoice::Modern).await;
    assert!(modern.is_modern());
    let all = names(&legacy).await;
    assert_eq!(
        all,
        [
            "local__add",
            "local__echo",
            "local__log",
            "local__slow",
            "remote__echo",
            "remote__slow"
        ],
        "collision-free names, allow and deny lists applied"
    );
    for c in [&legacy, &modern] {
        for tool in ["local__echo", "remote__echo"] {
            let r = c
                .call_tool(tool, args(json!({"message": tool})))
                .await
                .unwrap();
            assert_eq!(r.content[0].as_text(), Some(tool));
        }
    }
    // Progress from the upstream reaches the downstream client.
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let options = RequestOptions::default().on_progress(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    let r = legacy
        .call_tool_with(
            "remote__slow",
            args(json!({"steps": 3, "delay_ms": 20})),
            &options,
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("done after 3 steps"));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "three progress notifications"
    );
    // Upstream errors come back as they are.
    let e = legacy
        .call_tool("remote__echo", args(json!({"nope": 1})))
        .await
        .unwrap();
    assert!(e.failed(), "schema violation is a tool error");

    // The HTTP upstream goes down: its tools leave the list, the others stay and work.
    drop(upstream);
    let left = until(&legacy, "remote tools removed", |n| {
        !n.iter().any(|t| t.starts_with("remote__"))
    })
    .await;
    assert_eq!(left.len(), 4);
    let r = modern
        .call_tool("local__echo", args(json!({"message": "still here"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("still here"));
    // It comes back on the same address: so do its tools.
    let (_upstream, _) = common::serve_http(&["--listen", &listen]).await;
    until(&legacy, "remote tools back", |n| n.len() == 6).await;
    let r = legacy
        .call_tool("remote__echo", args(json!({"message": "back"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("back"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_configs_are_refused_with_a_clear_message() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, want) in [
        (
            "[[upstream]]\nname = \"a__b\"\ncommand = [\"x\"]\n",
            "upstream name",
        ),
        ("[[upstream]]\nname = \"a\"\n", "exactly one of"),
        (
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n[[upstream]]\nname = \"a\"\ncommand = [\"y\"]\n",
            "used twice",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nsurprise = 1\n",
            "unknown field",
        ),
    ] {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(MCP)
            .args(["serve", "--stdio", "--config", path.to_str().unwrap()])
            .env("MCP_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{want}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

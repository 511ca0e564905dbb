//! The client owns what its transport opened: the CLI's client commands and the gateway end
//! the HTTP sessions they opened upstream with DELETE when they finish, so none is left to
//! wait for the idle timeout. The upstream is a real Streamable HTTP endpoint in this process,
//! which counts its sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxmcp_http::{HttpConfig, StreamableHttp};
use oxmcp_server::{Ctx, Server};

use oxmcp_tests::oxmcp;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

/// An upstream with an `echo` tool on 127.0.0.1: its endpoint (to count sessions) and URL.
async fn upstream() -> (StreamableHttp, String) {
    let server = Server::builder("upstream", "1")
        .tool("echo", "echo", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .build()
        .unwrap();
    let http = StreamableHttp::new(server, HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let serving = http.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    (http, url)
}

/// Waits (at most 20 s) until the upstream holds `n` sessions.
async fn sessions_become(http: &StreamableHttp, n: usize) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < deadline {
        if http.session_count() == n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_cli_call_ends_its_http_session() {
    let (http, url) = upstream().await;
    let out = tokio::process::Command::new(oxmcp())
        .args(["call", &url, "echo", r#"{"message":"hi"}"#])
        .env("MCP_LOG", "off")
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    // The session ended when the command did (DELETE), not by expiry (30 min).
    assert_eq!(http.session_count(), 0, "the CLI left its session open");
}

#[tokio::test]
async fn the_gateway_ends_its_upstream_http_sessions_when_it_stops() {
    let (http, url) = upstream().await;
    let dir = std::env::temp_dir().join(format!("mcp-upstream-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!("[[upstream]]\nname = \"up\"\nurl = \"{url}\"\nera = \"legacy\"\n"),
    )
    .unwrap();
    let (mut gateway, _gateway_url) = oxmcp_tests::serve_http(&[
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ])
    .await;
    assert!(
        sessions_become(&http, 1).await,
        "the gateway holds one upstream session"
    );
    let pid = i32::try_from(gateway.id().unwrap()).unwrap();
    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), gateway.wait())
        .await
        .expect("the gateway stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        http.session_count(),
        0,
        "the gateway left its upstream session open"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

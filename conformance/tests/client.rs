//! The fixture client run as the suite runs it: the binary, the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, the server URL as its last argument, success by exit code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

/// Serves `server` over Streamable HTTP on 127.0.0.1 and returns its URL.
async fn serve(server: oxmcp_server::Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = oxmcp_http::StreamableHttp::new(server, oxmcp_http::HttpConfig::default()).router();
    tokio::spawn(oxmcp_http::serve_router(listener, app));
    url
}

async fn run_client(scenario: &str, url: &str) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-conformance-client"))
        .arg(url)
        .env("MCP_CONFORMANCE_SCENARIO", scenario)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap()
}

/// The suite's `initialize` mock declares no capabilities at all: the client connects,
/// lists nothing, closes, and exits 0 (it exited 1, "the server does not support tools", and
/// `client --scenario initialize` was FAILED although its one check passed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_against_a_server_without_tools_exits_0() {
    let bare = oxmcp_server::Server::builder("no-tools", "1")
        .build()
        .unwrap();
    let url = serve(bare).await;
    let out = run_client("initialize", &url).await;
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// With tools declared, `initialize` lists them (and still exits 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_against_the_fixture_server_exits_0() {
    let url = serve(mcp_conformance::server().unwrap()).await;
    let out = run_client("initialize", &url).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

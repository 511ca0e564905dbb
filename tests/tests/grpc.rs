//! gRPC in the CLI: `oxmcp serve` on its HTTP port and on `--grpc-listen` (with TLS), every
//! client command over `grpc://` and `grpcs://`, the gateway over a gRPC upstream, a call
//! cut by the server's death, and a Python client generated from our `.proto` with
//! grpcio-tools (from PyPI, in `.venv-interop`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use oxmcp_tests::python::run_script;

fn grpc_url(http_url: &str) -> String {
    http_url
        .replacen("http://", "grpc://", 1)
        .replace("/mcp", "")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn mcp(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let run = tokio::process::Command::new(oxmcp_tests::oxmcp())
        .args(args)
        .envs(env.iter().copied())
        .env("MCP_LOG", "off")
        .output();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the command ends")
        .unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn a_python_client_generated_from_our_proto() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let target = grpc_url(&url).replacen("grpc://", "", 1);
    let proto =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/oxmcp-proto/proto/mcp.proto");
    let v = run_script("grpc_client.py", &[&target, proto.to_str().unwrap()]).await;
    assert_eq!(v["protocolVersion"], "2025-11-25");
    assert!(
        v["tools"].as_array().unwrap().iter().any(|t| t == "echo"),
        "{v}"
    );
    assert_eq!(v["slow"], "done after 3 steps");
    assert_eq!(v["progress"], serde_json::json!([1.0, 2.0, 3.0]), "{v}");
    assert_eq!(v["ended_cleanly"], true);
    assert_eq!(v["proto_id"], "m");
    assert_eq!(v["proto_echo"], "from python, protobuf");
    assert_eq!(v["unary"], "unary from python");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_over_grpc_and_grpcs() {
    let (_dir, cert, key, ca) = oxmcp_tests::tls::certificates();
    let tls_port = free_port();
    let tls_listen = format!("127.0.0.1:{tls_port}");
    let (_server, url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--grpc-listen",
        &tls_listen,
        "--grpc-tls-cert",
        cert.to_str().unwrap(),
        "--grpc-tls-key",
        key.to_str().unwrap(),
    ])
    .await;
    let plain = grpc_url(&url);
    let tls = format!("grpcs://{tls_listen}");
    let trust: &[(&str, &Path)] = &[("SSL_CERT_FILE", &ca)];

    let tools = stdout(&mcp(&["tools", &plain], &[]).await);
    assert!(tools.lines().any(|l| l.starts_with("echo")), "{tools}");
    let echo = stdout(&mcp(&["call", &tls, "echo", r#"{"message":"over TLS"}"#], trust).await);
    assert_eq!(echo, "over TLS");
    let args = [
        "call",
        "--encoding",
        "protobuf",
        &tls,
        "echo",
        r#"{"message":"protobuf over TLS"}"#,
    ];
    assert_eq!(stdout(&mcp(&args, trust).await), "protobuf over TLS");
    let readme = stdout(&mcp(&["read", &plain, "demo://readme"], &[]).await);
    assert!(!readme.is_empty());
    let prompts = stdout(&mcp(&["prompts", &tls], trust).await);
    assert!(!prompts.is_empty());
    stdout(&mcp(&["ping", &plain], &[]).await);

    // Without the CA the certificate is refused, in a clear error.
    let no_trust: &[(&str, &Path)] = &[("SSL_CERT_FILE", Path::new("/dev/null"))];
    let out = mcp(&["tools", &tls], no_trust).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&tls), "{err}");
    assert!(
        err.to_lowercase().contains("certificate") || err.contains("UnknownIssuer"),
        "{err}"
    );
    // Plain gRPC to the TLS port, and a closed port: errors, not hangs.
    let out = mcp(&["tools", &format!("grpc://{tls_listen}")], &[]).await;
    assert!(!out.status.success());
    let out = mcp(
        &["tools", &format!("grpc://127.0.0.1:{}", free_port())],
        &[],
    )
    .await;
    assert!(!out.status.success());
}

#[tokio::test]
async fn bad_grpc_listeners_fail_the_start() {
    let listen = format!("0.0.0.0:{}", free_port());
    let out = mcp(&["serve", "--grpc-listen", &listen], &[]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without authentication"), "{err}");
    // A key that is not a key: the server stops with the reason, not a dead port.
    let (_dir, cert, _key, ca) = oxmcp_tests::tls::certificates();
    let listen = format!("127.0.0.1:{}", free_port());
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--grpc-listen",
        &listen,
        "--grpc-tls-cert",
        cert.to_str().unwrap(),
        "--grpc-tls-key",
        ca.to_str().unwrap(),
    ];
    let out = mcp(&args, &[]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("private key"), "{err}");
}

/// The gateway reaches an upstream over gRPC; its tools appear and work.
#[tokio::test]
async fn the_gateway_takes_a_grpc_upstream() {
    let (_upstream, up) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let out = oxmcp_tests::echo_through_gateway(&grpc_url(&up), "rpc", "through gRPC").await;
    assert_eq!(out, "through gRPC");
}

/// A call in flight when the server dies fails at once; it does not wait for its timeout.
#[tokio::test]
async fn a_call_cut_by_the_server_dying_fails() {
    let (server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    oxmcp_tests::a_call_cut_by_death_fails(server, &grpc_url(&url)).await;
}

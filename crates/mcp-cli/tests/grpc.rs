//! gRPC in the CLI: `mcp serve` on its HTTP port and on `--grpc-listen` (with TLS), every
//! client command over `grpc://` and `grpcs://`, the gateway over a gRPC upstream, a call
//! cut by the server's death, and a Python client generated from our `.proto` with
//! grpcio-tools (from PyPI, in `.venv-interop`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use common::python::run_script;

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
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
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
    let (_server, url) = common::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let target = grpc_url(&url).replacen("grpc://", "", 1);
    let proto = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp-proto/proto/mcp.proto");
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

/// A private CA and a certificate for 127.0.0.1 from it: (dir, cert, key, ca).
fn certificates() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ca_subject = "/CN=grpc-test-ca";
    openssl(&[
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", ca_subject,
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(d.join("ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.crt",
        "-days",
        "2",
        "-extfile",
        "ext",
    ]);
    let (cert, key, ca) = (d.join("srv.crt"), d.join("srv.key"), d.join("ca.crt"));
    (dir, cert, key, ca)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_over_grpc_and_grpcs() {
    let (_dir, cert, key, ca) = certificates();
    let tls_port = free_port();
    let tls_listen = format!("127.0.0.1:{tls_port}");
    let (_server, url) = common::serve_http(&[
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
    let bench = ["bench", &tls, "--requests", "200", "--clients", "4"];
    let figures = stdout(&mcp(&bench, trust).await);
    assert!(figures.contains("0 errors"), "{figures}");

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
    let (_dir, cert, _key, ca) = certificates();
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
    let (_upstream, up) = common::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gw.toml");
    std::fs::write(
        &file,
        format!(
            "[[upstream]]\nname = \"rpc\"\nurl = \"{}\"\n",
            grpc_url(&up)
        ),
    )
    .unwrap();
    let (_gw, gw) = common::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--config",
        file.to_str().unwrap(),
    ])
    .await;
    let out = mcp(
        &["call", &gw, "rpc__echo", r#"{"message":"through gRPC"}"#],
        &[],
    )
    .await;
    assert_eq!(stdout(&out), "through gRPC");
}

/// A call in flight when the server dies fails at once; it does not wait for its timeout.
#[tokio::test]
async fn a_call_cut_by_the_server_dying_fails() {
    let (mut server, url) = common::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let call = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args([
            "call",
            &grpc_url(&url),
            "slow",
            r#"{"steps":100,"delay_ms":100}"#,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.kill().await.unwrap();
    let t0 = std::time::Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(10), call.wait_with_output())
        .await
        .expect("the call ends")
        .unwrap();
    assert!(!out.status.success());
    assert!(t0.elapsed() < Duration::from_secs(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("closed") || err.contains("connection"),
        "{err}"
    );
}

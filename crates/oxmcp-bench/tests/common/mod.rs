//! What the bench's tests run: the `oxmcp-bench` binary, and the servers it drives (the real
//! `oxmcp serve` of the `oxmcp-cli` crate, a private CA for gRPC over TLS).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The binary under test.
pub const BENCH: &str = env!("CARGO_BIN_EXE_oxmcp-bench");

/// The `oxmcp` binary (crate `oxmcp-cli`), the server these tests drive. Cargo gives a test
/// only its own package's binaries (`CARGO_BIN_EXE_*`), so the first call builds it:
/// `cargo build -p oxmcp-cli --bin oxmcp` in this test's profile and target directory (the
/// same `CARGO_TARGET_DIR` or config; after a `cargo build` of the workspace it is up to
/// date), and takes its path from cargo's JSON messages. `OXMCP_BIN=PATH` names one to use
/// instead.
pub fn oxmcp() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os("OXMCP_BIN") {
            return path.into_string().expect("OXMCP_BIN is UTF-8");
        }
        // This test runs as TARGET/PROFILE/deps/NAME-HASH.
        let exe = std::env::current_exe().unwrap();
        let profile = exe
            .parent()
            .and_then(|deps| deps.parent())
            .and_then(|dir| dir.file_name())
            .and_then(|name| name.to_str())
            .map_or("dev", |name| if name == "debug" { "dev" } else { name })
            .to_owned();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args([
                "build",
                "-p",
                "oxmcp-cli",
                "--bin",
                "oxmcp",
                "--profile",
                &profile,
            ])
            .args(["--message-format", "json-render-diagnostics"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "cargo build -p oxmcp-cli failed");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "oxmcp")
            .find_map(|m| m["executable"].as_str().map(str::to_owned))
            .expect("cargo names the oxmcp executable")
    })
}

/// Starts `oxmcp serve ARGS` and returns it with the URL it printed.
pub async fn serve_http(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(oxmcp())
        .arg("serve")
        .args(args)
        .env(
            "MCP_LOG",
            std::env::var("MCP_TEST_LOG").unwrap_or_else(|_| "off".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server prints its address")
            .unwrap()
            .expect("server running");
        if let Some(rest) = line.split("http://").nth(1) {
            break format!("http://{}", rest.split_whitespace().next().unwrap());
        }
    };
    // MCP_TEST_LOG=debug (an MCP_LOG filter) shows what the server logs.
    let show = std::env::var_os("MCP_TEST_LOG").is_some();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if show {
                eprintln!("[oxmcp serve] {line}");
            }
        }
    });
    (child, url)
}

/// A private CA and a certificate for 127.0.0.1 from it (openssl): (dir, cert, key, ca).
pub fn certificates() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
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
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=mcp-test-ca",
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

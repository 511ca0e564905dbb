//! The `mcp` command's output, human and `--json`, against the demo server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

fn mcp(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(MCP)
        .args(args)
        .env("MCP_LOG", "off")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn tools_human_and_json() {
    let (ok, out, _) = mcp(&["tools", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    let first: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(first, ["add", "echo", "fail", "log", "slow"]);
    assert!(out.contains("Echoes the message back"));
    let (ok, out, _) = mcp(&["tools", "--json", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    let tools: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tools[1]["name"], "echo");
    assert_eq!(
        tools[1]["inputSchema"]["required"],
        serde_json::json!(["message"])
    );
}

#[test]
fn call_outputs_and_errors() {
    let (ok, out, _) = mcp(&[
        "call",
        "echo",
        r#"{"message":"hi there"}"#,
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert!(ok);
    assert_eq!(out, "hi there\n");
    let (ok, out, _) = mcp(&[
        "call", "add", "-a", "a=1", "-a", "b=2", "--json", "--", MCP, "serve", "--stdio",
    ]);
    assert!(ok);
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["structuredContent"]["sum"], 3.0);
    let (ok, _, err) = mcp(&[
        "call",
        "slow",
        "-a",
        "steps=2",
        "-a",
        "delay_ms=1",
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert!(ok);
    assert!(
        err.contains("progress 1/2") && err.contains("progress 2/2"),
        "{err}"
    );
    // Failures are one clear line on stderr and a non-zero exit.
    let (ok, out, err) = mcp(&["call", "fail", "--", MCP, "serve", "--stdio"]);
    assert!(!ok);
    assert_eq!(out, "this tool always fails\n");
    assert_eq!(err.trim(), "error: tool fail reported an error");
    let (ok, _, err) = mcp(&["call", "nope", "--", MCP, "serve", "--stdio"]);
    assert!(!ok);
    assert!(
        err.starts_with("error: server error -32602: Unknown tool: nope"),
        "{err}"
    );
    let (ok, _, err) = mcp(&["call", "echo", "[1]", "--", MCP, "serve", "--stdio"]);
    assert!(!ok);
    assert!(err.contains("must be a JSON object"), "{err}");
    let (ok, _, err) = mcp(&["tools", "--", "/nonexistent/server"]);
    assert!(!ok);
    assert!(
        err.starts_with("error: cannot connect to `/nonexistent/server`"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

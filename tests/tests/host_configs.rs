//! The hosts' server lists as gateway configs, over real processes and sockets:
//! `oxmcp serve --config FILE.json` serves a Claude Desktop `mcpServers` file (two stdio
//! servers and one remote `oxmcp serve`) and a VS Code `servers` file as a gateway; what
//! `oxmcp config claude|vscode` prints is such a file; an entry that cannot be mapped stops the
//! start with its name and the file's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use oxmcp_tests::{mcp, oxmcp, serve_http};

/// The stdio server of many tools, given 2 (`tool_0000`, `tool_0001` and `form`).
fn many_tools() -> String {
    std::env::var("OXMCP_MANY_TOOLS").unwrap_or_else(|_| env!("CARGO_BIN_EXE_many_tools").into())
}

/// The tool names `oxmcp tools URL --json` lists, sorted.
async fn tool_names(url: &str) -> Vec<String> {
    let (ok, out, err) = mcp(&["tools", url, "--json"]).await;
    assert!(ok, "{err}");
    let tools: Vec<Value> = serde_json::from_str(&out).unwrap();
    let mut names: Vec<String> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// What `oxmcp call URL TOOL ARGS` printed.
async fn call(url: &str, tool: &str, args: Value) -> String {
    let (ok, out, err) = mcp(&["call", url, tool, &args.to_string()]).await;
    assert!(ok, "{tool}: {err}");
    out.trim().to_owned()
}

/// `oxmcp serve --config FILE` on a free port.
async fn gateway(file: &std::path::Path) -> (tokio::process::Child, String) {
    serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--config",
        file.to_str().unwrap(),
    ])
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_desktop_file_of_two_stdio_servers_and_a_remote_one_is_a_gateway() {
    let (_remote, remote_url) = serve_http(&["--listen", "127.0.0.1:0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claude_desktop_config.json");
    let config = json!({
        "mcpServers": {
            "demo": {"command": oxmcp(), "args": ["serve", "--stdio"], "env": {"MCP_LOG": "off"}},
            "many": {"command": many_tools(), "args": ["2"]},
            "remote": {"url": remote_url},
        },
        "globalShortcut": "",
    });
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let (_gw, url) = gateway(&file).await;
    let names = tool_names(&url).await;
    for want in [
        "demo__echo",
        "demo__add",
        "many__tool_0001",
        "many__form",
        "remote__echo",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert_eq!(
        names.len(),
        2 * oxmcp_tests::DEMO_TOOLS.len() + 3,
        "{names:?}"
    );
    let said = call(
        &url,
        "remote__echo",
        json!({"message": "through the gateway"}),
    )
    .await;
    assert!(said.contains("through the gateway"), "{said}");
    let said = call(&url, "many__tool_0001", json!({"text": "to the second"})).await;
    assert!(said.contains("to the second"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vscode_file_with_types_and_variables_is_a_gateway() {
    let (_remote, remote_url) = serve_http(&["--listen", "127.0.0.1:0"]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".vscode")).unwrap();
    let file = dir.path().join(".vscode/mcp.json");
    // `${pathSeparator}` stands for `/`: the program's path is only whole once expanded.
    let program = oxmcp().replace('/', "${pathSeparator}");
    let config = json!({
        "inputs": [],
        "servers": {
            "local": {"type": "stdio", "command": program, "args": ["serve", "--stdio"]},
            "web": {"type": "http", "url": remote_url, "headers": {"X-Trace": "1"}},
        },
    });
    std::fs::write(&file, config.to_string()).unwrap();
    let (_gw, url) = gateway(&file).await;
    let names = tool_names(&url).await;
    assert!(names.iter().any(|n| n == "local__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "web__echo"), "{names:?}");
    let said = call(&url, "local__echo", json!({"message": "vscode"})).await;
    assert!(said.contains("vscode"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_oxmcp_config_prints_is_a_host_file_that_serves() {
    let dir = tempfile::tempdir().unwrap();
    for (host, list) in [("claude", "mcpServers"), ("vscode", "servers")] {
        let (ok, out, err) = mcp(&[
            "config",
            host,
            "--name",
            "bridged",
            "--",
            &many_tools(),
            "2",
        ])
        .await;
        assert!(ok, "{err}");
        let printed: Value = serde_json::from_str(&out).unwrap();
        let entry = &printed[list]["bridged"];
        let program = entry["command"].as_str().unwrap();
        assert!(std::path::Path::new(program).is_absolute(), "{printed}");
        let args = entry["args"].as_array().unwrap();
        assert_eq!(args[..2], [json!("serve"), json!("--stdio")], "{printed}");
        let file = dir.path().join(format!("{host}.json"));
        std::fs::write(&file, &out).unwrap();
        let (_gw, url) = gateway(&file).await;
        let names = tool_names(&url).await;
        assert_eq!(
            names,
            ["bridged__form", "bridged__tool_0000", "bridged__tool_0001"],
            "{host}"
        );
    }
    let (ok, _, err) = mcp(&["config", "cursor", "--no-such-flag"]).await;
    assert!(!ok);
    assert!(err.contains("--no-such-flag"), "{err}");
}

#[tokio::test]
async fn an_entry_that_cannot_be_mapped_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    let config = json!({"servers": {
        "fine": {"type": "stdio", "command": "true"},
        "prompted": {"type": "stdio", "command": "srv", "env": {"KEY": "${input:api-key}"}},
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    let (ok, _, err) = mcp(&["serve", "--config", file.to_str().unwrap()]).await;
    assert!(!ok);
    assert!(err.contains("server \"prompted\""), "{err}");
    assert!(err.contains("${input:api-key}"), "{err}");
    assert!(err.contains("mcp.json"), "{err}");
}

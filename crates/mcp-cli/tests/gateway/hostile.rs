//! Upstreams that misbehave on purpose. Our own server cannot be made to misbehave, so these
//! are small real servers written as shell scripts (stdio, one JSON-RPC message a line).

use super::*;

/// A stdio server whose `tools/list` never ends: one tool on the first page, then empty pages,
/// each with a cursor to the next.
const ENDLESS_PAGES: &str = r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"endless","version":"0"}}}' ;;
    *'"method":"tools/list"'*'"cursor"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[],"nextCursor":"more"}}' ;;
    *'"method":"tools/list"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"only","inputSchema":{"type":"object"}}],"nextCursor":"more"}}' ;;
    *'"method":"ping"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{}}' ;;
  esac
done
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_tool_pages_are_cut_off() {
    let (dir, config) = config_file("mcp-gateway-endless", "");
    let script = dir.join("endless.sh");
    std::fs::write(&script, ENDLESS_PAGES).unwrap();
    std::fs::write(
        &config,
        format!(
            r#"[[upstream]]
name = "endless"
command = ["sh", "{}"]
era = "legacy"

[[upstream]]
name = "local"
command = ["{MCP}", "serve", "--stdio"]
allow_tools = ["echo"]
"#,
            script.display()
        ),
    )
    .unwrap();
    let (_gateway, url) = serve_gateway(&config).await;
    let c = client(&url, EraChoice::Legacy).await;
    // The pages stop at the gateway's page limit: what they held is listed.
    until(&c, "the endless upstream's tool", |n| {
        n.iter().any(|t| t == "endless__only")
    })
    .await;
    assert_eq!(names(&c).await, ["endless__only", "local__echo"]);
    let _ = std::fs::remove_dir_all(&dir);
}

//! Run with: mcp bench -- target/release/examples/bare_echo
//!
//! The baseline for the stdio bench: a bare serde_json line echo with no MCP machinery. It
//! answers every request with one result that satisfies both `initialize` and `tools/call`,
//! its text the request's `params.arguments.message` (or "hello"), so that `mcp bench` can
//! drive it like a real server and check each answer like any echo's.

use std::io::{BufRead, Write};

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut lines = stdin.lines();
    while let Some(line) = lines.next().transpose()? {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id") else { continue }; // notifications get no answer
        let text = msg["params"]["arguments"]["message"]
            .as_str()
            .unwrap_or("hello");
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bare-echo", "version": "0"},
            "content": [{"type": "text", "text": text}],
        }});
        serde_json::to_writer(&mut out, &reply)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    out.flush()
}

//! Run with: oxmcp-bench -- target/release/examples/bare_echo
//!
//! The baseline for the stdio bench: a bare serde_json line echo with no MCP machinery. It
//! answers every request with one result that satisfies both `initialize` and `tools/call`,
//! its text the request's `params.arguments.message` (or "hello"), so that `oxmcp-bench` can
//! drive it like a real server and check each answer like any echo's.

#[path = "bare/reply.rs"]
mod reply;

use std::io::{BufRead, Write};

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut lines = stdin.lines();
    while let Some(line) = lines.next().transpose()? {
        // Notifications and lines that are not JSON get no answer.
        let Ok(Some(reply)) = reply::answer(line.as_bytes()) else {
            continue;
        };
        out.write_all(reply.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    out.flush()
}

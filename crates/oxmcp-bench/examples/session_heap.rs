//! Run with: cargo run --release -p oxmcp-bench --example session_heap -- 127.0.0.1:18099 30
//!
//! Where an idle session's memory goes: the SDK's echo server over Streamable HTTP (as in
//! `bench/compare`'s `ours_echo`), under dhat's heap profiler, for the given seconds. Open
//! sessions meanwhile (`oxmcp-bench URL --idle-sessions 1000 --server-pid PID`, whose first
//! phase keeps its bare sessions open past the end of this run if it is given fewer seconds
//! than it needs; or any client). At the end the server writes `dhat-heap.json`, whose "at
//! t-end" figures are what the sessions still held: open it in dhat's viewer, or sum it by
//! allocation site with `scripts/heap_sites.py dhat-heap.json`.

use std::time::Duration;

use oxmcp_server::{Ctx, Server};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to echo back.
    message: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:18099".to_owned());
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    let profiler = dhat::Profiler::new_heap();
    let server = Server::builder("ours-echo", "1.0.0")
        .tool(
            "echo",
            "Echoes the message back",
            |_ctx: Ctx, a: Echo| async move { Ok::<_, String>(a.message) },
        )
        .build()
        .map_err(std::io::Error::other)?;
    let http = oxmcp_http::StreamableHttp::new(server, oxmcp_http::HttpConfig::default());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("serving on http://{addr}/mcp for {secs} s");
    axum::serve(listener, http.router())
        .with_graceful_shutdown(tokio::time::sleep(Duration::from_secs(secs)))
        .await?;
    // The sessions live on in `http`: the profile ends while they are still held.
    drop(profiler);
    drop(http);
    Ok(())
}

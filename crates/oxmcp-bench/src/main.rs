//! `oxmcp-bench` (not published): the load generator of this repository. Checked tool calls per
//! second and latency of any MCP server (stdio, Streamable HTTP, WebSocket, gRPC), bursts of
//! new sessions, the memory an idle session costs, cold starts of a stdio server.
//! Imports oxmcp-client, oxmcp-http, oxmcp-remote, oxmcp-transport and oxmcp-types; nothing
//! imports it.
//!
//! It was `oxmcp bench`; its command line is the same: `oxmcp-bench ARGS` (see [`args`]).
//! The floor servers it measures against are its examples (`bare_echo`, `bare_http`,
//! `bare_ws`, `bare_grpc`), and its criterion benches (`benches/core.rs`) time the library's
//! hot path step by step.

mod args;
mod burst;
mod calls;
mod check;
mod client;
mod cold;
mod idle;
mod lean;
mod lean_grpc;
mod lean_stdio;
mod lean_ws;
mod relay;
mod run;
mod stats;
mod target;
mod wire;

/// mimalloc, as in the `oxmcp` binary: the driver's own cost stays what it was there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = args::BenchArgs::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    // One thread: the raw driver's figures are those of one core (the report says so).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move { run::run(args.plan()?).await });
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

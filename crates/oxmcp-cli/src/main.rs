//! `oxmcp` (crate `oxmcp-cli`): serve the demo server or a gateway, list and call tools on any
//! server, inspect one in the browser (`oxmcp inspect`). (The load generator is another binary of the workspace, `oxmcp-bench`.)
//! The top of the stack. Imports oxmcp, oxmcp-auth, oxmcp-client, oxmcp-engine, oxmcp-gateway,
//! oxmcp-grpc, oxmcp-http, oxmcp-jsonrpc, oxmcp-remote, oxmcp-server, oxmcp-store,
//! oxmcp-store-postgres, oxmcp-store-redis, oxmcp-transport, oxmcp-types and oxmcp-ws.

mod about;
mod auth;
mod cli;
mod client_side;
mod commands;
mod demo;
mod demo_state;
mod elicit;
mod gateway;
mod host_config;
mod inspect;
mod inspector;
mod limits;
mod listen;
mod logging;
mod login;
mod mcp_servers;
mod nofollow;
mod operate;
mod progress;
mod protect;
mod reload;
mod sampling;
mod serve;
mod skills;
mod store;
mod target;
mod tasks;

/// mimalloc: more calls per second and smaller idle sessions than the system allocator (see
/// the README's performance section); the `mimalloc` feature, on by default.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use crate::cli::{Cli, Command};
pub(crate) use crate::cli::{ResponseModeArg, parse_duration};
pub(crate) use crate::commands::call_error;

fn main() -> std::process::ExitCode {
    let cli = cli::try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let audit = matches!(&cli.command, Command::Serve(args) if args.operate.audit);
    match logging::from_env(cli.global.log_format) {
        Ok(format) => logging::init(format, audit),
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    // One thread serves a stdio connection with the least latency (no cross-thread wake-ups).
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
    let outcome = runtime.block_on(run(cli));
    // Do not wait for a blocking stdin read that may never return.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Inspect(args) => inspector::run(*args).await,
        Command::Tools {
            url,
            json,
            auth,
            server,
        } => commands::tools(url, json, auth, server).await,
        Command::Call {
            words,
            auth,
            arg,
            json,
            timeout,
            server,
            task,
        } => commands::call(words, auth, arg, json, timeout, server, task).await,
        Command::Resources { url, reach } => inspect::resources(url, reach).await,
        Command::Read { words, reach } => inspect::read(words, reach).await,
        Command::Prompts { url, reach } => inspect::prompts(url, reach).await,
        Command::Prompt { words, arg, reach } => inspect::prompt(words, arg, reach).await,
        Command::Ping { url, reach } => inspect::ping(url, reach).await,
        Command::Skills(args) => skills::run(*args).await,
        Command::Tasks(args) => tasks::run(*args).await,
        Command::Info { url, reach } => about::info(url, reach).await,
        Command::Complete {
            words,
            prompt,
            resource,
            context,
            reach,
        } => {
            let args = about::CompleteArgs {
                words,
                prompt,
                resource,
                context,
            };
            about::complete(args, reach).await
        }
        Command::Listen {
            url,
            resources,
            log_level,
            reach,
        } => listen::listen(url, resources, log_level, reach).await,
        Command::Login(args) => login::login(*args).await,
        Command::Logout { url } => login::logout(&url),
        Command::Config(args) => host_config::run(&args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "oxmcp", &mut std::io::stdout());
            Ok(())
        }
    }
}

//! `oxmcp config claude|cursor|vscode [--name NAME] [SERVE ARGS...] [-- CMD...]`: prints the
//! JSON entry a host needs to launch `oxmcp serve --stdio SERVE ARGS [-- CMD]` (the demo
//! server, a gateway with `--config`, a bridge to a remote server with `--upstream` or to a
//! stdio command after `--`), with this executable's absolute path as the command. The
//! arguments are checked as `oxmcp serve` would take them before anything is printed.

use anyhow::Context;
use serde_json::json;

/// The hosts whose server lists `oxmcp config` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Host {
    /// Claude Desktop's `claude_desktop_config.json` (`mcpServers`).
    Claude,
    /// Cursor's `mcp.json` (`mcpServers`).
    Cursor,
    /// VS Code's `.vscode/mcp.json` (`servers`, with `type`).
    Vscode,
}

/// The arguments of `oxmcp config`.
#[derive(Debug, clap::Args)]
pub(crate) struct HostConfigArgs {
    /// The host whose format to print.
    #[arg(value_enum)]
    pub(crate) host: Host,
    /// The server's name in the host's list.
    #[arg(long, default_value = "oxmcp")]
    pub(crate) name: String,
    /// Arguments of `oxmcp serve` for the host to run it with (`--stdio` is added); use
    /// absolute paths, the host's working directory is its own.
    #[arg(allow_hyphen_values = true, value_name = "SERVE_ARGS")]
    pub(crate) serve: Vec<String>,
    /// A stdio server for oxmcp to bridge: its command and arguments.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// The `args` of the host's entry: `serve --stdio`, the serve arguments, `--` and the command.
fn serve_args(args: &HostConfigArgs) -> Vec<String> {
    let mut out = vec!["serve".to_owned()];
    if !args.serve.iter().any(|a| a == "--stdio") {
        out.push("--stdio".to_owned());
    }
    out.extend(args.serve.iter().cloned());
    if !args.command.is_empty() {
        out.push("--".to_owned());
        out.extend(args.command.iter().cloned());
    }
    out
}

/// The host's JSON for one server `name` launched as `program args`.
fn entry(host: Host, name: &str, program: &str, args: &[String]) -> serde_json::Value {
    match host {
        Host::Claude | Host::Cursor => json!({
            "mcpServers": { name: { "command": program, "args": args } }
        }),
        Host::Vscode => json!({
            "servers": { name: { "type": "stdio", "command": program, "args": args } }
        }),
    }
}

/// Runs `oxmcp config`.
pub(crate) fn run(args: &HostConfigArgs) -> anyhow::Result<()> {
    let serve = serve_args(args);
    // The host would only find out when it starts the server: check now.
    let argv = std::iter::once("oxmcp".to_owned()).chain(serve.iter().cloned());
    if let Err(e) = crate::cli::try_parse_from(argv) {
        anyhow::bail!("these are not arguments of `oxmcp serve --stdio`:\n{e}");
    }
    let program = std::env::current_exe().context("cannot find this executable's path")?;
    let program = program.to_string_lossy();
    let json = entry(args.host, &args.name, &program, &serve);
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Host, HostConfigArgs, entry, serve_args};

    #[test]
    fn the_entry_launches_oxmcp_serve_over_stdio_in_each_hosts_format() {
        let args = HostConfigArgs {
            host: Host::Claude,
            name: "gh".into(),
            serve: vec!["--max-body".into(), "1MiB".into()],
            command: vec!["npx".into(), "-y".into(), "server".into()],
        };
        let argv = serve_args(&args);
        assert_eq!(
            argv,
            [
                "serve",
                "--stdio",
                "--max-body",
                "1MiB",
                "--",
                "npx",
                "-y",
                "server"
            ]
        );
        let claude = entry(Host::Claude, "gh", "/bin/oxmcp", &argv);
        assert_eq!(claude["mcpServers"]["gh"]["command"], "/bin/oxmcp");
        assert_eq!(claude["mcpServers"]["gh"]["args"][1], "--stdio");
        let vscode = entry(Host::Vscode, "gh", "/bin/oxmcp", &argv);
        assert_eq!(vscode["servers"]["gh"]["type"], "stdio");
        let given = HostConfigArgs {
            serve: vec!["--stdio".into()],
            command: Vec::new(),
            ..args
        };
        assert_eq!(serve_args(&given), ["serve", "--stdio"], "not twice");
    }
}

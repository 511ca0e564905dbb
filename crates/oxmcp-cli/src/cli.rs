//! The command line: every command, its arguments and its help.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::{auth, inspect, serve};

#[derive(Parser)]
#[command(name = "oxmcp", version, about = ABOUT)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

const ABOUT: &str = "Serve and call Model Context Protocol servers";

/// The options every command takes.
#[derive(Args)]
pub(crate) struct Global {
    /// How log lines on stderr are written: text, or one JSON object per line [default:
    /// MCP_LOG_FORMAT, else text]. MCP_LOG sets what is logged (default: warn).
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub(crate) log_format: Option<crate::logging::LogFormat>,
}

/// Parses a command line (`argv[0]` first). `oxmcp serve ...`, the command hosts and
/// deployments start, is parsed by a parser that has only `serve` in it: building every
/// command's arguments and help first was a fifth of a start's instructions (callgrind: 0.6
/// of 2.8 million, 0.2 of it `serve`'s own; 2.35 million in all with `serve` alone). Both
/// parsers take `serve`'s arguments from the same types, and a test holds their help and
/// errors equal.
///
/// # Errors
/// What clap says of arguments it cannot parse, `--help` and `--version` included.
pub(crate) fn try_parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    if argv.get(1).is_some_and(|a| a == "serve") {
        let ServeCli { global, command } = ServeCli::try_parse_from(argv)?;
        let ServeOnly::Serve(args) = command;
        return Ok(Cli {
            global,
            command: Command::Serve(args),
        });
    }
    Cli::try_parse_from(argv)
}

/// [`Cli`] with `serve` as its only command.
#[derive(Parser)]
#[command(name = "oxmcp", version, about = ABOUT)]
struct ServeCli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: ServeOnly,
}

#[derive(Subcommand)]
enum ServeOnly {
    #[command(about = SERVE_ABOUT, after_help = SERVE_EXAMPLES)]
    Serve(Box<serve::ServeArgs>),
}

const SERVE_ABOUT: &str = "Serve the built-in demo server, a gateway (--config), or a bridge to \
    one stdio server (-- CMD) or remote server (--upstream URL), over Streamable HTTP (default \
    127.0.0.1:8080/mcp, with HTTP+SSE, WebSocket and gRPC beside it) or stdio";
const SERVE_EXAMPLES: &str = "Examples:\n  oxmcp serve\n  oxmcp serve --listen 127.0.0.1:9000\n  oxmcp serve --stdio\n  oxmcp serve --config mcp.toml\n  oxmcp serve --listen 127.0.0.1:9000 -- npx -y some-stdio-server\n  oxmcp serve --stdio --upstream https://example.com/mcp --upstream-bearer-file ~/.token";

#[derive(Subcommand)]
pub(crate) enum Command {
    #[command(about = SERVE_ABOUT, after_help = SERVE_EXAMPLES)]
    Serve(Box<serve::ServeArgs>),
    /// List the tools of a server (a URL, or a stdio command after --).
    #[command(
        after_help = "Examples:\n  oxmcp tools http://127.0.0.1:8080/mcp\n  oxmcp tools -- oxmcp serve --stdio"
    )]
    Tools {
        /// Streamable HTTP endpoint URL.
        url: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        auth: auth::Auth,
        /// The server command and its arguments.
        #[arg(last = true)]
        server: Vec<String>,
    },
    /// Call a tool on a server: `oxmcp call [URL] TOOL [JSON]` or `oxmcp call TOOL [JSON] -- CMD`.
    #[command(
        after_help = "Examples:\n  oxmcp call http://127.0.0.1:8080/mcp echo '{\"message\":\"hi\"}'\n  oxmcp call echo '{\"message\":\"hi\"}' -- oxmcp serve --stdio\n  oxmcp call add -a a=1 -a b=2 -- oxmcp serve --stdio"
    )]
    Call {
        /// [URL] TOOL [JSON arguments].
        #[arg(num_args = 1..=3, required = true)]
        words: Vec<String>,
        #[command(flatten)]
        auth: auth::Auth,
        /// One argument as key=value (value parsed as JSON if it can be, else a string).
        #[arg(short = 'a', long = "arg")]
        arg: Vec<String>,
        /// Print the raw result as JSON.
        #[arg(long)]
        json: bool,
        /// Seconds to wait without a response or progress.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        #[command(flatten)]
        task: crate::tasks::TaskFlags,
        /// The server command and its arguments.
        #[arg(last = true)]
        server: Vec<String>,
    },
    /// List the resources and resource templates of a server.
    #[command(
        after_help = "Examples:\n  oxmcp resources http://127.0.0.1:8080/mcp\n  oxmcp resources --json -- oxmcp serve --stdio"
    )]
    Resources {
        /// Streamable HTTP endpoint URL.
        url: Option<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Read a resource: `oxmcp read [URL] URI` or `oxmcp read URI -- CMD`.
    #[command(
        after_help = "Examples:\n  oxmcp read http://127.0.0.1:8080/mcp demo://readme\n  oxmcp read demo://readme -- oxmcp serve --stdio"
    )]
    Read {
        /// [URL] URI.
        #[arg(num_args = 1..=2, required = true)]
        words: Vec<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// List the prompts of a server (required arguments plain, optional ones in brackets).
    #[command(
        after_help = "Examples:\n  oxmcp prompts http://127.0.0.1:8080/mcp\n  oxmcp prompts -- oxmcp serve --stdio"
    )]
    Prompts {
        /// Streamable HTTP endpoint URL.
        url: Option<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Get a prompt: `oxmcp prompt [URL] NAME -a key=value ...`.
    #[command(
        after_help = "Examples:\n  oxmcp prompt http://127.0.0.1:8080/mcp greet -a name=Ada\n  oxmcp prompt greet -a name=Ada -- oxmcp serve --stdio"
    )]
    Prompt {
        /// [URL] NAME.
        #[arg(num_args = 1..=2, required = true)]
        words: Vec<String>,
        /// One argument as key=value (repeatable).
        #[arg(short = 'a', long = "arg")]
        arg: Vec<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Check that a server answers: connect, `ping`, report the round trip.
    #[command(
        after_help = "Examples:\n  oxmcp ping http://127.0.0.1:8080/mcp\n  MCP_BEARER=TOKEN oxmcp ping https://example.com/mcp\n  oxmcp ping --bearer-file ~/.config/oxmcp/token https://example.com/mcp\n  oxmcp ping -- oxmcp serve --stdio"
    )]
    Ping {
        /// Streamable HTTP endpoint URL.
        url: Option<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Open a web inspector of a server (a URL, or a stdio command after --): its tools,
    /// resources, prompts, tasks and skills, the server's requests answered at the page, and
    /// every message both ways. Served on 127.0.0.1 behind a one-time token.
    #[command(
        after_help = "Examples:\n  oxmcp inspect http://127.0.0.1:8080/mcp\n  oxmcp inspect --era legacy --no-open http://127.0.0.1:8080/mcp\n  oxmcp inspect -- oxmcp serve --stdio"
    )]
    Inspect(Box<crate::inspector::InspectArgs>),
    /// Work on a server's tasks by id: `oxmcp tasks list|get|cancel|wait [URL] [ID]`.
    #[command(
        after_help = "Examples:\n  oxmcp call http://127.0.0.1:8080/mcp slow '{\"steps\":20,\"delay_ms\":500}' --task\n  oxmcp tasks list http://127.0.0.1:8080/mcp\n  oxmcp tasks get http://127.0.0.1:8080/mcp 3f2a...\n  oxmcp tasks cancel http://127.0.0.1:8080/mcp 3f2a...\n  oxmcp tasks wait http://127.0.0.1:8080/mcp 3f2a..."
    )]
    Tasks(Box<crate::tasks::TasksArgs>),
    /// List a server's skills (SEP-2640), or load one verified: `oxmcp skills [URL] [NAME]`.
    #[command(
        after_help = "Examples:\n  oxmcp skills http://127.0.0.1:8080/mcp\n  oxmcp skills http://127.0.0.1:8080/mcp pdf-processing\n  oxmcp skills http://127.0.0.1:8080/mcp pdf-processing --out ./pdf-processing\n  oxmcp skills --json -- oxmcp serve --stdio --skills ./skills"
    )]
    Skills(Box<crate::skills::SkillsArgs>),
    /// Show who a server is: name, version and title, the protocol version and era, the
    /// versions it supports (2026-07-28 servers), its capabilities and instructions.
    #[command(
        after_help = "Examples:\n  oxmcp info http://127.0.0.1:8080/mcp\n  oxmcp info --json --era legacy http://127.0.0.1:8080/mcp\n  oxmcp info -- oxmcp serve --stdio"
    )]
    Info {
        /// The server's URL.
        url: Option<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Complete a prompt argument or a resource template variable:
    /// `oxmcp complete [URL] (--prompt NAME | --resource TEMPLATE) ARG VALUE`.
    #[command(
        after_help = "Examples:\n  oxmcp complete http://127.0.0.1:8080/mcp --prompt greet name A\n  oxmcp complete --resource 'demo://greeting/{name}' name G -- oxmcp serve --stdio\n  oxmcp complete --prompt summarize style b --context text=hello --json -- oxmcp serve --stdio"
    )]
    Complete {
        /// [URL] ARG VALUE: the argument's name and what is typed so far.
        #[arg(required = true)]
        words: Vec<String>,
        /// The prompt whose argument this is.
        #[arg(long, value_name = "NAME", required_unless_present = "resource")]
        prompt: Option<String>,
        /// The resource template (its URI template) whose variable this is.
        #[arg(long, value_name = "TEMPLATE_URI", conflicts_with = "prompt")]
        resource: Option<String>,
        /// An argument already given, key=value (repeatable).
        #[arg(long, value_name = "KEY=VALUE")]
        context: Vec<String>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Print resource updates, list changes and log messages as they arrive, until Ctrl-C.
    #[command(
        after_help = "Examples:\n  oxmcp listen http://127.0.0.1:8080/mcp --resource demo://readme --log-level info\n  oxmcp listen --era modern --resource demo://readme http://127.0.0.1:8080/mcp\n  oxmcp listen --json -- oxmcp serve --stdio\n\n2026-07-28 servers send log messages only within requests, so a listener in that era sees\nresource updates and list changes only."
    )]
    Listen {
        /// The server's URL.
        url: Option<String>,
        /// Subscribe to this resource's updates (repeatable).
        #[arg(long = "resource", value_name = "URI")]
        resources: Vec<String>,
        /// Ask for log messages at this level and above (debug, info, notice, warning, error,
        /// critical, alert, emergency).
        #[arg(long, value_name = "LEVEL", value_parser = crate::listen::parse_level)]
        log_level: Option<oxmcp_types::LoggingLevel>,
        #[command(flatten)]
        reach: inspect::Reach,
    },
    /// Log in to an OAuth-protected server (browser flow); the client commands then use the
    /// stored tokens, refreshing them as needed.
    #[command(
        after_help = "Examples:\n  oxmcp login https://mcp.example.com/mcp\n  oxmcp login --no-browser https://mcp.example.com/mcp\n  oxmcp login --client-id my-app --scope mcp:read https://mcp.example.com/mcp"
    )]
    Login(Box<crate::login::LoginArgs>),
    /// Remove the tokens `oxmcp login` stored for a server.
    #[command(after_help = "Examples:\n  oxmcp logout https://mcp.example.com/mcp")]
    Logout {
        /// The MCP server's URL.
        url: String,
    },
    /// Print the JSON a host (Claude Desktop, Cursor, VS Code) needs to launch a server
    /// through oxmcp: `oxmcp serve --stdio` with these arguments, or bridging the command
    /// after `--`.
    #[command(
        after_help = "Examples:\n  oxmcp config claude\n  oxmcp config cursor --name files -- npx -y @modelcontextprotocol/server-filesystem /home/me\n  oxmcp config vscode --name remote --upstream https://mcp.example.com/mcp --upstream-login\n  oxmcp config claude --name gw --config /etc/oxmcp/mcp.toml"
    )]
    Config(Box<crate::host_config::HostConfigArgs>),
    /// Print a shell completion script.
    #[command(
        after_help = "Examples:\n  oxmcp completions bash > ~/.local/share/bash-completion/completions/oxmcp\n  oxmcp completions zsh > ~/.zfunc/_oxmcp\n  oxmcp completions fish > ~/.config/fish/completions/oxmcp.fish"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `--response-mode` of `oxmcp serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ResponseModeArg {
    /// JSON unless the handler streams notifications or requests.
    Auto,
    /// Always JSON.
    Json,
    /// Always SSE.
    Sse,
}

impl From<ResponseModeArg> for oxmcp_http::ResponseMode {
    fn from(m: ResponseModeArg) -> Self {
        match m {
            ResponseModeArg::Auto => oxmcp_http::ResponseMode::Auto,
            ResponseModeArg::Json => oxmcp_http::ResponseMode::Json,
            ResponseModeArg::Sse => oxmcp_http::ResponseMode::Sse,
        }
    }
}

/// `10s`, `500ms`, `2m` or plain seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 10s, 500ms, 2m or 1h"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit {unit:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// What the full parser makes of `argv`: the `serve` arguments it parsed, or its error.
    fn full(argv: &[&str]) -> Result<String, (clap::error::ErrorKind, String)> {
        outcome(Cli::try_parse_from(argv))
    }

    fn fast(argv: &[&str]) -> Result<String, (clap::error::ErrorKind, String)> {
        outcome(try_parse_from(argv))
    }

    fn outcome(
        parsed: Result<Cli, clap::Error>,
    ) -> Result<String, (clap::error::ErrorKind, String)> {
        match parsed {
            Ok(Cli {
                global,
                command: Command::Serve(args),
            }) => Ok(format!("{:?} {args:?}", global.log_format)),
            Ok(_) => Ok("another command".into()),
            Err(e) => Err((e.kind(), e.render().to_string())),
        }
    }

    /// `oxmcp serve ...` through the parser that knows only `serve` gives what the full one
    /// gives: the same arguments, help, usage and errors (suggestions included).
    #[test]
    fn the_serve_parser_answers_as_the_full_one() {
        let cases: &[&[&str]] = &[
            &["oxmcp", "serve"],
            &["oxmcp", "serve", "--stdio"],
            &[
                "oxmcp",
                "serve",
                "--listen",
                "127.0.0.1:9000",
                "--log-format",
                "json",
            ],
            &[
                "oxmcp",
                "serve",
                "--stdio",
                "--",
                "npx",
                "-y",
                "some-server",
            ],
            &["oxmcp", "serve", "--help"],
            &["oxmcp", "serve", "-h"],
            &["oxmcp", "serve", "--version"],
            &["oxmcp", "serve", "--lisen", "127.0.0.1:1"],
            &["oxmcp", "serve", "--listen"],
            &["oxmcp", "serve", "--response-mode", "xml"],
            &["oxmcp", "serve", "extra"],
        ];
        for argv in cases {
            let (a, b) = (full(argv), fast(argv));
            assert_eq!(a, b, "{argv:?}");
        }
        assert!(fast(&["oxmcp", "serve", "--stdio"]).is_ok());
        assert!(fast(&["oxmcp", "serve", "--lisen", "x"]).is_err());
        // Other commands still go through the full parser.
        assert_eq!(
            fast(&["oxmcp", "tools", "--help"]),
            full(&["oxmcp", "tools", "--help"])
        );
        assert_eq!(fast(&["oxmcp", "--help"]), full(&["oxmcp", "--help"]));
    }

    /// The two parsers' `serve` commands render the same long help.
    #[test]
    fn the_serve_parser_has_the_same_help() {
        let mut full = Cli::command();
        let mut fast = ServeCli::command();
        let help = |c: &mut clap::Command| {
            c.build();
            c.find_subcommand_mut("serve")
                .map(|s| s.render_long_help().to_string())
        };
        let (a, b) = (help(&mut full), help(&mut fast));
        assert!(
            a.as_deref().is_some_and(|h| h.contains("--listen")),
            "{a:?}"
        );
        assert_eq!(a, b);
    }
}

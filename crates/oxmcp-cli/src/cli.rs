//! The command line: every command, its arguments and its help.

use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::{auth, inspect, serve};

#[derive(Parser)]
#[command(
    name = "oxmcp",
    version,
    about = "Serve, call and benchmark Model Context Protocol servers"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Serve the built-in demo server, a gateway (--config), or a bridge to one stdio server
    /// (-- CMD) or remote server (--upstream URL), over Streamable HTTP (default
    /// 127.0.0.1:8080/mcp, with HTTP+SSE, WebSocket and gRPC beside it) or stdio.
    #[command(
        after_help = "Examples:\n  oxmcp serve\n  oxmcp serve --listen 127.0.0.1:9000\n  oxmcp serve --stdio\n  oxmcp serve --config mcp.toml\n  oxmcp serve --listen 127.0.0.1:9000 -- npx -y some-stdio-server\n  oxmcp serve --stdio --upstream https://example.com/mcp --upstream-bearer-file ~/.token"
    )]
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
    /// Print a shell completion script.
    #[command(
        after_help = "Examples:\n  oxmcp completions bash > ~/.local/share/bash-completion/completions/oxmcp\n  oxmcp completions zsh > ~/.zfunc/_oxmcp\n  oxmcp completions fish > ~/.config/fish/completions/oxmcp.fish"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Benchmark a server with checked tool calls: sequential and pipelined on one stdio
    /// connection, or N HTTP connections calling at once (a session each, one shared session,
    /// or stateless 2026-07-28), or a burst of new sessions. Every answer is checked (id and
    /// result; for `echo` the text must be the message that call sent, and each call sends
    /// another); a phase with errors prints them instead of a rate, and the exit code is 1.
    #[command(
        after_help = "Examples:\n  oxmcp bench --requests 50000 -- oxmcp serve --stdio\n  oxmcp bench http://127.0.0.1:8080/mcp --clients 64 --duration 5s\n  oxmcp bench http://127.0.0.1:8080/mcp --clients 64 --session shared --duration 5s\n  oxmcp bench http://127.0.0.1:8080/mcp --clients 64 --era modern --duration 5s\n  oxmcp bench http://127.0.0.1:8080/mcp --burst 2000\n  oxmcp bench http://127.0.0.1:8080/mcp --idle-sessions 1000 --server-pid 1234\n  oxmcp bench --pipeline --window 256 --requests 100000 -- oxmcp serve --stdio\n  oxmcp bench --cold-start 50 -- oxmcp serve --stdio\n  oxmcp bench --expect hello -- ./canned_server   (a server answering one fixed text)"
    )]
    Bench(Box<BenchArgs>),
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

/// `--driver` of `oxmcp bench`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DriverArg {
    /// JSON-RPC POSTed straight over hyper, every answer decoded and checked (HTTP only).
    Raw,
    /// The SDK's Client.
    Client,
}

/// `--session` of `oxmcp bench`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SessionArg {
    /// A session per connection.
    Each,
    /// One session shared by all connections.
    Shared,
}

/// Phases of `oxmcp bench`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BenchMode {
    /// One call at a time.
    Sequential,
    /// Up to `--window` calls in flight.
    Pipelined,
    /// Both, sequential first.
    Both,
}

/// The arguments of `oxmcp bench`.
#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// Streamable HTTP endpoint URL.
    pub(crate) url: Option<String>,
    /// Connections calling at once (each one call at a time).
    #[arg(long, visible_alias = "concurrency", default_value_t = 1)]
    pub(crate) clients: usize,
    /// Run each phase for this long instead of a number of requests (`10s`, `500ms`, `2m`).
    #[arg(long, value_parser = parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Who sends the requests: raw (JSON-RPC POSTed over hyper; the default for URLs) or
    /// client (the SDK's Client; always for stdio).
    #[arg(long, value_enum)]
    pub(crate) driver: Option<DriverArg>,
    /// Sessions of the raw driver's connections (legacy era): each (a session per
    /// connection) or shared (one session, all connections calling in it).
    #[arg(long, value_enum, default_value_t = SessionArg::Each)]
    pub(crate) session: SessionArg,
    /// Open this many sessions at once (initialize + initialized, a connection each)
    /// instead of calling; refusals are errors.
    #[arg(long, conflicts_with_all = ["idle_sessions", "duration"])]
    pub(crate) burst: Option<usize>,
    /// The text every result must hold (default: for `echo` with a string `message`,
    /// the message each call sent; for other tools, any result without isError).
    #[arg(long)]
    pub(crate) expect: Option<String>,
    /// Open this many sessions, leave them idle, and report the server's RSS per session
    /// (needs --server-pid).
    #[arg(long)]
    pub(crate) idle_sessions: Option<usize>,
    /// Start the stdio server this many times, one after another, and report the time from
    /// spawn to `initialize` answered and the RSS after its first `tools/call`.
    #[arg(long, conflicts_with_all = ["idle_sessions", "burst", "duration", "url"])]
    pub(crate) cold_start: Option<usize>,
    /// Pid of the server, for RSS and CPU figures of an HTTP target.
    #[arg(long)]
    pub(crate) server_pid: Option<u32>,
    /// Another endpoint of the same deployment (an instance sharing the store); repeat for
    /// more. Each connection's calls go to URL and these in turn, so a session opened on
    /// one instance is used on all of them (raw driver).
    #[arg(long = "also", value_name = "URL")]
    pub(crate) also: Vec<String>,
    /// Protocol era to speak: legacy (initialize), modern (2026-07-28) or auto.
    #[arg(long, default_value = "legacy")]
    pub(crate) era: oxmcp_client::EraChoice,
    /// Tool to call.
    #[arg(long, default_value = "echo")]
    pub(crate) tool: String,
    /// Read this resource on each call instead of calling a tool (client driver). Every
    /// answer must be the same as the first (its text or blob, hashed).
    #[arg(long, value_name = "URI")]
    pub(crate) read: Option<String>,
    /// The encoding of the client's messages: JSON, or the protobuf form (Streamable HTTP
    /// bodies and SSE events, gRPC envelopes).
    #[arg(long, value_enum, default_value_t = crate::auth::Encoding::Json)]
    pub(crate) encoding: crate::auth::Encoding,
    /// Also count the bytes on the wire: the connections go through a counting TCP relay,
    /// and the report gives bytes per call each way (connection setup excluded). The relay
    /// costs time, so take rates from a run without it.
    #[arg(long)]
    pub(crate) wire: bool,
    /// Tool arguments (JSON object); a string `message` gets `-<n>` appended per call.
    #[arg(long, default_value = r#"{"message":"hello"}"#)]
    pub(crate) args: String,
    /// Number of calls per phase.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) requests: usize,
    /// Calls in flight at once in the pipelined phase.
    #[arg(long, default_value_t = 1024)]
    pub(crate) window: usize,
    /// Which phases to run (one client connection, SDK client driver).
    #[arg(long, value_enum, default_value_t = BenchMode::Both)]
    pub(crate) mode: BenchMode,
    /// Only the pipelined phase (`--mode pipelined`): up to `--window` calls in flight.
    #[arg(long, conflicts_with = "mode")]
    pub(crate) pipeline: bool,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// The server command and its arguments.
    #[arg(last = true)]
    pub(crate) server: Vec<String>,
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

//! The command line of `oxmcp-bench` (the flags `oxmcp bench` took), and the [`Plan`] it
//! makes.

use std::time::Duration;

use anyhow::{Context, bail};
use oxmcp_types::JsonObject;
use serde_json::Value;

use crate::run::{Driver, Expect, Payload, Plan, Read};
use crate::target::{Target, is_stream_url};

/// Benchmark a server with checked tool calls: sequential and pipelined on one stdio
/// connection, or N HTTP connections calling at once (a session each, one shared session,
/// or stateless 2026-07-28), or a burst of new sessions. Every answer is checked (id and
/// result; for `echo` the text must be the message that call sent, and each call sends
/// another); a phase with errors prints them instead of a rate, and the exit code is 1.
#[derive(clap::Parser)]
#[command(
    name = "oxmcp-bench",
    version,
    after_help = "Examples:\n  oxmcp-bench --requests 50000 -- oxmcp serve --stdio\n  oxmcp-bench http://127.0.0.1:8080/mcp --clients 64 --duration 5s\n  oxmcp-bench http://127.0.0.1:8080/mcp --clients 64 --session shared --duration 5s\n  oxmcp-bench http://127.0.0.1:8080/mcp --clients 64 --era modern --duration 5s\n  oxmcp-bench http://127.0.0.1:8080/mcp --burst 2000\n  oxmcp-bench http://127.0.0.1:8080/mcp --idle-sessions 1000 --server-pid 1234\n  oxmcp-bench --pipeline --window 256 --requests 100000 -- oxmcp serve --stdio\n  oxmcp-bench --cold-start 50 -- oxmcp serve --stdio\n  oxmcp-bench --expect hello -- ./canned_server   (a server answering one fixed text)"
)]
pub(crate) struct BenchArgs {
    /// Streamable HTTP endpoint URL.
    url: Option<String>,
    /// Connections calling at once (each one call at a time).
    #[arg(long, visible_alias = "concurrency", default_value_t = 1)]
    clients: usize,
    /// Run each phase for this long instead of a number of requests (`10s`, `500ms`, `2m`).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Who sends the requests: raw (the driver's own lean HTTP/1.1, WebSocket frames for
    /// `ws://`, HTTP/2 gRPC messages for `grpc://`, or lines on a stdio server's pipes; the
    /// default for http:// URLs) or client (the SDK's Client; the default for stdio, ws://
    /// and grpc://).
    #[arg(long, value_enum)]
    driver: Option<DriverArg>,
    /// Sessions of the raw driver's connections (legacy era): each (a session per
    /// connection) or shared (one session, all connections calling in it).
    #[arg(long, value_enum, default_value_t = SessionArg::Each)]
    session: SessionArg,
    /// Open this many sessions at once (initialize + initialized, a connection each)
    /// instead of calling; refusals are errors.
    #[arg(long, conflicts_with_all = ["idle_sessions", "duration"])]
    burst: Option<usize>,
    /// The text every result must hold (default: for `echo` with a string `message`,
    /// the message each call sent; for other tools, any result without isError).
    #[arg(long)]
    expect: Option<String>,
    /// Open this many sessions, leave them idle, and report the server's RSS per session
    /// (needs --server-pid): sessions with no stream open are read again after 8 s idle,
    /// once a server that parks idle sessions has parked them, and then as many more are
    /// opened on top and read once idle as long (what each further idle session adds).
    #[arg(long)]
    idle_sessions: Option<usize>,
    /// Start the stdio server this many times, one after another, and report the time from
    /// spawn to `initialize` answered and the RSS after its first `tools/call`.
    #[arg(long, conflicts_with_all = ["idle_sessions", "burst", "duration", "url"])]
    cold_start: Option<usize>,
    /// With --cold-start: run each server on this CPU alone. The driver pins its own thread
    /// to it for the spawn and goes back to its CPUs right after, so the server is pinned
    /// from its first instruction and no launcher (`taskset -c N server`, whose own exec
    /// would be timed with every start) stands in between.
    #[arg(long, value_name = "CPU", requires = "cold_start")]
    server_cpu: Option<usize>,
    /// Pid of the server, for RSS and CPU figures of an HTTP target.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Another endpoint of the same deployment (an instance sharing the store); repeat for
    /// more. Each connection's calls go to URL and these in turn, so a session opened on
    /// one instance is used on all of them (raw driver).
    #[arg(long = "also", value_name = "URL")]
    also: Vec<String>,
    /// Protocol era to speak: legacy (initialize), modern (2026-07-28) or auto.
    #[arg(long, default_value = "legacy")]
    era: oxmcp_client::EraChoice,
    /// Tool to call.
    #[arg(long, default_value = "echo")]
    tool: String,
    /// Read this resource on each call instead of calling a tool (client driver). Every
    /// answer must be the same as the first (its text or blob, compared byte for byte).
    #[arg(long, value_name = "URI")]
    read: Option<String>,
    /// The encoding of the client's messages: JSON, or the protobuf form (Streamable HTTP
    /// bodies and SSE events, gRPC envelopes).
    #[arg(long, value_enum, default_value_t = Encoding::Json)]
    encoding: Encoding,
    /// Also count the bytes on the wire: the connections go through a counting TCP relay,
    /// and the report gives bytes per call each way (connection setup excluded). The relay
    /// costs time, so take rates from a run without it.
    #[arg(long)]
    wire: bool,
    /// Tool arguments (JSON object); a string `message` gets `-<n>` appended per call.
    #[arg(long, default_value = r#"{"message":"hello"}"#)]
    args: String,
    /// Number of calls per phase.
    #[arg(long, default_value_t = 10_000)]
    requests: usize,
    /// Calls in flight at once in the pipelined phase.
    #[arg(long, default_value_t = 1024)]
    window: usize,
    /// Which phases to run (one client connection, SDK client driver).
    #[arg(long, value_enum, default_value_t = BenchMode::Both)]
    mode: BenchMode,
    /// Only the pipelined phase (`--mode pipelined`): up to `--window` calls in flight.
    #[arg(long, conflicts_with = "mode")]
    pipeline: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// The server command and its arguments.
    #[arg(last = true)]
    server: Vec<String>,
}

/// `--driver`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DriverArg {
    /// The driver's own lean HTTP/1.1 (http://), WebSocket frames (ws://) or HTTP/2 gRPC
    /// messages (grpc://), every answer checked.
    Raw,
    /// The SDK's Client.
    Client,
}

/// `--session`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SessionArg {
    /// A session per connection.
    Each,
    /// One session shared by all connections.
    Shared,
}

/// `--mode`: the phases of one client connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BenchMode {
    /// One call at a time.
    Sequential,
    /// Up to `--window` calls in flight.
    Pipelined,
    /// Both, sequential first.
    Both,
}

/// `--encoding`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// JSON text.
    Json,
    /// The protobuf form (application/mcp+protobuf).
    Protobuf,
}

impl From<Encoding> for oxmcp_http::BodyEncoding {
    fn from(e: Encoding) -> Self {
        match e {
            Encoding::Json => oxmcp_http::BodyEncoding::Json,
            Encoding::Protobuf => oxmcp_http::BodyEncoding::Protobuf,
        }
    }
}

impl BenchArgs {
    /// The plan from the arguments: the target, the driver, what each answer must hold.
    ///
    /// # Errors
    /// No target or two of them; a combination of flags the drivers cannot run; `--args`
    /// not a JSON object.
    pub(crate) fn plan(self) -> anyhow::Result<Plan> {
        let mode = if self.pipeline {
            BenchMode::Pipelined
        } else {
            self.mode
        };
        let target = Target::from_parts(self.url, self.server)?;
        let driver = match (self.driver, &target) {
            (Some(DriverArg::Client), _) | (None, Target::Command(_)) => Driver::Client,
            (Some(DriverArg::Raw), Target::Command(_)) => Driver::Raw,
            (None, Target::Url(u)) if is_stream_url(u) => Driver::Client,
            (Some(DriverArg::Raw), Target::Url(u))
                if is_stream_url(u) && !u.starts_with("ws://") && !u.starts_with("grpc://") =>
            {
                bail!(
                    "--driver raw is for plain http://, ws:// and grpc:// URLs (TLS needs the client)"
                )
            }
            (Some(DriverArg::Raw) | None, Target::Url(_)) => Driver::Raw,
        };
        if !self.also.is_empty() && driver != Driver::Raw {
            bail!("--also is for the raw driver (http://, ws:// and grpc:// URLs)");
        }
        let client_only = self.read.is_some() || self.wire || self.encoding != Encoding::Json;
        if client_only && driver != Driver::Client {
            bail!("--read, --wire and --encoding protobuf need the SDK client (--driver client)");
        }
        let is_url = matches!(target, Target::Url(_));
        if driver == Driver::Raw && mode == BenchMode::Pipelined && is_url {
            bail!("pipelined calls need one connection with the SDK client (--driver client)");
        }
        let payload = Payload::new(parse_object(&self.args)?);
        Ok(Plan {
            target,
            driver,
            expect: Expect::choose(self.expect, &self.tool, &payload),
            payload,
            tool: self.tool,
            requests: self.requests,
            duration: self.duration,
            window: self.window,
            mode,
            clients: self.clients.max(1),
            shared_session: self.session == SessionArg::Shared,
            burst: self.burst,
            idle_sessions: self.idle_sessions,
            cold_start: self.cold_start,
            server_cpu: self.server_cpu,
            server_pid: self.server_pid,
            also: self.also,
            era: self.era,
            json: self.json,
            read: self.read.map(Read::new),
            encoding: self.encoding.into(),
            wire: self.wire,
        })
    }
}

/// `--args`: a JSON object.
fn parse_object(json: &str) -> anyhow::Result<JsonObject> {
    match serde_json::from_str::<Value>(json).context("tool arguments are not valid JSON")? {
        Value::Object(m) => Ok(m),
        _ => bail!("tool arguments must be a JSON object, like '{{\"message\":\"hi\"}}'"),
    }
}

/// `10s`, `500ms`, `2m` or plain seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
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

//! The limits of `oxmcp serve`: every one a flag and a key of the config file's `[limits]`
//! table (flags win), each with the library's default when neither sets it.

use std::time::Duration;

use anyhow::bail;
use serde::Deserialize;

/// A byte count: `4194304`, `4MiB`, `8KiB`, `1GiB`, `500KB`, `2MB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size(pub(crate) usize);

/// A duration: `30s`, `500ms`, `2m`, `1h`, or plain seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dur(pub(crate) Duration);

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: usize = num
            .parse()
            .map_err(|_| format!("{s:?} is not a size like 4MiB, 8KiB or 1048576"))?;
        let mult: usize = match unit.trim() {
            "" | "B" => 1,
            "KiB" | "K" | "k" => 1 << 10,
            "MiB" | "M" => 1 << 20,
            "GiB" | "G" => 1 << 30,
            "KB" | "kB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            other => return Err(format!("unknown size unit {other:?} (use KiB, MiB, GiB)")),
        };
        n.checked_mul(mult)
            .map(Size)
            .ok_or_else(|| format!("{s:?} is too large"))
    }
}

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        crate::parse_duration(s).map(Dur)
    }
}

/// Config-file values may be numbers (bytes, seconds) or strings with a unit.
#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrText {
    Num(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrText::deserialize(d)? {
            NumOrText::Num(n) => usize::try_from(n)
                .map(Size)
                .map_err(serde::de::Error::custom),
            NumOrText::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrText::deserialize(d)? {
            NumOrText::Num(n) => Ok(Dur(Duration::from_secs(n))),
            NumOrText::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Every limit of `oxmcp serve`. Each is a flag (`--max-sessions`) and a key of the config
/// file's `[limits]` table (`max_sessions`); unset ones keep the library default shown.
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Limits (also keys of the config file's [limits] table)")]
pub(crate) struct Limits {
    /// Sessions at once; 503 above it [default: 10000]
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions: Option<usize>,
    /// Sessions one verified principal may hold; 429 above it [default: 100]
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions_per_principal: Option<usize>,
    /// Sessions one remote address (IPv6: one /64) may hold; 429 above it [default: 2000]
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions_per_address: Option<usize>,
    /// New sessions per second one client may open on average [default: 100]
    #[arg(long, value_name = "N")]
    pub(crate) new_sessions_per_second: Option<u32>,
    /// New sessions one client may open in a burst; 429 with Retry-After past it
    /// [default: 2000]
    #[arg(long, value_name = "N")]
    pub(crate) new_session_burst: Option<u32>,
    /// Apply the per-address limits to loopback clients too [default: false]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub(crate) limit_loopback: Option<bool>,
    /// A session with no request and no open stream for this long is closed [default: 30m]
    #[arg(long, value_name = "DURATION")]
    pub(crate) session_idle_timeout: Option<Dur>,
    /// A session whose client does not finish the handshake in this time is closed
    /// [default: 60s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) session_init_timeout: Option<Dur>,
    /// Requests of one session in flight; one more is answered -32000 "server busy" (HTTP)
    /// or waits (stdio) [default: 256]
    #[arg(long, value_name = "N")]
    pub(crate) max_requests_per_session: Option<usize>,
    /// Request handlers of one connection running at once; more wait their turn
    /// [default: 64]
    #[arg(long, value_name = "N")]
    pub(crate) max_concurrent_handlers: Option<usize>,
    /// SSE streams open on one session (a POST answered with JSON is not one); 429 above it
    /// [default: 512]
    #[arg(long, value_name = "N")]
    pub(crate) max_streams_per_session: Option<usize>,
    /// Sessionless requests in flight over the endpoint (2026-07-28 ones, and legacy ones
    /// with --stateless); 503 above it [default: 4096]
    #[arg(long, value_name = "N")]
    pub(crate) max_stateless_requests: Option<usize>,
    /// 2026-07-28 `subscriptions/listen` streams open; 503 above it [default: 1024]
    #[arg(long, value_name = "N")]
    pub(crate) max_listen_streams: Option<usize>,
    /// TCP connections served at once; more wait in the listen backlog [default: 10000]
    #[arg(long, value_name = "N")]
    pub(crate) max_connections: Option<usize>,
    /// Largest HTTP request body; 413 above it [default: 4MiB]
    #[arg(long, value_name = "SIZE")]
    pub(crate) max_body: Option<Size>,
    /// Largest stdio line (message); longer ones are dropped and logged [default: 4MiB]
    #[arg(long, value_name = "SIZE")]
    pub(crate) max_line: Option<Size>,
    /// Entries of one JSON-RPC batch (protocol 2025-03-26); one error above it [default: 50]
    #[arg(long, value_name = "N")]
    pub(crate) max_batch: Option<usize>,
    /// Longest resource URI a request may name; -32602 above it [default: 8KiB]
    #[arg(long, value_name = "SIZE")]
    pub(crate) max_uri_length: Option<Size>,
    /// Resource subscriptions one session may hold; -32602 above it [default: 1000; the
    /// gateway's own `max_subscriptions` key when serving a config file]
    #[arg(long, value_name = "N")]
    pub(crate) max_subscriptions: Option<usize>,
    /// A request's headers must arrive within this time [default: 30s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) header_timeout: Option<Dur>,
    /// A request's body must arrive within this time; 408 after it [default: 30s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) body_timeout: Option<Dur>,
    /// A connection with no request in progress and nothing moving, or whose client reads
    /// nothing, is closed after this [default: 120s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) idle_timeout: Option<Dur>,
    /// A client whose messages wait this long for it to read is disconnected [default: 10s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) stall_timeout: Option<Dur>,
    /// An open WebSocket, gRPC stream or call, legacy SSE stream, or Streamable HTTP GET or
    /// listen stream has its bearer token verified again this often, and ends once it is
    /// refused (it ends at the token's exp in any case) [default: 60s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) token_recheck_interval: Option<Dur>,
    /// On SIGTERM or Ctrl-C, requests in flight get this long to finish [default: 10s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) drain_deadline: Option<Dur>,
    /// Events kept per SSE stream for resumption [default: 1024]
    #[arg(long, value_name = "N")]
    pub(crate) event_log_events: Option<usize>,
    /// Bytes of events kept per session for resumption (oldest go first) [default: 8MiB]
    #[arg(long, value_name = "SIZE")]
    pub(crate) event_log_session_bytes: Option<Size>,
    /// Bytes of events kept over all sessions; past it events are not kept [default: 256MiB]
    #[arg(long, value_name = "SIZE")]
    pub(crate) event_log_total_bytes: Option<Size>,
}

macro_rules! merge {
    ($flags:expr, $file:expr, $($field:ident),* $(,)?) => {
        Limits { $($field: $flags.$field.or($file.$field),)* }
    };
}

macro_rules! set {
    ($target:expr, $value:expr) => {
        if let Some(v) = $value {
            $target = v;
        }
    };
}

impl Limits {
    /// The flags, falling back to the config file's values.
    pub(crate) fn over(self, file: Limits) -> Limits {
        merge!(
            self,
            file,
            max_sessions,
            max_sessions_per_principal,
            max_sessions_per_address,
            new_sessions_per_second,
            new_session_burst,
            limit_loopback,
            session_idle_timeout,
            session_init_timeout,
            max_requests_per_session,
            max_concurrent_handlers,
            max_streams_per_session,
            max_stateless_requests,
            max_listen_streams,
            max_connections,
            max_body,
            max_line,
            max_batch,
            max_uri_length,
            max_subscriptions,
            header_timeout,
            body_timeout,
            idle_timeout,
            stall_timeout,
            token_recheck_interval,
            drain_deadline,
            event_log_events,
            event_log_session_bytes,
            event_log_total_bytes,
        )
    }

    /// Refuses values that would make the server unusable (a zero where at least one is
    /// needed).
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        let counts = [
            ("max-sessions", self.max_sessions),
            (
                "max-sessions-per-principal",
                self.max_sessions_per_principal,
            ),
            ("max-sessions-per-address", self.max_sessions_per_address),
            ("max-requests-per-session", self.max_requests_per_session),
            ("max-concurrent-handlers", self.max_concurrent_handlers),
            ("max-streams-per-session", self.max_streams_per_session),
            ("max-stateless-requests", self.max_stateless_requests),
            ("max-listen-streams", self.max_listen_streams),
            ("max-connections", self.max_connections),
            ("max-batch", self.max_batch),
            ("event-log-events", self.event_log_events),
        ];
        for (name, v) in counts {
            if v == Some(0) {
                bail!("--{name} must be at least 1");
            }
        }
        for (name, v) in [
            ("new-sessions-per-second", self.new_sessions_per_second),
            ("new-session-burst", self.new_session_burst),
        ] {
            if v == Some(0) {
                bail!("--{name} must be at least 1");
            }
        }
        let durations = [
            ("session-idle-timeout", self.session_idle_timeout),
            ("session-init-timeout", self.session_init_timeout),
            ("header-timeout", self.header_timeout),
            ("body-timeout", self.body_timeout),
            ("idle-timeout", self.idle_timeout),
            ("stall-timeout", self.stall_timeout),
            ("token-recheck-interval", self.token_recheck_interval),
        ];
        for (name, v) in durations {
            if v.is_some_and(|d| d.0.is_zero()) {
                bail!("--{name} must be longer than zero");
            }
        }
        let sizes = [
            ("max-body", self.max_body),
            ("max-line", self.max_line),
            ("max-uri-length", self.max_uri_length),
        ];
        for (name, v) in sizes {
            if v.is_some_and(|s| s.0 == 0) {
                bail!("--{name} must be at least 1 byte");
            }
        }
        Ok(())
    }

    /// Applies the server-side limits (messages, batches, URIs, subscriptions, handlers).
    pub(crate) fn server(&self, c: &mut oxmcp_server::ServerConfig) {
        set!(c.engine.max_batch, self.max_batch);
        set!(c.engine.max_in_flight, self.max_concurrent_handlers);
        set!(c.max_uri_len, self.max_uri_length.map(|s| s.0));
        set!(c.max_subscriptions, self.max_subscriptions);
    }

    /// The longest line read on stdio.
    pub(crate) fn max_line(&self) -> usize {
        self.max_line
            .map_or(oxmcp_transport::DEFAULT_MAX_LINE, |s| s.0)
    }

    /// Applies the HTTP limits.
    pub(crate) fn http(&self, c: &mut oxmcp_http::HttpConfig) {
        set!(c.max_sessions, self.max_sessions);
        set!(
            c.max_sessions_per_principal,
            self.max_sessions_per_principal
        );
        set!(c.max_sessions_per_address, self.max_sessions_per_address);
        set!(c.client_session_rate, self.new_sessions_per_second);
        set!(c.client_session_burst, self.new_session_burst);
        set!(c.limit_loopback, self.limit_loopback);
        set!(
            c.session_idle_timeout,
            self.session_idle_timeout.map(|d| d.0)
        );
        set!(
            c.session_init_timeout,
            self.session_init_timeout.map(|d| d.0)
        );
        set!(c.max_requests_per_session, self.max_requests_per_session);
        set!(c.max_streams_per_session, self.max_streams_per_session);
        set!(c.max_stateless_requests, self.max_stateless_requests);
        set!(c.max_listen_streams, self.max_listen_streams);
        set!(c.max_body, self.max_body.map(|s| s.0));
        set!(c.body_read_timeout, self.body_timeout.map(|d| d.0));
        set!(c.stall_timeout, self.stall_timeout.map(|d| d.0));
        set!(
            c.token_recheck_interval,
            self.token_recheck_interval.map(|d| d.0)
        );
        set!(c.event_log_limit, self.event_log_events);
        set!(
            c.event_log_session_bytes,
            self.event_log_session_bytes.map(|s| s.0)
        );
        set!(
            c.event_log_total_bytes,
            self.event_log_total_bytes.map(|s| s.0)
        );
    }

    /// Applies the connection limits.
    pub(crate) fn serve(&self, o: &mut oxmcp_http::ServeOptions) {
        set!(o.max_connections, self.max_connections);
        set!(o.header_read_timeout, self.header_timeout.map(|d| d.0));
        set!(o.idle_timeout, self.idle_timeout.map(|d| d.0));
        set!(o.drain_deadline, self.drain_deadline.map(|d| d.0));
    }

    /// On stdio, a request past the in-flight limit waits (backpressure): the engine reads no
    /// more input until one finishes.
    pub(crate) fn stdio(&self, c: &mut oxmcp_server::ServerConfig) {
        if let Some(n) = self.max_requests_per_session {
            c.engine.max_queued = n.saturating_sub(c.engine.max_in_flight).max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!("4MiB".parse::<Size>(), Ok(Size(4 << 20)));
        assert_eq!("8KiB".parse::<Size>(), Ok(Size(8192)));
        assert_eq!("1048576".parse::<Size>(), Ok(Size(1 << 20)));
        assert_eq!("2MB".parse::<Size>(), Ok(Size(2_000_000)));
        assert!("4 parsecs".parse::<Size>().is_err());
        assert_eq!("90s".parse::<Dur>(), Ok(Dur(Duration::from_secs(90))));
        assert_eq!("1h".parse::<Dur>(), Ok(Dur(Duration::from_secs(3600))));
    }

    #[test]
    fn flags_win_over_the_file_and_unset_keeps_the_default() {
        let file: Limits = toml::from_str(
            "max_sessions = 5\nmax_body = \"1MiB\"\nsession_idle_timeout = \"2m\"\nidle_timeout = 7",
        )
        .unwrap();
        let flags = Limits {
            max_sessions: Some(9),
            ..Limits::default()
        };
        let merged = flags.over(file);
        let mut http = oxmcp_http::HttpConfig::default();
        merged.http(&mut http);
        assert_eq!(http.max_sessions, 9);
        assert_eq!(http.max_body, 1 << 20);
        assert_eq!(http.session_idle_timeout, Duration::from_secs(120));
        assert_eq!(
            http.max_streams_per_session,
            oxmcp_http::HttpConfig::default().max_streams_per_session
        );
        let mut serve = oxmcp_http::ServeOptions::default();
        merged.serve(&mut serve);
        assert_eq!(serve.idle_timeout, Duration::from_secs(7));
        assert!(
            toml::from_str::<Limits>("max_sesions = 1").is_err(),
            "typos are refused"
        );
    }

    /// The defaults `--help` shows are the library's.
    #[test]
    fn help_shows_the_real_defaults() {
        use clap::CommandFactory;
        let mut cmd = crate::Cli::command();
        let serve = cmd.find_subcommand_mut("serve").unwrap();
        let help = serve.render_long_help().to_string();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let http = oxmcp_http::HttpConfig::default();
        let server = oxmcp_server::ServerConfig::default();
        let serve = oxmcp_http::ServeOptions::default();
        let mins = |d: Duration| format!("{}m", d.as_secs() / 60);
        let secs = |d: Duration| format!("{}s", d.as_secs());
        let mib = |n: usize| format!("{}MiB", n >> 20);
        let expected = [
            ("max-sessions", http.max_sessions.to_string()),
            (
                "max-sessions-per-principal",
                http.max_sessions_per_principal.to_string(),
            ),
            (
                "max-sessions-per-address",
                http.max_sessions_per_address.to_string(),
            ),
            (
                "new-sessions-per-second",
                http.client_session_rate.to_string(),
            ),
            ("new-session-burst", http.client_session_burst.to_string()),
            ("session-idle-timeout", mins(http.session_idle_timeout)),
            ("session-init-timeout", secs(http.session_init_timeout)),
            (
                "max-requests-per-session",
                http.max_requests_per_session.to_string(),
            ),
            (
                "max-concurrent-handlers",
                server.engine.max_in_flight.to_string(),
            ),
            (
                "max-streams-per-session",
                http.max_streams_per_session.to_string(),
            ),
            (
                "max-stateless-requests",
                http.max_stateless_requests.to_string(),
            ),
            ("max-listen-streams", http.max_listen_streams.to_string()),
            ("max-connections", serve.max_connections.to_string()),
            ("max-body", mib(http.max_body)),
            ("max-line", mib(oxmcp_transport::DEFAULT_MAX_LINE)),
            ("max-batch", server.engine.max_batch.to_string()),
            ("max-uri-length", format!("{}KiB", server.max_uri_len >> 10)),
            ("max-subscriptions", server.max_subscriptions.to_string()),
            ("header-timeout", secs(serve.header_read_timeout)),
            ("body-timeout", secs(http.body_read_timeout)),
            ("idle-timeout", secs(serve.idle_timeout)),
            ("stall-timeout", secs(http.stall_timeout)),
            ("token-recheck-interval", secs(http.token_recheck_interval)),
            ("drain-deadline", secs(serve.drain_deadline)),
            ("event-log-events", http.event_log_limit.to_string()),
            ("event-log-session-bytes", mib(http.event_log_session_bytes)),
            ("event-log-total-bytes", mib(http.event_log_total_bytes)),
        ];
        for (flag, default) in expected {
            let at = flat
                .find(&format!("--{flag} <"))
                .unwrap_or_else(|| panic!("--{flag} is not in oxmcp serve --help"));
            let rest = &flat[at..];
            let shown = rest
                .split("[default: ")
                .nth(1)
                .and_then(|r| r.split([']', ';']).next())
                .unwrap_or_default();
            assert_eq!(shown, default, "--{flag}");
        }
    }
}

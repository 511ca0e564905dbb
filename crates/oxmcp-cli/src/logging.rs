//! The log on stderr: filtered by `MCP_LOG` (default `warn`), written as text or, with
//! `--log-format json` (or `MCP_LOG_FORMAT=json`; the flag wins), one JSON object per line:
//! `timestamp`, `level`, `target`, the event's fields (`message` among them) and `spans`,
//! the enclosing spans from the outermost with their fields (`mcp.post`: session, request,
//! method, principal).

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The environment variable that picks the format when `--log-format` does not.
const FORMAT_VAR: &str = "MCP_LOG_FORMAT";

/// The format `flag` asks for, else `MCP_LOG_FORMAT` (`env`: its value), else text.
pub(crate) fn chosen(flag: Option<LogFormat>, env: Option<String>) -> Result<LogFormat, String> {
    if let Some(f) = flag {
        return Ok(f);
    }
    match env.as_deref().map(str::trim) {
        None | Some("") => Ok(LogFormat::Text),
        Some(v) if v.eq_ignore_ascii_case("text") => Ok(LogFormat::Text),
        Some(v) if v.eq_ignore_ascii_case("json") => Ok(LogFormat::Json),
        Some(v) => Err(format!(
            "{FORMAT_VAR}={v:?} is not a log format: use text or json"
        )),
    }
}

/// The format of `flag` and the environment; an error for a bad `MCP_LOG_FORMAT`.
pub(crate) fn from_env(flag: Option<LogFormat>) -> Result<LogFormat, String> {
    let env = std::env::var_os(FORMAT_VAR).map(|v| v.to_string_lossy().into_owned());
    chosen(flag, env)
}

/// Installs the global subscriber: stderr, `MCP_LOG` (default `warn`), in `format`.
pub(crate) fn init(format: LogFormat, audit: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(audited(filter, audit));
    match format {
        // Colours for a terminal only: a file or a log pipeline gets plain text.
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .init(),
    }
}

/// `filter`, showing the audit log too when `oxmcp serve --audit` asks for it (unless
/// `MCP_LOG` names `oxmcp::audit` itself).
fn audited(filter: tracing_subscriber::EnvFilter, audit: bool) -> tracing_subscriber::EnvFilter {
    let named = std::env::var("MCP_LOG").is_ok_and(|v| v.contains("oxmcp::audit"));
    match (audit && !named, "oxmcp::audit=info".parse()) {
        (true, Ok(directive)) => filter.add_directive(directive),
        _ => filter,
    }
}

#[cfg(test)]
mod tests {
    use super::{LogFormat, chosen};

    #[test]
    fn the_flag_wins_over_the_environment_and_a_bad_value_is_an_error() {
        assert_eq!(chosen(None, None), Ok(LogFormat::Text));
        assert_eq!(chosen(None, Some("JSON".into())), Ok(LogFormat::Json));
        assert_eq!(chosen(None, Some("text".into())), Ok(LogFormat::Text));
        assert_eq!(
            chosen(Some(LogFormat::Text), Some("json".into())),
            Ok(LogFormat::Text)
        );
        assert_eq!(
            chosen(Some(LogFormat::Json), Some("bad".into())),
            Ok(LogFormat::Json),
            "a flag makes the variable unread"
        );
        let err = chosen(None, Some("yaml".into())).unwrap_err();
        assert!(
            err.contains("MCP_LOG_FORMAT") && err.contains("json"),
            "{err}"
        );
    }
}

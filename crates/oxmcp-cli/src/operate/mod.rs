//! What operators run `oxmcp serve` with beside MCP: the middleware flags (audit log, rate
//! limits, timeouts; [`oxmcp_server::layer`]), Prometheus metrics, the health and readiness
//! probes and the delay between SIGTERM and the drain (`probes`).

mod probes;

use std::time::Duration;

use oxmcp_server::layer::{AuditLayer, Metrics, Quota, RateLimitLayer, TimeoutLayer};

pub(crate) use probes::{Probes, ReadyUpstreams, UpstreamHealth, sample, serve_probes};

use crate::limits::Dur;

/// The operations flags of `oxmcp serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct OperateArgs {
    /// Serve `/metrics` (Prometheus), `/healthz` and `/readyz` on this address instead of
    /// --listen (where the probes stay too).
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,
    /// Record no metrics and serve no `/metrics`.
    #[arg(long, conflicts_with = "metrics_listen")]
    pub(crate) no_metrics: bool,
    /// Log one line per request (method, tool, principal, session, outcome, duration; never
    /// arguments) at INFO on the target `oxmcp::audit`.
    #[arg(long)]
    pub(crate) audit: bool,
    /// Calls of a tool, from all callers together, within a budget: `TOOL=CALLS/PERIOD`,
    /// e.g. `search=10/s`, `report=100/1m` (repeatable). Past it a call is refused with
    /// -32000 and `data.retryAfterMs`.
    #[arg(long = "rate-limit", value_name = "TOOL=CALLS/PERIOD", value_parser = parse_tool_quota)]
    pub(crate) rate_limits: Vec<(String, Quota)>,
    /// Tool calls of each principal (each verified token subject; the unverified share one)
    /// within a budget: `CALLS/PERIOD`, e.g. `600/1m`.
    #[arg(long, value_name = "CALLS/PERIOD", value_parser = parse_quota)]
    pub(crate) rate_limit_principal: Option<Quota>,
    /// A deadline for calls of one tool, `TOOL=DURATION` (repeatable): past it the caller
    /// gets -32001 and the handler is stopped.
    #[arg(long = "tool-timeout", value_name = "TOOL=DURATION", value_parser = parse_tool_timeout)]
    pub(crate) tool_timeouts: Vec<(String, Duration)>,
    /// A deadline for every other request to a handler.
    #[arg(long, value_name = "DURATION")]
    pub(crate) request_timeout: Option<Dur>,
    /// After SIGTERM, keep serving this long with `/readyz` answering 503 (so load balancers
    /// stop sending), then drain [default: 0s].
    #[arg(long, value_name = "DURATION")]
    pub(crate) shutdown_delay: Option<Dur>,
    /// Which of a gateway's upstreams must be up for `/readyz` to answer 200.
    #[arg(long, value_enum, default_value_t = ReadyUpstreams::Any)]
    pub(crate) ready_upstreams: ReadyUpstreams,
}

impl OperateArgs {
    /// Adds the layers these flags ask for to `config`, outermost first: metrics (when
    /// served: over HTTP and not `--no-metrics`), audit, rate limits, timeouts. The
    /// instruments, if any.
    pub(crate) fn layers(
        &self,
        config: &mut oxmcp_server::ServerConfig,
        http: bool,
    ) -> Option<Metrics> {
        let metrics = (http && !self.no_metrics).then(Metrics::new);
        if let Some(m) = &metrics {
            config.layers.push(m.layer());
        }
        if self.audit {
            config.layers.push(AuditLayer::new());
        }
        if !self.rate_limits.is_empty() || self.rate_limit_principal.is_some() {
            let mut limits = RateLimitLayer::new();
            for (tool, quota) in &self.rate_limits {
                limits = limits.tool(tool.clone(), *quota);
            }
            if let Some(quota) = self.rate_limit_principal {
                limits = limits.per_principal(quota);
            }
            config.layers.push(limits);
        }
        if !self.tool_timeouts.is_empty() || self.request_timeout.is_some() {
            let mut timeouts = TimeoutLayer::new(self.request_timeout.map(|d| d.0));
            for (tool, limit) in &self.tool_timeouts {
                timeouts = timeouts.tool(tool.clone(), *limit);
            }
            config.layers.push(timeouts);
        }
        metrics
    }

    /// The delay between SIGTERM and the drain.
    pub(crate) fn shutdown_delay(&self) -> Duration {
        self.shutdown_delay.map(|d| d.0).unwrap_or_default()
    }
}

/// `CALLS/PERIOD`: `10/s`, `100/1m`, `5/500ms`.
fn parse_quota(s: &str) -> Result<Quota, String> {
    let (calls, period) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?}: expected CALLS/PERIOD, e.g. 10/s or 600/1m"))?;
    let calls: u32 = calls
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: {calls:?} is not a number of calls"))?;
    let period = period.trim();
    let period = match period {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        other => crate::parse_duration(other).map_err(|e| format!("{s:?}: {e}"))?,
    };
    Quota::new(calls, period).ok_or_else(|| format!("{s:?}: calls and period must not be 0"))
}

/// `TOOL=CALLS/PERIOD`.
fn parse_tool_quota(s: &str) -> Result<(String, Quota), String> {
    let (tool, quota) = s
        .rsplit_once('=')
        .filter(|(t, _)| !t.is_empty())
        .ok_or_else(|| format!("{s:?}: expected TOOL=CALLS/PERIOD, e.g. search=10/s"))?;
    Ok((tool.to_owned(), parse_quota(quota)?))
}

/// `TOOL=DURATION`.
fn parse_tool_timeout(s: &str) -> Result<(String, Duration), String> {
    let (tool, limit) = s
        .rsplit_once('=')
        .filter(|(t, _)| !t.is_empty())
        .ok_or_else(|| format!("{s:?}: expected TOOL=DURATION, e.g. report=30s"))?;
    let limit = crate::parse_duration(limit).map_err(|e| format!("{s:?}: {e}"))?;
    if limit.is_zero() {
        return Err(format!("{s:?}: the deadline must not be 0"));
    }
    Ok((tool.to_owned(), limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_and_deadlines_parse() {
        assert_eq!(
            parse_quota("10/s").unwrap(),
            Quota::new(10, Duration::from_secs(1)).unwrap()
        );
        assert_eq!(
            parse_quota("600/1m").unwrap(),
            Quota::new(600, Duration::from_secs(60)).unwrap()
        );
        assert_eq!(
            parse_tool_quota("a=b=5/500ms").unwrap(),
            (
                "a=b".to_owned(),
                Quota::new(5, Duration::from_millis(500)).unwrap()
            )
        );
        assert!(parse_quota("0/s").is_err());
        assert!(parse_quota("10").is_err());
        assert!(parse_tool_quota("=1/s").is_err());
        assert_eq!(
            parse_tool_timeout("slow=2s").unwrap(),
            ("slow".to_owned(), Duration::from_secs(2))
        );
        assert!(parse_tool_timeout("slow=0s").is_err());
    }
}

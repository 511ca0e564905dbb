//! `--idle-sessions N`: the server memory an idle session costs.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::run::Plan;
use crate::stats::status_kib;
use crate::target::{Connection, connect_with};

/// How long bare sessions are left idle before their memory is read again: past the
/// server's default `HttpConfig::park_idle_after` (5 s) and its reaper's next round
/// (a quarter of that).
const SETTLE: Duration = Duration::from_secs(8);

/// Server RSS growth per session for `n` idle sessions opened with `http` settings, read
/// half a second after the last is open and, if `settle` is given, again after that long
/// (`bytes_per_session` is then the later figure: sessions idle that long are parked).
async fn rss_per_session(
    plan: &Plan,
    pid: u32,
    n: usize,
    http: &oxmcp_http::HttpClientConfig,
    settle: Option<Duration>,
) -> anyhow::Result<Value> {
    let before = status_kib(pid, "VmRSS:").context("cannot read the server's RSS")?;
    let mut conns = Vec::with_capacity(n);
    let mut retries = 0;
    for _ in 0..n {
        // New sessions may be rate-limited (429 with Retry-After, one second): this figure is
        // about memory, not speed, so a refused session is retried a few times, a second apart.
        let mut attempt = 0;
        let conn = loop {
            match connect_with(&plan.target, http.clone(), plan.era).await {
                Ok(c) => break c,
                Err(e) if attempt < 5 => {
                    tracing::debug!("session refused, retrying in 1 s: {e:#}");
                    attempt += 1;
                    retries += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e),
            }
        };
        conns.push(conn);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fresh = status_kib(pid, "VmRSS:").context("cannot read the server's RSS")?;
    let per_kib = |kib: u64| (kib.saturating_sub(before) as f64 * 1024.0) / n as f64;
    let mut figures = json!({
        "rss_before_kib": before, "rss_with_sessions_kib": fresh,
        "bytes_per_session": per_kib(fresh), "sessions_retried": retries,
    });
    if let Some(settle) = settle {
        tokio::time::sleep(settle).await;
        let settled = status_kib(pid, "VmRSS:").context("cannot read the server's RSS")?;
        figures["bytes_per_fresh_session"] = json!(per_kib(fresh));
        figures["rss_with_sessions_kib"] = json!(settled);
        figures["bytes_per_session"] = json!(per_kib(settled));
        figures["idle_for_s"] = json!(settle.as_secs_f64() + 0.5);
    }
    futures::future::join_all(conns.into_iter().map(Connection::close)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    figures["rss_after_close_kib"] = json!(status_kib(pid, "VmRSS:"));
    Ok(figures)
}

/// RSS per idle session, twice: sessions that keep a GET stream (and so a connection) open,
/// and bare sessions whose clients hold no connection (read when fresh and once idle for
/// [`SETTLE`]). Each session is opened and checked by
/// the SDK's client; one that fails to open ends the run with its error.
pub(crate) async fn run(plan: &Plan, n: usize) -> anyhow::Result<Value> {
    let Some(pid) = plan.server_pid else {
        bail!("--idle-sessions needs --server-pid (the server's RSS is what is measured)");
    };
    // Bare sessions first: once memory has been freed, later phases reuse it and read low.
    let bare = oxmcp_http::HttpClientConfig::default()
        .standalone_stream(false)
        .reuse_connections(false);
    let without = rss_per_session(plan, pid, n, &bare, Some(SETTLE)).await?;
    // (A session with a GET stream open is never parked: no wait.)
    let with_stream =
        rss_per_session(plan, pid, n, &oxmcp_http::HttpClientConfig::default(), None).await?;
    Ok(
        json!({"idle_sessions": n, "with_get_stream": with_stream, "session_only": without, "errors": 0}),
    )
}

//! `--idle-sessions N`: the server memory an idle session costs.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::run::Plan;
use crate::stats::status_kib;
use crate::target::{Connection, connect_with};

/// Server RSS growth per session for `n` idle sessions opened with `http` settings.
async fn rss_per_session(
    plan: &Plan,
    pid: u32,
    n: usize,
    http: &oxmcp_http::HttpClientConfig,
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
    let after = status_kib(pid, "VmRSS:").context("cannot read the server's RSS")?;
    futures::future::join_all(conns.into_iter().map(Connection::close)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let closed = status_kib(pid, "VmRSS:");
    let per = (after.saturating_sub(before) as f64 * 1024.0) / n as f64;
    Ok(json!({
        "rss_before_kib": before, "rss_with_sessions_kib": after,
        "rss_after_close_kib": closed, "bytes_per_session": per,
        "sessions_retried": retries,
    }))
}

/// RSS per idle session, twice: sessions that keep a GET stream (and so a connection) open,
/// and bare sessions whose clients hold no connection. Each session is opened and checked by
/// the SDK's client; one that fails to open ends the run with its error.
pub(crate) async fn run(plan: &Plan, n: usize) -> anyhow::Result<Value> {
    let Some(pid) = plan.server_pid else {
        bail!("--idle-sessions needs --server-pid (the server's RSS is what is measured)");
    };
    // Bare sessions first: once memory has been freed, later phases reuse it and read low.
    let bare = oxmcp_http::HttpClientConfig::default()
        .standalone_stream(false)
        .reuse_connections(false);
    let without = rss_per_session(plan, pid, n, &bare).await?;
    let with_stream =
        rss_per_session(plan, pid, n, &oxmcp_http::HttpClientConfig::default()).await?;
    Ok(
        json!({"idle_sessions": n, "with_get_stream": with_stream, "session_only": without, "errors": 0}),
    )
}

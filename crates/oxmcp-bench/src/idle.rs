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

/// The server's RSS and its anonymous part (`RssAnon`: heap and stacks, not the binary's
/// pages, which come and go with the page cache and with code run the first time), in KiB.
fn rss(pid: u32) -> anyhow::Result<(u64, u64)> {
    let read = |field| status_kib(pid, field).context("cannot read the server's RSS");
    Ok((read("VmRSS:")?, read("RssAnon:")?))
}

/// Opens `n` sessions with `http` settings, each checked by the SDK's client.
async fn open(
    plan: &Plan,
    n: usize,
    http: &oxmcp_http::HttpClientConfig,
    conns: &mut Vec<Connection>,
) -> anyhow::Result<usize> {
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
    Ok(retries)
}

/// Server RSS growth per session for `n` idle sessions opened with `http` settings, read
/// half a second after the last is open (`bytes_per_session`; `anon_bytes_per_session` the
/// growth of the anonymous part alone).
///
/// With `settle`, they are read again after that long idle (`bytes_per_session` is then
/// the later figure: sessions idle that long are parked, and what was fresh is
/// `bytes_per_fresh_session`), and then `n` more sessions are opened on top and read once
/// they too have been idle that long (`bytes_per_further_session`). The first figure holds
/// what the allocator keeps of the `n` sessions' memory while they were all fresh at once
/// (memory the next sessions reuse); the further one is what each more idle session adds.
async fn rss_per_session(
    plan: &Plan,
    pid: u32,
    n: usize,
    http: &oxmcp_http::HttpClientConfig,
    settle: Option<Duration>,
) -> anyhow::Result<Value> {
    let (before, anon_before) = rss(pid)?;
    let mut conns = Vec::with_capacity(n);
    let mut retries = open(plan, n, http, &mut conns).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (fresh, anon_fresh) = rss(pid)?;
    let per = |kib: u64, from: u64| (kib.saturating_sub(from) as f64 * 1024.0) / n as f64;
    let mut figures = json!({
        "rss_before_kib": before, "rss_with_sessions_kib": fresh,
        "bytes_per_session": per(fresh, before),
        "anon_bytes_per_session": per(anon_fresh, anon_before),
    });
    if let Some(settle) = settle {
        tokio::time::sleep(settle).await;
        let (settled, anon_settled) = rss(pid)?;
        figures["bytes_per_fresh_session"] = json!(per(fresh, before));
        figures["anon_bytes_per_fresh_session"] = json!(per(anon_fresh, anon_before));
        figures["rss_with_sessions_kib"] = json!(settled);
        figures["bytes_per_session"] = json!(per(settled, before));
        figures["anon_bytes_per_session"] = json!(per(anon_settled, anon_before));
        figures["idle_for_s"] = json!(settle.as_secs_f64() + 0.5);
        retries += open(plan, n, http, &mut conns).await?;
        tokio::time::sleep(settle + Duration::from_millis(500)).await;
        let (more, anon_more) = rss(pid)?;
        figures["rss_with_further_sessions_kib"] = json!(more);
        figures["bytes_per_further_session"] = json!(per(more, settled));
        figures["anon_bytes_per_further_session"] = json!(per(anon_more, anon_settled));
    }
    figures["sessions_retried"] = json!(retries);
    futures::future::join_all(conns.into_iter().map(Connection::close)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    figures["rss_after_close_kib"] = json!(status_kib(pid, "VmRSS:"));
    Ok(figures)
}

/// RSS per idle session, twice: sessions that keep a GET stream (and so a connection) open
/// (opened last, in memory the bare sessions freed: a lower bound), and bare sessions whose
/// clients hold no connection (read when fresh, once idle for [`SETTLE`], and for as many
/// more opened on top and left idle as long). Each session is opened and checked by the
/// SDK's client; one that fails to open ends the run with its error.
pub(crate) async fn run(plan: &Plan, n: usize) -> anyhow::Result<Value> {
    let Some(pid) = plan.server_pid else {
        bail!("--idle-sessions needs --server-pid (the server's RSS is what is measured)");
    };
    // Bare sessions first: once memory has been freed, later phases reuse it and read low.
    let bare = oxmcp_http::HttpClientConfig::default()
        .standalone_stream(false)
        .reuse_connections(false);
    let without = rss_per_session(plan, pid, n, &bare, Some(SETTLE)).await?;
    // (A session with a GET stream open is never parked: no wait.) These reuse what the
    // bare sessions freed when they closed: their figure is a lower bound.
    let mut with_stream =
        rss_per_session(plan, pid, n, &oxmcp_http::HttpClientConfig::default(), None).await?;
    with_stream["after_closed_sessions"] = json!(2 * n);
    Ok(
        json!({"idle_sessions": n, "with_get_stream": with_stream, "session_only": without, "errors": 0}),
    )
}

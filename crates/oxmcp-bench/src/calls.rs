//! N connections calling a tool over the raw driver, each one call at a time, in one of three
//! shapes: a session per connection, one session shared by all (legacy era), or no session
//! (2026-07-28, stateless).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use crate::check::{Failure, Tally};
use crate::run::{Phase, Plan, Sessions};
use crate::stats::{DONE, Ticker};
use crate::wire::{self, Conn, Endpoint, Session, Template, ToolResult};

/// One worker: a connection per endpoint (reopened when the server closes it), its
/// headers, and which endpoint takes its next call.
struct Worker {
    conns: Vec<Option<Conn>>,
    headers: Vec<(&'static str, String)>,
    reopened: u64,
    turn: usize,
}

/// Connections and sessions set up before the clock starts; failures are counted.
async fn setup(
    plan: &Plan,
    eps: &[Endpoint],
    sessions: Sessions,
    tally: &mut Tally,
) -> (Vec<Worker>, Vec<Session>) {
    let mut workers = Vec::with_capacity(plan.clients);
    let mut opened = Vec::new();
    let modern = vec![
        ("mcp-protocol-version", wire::MODERN.to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", plan.tool.clone()),
    ];
    'workers: for i in 0..plan.clients {
        let t = Instant::now();
        // Sessions start on the endpoints in turn; calls then go to every one.
        let home = i % eps.len();
        let ep = &eps[home];
        let mut conns = Vec::with_capacity(eps.len());
        for e in eps {
            match Conn::open(e).await {
                Ok(c) => conns.push(Some(c)),
                Err(f) => {
                    tally.record(Err(f), t.elapsed());
                    continue 'workers;
                }
            }
        }
        let Some(mut conn) = conns[home].take() else {
            continue;
        };
        let headers = match sessions {
            Sessions::Stateless => Ok(modern.clone()),
            Sessions::Shared if i > 0 => match opened.first() {
                Some(s) => Ok(Session::headers(s)),
                None => Err(Failure::Transport(
                    "the shared session was not opened".into(),
                )),
            },
            Sessions::Each | Sessions::Shared => wire::initialize(&mut conn, ep).await.map(|s| {
                let h = s.headers();
                opened.push(s);
                h
            }),
        };
        match headers {
            Ok(headers) => {
                tally.record(Ok(()), t.elapsed());
                conns[home] = Some(conn);
                workers.push(Worker {
                    conns,
                    headers,
                    reopened: 0,
                    turn: home + 1,
                });
            }
            Err(f) => tally.record(Err(f), t.elapsed()),
        }
    }
    (workers, opened)
}

/// One checked call.
async fn call(
    conn: &mut Conn,
    ep: &Endpoint,
    headers: &[(&str, &str)],
    plan: &Plan,
    template: &Template,
    n: u64,
) -> Result<(), Failure> {
    let reply = conn.post(ep, headers, template.render(n)).await?;
    let result: ToolResult = wire::answer(&reply, n)?;
    let sent = plan.payload.message(n);
    plan.expect
        .check(sent.as_deref(), result.failed(), result.texts())
}

async fn work(
    worker: &mut Worker,
    eps: &[Endpoint],
    plan: &Plan,
    template: &Template,
    next: &AtomicU64,
    deadline: Option<Instant>,
) -> Tally {
    let mut tally = Tally::default();
    let headers: Vec<(&str, &str)> = worker
        .headers
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .collect();
    loop {
        // Call numbers start at 1 (0 is the initialize request), unique across workers.
        let n = next.fetch_add(1, Ordering::Relaxed) + 1;
        let more = match deadline {
            Some(d) => Instant::now() < d,
            None => n <= plan.requests as u64,
        };
        if !more {
            break;
        }
        let t = Instant::now();
        let e = worker.turn % eps.len();
        worker.turn += 1;
        let (ep, slot) = (&eps[e], &mut worker.conns[e]);
        if slot.as_ref().is_none_or(Conn::is_closed) {
            worker.reopened += 1;
            match Conn::open(ep).await {
                Ok(c) => *slot = Some(c),
                Err(f) => {
                    *slot = None;
                    tally.record(Err(f), t.elapsed());
                    DONE.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
        }
        let outcome = match slot.as_mut() {
            Some(conn) => call(conn, ep, &headers, plan, template, n).await,
            None => Err(Failure::Transport("no connection".into())),
        };
        tally.record(outcome, t.elapsed());
        DONE.fetch_add(1, Ordering::Relaxed);
    }
    tally
}

/// Runs the shape; returns the setup and the calls phase.
pub(crate) async fn run(
    plan: &Plan,
    url: &str,
    sessions: Sessions,
) -> anyhow::Result<(Vec<Phase>, Value)> {
    let mut eps = vec![Endpoint::resolve(url).await?];
    for also in &plan.also {
        eps.push(Endpoint::resolve(also).await?);
    }
    let mut setup_tally = Tally::default();
    let setup_start = Instant::now();
    let (mut workers, opened) = setup(plan, &eps, sessions, &mut setup_tally).await;
    let mut phases = vec![Phase::new(
        "setup",
        "setups",
        plan.clients,
        setup_tally,
        setup_start.elapsed(),
    )];
    if phases[0].tally.errors() > 0 {
        return Ok((phases, json!({})));
    }
    let meta = matches!(sessions, Sessions::Stateless).then(|| {
        json!({
            oxmcp_types::meta_keys::PROTOCOL_VERSION: wire::MODERN,
            oxmcp_types::meta_keys::CLIENT_INFO: {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")},
            oxmcp_types::meta_keys::CLIENT_CAPABILITIES: {},
        })
    });
    let template = Template::tools_call(
        &plan.tool,
        &plan.payload.args,
        plan.payload.base.as_deref(),
        meta,
    );
    let next = AtomicU64::new(0);
    let ticker = Ticker::start(&format!("{} connections", plan.clients));
    let start = Instant::now();
    let deadline = plan.duration.map(|d| start + d);
    let tallies = futures::future::join_all(
        workers
            .iter_mut()
            .map(|w| work(w, &eps, plan, &template, &next, deadline)),
    )
    .await;
    let elapsed = start.elapsed();
    drop(ticker);
    let mut tally = Tally::default();
    for t in tallies {
        tally.merge(t);
    }
    let reopened: u64 = workers.iter().map(|w| w.reopened).sum();
    phases.push(Phase::new("calls", "calls", plan.clients, tally, elapsed));
    // Not timed: end the sessions, on the first live connection to the first endpoint.
    if let Some(conn) = workers.iter_mut().find_map(|w| w.conns[0].as_mut()) {
        for s in &opened {
            wire::end(conn, &eps[0], s).await;
        }
    }
    Ok((phases, json!({"connections_reopened": reopened})))
}

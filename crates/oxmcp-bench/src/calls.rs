//! N connections calling a tool over the raw driver, each one call at a time, in one of three
//! shapes: a session per connection, one session shared by all (legacy era), or no session
//! (2026-07-28, stateless). Over Streamable HTTP, sessions are opened over hyper (`wire`),
//! before the clock starts, and the timed calls go over the driver's own lean HTTP/1.1
//! (`lean`); over WebSocket each connection is its session, opened with its own frames
//! (`lean_ws`), and over gRPC each connection's `Connect` stream (`lean_grpc`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use crate::check::{Failure, Tally};
use crate::lean::{self, Lean, Needles};
use crate::lean_grpc::LeanGrpc;
use crate::lean_ws::LeanWs;
use crate::run::{Phase, Plan, Sessions};
use crate::stats::{DONE, Ticker};
use crate::wire::{self, Body, Conn, Endpoint, Kind, Session, Template};

/// One worker: a connection per endpoint (reopened when the server closes it), its
/// headers, the needles its answers are checked with, and which endpoint takes its next
/// call.
struct Worker {
    conns: Vec<Option<Link>>,
    /// A WebSocket or gRPC connection starts with `initialize` (legacy era).
    handshake: bool,
    headers: Vec<(&'static str, String)>,
    needles: Needles,
    reopened: u64,
    turn: usize,
}

/// A connection of the raw driver.
enum Link {
    Http(Lean),
    Ws(LeanWs),
    Grpc(LeanGrpc),
}

impl Link {
    fn is_closed(&self) -> bool {
        match self {
            Link::Http(c) => c.is_closed(),
            Link::Ws(c) => c.is_closed(),
            Link::Grpc(c) => c.is_closed(),
        }
    }

    /// Ends the connection's use at the end of a run: a gRPC stream is ended by the client
    /// (a WebSocket or HTTP connection is just dropped).
    async fn end(&mut self) {
        if let Link::Grpc(c) = self {
            c.end().await;
        }
    }
}

/// A connection for timed calls to `ep`: over HTTP its requests carry `headers`; over
/// WebSocket and gRPC it is a session of its own when `handshake`.
async fn open(
    ep: &Endpoint,
    headers: &[(&'static str, String)],
    handshake: bool,
) -> Result<Link, Failure> {
    let (addr, authority, path) = ep.parts();
    match ep.kind() {
        Kind::Ws => {
            let mut ws = LeanWs::open(addr, authority, path).await?;
            if handshake {
                initialize(&mut Stream::Ws(&mut ws)).await?;
            }
            return Ok(Link::Ws(ws));
        }
        Kind::Grpc => {
            let mut grpc = LeanGrpc::open(addr, authority).await?;
            if handshake {
                initialize(&mut Stream::Grpc(&mut grpc)).await?;
            }
            grpc.ready().await?;
            return Ok(Link::Grpc(grpc));
        }
        Kind::Http => {}
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Ok(Link::Http(
        Lean::open(addr, authority, path, &headers).await?,
    ))
}

/// A worker's headers: a new session's (`initialize`, checked), the shared session's, or
/// the 2026-07-28 ones.
async fn headers_of(
    i: usize,
    ep: &Endpoint,
    plan: &Plan,
    sessions: Sessions,
    opened: &mut Vec<Session>,
) -> Result<Vec<(&'static str, String)>, Failure> {
    if ep.is_stream() {
        // The connection is the session, opened with it.
        return Ok(Vec::new());
    }
    match sessions {
        Sessions::Stateless => Ok(vec![
            ("mcp-protocol-version", wire::MODERN.to_owned()),
            ("mcp-method", "tools/call".to_owned()),
            ("mcp-name", plan.tool.clone()),
        ]),
        Sessions::Shared if i > 0 => match opened.first() {
            Some(s) => Ok(Session::headers(s)),
            None => Err(Failure::Transport(
                "the shared session was not opened".into(),
            )),
        },
        Sessions::Each | Sessions::Shared => {
            let mut conn = Conn::open(ep).await?;
            let session = wire::initialize(&mut conn, ep).await?;
            let h = session.headers();
            opened.push(session);
            Ok(h)
        }
    }
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
    'workers: for i in 0..plan.clients {
        let t = Instant::now();
        // Sessions start on the endpoints in turn; calls then go to every one.
        let home = i % eps.len();
        let headers = match headers_of(i, &eps[home], plan, sessions, &mut opened).await {
            Ok(h) => h,
            Err(f) => {
                tally.record(Err(f), t.elapsed());
                continue;
            }
        };
        let mut conns = Vec::with_capacity(eps.len());
        let handshake = sessions != Sessions::Stateless;
        for e in eps {
            match open(e, &headers, handshake).await {
                Ok(c) => conns.push(Some(c)),
                Err(f) => {
                    tally.record(Err(f), t.elapsed());
                    continue 'workers;
                }
            }
        }
        tally.record(Ok(()), t.elapsed());
        workers.push(Worker {
            conns,
            handshake,
            headers,
            needles: Needles::for_plan(plan),
            reopened: 0,
            turn: home + 1,
        });
    }
    (workers, opened)
}

/// One checked call: its answer's bytes compared, or parsed and checked in full when the
/// comparison cannot accept it.
async fn call(
    conn: &mut Link,
    needles: &mut Needles,
    plan: &Plan,
    template: &Template,
    n: u64,
) -> Result<(), Failure> {
    let conn = match conn {
        Link::Http(conn) => conn,
        Link::Ws(conn) => {
            return call_stream(&mut Stream::Ws(conn), needles, plan, template, n).await;
        }
        Link::Grpc(conn) => {
            return call_stream(&mut Stream::Grpc(conn), needles, plan, template, n).await;
        }
    };
    let answer = conn.call(template, n).await?;
    if answer.status == 200 && answer.kind == Body::Json && needles.accept(answer.body, n) {
        return Ok(());
    }
    let result = lean::parsed(&answer, n)?;
    let sent = plan.payload.message(n);
    plan.expect
        .check(sent.as_deref(), result.failed(), result.texts())
}

/// A connection that is its own session: a message out, messages in.
enum Stream<'a> {
    Ws(&'a mut LeanWs),
    Grpc(&'a mut LeanGrpc),
}

impl Stream<'_> {
    async fn send(&mut self, template: &Template, n: u64) -> Result<(), Failure> {
        match self {
            Stream::Ws(c) => c.send(template, n).await,
            Stream::Grpc(c) => c.send(template, n),
        }
    }

    async fn send_json(&mut self, json: &[u8]) -> Result<(), Failure> {
        match self {
            Stream::Ws(c) => c.send_json(json).await,
            Stream::Grpc(c) => c.send_json(json),
        }
    }

    async fn next(&mut self) -> Result<&[u8], Failure> {
        match self {
            Stream::Ws(c) => c.next().await,
            Stream::Grpc(c) => c.next().await,
        }
    }

    fn close(&mut self) {
        match self {
            Stream::Ws(c) => c.close(),
            Stream::Grpc(c) => c.close(),
        }
    }
}

/// The legacy handshake on a connection that is its own session: `initialize` answered
/// with a protocol version, then `notifications/initialized`.
async fn initialize(conn: &mut Stream<'_>) -> Result<(), Failure> {
    conn.send_json(&wire::initialize_request()).await?;
    wire::initialize_answer(conn.next().await?)?;
    conn.send_json(wire::INITIALIZED).await
}

/// [`call`] over WebSocket or gRPC: notifications before the answer are passed over, all
/// within [`wire::TIMEOUT`]. After any failure the connection is not used again (the rest
/// of that call's messages would be read as the next call's).
async fn call_stream(
    conn: &mut Stream<'_>,
    needles: &mut Needles,
    plan: &Plan,
    template: &Template,
    n: u64,
) -> Result<(), Failure> {
    let answer = answer_stream(conn, needles, plan, template, n);
    let checked = tokio::time::timeout(wire::TIMEOUT, answer)
        .await
        .unwrap_or(Err(Failure::Timeout));
    if checked.is_err() {
        conn.close();
    }
    checked
}

async fn answer_stream(
    conn: &mut Stream<'_>,
    needles: &mut Needles,
    plan: &Plan,
    template: &Template,
    n: u64,
) -> Result<(), Failure> {
    conn.send(template, n).await?;
    loop {
        let payload = conn.next().await?;
        if needles.accept(payload, n) {
            return Ok(());
        }
        let message: Value = serde_json::from_slice(payload)
            .map_err(|e| Failure::Wrong(format!("a message that is not JSON: {e}")))?;
        if message.get("id").is_none() && message.get("method").is_some() {
            continue;
        }
        return lean::check_message(payload, n, plan);
    }
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
        if slot.as_ref().is_none_or(Link::is_closed) {
            worker.reopened += 1;
            match open(ep, &worker.headers, worker.handshake).await {
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
            Some(conn) => call(conn, &mut worker.needles, plan, template, n).await,
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
    if sessions == Sessions::Shared && eps.iter().any(Endpoint::is_stream) {
        anyhow::bail!(
            "--session shared is for Streamable HTTP: a WebSocket or gRPC connection is its own session"
        );
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
    // Not timed: end the streams, then the HTTP sessions, on a connection of their own to
    // the first endpoint.
    let links = workers
        .iter_mut()
        .flat_map(|w| w.conns.iter_mut().flatten());
    futures::future::join_all(links.map(Link::end)).await;
    drop(workers);
    if !opened.is_empty()
        && let Ok(mut conn) = Conn::open(&eps[0]).await
    {
        for s in &opened {
            wire::end(&mut conn, &eps[0], s).await;
        }
    }
    Ok((phases, json!({"connections_reopened": reopened})))
}

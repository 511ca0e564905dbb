//! A burst of new sessions: N clients at once, each on its own connection, each sending
//! `initialize` and `notifications/initialized`. A refusal (429, 503, a JSON-RPC error) or no
//! answer is an error; the sessions opened are ended afterwards (not timed).

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::check::{Failure, Tally};
use crate::run::Phase;
use crate::stats::{DONE, Ticker};
use crate::wire::{self, Conn, Endpoint, Session};

async fn open(ep: &Endpoint) -> Result<(Conn, Session), Failure> {
    let mut conn = Conn::open(ep).await?;
    let session = wire::initialize(&mut conn, ep).await?;
    Ok((conn, session))
}

pub(crate) async fn run(url: &str, n: usize) -> anyhow::Result<Vec<Phase>> {
    let ep = Endpoint::resolve(url).await?;
    let ticker = Ticker::start(&format!("burst of {n} sessions"));
    let start = Instant::now();
    let outcomes = futures::future::join_all((0..n).map(|_| {
        let ep = &ep;
        async move {
            let t = Instant::now();
            let r = open(ep).await;
            DONE.fetch_add(1, Ordering::Relaxed);
            (r, t.elapsed())
        }
    }))
    .await;
    let elapsed = start.elapsed();
    drop(ticker);
    let mut tally = Tally::default();
    let mut opened = Vec::new();
    for (r, latency) in outcomes {
        match r {
            Ok(s) => {
                tally.record(Ok(()), latency);
                opened.push(s);
            }
            Err(f) => tally.record(Err(f), latency),
        }
    }
    futures::future::join_all(
        opened
            .iter_mut()
            .map(|(conn, session)| wire::end(conn, &ep, session)),
    )
    .await;
    Ok(vec![Phase::new("burst", "sessions", n, tally, elapsed)])
}

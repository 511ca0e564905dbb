//! Scale-out under failure, with a real Redis: an instance killed mid-stream, Redis
//! restarted, Redis too slow.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxmcp_tests::postgres::Postgres;
use oxmcp_tests::scale::Shared;
use oxmcp_tests::scale::{
    Instance, Proxy, Redis, SseReader, call, open_session, post, post_with, tool,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

const V: &str = "2025-11-25";

/// Resumptions the kill test's clients made.
static RESUMED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How one call ended, as its client saw it.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// The result, and how many final answers arrived for it (must be 1).
    Done(usize),
    /// An error answer from the server (the instance running it died).
    Failed(String),
    /// The request failed before its stream could be resumed (the instance died before it
    /// answered anything, or before it stored an event): the client sees a transport error.
    Lost,
}

/// One call through `url`, resumed with `Last-Event-ID` (through `url` too, so on any
/// instance) whenever its stream breaks, until its final answer.
async fn resilient_call(url: &str, sid: &str, id: i64) -> Outcome {
    let mut body = tool(id, "slow", json!({"steps": 4, "delay_ms": 25}));
    body["params"]["_meta"] = json!({"progressToken": id});
    let mut resp = None;
    for _ in 0..50 {
        match post(url, sid, V, &body).send().await {
            Ok(r) if r.status() == 200 => {
                resp = Some(r);
                break;
            }
            // Busy: it never reached a handler, so sending it again is safe.
            Ok(r) if r.status() == 503 => tokio::time::sleep(Duration::from_millis(50)).await,
            // It may have run: not sent again.
            Ok(r) => {
                assert_eq!(r.status(), 502, "only a dead instance fails a call");
                return Outcome::Lost;
            }
            Err(e) => panic!("the proxy answers: {e}"),
        }
    }
    let mut resp = resp.expect("the call was accepted");
    let mut last_id: Option<String> = None;
    let mut finals = 0;
    let mut outcome = None;
    loop {
        let mut sse = SseReader::new(resp);
        loop {
            let next = tokio::time::timeout(Duration::from_secs(20), sse.next_event()).await;
            let Ok(Some(e)) = next else { break };
            if let Some(i) = e.id.clone() {
                last_id = Some(i);
            }
            let Some(m) = e.data else { continue };
            if m["id"] == id {
                finals += 1;
                outcome = Some(match m.get("error") {
                    Some(err) => Outcome::Failed(err["message"].as_str().unwrap_or("").to_owned()),
                    None => Outcome::Done(finals),
                });
            }
        }
        if let Some(o) = outcome {
            return match o {
                Outcome::Done(_) => Outcome::Done(finals),
                other => other,
            };
        }
        let Some(last) = last_id.clone() else {
            return Outcome::Lost;
        };
        RESUMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Resume on whichever instance the proxy picks.
        let mut resumed = None;
        for _ in 0..100 {
            let r = oxmcp_tests::scale::resume(url, sid, V, &last).send().await;
            match r {
                Ok(r) if r.status() == 200 => {
                    resumed = Some(r);
                    break;
                }
                Ok(r) if r.status() == 404 => return Outcome::Lost,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        resp = resumed.expect("a resumption was accepted");
    }
}

/// 50 sessions make 1,000 calls through the proxy; one instance is SIGKILLed halfway. Every
/// call ends exactly once: its result (never twice), or an error saying the instance running
/// it stopped. None hangs.
async fn an_instance_killed_mid_stream_loses_nothing_completed_on(redis: &impl Shared) {
    let mut all = Vec::new();
    for name in ["a", "b", "c"] {
        all.push(Instance::start(redis, name, &["--response-mode", "sse"]).await);
    }
    let proxy = Proxy::start(&all.iter().collect::<Vec<_>>()).await;
    let url = proxy.url.clone();
    let outcomes: Arc<Mutex<HashMap<(usize, i64), Outcome>>> = Default::default();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    // The proxy keeps answering 502 for a dead instance only while it tries it.
    for s in 0..50 {
        let (url, outcomes, done) = (url.clone(), outcomes.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let sid = open_session(&url, V).await;
            for id in 1..=20 {
                let o = resilient_call(&url, &sid, id).await;
                assert!(outcomes.lock().insert((s, id), o).is_none());
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
    }
    let t0 = Instant::now();
    while done.load(std::sync::atomic::Ordering::Relaxed) < 400 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "calls stalled before the kill"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    all[1].kill().await;
    let finished = tokio::time::timeout(Duration::from_secs(120), futures::future::join_all(tasks))
        .await
        .expect("no call hangs");
    for f in finished {
        f.unwrap();
    }
    let outcomes = outcomes.lock();
    assert_eq!(outcomes.len(), 1000, "every call ended");
    let twice: Vec<_> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Done(n) if *n != 1))
        .collect();
    assert!(
        twice.is_empty(),
        "results that arrived more than once: {twice:?}"
    );
    let failed: Vec<&String> = outcomes
        .values()
        .filter_map(|o| match o {
            Outcome::Failed(m) => Some(m),
            _ => None,
        })
        .collect();
    let lost = outcomes.values().filter(|o| **o == Outcome::Lost).count();
    let ok = outcomes
        .values()
        .filter(|o| matches!(o, Outcome::Done(1)))
        .count();
    let resumed = RESUMED.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "kill test: {ok} results, {} failed (instance died), {lost} lost before any event, {resumed} streams resumed",
        failed.len()
    );
    assert!(
        resumed + failed.len() + lost > 0,
        "b's death reached no call: the test did not test it"
    );
    for m in &failed {
        assert!(
            m.contains("(b) stopped"),
            "only b's requests fail, saying so: {m}"
        );
    }
    // At most the calls in flight on b when it died (one per session) fail.
    assert!(
        failed.len() + lost <= 50,
        "{} failed, {lost} lost",
        failed.len()
    );
    assert!(ok >= 950, "{ok} results");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_killed_mid_stream_loses_nothing_completed() {
    an_instance_killed_mid_stream_loses_nothing_completed_on(&Redis::start().await).await;
}

/// The same, with PostgreSQL as the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_killed_mid_stream_loses_nothing_completed_postgres() {
    an_instance_killed_mid_stream_loses_nothing_completed_on(&Postgres::start().await).await;
}

/// Redis goes away: requests get a clear 503 busy error at once, nothing panics; Redis comes
/// back (empty): the instances recover by themselves, old sessions are 404 (the client
/// initializes again) and new ones work across instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_and_restart() {
    let mut redis = Redis::start().await;
    let port = redis.port;
    let mut all = Vec::new();
    for name in ["a", "b"] {
        all.push(Instance::start(&redis, name, &[]).await);
    }
    let sid = open_session(&all[0].url, V).await;
    assert_eq!(
        call(
            &all[1].url,
            &sid,
            V,
            &tool(1, "echo", json!({"message":"x"}))
        )
        .await
        .0,
        200
    );
    redis.stop().await;
    for inst in &all {
        // An instance learns that Redis went when its bus connection breaks, a moment later
        // (at the latest when the session's lease ends, 1 s): until then it may still serve.
        let t0 = Instant::now();
        let r = loop {
            let r = post(&inst.url, &sid, V, &tool(2, "echo", json!({"message":"x"})))
                .send()
                .await
                .unwrap();
            if r.status() != 200 || t0.elapsed() > Duration::from_secs(3) {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(r.status(), 503, "{}", inst.name);
        assert!(r.headers().contains_key("retry-after"));
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32000, "{v}");
        assert_eq!(v["error"]["data"]["transient"], true, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("session store"),
            "{v}"
        );
        assert!(t0.elapsed() < Duration::from_secs(5), "answered at once");
    }
    // A new session cannot be saved: none is made (and no id handed out).
    let r = oxmcp_tests::scale::initialize(&all[0].url, V).await;
    assert_eq!(r.status(), 503, "no session without the store");
    assert!(r.headers().get("mcp-session-id").is_none());
    // Redis is back, empty.
    let redis = Redis::start_on(port).await;
    let t0 = Instant::now();
    let sid2 = loop {
        let r = oxmcp_tests::scale::initialize(&all[0].url, V).await;
        if r.status() == 200 {
            break r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the instances recover"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // b reconnects to the store on its own schedule: until it has, it answers 503.
    let t0 = Instant::now();
    let old = loop {
        let status = call(
            &all[1].url,
            &sid,
            V,
            &tool(3, "echo", json!({"message":"x"})),
        )
        .await
        .0;
        if status != 503 || t0.elapsed() > Duration::from_secs(20) {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(old, 404, "the session died with the store's data");
    assert_eq!(
        call(
            &all[1].url,
            &sid2,
            V,
            &tool(4, "echo", json!({"message":"y"}))
        )
        .await
        .0,
        200
    );
    // The bus works again: sampling asked on b is answered on a.
    let r = post(
        &all[1].url,
        &sid2,
        V,
        &tool(5, "sample", json!({"prompt":"p"})),
    )
    .send()
    .await
    .unwrap();
    let mut sse = SseReader::new(r);
    let ask = sse.next_message(10).await.unwrap().data.unwrap();
    let answer = oxmcp_tests::scale::sampled(&ask, "back");
    let mut delivered = false;
    for _ in 0..50 {
        // The bus reader reconnects with backoff; until then the answer may wait.
        if call(&all[0].url, &sid2, V, &answer).await.0 == 202 {
            delivered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(delivered);
    let done = sse.next_message(20).await.unwrap().data.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "back", "{done}");
    for inst in &mut all {
        assert!(
            inst.child.try_wait().unwrap().is_none(),
            "{} still running",
            inst.name
        );
    }
    drop(redis);
}

/// Redis stalls (DEBUG SLEEP): requests are refused as busy (503, -32000) within the store
/// timeout, and past the waiting limit at once, instead of piling up; then all is well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_redis_gets_back_pressure() {
    let redis = Redis::start().await;
    // Every call asks the store (no lease), so every call meets the sleeping Redis.
    let inst = Instance::start(
        &redis,
        "a",
        &[
            "--store-timeout",
            "500ms",
            "--store-max-waiting",
            "8",
            "--store-lease",
            "0",
        ],
    )
    .await;
    let sid = open_session(&inst.url, V).await;
    let port = redis.port.to_string();
    let sleeper = std::thread::spawn(move || {
        std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port, "DEBUG", "SLEEP", "5"])
            .output()
            .unwrap();
        // When Redis answers, it is awake again.
        Instant::now()
    });
    // Until Redis stops answering a PING within 100 ms, it is not asleep yet.
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "Redis never went to sleep"
        );
        if !answers_ping(redis.port).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // One client for the hundred calls: building one each took seconds on a loaded machine,
    // and late calls then missed Redis's sleep.
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let (url, sid, client) = (inst.url.clone(), sid.clone(), client.clone());
            tokio::spawn(async move {
                let r = post_with(
                    &client,
                    &url,
                    &sid,
                    V,
                    &tool(i, "echo", json!({"message": "x"})),
                )
                .send()
                .await
                .unwrap();
                let status = r.status().as_u16();
                let v: Value = r.json().await.unwrap();
                (status, v)
            })
        })
        .collect();
    let mut busy = 0;
    let mut timed_out = 0;
    for c in calls {
        let (status, v) = c.await.unwrap();
        assert_eq!(status, 503, "{v}");
        assert_eq!(v["error"]["code"], -32000, "{v}");
        let m = v["error"]["message"].as_str().unwrap();
        if m.contains("operations waiting") {
            busy += 1;
        } else if m.contains("timed out") {
            timed_out += 1;
        }
    }
    let answered = Instant::now();
    let woke = sleeper.join().unwrap();
    assert!(
        answered < woke,
        "all were answered while Redis still slept, none queued until it woke ({:?} after the first call)",
        answered - t0
    );
    // At most 8 wait at once, each at most 500 ms: the rest are refused at once. (How many
    // of each depends on how fast the 100 requests arrive on this machine.)
    assert_eq!(busy + timed_out, 100, "{busy} busy, {timed_out} timed out");
    assert!(
        busy >= 10,
        "past the waiting limit, refused at once: {busy} busy, {timed_out} timed out"
    );
    assert_eq!(
        call(
            &inst.url,
            &sid,
            V,
            &tool(500, "echo", json!({"message":"x"}))
        )
        .await
        .0,
        200
    );
}

/// Whether Redis on `port` answers a PING within 100 ms.
async fn answers_ping(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if s.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(
        tokio::time::timeout(Duration::from_millis(100), s.read(&mut buf)).await,
        Ok(Ok(n)) if n > 0
    )
}

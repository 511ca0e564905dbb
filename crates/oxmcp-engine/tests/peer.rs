//! The engine over channels, with virtual time: timeouts, progress resets, the hard cap,
//! cancellation on drop, unknown responses, ordering and the in-flight bound, and batch
//! entries under the same accounting as single requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_engine::{
    CallError, EngineConfig, HandlerResult, Peer, RequestContext, RequestOptions, Service,
};
use oxmcp_jsonrpc::{Notification, Request, to_raw};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A service that records notifications and answers `sleep` after `ms` virtual milliseconds.
#[derive(Default)]
struct Recorder {
    notes: Mutex<Vec<String>>,
    running: Mutex<usize>,
    max_running: Mutex<usize>,
}

struct Svc(Arc<Recorder>);

impl Service for Svc {
    fn call(&self, req: Request, _ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
        let me = self.0.clone();
        Box::pin(async move {
            *me.running.lock().unwrap() += 1;
            {
                let now = *me.running.lock().unwrap();
                let mut max = me.max_running.lock().unwrap();
                *max = (*max).max(now);
            }
            let params: Value = req
                .params
                .as_deref()
                .map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
            let ms = params["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            *me.running.lock().unwrap() -= 1;
            Ok(to_raw(&json!({"slept": ms})).unwrap())
        })
    }

    fn notify(&self, n: Notification, _peer: &Peer) {
        self.0.notes.lock().unwrap().push(n.method);
    }

    /// As on a 2025-03-26 session.
    fn batch_allowed(&self) -> bool {
        true
    }
}

struct Remote {
    to_engine: mpsc::Sender<oxmcp_jsonrpc::Inbound>,
    from_engine: mpsc::Receiver<oxmcp_jsonrpc::Outbound>,
}

impl Remote {
    async fn send(&self, v: Value) {
        self.to_engine
            .send(v.to_string().into_bytes().into())
            .await
            .unwrap();
    }
    /// The next message (stream signals are skipped, as stream transports skip them).
    async fn recv(&mut self) -> Value {
        loop {
            let out = self.from_engine.recv().await.unwrap();
            if let Some(line) = out.line() {
                return serde_json::from_str(line).unwrap();
            }
        }
    }
}

fn start(service: Arc<Recorder>, config: EngineConfig) -> (Peer, Remote) {
    let (out_tx, out_rx) = mpsc::channel(64);
    let (in_tx, in_rx) = mpsc::channel(64);
    let peer = Peer::new(out_tx);
    tokio::spawn(oxmcp_engine::run(
        peer.clone(),
        in_rx,
        Arc::new(Svc(service)),
        config,
    ));
    (
        peer,
        Remote {
            to_engine: in_tx,
            from_engine: out_rx,
        },
    )
}

#[tokio::test(start_paused = true)]
async fn timeout_sends_cancelled() {
    let (peer, mut remote) = start(Arc::default(), EngineConfig::default());
    let opts = RequestOptions::default().timeout(Duration::from_secs(5));
    let call = tokio::spawn(async move { peer.request_raw("slow", json!({}), &opts).await });
    let req = remote.recv().await;
    assert_eq!(req["method"], "slow");
    let err = call.await.unwrap().unwrap_err();
    assert!(
        matches!(err, CallError::Timeout(d) if d >= Duration::from_secs(5)),
        "{err:?}"
    );
    let cancel = remote.recv().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], req["id"]);
    // A late answer for the timed-out request is ignored, not an error.
    remote
        .send(json!({"jsonrpc":"2.0","id":req["id"],"result":{}}))
        .await;
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_up_to_the_cap() {
    let (peer, mut remote) = start(Arc::default(), EngineConfig::default());
    let seen = Arc::new(Mutex::new(0));
    let s2 = seen.clone();
    let opts = RequestOptions::default()
        .timeout(Duration::from_secs(2))
        .max_total(Duration::from_secs(7))
        .on_progress(move |_| *s2.lock().unwrap() += 1);
    let p2 = peer.clone();
    let call = tokio::spawn(async move { p2.request_raw("work", json!({}), &opts).await });
    let req = remote.recv().await;
    let token = req["params"]["_meta"]["progressToken"].clone();
    assert_eq!(token, req["id"], "the token is the request id");
    let start = tokio::time::Instant::now();
    // Progress every 1.5 s keeps a 2 s timeout alive... until the 7 s cap.
    for i in 1..=10 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        if call.is_finished() {
            break;
        }
        remote
            .send(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":i}}))
            .await;
    }
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Timeout(_)));
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_secs(7) && elapsed < Duration::from_secs(9),
        "{elapsed:?}"
    );
    assert!(*seen.lock().unwrap() >= 4);
    // Progress for a token nobody holds is ignored.
    remote
        .send(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":999,"progress":1}}))
        .await;
    assert_eq!(peer.pending_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_request_cancels_it() {
    let (peer, mut remote) = start(Arc::default(), EngineConfig::default());
    let p2 = peer.clone();
    let call = tokio::spawn(async move {
        p2.request_raw("long", json!({}), &RequestOptions::default())
            .await
    });
    let req = remote.recv().await;
    call.abort();
    let _ = call.await;
    let cancel = remote.recv().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], req["id"]);
    assert_eq!(peer.pending_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn ids_are_unique_and_responses_correlate() {
    let (peer, mut remote) = start(Arc::default(), EngineConfig::default());
    let mut calls = Vec::new();
    for i in 0..5 {
        let p = peer.clone();
        calls.push(tokio::spawn(async move {
            p.request_as::<_, Value>("echo", &json!({"i": i}), &RequestOptions::default())
                .await
        }));
    }
    let mut reqs = Vec::new();
    for _ in 0..5 {
        reqs.push(remote.recv().await);
    }
    let mut ids: Vec<i64> = reqs.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5);
    // Answer in reverse order; each caller gets its own result.
    for r in reqs.iter().rev() {
        remote
            .send(json!({"jsonrpc":"2.0","id":r["id"],"result":{"i":r["params"]["i"]}}))
            .await;
    }
    // Responses for unknown ids, and broken responses, are ignored.
    remote
        .send(json!({"jsonrpc":"2.0","id":12345,"result":{}}))
        .await;
    remote
        .send(json!({"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}))
        .await;
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap(), json!({"i": i}));
    }
    // An error response surfaces as CallError::Rpc.
    let p = peer.clone();
    let call = tokio::spawn(async move {
        p.request_raw("x", json!({}), &RequestOptions::default())
            .await
    });
    let r = remote.recv().await;
    remote
        .send(json!({"jsonrpc":"2.0","id":r["id"],"error":{"code":-32601,"message":"no"}}))
        .await;
    assert_eq!(
        call.await.unwrap().unwrap_err().rpc().unwrap().code.0,
        -32601
    );
}

#[tokio::test(start_paused = true)]
async fn in_flight_is_bounded_and_notifications_keep_order() {
    let rec: Arc<Recorder> = Arc::default();
    let config = EngineConfig::default().max_in_flight(3);
    let (_peer, mut remote) = start(rec.clone(), config);
    for i in 0..10 {
        remote
            .send(json!({"jsonrpc":"2.0","id":i,"method":"sleep","params":{"ms":100}}))
            .await;
        remote
            .send(json!({"jsonrpc":"2.0","method":format!("n/{i}")}))
            .await;
    }
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(remote.recv().await["id"].as_i64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..10).collect::<Vec<_>>(),
        "every request answered once"
    );
    assert_eq!(*rec.max_running.lock().unwrap(), 3);
    let expected: Vec<String> = (0..10).map(|i| format!("n/{i}")).collect();
    assert_eq!(*rec.notes.lock().unwrap(), expected);
}

#[tokio::test(start_paused = true)]
async fn end_of_input_answers_accepted_requests_then_closes() {
    let (peer, mut remote) = start(Arc::default(), EngineConfig::default());
    remote
        .send(json!({"jsonrpc":"2.0","id":1,"method":"sleep","params":{"ms":500}}))
        .await;
    let p = peer.clone();
    let outgoing = tokio::spawn(async move {
        p.request_raw("x", json!({}), &RequestOptions::default())
            .await
    });
    let _ = remote.recv().await; // our own request "x"
    let Remote {
        to_engine,
        mut from_engine,
    } = remote;
    drop(to_engine);
    let answer: Value =
        serde_json::from_str(from_engine.recv().await.unwrap().line().unwrap()).unwrap();
    assert_eq!(answer["id"], 1, "the accepted request is still answered");
    assert!(matches!(outgoing.await.unwrap(), Err(CallError::Closed)));
    assert!(peer.is_closed());
}

/// Sends a notification through the handler's peer before answering.
struct Chatty;

impl Service for Chatty {
    fn call(&self, _req: Request, ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
        Box::pin(async move {
            ctx.peer
                .notify_raw("notifications/message", &json!({"level":"info","data":"x"}))
                .await
                .unwrap();
            Ok(to_raw(&json!({})).unwrap())
        })
    }
    fn notify(&self, _n: Notification, _peer: &Peer) {}
}

#[tokio::test]
async fn messages_are_tagged_with_their_request() {
    let (out_tx, mut out_rx) = mpsc::channel(64);
    let (in_tx, in_rx) = mpsc::channel(64);
    let peer = Peer::new(out_tx);
    tokio::spawn(oxmcp_engine::run(
        peer.clone(),
        in_rx,
        Arc::new(Chatty),
        EngineConfig::default(),
    ));
    in_tx
        .send(br#"{"jsonrpc":"2.0","id":"a","method":"x"}"#.to_vec().into())
        .await
        .unwrap();
    let note = out_rx.recv().await.unwrap();
    let note = note.message().unwrap();
    assert!(note.line.contains("notifications/message"));
    assert_eq!(note.related, Some(oxmcp_jsonrpc::RequestId::from("a")));
    assert_eq!(note.method(), Some("notifications/message"));
    let answer = out_rx.recv().await.unwrap();
    let answer = answer.message().unwrap();
    assert!(answer.line.contains(r#""id":"a""#));
    assert_eq!(answer.related, Some(oxmcp_jsonrpc::RequestId::from("a")));
    assert!(answer.is_response());
    peer.notify_raw("notifications/tools/list_changed", &json!({}))
        .await
        .unwrap();
    assert_eq!(
        out_rx.recv().await.unwrap().related().cloned(),
        None,
        "the connection's own peer is unscoped"
    );
}

fn sleep_req(id: i64, ms: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"sleep","params":{"ms":ms}})
}

fn cancel(id: i64) -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}})
}

/// A batch answer's entries: (id, error code or `None` for a result), sorted.
fn entries(answer: &Value) -> Vec<(i64, Option<i64>)> {
    let arr = answer
        .as_array()
        .unwrap_or_else(|| panic!("a batch answer: {answer}"));
    let mut v: Vec<_> = arr
        .iter()
        .map(|m| (m["id"].as_i64().unwrap(), m["error"]["code"].as_i64()))
        .collect();
    v.sort_unstable();
    v
}

#[tokio::test(start_paused = true)]
async fn batch_entries_count_against_the_in_flight_bound() {
    let rec: Arc<Recorder> = Arc::default();
    let config = EngineConfig::default().max_in_flight(2);
    let (_peer, mut remote) = start(rec.clone(), config);
    remote
        .send(Value::Array((0..6).map(|i| sleep_req(i, 100)).collect()))
        .await;
    let answer = remote.recv().await;
    assert_eq!(
        entries(&answer),
        (0..6).map(|i| (i, None)).collect::<Vec<_>>()
    );
    assert_eq!(*rec.max_running.lock().unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn batch_entries_over_busy_after_are_told_the_server_is_busy() {
    let config = EngineConfig::default().busy_after(Some(3));
    let (_peer, mut remote) = start(Arc::default(), config);
    remote.send(sleep_req(100, 1000)).await;
    remote
        .send(Value::Array((0..4).map(|i| sleep_req(i, 100)).collect()))
        .await;
    // One request and two entries in flight make three: the last two entries are refused.
    let answer = remote.recv().await;
    assert_eq!(
        entries(&answer),
        [(0, None), (1, None), (2, Some(-32000)), (3, Some(-32000))]
    );
    for m in answer.as_array().unwrap() {
        if m.get("error").is_some() {
            assert_eq!(m["error"]["data"]["transient"], true, "{m}");
        }
    }
    assert_eq!(remote.recv().await["id"], 100);
    // Entries answered free their places.
    remote
        .send(Value::Array((4..7).map(|i| sleep_req(i, 100)).collect()))
        .await;
    assert_eq!(
        entries(&remote.recv().await),
        [(4, None), (5, None), (6, None)]
    );
}

#[tokio::test(start_paused = true)]
async fn batch_entries_can_be_cancelled() {
    let config = EngineConfig::default().max_in_flight(1);
    let (_peer, mut remote) = start(Arc::default(), config);
    // Entry 2 is still queued behind entry 1 when it is cancelled.
    remote
        .send(json!([
            sleep_req(1, 100),
            sleep_req(2, 10_000),
            sleep_req(3, 100)
        ]))
        .await;
    remote.send(cancel(2)).await;
    let answer = remote.recv().await;
    assert_eq!(
        entries(&answer),
        [(1, None), (3, None)],
        "a cancelled entry gets no response"
    );
    // Entry 4 is running when it is cancelled.
    remote
        .send(json!([sleep_req(4, 10_000), sleep_req(5, 100)]))
        .await;
    remote.send(cancel(4)).await;
    assert_eq!(entries(&remote.recv().await), [(5, None)]);
    // A batch whose every request is cancelled gets no answer at all, only the marker that
    // lets a transport end the batch's stream.
    remote.send(json!([sleep_req(6, 10_000)])).await;
    remote.send(cancel(6)).await;
    let marker = remote.from_engine.recv().await.unwrap();
    assert_eq!(
        marker,
        oxmcp_jsonrpc::Outbound::ended(oxmcp_jsonrpc::RequestId::Number(6))
    );
    remote.send(sleep_req(7, 20_000)).await;
    assert_eq!(remote.recv().await["id"], 7, "nothing came before it");
}

/// A batch's requests wait in the queue until the whole batch is handled, so one cancelled
/// later in the same batch never starts (a request on its own starts at once when a slot is
/// free: nothing it could be cancelled by has been read yet).
#[tokio::test(start_paused = true)]
async fn a_request_cancelled_later_in_its_own_batch_never_runs() {
    let recorder = Arc::new(Recorder::default());
    let (_peer, mut remote) = start(recorder.clone(), EngineConfig::default());
    remote
        .send(json!([sleep_req(1, 100), sleep_req(2, 100), cancel(1)]))
        .await;
    assert_eq!(entries(&remote.recv().await), [(2, None)]);
    assert_eq!(
        *recorder.max_running.lock().unwrap(),
        1,
        "the cancelled entry's handler ran"
    );
}

#[tokio::test(start_paused = true)]
async fn duplicate_ids_in_batches_are_refused() {
    let (_peer, mut remote) = start(Arc::default(), EngineConfig::default());
    // Within one batch.
    remote
        .send(json!([sleep_req(1, 100), sleep_req(1, 100)]))
        .await;
    assert_eq!(
        entries(&remote.recv().await),
        [(1, None), (1, Some(-32600))]
    );
    // A batch reusing the id of a request in flight.
    remote.send(sleep_req(2, 1000)).await;
    remote
        .send(json!([sleep_req(2, 100), sleep_req(3, 100)]))
        .await;
    assert_eq!(
        entries(&remote.recv().await),
        [(2, Some(-32600)), (3, None)]
    );
    assert_eq!(remote.recv().await["id"], 2);
    // A request reusing the id of a batch entry in flight.
    remote.send(json!([sleep_req(4, 1000)])).await;
    remote.send(sleep_req(4, 100)).await;
    let dup = remote.recv().await;
    assert_eq!(
        (&dup["id"], &dup["error"]["code"]),
        (&json!(4), &json!(-32600))
    );
    assert_eq!(entries(&remote.recv().await), [(4, None)]);
}

/// What an owner sharing a connection can tell of the requests it sent from some point on
/// (`next_id`, `pending_since`), and of progress that came for no waiting request.
#[tokio::test(start_paused = true)]
async fn requests_sent_from_a_point_on_and_stray_progress_are_counted() {
    let (peer, mut remote) = start(Arc::default(), EngineConfig::default());
    let p1 = peer.clone();
    let before = tokio::spawn(async move {
        p1.request_raw("old", json!({}), &RequestOptions::default())
            .await
    });
    let old = remote.recv().await;
    let first = peer.next_id();
    assert_eq!(
        peer.pending_since(first),
        0,
        "the older request is not counted"
    );
    let p2 = peer.clone();
    let mine = tokio::spawn(async move {
        p2.request_raw("mine", json!({}), &RequestOptions::default())
            .await
    });
    let new = remote.recv().await;
    assert_eq!(new["id"], json!(first));
    assert_eq!((peer.pending_since(first), peer.pending_count()), (1, 2));
    remote
        .send(json!({"jsonrpc":"2.0","id":new["id"],"result":{}}))
        .await;
    mine.await.unwrap().unwrap();
    assert_eq!(peer.pending_since(first), 0);
    // Progress for a request nobody waits for (answered, or never sent) is counted.
    assert_eq!(peer.unmatched_progress(), 0);
    for token in [new["id"].clone(), json!("stray")] {
        remote
            .send(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":1}}))
            .await;
    }
    remote
        .send(json!({"jsonrpc":"2.0","id":old["id"],"result":{}}))
        .await;
    before.await.unwrap().unwrap();
    assert_eq!(peer.unmatched_progress(), 2);
}

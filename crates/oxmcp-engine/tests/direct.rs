//! `Direct`: a request answered on the caller's task, next to a running loop. A silent
//! handler's response comes back to the caller; one that speaks has everything queued in
//! order, even when it speaks from another task; a request cancelled while it waits for a slot never runs; the loop counts what it
//! handled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_engine::{
    DirectAnswer, DirectSlot, EngineConfig, HandlerResult, Peer, RequestContext, Service,
};
use oxmcp_jsonrpc::{Inbound, Message, Notification, Outbound, Request, RequestId, to_raw};
use serde_json::json;
use tokio::sync::{Notify, mpsc};

/// `quiet` answers at once; `chatty` sends a notification first; `hold` waits for `release`;
/// `relay` waits for `release` while a task of its own sends a notification.
/// `started` counts the handlers that ran.
struct Tools {
    release: Arc<Notify>,
    started: Arc<AtomicUsize>,
}

impl Service for Tools {
    fn call(&self, request: Request, ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
        let (release, started) = (self.release.clone(), self.started.clone());
        Box::pin(async move {
            started.fetch_add(1, Ordering::SeqCst);
            match request.method.as_str() {
                "chatty" => {
                    let _ = ctx
                        .peer
                        .notify_raw("notifications/message", &json!({}))
                        .await;
                }
                "hold" => release.notified().await,
                "relay" => {
                    // Speaks from another task while the handler waits (as a relay does).
                    let peer = ctx.peer.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let _ = peer.notify_queued("notifications/message", &json!({}));
                    });
                    release.notified().await;
                }
                _ => {}
            }
            Ok(to_raw(&json!({"method": request.method})).unwrap())
        })
    }

    fn notify(&self, _n: Notification, _peer: &Peer) {}
}

struct Running {
    direct: oxmcp_engine::Direct,
    input: mpsc::Sender<Inbound>,
    output: mpsc::Receiver<Outbound>,
    release: Arc<Notify>,
    started: Arc<AtomicUsize>,
}

async fn start(max_in_flight: usize) -> Running {
    let (input, incoming) = mpsc::channel(16);
    let (outgoing, output) = mpsc::channel(16);
    let release = Arc::new(Notify::new());
    let started = Arc::new(AtomicUsize::new(0));
    let service = Arc::new(Tools {
        release: release.clone(),
        started: started.clone(),
    });
    let mut config = EngineConfig::default();
    config.max_in_flight = max_in_flight;
    let slot = DirectSlot::new();
    let peer = Peer::with_config(outgoing, &config);
    tokio::spawn(oxmcp_engine::run_with(
        peer,
        incoming,
        service,
        config,
        Some(slot.clone()),
    ));
    for _ in 0..100 {
        if slot.get().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Running {
        direct: slot.get().expect("the loop offers its handle").clone(),
        input,
        output,
        release,
        started,
    }
}

fn request(id: i64, method: &str) -> Request {
    match Message::request(RequestId::Number(id), method, &json!({})).unwrap() {
        Message::Request(r) => r,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_silent_handler_answers_the_caller() {
    let mut r = start(8).await;
    let DirectAnswer::Here(out) = r.direct.call(request(1, "quiet"), None).await else {
        panic!("the response comes back to the caller");
    };
    let line = out.line().unwrap();
    assert!(
        line.contains(r#""id":1"#) && line.contains("quiet"),
        "{line}"
    );
    assert!(
        r.output.try_recv().is_err(),
        "nothing went through the loop's output"
    );
}

#[tokio::test]
async fn a_handler_that_speaks_has_everything_queued_in_order() {
    let mut r = start(8).await;
    let answer = r.direct.call(request(2, "chatty"), None).await;
    assert!(matches!(answer, DirectAnswer::Queued), "{answer:?}");
    let first = r.output.recv().await.unwrap();
    assert!(first.line().unwrap().contains("notifications/message"));
    let second = tokio::time::timeout(Duration::from_secs(5), r.output.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(second.line().unwrap().contains(r#""id":2"#), "{second:?}");
}

#[tokio::test]
async fn a_request_cancelled_while_it_waits_for_a_slot_never_runs() {
    let mut r = start(1).await;
    let holder = tokio::spawn(r.direct.call(request(1, "hold"), None));
    while r.started.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let waiting = tokio::spawn(r.direct.call(request(2, "quiet"), None));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2}});
    r.input
        .send(Inbound::Frame(cancel.to_string().into_bytes()))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiting call ends once cancelled")
        .unwrap();
    assert!(matches!(answer, DirectAnswer::Queued), "{answer:?}");
    // The transport is told the request ended; its handler never ran.
    let ended = r.output.recv().await.unwrap();
    assert_eq!(ended, Outbound::ended(RequestId::Number(2)));
    assert_eq!(r.started.load(Ordering::SeqCst), 1);
    r.release.notify_one();
    let held = holder.await.unwrap();
    assert!(matches!(held, DirectAnswer::Here(_)), "{held:?}");
    assert_eq!(r.started.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_loop_counts_what_it_handled() {
    let r = start(8).await;
    assert_eq!(r.direct.handled(), 0);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    r.input
        .send(Inbound::Frame(note.to_string().into_bytes()))
        .await
        .unwrap();
    for _ in 0..200 {
        if r.direct.handled() == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("handled stayed at {}", r.direct.handled());
}

#[tokio::test]
async fn a_handler_that_speaks_from_another_task_lets_the_caller_stream() {
    let mut r = start(8).await;
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        r.direct.call(request(3, "relay"), None),
    )
    .await
    .expect("the caller is woken when the handler speaks");
    assert!(matches!(answer, DirectAnswer::Queued), "{answer:?}");
    let first = r.output.recv().await.unwrap();
    assert!(first.line().unwrap().contains("notifications/message"));
    r.release.notify_one();
    let second = tokio::time::timeout(Duration::from_secs(5), r.output.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(second.line().unwrap().contains(r#""id":3"#), "{second:?}");
}

/// `run_with` sets the connection up when called: the handle is there before the loop is
/// ever polled, and the loop's future holds none of what it was given (it lives in the
/// connection's shared state), so an idle connection stays small (592 bytes before, in a
/// debug build, with its arguments kept in the future beside the state they went into).
#[tokio::test]
async fn run_with_sets_up_at_once_and_its_loop_stays_small() {
    let (_input, incoming) = mpsc::channel::<Inbound>(16);
    let (outgoing, _output) = mpsc::channel(16);
    let service = Arc::new(Tools {
        release: Arc::new(Notify::new()),
        started: Arc::new(AtomicUsize::new(0)),
    });
    let slot = DirectSlot::new();
    let config = EngineConfig::default();
    let peer = Peer::with_config(outgoing, &config);
    let run = oxmcp_engine::run_with(peer, incoming, service, config, Some(slot.clone()));
    assert!(
        slot.get().is_some(),
        "the handle is there before the loop runs"
    );
    let size = std::mem::size_of_val(&run);
    assert!(size <= 512, "the loop's future is {size} bytes");
}

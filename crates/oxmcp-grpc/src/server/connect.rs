//! One `Connect` stream: an engine connection fed by the client's envelopes (lone requests
//! answered on the reader's task, [`Feeder`]), its answers written back by a task of its own,
//! and how the stream ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use oxmcp_engine::{Connection, DirectSlot, Fed, Feeder};
use oxmcp_jsonrpc::Outbound;
use oxmcp_proto::Envelope;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, Streaming};

use oxmcp_http::front::Watched;

use super::{Caller, Inner, Slot};
use crate::{Form, from_json, to_json};

/// The form of the server's envelopes: unset (0) until chosen or until the first envelope.
struct SharedForm(AtomicU8);

impl SharedForm {
    fn new(chosen: Option<Form>) -> Self {
        Self(AtomicU8::new(match chosen {
            None => 0,
            Some(Form::Json) => 1,
            Some(Form::Protobuf) => 2,
        }))
    }
    fn settle(&self, form: Form) {
        let value = if form == Form::Protobuf { 2 } else { 1 };
        let _ = self
            .0
            .compare_exchange(0, value, Ordering::Relaxed, Ordering::Relaxed);
    }
    fn get(&self) -> Form {
        if self.0.load(Ordering::Relaxed) == 2 {
            Form::Protobuf
        } else {
            Form::Json
        }
    }
}

type Answers = ReceiverStream<Result<Envelope, Status>>;

/// How a `Connect` stream ends: the status the reader leaves for the writer to send last
/// (OK if none), and whether to end now rather than after the engine's last answer.
#[derive(Default)]
struct Ending {
    status: Mutex<Option<Status>>,
    /// Told when the stream must end at once (its token ended): the engine is aborted, and
    /// tasks it started may still hold its output open.
    now: tokio::sync::Notify,
}

impl Ending {
    fn leave(&self, status: Status) {
        *self.status.lock() = Some(status);
    }

    fn cut(&self, status: Status) {
        self.leave(status);
        self.now.notify_one();
    }
}

/// Aborts the engine when the connection's writer ends.
pub(super) struct AbortOnDrop(pub(super) AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One `Connect` stream: an engine connection fed by the client's envelopes, answering
/// through the returned stream.
pub(super) fn open(
    inner: Arc<Inner>,
    caller: Caller,
    chosen: Option<Form>,
    incoming: Streaming<Envelope>,
    permit: Option<Slot>,
) -> Answers {
    let (in_tx, in_rx) = mpsc::channel(64);
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(1024);
    let (answer_tx, answer_rx) = mpsc::channel(64);
    let direct = DirectSlot::new();
    let engine = tokio::spawn(inner.service.serve(Connection {
        incoming: in_rx,
        outgoing: out_tx,
        config: inner.engine.clone(),
        principal: caller.principal,
        direct: Some(direct.clone()),
        parking: None,
        session: None,
    }));
    let form = Arc::new(SharedForm::new(chosen));
    let ending = Arc::new(Ending::default());
    let guard = AbortOnDrop(engine.abort_handle());
    let reader = Reader {
        inner,
        feeder: Feeder::new(in_tx, direct),
        answers: answer_tx.clone(),
        form: form.clone(),
        ending: ending.clone(),
        engine: engine.abort_handle(),
        task: Some(engine),
        lease: caller.lease,
    };
    tokio::spawn(reader.run(incoming));
    tokio::spawn(async move {
        write(out_rx, answer_tx, form, ending, guard).await;
        // The stream's slot is free once its engine is done.
        drop(permit);
    });
    ReceiverStream::new(answer_rx)
}

/// Forwards the engine's messages to the client; when the engine has answered everything,
/// ends the stream with the status the reader left (OK if none).
async fn write(
    mut out_rx: mpsc::Receiver<Outbound>,
    answers: mpsc::Sender<Result<Envelope, Status>>,
    form: Arc<SharedForm>,
    ending: Arc<Ending>,
    _engine: AbortOnDrop,
) {
    loop {
        let out = tokio::select! {
            out = out_rx.recv() => out,
            () = ending.now.notified() => break,
            // The client reset the stream (even after ending its side): dropping the guard
            // stops the engine and cancels its requests.
            () = answers.closed() => return,
        };
        let Some(out) = out else { break };
        let Some(line) = out.line() else { continue };
        if answers.send(Ok(from_json(line, form.get()))).await.is_err() {
            return;
        }
    }
    let last = ending.status.lock().take();
    if let Some(status) = last {
        let _ = answers.send(Err(status)).await;
    }
}

/// Reads the client's side of a `Connect` stream into the engine, answering lone requests
/// on its own task ([`Feeder`]).
struct Reader {
    inner: Arc<Inner>,
    feeder: Feeder,
    answers: mpsc::Sender<Result<Envelope, Status>>,
    form: Arc<SharedForm>,
    ending: Arc<Ending>,
    engine: AbortHandle,
    /// The engine's task, until its loop ends.
    task: Option<tokio::task::JoinHandle<()>>,
    lease: Option<Arc<Watched>>,
}

impl Reader {
    async fn run(mut self, incoming: Streaming<Envelope>) {
        let _open = oxmcp_http::stats::Open::new(oxmcp_http::stats::Transport::Grpc);
        if self.read(incoming).await {
            self.finish().await;
        }
    }

    /// Reads the client's envelopes until its side ends. True for a graceful end (half-close,
    /// shutdown, bad input: what was accepted is still answered); false when the stream was
    /// stopped (reset, token ended, idle) or the engine is gone.
    async fn read(&mut self, mut incoming: Streaming<Envelope>) -> bool {
        let idle = self.inner.http.session_idle_timeout;
        // No message from the client for `idle`: answers going out do not count.
        let mut idle_until = deadline(idle);
        let shutdown = self.inner.http.shutdown.clone();
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout_at(idle_until, incoming.message()) => next,
                () = shutdown.cancelled() => {
                    // No more input; what was accepted is answered, then the stream ends.
                    self.ending.leave(Status::unavailable("the server is shutting down"));
                    return true;
                }
                why = oxmcp_http::front::ended(self.lease.as_deref()) => {
                    // The token expired or was refused: the stream ends now, its requests
                    // cancelled.
                    let status = Status::unauthenticated(format!("{why}; reconnect with a fresh token"));
                    self.ending.cut(status);
                    self.stop();
                    return false;
                }
                () = self.answers.closed(), if self.feeder.running() > 0 => {
                    // The client reset the stream: what runs here is cancelled with it, as
                    // the writer's end stops the engine.
                    self.stop();
                    return false;
                }
                fed = self.feeder.answered(), if self.feeder.running() > 0 => {
                    if !self.deliver(fed).await {
                        self.stop();
                        return false;
                    }
                    continue;
                }
                () = loop_end(&mut self.task), if self.task.is_some() => {
                    // The loop has ended: its output closes once what it sent is read.
                    self.task = None;
                    self.feeder.loop_ended();
                    continue;
                }
            };
            match next {
                Ok(Ok(Some(envelope))) => {
                    idle_until = deadline(idle);
                    if !self.on_envelope(envelope).await {
                        self.stop();
                        return false;
                    }
                }
                // The client ended its side: the engine answers what it accepted, then ends.
                Ok(Ok(None)) => return true,
                Ok(Err(status)) => {
                    if matches!(
                        status.code(),
                        Code::Cancelled | Code::Unknown | Code::Unavailable
                    ) {
                        // The client reset the stream or went away: its requests are cancelled.
                        tracing::debug!("a gRPC client went away: {}", status.message());
                        self.stop();
                        return false;
                    }
                    // Too big or malformed: what was accepted is still answered, then the
                    // stream ends with this status.
                    tracing::debug!("bad gRPC input: {}", status.message());
                    self.ending.leave(status);
                    return true;
                }
                Err(_) => {
                    let _ = self
                        .answers
                        .send(Err(Status::deadline_exceeded("idle for too long")))
                        .await;
                    self.stop();
                    return false;
                }
            }
        }
    }

    /// After a graceful end of the client's side: the loop takes no more, and the requests
    /// still answered here are answered. A reset stream or an ended token stops them then,
    /// as it stops the engine's own.
    async fn finish(&mut self) {
        self.feeder.shut();
        while self.feeder.running() > 0 {
            tokio::select! {
                fed = self.feeder.answered() => {
                    if !self.deliver(fed).await {
                        self.stop();
                        return;
                    }
                }
                () = self.answers.closed() => {
                    self.stop();
                    return;
                }
                why = oxmcp_http::front::ended(self.lease.as_deref()) => {
                    let status = Status::unauthenticated(format!("{why}; reconnect with a fresh token"));
                    self.ending.cut(status);
                    self.stop();
                    return;
                }
            }
        }
    }

    /// The stream is over before its end: the engine stops, and with it what it runs here.
    fn stop(&mut self) {
        self.engine.abort();
        self.feeder.abandon();
    }

    /// Sends what a message or a request answered here came to; `false` when the engine is
    /// gone.
    async fn deliver(&mut self, fed: Fed) -> bool {
        match fed {
            Fed::Taken => true,
            Fed::Answer(line) => {
                self.answer(&line).await;
                true
            }
            Fed::Closed => false,
        }
    }

    /// Sends an answer of ours (JSON) to the client. (`&mut`: a shared reader is not `Sync`.)
    async fn answer(&mut self, line: &str) {
        let _ = self
            .answers
            .send(Ok(from_json(line, self.form.get())))
            .await;
    }

    /// One envelope from the client: a fresh token (checked in a task of its own, which
    /// answers it), a request refused for a scope the token lacks (answered here), or a
    /// message for the engine. `false` when the engine is gone.
    async fn on_envelope(&mut self, envelope: Envelope) -> bool {
        if let Some(form) = Form::of(&envelope) {
            self.form.settle(form);
        }
        let bytes = match to_json(envelope) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.answer(&invalid_request(&e.to_string())).await;
                return true;
            }
        };
        let (answers, form) = (self.answers.clone(), self.form.clone());
        let reply = |line: String| async move {
            let _ = answers.send(Ok(from_json(&line, form.get()))).await;
        };
        if let Some(lease) = &self.lease
            && let Some(answer) = lease.authorize_frame(&bytes, reply)
        {
            if let Some(line) = answer {
                self.answer(&line).await;
            }
            return true;
        }
        let identity = self.lease.as_ref().map(|l| l.identity());
        let auth = self.inner.http.auth.as_deref();
        if let Some(refusals) = oxmcp_http::front::frame_refusals(auth, identity.as_deref(), &bytes)
        {
            for line in refusals {
                self.answer(&line).await;
            }
            return true;
        }
        let fed = self.feeder.feed(&bytes, None).await;
        self.deliver(fed).await
    }
}

/// `idle` from now (a duration past what a clock holds: about a century).
fn deadline(idle: std::time::Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(idle)
        .unwrap_or_else(|| now + std::time::Duration::from_secs(100 * 365 * 86_400))
}

/// Until the engine's task ends; pending without one.
async fn loop_end(task: &mut Option<tokio::task::JoinHandle<()>>) {
    match task {
        Some(task) => {
            let _ = task.await;
        }
        None => std::future::pending().await,
    }
}

/// A JSON-RPC "Invalid Request" error about an envelope.
fn invalid_request(why: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": format!("Invalid Request: {why}")},
    })
    .to_string()
}

//! Resuming, on this instance, a stream that another instance writes: replay its log, then
//! follow it until its last event; if its writer dies first, its requests fail.

use std::sync::Arc;
use std::time::Duration;

use oxmcp_jsonrpc::{ErrorObject, Message, RequestId};
use oxmcp_store::{AppendEvent, StoreError, StoredEvent, StreamInfo};
use tokio::sync::mpsc;

use super::Shared;
use crate::server::endpoint::Inner;
use crate::server::session::{Event, HttpSession, Resumed};

/// How often a followed stream is read without a doorbell (a lost doorbell costs this much).
const POLL: Duration = Duration::from_millis(500);
/// Events queued for the resumed client before it counts as too slow (it can resume again).
const DEPTH: usize = 256;

fn event(token: &str, e: &StoredEvent) -> Event {
    Event {
        id: format!("{token}-{}", e.seq),
        data: e.data.clone(),
        last: e.last,
        cancelled: e.data.is_empty(),
        error: false,
    }
}

/// What resuming a stream this instance does not hold gives.
pub(crate) enum Elsewhere {
    /// A request's stream another instance writes (or wrote): its log, then what comes.
    Request(Resumed),
    /// A GET stream (of another instance, or one whose events are gone): what its log still
    /// holds after the client's last event; the client gets a new GET stream here after it.
    Standalone(Vec<Event>),
}

/// Resumes stream `token` of `session` after event `after`, from the shared log (a GET
/// stream, or one unknown, from wherever: [`Elsewhere::Standalone`]).
///
/// # Errors
/// The store failed (the client is asked to retry).
pub(crate) async fn resume_elsewhere(
    inner: &Arc<Inner>,
    shared: &Arc<Shared>,
    session: &Arc<HttpSession>,
    token: &str,
    after: u64,
) -> Result<Elsewhere, StoreError> {
    let info = shared
        .op(shared.store.stream_info(&session.id, token))
        .await?;
    // Listen for the doorbell before reading, so no event falls between the two.
    let bell = shared.bell(&session.id, token);
    let logged = match shared
        .op(shared.store.replay(&session.id, token, after))
        .await
    {
        Ok(l) => l,
        Err(e) => {
            shared.unbell(&session.id, token);
            return Err(e);
        }
    };
    let replay: Vec<Event> = logged
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| event(token, e))
        .collect();
    let info = match info {
        Some(info) if !info.ids.is_empty() && !logged.iter().any(|e| e.last) => info,
        Some(info) if !info.ids.is_empty() => {
            shared.unbell(&session.id, token);
            return Ok(Elsewhere::Request(Resumed { replay, live: None }));
        }
        _ => {
            shared.unbell(&session.id, token);
            return Ok(Elsewhere::Standalone(replay));
        }
    };
    let (tx, rx) = mpsc::channel(DEPTH);
    let follow = Follow {
        inner: Arc::downgrade(inner),
        shared: shared.clone(),
        session: session.id.clone(),
        token: token.to_owned(),
        info,
        cursor: logged.last().map_or(after, |e| e.seq),
    };
    tokio::spawn(follow.run(bell, tx));
    Ok(Elsewhere::Request(Resumed {
        replay,
        live: Some(rx),
    }))
}

struct Follow {
    inner: std::sync::Weak<Inner>,
    shared: Arc<Shared>,
    session: String,
    token: String,
    info: StreamInfo,
    cursor: u64,
}

impl Follow {
    async fn run(mut self, bell: Arc<tokio::sync::Notify>, tx: mpsc::Sender<Event>) {
        loop {
            let rung = tokio::select! {
                () = bell.notified() => true,
                () = tokio::time::sleep(POLL) => false,
                () = tx.closed() => break,
            };
            let session_gone = self
                .inner
                .upgrade()
                .is_none_or(|i| !i.sessions().contains_key(&self.session));
            if session_gone {
                break;
            }
            match self.step(rung, &tx).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(()) => break,
            }
        }
        self.shared.unbell(&self.session, &self.token);
    }

    /// Reads what is new and passes it on. `Ok(true)`: the stream is over.
    async fn step(&mut self, rung: bool, tx: &mpsc::Sender<Event>) -> Result<bool, ()> {
        let store = &self.shared.store;
        let logged = match self
            .shared
            .op(store.replay(&self.session, &self.token, self.cursor))
            .await
        {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!(session = %self.session, "following a stream: {e}");
                return Ok(false);
            }
        };
        if logged.is_empty() {
            if !rung && !self.writer_alive().await {
                self.fail_requests(tx).await;
                return Ok(true);
            }
            return Ok(false);
        }
        for e in &logged {
            self.cursor = e.seq;
            if e.data.is_empty() && !e.last {
                continue;
            }
            if e.data.is_empty() || tx.try_send(event(&self.token, e)).is_err() {
                // The end of a cancelled request, or a client too slow (it can resume).
                return Ok(true);
            }
            if e.last {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn writer_alive(&self) -> bool {
        let owner = &self.info.owner;
        // When the store cannot say, the writer is presumed alive (the poll asks again).
        self.shared
            .op(self.shared.store.is_alive(owner))
            .await
            .unwrap_or(true)
    }

    /// The writer died before the stream's last event: its requests are answered with an
    /// error, which is also logged so that a later resumption gets the same answer.
    async fn fail_requests(&self, tx: &mpsc::Sender<Event>) {
        let ids: Vec<RequestId> = self
            .info
            .ids
            .iter()
            .filter_map(RequestId::from_value)
            .collect();
        tracing::warn!(
            session = %self.session,
            stream = %self.token,
            owner = %self.info.owner,
            "the instance writing a resumed stream is gone; its requests fail"
        );
        if ids.is_empty() {
            return;
        }
        let error = || {
            ErrorObject::internal(format!(
                "the server instance running this request ({}) stopped before it answered; the request may or may not have taken effect",
                self.info.owner
            ))
        };
        let answers: Vec<Message> = ids
            .into_iter()
            .map(|id| Message::error(Some(id), error()))
            .collect();
        let data = match (self.info.batch, answers.as_slice()) {
            (false, [one]) => one.encode(),
            _ => oxmcp_jsonrpc::encode_batch(&answers),
        };
        let seq = self.cursor + 1;
        let append = AppendEvent {
            session: &self.session,
            stream: &self.token,
            seq,
            data: &data,
            last: true,
            info: None,
        };
        if let Err(e) = self.shared.op(self.shared.store.append(append)).await {
            tracing::debug!("the failure was not logged: {e}");
        }
        let failed = StoredEvent {
            seq,
            data,
            last: true,
        };
        let _ = tx.try_send(event(&self.token, &failed));
    }
}

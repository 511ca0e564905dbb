//! [`Feeder`]: a message transport's side of one connection (WebSocket, a gRPC stream): what
//! it feeds the engine's loop, and the lone requests it answers on its own task through
//! [`Direct`], with no hop to the loop, to a task of the request's own, and back through the
//! output channel.

use std::collections::VecDeque;

use futures::FutureExt;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use oxmcp_jsonrpc::{Inbound, Message, Outbound, TransportContext};
use tokio::sync::mpsc;

use crate::{Direct, DirectAnswer, DirectCall, DirectSlot};

/// Requests answered on the transport's task at once, at most. Past it they go through the
/// loop, whose bounded input holds the reader back.
const MAX_HERE: usize = 64;

/// A transport's input to one connection whose messages come one per frame: each frame holding
/// one request is decoded once, here, and answered on the caller's task when it may be (the
/// loop has handled everything fed before it, so a request never overtakes
/// `notifications/initialized` or an answer to the server); any other frame goes to the loop,
/// decoded when it is one message (the loop decodes a batch, and answers what does not
/// decode). Poll [`Feeder::answered`] beside the transport's reads for the answers that did
/// not come at once.
///
/// Made with the connection's input and the [`DirectSlot`] given to it
/// ([`crate::Connection::direct`]); without a filled slot every frame goes to the loop.
pub struct Feeder {
    /// The loop's input; `None` once shut (frames are then ignored).
    tx: Option<mpsc::Sender<Inbound>>,
    /// How many messages the loop was fed.
    fed: u64,
    direct: DirectSlot,
    /// Requests answered here that were not answered at once.
    calls: FuturesUnordered<DirectCall>,
    /// What such requests came to while a frame waited for room in the loop's input.
    ready: VecDeque<Fed>,
}

impl std::fmt::Debug for Feeder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeder")
            .field("open", &self.tx.is_some())
            .field("fed", &self.fed)
            .field("running", &self.running())
            .finish()
    }
}

/// What became of a frame fed to a [`Feeder`], or of a request it answered.
#[derive(Debug)]
pub enum Fed {
    /// In the loop's hands, or still being answered, or owed nothing: whatever comes of it
    /// comes through the connection's output.
    Taken,
    /// The response, for the transport to send now.
    Answer(String),
    /// The connection takes no more input: its loop has ended.
    Closed,
}

impl Feeder {
    /// A feeder of the loop's input `tx`, answering through `direct` once it is filled.
    pub fn new(tx: mpsc::Sender<Inbound>, direct: DirectSlot) -> Self {
        Self {
            tx: Some(tx),
            fed: 0,
            direct,
            calls: FuturesUnordered::new(),
            ready: VecDeque::new(),
        }
    }

    /// Whether it still takes frames.
    pub fn is_open(&self) -> bool {
        self.tx.is_some()
    }

    /// Takes no more frames (they are ignored): the loop answers what it accepted, then ends.
    pub fn shut(&mut self) {
        self.tx = None;
    }

    /// Lets go of the [`Direct`] handle, once the loop has ended: the handle shares the
    /// connection's output, which then closes when what was sent has been read.
    pub fn loop_ended(&mut self) {
        self.direct = DirectSlot::new();
    }

    /// How many requests are being answered here (or were, and wait for
    /// [`Feeder::answered`]).
    pub fn running(&self) -> usize {
        self.calls.len() + self.ready.len()
    }

    /// Takes one frame (JSON text), from a peer that `transport` describes, if known.
    pub async fn feed(&mut self, frame: &[u8], transport: Option<TransportContext>) -> Fed {
        let Some(tx) = &self.tx else {
            return Fed::Taken;
        };
        let single = frame.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[');
        let input = match single.then(|| Message::decode(frame)) {
            Some(Ok(Message::Request(request))) => match self.here() {
                Some(direct) => {
                    let call = direct.call(request, transport);
                    return self.answer(call);
                }
                None => Inbound::decoded(Message::Request(request), transport),
            },
            Some(Ok(message)) => Inbound::decoded(message, transport),
            Some(Err(_)) | None => Inbound::Frame(frame.to_vec()),
        };
        // While the frame waits for room, the requests answered here go on: the loop may be
        // waiting for them to end (it ends only once every request has).
        let mut send = std::pin::pin!(tx.send(input));
        let sent = loop {
            tokio::select! {
                sent = &mut send => break sent,
                Some(answer) = self.calls.next(), if !self.calls.is_empty() => {
                    self.ready.push_back(fed(answer));
                }
            }
        };
        if sent.is_err() {
            return Fed::Closed;
        }
        self.fed += 1;
        Fed::Taken
    }

    /// What the next of the requests still answered here came to; pending while there is
    /// none (poll it beside the transport's reads).
    pub async fn answered(&mut self) -> Fed {
        if let Some(ready) = self.ready.pop_front() {
            return ready;
        }
        match self.calls.next().await {
            Some(answer) => fed(answer),
            None => std::future::pending().await,
        }
    }

    /// The connection is gone: stops every request it has in flight, those answered here
    /// ([`DirectCall::abandon`]), those that went on on a task of their own after sending
    /// something, and the loop's (their tokens cancelled, their handlers dropped).
    pub fn abandon(&mut self) {
        if let Some(direct) = self.direct.get() {
            direct.stop_all();
        }
        for call in std::mem::take(&mut self.calls) {
            call.abandon();
        }
        self.ready.clear();
    }

    /// The handle for answering a request here, if one may be now.
    fn here(&self) -> Option<&Direct> {
        let direct = self.direct.get()?;
        (self.running() < MAX_HERE && direct.handled() == self.fed).then_some(direct)
    }

    /// The answer of `call` if it has one at once, else keeps it for [`Feeder::answered`].
    fn answer(&mut self, mut call: DirectCall) -> Fed {
        // Polled once; `calls` polls it again, with the task's waker, when pushed.
        match (&mut call).now_or_never() {
            Some(answer) => fed(answer),
            None => {
                self.calls.push(call);
                Fed::Taken
            }
        }
    }
}

/// What a request answered here came to.
fn fed(answer: DirectAnswer) -> Fed {
    match answer {
        DirectAnswer::Here(Outbound::Message(m)) => Fed::Answer(m.line),
        DirectAnswer::Here(_) | DirectAnswer::Queued => Fed::Taken,
        DirectAnswer::Closed => Fed::Closed,
    }
}

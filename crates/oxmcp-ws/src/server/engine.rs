//! A connection's engine as its socket sees it: what the socket feeds the engine's loop, and
//! the requests answered on the socket's own task ([`oxmcp_engine::Direct`]), with no hop to
//! the loop, to a task of the request's own, and back through the output channel.

use futures::FutureExt;
use futures::stream::FuturesUnordered;
use oxmcp_engine::{Direct, DirectAnswer, DirectCall, DirectSlot};
use oxmcp_jsonrpc::{Inbound, Message, Outbound};
use tokio::sync::mpsc;

/// Requests answered on the socket's task at once, at most. Past it they go through the
/// loop, whose bounded input holds the reader back.
const MAX_HERE: usize = 64;

/// The engine's input and the requests answered here.
pub(super) struct Engine {
    /// The loop's input; `None` once the server shuts down (frames are then ignored).
    tx: Option<mpsc::Sender<Inbound>>,
    /// How many messages the loop was fed: a request is answered here only once the loop
    /// has handled them all, so it never overtakes a message sent before it (such as
    /// `notifications/initialized`, or the answer to a server's request).
    fed: u64,
    direct: DirectSlot,
    /// Requests answered here that were not answered at once.
    pub(super) calls: FuturesUnordered<DirectCall>,
}

/// What became of a text frame, or of a request answered here.
pub(super) enum Fed {
    /// In the loop's hands, or still being answered, or owed nothing.
    Taken,
    /// The answer, to send now.
    Answer(String),
    /// The engine takes no more input.
    Closed,
}

impl Engine {
    pub(super) fn new(tx: mpsc::Sender<Inbound>, direct: DirectSlot) -> Self {
        Self {
            tx: Some(tx),
            fed: 0,
            direct,
            calls: FuturesUnordered::new(),
        }
    }

    /// Whether the engine still takes input.
    pub(super) fn is_open(&self) -> bool {
        self.tx.is_some()
    }

    /// Takes no more input: what was accepted is still answered, then the engine ends.
    pub(super) fn shut(&mut self) {
        self.tx = None;
    }

    /// Takes a text frame: a lone request is answered here when it may be (decoded once,
    /// here); anything else goes to the loop, decoded when it is one message (the loop
    /// decodes a batch, and answers what does not decode).
    pub(super) async fn feed(&mut self, text: &[u8]) -> Fed {
        let Some(tx) = &self.tx else {
            return Fed::Taken;
        };
        let single = text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[');
        let input = match single.then(|| Message::decode(text)) {
            Some(Ok(Message::Request(request))) => match self.here() {
                Some(direct) => {
                    let call = direct.call(request, None);
                    return self.answer(call);
                }
                None => Inbound::Message(Box::new(Message::Request(request)), None),
            },
            Some(Ok(message)) => Inbound::Message(Box::new(message), None),
            Some(Err(_)) | None => Inbound::Frame(text.to_vec()),
        };
        if tx.send(input).await.is_err() {
            return Fed::Closed;
        }
        self.fed += 1;
        Fed::Taken
    }

    /// The handle for answering a request here, if one may be now.
    fn here(&self) -> Option<&Direct> {
        let direct = self.direct.get()?;
        (self.calls.len() < MAX_HERE && direct.handled() == self.fed).then_some(direct)
    }

    /// The answer of `call` if it has one at once, else keeps it in [`Engine::calls`].
    fn answer(&mut self, mut call: DirectCall) -> Fed {
        // Polled once; `calls` polls it again, with the task's waker, when pushed.
        match (&mut call).now_or_never() {
            Some(answer) => answered(answer),
            None => {
                self.calls.push(call);
                Fed::Taken
            }
        }
    }

    /// The engine's loop has ended: its handle is let go, so that its output closes once
    /// what it sent has been read (the handle shares the output's sender).
    pub(super) fn ended(&mut self) {
        self.direct = DirectSlot::new();
    }

    /// Stops the requests still answered here: the connection is gone.
    pub(super) fn abandon(self) {
        for call in self.calls {
            call.abandon();
        }
    }
}

/// What to do with a request answered here.
pub(super) fn answered(answer: DirectAnswer) -> Fed {
    match answer {
        DirectAnswer::Here(Outbound::Message(m)) => Fed::Answer(m.line),
        DirectAnswer::Here(_) | DirectAnswer::Queued => Fed::Taken,
        DirectAnswer::Closed => Fed::Closed,
    }
}

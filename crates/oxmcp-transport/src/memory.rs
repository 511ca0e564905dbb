//! An in-memory transport: two connected [`Channels`] in one process, for tests and for
//! hosting a server inside the program that uses it, with no process or socket between.

use oxmcp_jsonrpc::{Inbound, Outbound};
use tokio::sync::mpsc;

use crate::stdio::{Channels, QUEUE_DEPTH};

/// Two connected ends: what one end sends, the other receives, message by message (stream
/// signals such as [`Outbound::CloseStream`] are dropped, as on any single stream). Each
/// end's queues hold [`QUEUE_DEPTH`] messages; a side that stops reading holds the other
/// back.
pub fn duplex() -> (Channels, Channels) {
    let (a_out, a_out_rx) = mpsc::channel::<Outbound>(QUEUE_DEPTH);
    let (b_out, b_out_rx) = mpsc::channel::<Outbound>(QUEUE_DEPTH);
    let (a_in_tx, a_in) = mpsc::channel::<Inbound>(QUEUE_DEPTH);
    let (b_in_tx, b_in) = mpsc::channel::<Inbound>(QUEUE_DEPTH);
    tokio::spawn(pump(a_out_rx, b_in_tx));
    tokio::spawn(pump(b_out_rx, a_in_tx));
    (
        Channels {
            incoming: a_in,
            outgoing: a_out,
        },
        Channels {
            incoming: b_in,
            outgoing: b_out,
        },
    )
}

/// Moves one end's messages to the other's input until either side goes away.
async fn pump(mut from: mpsc::Receiver<Outbound>, to: mpsc::Sender<Inbound>) {
    while let Some(out) = from.recv().await {
        if let Outbound::Message(m) = out
            && to.send(Inbound::Frame(m.line.into_bytes())).await.is_err()
        {
            return;
        }
    }
}

//! The stdio framing over real pipes: one frame per line, limits, blank lines, stream
//! signals that are not written, the writer flushing what was sent, and a real child process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use oxmcp_jsonrpc::{Inbound, OutKind, Outbound, RequestId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn note(line: &str) -> Outbound {
    Outbound::unrelated(
        line.to_owned(),
        OutKind::Notification {
            method: "n".to_owned(),
        },
    )
}

async fn next(rx: &mut tokio::sync::mpsc::Receiver<Inbound>) -> Option<Vec<u8>> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("in time")
        .map(|i| match i {
            Inbound::Frame(bytes) => bytes,
            other => panic!("not a frame: {other:?}"),
        })
}

#[tokio::test]
async fn lines_in_frames_out_with_a_limit() {
    let (mut peer_side, our_side) = tokio::io::duplex(1 << 16);
    let (reader, writer) = tokio::io::split(our_side);
    let (mut io, written) = oxmcp_transport::from_io(reader, writer, 16);
    peer_side
        .write_all(b"{\"a\":1}\n\n   \n0123456789abcdefXYZ\r\n{\"b\":2}\r\nlast")
        .await
        .unwrap();
    assert_eq!(next(&mut io.incoming).await.unwrap(), b"{\"a\":1}");
    // Blank lines skipped, the oversized line dropped, CRLF accepted.
    assert_eq!(next(&mut io.incoming).await.unwrap(), b"{\"b\":2}");
    // Out: messages as lines; stream signals are not written.
    io.outgoing.send(note("one")).await.unwrap();
    io.outgoing
        .send(Outbound::close_stream(RequestId::Number(1)))
        .await
        .unwrap();
    io.outgoing
        .send(Outbound::ended(RequestId::Number(2)))
        .await
        .unwrap();
    io.outgoing.send(note("two")).await.unwrap();
    drop(io.outgoing);
    written.await.unwrap();
    let mut out = Vec::new();
    drop(peer_side.shutdown().await);
    peer_side.read_to_end(&mut out).await.unwrap();
    assert_eq!(out, b"one\ntwo\n");
    // The partial last line is discarded at the end of input.
    assert_eq!(next(&mut io.incoming).await, None);
}

#[tokio::test]
async fn memory_duplex_carries_messages_not_signals() {
    let (a, mut b) = oxmcp_transport::duplex();
    a.outgoing.send(note("hello")).await.unwrap();
    a.outgoing
        .send(Outbound::close_stream(RequestId::Number(1)))
        .await
        .unwrap();
    a.outgoing.send(note("again")).await.unwrap();
    assert_eq!(next(&mut b.incoming).await.unwrap(), b"hello");
    assert_eq!(next(&mut b.incoming).await.unwrap(), b"again");
}

#[cfg(feature = "child")]
#[tokio::test]
async fn a_child_process_echoes_and_closes_as_a_link() {
    use oxmcp_transport::{ChildConfig, ChildProcess, Exit, Link};
    let (child, mut io) =
        ChildProcess::spawn("cat", Vec::<String>::new(), ChildConfig::default()).unwrap();
    assert!(child.id().is_some());
    io.outgoing.send(note("{\"ping\":1}")).await.unwrap();
    assert_eq!(next(&mut io.incoming).await.unwrap(), b"{\"ping\":1}");
    let link: Box<dyn Link> = Box::new(child);
    assert!(link.pid().is_some());
    assert_eq!(
        link.close().await,
        Some(Exit::Closed),
        "cat exits when stdin closes"
    );
}

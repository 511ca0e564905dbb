//! The raw driver's gRPC connections: one HTTP/2 connection per worker (the `h2` crate, no
//! tonic, no protobuf library) carrying one `mcp.v1.Mcp/Connect` stream, so that the driver
//! costs far less per call than the server it measures (the SDK's client is as busy as the
//! floor servers it drives). A call's message is its request rendered from the call's
//! template, wrapped by hand in an `Envelope` (`bytes json = 1`) behind the gRPC message
//! prefix; the server's messages are gathered into one buffer, unwrapped the same way and
//! their JSON handed to the same byte comparison as HTTP answers. Once its buffers have
//! grown, a call allocates only the `Bytes` handle h2 takes.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use serde_json::{Value, json};

use crate::check::Failure;
use crate::lean::transport;
use crate::wire::{LEGACY, TIMEOUT, Template};

/// The most one message may take (the driver's own limit on a server's message).
const MAX_MESSAGE: usize = 64 << 20;

/// The `Connect` method's path (`oxmcp_grpc::CONNECT_PATH`; the driver does not link the
/// gRPC crate).
const CONNECT_PATH: &str = "/mcp.v1.Mcp/Connect";

/// The key of `Envelope.json` (field 1, length-delimited).
const JSON_KEY: u8 = (1 << 3) | 2;

/// The server's side of the stream: its head not read yet (the server may send it only
/// once the first envelope has come), then its messages.
enum Recv {
    Head(h2::client::ResponseFuture),
    Body(h2::RecvStream),
}

/// One gRPC connection, its `Connect` stream and its buffers.
pub(crate) struct LeanGrpc {
    send: h2::SendStream<Bytes>,
    recv: Recv,
    out: BytesMut,
    body: Vec<u8>,
    input: Vec<u8>,
    /// Where the next message starts in `input`.
    at: usize,
    closed: bool,
}

impl LeanGrpc {
    /// Opens a connection to `addr` and its `Connect` stream; with `initialize`, runs the
    /// legacy handshake on it (`initialize` answered with a protocol version, then
    /// `notifications/initialized`): the stream is the session.
    pub(crate) async fn open(
        addr: SocketAddr,
        authority: &str,
        initialize: bool,
    ) -> Result<LeanGrpc, Failure> {
        let opened = async {
            let stream = crate::lean::connect(addr).await?;
            let (client, connection) = h2::client::handshake(stream)
                .await
                .map_err(|e| transport("HTTP/2 handshake", e))?;
            // Ends when the stream and the client handle are dropped.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let mut client = client
                .ready()
                .await
                .map_err(|e| transport("HTTP/2 ready", e))?;
            let request = http::Request::post(format!("http://{authority}{CONNECT_PATH}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(())
                .map_err(|e| Failure::Wrong(format!("the Connect request: {e}")))?;
            let (response, send) = client
                .send_request(request, false)
                .map_err(|e| transport("Connect", e))?;
            let mut grpc = LeanGrpc {
                send,
                recv: Recv::Head(response),
                out: BytesMut::with_capacity(1024),
                body: Vec::with_capacity(512),
                input: Vec::with_capacity(4096),
                at: 0,
                closed: false,
            };
            if initialize {
                grpc.initialize().await?;
            }
            Ok(grpc)
        };
        match tokio::time::timeout(TIMEOUT, opened).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// Whether the connection is over (then open another).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Ends the connection's use: after a wrong answer, what is still to come on it would
    /// be read as the next call's.
    pub(crate) fn close(&mut self) {
        self.closed = true;
    }

    /// The response's head: 200 and a gRPC content type, or the status it ended with.
    async fn answered(
        response: &mut h2::client::ResponseFuture,
    ) -> Result<h2::RecvStream, Failure> {
        let response = response.await.map_err(|e| transport("Connect", e))?;
        let (head, recv) = response.into_parts();
        if head.status != http::StatusCode::OK {
            return Err(Failure::Http(
                head.status.as_u16(),
                "the Connect call was refused".into(),
            ));
        }
        if let Some(status) = head.headers.get("grpc-status") {
            let message = head
                .headers
                .get("grpc-message")
                .and_then(|m| m.to_str().ok())
                .unwrap_or("");
            return Err(Failure::Transport(format!(
                "the Connect call ended with grpc-status {status:?}: {message}"
            )));
        }
        let grpc = head
            .headers
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.starts_with("application/grpc"));
        if !grpc {
            return Err(Failure::Wrong(
                "the Connect answer is not application/grpc".into(),
            ));
        }
        Ok(recv)
    }

    async fn initialize(&mut self) -> Result<(), Failure> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")}}});
        self.body.clear();
        self.body.extend_from_slice(init.to_string().as_bytes());
        self.send_body()?;
        let answer: Value = serde_json::from_slice(self.next_message().await?)
            .map_err(|e| Failure::Wrong(format!("initialize: not JSON: {e}")))?;
        if answer["id"] != 0 || !answer["result"]["protocolVersion"].is_string() {
            return Err(Failure::Wrong(format!("initialize answered {answer}")));
        }
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.body.clear();
        self.body.extend_from_slice(done.to_string().as_bytes());
        self.send_body()
    }

    /// Sends call `n` of `template` as one message.
    pub(crate) fn send(&mut self, template: &Template, n: u64) -> Result<(), Failure> {
        self.body.clear();
        template.render_into(n, &mut self.body);
        let sent = self.send_body();
        if sent.is_err() {
            self.closed = true;
        }
        sent
    }

    /// The JSON of the server's next message, within [`TIMEOUT`].
    pub(crate) async fn next(&mut self) -> Result<&[u8], Failure> {
        let read = tokio::time::timeout(TIMEOUT, self.next_range()).await;
        let range = match read {
            Ok(Ok(range)) => range,
            Ok(Err(f)) => {
                self.closed = true;
                return Err(f);
            }
            Err(_) => {
                self.closed = true;
                return Err(Failure::Timeout);
            }
        };
        Ok(&self.input[range])
    }

    async fn next_message(&mut self) -> Result<&[u8], Failure> {
        let range = self.next_range().await?;
        Ok(&self.input[range])
    }

    /// `body` as one envelope (HTTP/2 flow control is h2's: it queues what the window
    /// does not take yet).
    fn send_body(&mut self) -> Result<(), Failure> {
        let envelope = envelope(&self.body, &mut self.out);
        self.send
            .send_data(envelope, false)
            .map_err(|e| transport("send", e))
    }

    /// Where the JSON of the next message is in `input`.
    async fn next_range(&mut self) -> Result<std::ops::Range<usize>, Failure> {
        loop {
            if let Some((json, end)) = message(&self.input[self.at..])? {
                let json = self.at + json.start..self.at + json.end;
                self.at += end;
                return Ok(json);
            }
            // What was read is dropped; a partial message moves to the front.
            self.input.drain(..self.at);
            self.at = 0;
            self.more().await?;
        }
    }

    /// Reads the stream's next data into `input`.
    async fn more(&mut self) -> Result<(), Failure> {
        if self.input.len() >= MAX_MESSAGE + 16 {
            return Err(Failure::Wrong("a message over 64 MiB".into()));
        }
        let recv = match &mut self.recv {
            Recv::Body(recv) => recv,
            Recv::Head(response) => {
                let recv = Self::answered(response).await?;
                self.recv = Recv::Body(recv);
                return Ok(());
            }
        };
        match recv.data().await {
            Some(Ok(data)) => {
                let _ = recv.flow_control().release_capacity(data.len());
                self.input.extend_from_slice(&data);
                Ok(())
            }
            Some(Err(e)) => Err(transport("read", e)),
            None => {
                let trailers = recv.trailers().await.ok().flatten();
                let status = trailers
                    .as_ref()
                    .and_then(|t| t.get("grpc-status"))
                    .and_then(|s| s.to_str().ok())
                    .unwrap_or("none")
                    .to_owned();
                Err(Failure::Transport(format!(
                    "the server ended the Connect stream (grpc-status {status})"
                )))
            }
        }
    }
}

/// `json` wrapped in an `Envelope` behind the gRPC message prefix (uncompressed, length),
/// written into `out` and split off it.
fn envelope(json: &[u8], out: &mut BytesMut) -> Bytes {
    let mut varint = [0u8; 10];
    let mut len = json.len() as u64;
    let mut n = 0;
    loop {
        let low = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            varint[n] = low;
            n += 1;
            break;
        }
        varint[n] = low | 0x80;
        n += 1;
    }
    let message = 1 + n + json.len();
    out.reserve(5 + message);
    out.extend_from_slice(&[0]);
    out.extend_from_slice(&(message as u32).to_be_bytes());
    out.extend_from_slice(&[JSON_KEY]);
    out.extend_from_slice(&varint[..n]);
    out.extend_from_slice(json);
    out.split().freeze()
}

/// The message at the start of `input`, once all of it is there: where its envelope's JSON
/// is and where the message ends. A compressed message, or an envelope that holds anything
/// but one `json` field, is refused (the driver sends JSON, so the server answers in JSON).
fn message(input: &[u8]) -> Result<Option<(std::ops::Range<usize>, usize)>, Failure> {
    let Some(prefix) = input.get(..5) else {
        return Ok(None);
    };
    if prefix[0] != 0 {
        return Err(Failure::Wrong("a compressed gRPC message".into()));
    }
    let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    if len > MAX_MESSAGE {
        return Err(Failure::Wrong("a message over 64 MiB".into()));
    }
    let Some(body) = input.get(5..5 + len) else {
        return Ok(None);
    };
    let wrong = || Failure::Wrong("an envelope without its JSON (the json field alone)".into());
    let (&key, rest) = body.split_first().ok_or_else(wrong)?;
    if key != JSON_KEY {
        return Err(wrong());
    }
    let mut size = 0u64;
    let mut read = 0;
    for (i, &b) in rest.iter().enumerate().take(10) {
        size |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            read = i + 1;
            break;
        }
    }
    if read == 0 || size != (rest.len() - read) as u64 {
        return Err(wrong());
    }
    let start = 5 + 1 + read;
    Ok(Some((start..5 + len, 5 + len)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn envelopes_round_trip() {
        let mut out = BytesMut::new();
        for size in [0, 1, 127, 128, 300, 20_000] {
            let json = vec![b'x'; size];
            let bytes = envelope(&json, &mut out);
            let (range, end) = message(&bytes).unwrap().unwrap();
            assert_eq!(end, bytes.len());
            assert_eq!(&bytes[range], &json[..]);
            // Not whole yet: nothing.
            assert_eq!(message(&bytes[..bytes.len() - 1]).unwrap(), None);
        }
        assert_eq!(message(b"\0\0\0").unwrap(), None);
    }

    #[test]
    fn other_messages_are_refused() {
        // Compressed.
        assert!(message(b"\x01\0\0\0\x02\x0a\x00").is_err());
        // The protobuf form (field 2).
        assert!(message(b"\0\0\0\0\x02\x12\x00").is_err());
        // A length that disagrees with the message.
        assert!(message(b"\0\0\0\0\x03\x0a\x05x").is_err());
        // Empty envelope.
        assert!(message(b"\0\0\0\0\x00").is_err());
    }
}

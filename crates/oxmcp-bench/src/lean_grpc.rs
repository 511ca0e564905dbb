//! The raw driver's gRPC connections: one HTTP/2 connection per worker (the `h2` crate, no
//! tonic, no protobuf library) carrying one `mcp.v1.Mcp/Connect` stream, so that the driver
//! costs far less per call than the server it measures (the SDK's client is as busy as the
//! floor servers it drives). A call's message is its request rendered from the call's
//! template, wrapped by hand in an `Envelope` (`bytes json = 1`) behind the gRPC message
//! prefix; the server's messages are gathered into one buffer, unwrapped the same way and
//! their JSON handed to the same byte comparison as HTTP answers. A status the stream ends
//! with is counted by its gRPC code (`grpc 8` for `RESOURCE_EXHAUSTED`).

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};

use crate::check::Failure;
use crate::lean::{settle, transport};
use crate::wire::{TIMEOUT, Template};

/// The most one message may take (the driver's own limit on a server's message).
const MAX_MESSAGE: usize = 64 << 20;

/// The `Connect` method's path (`oxmcp_grpc::CONNECT_PATH`; the driver does not link the
/// gRPC crate).
const CONNECT_PATH: &str = "/mcp.v1.Mcp/Connect";

/// The key of `Envelope.json` (field 1, length-delimited).
const JSON_KEY: u8 = (1 << 3) | 2;

/// The server's side of the stream: its head not read yet, then its messages.
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
    /// Opens a connection to `addr` and its `Connect` stream, within [`TIMEOUT`]. The
    /// stream is a session once the caller has run the legacy handshake on it; without
    /// one, [`LeanGrpc::ready`] checks the server took the call.
    pub(crate) async fn open(addr: SocketAddr, authority: &str) -> Result<LeanGrpc, Failure> {
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
            Ok(LeanGrpc {
                send,
                recv: Recv::Head(response),
                out: BytesMut::with_capacity(1024),
                body: Vec::with_capacity(512),
                input: Vec::with_capacity(4096),
                at: 0,
                closed: false,
            })
        };
        match tokio::time::timeout(TIMEOUT, opened).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// Waits for the response's head (if it has not come with a message yet), within
    /// [`TIMEOUT`]: a refused `Connect` is a failed setup, not a failed first call. The
    /// driver expects the server to send its head when it takes the call, before any
    /// message (`oxmcp serve` does): a server that holds it back until the first envelope
    /// fails here with a timeout.
    pub(crate) async fn ready(&mut self) -> Result<(), Failure> {
        if let Recv::Head(response) = &mut self.recv {
            let head = tokio::time::timeout(TIMEOUT, answered(response)).await;
            self.recv = Recv::Body(settle(&mut self.closed, head)?);
        }
        Ok(())
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

    /// Ends the client's side of the stream and waits (at most a second) for the server to
    /// end its own, so that a run ends its sessions as a client would, not with resets.
    pub(crate) async fn end(&mut self) {
        if self.closed || self.send.send_data(Bytes::new(), true).is_err() {
            return;
        }
        let drained = async {
            while self.more().await.is_ok() {
                self.input.clear();
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), drained).await;
        self.closed = true;
    }

    /// Sends call `n` of `template` as one message.
    pub(crate) fn send(&mut self, template: &Template, n: u64) -> Result<(), Failure> {
        self.body.clear();
        template.render_into(n, &mut self.body);
        self.send_body()
    }

    /// Sends `json` as one message.
    pub(crate) fn send_json(&mut self, json: &[u8]) -> Result<(), Failure> {
        self.body.clear();
        self.body.extend_from_slice(json);
        self.send_body()
    }

    /// The JSON of the server's next message, within [`TIMEOUT`].
    pub(crate) async fn next(&mut self) -> Result<&[u8], Failure> {
        let read = tokio::time::timeout(TIMEOUT, self.next_range()).await;
        let range = settle(&mut self.closed, read)?;
        Ok(&self.input[range])
    }

    /// `body` as one envelope (HTTP/2 flow control is h2's: it queues what the window
    /// does not take yet).
    fn send_body(&mut self) -> Result<(), Failure> {
        let envelope = envelope(&self.body, &mut self.out);
        let sent = self.send.send_data(envelope, false);
        self.closed |= sent.is_err();
        sent.map_err(|e| transport("send", e))
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

    /// Reads the stream's next data into `input` (the response's head first, if it has not
    /// come). `message` refuses a length over [`MAX_MESSAGE`], so `input` holds at most one
    /// message and the start of the next.
    async fn more(&mut self) -> Result<(), Failure> {
        let recv = match &mut self.recv {
            Recv::Body(recv) => recv,
            Recv::Head(response) => {
                self.recv = Recv::Body(answered(response).await?);
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
                let trailers = recv.trailers().await.ok().flatten().unwrap_or_default();
                Err(ended(&trailers, "the server ended the Connect stream"))
            }
        }
    }
}

/// The response's head: 200 and a gRPC content type, or the status it ended with at once
/// (a refusal is a head with `grpc-status` and no messages).
async fn answered(response: &mut h2::client::ResponseFuture) -> Result<h2::RecvStream, Failure> {
    let response = response.await.map_err(|e| transport("Connect", e))?;
    let (head, recv) = response.into_parts();
    if head.status != http::StatusCode::OK {
        return Err(Failure::Http(
            head.status.as_u16(),
            "the Connect call was refused".into(),
        ));
    }
    if head.headers.contains_key("grpc-status") {
        return Err(ended(&head.headers, "the Connect call ended at once"));
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

/// What a stream's end says (`what`, its `grpc-status` and `grpc-message`): a failure with
/// the gRPC code, or a transport failure when the status is OK or missing (the server ended
/// the session while a call waited).
fn ended(headers: &http::HeaderMap, what: &str) -> Failure {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let message =
        text("grpc-message").map_or_else(String::new, |m| format!(": {}", percent_decoded(m)));
    match text("grpc-status").map(|s| (s, s.parse::<u32>())) {
        Some((_, Ok(code))) if code != 0 => Failure::Grpc(code, format!("{what}{message}")),
        Some((status, _)) => Failure::Transport(format!("{what} (grpc-status {status}){message}")),
        None => Failure::Transport(format!("{what} without a grpc-status{message}")),
    }
}

/// A `grpc-message` as sent: percent-encoded (what is not `%XX` stays as it is).
fn percent_decoded(m: &str) -> String {
    percent_encoding::percent_decode_str(m)
        .decode_utf8_lossy()
        .into_owned()
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

    use oxmcp_proto::envelope::Body;
    use prost::Message as _;

    use super::*;

    #[test]
    fn envelopes_round_trip() {
        let mut out = BytesMut::new();
        for size in [0, 1, 127, 128, 300, 20_000] {
            let json = vec![b'x'; size];
            let bytes = envelope(&json, &mut out);
            // What the server's protobuf library reads: one `Envelope` holding the JSON.
            let len = u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize;
            assert_eq!((bytes[0], len), (0, bytes.len() - 5));
            let decoded = oxmcp_proto::Envelope::decode(&bytes[5..]).unwrap();
            assert_eq!(decoded.body, Some(Body::Json(json.clone())));
            let (range, end) = message(&bytes).unwrap().unwrap();
            assert_eq!(end, bytes.len());
            assert_eq!(&bytes[range], &json[..]);
            // Not whole yet: nothing.
            assert_eq!(message(&bytes[..bytes.len() - 1]).unwrap(), None);
        }
        assert_eq!(message(b"\0\0\0").unwrap(), None);
    }

    #[test]
    fn grpc_messages_are_percent_decoded() {
        assert_eq!(
            percent_decoded("too%20many%20sessions"),
            "too many sessions"
        );
        assert_eq!(percent_decoded("caf%C3%A9 100%"), "café 100%");
        assert_eq!(percent_decoded("%zz%4"), "%zz%4");
        assert_eq!(percent_decoded("%+5 %-1"), "%+5 %-1");
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

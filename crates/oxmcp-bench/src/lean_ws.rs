//! The raw driver's WebSocket connections: the upgrade and the frames written and read by hand
//! on one TCP connection per worker, so that the driver costs far less per call than the
//! server it measures (the SDK's client is as busy as the floor servers it drives). A call's
//! frame is its request rendered from the call's template behind a fixed header and a zero
//! mask (RFC 6455 lets the client pick any key, and the server's unmasking is the same work);
//! the server's frames are read into one buffer and their payloads handed to the same byte
//! comparison as HTTP answers. Pings are answered; a close frame ends the connection. Once
//! its buffers have grown, a call allocates nothing.

use std::net::SocketAddr;

use memchr::memmem;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::check::Failure;
use crate::lean::{settle, transport};
use crate::wire::{TIMEOUT, Template};

/// The most a frame's payload may take (the driver's own limit on a server's message).
const MAX_FRAME: usize = 64 << 20;

/// The key of the upgrade (RFC 6455's example) and the accept value it asks for.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &[u8] = b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

const TEXT: u8 = 0x1;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// One WebSocket connection and its buffers.
pub(crate) struct LeanWs {
    stream: TcpStream,
    out: Vec<u8>,
    body: Vec<u8>,
    input: Vec<u8>,
    /// Where the next frame starts in `input`.
    at: usize,
    closed: bool,
}

impl LeanWs {
    /// Opens a connection to `addr` and upgrades it (subprotocol `mcp`), within
    /// [`TIMEOUT`]. The connection is a session once the caller has run the legacy handshake
    /// on it.
    pub(crate) async fn open(
        addr: SocketAddr,
        authority: &str,
        path: &str,
    ) -> Result<LeanWs, Failure> {
        let stream = crate::lean::connect(addr).await?;
        let mut ws = LeanWs {
            stream,
            out: Vec::with_capacity(1024),
            body: Vec::with_capacity(512),
            input: Vec::with_capacity(4096),
            at: 0,
            closed: false,
        };
        match tokio::time::timeout(TIMEOUT, ws.upgrade(authority, path)).await {
            Ok(Ok(())) => Ok(ws),
            Ok(Err(f)) => Err(f),
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

    async fn upgrade(&mut self, authority: &str, path: &str) -> Result<(), Failure> {
        let head = format!(
            "GET {path} HTTP/1.1\r\nhost: {authority}\r\nupgrade: websocket\r\n\
             connection: Upgrade\r\nsec-websocket-key: {KEY}\r\nsec-websocket-version: 13\r\n\
             sec-websocket-protocol: mcp\r\n\r\n"
        );
        self.stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| transport("send", e))?;
        let head_len = loop {
            if let Some(end) = memmem::find(&self.input, b"\r\n\r\n") {
                break end + 4;
            }
            self.more().await?;
        };
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        resp.parse(&self.input[..head_len])
            .map_err(|e| Failure::Wrong(format!("malformed upgrade answer: {e}")))?;
        let status = resp.code.unwrap_or(0);
        if status != 101 {
            return Err(Failure::Http(status, "the upgrade was refused".into()));
        }
        let accepted = resp
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("sec-websocket-accept") && h.value == ACCEPT);
        if !accepted {
            return Err(Failure::Wrong(
                "the upgrade's sec-websocket-accept is wrong".into(),
            ));
        }
        // Frames the server sent at once stay for the reads.
        self.at = head_len;
        Ok(())
    }

    /// Sends call `n` of `template` as one text frame.
    pub(crate) async fn send(&mut self, template: &Template, n: u64) -> Result<(), Failure> {
        self.body.clear();
        template.render_into(n, &mut self.body);
        self.send_text().await
    }

    /// Sends `json` as one text frame.
    pub(crate) async fn send_json(&mut self, json: &[u8]) -> Result<(), Failure> {
        self.body.clear();
        self.body.extend_from_slice(json);
        self.send_text().await
    }

    async fn send_text(&mut self) -> Result<(), Failure> {
        let sent = tokio::time::timeout(TIMEOUT, self.send_body(TEXT)).await;
        settle(&mut self.closed, sent)
    }

    /// The payload of the next text frame, within [`TIMEOUT`] (pings answered on the way).
    pub(crate) async fn next(&mut self) -> Result<&[u8], Failure> {
        let read = tokio::time::timeout(TIMEOUT, self.next_range()).await;
        let range = settle(&mut self.closed, read)?;
        Ok(&self.input[range])
    }

    /// `body` as one frame of `opcode`, masked with a zero key.
    async fn send_body(&mut self, opcode: u8) -> Result<(), Failure> {
        self.out.clear();
        self.out.push(0x80 | opcode);
        let len = self.body.len();
        if len < 126 {
            self.out.push(0x80 | len as u8);
        } else if let Ok(len) = u16::try_from(len) {
            self.out.push(0x80 | 126);
            self.out.extend_from_slice(&len.to_be_bytes());
        } else {
            self.out.push(0x80 | 127);
            self.out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        self.out.extend_from_slice(&[0; 4]);
        self.out.extend_from_slice(&self.body);
        self.stream
            .write_all(&self.out)
            .await
            .map_err(|e| transport("send", e))
    }

    /// Where the payload of the next text frame is in `input`.
    async fn next_range(&mut self) -> Result<std::ops::Range<usize>, Failure> {
        loop {
            let Some((opcode, payload, end)) = frame(&self.input[self.at..])? else {
                // What was read is dropped; a partial frame moves to the front.
                self.input.drain(..self.at);
                self.at = 0;
                self.more().await?;
                continue;
            };
            let payload = self.at + payload.start..self.at + payload.end;
            self.at += end;
            match opcode {
                TEXT => return Ok(payload),
                PING => {
                    self.body.clear();
                    self.body.extend_from_slice(&self.input[payload]);
                    self.send_body(PONG).await?;
                }
                CLOSE => {
                    return Err(Failure::Transport(
                        "the server closed the connection".into(),
                    ));
                }
                PONG => {}
                other => {
                    return Err(Failure::Wrong(format!(
                        "an unexpected frame (opcode {other:#x})"
                    )));
                }
            }
        }
    }

    /// Reads more into `input` ([`crate::lean::more`]: at most 64 MiB).
    async fn more(&mut self) -> Result<(), Failure> {
        crate::lean::more(&mut self.stream, &mut self.input).await
    }
}

/// The frame at the start of `input`, once all of it is there: its opcode, where its payload
/// is and where it ends. A fragmented or masked frame is refused (servers send neither).
fn frame(input: &[u8]) -> Result<Option<(u8, std::ops::Range<usize>, usize)>, Failure> {
    let [b0, b1, ..] = *input else {
        return Ok(None);
    };
    if b0 & 0x80 == 0 || b0 & 0x0f == 0 {
        return Err(Failure::Wrong("a fragmented message".into()));
    }
    if b1 & 0x80 != 0 {
        return Err(Failure::Wrong("a masked frame from the server".into()));
    }
    let (len, head) = match b1 & 0x7f {
        126 => match input.get(2..4) {
            Some(l) => (usize::from(u16::from_be_bytes([l[0], l[1]])), 4),
            None => return Ok(None),
        },
        127 => match input.get(2..10).and_then(|l| <[u8; 8]>::try_from(l).ok()) {
            Some(l) => (
                usize::try_from(u64::from_be_bytes(l)).unwrap_or(usize::MAX),
                10,
            ),
            None => return Ok(None),
        },
        n => (usize::from(n), 2),
    };
    if len > MAX_FRAME {
        return Err(Failure::Wrong("a message over 64 MiB".into()));
    }
    if input.len() < head + len {
        return Ok(None);
    }
    Ok(Some((b0 & 0x0f, head..head + len, head + len)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn frames_are_read_whole_or_not_at_all() {
        assert_eq!(frame(b"\x81").unwrap(), None);
        assert_eq!(frame(b"\x81\x02h").unwrap(), None);
        assert_eq!(frame(b"\x81\x02hi").unwrap(), Some((TEXT, 2..4, 4)));
        let mut long = vec![0x81, 126, 0x01, 0x00];
        long.extend(std::iter::repeat_n(b'x', 256));
        assert_eq!(frame(&long).unwrap(), Some((TEXT, 4..260, 260)));
        assert_eq!(frame(&long[..100]).unwrap(), None);
        assert_eq!(frame(b"\x89\x00").unwrap(), Some((PING, 2..2, 2)));
        assert!(frame(b"\x01\x02hi").is_err(), "not FIN");
        assert!(frame(b"\x81\x82\0\0\0\0hi").is_err(), "masked");
        let huge = [0x81, 127, 0xff, 0, 0, 0, 0, 0, 0, 0];
        assert!(frame(&huge).is_err());
    }
}

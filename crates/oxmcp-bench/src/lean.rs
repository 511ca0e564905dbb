//! The raw driver's timed calls: HTTP/1.1 written and read by hand on one TCP connection per
//! worker, so that the driver costs far less per call than the server it measures. The
//! request's head is rendered once per connection and its body from the call's template; the
//! answer is read into one buffer (parsed by `httparse`, chunked bodies joined) and checked by
//! comparing bytes: status 200, a JSON body, `"jsonrpc":"2.0"`, `"id":N`, no error, and the
//! result's one text item equal to the expected text. An answer the comparison cannot accept
//! (another layout, an SSE body, an error) is parsed and checked in full by `wire::answer`,
//! which then gives the verdict. Once its buffers have grown, a call allocates nothing.

use std::net::SocketAddr;

use bytes::Bytes;
use memchr::memmem;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::check::Failure;
use crate::wire::{self, Body, Reply, TIMEOUT, Template};

/// The most an answer's head or body may take (the driver's own limit on a server's reply).
const MAX_ANSWER: usize = 64 << 20;

/// One connection and its buffers.
pub(crate) struct Lean {
    stream: TcpStream,
    /// `POST … HTTP/1.1`, the fixed headers, and `content-length: ` (the length follows).
    head: Vec<u8>,
    out: Vec<u8>,
    body: Vec<u8>,
    input: Vec<u8>,
    /// The body of a chunked answer, joined.
    joined: Vec<u8>,
    closed: bool,
}

/// An answer as read: status, content type, body.
pub(crate) struct Answer<'a> {
    pub(crate) status: u16,
    pub(crate) kind: Body,
    pub(crate) content_type: &'a str,
    pub(crate) body: &'a [u8],
}

pub(crate) fn transport(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Transport(format!("{what}: {e}"))
}

impl Lean {
    /// Opens a connection to `addr` whose requests carry `headers` besides the fixed ones.
    pub(crate) async fn open(
        addr: SocketAddr,
        authority: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Lean, Failure> {
        let stream = connect(addr).await?;
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n"
        );
        for (k, v) in headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str("content-length: ");
        Ok(Lean {
            stream,
            head: head.into_bytes(),
            out: Vec::with_capacity(1024),
            body: Vec::with_capacity(512),
            input: Vec::with_capacity(4096),
            joined: Vec::new(),
            closed: false,
        })
    }

    /// Whether the server closed the connection (then open another).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// POSTs call `n` of `template` and reads its answer, within [`TIMEOUT`].
    pub(crate) async fn call(
        &mut self,
        template: &Template,
        n: u64,
    ) -> Result<Answer<'_>, Failure> {
        self.body.clear();
        template.render_into(n, &mut self.body);
        self.out.clear();
        self.out.extend_from_slice(&self.head);
        self.out
            .extend_from_slice(itoa::Buffer::new().format(self.body.len()).as_bytes());
        self.out.extend_from_slice(b"\r\n\r\n");
        self.out.extend_from_slice(&self.body);
        let exchange = async {
            self.stream
                .write_all(&self.out)
                .await
                .map_err(|e| transport("send", e))?;
            read_answer(&mut self.stream, &mut self.input, &mut self.joined).await
        };
        let read = settle(
            &mut self.closed,
            tokio::time::timeout(TIMEOUT, exchange).await,
        )?;
        self.closed |= read.close;
        let body = if read.chunked {
            &self.joined[..]
        } else {
            &self.input[read.body.clone()]
        };
        let content_type =
            std::str::from_utf8(&self.input[read.content_type.clone()]).unwrap_or("");
        Ok(Answer {
            status: read.status,
            kind: Body::of(content_type),
            content_type,
            body,
        })
    }
}

/// Where the parts of an answer are in the input buffer.
struct Read {
    status: u16,
    content_type: std::ops::Range<usize>,
    body: std::ops::Range<usize>,
    chunked: bool,
    close: bool,
}

/// A timed step's result on a raw connection: a failure, or no result in time, marks the
/// connection `closed` (what is still to come on it would be read as the next call's).
pub(crate) fn settle<T>(
    closed: &mut bool,
    r: Result<Result<T, Failure>, tokio::time::error::Elapsed>,
) -> Result<T, Failure> {
    let failure = match r {
        Ok(Ok(v)) => return Ok(v),
        Ok(Err(f)) => f,
        Err(_) => Failure::Timeout,
    };
    *closed = true;
    Err(failure)
}

/// A TCP connection to `addr` (no Nagle), within [`TIMEOUT`].
pub(crate) async fn connect(addr: SocketAddr) -> Result<TcpStream, Failure> {
    let stream = tokio::time::timeout(TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| Failure::Timeout)?
        .map_err(|e| transport("connect", e))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Reads more of the answer into `input`; an error if the server closed the connection.
pub(crate) async fn more(stream: &mut TcpStream, input: &mut Vec<u8>) -> Result<(), Failure> {
    if input.len() >= MAX_ANSWER {
        return Err(Failure::Wrong("an answer over 64 MiB".into()));
    }
    input.reserve(8192);
    let n = stream
        .read_buf(input)
        .await
        .map_err(|e| transport("read", e))?;
    if n == 0 {
        return Err(Failure::Transport(
            "the server closed the connection".into(),
        ));
    }
    Ok(())
}

/// Reads one answer: its head, then a body of `content-length` bytes, or a chunked body
/// (joined into `joined`). The request/response exchange is strict, so the input holds
/// nothing past the answer.
async fn read_answer(
    stream: &mut TcpStream,
    input: &mut Vec<u8>,
    joined: &mut Vec<u8>,
) -> Result<Read, Failure> {
    input.clear();
    let (head_len, mut read) = loop {
        if let Some(parsed) = parse_head(input)? {
            break parsed;
        }
        more(stream, input).await?;
    };
    if read.chunked {
        joined.clear();
        let mut at = head_len;
        loop {
            match next_chunk(&input[at..])? {
                Some((0, used)) if input.len() >= at + used + 2 => break,
                Some((size, used)) if size > 0 && input.len() >= at + used + size + 2 => {
                    joined.extend_from_slice(&input[at + used..at + used + size]);
                    at += used + size + 2;
                    continue;
                }
                _ => more(stream, input).await?,
            }
        }
        read.body = 0..0;
    } else {
        let end = head_len + read.body.end;
        while input.len() < end {
            more(stream, input).await?;
        }
        read.body = head_len..end;
    }
    Ok(read)
}

/// The head of an answer, once `input` holds all of it: its length and what it says (the body
/// range is relative to the body's start).
fn parse_head(input: &[u8]) -> Result<Option<(usize, Read)>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(input) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Failure::Wrong(format!("malformed HTTP answer: {e}"))),
    };
    let mut read = Read {
        status: resp.code.unwrap_or(0),
        content_type: 0..0,
        body: 0..0,
        chunked: false,
        close: false,
    };
    let base = input.as_ptr() as usize;
    for h in resp.headers.iter() {
        let value = h.value;
        if h.name.eq_ignore_ascii_case("content-length") {
            let len = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| Failure::Wrong("a bad content-length".into()))?;
            if len > MAX_ANSWER {
                return Err(Failure::Wrong("an answer over 64 MiB".into()));
            }
            read.body = 0..len;
        } else if h.name.eq_ignore_ascii_case("content-type") {
            let start = value.as_ptr() as usize - base;
            read.content_type = start..start + value.len();
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            read.chunked = value.eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            read.close = value.eq_ignore_ascii_case(b"close");
        }
    }
    Ok(Some((head_len, read)))
}

/// The size of the chunk at the start of `input` and the length of its size line, once the
/// line is all there.
fn next_chunk(input: &[u8]) -> Result<Option<(usize, usize)>, Failure> {
    let Some(eol) = memmem::find(input, b"\r\n") else {
        return Ok(None);
    };
    let line = &input[..eol];
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let size = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| usize::from_str_radix(d.trim(), 16).ok())
        .ok_or_else(|| Failure::Wrong("a bad chunk size".into()))?;
    if size > MAX_ANSWER {
        return Err(Failure::Wrong("an answer over 64 MiB".into()));
    }
    Ok(Some((size, eol + 2)))
}

/// What call `n`'s answer is compared with: searchers built once, and the expected content
/// item rebuilt in place for each call.
pub(crate) struct Needles {
    /// The expected text, as a JSON string without its closing quote (`"base` or the whole
    /// text); `None` when any result counts.
    text: Option<Vec<u8>>,
    /// Whether call `n`'s number ends the text (`"base-N"`).
    numbered: bool,
    quoted: Vec<u8>,
    id: memmem::Finder<'static>,
    version: memmem::Finder<'static>,
    error: memmem::Finder<'static>,
    is_error: memmem::Finder<'static>,
    result: memmem::Finder<'static>,
    content: memmem::Finder<'static>,
}

impl Needles {
    /// For a text that is `base-N` (echo) or fixed, or none (any result).
    pub(crate) fn new(text: Option<&str>, numbered: bool) -> Needles {
        let text = text.map(|t| {
            let mut quoted = serde_json::to_vec(t).unwrap_or_default();
            quoted.pop();
            quoted
        });
        Needles {
            text,
            numbered,
            quoted: Vec::with_capacity(128),
            id: memmem::Finder::new(b"\"id\":"),
            version: memmem::Finder::new(b"\"jsonrpc\":\"2.0\""),
            error: memmem::Finder::new(b"\"error\""),
            is_error: memmem::Finder::new(b"\"isError\":true"),
            result: memmem::Finder::new(b"\"result\":{"),
            content: memmem::Finder::new(b"\"content\":[{"),
        }
    }

    /// Whether `body` is certainly the right answer to call `n`: `false` means "parse it".
    pub(crate) fn accept(&mut self, body: &[u8], n: u64) -> bool {
        if !self.id_is(body, n)
            || self.version.find(body).is_none()
            || self.error.find(body).is_some()
            || self.is_error.find(body).is_some()
        {
            return false;
        }
        let Some(text) = &self.text else {
            return self.result.find(body).is_some();
        };
        let quoted = &mut self.quoted;
        quoted.clear();
        quoted.extend_from_slice(text);
        if self.numbered {
            quoted.push(b'-');
            quoted.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        }
        quoted.push(b'"');
        // The result's content is one text item, its members in either order.
        self.content.find_iter(body).any(|at| {
            let item = &body[at + b"\"content\":[{".len()..];
            let typed_first = item
                .strip_prefix(b"\"type\":\"text\",\"text\":".as_slice())
                .and_then(|rest| rest.strip_prefix(quoted.as_slice()))
                .is_some_and(|rest| rest.starts_with(b"}]"));
            typed_first
                || item
                    .strip_prefix(b"\"text\":".as_slice())
                    .and_then(|rest| rest.strip_prefix(quoted.as_slice()))
                    .is_some_and(|rest| rest.starts_with(b",\"type\":\"text\"}]"))
        })
    }

    /// Whether the `"id"` of `body` is `n`: some `"id":N` followed by `,` or `}`.
    fn id_is(&self, body: &[u8], n: u64) -> bool {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(n).as_bytes();
        self.id.find_iter(body).any(|at| {
            let rest = &body[at + 5..];
            rest.starts_with(digits) && matches!(rest.get(digits.len()), Some(b',' | b'}'))
        })
    }
}

impl Needles {
    /// What the answers of `plan`'s calls are compared with.
    pub(crate) fn for_plan(plan: &crate::run::Plan) -> Needles {
        match &plan.expect {
            crate::check::Expect::Echo => Needles::new(plan.payload.base.as_deref(), true),
            crate::check::Expect::Text(t) => Needles::new(Some(t), false),
            crate::check::Expect::AnyResult => Needles::new(None, false),
        }
    }
}

/// The full check of one JSON-RPC message (a stream's or a pipe's) as the answer to call
/// `n` of `plan`: parsed, its id and result checked, then its text.
pub(crate) fn check_message(
    message: &[u8],
    n: u64,
    plan: &crate::run::Plan,
) -> Result<(), Failure> {
    let reply = Reply {
        status: 200,
        kind: Body::Json,
        content_type: "application/json".to_owned(),
        session: None,
        body: Bytes::copy_from_slice(message),
    };
    let result: wire::ToolResult = wire::answer(&reply, n)?;
    let sent = plan.payload.message(n);
    plan.expect
        .check(sent.as_deref(), result.failed(), result.texts())
}

/// An answer as `wire::answer` takes it (for the full check).
pub(crate) fn reply_of(answer: &Answer<'_>) -> Reply {
    Reply {
        status: answer.status,
        kind: answer.kind,
        content_type: answer.content_type.to_ascii_lowercase(),
        session: None,
        body: Bytes::copy_from_slice(answer.body),
    }
}

/// The full check of an answer the comparison did not accept.
pub(crate) fn parsed(answer: &Answer<'_>, n: u64) -> Result<wire::ToolResult, Failure> {
    wire::answer(&reply_of(answer), n)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn ids_must_be_the_calls() {
        let n = Needles::new(None, false);
        assert!(n.id_is(br#"{"jsonrpc":"2.0","id":12,"result":{}}"#, 12));
        assert!(n.id_is(br#"{"result":{},"id":12}"#, 12));
        assert!(!n.id_is(br#"{"jsonrpc":"2.0","id":123,"result":{}}"#, 12));
        assert!(!n.id_is(br#"{"jsonrpc":"2.0","id":"12","result":{}}"#, 12));
    }

    #[test]
    fn only_the_right_answer_is_accepted_unparsed() {
        let mut echo = Needles::new(Some("hi"), true);
        let ours =
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi-7"}]}}"#;
        assert!(echo.accept(ours, 7));
        let sorted =
            br#"{"id":7,"jsonrpc":"2.0","result":{"content":[{"text":"hi-7","type":"text"}]}}"#;
        assert!(echo.accept(sorted, 7));
        for wrong in [
            &br#"{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"hi-7"}]}}"#[..],
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi-8"}]}}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi-77"}]}}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi-7"}],"isError":true}}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"},{"type":"text","text":"hi-7"}]}}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"hi-7"}}"#,
            br#"{"id":7,"result":{"content":[{"type":"text","text":"hi-7"}]}}"#,
        ] {
            assert!(!echo.accept(wrong, 7), "{}", String::from_utf8_lossy(wrong));
        }
        let mut fixed = Needles::new(Some("a \"q\""), false);
        assert!(fixed.accept(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a \"q\""}]}}"#,
            1
        ));
        let mut any = Needles::new(None, false);
        assert!(any.accept(br#"{"jsonrpc":"2.0","id":1,"result":{"x":1}}"#, 1));
    }

    #[test]
    fn heads_and_chunks() {
        let head =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5\r\n\r\nhello";
        let (len, read) = parse_head(head).unwrap().unwrap();
        assert_eq!(read.status, 200);
        assert_eq!(&head[read.content_type.clone()], b"application/json");
        assert_eq!(&head[len..len + read.body.end], b"hello");
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\ncontent-")
                .unwrap()
                .is_none()
        );
        let chunked = parse_head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(chunked.1.chunked);
        assert_eq!(next_chunk(b"1a;x=y\r\n").unwrap(), Some((26, 8)));
        assert_eq!(next_chunk(b"1a").unwrap(), None);
        assert!(next_chunk(b"zz\r\n").is_err());
    }
}

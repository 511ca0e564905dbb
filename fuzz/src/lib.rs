//! The checks behind each fuzz target, shared with the replay test (`tests/replay.rs`), which
//! runs every seed and every saved crash through them on the stable toolchain.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use oxmcp_jsonrpc::{Frame, Message};
use oxmcp_transport::ndjson::{LineRead, LineReader};

/// Decoding never panics; what decodes re-encodes to text that decodes to the same message;
/// nothing that is not JSON is ever accepted.
pub fn jsonrpc_decode(data: &[u8]) {
    let accepted: Vec<Message> = match Frame::decode(data) {
        Frame::Single(Ok(m)) => vec![m],
        Frame::Single(Err(e)) => {
            assert!(e.error.code.0 < 0);
            Vec::new()
        }
        Frame::Batch(items) => items.into_iter().filter_map(Result::ok).collect(),
    };
    if accepted.is_empty() {
        return;
    }
    // Valid JSON text: UTF-8 and well-formed (numbers of any size are JSON, even those that
    // `Value` cannot hold, so the syntax is checked without building values).
    assert!(std::str::from_utf8(data).is_ok(), "accepted invalid UTF-8");
    assert!(
        serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok(),
        "accepted input that is not valid JSON"
    );
    for m in accepted {
        let text = m.encode();
        let again = Message::decode(text.as_bytes()).expect("our own encoding decodes");
        assert_eq!(again.encode(), text, "encoding round-trips");
    }
}

/// Newline framing with any chunking: each line within the limit comes out once, without its
/// `\r`; longer lines are skipped (and say how long they were); a tail without a newline is
/// reported as partial, never as a message.
pub fn stdio_framing(data: &[u8]) {
    let [max, cap, rest @ ..] = data else { return };
    let max = usize::from(*max % 64) + 1;
    let cap = usize::from(*cap % 32) + 1;
    let mut expected = Vec::new();
    let mut pieces: Vec<&[u8]> = rest.split(|&b| b == b'\n').collect();
    let tail = pieces.pop().unwrap_or(&[]);
    for p in pieces {
        if p.len() > max {
            expected.push(LineRead::TooLong(p.len()));
        } else {
            let p = p.strip_suffix(b"\r").unwrap_or(p);
            expected.push(LineRead::Line(p.to_vec()));
        }
    }
    if tail.len() > max {
        expected.push(LineRead::TooLong(tail.len()));
    } else if !tail.is_empty() {
        expected.push(LineRead::Partial(tail.len()));
    }
    expected.push(LineRead::Eof);
    let got = runtime().block_on(async {
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(cap, rest), max);
        let mut got = Vec::new();
        loop {
            let l = r.next_line().await.expect("reading a slice cannot fail");
            let end = l == LineRead::Eof;
            got.push(l);
            if end {
                return got;
            }
        }
    });
    assert_eq!(got, expected);
}

/// The SSE parser: no event larger than its cap, and the same events whatever the chunking.
pub fn sse_parser(data: &[u8]) {
    let [cap, split, rest @ ..] = data else {
        return;
    };
    let cap = usize::from(*cap) + 1;
    let mut whole = oxmcp_http::sse::SseParser::new(cap);
    let all = whole.push(rest);
    for e in &all {
        assert!(e.data.len() <= cap, "event over the cap");
    }
    let split = usize::from(*split).min(rest.len());
    let mut parts = oxmcp_http::sse::SseParser::new(cap);
    let mut got = parts.push(&rest[..split]);
    got.extend(parts.push(&rest[split..]));
    // An event cut by the cap may differ at the boundary; below the cap they must agree.
    if rest.len() <= cap {
        assert_eq!(got, all, "chunking changed the events");
    }
}

/// URI templates: parsing, matching and expanding never panic and stay fast.
pub fn uri_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let start = Instant::now();
    if let Ok(t) = oxmcp_server::uri_template::UriTemplate::parse(template) {
        if let Some(vars) = t.matches(uri) {
            let _ = t.expand(&vars);
        }
        let mut values = BTreeMap::new();
        for v in t.variables() {
            values.insert(v.to_owned(), uri.to_owned());
        }
        let _ = t.expand(&values);
    }
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "a template took {:?}",
        start.elapsed()
    );
}

/// Arbitrary method, headers and body through the Streamable HTTP service: no panic, and a
/// status from the documented set.
pub fn http_service(data: &[u8]) {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    let [m, rest @ ..] = data else { return };
    let method = ["GET", "POST", "DELETE", "PUT", "OPTIONS", "PATCH"][usize::from(*m % 6)];
    let (head, body) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let mut req = Request::builder().method(method).uri("/mcp");
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if let (Ok(n), Ok(v)) = (
            axum::http::HeaderName::from_bytes(name),
            axum::http::HeaderValue::from_bytes(value),
        ) {
            req = req.header(n, v);
        }
    }
    let Ok(req) = req.body(Body::from(body.to_vec())) else {
        return;
    };
    let router = ROUTER.with(Clone::clone);
    let status =
        runtime().block_on(async move { router.oneshot(req).await.map(|r| r.status().as_u16()) });
    let Ok(status) = status;
    assert!(
        [
            200, 202, 400, 403, 404, 405, 406, 408, 409, 413, 415, 429, 503
        ]
        .contains(&status),
        "unexpected status {status}"
    );
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

thread_local! {
    static ROUTER: axum::Router = {
        // The router starts background tasks (session reaper) on the runtime.
        let _inside = runtime().enter();
        let server = oxmcp_server::Server::builder("fuzz", "1")
            .tool("echo", "echo", |_c: oxmcp_server::Ctx, a: Echo| async move {
                Ok::<_, String>(a.message)
            })
            .build()
            .expect("a server");
        oxmcp_http::StreamableHttp::new(server, oxmcp_http::HttpConfig::default()).router()
    };
}

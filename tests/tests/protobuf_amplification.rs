//! Protobuf input amplification against a real `oxmcp serve` process: a 4 MiB
//! `application/mcp+protobuf` body (or gRPC envelope) of two-byte elements would decode into
//! two million values. It is refused (HTTP 413 with a JSON-RPC error, gRPC
//! `RESOURCE_EXHAUSTED`) before it is decoded, so the server's peak memory (`VmHWM`) barely
//! moves, where decoding it used to cost 90 to 170 MB. A body within the cap (one element per
//! four bytes) costs what the same request costs in JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use oxmcp_proto::Envelope;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Just under the default `--max-body` (4 MiB).
const BODY: usize = 4 * 1024 * 1024 - 256;

fn varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A length-delimited field.
fn ld(field: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8);
    varint((field << 3) | 2, &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

/// `Field { key, value }` inside a `Struct`.
fn field(key: &str, value: &[u8]) -> Vec<u8> {
    ld(1, &[ld(1, key.as_bytes()), ld(2, value)].concat())
}

/// A `tools/call` of `echo` whose `arguments` value is `arguments` (a `Value`'s bytes).
fn call(arguments: &[u8]) -> Vec<u8> {
    let name = ld(6, b"echo");
    let params = ld(
        9,
        &[field("name", &name), field("arguments", arguments)].concat(),
    );
    [
        ld(1, &[0x08, 0x04]), // id 2 (sint64)
        ld(2, b"tools/call"),
        ld(3, &params),
    ]
    .concat()
}

/// `arguments: {"message": [V, V, ...]}` filling the body with `item`s (a `Value` each).
fn list_of(item: &[u8]) -> Vec<u8> {
    let one = ld(1, item);
    let list = one.repeat((BODY - 256) / one.len());
    call(&ld(9, &field("message", &ld(8, &list))))
}

/// A list of empty values (no kind), 2 bytes each.
fn empty_values() -> Vec<u8> {
    list_of(&[])
}

/// A list of empty lists, 4 bytes each: within the cap.
fn empty_lists() -> Vec<u8> {
    list_of(&[0x42, 0x00])
}

/// `arguments` a struct of empty fields, 2 bytes each: the costliest element to decode.
fn empty_fields() -> Vec<u8> {
    call(&ld(9, &[0x0a, 0x00].repeat((BODY - 256) / 2)))
}

fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    sid: Option<&str>,
    ct: &str,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let mut r = http
        .post(url)
        .header("content-type", ct)
        .header("accept", "application/json, text/event-stream");
    if let Some(sid) = sid {
        r = r
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let r = r.body(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.bytes().await.unwrap().to_vec())
}

/// A session of the demo server over HTTP, warmed up with one protobuf call.
async fn session(http: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let ct = "application/json";
    assert_eq!(
        post(http, url, Some(&sid), ct, note.to_string().into_bytes())
            .await
            .0,
        202
    );
    let small = call(&ld(9, &field("message", &ld(6, b"warm"))));
    let (status, body) = post(http, url, Some(&sid), "application/mcp+protobuf", small).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amplifying_protobuf_is_refused_before_it_is_decoded() {
    let (server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let pid = server.id().unwrap();
    let http = reqwest::Client::new();
    let sid = session(&http, &url).await;
    let (values, fields) = (empty_values(), empty_fields());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = peak_kib(pid);
    for (what, body) in [
        ("empty values", values.clone()),
        ("empty fields", fields.clone()),
    ] {
        assert!(body.len() <= BODY);
        let (status, answer) =
            post(&http, &url, Some(&sid), "application/mcp+protobuf", body).await;
        let text: String = String::from_utf8_lossy(&answer).chars().take(300).collect();
        assert_eq!(status, 413, "{what}: {text}");
        let v: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(v["error"]["code"], -32600, "{what}: {text}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("values"),
            "{what}: the error says why: {message}"
        );
    }
    // The same bodies in a gRPC envelope end the stream with RESOURCE_EXHAUSTED.
    for (what, message) in [("empty values", values), ("empty fields", fields)] {
        let code = grpc_send(&url, ld(2, &message)).await;
        assert_eq!(code, tonic::Code::ResourceExhausted, "{what}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let grown = peak_kib(pid).saturating_sub(before);
    assert!(
        grown < 40 * 1024,
        "four refused 4 MiB messages raised the peak RSS by {grown} KiB"
    );
    // The session still works.
    let ok = call(&ld(9, &field("message", &ld(6, b"still here"))));
    let (status, answer) = post(&http, &url, Some(&sid), "application/mcp+protobuf", ok).await;
    assert_eq!(status, 200, "{:?}", &answer[..answer.len().min(300)]);
}

/// Sends one envelope (its encoded bytes) on a `Connect` stream: the status that ends it.
async fn grpc_send(http_url: &str, envelope: Vec<u8>) -> tonic::Code {
    let base = http_url.trim_end_matches("/mcp").to_owned();
    let channel = tonic::transport::Endpoint::from_shared(base)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel).max_encoding_message_size(usize::MAX);
    grpc.ready().await.unwrap();
    let (tx, rx) = mpsc::channel(1);
    let path = axum::http::uri::PathAndQuery::from_static("/mcp.v1.Mcp/Connect");
    let mut answers = grpc
        .streaming(tonic::Request::new(ReceiverStream::new(rx)), path, RawCodec)
        .await
        .unwrap()
        .into_inner();
    tx.send(envelope).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match answers.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => return tonic::Code::Ok,
                Err(status) => return status.code(),
            }
        }
    })
    .await
    .expect("the stream ends");
    drop(tx);
    end
}

/// Sends raw envelope bytes; reads envelopes.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Envelope;
    type Encoder = RawCodec;
    type Decoder = tonic_prost::ProstDecoder<Envelope>;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::new(tonic::codec::BufferSettings::default())
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        buf: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        use bytes::BufMut as _;
        buf.put_slice(&item);
        Ok(())
    }
}

/// The peak memory one request adds to a fresh `oxmcp serve`, in KiB, and its status.
async fn peak_of(content_type: &str, body: Vec<u8>) -> (u64, u16) {
    let (server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let pid = server.id().unwrap();
    let http = reqwest::Client::new();
    let sid = session(&http, &url).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = peak_kib(pid);
    let (status, _) = post(&http, &url, Some(&sid), content_type, body).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    (peak_kib(pid).saturating_sub(before), status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_within_the_cap_costs_what_the_same_json_costs() {
    let proto = empty_lists();
    let json_value = oxmcp_proto::decode(&proto).unwrap();
    let items = json_value["params"]["arguments"]["message"]
        .as_array()
        .unwrap()
        .len();
    assert!(items > 1_000_000, "{items} empty lists");
    let json = json_value.to_string().into_bytes();
    let (json_peak, status) = peak_of("application/json", json).await;
    assert_eq!(status, 200);
    let (proto_peak, status) = peak_of("application/mcp+protobuf", proto).await;
    assert_eq!(status, 200, "within the cap, the body is served");
    // The protobuf body is a third larger than the JSON one; past that, decoding it costs
    // nothing the JSON request does not (it used to cost a fifth more).
    assert!(
        proto_peak <= json_peak + json_peak / 10,
        "protobuf {proto_peak} KiB, JSON {json_peak} KiB"
    );
}

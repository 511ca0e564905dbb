//! `oxmcp-bench` counts only answers it has checked: against a fake server whose answers are
//! wrong (text, id, 429 refusals) it reports the errors, no throughput, and exits non-zero;
//! against the real `oxmcp serve`, every shape finishes with 0 errors, over every transport
//! (gRPC with TLS too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The binary under test.
const BENCH: &str = env!("CARGO_BIN_EXE_oxmcp-bench");

/// A fake MCP endpoint at `/{fault}/mcp`: a valid handshake, then tool calls answered with the
/// given fault: `text` (a stale text), `id` (another request's id), `busy` (every third call
/// refused with 429), `sse` (right answers as SSE, after a priming event and a notification),
/// `chunked` (right answers in a chunked body), anything else right answers as JSON.
async fn fake(
    Path(fault): Path<String>,
    State(calls): State<Arc<AtomicU64>>,
    body: Bytes,
) -> Response {
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let json_answer = |v: Value| ([("content-type", "application/json")], v.to_string());
    if msg["method"] == "initialize" {
        let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"}});
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        return ([("mcp-session-id", "fake-session")], json_answer(answer)).into_response();
    }
    let n = calls.fetch_add(1, Ordering::Relaxed);
    let message = msg["params"]["arguments"]["message"].as_str().unwrap_or("");
    let right = |id: Value, text: &str| {
        json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": text}]}})
    };
    match fault.as_str() {
        "text" => json_answer(right(id, "stale")).into_response(),
        "id" => json_answer(right(json!(id.as_u64().unwrap_or(0) + 1000), message)).into_response(),
        "busy" if n % 3 == 2 => {
            let error = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32000, "message": "Too many open streams on this session"}});
            (StatusCode::TOO_MANY_REQUESTS, json_answer(error)).into_response()
        }
        "sse" => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            let body = format!(
                "id: 1\ndata:\n\nevent: message\ndata: {note}\n\ndata: {}\n\n",
                right(id, message)
            );
            ([("content-type", "text/event-stream")], body).into_response()
        }
        "chunked" => {
            // A chunked body, in two chunks.
            let text = right(id, message).to_string();
            let (a, b) = text.split_at(text.len() / 2);
            let chunks =
                [a.to_owned(), b.to_owned()].map(|c| Ok::<_, std::io::Error>(Bytes::from(c)));
            let body = axum::body::Body::from_stream(futures::stream::iter(chunks));
            ([("content-type", "application/json")], body).into_response()
        }
        _ => json_answer(right(id, message)).into_response(),
    }
}

/// The same fake over WebSocket at `/{fault}/ws`: `text` and `id` as above, `chatty` (a
/// notification and a ping before each right answer), anything else right answers.
async fn fake_ws(Path(fault): Path<String>, ws: axum::extract::ws::WebSocketUpgrade) -> Response {
    use axum::extract::ws::Message;
    ws.protocols(["mcp"])
        .on_upgrade(move |mut socket| async move {
            while let Some(Ok(frame)) = socket.recv().await {
                let Message::Text(text) = frame else { continue };
                let msg: Value = serde_json::from_str(&text).unwrap();
                let Some(id) = msg.get("id").cloned() else {
                    continue;
                };
                let message = msg["params"]["arguments"]["message"].as_str().unwrap_or("");
                let right = |id: Value, text: &str| {
                    json!({"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": text}]}})
                };
                let answer = match fault.as_str() {
                    _ if msg["method"] == "initialize" => json!({"jsonrpc": "2.0", "id": id,
                    "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake", "version": "1"}}}),
                    "text" => right(id, "stale"),
                    "id" => right(json!(id.as_u64().unwrap_or(0) + 1000), message),
                    "chatty" => {
                        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "working"}});
                        let _ = socket.send(Message::Text(note.to_string().into())).await;
                        let _ = socket.send(Message::Ping(Bytes::from_static(b"p"))).await;
                        right(id, message)
                    }
                    _ => right(id, message),
                };
                if socket
                    .send(Message::Text(answer.to_string().into()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        })
}

/// Starts the fake server; returns its base URL (`http://127.0.0.1:PORT`).
async fn start_fake() -> String {
    let app = axum::Router::new()
        .route(
            "/{fault}/mcp",
            axum::routing::post(fake).delete(|| async { StatusCode::OK }),
        )
        .route("/{fault}/ws", axum::routing::get(fake_ws))
        .with_state(Arc::new(AtomicU64::new(0)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// Runs `oxmcp-bench ARGS --json`: success, the report, stderr.
async fn bench(args: &[&str]) -> (bool, Value, String) {
    let out = tokio::process::Command::new(BENCH)
        .args(args)
        .arg("--json")
        .env("MCP_LOG", "off")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stdout} {stderr}"));
    (out.status.success(), report, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_answers_are_errors_and_no_throughput() {
    // (fault, failed calls of 40, the kind they are counted as)
    for (fault, failed, kind) in [
        ("text", 40, "wrong answer"),
        ("id", 40, "wrong answer"),
        ("busy", 13, "http 429"),
    ] {
        let url = format!("{}/{fault}/mcp", start_fake().await);
        let (ok, v, err) = bench(&[&url, "--clients", "2", "--requests", "40"]).await;
        assert!(!ok, "{fault}: exit 0 with wrong answers: {v}");
        assert_eq!(v["errors"], failed, "{fault}: {v}");
        let calls = &v["phases"]["calls"];
        assert_eq!(calls["error_kinds"][kind], failed, "{fault}: {v}");
        assert_eq!(calls["calls"], 40, "{fault}: {v}");
        assert!(
            calls.get("calls_per_sec").is_none(),
            "{fault}: a rate with errors: {v}"
        );
        assert!(calls.get("latency").is_none(), "{fault}: {v}");
        assert!(err.contains(&format!("{failed} of 40")), "{fault}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn right_answers_as_json_or_sse_pass() {
    let base = start_fake().await;
    for fault in ["none", "sse", "chunked"] {
        let url = format!("{base}/{fault}/mcp");
        let (ok, v, err) = bench(&[&url, "--clients", "3", "--requests", "60"]).await;
        assert!(ok, "{fault}: {err} {v}");
        assert_eq!(v["errors"], 0, "{v}");
        assert!(v["phases"]["calls"]["calls_per_sec"].as_f64().unwrap() > 0.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shape_against_mcp_serve_has_no_errors() {
    for mode in ["json", "sse"] {
        let (_server, url) =
            oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--response-mode", mode]).await;
        let shapes: [&[&str]; 4] = [
            &["--clients", "4", "--requests", "300"],
            &["--clients", "4", "--requests", "300", "--session", "shared"],
            &["--clients", "4", "--requests", "300", "--era", "modern"],
            &["--clients", "2", "--requests", "100", "--driver", "client"],
        ];
        for shape in shapes {
            let mut args = vec![url.as_str()];
            args.extend_from_slice(shape);
            let (ok, v, err) = bench(&args).await;
            assert!(ok, "{mode} {shape:?}: {err} {v}");
            assert_eq!(v["errors"], 0, "{mode} {shape:?}: {v}");
            let phase = v["phases"]
                .as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .clone();
            assert!(phase["calls"].as_u64().unwrap() >= 100, "{v}");
            assert!(phase["calls_per_sec"].as_f64().unwrap() > 0.0, "{v}");
        }
        let (ok, v, err) = bench(&[&url, "--burst", "50"]).await;
        assert!(ok, "{mode} burst: {err} {v}");
        assert_eq!(v["phases"]["burst"]["sessions"], 50, "{v}");
        assert_eq!(v["errors"], 0, "{v}");
    }
}

/// The raw driver over WebSocket (its own frames) checks every answer as over HTTP: wrong
/// texts and ids are errors, notifications and pings before an answer are passed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_websocket_driver_checks_every_answer() {
    let base = start_fake().await.replacen("http://", "ws://", 1);
    for (fault, failed) in [("text", 40), ("id", 40), ("none", 0), ("chatty", 0)] {
        let url = format!("{base}/{fault}/ws");
        let args = [
            &url,
            "--driver",
            "raw",
            "--clients",
            "2",
            "--requests",
            "40",
        ];
        let (ok, v, err) = bench(&args).await;
        assert_eq!(ok, failed == 0, "{fault}: {err} {v}");
        assert_eq!(v["errors"], failed, "{fault}: {v}");
        assert!(v["driver"].as_str().unwrap().contains("WebSocket"), "{v}");
        let calls = &v["phases"]["calls"];
        assert_eq!(calls["calls"], 40, "{fault}: {v}");
        if failed > 0 {
            assert_eq!(calls["error_kinds"]["wrong answer"], failed, "{fault}: {v}");
        }
        // Each client's first call is on the connection of the setup; after a wrong answer,
        // the next call is on a new one.
        let reopened = if failed > 0 { 38 } else { 0 };
        assert_eq!(v["connections_reopened"], reopened, "{fault}: {v}");
    }
}

/// The raw WebSocket driver against `oxmcp serve`: a session per connection and
/// 2026-07-28 requests, no errors; a shared session is refused (a socket is its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_websocket_driver_against_mcp_serve() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let ws = url.replacen("http://", "ws://", 1).replace("/mcp", "/ws");
    for era in ["legacy", "modern"] {
        let args = [
            &ws,
            "--driver",
            "raw",
            "--clients",
            "4",
            "--requests",
            "400",
            "--era",
            era,
        ];
        let (ok, v, err) = bench(&args).await;
        assert!(ok, "{era}: {err} {v}");
        assert_eq!(v["errors"], 0, "{era}: {v}");
        assert_eq!(v["phases"]["calls"]["calls"], 400, "{era}: {v}");
        assert_eq!(v["connections_reopened"], 0, "{era}: {v}");
    }
    let out = tokio::process::Command::new(BENCH)
        .args([
            &ws,
            "--driver",
            "raw",
            "--session",
            "shared",
            "--requests",
            "5",
        ])
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("its own session"),
        "{err}"
    );
}

/// A fake gRPC `Connect` with one fault for every call of the server: `text` and `id` as
/// above, `chatty` (a notification of 100 KB before each right answer: messages split over
/// many DATA frames, and far more than HTTP/2's first 64 KiB window on each connection),
/// `protobuf` (right answers in the protobuf form, which the raw driver does not take),
/// `refuse` (every `Connect` refused at once with `RESOURCE_EXHAUSTED`), `end` (the stream
/// ended with `UNAVAILABLE` at the first call); anything else right answers.
/// Returns its `grpc://` URL.
async fn start_fake_grpc(fault: &'static str) -> String {
    use oxmcp_proto::{Envelope, envelope::Body};
    type Answers = tokio_stream::wrappers::ReceiverStream<Result<Envelope, tonic::Status>>;
    let stream = move |call: tonic::Request<tonic::Streaming<Envelope>>| async move {
        if fault == "refuse" {
            return Err(tonic::Status::resource_exhausted("too many sessions"));
        }
        let mut inbound = call.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            while let Ok(Some(envelope)) = inbound.message().await {
                let Some(Body::Json(bytes)) = envelope.body else {
                    continue;
                };
                let msg: Value = serde_json::from_slice(&bytes).unwrap();
                let Some(id) = msg.get("id").cloned() else {
                    continue;
                };
                let message = msg["params"]["arguments"]["message"].as_str().unwrap_or("");
                let right = |id: Value, text: &str| {
                    json!({"jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": text}]}})
                };
                let answer = match fault {
                    _ if msg["method"] == "initialize" => json!({"jsonrpc": "2.0", "id": id,
                        "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "fake", "version": "1"}}}),
                    "text" => right(id, "stale"),
                    "id" => right(json!(id.as_u64().unwrap_or(0) + 1000), message),
                    "end" => {
                        let gone = tonic::Status::unavailable("going away");
                        let _ = tx.send(Err(gone)).await;
                        break;
                    }
                    "chatty" => {
                        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": "w".repeat(100_000)}});
                        let body = Some(Body::Json(note.to_string().into_bytes()));
                        let _ = tx.send(Ok(Envelope { body })).await;
                        right(id, message)
                    }
                    _ => right(id, message),
                };
                let body = match fault {
                    "protobuf" if msg["method"] != "initialize" => {
                        Body::Message(oxmcp_proto::to_proto(&answer).unwrap())
                    }
                    _ => Body::Json(answer.to_string().into_bytes()),
                };
                if tx.send(Ok(Envelope { body: Some(body) })).await.is_err() {
                    break;
                }
            }
        });
        Ok::<_, tonic::Status>(tonic::Response::new(Answers::new(rx)))
    };
    let connect = move |request: axum::extract::Request| async move {
        let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
        tonic::server::Grpc::new(codec)
            .streaming(tower::service_fn(stream), request)
            .await
            .map(axum::body::Body::new)
    };
    let app = axum::Router::new().route("/mcp.v1.Mcp/Connect", axum::routing::post(connect));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("grpc://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { oxmcp_http::serve_router(listener, app).await });
    url
}

/// The raw driver over gRPC (HTTP/2 and envelopes of its own) checks every answer as over
/// HTTP: wrong texts and ids are errors, and so is an answer in a form it did not ask for;
/// notifications before an answer are passed over, however large. A stream the server ends
/// is counted by its gRPC code, and the connection reopened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_grpc_driver_checks_every_answer() {
    for (fault, failed, kind) in [
        ("text", 40, "wrong answer"),
        ("id", 40, "wrong answer"),
        ("protobuf", 40, "wrong answer"),
        ("end", 40, "grpc 14"),
        ("none", 0, ""),
        ("chatty", 0, ""),
    ] {
        let url = start_fake_grpc(fault).await;
        let args = [
            &url,
            "--driver",
            "raw",
            "--clients",
            "2",
            "--requests",
            "40",
        ];
        let (ok, v, err) = bench(&args).await;
        assert_eq!(ok, failed == 0, "{fault}: {err} {v}");
        assert_eq!(v["errors"], failed, "{fault}: {v}");
        assert!(v["driver"].as_str().unwrap().contains("gRPC"), "{v}");
        let calls = &v["phases"]["calls"];
        assert_eq!(calls["calls"], 40, "{fault}: {v}");
        if failed > 0 {
            assert_eq!(calls["error_kinds"][kind], failed, "{fault}: {v}");
        }
        // Each client's first call is on the connection of the setup; after a failure, the
        // next call is on a new one.
        let reopened = if failed > 0 { 38 } else { 0 };
        assert_eq!(v["connections_reopened"], reopened, "{fault}: {v}");
    }
    // A refused `Connect` is a failed setup, in either era, with its code and message.
    let url = start_fake_grpc("refuse").await;
    for era in ["legacy", "modern"] {
        let args = [&url, "--driver", "raw", "--requests", "5", "--era", era];
        let (ok, v, err) = bench(&args).await;
        assert!(!ok, "{era}: {v}");
        let setup = &v["phases"]["setup"];
        assert_eq!(setup["errors"], 1, "{era}: {v}");
        assert_eq!(setup["error_kinds"]["grpc 8"], 1, "{era}: {v}");
        let example = setup["error_examples"]["grpc 8"]
            .as_str()
            .unwrap_or_default();
        assert!(example.contains("too many sessions"), "{era}: {err} {v}");
    }
}

/// The raw gRPC driver against `oxmcp serve` (gRPC on its HTTP port): a session per
/// connection and 2026-07-28 requests, no errors; a shared session is refused, and so is TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_grpc_driver_against_mcp_serve() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let grpc = url.replacen("http://", "grpc://", 1).replace("/mcp", "");
    for era in ["legacy", "modern"] {
        let args = [
            &grpc,
            "--driver",
            "raw",
            "--clients",
            "4",
            "--requests",
            "400",
            "--era",
            era,
        ];
        let (ok, v, err) = bench(&args).await;
        assert!(ok, "{era}: {err} {v}");
        assert_eq!(v["errors"], 0, "{era}: {v}");
        assert_eq!(v["phases"]["calls"]["calls"], 400, "{era}: {v}");
        assert_eq!(v["connections_reopened"], 0, "{era}: {v}");
    }
    for (args, says) in [
        (&["--session", "shared"][..], "its own session"),
        (&[][..], "TLS needs the client"),
    ] {
        let target = if args.is_empty() {
            grpc.replacen("grpc://", "grpcs://", 1)
        } else {
            grpc.clone()
        };
        let out = tokio::process::Command::new(BENCH)
            .arg(&target)
            .args(["--driver", "raw", "--requests", "5"])
            .args(args)
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{err}");
    }
}

/// `--read`, `--wire` and `--encoding` over every transport: no errors, and the bytes on the
/// wire show what protobuf saves on binary contents (no base64).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_bytes_on_the_wire_and_encodings_on_every_transport() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let ws = url.replacen("http://", "ws://", 1).replace("/mcp", "/ws");
    let grpc = url.replacen("http://", "grpc://", 1).replace("/mcp", "");
    let size = 65_536.0;
    for (target, encodings) in [
        (&url, &["json", "protobuf"][..]),
        (&grpc, &["json", "protobuf"][..]),
        (&ws, &["json"][..]),
    ] {
        let mut received = Vec::new();
        for encoding in encodings {
            let args = [
                target.as_str(),
                "--driver",
                "client",
                "--mode",
                "sequential",
                "--requests",
                "20",
                "--read",
                "demo://payload/65536",
                "--wire",
                "--encoding",
                encoding,
            ];
            let (ok, v, err) = bench(&args).await;
            assert!(ok, "{target} {encoding}: {err} {v}");
            assert_eq!(v["errors"], 0, "{v}");
            assert_eq!(v["phases"]["sequential"]["calls"], 20, "{v}");
            let per_call = v["wire"]["received_per_call"].as_f64().unwrap();
            assert!(per_call > size, "{target} {encoding}: {v}");
            received.push(per_call);
        }
        if let [json, protobuf] = received[..] {
            // base64 is 4/3 of the bytes; protobuf carries the bytes themselves.
            assert!(json > size * 4.0 / 3.0, "{target}: {json}");
            assert!(protobuf < size * 1.05, "{target}: {protobuf}");
        }
    }
    let out = tokio::process::Command::new(BENCH)
        .args([&url, "--read", "demo://readme", "--requests", "5"])
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--driver client"),
        "{err}"
    );
}

/// Over gRPC with TLS (`grpcs://`, a private CA in `SSL_CERT_FILE`): every answer right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_over_tls_has_no_errors() {
    let (_dir, cert, key, ca) = oxmcp_tests::tls::certificates();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tls_listen = format!("127.0.0.1:{port}");
    let (_server, _url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--grpc-listen",
        &tls_listen,
        "--grpc-tls-cert",
        cert.to_str().unwrap(),
        "--grpc-tls-key",
        key.to_str().unwrap(),
    ])
    .await;
    let tls = format!("grpcs://{tls_listen}");
    let run = tokio::process::Command::new(BENCH)
        .args([&tls, "--requests", "200", "--clients", "4"])
        .env("SSL_CERT_FILE", &ca)
        .env("MCP_LOG", "off")
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), run)
        .await
        .expect("the bench ends")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("0 errors"), "{stdout}");
}

//! Per-resource scopes (`[auth] resources`) of a gateway, over real processes and sockets:
//! every spelling of a protected URI (percent-encoded unreserved characters, case of scheme
//! and host, dot segments) needs the rule's scopes on every transport (Streamable HTTP in
//! both eras, WebSocket, gRPC), and legitimate reads still work.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../crates/oxmcp-auth/tests/common/mod.rs"]
mod oauth;

use futures::StreamExt as _;
use serde_json::json;

use oxmcp_tests::oxmcp;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The spellings of the protected `gateway://demo/demo://greeting/admin` a client might try.
const PROTECTED: [&str; 7] = [
    "gateway://demo/demo://greeting/admin",
    "gateway://demo/demo://greeting/%61dmin",
    "gateway://demo/demo://greeting/%61%64min",
    "gateway://demo/demo://greeting/adm%69n",
    "gateway://demo/DEMO://greeting/admin",
    "GATEWAY://DEMO/demo://greeting/admin",
    "gateway://demo/demo://greeting/x/../admin",
];

/// A gateway in front of the demo server (stdio) whose `[auth]` takes JWTs of `issuer` and
/// protects `gateway://demo/demo://greeting/admin` with the scope `admin`; its HTTP URL.
async fn gateway(dir: &std::path::Path, issuer: &str) -> (tokio::process::Child, String) {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = dir.join("gw.toml");
    let bin = oxmcp();
    std::fs::write(
        &config,
        format!(
            "[auth]\nissuer = \"{issuer}\"\naudience = \"{url}\"\nscopes = [\"mcp\"]\n\
             resources = {{ \"gateway://demo/demo://greeting/admin\" = [\"admin\"] }}\n\n\
             [[upstream]]\nname = \"demo\"\ncommand = [\"{bin}\", \"serve\", \"--stdio\"]\n"
        ),
    )
    .unwrap();
    let (child, served) = oxmcp_tests::serve_http(&[
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--config",
        config.to_str().unwrap(),
    ])
    .await;
    assert_eq!(served, url);
    (child, url)
}

/// `oxmcp read TARGET URI --bearer TOKEN [extra]`: success and stdout + stderr.
async fn read(target: &str, uri: &str, token: &str, extra: &[&str]) -> (bool, String) {
    let mut args = vec!["read", target, uri, "--bearer", token];
    args.extend_from_slice(extra);
    let (ok, out, err) = oxmcp_tests::mcp(&args).await;
    (ok, format!("{out}{err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_a_protected_resource_needs_its_scope_on_every_transport() {
    let (issuer, _as) = oauth::start_as().await;
    let dir = tempfile::tempdir().unwrap();
    let (_gw, url) = gateway(dir.path(), &issuer).await;
    let user = oauth::token_for(&issuer, &url, "user", "mcp", json!({}));
    let admin = oauth::token_for(&issuer, &url, "root", "mcp admin", json!({}));
    let base = url.trim_end_matches("/mcp");
    let targets: [(&str, String, &[&str]); 4] = [
        ("HTTP 2025-11-25", url.clone(), &["--era", "legacy"]),
        ("HTTP 2026-07-28", url.clone(), &["--era", "modern"]),
        (
            "WebSocket",
            format!("{}/ws", base.replacen("http://", "ws://", 1)),
            &[],
        ),
        (
            "gRPC",
            base.replacen("http://", "grpc://", 1),
            &["--era", "legacy"],
        ),
    ];
    let mut wrong = Vec::new();
    for (transport, target, extra) in &targets {
        // Legitimate reads work: another name for anyone, the protected one with its scope.
        let (ok, out) = read(target, "gateway://demo/demo://greeting/bob", &user, extra).await;
        assert!(ok && out.contains("Hello, bob!"), "{transport}: {out}");
        let (ok, out) = read(target, PROTECTED[0], &admin, extra).await;
        assert!(ok && out.contains("Hello, admin!"), "{transport}: {out}");
        for uri in PROTECTED {
            let (ok, out) = read(target, uri, &user, extra).await;
            let forbidden =
                out.contains("403 Forbidden") || out.contains("Forbidden: this request needs");
            if ok || !forbidden {
                wrong.push(format!("{transport}: {uri}: {}", out.trim()));
            }
        }
    }
    wrong.extend(legacy_sse(base, &user).await);
    assert!(
        wrong.is_empty(),
        "read without the admin scope, or refused for another reason:\n{}",
        wrong.join("\n")
    );
}

/// The legacy HTTP+SSE transport (`GET /sse`, `POST /message`) with `token`: what went wrong.
/// A POST the policy lets through is accepted (202); a refused one gets 403.
async fn legacy_sse(base: &str, token: &str) -> Vec<String> {
    let http = reqwest::Client::new();
    let stream = http
        .get(format!("{base}/sse"))
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.bytes_stream();
    let mut seen = String::new();
    let endpoint = loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), body.next())
            .await
            .expect("the endpoint event")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(path) = seen.lines().find_map(|l| l.strip_prefix("data: /message")) {
            break format!("{base}/message{path}");
        }
    };
    let post = |uri: &str| {
        let read =
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}});
        http.post(&endpoint)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(read.to_string())
            .send()
    };
    let mut wrong = Vec::new();
    let status = post("gateway://demo/demo://greeting/bob")
        .await
        .unwrap()
        .status();
    if status != 202 {
        wrong.push(format!("legacy SSE: a legitimate read got {status}"));
    }
    for uri in PROTECTED {
        let status = post(uri).await.unwrap().status();
        if status != 403 {
            wrong.push(format!("legacy SSE: {uri}: {status}"));
        }
    }
    wrong
}

//! The Redis deployments the store supports, each with real `oxmcp serve` instances: a
//! Cluster, an ACL user (and no token at rest), TLS with a private CA, and a store that
//! cannot be reached at start.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_tests::scale::{
    Cluster, Instance, Redis, SseReader, call, open_session, post, result_text, tool,
};
use serde_json::json;
use std::time::Duration;

const V: &str = "2025-11-25";

/// The same on a Redis Cluster: a session's keys share one slot (`{sid}`), so its pipelines
/// work; calls, sampling and resumption cross instances; DELETE leaves nothing on any node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_redis_cluster() {
    let cluster = Cluster::start().await;
    let url = cluster.url();
    let a = Instance::start_url(&url, "a", &[]).await;
    let b = Instance::start_url(&url, "b", &[]).await;
    let sid = open_session(&a.url, V).await;
    let (status, m) = call(&b.url, &sid, V, &tool(1, "echo", json!({"message": "c"}))).await;
    assert_eq!(status, 200);
    assert_eq!(result_text(&m[0]), "c");
    let r = post(&b.url, &sid, V, &tool(2, "sample", json!({"prompt": "p"})))
        .send()
        .await
        .unwrap();
    let mut sse = SseReader::new(r);
    let ask = sse.next_message(10).await.unwrap();
    let ask_id = ask.id.clone().unwrap();
    let ask = ask.data.unwrap();
    drop(sse);
    let answer = oxmcp_tests::scale::sampled(&ask, "clustered");
    assert_eq!(call(&a.url, &sid, V, &answer).await.0, 202);
    // The client left b's stream; it resumes on a and gets the result.
    let resumed = oxmcp_tests::scale::resume(&a.url, &sid, V, &ask_id)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut sse = SseReader::new(resumed);
    let done = sse.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(done["id"], 2);
    assert!(result_text(&done).contains("clustered"), "{done}");
    assert!(!cluster.keys(&format!("mcp:{{{sid}}}:*")).is_empty());
    assert_eq!(oxmcp_tests::scale::delete(&b.url, &sid, V).await, 200);
    assert_eq!(
        oxmcp_tests::scale::ended_within(&a.url, &sid, V, Duration::from_secs(5)).await,
        Some(404)
    );
    assert!(
        cluster.keys(&format!("mcp:{{{sid}}}:*")).is_empty(),
        "nothing left on any node"
    );
}

/// An ACL user in the URL works (the user may only touch `mcp:*` keys); the bearer token a
/// client sends is never stored in Redis; a store that cannot be reached at start is one
/// line on stderr and a non-zero exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_users_no_tokens_at_rest_and_unreachable_store() {
    let port = oxmcp_tests::scale::free_port();
    let redis = Redis::start_with(
        port,
        &["--user", "mcp", "on", ">s3cret-pw", "~mcp:*", "&*", "+@all"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-7f3a9c2e5b1d4e8f9a0b";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token).unwrap();
    let url = format!("redis://mcp:s3cret-pw@127.0.0.1:{port}");
    let tf = token_file.to_str().unwrap();
    let a = Instance::start_url(&url, "a", &["--auth-token-file", tf]).await;
    let b = Instance::start_url(&url, "b", &["--auth-token-file", tf]).await;
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = reqwest::Client::new()
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", &bearer)
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let r = post(&b.url, &sid, V, &tool(1, "echo", json!({"message":"m"})))
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        200,
        "the session works on b, through the ACL user"
    );
    // Without the token: 401, on either instance.
    assert_eq!(
        call(&b.url, &sid, V, &tool(2, "echo", json!({"message":"m"})))
            .await
            .0,
        401
    );
    // Everything in Redis, read back: no token anywhere.
    let keys = redis.keys("*");
    assert!(!keys.is_empty());
    for k in &keys {
        let dump = match redis.cli(&["TYPE", k]).as_str() {
            "hash" => redis.cli(&["HGETALL", k]),
            "set" => redis.cli(&["SMEMBERS", k]),
            "stream" => redis.cli(&["XRANGE", k, "-", "+"]),
            _ => redis.cli(&["GET", k]),
        };
        assert!(!dump.contains(token), "{k} holds the access token: {dump}");
        assert!(k.starts_with("mcp:"), "{k}");
    }
    // A wrong password, and a port where nothing listens: one line, non-zero exit.
    for bad in [
        format!("redis://mcp:wrong@127.0.0.1:{port}"),
        format!("redis://127.0.0.1:{}", oxmcp_tests::scale::free_port()),
    ] {
        let out = tokio::process::Command::new(oxmcp_tests::oxmcp())
            .args(["serve", "--listen", "127.0.0.1:0", "--store", &bad])
            .env("MCP_LOG", "off")
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains("cannot reach Redis"), "{err}");
        assert!(!err.contains("wrong"), "no password shown: {err}");
    }
}

/// `rediss://` with a private CA (`--store-ca`): sessions cross instances over TLS; without
/// the CA the certificate is refused at start, in one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_redis_with_a_private_ca() {
    let (_dir, cert, key, ca) = oxmcp_tests::tls::certificates();
    let tls_port = oxmcp_tests::scale::free_port();
    let path = |p: std::path::PathBuf| p.to_str().unwrap().to_owned();
    let (cert, key, ca) = (path(cert), path(key), path(ca));
    let tls = tls_port.to_string();
    let _redis = Redis::start_with(
        oxmcp_tests::scale::free_port(),
        &[
            "--tls-port",
            &tls,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            "no",
        ],
    )
    .await;
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let a = Instance::start_url(&url, "a", &["--store-ca", &ca]).await;
    let b = Instance::start_url(&url, "b", &["--store-ca", &ca]).await;
    let sid = open_session(&a.url, V).await;
    let (status, m) = call(&b.url, &sid, V, &tool(1, "echo", json!({"message": "tls"}))).await;
    assert_eq!(status, 200);
    assert_eq!(result_text(&m[0]), "tls");
    let out = tokio::process::Command::new(oxmcp_tests::oxmcp())
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &url])
        .env("MCP_LOG", "off")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate"), "{err}");
}

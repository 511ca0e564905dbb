//! Handlers' state end to end, with the demo server's `cd`/`pwd`/`ls` (a session's working
//! directory) and `note`/`notes` (a user's notebook): in memory over stdio and HTTP, and in a
//! real Redis or PostgreSQL shared by several `oxmcp serve --store` instances.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_tests::postgres::Postgres;
use oxmcp_tests::scale::{
    Instance, Proxy, Redis, Shared, call, delete, open_session, post_with, result_text, tool,
};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

/// A tool call on session `sid` at `url`: its result text and whether it is an error.
async fn run(url: &str, sid: &str, id: i64, name: &str, args: Value) -> (String, bool) {
    let (status, m) = call(url, sid, V, &tool(id, name, args)).await;
    assert_eq!(status, 200, "{m:?}");
    let answer = m.iter().find(|m| m["id"] == id).expect("the answer");
    (
        result_text(answer),
        answer["result"]["isError"] == json!(true),
    )
}

/// Two sessions of one server keep a working directory each, and `ls` reads it; a stdio
/// connection is a session too.
#[tokio::test]
async fn each_session_keeps_its_own_working_directory() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let (a, b) = (open_session(&url, V).await, open_session(&url, V).await);
    assert_eq!(
        run(&url, &a, 1, "cd", json!({"path":"src"})).await.0,
        "/src"
    );
    assert_eq!(
        run(&url, &a, 2, "cd", json!({"path":"bin"})).await.0,
        "/src/bin"
    );
    assert_eq!(run(&url, &a, 3, "pwd", json!({})).await.0, "/src/bin");
    assert_eq!(run(&url, &a, 4, "ls", json!({})).await.0, "tool.rs");
    assert_eq!(run(&url, &b, 5, "pwd", json!({})).await.0, "/");
    assert_eq!(
        run(&url, &b, 6, "ls", json!({})).await.0,
        "docs/\nsrc/\nnotes.txt"
    );
    let (text, error) = run(&url, &a, 7, "cd", json!({"path":"../nowhere"})).await;
    assert!(error, "{text}");
    assert_eq!(text, "no such directory: /src/nowhere");
    assert_eq!(run(&url, &a, 8, "pwd", json!({})).await.0, "/src/bin");
    // Without a verified caller there is no notebook: a clear tool error.
    let (text, error) = run(&url, &a, 9, "note", json!({"text":"x"})).await;
    assert!(error);
    assert!(text.contains("no authenticated caller"), "{text}");

    let mut stdio = oxmcp_tests::Raw::spawn();
    stdio.initialize(V).await;
    let call = |id: i64, name: &str, args: Value| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}});
    let (r, _) = stdio
        .send_then(call(1, "cd", json!({"path":"/docs"})), 1)
        .await;
    assert_eq!(result_text(&r), "/docs");
    let (r, _) = stdio.send_then(call(2, "ls", json!({"path":"."})), 2).await;
    assert_eq!(result_text(&r), "guide.md\nreadme.md");
    stdio.close().await;
}

/// A 2026-07-28 request over HTTP has no session: `cd` says so instead of keeping nothing.
#[tokio::test]
async fn a_sessionless_request_has_no_session_state() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let mut params = json!({"name":"cd","arguments":{"path":"docs"}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params});
    let r = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "cd")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let m: Value = r.json().await.unwrap();
    assert_eq!(m["result"]["isError"], true, "{m}");
    assert!(result_text(&m).contains("no session"), "{m}");
}

/// Three instances sharing Redis behind a round-robin proxy: a working directory set through
/// one is seen by the others, and a DELETE leaves none of it in Redis.
async fn session_state_is_shared_on(store: &impl Shared) {
    let mut all = Vec::new();
    for name in ["a", "b", "c"] {
        all.push(Instance::start(store, name, &[]).await);
    }
    let proxy = Proxy::start(&all.iter().collect::<Vec<_>>()).await;
    let sid = open_session(&proxy.url, V).await;
    assert_eq!(
        run(&proxy.url, &sid, 1, "cd", json!({"path":"docs"}))
            .await
            .0,
        "/docs"
    );
    for (i, inst) in all.iter().enumerate() {
        let id = 10 + i as i64;
        assert_eq!(
            run(&inst.url, &sid, id, "pwd", json!({})).await.0,
            "/docs",
            "{} sees the working directory",
            inst.name
        );
    }
    assert!(store.holds_session(&sid));
    assert_eq!(delete(&all[2].url, &sid, V).await, 200);
    assert!(
        !store.holds_session(&sid),
        "nothing of the session is left, its state included"
    );
    // Another session starts at the root.
    let other = open_session(&proxy.url, V).await;
    assert_eq!(run(&proxy.url, &other, 20, "pwd", json!({})).await.0, "/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_is_shared_by_instances_and_deleted_with_the_session() {
    let redis = Redis::start().await;
    session_state_is_shared_on(&redis).await;
    assert!(redis.keys("mcp:{*}:state").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_is_shared_by_instances_and_deleted_with_the_session_postgres() {
    let pg = Postgres::start().await;
    session_state_is_shared_on(&pg).await;
    assert_eq!(pg.count("state_scopes"), 0);
}

/// A user's notebook: 64 notes written at once through two instances (each an atomic update
/// of one key) are all kept; another user sees none of them; and a 2026-07-28 request of the
/// same user, which has no session, reads the same notebook.
async fn a_users_state_loses_no_concurrent_write_on(store: &impl Shared) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "tok-alice-1f2e3d4c alice\ntok-bob-5a6b7c8d bob\n").unwrap();
    let tf = tokens.to_str().unwrap();
    let a = Instance::start(store, "a", &["--auth-token-file", tf]).await;
    let b = Instance::start(store, "b", &["--auth-token-file", tf]).await;
    let http = reqwest::Client::new();
    let session = |token: &'static str| {
        let http = http.clone();
        let url = a.url.clone();
        async move {
            let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
            let r = http
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("authorization", format!("Bearer {token}"))
                .body(init.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.headers()["mcp-session-id"].to_str().unwrap().to_owned()
        }
    };
    let (alice, bob) = (
        session("tok-alice-1f2e3d4c").await,
        session("tok-bob-5a6b7c8d").await,
    );
    let calls = (0..64).map(|i| {
        let url = if i % 2 == 0 { &a.url } else { &b.url };
        let body = tool(100 + i, "note", json!({"text": format!("note {i}")}));
        let req = post_with(&http, url, &alice, V, &body)
            .header("authorization", "Bearer tok-alice-1f2e3d4c");
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 200);
            let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
            let m = oxmcp_tests::http_messages(&ct, &r.text().await.unwrap());
            assert_ne!(m[0]["result"]["isError"], true, "{m:?}");
        }
    });
    futures::future::join_all(calls).await;
    let read = |url: &str, sid: &str, token: &str, id: i64| {
        post_with(&http, url, sid, V, &tool(id, "notes", json!({})))
            .header("authorization", format!("Bearer {token}"))
            .send()
    };
    let r = read(&b.url, &alice, "tok-alice-1f2e3d4c", 1).await.unwrap();
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    let m = oxmcp_tests::http_messages(&ct, &r.text().await.unwrap());
    let mut notes: Vec<String> = result_text(&m[0]).lines().map(str::to_owned).collect();
    notes.sort();
    let mut expected: Vec<String> = (0..64).map(|i| format!("note {i}")).collect();
    expected.sort();
    assert_eq!(notes, expected, "every concurrent note is kept");
    let r = read(&a.url, &bob, "tok-bob-5a6b7c8d", 2).await.unwrap();
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    let m = oxmcp_tests::http_messages(&ct, &r.text().await.unwrap());
    assert_eq!(result_text(&m[0]), "", "bob has a notebook of his own");
    // A sessionless request of alice's reads her notebook.
    let mut params = json!({"name":"notes","arguments":{}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":params});
    let r = http
        .post(&b.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "notes")
        .header("authorization", "Bearer tok-alice-1f2e3d4c")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let m: Value = r.json().await.unwrap();
    assert_eq!(result_text(&m).lines().count(), 64, "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_state_loses_no_concurrent_write() {
    a_users_state_loses_no_concurrent_write_on(&Redis::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_state_loses_no_concurrent_write_postgres() {
    a_users_state_loses_no_concurrent_write_on(&Postgres::start().await).await;
}

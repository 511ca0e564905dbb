//! What `oxmcp serve` accepts as a token and whom it takes the caller for, over real processes
//! and sockets with a test authorization server on 127.0.0.1: introspection answers must name
//! this server (`aud`) and its issuer (`iss`), the introspection cache is a setting
//! (`--auth-introspection-cache`, 0 turns it off), a token must name its subject as a string,
//! and every anonymous static token is a principal of its own (sessions, also through Redis,
//! and tasks).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../crates/oxmcp-auth/tests/common/mod.rs"]
mod oauth;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use oxmcp_tests::oxmcp;

/// `oxmcp serve --listen 127.0.0.1:PORT ARGS`; the child and its URL.
async fn serve(args: &[&str]) -> (Child, String) {
    let port = oxmcp_tests::scale::free_port();
    serve_on(port, args).await
}

async fn serve_on(port: u16, args: &[&str]) -> (Child, String) {
    let listen = format!("127.0.0.1:{port}");
    let mut all = vec!["--listen", &listen];
    all.extend_from_slice(args);
    let (child, url) = oxmcp_tests::serve_http(&all).await;
    assert_eq!(url, format!("http://{listen}/mcp"));
    (child, url)
}

/// `oxmcp serve` checking opaque tokens at the test issuer's introspection endpoint; `extra`
/// flags added. The child and its URL (which is also its audience).
async fn introspecting(issuer: &str, dir: &std::path::Path, extra: &[&str]) -> (Child, String) {
    let secret = dir.join("secret");
    std::fs::write(&secret, "rs-secret\n").unwrap();
    let port = oxmcp_tests::scale::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let introspect = format!("{issuer}/introspect");
    let mut args = vec![
        "--auth-issuer",
        issuer,
        "--auth-audience",
        &url,
        "--auth-introspection",
        &introspect,
        "--auth-client-id",
        "rs",
        "--auth-client-secret-file",
        secret.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    serve_on(port, &args).await
}

/// The status of an `initialize` POSTed with `token`.
async fn init_status(url: &str, token: &str) -> u16 {
    oauth::post(url, Some(token), None, oauth::INIT)
        .await
        .status()
        .as_u16()
}

/// Opens a session with `token`; its id.
async fn open_session(url: &str, token: &str) -> String {
    let r = oauth::post(url, Some(token), None, oauth::INIT).await;
    assert_eq!(r.status(), 200);
    r.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

const PING: &str = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;

/// The status of a ping in session `session` with `token`.
async fn ping(url: &str, token: &str, session: &str) -> u16 {
    oauth::post(url, Some(token), Some(session), PING)
        .await
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_answers_must_name_this_server_and_its_issuer() {
    let (issuer, st) = oauth::start_as().await;
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = introspecting(&issuer, dir.path(), &[]).await;
    let exp = oauth::now() + 600;
    let answers = [
        ("good", json!({"aud": url, "iss": issuer}), 200),
        (
            "good-list",
            json!({"aud": ["https://other.example", url], "iss": issuer}),
            200,
        ),
        ("no-aud", json!({"iss": issuer}), 401),
        ("empty-aud", json!({"aud": [], "iss": issuer}), 401),
        (
            "other-aud",
            json!({"aud": "https://other.example/mcp", "iss": issuer}),
            401,
        ),
        ("no-iss", json!({"aud": url}), 401),
        (
            "other-iss",
            json!({"aud": url, "iss": "https://evil.example"}),
            401,
        ),
    ];
    for (token, extra, _) in &answers {
        let mut a = json!({"active": true, "sub": "alice", "scope": "mcp", "exp": exp});
        for (k, v) in extra.as_object().unwrap() {
            a[k] = v.clone();
        }
        st.lock().opaque.insert((*token).to_owned(), a);
    }
    let mut wrong = Vec::new();
    for (token, _, want) in answers {
        let got = init_status(&url, token).await;
        if got != want {
            wrong.push(format!("{token}: {got}, not {want}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:?}");

    // An authorization server that cannot name the audience: the explicit flag accepts an
    // answer without `aud`, never one naming another audience or issuer.
    let (_relaxed, url2) =
        introspecting(&issuer, dir.path(), &["--auth-accept-missing-audience"]).await;
    for (token, want) in [
        ("no-aud", 200),
        ("other-aud", 401),
        ("other-iss", 401),
        ("no-iss", 401),
    ] {
        assert_eq!(init_status(&url2, token).await, want, "{token} (relaxed)");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_introspection_cache_is_a_setting_and_zero_turns_it_off() {
    let (issuer, st) = oauth::start_as().await;
    let dir = tempfile::tempdir().unwrap();
    let answer = |url: &str| {
        json!({"active": true, "sub": "dave", "scope": "mcp", "aud": url, "iss": issuer,
               "exp": oauth::now() + 600})
    };
    let introspections = || oauth::seen(&st, "/introspect").len();

    // Off: a revoked token is refused on its next request.
    let (_off, url) =
        introspecting(&issuer, dir.path(), &["--auth-introspection-cache", "0"]).await;
    st.lock().opaque.insert("tok-off".into(), answer(&url));
    let s = open_session(&url, "tok-off").await;
    assert_eq!(ping(&url, "tok-off", &s).await, 200);
    st.lock().opaque.remove("tok-off");
    assert_eq!(ping(&url, "tok-off", &s).await, 401, "revoked, not cached");

    // 2 s: answers are reused for 2 s, then asked again.
    let (_on, url) =
        introspecting(&issuer, dir.path(), &["--auth-introspection-cache", "2s"]).await;
    st.lock().opaque.insert("tok-2s".into(), answer(&url));
    let s = open_session(&url, "tok-2s").await;
    let before = introspections();
    assert_eq!(ping(&url, "tok-2s", &s).await, 200);
    assert_eq!(introspections(), before, "the cached answer was used");
    st.lock().opaque.remove("tok-2s");
    let revoked = Instant::now();
    loop {
        let status = ping(&url, "tok-2s", &s).await;
        if status == 401 {
            break;
        }
        assert_eq!(status, 200);
        assert!(
            revoked.elapsed() < Duration::from_secs(30),
            "a revoked token still works after the 2 s cache"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_must_name_its_subject_as_a_string() {
    let (issuer, st) = oauth::start_as().await;
    let port = oxmcp_tests::scale::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (_jwt, _) = serve_on(port, &["--auth-issuer", &issuer, "--auth-audience", &url]).await;
    let jwt = |sub: Value| oauth::token_for(&issuer, &url, "x", "mcp", json!({ "sub": sub }));
    assert_eq!(init_status(&url, &jwt(json!("alice"))).await, 200);
    for sub in [
        json!(42),
        json!(["alice"]),
        json!({"id": "alice"}),
        json!(""),
    ] {
        assert_eq!(
            init_status(&url, &jwt(sub.clone())).await,
            401,
            "JWT sub {sub}"
        );
    }
    let no_sub = oauth::token_for(&issuer, &url, "x", "mcp", json!({ "sub": null }));
    assert_eq!(init_status(&url, &no_sub).await, 401, "JWT without sub");

    let dir = tempfile::tempdir().unwrap();
    let (_intro, url) = introspecting(&issuer, dir.path(), &[]).await;
    for (i, sub) in [json!(42), json!(["alice"]), json!(""), Value::Null]
        .into_iter()
        .enumerate()
    {
        let mut a = json!({"active": true, "scope": "mcp", "aud": url, "iss": issuer});
        if !sub.is_null() {
            a["sub"] = sub.clone();
        }
        st.lock().opaque.insert(format!("t{i}"), a);
        assert_eq!(init_status(&url, &format!("t{i}")).await, 401, "sub {sub}");
    }
}

/// `oxmcp call URL slow --task --bearer TOKEN` in the background, and its task's id.
async fn started_task(url: &str, token: &str) -> (Child, String) {
    let args = json!({"steps": 50, "delay_ms": 200}).to_string();
    let mut child = Command::new(oxmcp())
        .args(["call", url, "slow", &args, "--task", "--era", "legacy"])
        .args(["--bearer", token])
        .env("MCP_LOG", "off")
        .env_remove("MCP_BEARER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the call prints its task")
        .unwrap()
        .expect("a line");
    let id = first
        .strip_prefix("task ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("not a task line: {first}"))
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_anonymous_static_token_is_a_principal_of_its_own() {
    let redis = oxmcp_tests::scale::Redis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "# two anonymous tokens\ntok-anon-a\ntok-anon-b\n").unwrap();
    let store = redis.url();
    let args = [
        "--auth-token-file",
        tokens.to_str().unwrap(),
        "--store",
        &store,
    ];
    let (_a, url_a) = serve(&[&args[..], &["--instance-id", "a"]].concat()).await;
    let (_b, url_b) = serve(&[&args[..], &["--instance-id", "b"]].concat()).await;

    // A session of one is not the other's, on this instance or restored on another.
    let s = open_session(&url_a, "tok-anon-a").await;
    assert_eq!(ping(&url_a, "tok-anon-a", &s).await, 200);
    assert_eq!(ping(&url_a, "tok-anon-b", &s).await, 404, "same instance");
    assert_eq!(ping(&url_b, "tok-anon-b", &s).await, 404, "through Redis");
    assert_eq!(
        ping(&url_b, "tok-anon-a", &s).await,
        200,
        "its owner, anywhere"
    );

    // Nor are its tasks.
    let (_call, id) = started_task(&url_a, "tok-anon-a").await;
    let list = |token: &'static str| {
        let url = url_a.clone();
        async move { oxmcp_tests::mcp(&["tasks", "list", &url, "--bearer", token]).await }
    };
    let (ok, out, err) = list("tok-anon-a").await;
    assert!(ok && out.contains(&id), "its owner lists it: {out}{err}");
    let (_, out, _) = list("tok-anon-b").await;
    assert!(
        !out.contains(&id),
        "another anonymous token lists it: {out}"
    );
    let (ok, out, _) =
        oxmcp_tests::mcp(&["tasks", "get", &url_b, &id, "--bearer", "tok-anon-b"]).await;
    assert!(!ok, "another anonymous token reads it: {out}");
}

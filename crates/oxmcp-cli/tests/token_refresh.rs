//! Two `oxmcp` processes refreshing the same stored token at once, against an authorization
//! server that rotates refresh tokens (each one works once): one refreshes, the other waits
//! for it and uses the new token, and the rotated refresh token is not lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Form, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use oxmcp_auth::client::{Grant, RegisteredClient, TokenStore};
use parking_lot::Mutex;
use serde_json::json;
use tokio::process::Command;

/// The access tokens the protected server accepts: the ones the token endpoint issues.
const ISSUED: [&str; 4] = [
    "access-1-rotated-token",
    "access-2-rotated-token",
    "access-3-rotated-token",
    "access-4-rotated-token",
];

#[derive(Default)]
struct Rotating {
    /// Refresh tokens that still work (each once).
    valid: HashSet<String>,
    issued: usize,
    refused: usize,
}

type As = Arc<Mutex<Rotating>>;

/// A token endpoint that rotates refresh tokens and answers slowly, so that two clients
/// refreshing at once overlap.
async fn token(State(st): State<As>, Form(f): Form<Vec<(String, String)>>) -> Response {
    let get = |k: &str| {
        f.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let n = {
        let mut s = st.lock();
        if get("grant_type") != "refresh_token" || !s.valid.remove(&get("refresh_token")) {
            s.refused += 1;
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "invalid_grant"})),
            )
                .into_response();
        }
        s.issued += 1;
        let n = s.issued;
        s.valid.insert(format!("refresh-{n}"));
        n
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Json(json!({
        "access_token": ISSUED[n - 1],
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": format!("refresh-{n}"),
    }))
    .into_response()
}

async fn tools(dir: &std::path::Path, url: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmcp"))
        .args(["tools", url])
        .env("MCP_CONFIG_DIR", dir)
        .env("MCP_LOG", "off")
        .env_remove("MCP_BEARER")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_refreshing_at_once_keep_the_rotated_token() {
    let st = As::default();
    st.lock().valid.insert("refresh-0".into());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let router = axum::Router::new()
        .route("/token", axum::routing::post(token))
        .with_state(st.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });

    let dir = tempfile::tempdir().unwrap();
    let accepted = dir.path().join("accepted.txt");
    let lines: Vec<String> = ISSUED.iter().map(|t| format!("{t} alice")).collect();
    std::fs::write(&accepted, lines.join("\n")).unwrap();
    let (_server, url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--auth-token-file",
        accepted.to_str().unwrap(),
    ])
    .await;
    // What `oxmcp login` left: an expired access token and a refresh token.
    let store = TokenStore::new(dir.path().join("tokens.json"));
    store
        .put_grant(&Grant {
            issuer: issuer.clone(),
            resource: url.clone(),
            access_token: "access-0-expired-token".into(),
            refresh_token: Some("refresh-0".into()),
            expires_at: Some(1),
            token_endpoint: format!("{issuer}/token"),
            client: RegisteredClient {
                client_id: "cli".into(),
                auth_method: "none".into(),
                ..RegisteredClient::default()
            },
            ..Grant::default()
        })
        .unwrap();

    let ((ok_a, out_a), (ok_b, out_b)) =
        tokio::join!(tools(dir.path(), &url), tools(dir.path(), &url));
    assert!(ok_a, "first: {out_a}");
    assert!(ok_b, "second: {out_b}");
    {
        let s = st.lock();
        assert_eq!(s.refused, 0, "a rotated refresh token was used again");
        assert_eq!(
            s.issued, 1,
            "one process refreshed, the other used its token"
        );
    }
    // The stored refresh token is the one the authorization server will take next.
    let kept = store.grant_for(&url).unwrap().unwrap();
    assert_eq!(kept.access_token, ISSUED[0]);
    let refresh = kept.refresh_token.unwrap();
    assert!(st.lock().valid.contains(&refresh), "stored {refresh}, lost");
}

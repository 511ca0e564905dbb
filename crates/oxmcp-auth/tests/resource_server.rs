//! The protected resource over real sockets: a test issuer on 127.0.0.1 publishes keys the
//! tests mint tokens with; the MCP server checks them on every request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use jsonwebtoken::Algorithm;
use oxmcp_auth::challenge::BearerChallenge;
use oxmcp_auth::server::{Introspection, IntrospectionConfig, StaticTokens};
use serde_json::{Value, json};

fn challenge(r: &reqwest::Response) -> BearerChallenge {
    let h: Vec<String> = r
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    BearerChallenge::find(&h).expect("a Bearer challenge")
}

/// Opens a session with `token`; its id.
async fn open_session(url: &str, token: &str) -> String {
    let r = post(url, Some(token), None, INIT).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    r.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

fn call(name: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
    )
}

/// The text of a JSON or SSE answer.
async fn text_of(r: reqwest::Response) -> String {
    let body = r.text().await.unwrap();
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .map_or(body.clone(), str::to_owned);
    let v: Value = serde_json::from_str(&json).unwrap();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn no_token_gets_a_challenge_to_the_metadata() {
    let (issuer, _as) = start_as().await;
    let url = start_mcp(&issuer).await;
    let r = post(&url, None, None, INIT).await;
    assert_eq!(r.status(), 401);
    let c = challenge(&r);
    let prm_url = c.resource_metadata().unwrap().to_owned();
    assert!(
        prm_url.ends_with("/.well-known/oauth-protected-resource/mcp"),
        "{prm_url}"
    );
    assert_eq!(c.scopes().unwrap(), ["mcp"]);
    // The metadata, at the path-inserted and the root URIs.
    for u in [prm_url.clone(), prm_url.replace("/mcp", "")] {
        let prm: Value = reqwest::get(&u).await.unwrap().json().await.unwrap();
        assert_eq!(prm["resource"], url);
        assert_eq!(prm["authorization_servers"], json!([issuer]));
        assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    }
    // A GET and a DELETE without a token are refused the same way.
    let get = reqwest::Client::new()
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 401);
    // A token in the query string is never read.
    let t = token_for(&issuer, &url, "alice", "mcp", json!({}));
    let q = post(&format!("{url}?access_token={t}"), None, None, INIT).await;
    assert_eq!(q.status(), 401);
    // Another scheme is no bearer token (401); malformed Bearer credentials are a bad request.
    let with = |value: &'static str| {
        reqwest::Client::new()
            .post(&url)
            .header("authorization", value)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INIT)
            .send()
    };
    let basic = with("Basic abc").await.unwrap();
    assert_eq!(basic.status(), 401);
    assert_eq!(challenge(&basic).error(), None);
    for bad in ["Bearer", "Bearer  ", "Bearer a b"] {
        let r = with(bad).await.unwrap();
        assert_eq!(r.status(), 400, "{bad:?}");
        assert_eq!(challenge(&r).error(), Some("invalid_request"), "{bad:?}");
    }
}

#[tokio::test]
async fn valid_tokens_reach_handlers_with_their_identity() {
    let (issuer, _as) = start_as().await;
    let url = start_mcp(&issuer).await;
    let t = token_for(&issuer, &url, "alice", "mcp admin", json!({}));
    let s = open_session(&url, &t).await;
    let r = post(&url, Some(&t), Some(&s), &call("whoami")).await;
    assert_eq!(text_of(r).await, "alice mcp,admin");
    // A token within the clock-skew leeway is still good.
    let t = token_for(&issuer, &url, "alice", "mcp", json!({"exp": now() - 30}));
    let r = post(&url, Some(&t), Some(&s), &call("whoami")).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn bad_tokens_are_refused_with_401() {
    let (issuer, _as) = start_as().await;
    let url = start_mcp(&issuer).await;
    let header = |alg: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#))
    };
    let payload = {
        use base64::Engine as _;
        let claims = json!({"iss": issuer, "aud": url, "sub": "mallory", "scope": "mcp", "exp": now() + 600});
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    };
    let claims =
        json!({"iss": issuer, "aud": url, "sub": "mallory", "scope": "mcp", "exp": now() + 600});
    let cases: Vec<(&str, String)> = vec![
        (
            "expired",
            token_for(&issuer, &url, "a", "mcp", json!({"exp": now() - 600})),
        ),
        (
            "not yet valid",
            token_for(&issuer, &url, "a", "mcp", json!({"nbf": now() + 600})),
        ),
        (
            "wrong issuer",
            token_for(
                &issuer,
                &url,
                "a",
                "mcp",
                json!({"iss": "https://evil.example"}),
            ),
        ),
        (
            "wrong audience",
            token_for(
                &issuer,
                &url,
                "a",
                "mcp",
                json!({"aud": "https://other.example/mcp"}),
            ),
        ),
        (
            "no audience",
            token_for(&issuer, &url, "a", "mcp", json!({"aud": null})),
        ),
        (
            "no exp",
            token_for(&issuer, &url, "a", "mcp", json!({"exp": null})),
        ),
        // Signed with another key under the published key's id.
        (
            "bad signature",
            sign(&claims, RSA2, Algorithm::RS256, Some("rsa-1")),
        ),
        (
            "unknown kid",
            sign(&claims, RSA2, Algorithm::RS256, Some("rsa-9")),
        ),
        ("alg none", format!("{}.{payload}.", header("none"))),
        // HS/RS confusion: the public key used as an HMAC secret.
        ("HS256 with the public key", {
            let key = jsonwebtoken::EncodingKey::from_secret(RSA_PUB.as_bytes());
            let mut h = jsonwebtoken::Header::new(Algorithm::HS256);
            h.kid = Some("rsa-1".into());
            jsonwebtoken::encode(&h, &claims, &key).unwrap()
        }),
        ("garbage", "not-a-jwt".to_owned()),
    ];
    for (what, token) in cases {
        let r = post(&url, Some(&token), None, INIT).await;
        assert_eq!(r.status(), 401, "{what}");
        let c = challenge(&r);
        assert_eq!(c.error(), Some("invalid_token"), "{what}");
        assert!(c.resource_metadata().is_some(), "{what}");
    }
}

#[tokio::test]
async fn an_unknown_key_id_fetches_the_keys_again() {
    let (issuer, st) = start_as().await;
    let url = start_mcp(&issuer).await;
    let claims =
        json!({"iss": issuer, "aud": url, "sub": "bob", "scope": "mcp", "exp": now() + 600});
    let t2 = sign(&claims, RSA2, Algorithm::RS256, Some("rsa-2"));
    assert_eq!(post(&url, Some(&t2), None, INIT).await.status(), 401);
    // The issuer rotates its keys in: the next token with that kid is accepted.
    let all: Value = serde_json::from_str(JWKS).unwrap();
    st.lock().jwks = all;
    let before = st.lock().jwks_fetches;
    assert_eq!(post(&url, Some(&t2), None, INIT).await.status(), 200);
    assert_eq!(st.lock().jwks_fetches, before + 1);
    // Known keys are served from the cache.
    let t1 = token_for(&issuer, &url, "bob", "mcp", json!({}));
    assert_eq!(post(&url, Some(&t1), None, INIT).await.status(), 200);
    assert_eq!(st.lock().jwks_fetches, before + 1);
}

#[tokio::test]
async fn insufficient_scope_gets_403_with_the_scopes_needed() {
    let (issuer, _as) = start_as().await;
    let url = start_mcp(&issuer).await;
    // Without the scope every request needs.
    let none = token_for(&issuer, &url, "carol", "other", json!({}));
    let r = post(&url, Some(&none), None, INIT).await;
    assert_eq!(r.status(), 403);
    assert_eq!(challenge(&r).error(), Some("insufficient_scope"));
    // Without the tool's scope.
    let t = token_for(&issuer, &url, "carol", "mcp", json!({}));
    let s = open_session(&url, &t).await;
    let r = post(&url, Some(&t), Some(&s), &call("admin")).await;
    assert_eq!(r.status(), 403);
    let c = challenge(&r);
    assert_eq!(c.error(), Some("insufficient_scope"));
    assert_eq!(c.scopes().unwrap(), ["mcp", "admin"]);
    assert!(
        c.resource_metadata()
            .unwrap()
            .ends_with("/oauth-protected-resource/mcp")
    );
    // Other tools still work, and with the scope the tool does too.
    assert_eq!(
        post(&url, Some(&t), Some(&s), &call("whoami"))
            .await
            .status(),
        200
    );
    let admin = token_for(&issuer, &url, "carol", "mcp admin", json!({}));
    let r = post(&url, Some(&admin), Some(&s), &call("admin")).await;
    assert_eq!(text_of(r).await, "admin done");
}

#[tokio::test]
async fn a_session_used_with_another_subjects_token_does_not_exist() {
    let (issuer, _as) = start_as().await;
    let url = start_mcp(&issuer).await;
    let alice = token_for(&issuer, &url, "alice", "mcp", json!({}));
    let bob = token_for(&issuer, &url, "bob", "mcp", json!({}));
    let s = open_session(&url, &alice).await;
    assert_eq!(
        post(&url, Some(&bob), Some(&s), &call("whoami"))
            .await
            .status(),
        404
    );
    let http = reqwest::Client::new();
    for last_event in [None, Some("1")] {
        let mut get = http
            .get(&url)
            .bearer_auth(&bob)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &s)
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(l) = last_event {
            get = get.header("last-event-id", l);
        }
        assert_eq!(get.send().await.unwrap().status(), 404);
    }
    let del = http
        .delete(&url)
        .bearer_auth(&bob)
        .header("mcp-session-id", &s)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 404);
    // Alice's session is intact.
    let r = post(&url, Some(&alice), Some(&s), &call("whoami")).await;
    assert_eq!(text_of(r).await, "alice mcp");
}

#[tokio::test]
async fn opaque_tokens_are_introspected_and_cached() {
    let (issuer, st) = start_as().await;
    let mut config = IntrospectionConfig::new(
        format!("{issuer}/introspect"),
        "rs",
        "rs-secret",
        "https://this.example/mcp",
    );
    config.issuer = Some(issuer.clone());
    config.cache_for = std::time::Duration::from_secs(30);
    config.max_cached = 100;
    let verifier = Introspection::new(config).unwrap();
    let url = start_mcp_with(&issuer, Some(Arc::new(verifier))).await;
    // An answer must name this resource in `aud` (answers without one are refused, see the
    // CLI's auth_tokens tests), and not another one.
    st.lock().opaque.insert(
        "opaque-1".into(),
        json!({"active": true, "sub": "dave", "scope": "mcp", "exp": now() + 600, "iss": issuer,
               "aud": "https://this.example/mcp"}),
    );
    st.lock().opaque.insert(
        "opaque-other".into(),
        json!({"active": true, "sub": "eve", "scope": "mcp", "aud": "https://other.example/mcp",
               "iss": issuer}),
    );
    let s = open_session(&url, "opaque-1").await;
    let r = post(&url, Some("opaque-1"), Some(&s), &call("whoami")).await;
    assert_eq!(text_of(r).await, "dave mcp");
    assert_eq!(post(&url, Some("opaque-2"), None, INIT).await.status(), 401);
    // Revoked at the issuer: the cached answer stands until the cache expires (30 s here).
    st.lock().opaque.remove("opaque-1");
    assert_eq!(
        post(&url, Some("opaque-1"), Some(&s), &call("whoami"))
            .await
            .status(),
        200
    );
    assert_eq!(
        post(&url, Some("opaque-other"), None, INIT).await.status(),
        401
    );
}

#[tokio::test]
async fn static_tokens_stand_for_their_subjects() {
    let (issuer, _as) = start_as().await;
    let verifier = StaticTokens::new(
        vec![
            ("tok-a".into(), "ann".into()),
            ("tok-b".into(), "ben".into()),
        ],
        vec!["mcp".into()],
    )
    .unwrap();
    let url = start_mcp_with(&issuer, Some(Arc::new(verifier))).await;
    let s = open_session(&url, "tok-a").await;
    let r = post(&url, Some("tok-a"), Some(&s), &call("whoami")).await;
    assert_eq!(text_of(r).await, "ann mcp");
    assert_eq!(
        post(&url, Some("tok-b"), Some(&s), &call("whoami"))
            .await
            .status(),
        404
    );
    assert_eq!(post(&url, Some("tok-c"), None, INIT).await.status(), 401);
    assert_eq!(
        post(&url, Some("tok-a "), None, INIT).await.status(),
        200,
        "trimmed like a header"
    );
}

//! Whom the protected resource takes a caller for, over real sockets: the subject qualified by
//! its issuer, so that one subject name at two issuers is two principals (their sessions are
//! each other's 404), and a static token without a subject is a principal of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use futures::future::BoxFuture;
use oxmcp_auth::server::{JwtConfig, JwtVerifier, StaticTokens};
use oxmcp_http::{Identity, TokenError, TokenVerifier};
use serde_json::json;

/// Accepts the JWTs of either of two issuers (a resource server trusting two authorization
/// servers).
#[derive(Debug)]
struct EitherIssuer(JwtVerifier, JwtVerifier);

impl TokenVerifier for EitherIssuer {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>> {
        Box::pin(async move {
            match self.0.verify(token).await {
                Ok(id) => Ok(id),
                Err(_) => self.1.verify(token).await,
            }
        })
    }
}

const PING: &str = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subject_at_two_issuers_is_two_principals() {
    let (as1, _st1) = start_as().await;
    let (as2, _st2) = start_as().await;
    let url = start_mcp_made(&as1, |url| {
        Arc::new(EitherIssuer(
            JwtVerifier::new(JwtConfig::new(&as1, url)).unwrap(),
            JwtVerifier::new(JwtConfig::new(&as2, url)).unwrap(),
        ))
    })
    .await;
    let alice1 = token_for(&as1, &url, "alice", "mcp", json!({}));
    let alice2 = token_for(&as2, &url, "alice", "mcp", json!({}));
    let r = post(&url, Some(&alice1), None, INIT).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(
        post(&url, Some(&alice2), Some(&session), PING)
            .await
            .status(),
        404,
        "alice of another issuer used the session"
    );
    assert_eq!(
        post(&url, Some(&alice1), Some(&session), PING)
            .await
            .status(),
        200
    );
}

#[test]
fn static_subjects_are_refused_when_missing_and_made_when_anonymous() {
    assert!(StaticTokens::new(vec![("tok".into(), String::new())], vec![]).is_err());
    assert!(StaticTokens::new(vec![("tok".into(), " ".into())], vec![]).is_err());
    let a = StaticTokens::anonymous_subject("tok-a");
    assert!(
        a.starts_with("anonymous:") && a.len() == "anonymous:".len() + 16,
        "{a}"
    );
    assert_ne!(a, StaticTokens::anonymous_subject("tok-b"));
    assert_eq!(
        a,
        StaticTokens::anonymous_subject(" tok-a "),
        "trimmed, stable"
    );
    assert!(!a.contains("tok-a"), "the token is not in its subject");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "tok-a anonymous:0123456789abcdef\n").unwrap();
    let err = StaticTokens::from_file(&file, vec![])
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
}

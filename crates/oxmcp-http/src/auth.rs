//! Bearer-token protection of the endpoint (MCP authorization, OAuth 2.1 resource server):
//! every request's `Authorization: Bearer` token is verified (never the session alone), a
//! missing or invalid one gets 401 with a `WWW-Authenticate` challenge pointing at the
//! Protected Resource Metadata (RFC 9728), served here too, and a token without the scopes a
//! method, tool, prompt or resource needs gets 403 `insufficient_scope`. A token in the query
//! string is never read. The verified [`Identity`] and its [`Principal`] go into the request's
//! extensions, which handlers see.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use oxmcp_jsonrpc::Message;

pub use oxmcp_engine::Identity;

use crate::server::clients::Principal;
use crate::server::refusal::Refusal;
pub use crate::server::resource_scopes::{ResourceScopes, canonical_resource_uri};

/// Why a token was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a valid token for this resource (expired, wrong audience, bad signature...): 401.
    #[error("{0}")]
    Invalid(String),
    /// The token could not be checked now (the key set or introspection endpoint is
    /// unreachable): 503, so that the client retries rather than re-authorizes.
    #[error("{0}")]
    Unavailable(String),
}

/// Checks bearer tokens: a JWT against its issuer's keys, an introspection endpoint, a static
/// token... (`oxmcp_auth::server` has these).
pub trait TokenVerifier: std::fmt::Debug + Send + Sync + 'static {
    /// Who `token` belongs to, or why it is not accepted.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>>;
}

/// Scopes required beyond a valid token: for every request, per method, and per tool, prompt
/// or resource.
#[derive(Debug, Clone, Default, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct ScopePolicy {
    /// Needed for anything at all.
    pub all: Vec<String>,
    /// Per JSON-RPC method (`tools/call`, `resources/read`...).
    pub methods: HashMap<String, Vec<String>>,
    /// Per tool, for `tools/call`.
    pub tools: HashMap<String, Vec<String>>,
    /// Per prompt, for `prompts/get`.
    pub prompts: HashMap<String, Vec<String>>,
    /// Per resource URI, for `resources/read`, `resources/subscribe` and the resources a
    /// `subscriptions/listen` names; every spelling of a URI is covered (see
    /// [`ResourceScopes`]). A `HashMap<String, Vec<String>>` converts into it.
    #[setters(into)]
    pub resources: ResourceScopes,
}

impl ScopePolicy {
    /// The scopes one message needs (`all` included), without repeats.
    pub fn required(&self, message: &Message) -> Vec<String> {
        let mut out = self.all.clone();
        let Message::Request(r) = message else {
            return out;
        };
        let mut add = |scopes: Option<&[String]>| {
            for s in scopes.into_iter().flatten() {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        };
        add(self.methods.get(&r.method).map(Vec::as_slice));
        let params: Option<serde_json::Value> = r
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok());
        let param = |key: &str| params.as_ref()?.get(key)?.as_str();
        match r.method.as_str() {
            "tools/call" if !self.tools.is_empty() => {
                add(param("name")
                    .and_then(|n| self.tools.get(n))
                    .map(Vec::as_slice));
            }
            "prompts/get" if !self.prompts.is_empty() => {
                add(param("name")
                    .and_then(|n| self.prompts.get(n))
                    .map(Vec::as_slice));
            }
            "resources/read" | "resources/subscribe" if !self.resources.is_empty() => {
                add(param("uri").and_then(|u| self.resources.get(u)));
            }
            "subscriptions/listen" if !self.resources.is_empty() => {
                let uris = params
                    .as_ref()
                    .and_then(|p| p.pointer("/notifications/resourceSubscriptions"))
                    .and_then(serde_json::Value::as_array);
                for uri in uris.into_iter().flatten().filter_map(|u| u.as_str()) {
                    add(self.resources.get(uri));
                }
            }
            _ => {}
        }
        out
    }
}

/// How the endpoint is protected.
#[derive(Debug, Clone)]
pub struct HttpAuth {
    /// Checks tokens.
    pub verifier: Arc<dyn TokenVerifier>,
    /// The Protected Resource Metadata document (RFC 9728): at least `resource` and
    /// `authorization_servers`. Served at `/.well-known/oauth-protected-resource` plus the
    /// endpoint's path, and at the root.
    pub metadata: serde_json::Value,
    /// The absolute URL of that document, for challenges: the path-inserted one.
    pub metadata_url: String,
    /// Scopes required beyond a valid token.
    pub scopes: ScopePolicy,
}

impl HttpAuth {
    /// The scopes a 401 challenge asks for: those every request needs, else the resource's
    /// `scopes_supported`.
    fn challenge_scope(&self) -> Option<String> {
        if !self.scopes.all.is_empty() {
            return Some(self.scopes.all.join(" "));
        }
        let listed: Vec<&str> = self.metadata["scopes_supported"]
            .as_array()?
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        (!listed.is_empty()).then(|| listed.join(" "))
    }

    /// A 401 with its challenge (400 for a malformed request, RFC 6750 §3.1).
    fn unauthorized(&self, error: Option<(&str, &str)>) -> Refusal {
        let scope = self.challenge_scope();
        let mut params = vec![("resource_metadata", self.metadata_url.as_str())];
        if let Some(s) = &scope {
            params.push(("scope", s));
        }
        let (code, description) = error.unwrap_or(("invalid_token", "an access token is required"));
        if error.is_some() {
            params.push(("error", code));
            params.push(("error_description", description));
        }
        let status = if code == "invalid_request" {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::UNAUTHORIZED
        };
        Refusal::oauth(status, Some(&bearer_challenge(&params)), code, description)
    }

    /// A 403 for a token without `required`.
    fn insufficient(&self, required: &[String]) -> Refusal {
        let scope = required.join(" ");
        let description = format!("this request needs the scope(s): {scope}");
        let challenge = bearer_challenge(&[
            ("error", "insufficient_scope"),
            ("scope", &scope),
            ("resource_metadata", &self.metadata_url),
            ("error_description", &description),
        ]);
        Refusal::oauth(
            StatusCode::FORBIDDEN,
            Some(&challenge),
            "insufficient_scope",
            &description,
        )
    }
}

/// A JSON answer.
fn json(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// Writes a `Bearer` challenge: `Bearer k1="v1", k2="v2"`, values quoted and escaped.
pub fn bearer_challenge(params: &[(&str, &str)]) -> String {
    let mut out = String::from("Bearer");
    for (i, (k, v)) in params.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars().filter(|c| !c.is_control()) {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out
}

/// The bearer token of a request (`Authorization: Bearer …`, scheme case-insensitive):
/// `Ok(None)` when there is none (no header, or another scheme), `Err` when the `Bearer`
/// credentials are malformed.
pub(crate) fn bearer_token(headers: &axum::http::HeaderMap) -> Result<Option<&str>, ()> {
    let Some(v) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let v = v.to_str().map_err(|_| ())?;
    let (scheme, token) = v.split_once(' ').unwrap_or((v, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(());
    }
    Ok(Some(token))
}

/// Verifies the request's token when the endpoint is protected; puts the [`Identity`] (as
/// `Arc<Identity>`) and its [`Principal`] in the extensions.
///
/// # Errors
/// A [`Refusal`]: 401 with a challenge without a token or with a refused one, 400 for a
/// malformed `Authorization`, 403 for a token short of the scopes every request needs, 503
/// when the token cannot be checked now.
pub async fn authenticate(
    auth: Option<&HttpAuth>,
    parts: &mut axum::http::request::Parts,
) -> Result<(), Refusal> {
    let Some(auth) = auth else { return Ok(()) };
    let token = match bearer_token(&parts.headers) {
        Ok(Some(t)) => t,
        Ok(None) => return Err(auth.unauthorized(None)),
        Err(()) => {
            return Err(auth.unauthorized(Some((
                "invalid_request",
                "the Authorization header must be `Bearer <token>`",
            ))));
        }
    };
    let identity = match auth.verifier.verify(token).await {
        Ok(i) => i,
        Err(TokenError::Invalid(why)) => {
            tracing::debug!("bearer token refused: {why}");
            return Err(auth.unauthorized(Some(("invalid_token", &why))));
        }
        Err(TokenError::Unavailable(why)) => {
            tracing::warn!("bearer token could not be checked: {why}");
            return Err(Refusal::token_unavailable());
        }
    };
    let missing: Vec<&String> = auth
        .scopes
        .all
        .iter()
        .filter(|s| !identity.has_scope(s))
        .collect();
    if !missing.is_empty() {
        return Err(auth.insufficient(&auth.scopes.all));
    }
    parts.extensions.insert(Principal::of(&identity));
    parts.extensions.insert(Arc::new(identity));
    Ok(())
}

/// Refuses (403) messages whose method, tool, prompt or resource needs a scope the request's
/// token does not grant.
pub(crate) fn check_scopes(
    auth: Option<&HttpAuth>,
    extensions: &axum::http::Extensions,
    messages: &[Message],
) -> Result<(), Refusal> {
    let Some(auth) = auth else { return Ok(()) };
    let Some(identity) = extensions.get::<Arc<Identity>>() else {
        return Ok(());
    };
    for m in messages {
        let required = auth.scopes.required(m);
        if required.iter().any(|s| !identity.has_scope(s)) {
            return Err(auth.insufficient(&required));
        }
    }
    Ok(())
}

/// The JSON-RPC error code of a request refused for a scope its connection's token lacks
/// (on WebSocket and gRPC, where a refusal cannot be an HTTP 403).
pub const INSUFFICIENT_SCOPE: i64 = -32003;

/// On a connection (WebSocket, gRPC): the error answers for a frame with a message that needs
/// a scope the connection's token does not grant, one per request in it (`Some(vec![])` for
/// refused notifications); `None` to let the frame through. The error's data names the
/// scopes and carries the `insufficient_scope` challenge, as the 403 over HTTP does.
pub fn frame_refusals(
    auth: Option<&HttpAuth>,
    identity: Option<&Identity>,
    frame: &[u8],
) -> Option<Vec<String>> {
    let (auth, identity) = (auth?, identity?);
    let policy = &auth.scopes;
    let per_message = !(policy.methods.is_empty()
        && policy.tools.is_empty()
        && policy.prompts.is_empty()
        && policy.resources.is_empty());
    if !per_message {
        return None; // `all` was checked when the connection opened
    }
    let messages: Vec<Message> = match oxmcp_jsonrpc::Frame::decode_limited(frame, 1024) {
        oxmcp_jsonrpc::Frame::Single(m) => m.into_iter().collect(),
        oxmcp_jsonrpc::Frame::Batch(ms) => ms.into_iter().flatten().collect(),
    };
    let mut missing: Vec<String> = Vec::new();
    for m in &messages {
        for s in policy.required(m) {
            if !identity.has_scope(&s) && !missing.contains(&s) {
                missing.push(s);
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let scope = missing.join(" ");
    let description = format!("this request needs the scope(s): {scope}");
    let challenge = bearer_challenge(&[
        ("error", "insufficient_scope"),
        ("scope", &scope),
        ("resource_metadata", &auth.metadata_url),
        ("error_description", &description),
    ]);
    let errors = messages
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .map(|id| {
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": INSUFFICIENT_SCOPE,
                    "message": format!("Forbidden: {description}"),
                    "data": {"error": "insufficient_scope", "scope": scope, "www_authenticate": challenge},
                },
            })
            .to_string()
        })
        .collect();
    Some(errors)
}

/// The metadata routes: `/.well-known/oauth-protected-resource` with the endpoint's path
/// inserted, and at the root.
pub(crate) fn metadata_router(auth: &HttpAuth, path: &str) -> axum::Router {
    let doc = Arc::new(auth.metadata.clone());
    let serve = move || {
        let doc = doc.clone();
        async move {
            let mut r = json(StatusCode::OK, &doc);
            r.headers_mut().insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            r
        }
    };
    let base = "/.well-known/oauth-protected-resource";
    let mut router = axum::Router::new().route(base, axum::routing::get(serve.clone()));
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        router = router.route(&format!("{base}{path}"), axum::routing::get(serve));
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_scopes_per_method_and_tool() {
        let mut p = ScopePolicy::default().all(vec!["mcp".into()]);
        p.methods.insert("tools/call".into(), vec!["tools".into()]);
        p.tools
            .insert("delete".into(), vec!["admin".into(), "mcp".into()]);
        let call = |name: &str| {
            Message::decode(
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}"}}}}"#)
                    .as_bytes(),
            )
            .unwrap()
        };
        assert_eq!(p.required(&call("echo")), ["mcp", "tools"]);
        assert_eq!(p.required(&call("delete")), ["mcp", "tools", "admin"]);
        let list = Message::decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        assert_eq!(p.required(&list), ["mcp"]);
    }

    #[test]
    fn resource_rules_cover_reads_subscriptions_and_listens_in_any_spelling() {
        let mut p = ScopePolicy::default();
        p.resources
            .insert("demo://greeting/admin", ["admin".to_owned()]);
        let msg = |method: &str, params: &str| {
            Message::decode(
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
                    .as_bytes(),
            )
            .unwrap()
        };
        for m in ["resources/read", "resources/subscribe"] {
            let m = msg(m, r#"{"uri":"DEMO://greeting/%61dmin"}"#);
            assert_eq!(p.required(&m), ["admin"]);
        }
        let listen = msg(
            "subscriptions/listen",
            r#"{"notifications":{"resourceSubscriptions":["demo://x","demo://greeting/adm%69n"]}}"#,
        );
        assert_eq!(p.required(&listen), ["admin"]);
        let other = msg("resources/read", r#"{"uri":"demo://greeting/bob"}"#);
        assert!(p.required(&other).is_empty());
    }

    #[test]
    fn challenges_quote_and_escape() {
        assert_eq!(
            bearer_challenge(&[("scope", "a b"), ("error_description", "say \"hi\"\n")]),
            r#"Bearer scope="a b", error_description="say \"hi\"""#
        );
    }
}

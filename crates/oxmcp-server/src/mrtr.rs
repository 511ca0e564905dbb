//! Multi round-trip requests (2026-07-28): a handler that needs sampling, elicitation or roots
//! gets an `input_required` result sent back instead of making a server-to-client request, and
//! is run again when the client retries with `inputResponses`.
//!
//! Answers from earlier rounds travel in `requestState`, which is signed (HMAC-SHA256 with the
//! server's key) and bound to the method, the tool/prompt/resource name, the verified
//! principal of the connection (if the transport knows one) and an expiry, so a client cannot
//! forge it, move it to another request, hand it to another user or replay it for ever; any
//! instance with the same key can continue the request.

use parking_lot::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use oxmcp_types::{InputRequests, JsonObject, RequestMeta};
use serde_json::Value;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The input state of one modern request.
#[derive(Debug, Default)]
pub(crate) struct Mrtr {
    /// Every answer known so far (signed state plus this round's responses).
    pub(crate) answers: Mutex<JsonObject>,
    /// What the handler asked for and did not get.
    pub(crate) pending: Mutex<InputRequests>,
    /// An error that must answer the request (e.g. a missing client capability).
    pub(crate) fatal: Mutex<Option<ErrorObject>>,
}

impl Mrtr {
    pub(crate) fn answers(&self) -> JsonObject {
        self.answers.lock().clone()
    }
    pub(crate) fn ask(&self, requests: InputRequests) {
        self.pending.lock().extend(requests);
    }
    pub(crate) fn take_pending(&self) -> InputRequests {
        std::mem::take(&mut *self.pending.lock())
    }
    pub(crate) fn fail(&self, e: ErrorObject) {
        self.fatal.lock().get_or_insert(e);
    }
    pub(crate) fn take_fatal(&self) -> Option<ErrorObject> {
        self.fatal.lock().take()
    }
}

/// The key that signs `requestState`.
#[derive(Clone)]
pub struct RequestStateKey(Option<[u8; 32]>);

impl std::fmt::Debug for RequestStateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestStateKey(..)")
    }
}

impl RequestStateKey {
    /// A random key (the default: state is then valid only on this process).
    ///
    /// If the OS has no randomness to give, the key fails closed: every `requestState` it
    /// signs fails verification (multi round-trip requests then cannot continue) rather than
    /// being signed with a guessable key.
    pub fn random() -> Self {
        Self::random_from(|k| getrandom::fill(k).is_ok())
    }

    fn random_from(fill: impl FnOnce(&mut [u8]) -> bool) -> Self {
        let mut k = [0u8; 32];
        if fill(&mut k) {
            Self(Some(k))
        } else {
            tracing::error!(
                "the OS random number generator failed; no requestState can be verified"
            );
            Self(None)
        }
    }

    /// A key shared by several instances, so any of them can continue a request.
    pub fn from_bytes(key: [u8; 32]) -> Self {
        Self(Some(key))
    }

    fn mac(&self, payload: &[u8]) -> Option<HmacSha256> {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(self.0.as_ref()?).ok()?;
        mac.update(payload);
        Some(mac)
    }
}

/// What a `requestState` is bound to besides its request: who may continue it, and for how
/// long.
pub(crate) struct Binding<'a> {
    pub(crate) key: &'a RequestStateKey,
    pub(crate) principal: Option<&'a str>,
    pub(crate) ttl: std::time::Duration,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Binding<'_> {
    /// Signs the answers so far for this method and name.
    pub(crate) fn sign(&self, method: &str, name: &str, answers: &JsonObject) -> String {
        let expires = now_secs().saturating_add(self.ttl.as_secs());
        let payload = serde_json::json!({
            "m": method, "n": name, "p": self.principal, "e": expires, "a": answers
        })
        .to_string();
        let tag = self
            .key
            .mac(payload.as_bytes())
            .map(|m| m.finalize().into_bytes().to_vec())
            .unwrap_or_default();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Checks a `requestState` and returns the answers it carries.
    pub(crate) fn verify(
        &self,
        state: &str,
        method: &str,
        name: &str,
    ) -> Result<JsonObject, ErrorObject> {
        let bad = || {
            ErrorObject::invalid_params("Invalid params: requestState failed its integrity check")
        };
        let (p, t) = state.split_once('.').ok_or_else(bad)?;
        let payload = URL_SAFE_NO_PAD.decode(p).map_err(|_| bad())?;
        let tag = URL_SAFE_NO_PAD.decode(t).map_err(|_| bad())?;
        self.key
            .mac(&payload)
            .ok_or_else(bad)?
            .verify_slice(&tag)
            .map_err(|_| bad())?;
        let v: Value = serde_json::from_slice(&payload).map_err(|_| bad())?;
        if v["m"] != method || v["n"] != name || v["p"].as_str() != self.principal {
            return Err(ErrorObject::invalid_params(
                "Invalid params: requestState belongs to another request",
            ));
        }
        if v["e"].as_u64().is_none_or(|e| e < now_secs()) {
            return Err(ErrorObject::invalid_params(
                "Invalid params: requestState has expired; start the request again",
            ));
        }
        match v.get("a") {
            Some(Value::Object(a)) => Ok(a.clone()),
            _ => Err(bad()),
        }
    }
}

/// The answers a retry carries: those in its verified `requestState` (bound to the method and
/// to the name the request is about) and this round's `inputResponses`, together.
pub(crate) fn answers_of(
    binding: &Binding<'_>,
    method: &str,
    request: &RequestMeta,
) -> Result<JsonObject, ErrorObject> {
    let mut answers = match request.request_state() {
        None | Some(Value::Null) => JsonObject::new(),
        Some(Value::String(s)) => binding.verify(s, method, request.subject())?,
        Some(_) => {
            return Err(ErrorObject::invalid_params(
                "Invalid params: requestState must be a string",
            ));
        }
    };
    match request.input_responses() {
        None => {}
        Some(Value::Object(responses)) => {
            for (k, v) in responses {
                if !v.is_object() {
                    return Err(ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("Invalid params: inputResponses.{k} must be an object (a result)"),
                    ));
                }
                answers.insert(k.clone(), v.clone());
            }
        }
        Some(_) => {
            return Err(ErrorObject::invalid_params(
                "Invalid params: inputResponses must be an object",
            ));
        }
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bound<'a>(k: &'a RequestStateKey, principal: Option<&'a str>) -> Binding<'a> {
        Binding {
            key: k,
            principal,
            ttl: std::time::Duration::from_secs(60),
        }
    }

    #[test]
    fn state_is_signed_and_bound() {
        let key = RequestStateKey::random();
        let k = bound(&key, None);
        let a = json!({"user_name": {"action": "accept"}})
            .as_object()
            .cloned()
            .unwrap();
        let s = k.sign("tools/call", "t", &a);
        assert_eq!(k.verify(&s, "tools/call", "t").unwrap(), a);
        assert!(
            k.verify(&format!("{s}-TAMPERED"), "tools/call", "t")
                .is_err()
        );
        assert!(
            k.verify(&s, "tools/call", "other").is_err(),
            "bound to the tool"
        );
        assert!(
            k.verify(&s, "prompts/get", "t").is_err(),
            "bound to the method"
        );
        let other = RequestStateKey::random();
        assert!(
            bound(&other, None).verify(&s, "tools/call", "t").is_err(),
            "another key"
        );
        // Forged: a valid payload with a made-up tag.
        let forged = format!(
            "{}.{}",
            s.split_once('.').unwrap().0,
            URL_SAFE_NO_PAD.encode([0u8; 32])
        );
        assert!(k.verify(&forged, "tools/call", "t").is_err());
    }

    #[test]
    fn a_key_without_randomness_verifies_nothing() {
        let key = RequestStateKey::random_from(|_| false);
        let k = bound(&key, None);
        let s = k.sign("tools/call", "t", &JsonObject::new());
        assert!(k.verify(&s, "tools/call", "t").is_err());
    }

    #[test]
    fn state_is_bound_to_its_principal_and_expires() {
        let key = RequestStateKey::random();
        let alice = bound(&key, Some("alice"));
        let s = alice.sign("tools/call", "t", &JsonObject::new());
        assert!(alice.verify(&s, "tools/call", "t").is_ok());
        let e = bound(&key, Some("bob"))
            .verify(&s, "tools/call", "t")
            .unwrap_err();
        assert!(e.message.contains("another request"), "{}", e.message);
        assert!(bound(&key, None).verify(&s, "tools/call", "t").is_err());
        let expired = Binding {
            key: &key,
            principal: None,
            ttl: std::time::Duration::ZERO,
        };
        let old = expired.sign("tools/call", "t", &JsonObject::new());
        // Issued with no lifetime: valid until the end of this second at most.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let e = expired.verify(&old, "tools/call", "t").unwrap_err();
        assert!(e.message.contains("expired"), "{}", e.message);
    }
}

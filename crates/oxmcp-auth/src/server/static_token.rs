//! Static bearer tokens for local use: compared in constant time, never logged. Each token
//! stands for a subject; a token listed without one is a subject of its own, named after a
//! digest of the token, so that two such tokens never share sessions or tasks.

use futures::future::BoxFuture;
use oxmcp_http::{Identity, TokenError, TokenVerifier};
use sha2::Digest as _;
use subtle::ConstantTimeEq as _;

use crate::AuthError;

/// The prefix of the subjects of tokens listed without one.
const ANONYMOUS: &str = "anonymous:";

/// Accepts a fixed set of tokens, each standing for a subject.
pub struct StaticTokens {
    tokens: Vec<(Vec<u8>, String)>,
    scopes: Vec<String>,
}

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field("count", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

impl StaticTokens {
    /// Tokens with their subjects; every token is granted `scopes`.
    ///
    /// # Errors
    /// No token, an empty one, or an empty subject.
    pub fn new(tokens: Vec<(String, String)>, scopes: Vec<String>) -> Result<Self, AuthError> {
        if tokens.is_empty() || tokens.iter().any(|(t, _)| t.trim().is_empty()) {
            return Err(AuthError::Config("a static token cannot be empty".into()));
        }
        if tokens.iter().any(|(_, s)| s.trim().is_empty()) {
            return Err(AuthError::Config(
                "a static token needs a subject (see StaticTokens::anonymous_subject)".into(),
            ));
        }
        Ok(Self {
            tokens: tokens
                .into_iter()
                .map(|(t, s)| (t.trim().as_bytes().to_vec(), s))
                .collect(),
            scopes,
        })
    }

    /// The subject of a token listed without one: `anonymous:` and the first 16 hex digits
    /// of the token's SHA-256, the same on every start and for no other token.
    pub fn anonymous_subject(token: &str) -> String {
        let digest = sha2::Sha256::digest(token.trim().as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("{ANONYMOUS}{hex}")
    }

    /// Reads tokens from a file: one per line, `TOKEN` or `TOKEN SUBJECT` (blank lines and
    /// `#` comments skipped). A token without a subject stands for a subject of its own,
    /// [`StaticTokens::anonymous_subject`].
    ///
    /// # Errors
    /// The file cannot be read, holds no token, or names a subject starting with
    /// `anonymous:` (kept for tokens without one).
    pub fn from_file(path: &std::path::Path, scopes: Vec<String>) -> Result<Self, AuthError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| AuthError::Config(format!("token file {}: {e}", path.display())))?;
        let mut tokens: Vec<(String, String)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (token, subject) = match line.split_once(char::is_whitespace) {
                Some((_, s)) if s.trim().starts_with(ANONYMOUS) => {
                    return Err(AuthError::Config(format!(
                        "token file {} line {}: subjects starting with {ANONYMOUS:?} are \
                         kept for tokens listed without a subject",
                        path.display(),
                        n + 1
                    )));
                }
                Some((t, s)) => (t.to_owned(), s.trim().to_owned()),
                None => (line.to_owned(), Self::anonymous_subject(line)),
            };
            tokens.push((token, subject));
        }
        if tokens.is_empty() {
            return Err(AuthError::Config(format!(
                "token file {} holds no token",
                path.display()
            )));
        }
        Self::new(tokens, scopes)
    }
}

impl TokenVerifier for StaticTokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>> {
        Box::pin(async move {
            // Every token is compared (no early exit), each in constant time.
            let mut found: Option<&String> = None;
            for (t, subject) in &self.tokens {
                if bool::from(t.as_slice().ct_eq(token.as_bytes())) {
                    found = Some(subject);
                }
            }
            match found {
                Some(subject) => Ok(Identity {
                    subject: subject.clone(),
                    scopes: self.scopes.clone(),
                    ..Identity::default()
                }),
                None => Err(TokenError::Invalid("unknown token".into())),
            }
        })
    }
}

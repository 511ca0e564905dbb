//! Static bearer tokens for local use: compared in constant time, never logged.

use futures::future::BoxFuture;
use oxmcp_http::{Identity, TokenError, TokenVerifier};
use subtle::ConstantTimeEq as _;

use crate::AuthError;

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
    /// No token, or an empty one.
    pub fn new(tokens: Vec<(String, String)>, scopes: Vec<String>) -> Result<Self, AuthError> {
        if tokens.is_empty() || tokens.iter().any(|(t, _)| t.trim().is_empty()) {
            return Err(AuthError::Config("a static token cannot be empty".into()));
        }
        Ok(Self {
            tokens: tokens
                .into_iter()
                .map(|(t, s)| (t.trim().as_bytes().to_vec(), s))
                .collect(),
            scopes,
        })
    }

    /// Reads tokens from a file: one per line, `TOKEN` or `TOKEN SUBJECT` (blank lines and
    /// `#` comments skipped). A token without a subject stands for `local`.
    ///
    /// # Errors
    /// The file cannot be read or holds no token.
    pub fn from_file(path: &std::path::Path, scopes: Vec<String>) -> Result<Self, AuthError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| AuthError::Config(format!("token file {}: {e}", path.display())))?;
        let tokens: Vec<(String, String)> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| match l.split_once(char::is_whitespace) {
                Some((t, s)) => (t.to_owned(), s.trim().to_owned()),
                None => (l.to_owned(), "local".to_owned()),
            })
            .collect();
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

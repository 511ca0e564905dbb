//! `WWW-Authenticate: Bearer …` challenges (RFC 6750 §3, RFC 9728 §5.1): parsed by the client,
//! written by the protected resource.

/// The parameters of one `Bearer` challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    params: Vec<(String, String)>,
}

impl BearerChallenge {
    /// The `Bearer` challenge among `headers` (each a `WWW-Authenticate` value, which may hold
    /// several challenges), if there is one.
    pub fn find<S: AsRef<str>>(headers: &[S]) -> Option<Self> {
        headers.iter().find_map(|h| Self::parse(h.as_ref()))
    }

    /// The `Bearer` challenge in one header value.
    pub fn parse(header: &str) -> Option<Self> {
        Self::parse_scheme(header, "bearer")
    }

    /// The challenge of `scheme` (`Bearer`, `DPoP`; case-insensitive) in one header value.
    pub fn parse_scheme(header: &str, scheme_name: &str) -> Option<Self> {
        let mut lexer = Lexer { s: header, i: 0 };
        let mut current: Option<(String, Vec<(String, String)>)> = None;
        let mut found = None;
        loop {
            lexer.skip(|c| c == ',' || c.is_ascii_whitespace());
            let Some(word) = lexer.token() else { break };
            lexer.skip(|c| c == ' ' || c == '\t');
            if lexer.peek() == Some('=') {
                lexer.i += 1;
                lexer.skip(|c| c == ' ' || c == '\t');
                let value = if lexer.peek() == Some('"') {
                    lexer.quoted()
                } else {
                    lexer.token().unwrap_or_default()
                };
                if let Some((_, params)) = current.as_mut() {
                    params.push((word.to_ascii_lowercase(), value));
                }
            } else {
                // A new auth scheme starts.
                if let Some((scheme, params)) = current.take()
                    && scheme.eq_ignore_ascii_case(scheme_name)
                {
                    found = Some(params);
                    break;
                }
                current = Some((word, Vec::new()));
            }
        }
        if found.is_none()
            && let Some((scheme, params)) = current
            && scheme.eq_ignore_ascii_case(scheme_name)
        {
            found = Some(params);
        }
        found.map(|params| Self { params })
    }

    /// A parameter's value (names are case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `resource_metadata`: where the Protected Resource Metadata is (RFC 9728).
    pub fn resource_metadata(&self) -> Option<&str> {
        self.get("resource_metadata")
    }

    /// `scope`, split on spaces.
    pub fn scopes(&self) -> Option<Vec<String>> {
        self.get("scope")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
    }

    /// `error` (`invalid_token`, `insufficient_scope`...).
    pub fn error(&self) -> Option<&str> {
        self.get("error")
    }
}

/// Writes a `Bearer` challenge: `Bearer k1="v1", k2="v2"` (values quoted and escaped).
pub use oxmcp_http::auth::bearer_challenge as bearer;

struct Lexer<'a> {
    s: &'a str,
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn skip(&mut self, f: impl Fn(char) -> bool) {
        while let Some(c) = self.peek() {
            if !f(c) {
                break;
            }
            self.i += c.len_utf8();
        }
    }

    /// An RFC 7230 token (plus `/` and `=`-free token68 characters).
    fn token(&mut self) -> Option<String> {
        let start = self.i;
        self.skip(|c| !(c == ',' || c == '=' || c == '"' || c.is_ascii_whitespace()));
        (self.i > start).then(|| self.s[start..self.i].to_owned())
    }

    fn quoted(&mut self) -> String {
        self.i += 1; // the opening quote
        let mut out = String::new();
        let mut escaped = false;
        while let Some(c) = self.peek() {
            self.i += c.len_utf8();
            if escaped {
                out.push(c);
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                break;
            } else {
                out.push(c);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bearer_among_other_schemes() {
        let c = BearerChallenge::parse(
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://r.example/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.error(), Some("insufficient_scope"));
        assert_eq!(c.scopes().unwrap(), vec!["a", "b"]);
        assert_eq!(
            c.resource_metadata(),
            Some("https://r.example/.well-known/oauth-protected-resource/mcp")
        );
        let c = BearerChallenge::parse(r#"bearer realm=x, Basic realm="y""#).unwrap();
        assert_eq!(c.get("realm"), Some("x"));
        assert!(BearerChallenge::parse(r#"Basic realm="y""#).is_none());
        assert_eq!(
            BearerChallenge::parse("Bearer").unwrap(),
            BearerChallenge::default()
        );
    }

    #[test]
    fn writes_what_it_parses() {
        let h = bearer(&[("scope", "a \"b\""), ("error", "invalid_token")]);
        let c = BearerChallenge::parse(&h).unwrap();
        assert_eq!(c.get("scope"), Some("a \"b\""));
        assert_eq!(c.error(), Some("invalid_token"));
    }
}

//! The per-resource part of a [`crate::ScopePolicy`]: scopes keyed by a resource URI in a
//! canonical form, so that a rule protects every spelling of its URI.
//!
//! A server (or a gateway's upstream) may treat many spellings as one resource: template
//! matching percent-decodes what it captures, RFC 3986 §6.2.2 makes the case of the scheme,
//! the host and `%xx` and escaped unreserved characters irrelevant, a file server may resolve
//! `..`, and a gateway's upstream compares its own part of a `gateway://NAME/URI` by its own
//! rules. The policy cannot know them all, so it compares in a form at least as coarse as any
//! of them: every escape decoded, again until none is left (invalid UTF-8 replaced), dot segments removed from the path
//! (RFC 3986 §5.2.4), then everything lowercased. Two URIs that differ only in case or
//! escaping therefore share a rule: a protected URI can be reached by no spelling without the
//! rule's scopes, at the cost of also protecting its case and escaping variants.

use std::collections::HashMap;

/// Most rounds of percent-decoding a URI gets.
const DECODE_ROUNDS: usize = 8;

/// The form resource URIs are compared in (see the module documentation).
pub fn canonical_resource_uri(uri: &str) -> String {
    // Decoded until nothing changes (`%2561` is `%61`, then `a`), so that a layer that
    // decodes twice finds no spelling the rule missed; a few rounds are all any real URI
    // takes.
    let mut plain = uri.to_owned();
    for _ in 0..DECODE_ROUNDS {
        let decoded = percent_encoding::percent_decode_str(&plain)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == plain {
            break;
        }
        plain = decoded;
    }
    let plain = plain.to_lowercase();
    let (head, path, tail) = split_path(&plain);
    format!("{head}{}{tail}", remove_dot_segments(path))
}

/// The URI around its path: (scheme and authority, path, query and fragment).
fn split_path(uri: &str) -> (&str, &str, &str) {
    let after_scheme = scheme_len(uri).map_or(0, |n| n + 1);
    let rest = &uri[after_scheme..];
    let path_start = match rest.strip_prefix("//") {
        Some(authority) => {
            after_scheme + 2 + authority.find(['/', '?', '#']).unwrap_or(authority.len())
        }
        None => after_scheme,
    };
    let path_end = uri[path_start..]
        .find(['?', '#'])
        .map_or(uri.len(), |n| path_start + n);
    (
        &uri[..path_start],
        &uri[path_start..path_end],
        &uri[path_end..],
    )
}

/// The length of the URI's scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` before a
/// `:`), if it has one.
fn scheme_len(uri: &str) -> Option<usize> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    let mut chars = scheme.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first_ok && rest_ok).then_some(colon)
}

/// A path without its `.` and `..` segments (RFC 3986 §5.2.4): `/a/b/../c` is `/a/c`.
fn remove_dot_segments(path: &str) -> String {
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let mut out: Vec<&str> = Vec::with_capacity(segments.len());
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." | ".." => {
                // The empty first segment of an absolute path is its root: never removed.
                if *segment == ".." && out.len() > usize::from(absolute) {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    out.join("/")
}

/// Scopes per resource URI, for `resources/read`, `resources/subscribe` and the resources a
/// `subscriptions/listen` names. Keys are kept in canonical form ([`canonical_resource_uri`])
/// and a URI is looked up in that form too; URIs with the same canonical form share their
/// scopes (all of them are needed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceScopes {
    by_uri: HashMap<String, Vec<String>>,
}

impl ResourceScopes {
    /// Requires `scopes` for the resource `uri` (and every spelling of it), on top of those
    /// already required for it.
    pub fn insert(&mut self, uri: &str, scopes: impl IntoIterator<Item = String>) {
        let have = self.by_uri.entry(canonical_resource_uri(uri)).or_default();
        for s in scopes {
            if !have.contains(&s) {
                have.push(s);
            }
        }
    }

    /// The scopes reading `uri` needs, if a rule names it in any spelling.
    pub fn get(&self, uri: &str) -> Option<&[String]> {
        self.by_uri
            .get(&canonical_resource_uri(uri))
            .map(Vec::as_slice)
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.by_uri.is_empty()
    }

    /// How many distinct resources have rules.
    pub fn len(&self) -> usize {
        self.by_uri.len()
    }
}

impl<S: AsRef<str>> FromIterator<(S, Vec<String>)> for ResourceScopes {
    fn from_iter<I: IntoIterator<Item = (S, Vec<String>)>>(iter: I) -> Self {
        let mut out = Self::default();
        for (uri, scopes) in iter {
            out.insert(uri.as_ref(), scopes);
        }
        out
    }
}

impl<S: AsRef<str>> From<HashMap<S, Vec<String>>> for ResourceScopes {
    fn from(map: HashMap<S, Vec<String>>) -> Self {
        map.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_uri_have_one_form() {
        let c = canonical_resource_uri;
        let want = "gateway://demo/demo://greeting/admin";
        for spelling in [
            "gateway://demo/demo://greeting/admin",
            "gateway://demo/demo://greeting/%61dmin",
            "gateway://demo/demo://greeting/%61%64min",
            "GATEWAY://Demo/DEMO://greeting/ADMIN",
            "gateway://demo/demo://greeting/x/../admin",
            "gateway://demo/demo://greeting/./admin",
            "gateway://demo/demo://greeting/x/%2E%2E/admin",
            "gateway://demo/demo%3A%2F%2Fgreeting%2Fadmin",
            "gateway://demo/demo://greeting/%2561dmin",
            "gateway://demo/demo://greeting/%252561%2564min",
        ] {
            assert_eq!(c(spelling), want, "{spelling}");
        }
        assert_ne!(c("demo://greeting/bob"), c("demo://greeting/admin"));
        assert_eq!(c("demo://greeting/a%3Ab"), c("demo://greeting/a:b"));
        assert_eq!(c("file:///a/b/../../../c?x=%41#Y"), "file:///c?x=a#y");
        assert_eq!(c("urn:isbn:0451450523"), "urn:isbn:0451450523");
        assert_eq!(c("a/../b"), "b");
        assert_eq!(c("/a/.."), "/");
        assert_eq!(c("bad%zz%"), "bad%zz%", "invalid escapes stay as they are");
        assert_eq!(c("x://h/%FF"), "x://h/\u{fffd}");
    }

    #[test]
    fn rules_merge_and_match_every_spelling() {
        let mut r = ResourceScopes::default();
        r.insert("demo://greeting/admin", ["admin".to_owned()]);
        r.insert(
            "DEMO://greeting/%61dmin",
            ["audit".to_owned(), "admin".to_owned()],
        );
        assert_eq!(r.len(), 1);
        assert_eq!(
            r.get("demo://greeting/adm%69n"),
            Some(&["admin".to_owned(), "audit".to_owned()][..])
        );
        assert_eq!(r.get("demo://greeting/bob"), None);
        let from: ResourceScopes = HashMap::from([("demo://x", vec!["s".to_owned()])]).into();
        assert_eq!(from.get("Demo://X"), Some(&["s".to_owned()][..]));
    }
}

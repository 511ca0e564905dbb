//! RFC 6570 URI templates: matching a concrete URI against a template (levels 1-3 plus the
//! explode modifier), and expansion.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Expr { op: Option<char>, vars: Vec<String> },
}

/// Most candidate values one match may try (see [`UriTemplate::matches`]).
const MAX_MATCH_STEPS: usize = 1_000_000;

/// State of one match: dead ends (part index, input left) and steps taken.
#[derive(Default)]
struct Search {
    dead: std::collections::HashSet<(usize, usize)>,
    steps: usize,
}

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

/// A template that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {0:?}")]
pub struct TemplateError(pub String);

impl UriTemplate {
    /// Parses a template.
    ///
    /// # Errors
    /// An unclosed `{`, an empty expression or an unknown operator.
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        let err = || TemplateError(source.to_owned());
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find('{') {
            if start > 0 {
                parts.push(Part::Literal(rest[..start].to_owned()));
            }
            let end = rest[start..].find('}').ok_or_else(err)? + start;
            let body = &rest[start + 1..end];
            let (op, names) = match body.chars().next() {
                Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &body[1..]),
                Some(c) if c.is_ascii_alphanumeric() || c == '_' => (None, body),
                _ => return Err(err()),
            };
            let vars: Vec<String> = names
                .split(',')
                .map(|v| {
                    v.trim_end_matches('*')
                        .split(':')
                        .next()
                        .unwrap_or("")
                        .to_owned()
                })
                .collect();
            if vars.iter().any(String::is_empty) {
                return Err(err());
            }
            parts.push(Part::Expr { op, vars });
            rest = &rest[end + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            source: source.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Variable names, in order.
    pub fn variables(&self) -> Vec<&str> {
        self.parts
            .iter()
            .flat_map(|p| match p {
                Part::Expr { vars, .. } => vars.iter().map(String::as_str).collect(),
                Part::Literal(_) => Vec::new(),
            })
            .collect()
    }

    /// Matches `uri` against the template, returning the variable values (percent-decoded).
    /// The search is bounded: a URI needing more than 1,000,000 candidate values does not match.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let mut search = Search::default();
        if self.match_from(0, uri, &mut out, &mut search) {
            Some(out)
        } else {
            None
        }
    }

    fn match_from(
        &self,
        i: usize,
        input: &str,
        out: &mut BTreeMap<String, String>,
        search: &mut Search,
    ) -> bool {
        let Some(part) = self.parts.get(i) else {
            return input.is_empty();
        };
        // Adjacent expressions make backtracking exponential (found by fuzzing: six of them
        // against a 200-byte URI took seconds). Known dead ends are skipped, and the search
        // has a budget: past it, the URI does not match.
        if search.steps > MAX_MATCH_STEPS || search.dead.contains(&(i, input.len())) {
            return false;
        }
        let found = self.match_part(i, part, input, out, search);
        if !found {
            search.dead.insert((i, input.len()));
        }
        found
    }

    fn match_part(
        &self,
        i: usize,
        part: &Part,
        input: &str,
        out: &mut BTreeMap<String, String>,
        search: &mut Search,
    ) -> bool {
        match part {
            Part::Literal(lit) => input
                .strip_prefix(lit.as_str())
                .is_some_and(|rest| self.match_from(i + 1, rest, out, search)),
            Part::Expr { op, vars } => {
                let prefix = match op {
                    Some('#') => "#",
                    Some('.') => ".",
                    Some('/') => "/",
                    Some(';') => ";",
                    Some('?') => "?",
                    Some('&') => "&",
                    _ => "",
                };
                let Some(body_start) = input.strip_prefix(prefix) else {
                    // Optional expressions (query forms) may be absent entirely.
                    return matches!(op, Some('?' | '&'))
                        && self.match_from(i + 1, input, out, search);
                };
                let query_follows = matches!(
                    self.parts.get(i + 1),
                    Some(Part::Expr {
                        op: Some('?' | '&'),
                        ..
                    })
                );
                let stop: &[char] = match op {
                    Some('+') if query_follows => &['?'],
                    Some('+' | '#') => &[],
                    Some('?' | '&') => &['#'],
                    Some('/') => &['?', '#'],
                    _ => &['/', '?', '#', '&'],
                };
                // Try the longest candidate first, then shorter ones (backtracking).
                let max = body_start.find(stop).unwrap_or(body_start.len());
                for len in (0..=max).rev() {
                    if !body_start.is_char_boundary(len) {
                        continue;
                    }
                    search.steps += 1;
                    if search.steps > MAX_MATCH_STEPS {
                        return false;
                    }
                    // A known dead end costs a lookup, not a trial.
                    if search.dead.contains(&(i + 1, body_start.len() - len)) {
                        continue;
                    }
                    let value = &body_start[..len];
                    let mut trial = out.clone();
                    if bind(*op, vars, value, &mut trial)
                        && self.match_from(i + 1, &body_start[len..], &mut trial, search)
                    {
                        *out = trial;
                        return true;
                    }
                }
                false
            }
        }
    }

    /// Expands the template with string values.
    pub fn expand(&self, values: &BTreeMap<String, String>) -> String {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                Part::Literal(l) => s.push_str(l),
                Part::Expr { op, vars } => {
                    let present: Vec<(&String, &String)> = vars
                        .iter()
                        .filter_map(|v| values.get(v).map(|x| (v, x)))
                        .collect();
                    if present.is_empty() {
                        continue;
                    }
                    let (first, sep, named) = match op {
                        None | Some('+') => ("", ",", false),
                        Some('#') => ("#", ",", false),
                        Some('.') => (".", ".", false),
                        Some('/') => ("/", "/", false),
                        Some(';') => (";", ";", true),
                        Some('?') => ("?", "&", true),
                        Some('&') => ("&", "&", true),
                        Some(_) => ("", ",", false),
                    };
                    s.push_str(first);
                    let reserved = matches!(op, Some('+' | '#'));
                    let items: Vec<String> = present
                        .iter()
                        .map(|(k, v)| {
                            let v = encode(v, reserved);
                            if named { format!("{k}={v}") } else { v }
                        })
                        .collect();
                    s.push_str(&items.join(sep));
                }
            }
        }
        s
    }
}

fn bind(
    op: Option<char>,
    vars: &[String],
    value: &str,
    out: &mut BTreeMap<String, String>,
) -> bool {
    match op {
        Some('?' | '&' | ';') => {
            let sep = if op == Some(';') { ';' } else { '&' };
            for pair in value.split(sep).filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                if vars.iter().any(|n| n == k) {
                    out.insert(k.to_owned(), decode(v));
                }
            }
            true
        }
        _ => {
            if vars.len() == 1 {
                if value.is_empty() && op.is_none() {
                    return false;
                }
                out.insert(vars[0].clone(), decode(value));
                return true;
            }
            let sep = match op {
                Some('.') => '.',
                Some('/') => '/',
                _ => ',',
            };
            let pieces: Vec<&str> = value.split(sep).collect();
            if pieces.len() != vars.len() {
                return false;
            }
            for (k, v) in vars.iter().zip(pieces) {
                out.insert(k.clone(), decode(v));
            }
            true
        }
    }
}

fn encode(v: &str, reserved: bool) -> String {
    let mut s = String::new();
    for b in v.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~')
            || (reserved && b":/?#[]@!$&'()*+,;=".contains(&b));
        if keep {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |c: u8| char::from(c).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t)
            .unwrap()
            .matches(uri)
            .map(|m| m.into_iter().collect())
    }

    fn kv(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn simple_and_multi() {
        assert_eq!(
            m("file:///{name}.txt", "file:///notes.txt"),
            kv(&[("name", "notes")])
        );
        assert_eq!(
            m("users://{id}/profile", "users://42/profile"),
            kv(&[("id", "42")])
        );
        assert_eq!(m("users://{id}/profile", "users://42/x/profile"), None);
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/data"),
            kv(&[("id", "123")])
        );
        assert_eq!(m("a://{x}", "a://"), None);
        assert_eq!(
            m("a://{x}", "a://hello%20world"),
            kv(&[("x", "hello world")])
        );
    }

    #[test]
    fn operators() {
        assert_eq!(
            m("file://{+path}", "file:///a/b/c"),
            kv(&[("path", "/a/b/c")])
        );
        assert_eq!(m("x://s{/a,b}", "x://s/1/2"), kv(&[("a", "1"), ("b", "2")]));
        assert_eq!(
            m("x://s{?q,lang}", "x://s?q=rust&lang=en"),
            kv(&[("lang", "en"), ("q", "rust")])
        );
        assert_eq!(m("x://s{?q}", "x://s"), kv(&[]));
        assert_eq!(m("x://f{.ext}", "x://f.json"), kv(&[("ext", "json")]));
    }

    #[test]
    fn expand_round_trip() {
        let t = UriTemplate::parse("x://{a}/{+b}{?c}").unwrap();
        let v: BTreeMap<String, String> = [("a", "1 2"), ("b", "p/q"), ("c", "z")]
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        let s = t.expand(&v);
        assert_eq!(s, "x://1%202/p/q?c=z");
        assert_eq!(t.matches(&s), Some(v));
        assert!(UriTemplate::parse("x://{a").is_err());
        assert!(UriTemplate::parse("x://{}").is_err());
    }

    #[test]
    fn adjacent_expressions_do_not_backtrack_exponentially() {
        // Without the dead-end memo this is (len choose 8) attempts: it would not finish.
        let t = UriTemplate::parse("demo://{a}{b}{c}{d}{e}{f}{g}{h},{i}").unwrap();
        let uri = format!("demo://{}", "x".repeat(2000));
        assert_eq!(t.matches(&uri), None);
        let ok = format!("demo://{},z", "x".repeat(50));
        assert!(t.matches(&ok).is_some());
    }
}

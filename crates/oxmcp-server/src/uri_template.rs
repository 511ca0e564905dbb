//! RFC 6570 URI templates: matching a concrete URI against a template (levels 1-3 plus the
//! explode modifier), and expansion.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Expr { op: Option<char>, vars: Vec<String> },
}

/// The work one match may do, in bytes looked at: this much, plus [`BUDGET_PER_BYTE`] per byte
/// of the URI (see [`UriTemplate::matches`]).
const BUDGET_BASE: usize = 1_000_000;
/// The part of the match budget that grows with the URI.
const BUDGET_PER_BYTE: usize = 16;

/// One match in progress. Values are recorded as byte ranges of the URI and decoded only once
/// the whole template has matched.
struct Search<'a> {
    uri: &'a str,
    /// Dead ends, one bit per (part index, URI position): that part cannot match from there.
    dead: Vec<u64>,
    /// Work done so far, in bytes looked at (every step costs at least one).
    work: usize,
    budget: usize,
    /// The values chosen on the current path: (part index, start, end) in `uri`.
    values: Vec<(usize, usize, usize)>,
}

impl Search<'_> {
    fn bit(&self, part: usize, pos: usize) -> (usize, u64) {
        let n = part * (self.uri.len() + 1) + pos;
        (n / 64, 1 << (n % 64))
    }

    fn is_dead(&self, part: usize, pos: usize) -> bool {
        let (word, mask) = self.bit(part, pos);
        self.dead.get(word).is_some_and(|w| w & mask != 0)
    }

    fn mark_dead(&mut self, part: usize, pos: usize) {
        let (word, mask) = self.bit(part, pos);
        if let Some(w) = self.dead.get_mut(word) {
            *w |= mask;
        }
    }

    /// Charges `bytes` of work; false once the budget is spent.
    fn charge(&mut self, bytes: usize) -> bool {
        self.work = self.work.saturating_add(bytes);
        self.work <= self.budget
    }
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
    ///
    /// The work is linear in the URI's length for templates whose expressions are separated
    /// by literals. Adjacent expressions can need more, so the search is bounded: a URI
    /// needing more than 1,000,000 + 16 × its length bytes of work does not match. Memory:
    /// one bit per template part and URI byte, plus the values found.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        self.matches_counting(uri).0
    }

    /// [`UriTemplate::matches`], also returning the work it did (bytes looked at).
    pub(crate) fn matches_counting(&self, uri: &str) -> (Option<BTreeMap<String, String>>, usize) {
        let states = self.parts.len().saturating_mul(uri.len() + 1);
        let mut search = Search {
            uri,
            dead: vec![0; states.div_ceil(64)],
            work: 0,
            budget: BUDGET_BASE.saturating_add(BUDGET_PER_BYTE.saturating_mul(uri.len())),
            values: Vec::new(),
        };
        if !self.match_from(0, 0, &mut search) {
            return (None, search.work);
        }
        let mut out = BTreeMap::new();
        for &(i, start, end) in &search.values {
            if let (Some(Part::Expr { op, vars }), Some(value)) =
                (self.parts.get(i), uri.get(start..end))
            {
                bind(*op, vars, value, &mut out);
            }
        }
        (Some(out), search.work)
    }

    /// Whether parts `i..` match the URI from byte `pos` on; on success `search.values` holds
    /// the values chosen.
    fn match_from(&self, i: usize, pos: usize, search: &mut Search<'_>) -> bool {
        if !search.charge(1) {
            return false;
        }
        let Some(part) = self.parts.get(i) else {
            return pos == search.uri.len();
        };
        // Adjacent expressions make backtracking exponential (found by fuzzing: six of them
        // against a 200-byte URI took seconds). Known dead ends are skipped, and the search
        // has a budget: past it, the URI does not match.
        if search.is_dead(i, pos) {
            return false;
        }
        let chosen = search.values.len();
        let found = match part {
            Part::Literal(lit) => {
                search.charge(lit.len())
                    && search
                        .uri
                        .get(pos..)
                        .is_some_and(|rest| rest.starts_with(lit.as_str()))
                    && self.match_from(i + 1, pos + lit.len(), search)
            }
            Part::Expr { op, vars } => self.match_expr(i, *op, vars, pos, search),
        };
        if !found {
            search.values.truncate(chosen);
            search.mark_dead(i, pos);
        }
        found
    }

    /// Tries the values expression `i` can take at `pos`, longest first.
    fn match_expr(
        &self,
        i: usize,
        op: Option<char>,
        vars: &[String],
        pos: usize,
        search: &mut Search<'_>,
    ) -> bool {
        let uri = search.uri;
        let prefix = expr_prefix(op);
        let Some(rest) = uri.get(pos..) else {
            return false;
        };
        if !rest.starts_with(prefix) {
            // Optional expressions (query forms) may be absent entirely.
            return matches!(op, Some('?' | '&')) && self.match_from(i + 1, pos, search);
        }
        let start = pos + prefix.len();
        let body = &rest.as_bytes()[prefix.len()..];
        let query_follows = matches!(
            self.parts.get(i + 1),
            Some(Part::Expr {
                op: Some('?' | '&'),
                ..
            })
        );
        let stop = value_stops(op, query_follows);
        let max = if stop.is_empty() {
            body.len()
        } else {
            body.iter()
                .position(|b| stop.contains(b))
                .unwrap_or(body.len())
        };
        if !search.charge(max) {
            return false;
        }
        let last = i + 1 == self.parts.len();
        if last && max < body.len() {
            return false; // the last expression must take the rest of the URI
        }
        // Several variables split one value on a separator: count it once, then keep the
        // count as candidates get shorter (each candidate costs O(1), not its length).
        let multi = vars.len() > 1 && !matches!(op, Some('?' | '&' | ';'));
        let sep = value_separator(op);
        let mut seps = if multi {
            body[..max].iter().filter(|&&b| b == sep).count()
        } else {
            0
        };
        let shortest = if last { max } else { 0 };
        // Try the longest candidate first, then shorter ones (backtracking).
        for len in (shortest..=max).rev() {
            if multi && len < max && body[len] == sep {
                seps -= 1; // `body[len]` just left the candidate
            }
            if !search.charge(1) {
                return false;
            }
            // Not a char boundary, or a known dead end: no trial.
            if !uri.is_char_boundary(start + len) || search.is_dead(i + 1, start + len) {
                continue;
            }
            let fits = match op {
                Some('?' | '&' | ';') => true,
                _ if multi => seps + 1 == vars.len(),
                None => len > 0,
                _ => true,
            };
            if !fits {
                continue;
            }
            search.values.push((i, start, start + len));
            if self.match_from(i + 1, start + len, search) {
                return true;
            }
            search.values.pop();
        }
        false
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

/// Binds a matched value (already known to fit: see `match_expr`) to its variables.
fn bind(op: Option<char>, vars: &[String], value: &str, out: &mut BTreeMap<String, String>) {
    match op {
        Some('?' | '&' | ';') => {
            let sep = if op == Some(';') { ';' } else { '&' };
            for pair in value.split(sep).filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                if vars.iter().any(|n| n == k) {
                    out.insert(k.to_owned(), decode(v));
                }
            }
        }
        _ => {
            let sep = match op {
                Some('.') => '.',
                Some('/') => '/',
                _ => ',',
            };
            if let [var] = vars {
                out.insert(var.clone(), decode(value));
                return;
            }
            for (k, v) in vars.iter().zip(value.split(sep)) {
                out.insert(k.clone(), decode(v));
            }
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

/// What an expression of operator `op` starts with in a URI.
fn expr_prefix(op: Option<char>) -> &'static str {
    match op {
        Some('#') => "#",
        Some('.') => ".",
        Some('/') => "/",
        Some(';') => ";",
        Some('?') => "?",
        Some('&') => "&",
        _ => "",
    }
}

/// The bytes that end the value of an expression of operator `op` (none: it may take the
/// rest of the URI); a `+` expression stops at a `?` when a query expression follows it.
fn value_stops(op: Option<char>, query_follows: bool) -> &'static [u8] {
    match op {
        Some('+') if query_follows => b"?",
        Some('+' | '#') => b"",
        Some('?' | '&') => b"#",
        Some('/') => b"?#",
        _ => b"/?#&",
    }
}

/// The byte between the values of an expression of operator `op` with several variables.
fn value_separator(op: Option<char>) -> u8 {
    match op {
        Some('.') => b'.',
        Some('/') => b'/',
        _ => b',',
    }
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
        let (found, work) = t.matches_counting(&uri);
        assert_eq!(found, None);
        let budget = BUDGET_BASE + BUDGET_PER_BYTE * uri.len();
        assert!(work <= budget + uri.len(), "{work} steps: the budget holds");
        let ok = format!("demo://{},z", "x".repeat(50));
        assert!(t.matches(&ok).is_some());
    }

    #[test]
    fn matching_work_is_linear_in_the_uri_length() {
        // Once 0.08 s of CPU at 10,000 bytes and 35 s at 200,000: every candidate length was
        // decoded (and the bindings cloned) before the rest of the template was tried.
        let t = UriTemplate::parse("demo://greeting/{name}").unwrap();
        let n = 200_000;
        let miss = format!("demo://greeting/{}/", "a".repeat(n));
        let (found, work) = t.matches_counting(&miss);
        assert_eq!(found, None);
        assert!(
            work <= 4 * miss.len(),
            "{work} steps for {} bytes",
            miss.len()
        );
        let hit = format!("demo://greeting/{}", "a%20".repeat(n / 4));
        let (found, work) = t.matches_counting(&hit);
        assert_eq!(found.map(|v| v["name"].len()), Some(n / 2));
        assert!(
            work <= 4 * hit.len(),
            "{work} steps for {} bytes",
            hit.len()
        );
        // Other operators, matching or not: a few steps per byte (the literal after an
        // expression is compared at each candidate end).
        for (t, uri) in [
            (
                "file://{+path}.txt",
                format!("file:///{}", "a.".repeat(n / 2)),
            ),
            (
                "file://{+path}.txt",
                format!("file:///{}.txt", "a.".repeat(n / 2)),
            ),
            ("x://s{/a,b}", format!("x://s/{}/b/c", "a".repeat(n))),
            ("x://s{/a,b}/c", format!("x://s/{}/b/c", "a".repeat(n))),
            (
                "x://s{?q,lang}",
                format!("x://s?q={}&lang=en", "a".repeat(n)),
            ),
        ] {
            let (_, work) = UriTemplate::parse(t).unwrap().matches_counting(&uri);
            assert!(
                work <= 8 * uri.len(),
                "{t}: {work} steps for {} bytes",
                uri.len()
            );
        }
    }
}

//! Long strings of a JSON text found ahead of serde_json, with `memchr`: the base64 of a
//! 1 MiB blob is 1.4 MB of one string, and serde_json's scan for its end (eight bytes at a
//! time) was 14% of a server's time answering a 1 MiB read in protobuf. The text serde_json
//! parses has each long string emptied (`""`), and [`Shortened::restore`] gives an emptied
//! string's contents back by where serde_json read it: only a string borrowed from the
//! shortened text at an emptied one's place is one, so no contents of the text can be taken
//! for it.

use std::cell::Cell;
use std::ops::Range;

/// Strings of at least this many bytes (and no escapes) are emptied.
const LONG: usize = 4096;

/// Texts shorter than this are parsed as they are: they cannot hold much in long strings.
const WORTH_IT: usize = 16 * 1024;

/// Short strings looked at: past this many, the rest of the text is left as it is (and a
/// text with no long string before then is parsed as it is), so that a large text of many
/// short strings costs one bounded scan more, not two.
const SHORT_BUDGET: usize = 4096;

/// A JSON text with its long strings emptied.
pub(crate) struct Shortened<'t> {
    original: &'t str,
    /// The text serde_json parses.
    pub(crate) text: String,
    /// Each emptied string: where its (empty) contents begin in `text`, and where its
    /// contents are in `original`; in the order of the text.
    emptied: Vec<(usize, Range<usize>)>,
    /// Emptied strings given back so far.
    restored: Cell<usize>,
}

impl<'t> Shortened<'t> {
    /// `text` with its long strings emptied; `None` when it has none worth it (or is not
    /// JSON as far as strings go: then serde_json says what is wrong with it).
    pub(crate) fn of(text: &'t str) -> Option<Self> {
        if text.len() < WORTH_IT {
            return None;
        }
        let long = long_strings(text.as_bytes())?;
        let mut short =
            String::with_capacity(text.len() - long.iter().map(Range::len).sum::<usize>());
        let mut emptied = Vec::with_capacity(long.len());
        let mut at = 0;
        for contents in long {
            short.push_str(&text[at..contents.start]);
            emptied.push((short.len(), contents.clone()));
            at = contents.end;
        }
        short.push_str(&text[at..]);
        Some(Self {
            original: text,
            text: short,
            emptied,
            restored: Cell::new(0),
        })
    }

    /// The contents of the emptied string that `s` is, if it is one: `s` borrowed from
    /// [`Self::text`] by serde_json, empty, where an emptied string's contents begin.
    /// The contents have no escapes; control characters in them are the caller's to refuse
    /// (unless they are decoded as base64, whose alphabet has none).
    pub(crate) fn restore(&self, s: &str) -> Option<&'t str> {
        if !s.is_empty() {
            return None;
        }
        let offset = (s.as_ptr() as usize).checked_sub(self.text.as_ptr() as usize)?;
        let i = self
            .emptied
            .binary_search_by_key(&offset, |(at, _)| *at)
            .ok()?;
        self.restored.set(self.restored.get() + 1);
        Some(&self.original[self.emptied[i].1.clone()])
    }

    /// Whether every emptied string was given back, once: else one was read where its
    /// contents are not restored (a key, a method, an id), and the text must be parsed as
    /// it is.
    pub(crate) fn complete(&self) -> bool {
        self.restored.get() == self.emptied.len()
    }
}

/// Whether a long string's contents may stand in JSON as they are: no control characters.
/// Branch-free over blocks of 64 bytes, so that the compiler vectorises it (the long text of
/// a text resource comes here).
pub(crate) fn plain(contents: &str) -> bool {
    contents
        .as_bytes()
        .chunks(64)
        .all(|block| block.iter().fold(true, |ok, &b| ok & (b >= 0x20)))
}

/// The contents of the long strings of `text` (no escapes in them), in order, up to the
/// [`SHORT_BUDGET`]th short string; `None` when there are none, or when the text has a
/// backslash outside a string or an unterminated string.
fn long_strings(text: &[u8]) -> Option<Vec<Range<usize>>> {
    let mut long = Vec::new();
    let mut short = 0;
    let mut at = 0;
    while let Some(open) = memchr::memchr2(b'"', b'\\', &text[at..]) {
        let open = at + open;
        if text[open] == b'\\' {
            return None;
        }
        let start = open + 1;
        let mut escaped = false;
        let mut from = start;
        let end = loop {
            let i = from + memchr::memchr2(b'"', b'\\', &text[from..])?;
            if text[i] == b'"' {
                break i;
            }
            escaped = true;
            // An escape is a backslash and one character (`\uXXXX`'s hex digits hold no
            // quote or backslash).
            from = i + 2;
            if from > text.len() {
                return None;
            }
        };
        at = end + 1;
        if !escaped && end - start >= LONG {
            long.push(start..end);
        } else {
            short += 1;
            if short > SHORT_BUDGET {
                // Outside a string here: what follows is parsed as it is.
                break;
            }
        }
    }
    (!long.is_empty()).then_some(long)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(n: usize) -> String {
        "QUJD".repeat(n / 4)
    }

    #[test]
    fn long_strings_are_emptied_and_given_back_by_place() {
        let blob = long(LONG * 5);
        let text = format!(r#"{{"a":"x\"y","b":"{blob}","c":"","d":"{blob}","e":"\\"}}"#);
        let s = Shortened::of(&text).unwrap();
        assert_eq!(s.text, r#"{"a":"x\"y","b":"","c":"","d":"","e":"\\"}"#);
        let b = s.text.find(r#""b":""#).unwrap() + 5;
        let c = s.text.find(r#""c":""#).unwrap() + 5;
        // The genuine empty string at c is not an emptied one; the one at b is.
        assert_eq!(s.restore(&s.text[c..c]), None);
        assert_eq!(s.restore(&s.text[b..b]), Some(blob.as_str()));
        assert!(!s.complete());
        let d = s.text.find(r#""d":""#).unwrap() + 5;
        assert_eq!(s.restore(&s.text[d..d]), Some(blob.as_str()));
        assert!(s.complete());
        // A string from elsewhere, or one not empty, is none.
        assert_eq!(s.restore(""), None);
        assert_eq!(s.restore(&s.text[b - 2..b]), None);
    }

    #[test]
    fn texts_with_nothing_to_empty_are_left_alone() {
        let blob = long(LONG * 5);
        // Short texts, escaped long strings, unterminated strings, stray backslashes.
        assert!(Shortened::of(r#"{"a":"b"}"#).is_none());
        let escaped = format!(r#"{{"a":"\n{blob}"}}"#);
        assert!(Shortened::of(&escaped).is_none());
        assert!(Shortened::of(&format!(r#"{{"a":"{blob}}}"#)).is_none());
        assert!(Shortened::of(&format!(r#"{{"a":\"{blob}"}}"#)).is_none());
        assert!(Shortened::of(&format!(r#"{{"a":"{blob}\"#)).is_none());
        // Many short strings before any long one: not scanned to the end.
        let many = format!(r#"[{}"{blob}"]"#, r#""s","#.repeat(SHORT_BUDGET + 1));
        assert!(Shortened::of(&many).is_none());
        let few = format!(r#"[{}"{blob}"]"#, r#""s","#.repeat(SHORT_BUDGET - 1));
        assert!(Shortened::of(&few).is_some());
        // After a long one, the scan stops at the budget and leaves the rest as it is.
        let after = format!(
            r#"["{blob}",{}"{blob}"]"#,
            r#""s","#.repeat(SHORT_BUDGET + 1)
        );
        let s = Shortened::of(&after).unwrap();
        assert_eq!(s.emptied.len(), 1);
        assert_eq!(s.text.len(), after.len() - blob.len());
        assert!(s.text.starts_with(r#"["","s","#) && s.text.ends_with(&format!(r#""{blob}"]"#)));
    }

    #[test]
    fn control_characters_are_not_plain() {
        assert!(plain("AAEC"));
        assert!(!plain("AA\nEC"));
        assert!(!plain("\u{1f}"));
        assert!(plain("\u{7f}é"));
    }
}

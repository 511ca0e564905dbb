//! Client text in error messages: only a short prefix of it, so an error never carries (or
//! logs) megabytes of what a client sent.

/// The most characters of client text an error message repeats.
pub(crate) const ECHO_CHARS: usize = 64;

/// `text` whole when it has at most [`ECHO_CHARS`] characters, else its first
/// [`ECHO_CHARS`] characters followed by "…".
pub(crate) fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_whole_long_text_is_a_prefix() {
        assert_eq!(echo("demo://readme"), "demo://readme");
        let exact = "é".repeat(ECHO_CHARS);
        assert_eq!(echo(&exact), exact);
        let long = "é".repeat(100_000);
        let e = echo(&long);
        assert_eq!(e.chars().count(), ECHO_CHARS + 1);
        assert!(e.ends_with('…') && long.starts_with(e.trim_end_matches('…')));
    }
}

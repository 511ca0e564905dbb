//! Long base64 strings (`blob`, `data`) written to JSON text without serde_json's escaping
//! pass. serde_json looks at each byte of a string to escape it; for a 1 MiB resource read
//! that pass was about two fifths of a server's time, and base64 never needs it.
//!
//! A string is written as it is only when all of these hold, and then the JSON is the same,
//! byte for byte, as serde_json would have written:
//! - it is long enough for the pass to matter ([`FROM_LEN`]);
//! - every byte is printable ASCII other than `"` and `\` (nothing to escape, under any
//!   formatter that leaves printable ASCII alone);
//! - the serializer is serde_json's text serializer;
//! - serde_json writes a raw value given the way [`Verbatim`] gives it (its raw-value
//!   protocol, checked once per process by [`raw_writes_work`]).
//!
//! Otherwise the string is serialized as any other.

use std::sync::OnceLock;

use serde::Serialize as _;
use serde::Serializer;
use serde::ser::SerializeStruct;

/// Strings shorter than this are escaped as usual: for them the check costs about as much
/// as the pass it saves.
pub(crate) const FROM_LEN: usize = 256;

/// The name serde_json's serializer knows a raw value by (as its own `RawValue` serializes).
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// JSON text pieces that serde_json's serializer writes one after the other, unchanged.
struct Verbatim<'a>(&'a [&'a str]);

impl serde::Serialize for Verbatim<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut raw = s.serialize_struct(RAW_TOKEN, 1)?;
        for piece in self.0 {
            raw.serialize_field(RAW_TOKEN, piece)?;
        }
        raw.end()
    }
}

/// Whether serde_json, as linked, writes a [`Verbatim`] as its pieces (asked once).
fn raw_writes_work() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        serde_json::to_string(&Verbatim(&["\"", "ab", "\""])).is_ok_and(|s| s == "\"ab\"")
    })
}

/// Whether `S` is serde_json's serializer of JSON text (any writer, any formatter).
fn is_json_text<S: Serializer>() -> bool {
    std::any::type_name::<S>().starts_with("&mut serde_json::ser::Serializer<")
}

/// Whether `text` has only printable ASCII other than `"` and `\`: nothing JSON escapes.
/// Branch-free over blocks of 64 bytes, so that the compiler vectorises it.
fn nothing_to_escape(text: &str) -> bool {
    text.as_bytes().chunks(64).all(|block| {
        block.iter().fold(true, |ok, &b| {
            ok & (0x20..0x7f).contains(&b) & (b != b'"') & (b != b'\\')
        })
    })
}

/// Serializes base64 `text` as a JSON string: written as it is where that gives the same
/// JSON (see the module's doc), escaped as usual otherwise.
pub(crate) fn base64<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    if text.len() >= FROM_LEN && is_json_text::<S>() && nothing_to_escape(text) && raw_writes_work()
    {
        return Verbatim(&["\"", text, "\""]).serialize(s);
    }
    s.serialize_str(text)
}

/// [`base64`] of an optional string (a `None` is skipped by the field's attributes).
pub(crate) fn base64_opt<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match text {
        Some(text) => base64(text, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Holder<'a> {
        #[serde(serialize_with = "base64")]
        data: &'a str,
    }

    fn b64ish(len: usize) -> String {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        (0..len).map(|i| alphabet[(i * 7) % 64] as char).collect()
    }

    #[test]
    fn serde_json_writes_raw_values_as_this_module_gives_them() {
        assert!(raw_writes_work());
        assert!(is_json_text::<&mut serde_json::Serializer<&mut Vec<u8>>>());
        assert!(is_json_text::<
            &mut serde_json::Serializer<Vec<u8>, serde_json::ser::PrettyFormatter<'static>>,
        >());
        assert!(!is_json_text::<serde_json::value::Serializer>());
    }

    /// Whatever the string, the JSON is the one serde_json writes for a plain `&str`, in
    /// every serializer: compact and pretty text, and `Value`.
    #[test]
    fn the_json_is_the_same_as_serde_jsons() {
        let long = b64ish(4096);
        let mut cases = vec![
            String::new(),
            "abc".to_owned(),
            b64ish(FROM_LEN - 1),
            b64ish(FROM_LEN),
            long.clone(),
            format!("{long}=="),
        ];
        // Every byte JSON escapes, and some it does not, at the start, middle and end of a
        // long string.
        for odd in [
            "\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", "é", "\u{2028}", "😀",
        ] {
            for at in [0, long.len() / 2, long.len()] {
                let mut s = long.clone();
                s.insert_str(at, odd);
                cases.push(s);
            }
        }
        for text in &cases {
            let ours = Holder { data: text };
            let plain = serde_json::json!({ "data": text });
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&plain).unwrap(),
                "{:?}",
                &text[..text.len().min(40)]
            );
            assert_eq!(
                serde_json::to_string_pretty(&ours).unwrap(),
                serde_json::to_string_pretty(&plain).unwrap()
            );
            assert_eq!(serde_json::to_value(&ours).unwrap(), plain);
        }
    }

    /// Which way a string went: through a formatter that writes escaped strings in lower
    /// case, a string written as it is keeps its capitals.
    #[test]
    fn long_plain_strings_skip_the_escaping_pass_and_no_other_does() {
        struct Lower;
        impl serde_json::ser::Formatter for Lower {
            fn write_string_fragment<W: ?Sized + std::io::Write>(
                &mut self,
                w: &mut W,
                fragment: &str,
            ) -> std::io::Result<()> {
                w.write_all(fragment.to_ascii_lowercase().as_bytes())
            }
        }
        let written = |text: &str| {
            let mut out = Vec::new();
            let mut ser = serde_json::Serializer::with_formatter(&mut out, Lower);
            serde::Serialize::serialize(&Holder { data: text }, &mut ser).unwrap();
            String::from_utf8(out).unwrap()
        };
        let long = b64ish(FROM_LEN);
        assert_eq!(written(&long), format!(r#"{{"data":"{long}"}}"#));
        for escaped in [
            b64ish(FROM_LEN - 1),
            format!("{long}\""),
            format!("é{long}"),
        ] {
            assert!(!written(&escaped).contains('A'), "{escaped:?} went raw");
        }
    }

    #[test]
    fn only_printable_ascii_but_quote_and_backslash_is_left_alone() {
        for b in 0u8..=127 {
            let mut s = b64ish(130);
            s.insert(65, b as char);
            let expected = (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\';
            assert_eq!(nothing_to_escape(&s), expected, "byte {b:#x}");
        }
        assert!(!nothing_to_escape(&format!("{}é", b64ish(300))));
    }
}

//! Long base64 strings (`blob`, `data`) written to JSON text without serde_json's escaping
//! pass. serde_json looks at each byte of a string to escape it; for a 1 MiB resource read
//! that pass was about two fifths of a server's time, and base64 never needs it.
//!
//! A string is written as it is only when all of these hold, and then the JSON is the same,
//! byte for byte, as serde_json would have written:
//! - it is long enough for the pass to matter ([`FROM_LEN`]);
//! - every byte is printable ASCII other than `"` and `\` (nothing to escape);
//! - the serializer is serde_json's text serializer with one of serde_json's own formatters
//!   (compact or pretty), which write a raw fragment exactly as they would write the string
//!   (a formatter of someone else's may treat strings and raw fragments differently: a
//!   canonical-JSON formatter parses each raw fragment);
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

/// Whether `S` is serde_json's serializer of JSON text (any writer) with its compact or
/// pretty formatter. From its type's name: the writer, then the formatter unless it is the
/// default (compact), which the name leaves out. A name read wrongly says no.
fn is_json_text<S: Serializer>() -> bool {
    let Some(params) = std::any::type_name::<S>()
        .strip_prefix("&mut serde_json::ser::Serializer<")
        .and_then(|rest| rest.strip_suffix('>'))
    else {
        return false;
    };
    let mut depth = 0usize;
    let mut last_comma = None;
    for (i, c) in params.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => last_comma = Some(i),
            _ => {}
        }
    }
    match last_comma {
        None => true,
        Some(i) => matches!(
            params[i + 1..].trim(),
            "serde_json::ser::CompactFormatter" | "serde_json::ser::PrettyFormatter<'_>"
        ),
    }
}

#[cfg(test)]
thread_local! {
    /// Strings written as they are, on this thread (for the tests).
    static WRITTEN_RAW: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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
        #[cfg(test)]
        WRITTEN_RAW.with(|n| n.set(n.get() + 1));
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
        assert!(is_json_text::<
            &mut serde_json::Serializer<
                std::io::BufWriter<std::io::Cursor<Vec<u8>>>,
                serde_json::ser::CompactFormatter,
            >,
        >());
        assert!(!is_json_text::<serde_json::value::Serializer>());
        struct Other;
        impl serde_json::ser::Formatter for Other {}
        assert!(!is_json_text::<&mut serde_json::Serializer<Vec<u8>, Other>>());
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

    fn raw_writes_during(f: impl FnOnce()) -> usize {
        let before = WRITTEN_RAW.with(std::cell::Cell::get);
        f();
        WRITTEN_RAW.with(std::cell::Cell::get) - before
    }

    #[test]
    fn long_plain_strings_skip_the_escaping_pass_and_no_other_does() {
        let long = b64ish(FROM_LEN);
        let once =
            |text: &str| raw_writes_during(|| drop(serde_json::to_string(&Holder { data: text })));
        assert_eq!(once(&long), 1);
        assert_eq!(
            raw_writes_during(|| drop(serde_json::to_string_pretty(&Holder { data: &long }))),
            1
        );
        assert_eq!(
            raw_writes_during(|| drop(serde_json::to_vec(&Holder { data: &long }))),
            1
        );
        for escaped in [
            b64ish(FROM_LEN - 1),
            format!("{long}\""),
            format!("é{long}"),
        ] {
            assert_eq!(once(&escaped), 0, "{escaped:?} went raw");
        }
        assert_eq!(
            raw_writes_during(|| drop(serde_json::to_value(&Holder { data: &long }))),
            0
        );
    }

    /// A formatter that is not serde_json's own gets strings as strings: one that parses
    /// each raw fragment (as canonical-JSON formatters do) still works.
    #[test]
    fn other_formatters_get_strings_as_strings() {
        struct Parsing;
        impl serde_json::ser::Formatter for Parsing {
            fn write_raw_fragment<W: ?Sized + std::io::Write>(
                &mut self,
                w: &mut W,
                fragment: &str,
            ) -> std::io::Result<()> {
                serde_json::from_str::<serde_json::Value>(fragment)
                    .map_err(std::io::Error::other)?;
                w.write_all(fragment.as_bytes())
            }
        }
        let long = b64ish(FROM_LEN * 2);
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Parsing);
        let raw = raw_writes_during(|| {
            serde::Serialize::serialize(&Holder { data: &long }, &mut ser).unwrap();
        });
        assert_eq!(raw, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(r#"{{"data":"{long}"}}"#)
        );
    }

    /// Through the protocol's types: an image (tagged by `type`, with flattened unknown
    /// members) and an embedded resource's blob.
    #[test]
    fn the_protocols_types_write_the_same_json() {
        let data = b64ish(3000);
        let image = crate::Content::Image(crate::MediaContent {
            data: data.clone(),
            mime_type: "image/png".to_owned(),
            ..Default::default()
        });
        let blob = crate::ResourceContents {
            uri: "file:///x.bin".to_owned(),
            blob: Some(data.clone()),
            ..Default::default()
        };
        let expected_image =
            serde_json::json!({"type": "image", "data": data, "mimeType": "image/png"});
        let expected_blob = serde_json::json!({"uri": "file:///x.bin", "blob": data});
        let raw = raw_writes_during(|| {
            for (value, expected) in [
                (serde_json::to_value(&image).unwrap(), &expected_image),
                (serde_json::to_value(&blob).unwrap(), &expected_blob),
            ] {
                assert_eq!(&value, expected);
            }
            let text: serde_json::Value =
                serde_json::from_str(&serde_json::to_string(&image).unwrap()).unwrap();
            assert_eq!(text, expected_image);
            let text: serde_json::Value =
                serde_json::from_str(&serde_json::to_string_pretty(&blob).unwrap()).unwrap();
            assert_eq!(text, expected_blob);
        });
        assert_eq!(raw, 2, "the two text serializations went raw");
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

//! Base64 of binary contents, both ways, with the SIMD instructions the CPU has (found at
//! run time): on a 1 MiB blob the scalar `base64` crate was a fifth of a server's time.

use base64_simd::STANDARD;

/// The bytes of canonical base64 text: `None` for text that is not base64, or that another
/// text would decode to the same bytes (padding missing, or bits after the last byte set),
/// so that writing the bytes out again gives the same text.
pub(crate) fn canonical(text: &[u8]) -> Option<Vec<u8>> {
    // Decoding with padding required and trailing bits refused is already canonical: one
    // text per byte string. The test below checks that against encoding the bytes again.
    STANDARD.decode_to_vec(text).ok()
}

/// `bytes` as base64, appended to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    STANDARD.encode_append(bytes, out);
}

/// `bytes` as base64.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STANDARD.encode_to_string(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as SCALAR;

    /// Every text of up to 8 characters (two groups of four) from an alphabet with the cases
    /// that matter is taken exactly when decoding it and encoding the bytes again gives it
    /// back. The characters: `A` (0), `E` (low two bits clear, low four not), `B` and `/`
    /// (low bits set), padding, and a character outside base64.
    #[test]
    fn canonical_is_decode_then_the_same_text_again() {
        const CHARS: &[u8] = b"AEB/= ";
        let mut text = Vec::new();
        let mut checked = 0;
        for len in 0..=8u32 {
            for mut n in 0..CHARS.len().pow(len) {
                text.clear();
                for _ in 0..len {
                    text.push(CHARS[n % CHARS.len()]);
                    n /= CHARS.len();
                }
                let expected = SCALAR
                    .decode(&text)
                    .ok()
                    .filter(|b| SCALAR.encode(b).as_bytes() == text);
                assert_eq!(
                    canonical(&text),
                    expected,
                    "{:?}",
                    String::from_utf8_lossy(&text)
                );
                checked += 1;
            }
        }
        assert_eq!(checked, (0..=8).map(|l| 6usize.pow(l)).sum::<usize>());
    }

    /// The paths for long texts (eight at a time, then SIMD past 38 characters): every byte
    /// value at every position of canonical texts of several lengths, with and without
    /// padding, is taken exactly as the scalar decoder with the re-encoding check takes it.
    #[test]
    fn long_texts_are_canonical_at_every_position() {
        for n in [30, 31, 32, 45, 46, 47, 96, 100, 101] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let good = SCALAR.encode(&bytes).into_bytes();
            assert_eq!(canonical(&good).as_deref(), Some(&bytes[..]));
            for at in 0..good.len() {
                let mut text = good.clone();
                for b in 0..=255u8 {
                    text[at] = b;
                    let expected = SCALAR
                        .decode(&text)
                        .ok()
                        .filter(|d| SCALAR.encode(d).as_bytes() == text);
                    assert_eq!(canonical(&text), expected, "length {n}, byte {b} at {at}");
                }
            }
        }
    }

    #[test]
    fn encoding_is_the_scalar_encoding() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for n in [0, 1, 2, 3, 4, 31, 32, 33, 95, 96, 97, 1000] {
            let mut out = "x".to_owned();
            encode_into(&bytes[..n], &mut out);
            assert_eq!(out[1..], SCALAR.encode(&bytes[..n]));
            assert_eq!(encode(&bytes[..n]), SCALAR.encode(&bytes[..n]));
            assert_eq!(
                canonical(&out.as_bytes()[1..]).as_deref(),
                Some(&bytes[..n])
            );
        }
    }
}

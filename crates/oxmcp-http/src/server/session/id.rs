//! Session ids and other random tokens: hex digits of the OS's random bytes.

/// Random hex string of `bytes` bytes from the OS CSPRNG; `None` when the OS has no
/// randomness to give (session ids must then not be made at all: fail closed).
pub(crate) fn random_hex(bytes: usize) -> Option<String> {
    random_hex_from(bytes, |buf| getrandom::fill(buf).is_ok())
}

/// [`random_hex`] over any source of random bytes (`fill` says whether it succeeded).
fn random_hex_from(bytes: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> Option<String> {
    let mut buf = vec![0u8; bytes];
    if !fill(&mut buf) {
        tracing::error!("the OS random number generator failed; no session id is made");
        return None;
    }
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes * 2);
    for b in buf {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    Some(hex)
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_session_id_without_randomness() {
        assert_eq!(super::random_hex_from(16, |_| false), None);
        let id = super::random_hex_from(16, |b| {
            b.fill(7);
            true
        });
        assert_eq!(id.as_deref(), Some("07".repeat(16).as_str()));
    }

    #[test]
    fn every_byte_is_two_lowercase_hex_digits() {
        let id = super::random_hex_from(256, |b| {
            for (x, n) in b.iter_mut().zip(0u8..=255) {
                *x = n;
            }
            true
        });
        let expected: String = (0u8..=255).map(|b| format!("{b:02x}")).collect();
        assert_eq!(id.as_deref(), Some(expected.as_str()));
    }
}

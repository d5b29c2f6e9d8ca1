//! Percent-encoding for the `urlencode` and `urldecode` template filters.

/// `text` with every byte but ASCII letters, digits and `-._~` written as `%XX` (RFC 3986's
/// unreserved characters stay as they are).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `text` with `%XX` escapes decoded and `+` read as a space (form encoding); a `%` not followed
/// by two hex digits stays as it is. `None` when the decoded bytes are not UTF-8.
pub fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
                continue;
            }
            (b'+', _) => out.push(b' '),
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_decodes_forms() {
        for text in ["a b&c=d/é?", "", "-._~", "100%"] {
            assert_eq!(decode(&encode(text)).as_deref(), Some(text), "{text:?}");
        }
        assert_eq!(encode("a b/é"), "a%20b%2F%C3%A9");
        assert_eq!(decode("a+b%2fc%zz%").as_deref(), Some("a b/c%zz%"));
        assert_eq!(decode("%FF"), None, "not UTF-8");
    }
}

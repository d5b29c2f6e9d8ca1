//! The checks a pattern match must also pass before it counts: checksums (Luhn, IBAN), the
//! entropy of an assigned value, the class of an IP address.

/// Shannon entropy of `s`, in bits per character (over its bytes).
pub fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// An assigned value that looks like a real secret: long enough, varied enough, and not a
/// placeholder, a variable, a call or a path expression of code.
pub fn secret_value(value: &str) -> bool {
    let v = value.trim_matches(|c| c == '"' || c == '\'');
    if v.len() < 8 || v.bytes().any(|b| b"()[]{}$<>%*`".contains(&b)) {
        return false;
    }
    if v.starts_with("os.") || v.starts_with("process.") || v.starts_with("self.") {
        return false;
    }
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = v.bytes().any(|b| b.is_ascii_alphabetic());
    has_digit && has_alpha && entropy(v) >= 3.0
}

/// The digits of `s` pass the Luhn check, are 13 to 19 long, and start like a card number of
/// a major network (Visa, Mastercard, American Express, Discover, JCB, Diners, UnionPay).
pub fn payment_card(s: &str) -> bool {
    let digits: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) || digits.iter().all(|&d| d == digits[0]) {
        return false;
    }
    let prefix = |n: usize| digits.iter().take(n).fold(0u32, |acc, d| acc * 10 + d);
    let network = digits[0] == 4
        || (51..=55).contains(&prefix(2))
        || (2221..=2720).contains(&prefix(4))
        || matches!(prefix(2), 34 | 37 | 36 | 38 | 62 | 65)
        || prefix(4) == 6011
        || (3528..=3589).contains(&prefix(4));
    network && luhn(&digits)
}

fn luhn(digits: &[u32]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 {
                    x - 9
                } else {
                    x
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// IBAN lengths by country (ISO 13616 registry).
#[rustfmt::skip]
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24), ("AE", 23), ("AL", 28), ("AT", 20), ("AZ", 28), ("BA", 20), ("BE", 16),
    ("BG", 22), ("BH", 22), ("BR", 29), ("CH", 21), ("CR", 22), ("CY", 28), ("CZ", 24),
    ("DE", 22), ("DK", 18), ("DO", 28), ("EE", 20), ("EG", 29), ("ES", 24), ("FI", 18),
    ("FO", 18), ("FR", 27), ("GB", 22), ("GE", 22), ("GI", 23), ("GL", 18), ("GR", 27),
    ("GT", 28), ("HR", 21), ("HU", 28), ("IE", 22), ("IL", 23), ("IS", 26), ("IT", 27),
    ("JO", 30), ("KW", 30), ("KZ", 20), ("LB", 28), ("LI", 21), ("LT", 20), ("LU", 20),
    ("LV", 21), ("MC", 27), ("MD", 24), ("ME", 22), ("MK", 19), ("MR", 27), ("MT", 31),
    ("MU", 30), ("NL", 18), ("NO", 15), ("PK", 24), ("PL", 28), ("PS", 29), ("PT", 25),
    ("QA", 29), ("RO", 24), ("RS", 22), ("SA", 24), ("SE", 24), ("SI", 19), ("SK", 24),
    ("SM", 27), ("TN", 24), ("TR", 26), ("UA", 29), ("VG", 24), ("XK", 20),
];

/// `s` (spaces allowed) is an IBAN: a known country, its length, and the mod-97 checksum.
pub fn iban(s: &str) -> bool {
    let compact: Vec<u8> = s.bytes().filter(|b| *b != b' ').collect();
    let Some(country) = compact.get(..2).and_then(|c| std::str::from_utf8(c).ok()) else {
        return false;
    };
    let known = IBAN_LENGTHS
        .iter()
        .any(|(c, len)| *c == country && *len == compact.len());
    if !known {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem = 0u32;
    for &b in tail.iter().chain(head) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// `s` is a dotted IPv4 address that identifies a host on the public internet or, with
/// `private`, also on a private network. Loopback, unspecified, broadcast, documentation
/// and multicast addresses never count.
pub fn ipv4(s: &str, private: bool) -> bool {
    let Ok(ip) = s.parse::<std::net::Ipv4Addr>() else {
        return false;
    };
    let o = ip.octets();
    let documentation = matches!(o, [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _]);
    if ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || documentation
        || o[0] == 0
        || o[0] >= 240
    {
        return false;
    }
    private
        || !(ip.is_private() || ip.is_link_local() || (o[0] == 100 && (64..128).contains(&o[1])))
}

/// `s` is an IPv6 address of at least three written groups that identifies a host on the
/// public internet (global unicast, 2000::/3) or, with `private`, also a unique-local
/// (fc00::/7) or link-local (fe80::/10) one. Loopback, unspecified, multicast and
/// documentation (2001:db8::/32, 3fff::/20) addresses never count; neither do strings that do
/// not parse as an address (times, MAC addresses).
pub fn ipv6(s: &str, private: bool) -> bool {
    if s.split(':').filter(|g| !g.is_empty()).count() < 3 {
        return false;
    }
    let Ok(ip) = s.parse::<std::net::Ipv6Addr>() else {
        return false;
    };
    let seg = ip.segments();
    let documentation = (seg[0] == 0x2001 && seg[1] == 0x0db8) || (seg[0] & 0xfff0) == 0x3ff0;
    let global = (seg[0] & 0xe000) == 0x2000 && !documentation;
    let local = (seg[0] & 0xfe00) == 0xfc00 || (seg[0] & 0xffc0) == 0xfe80;
    global || (private && local)
}

/// A phone number: 10 to 15 digits.
pub fn phone(s: &str) -> bool {
    let n = s.bytes().filter(u8::is_ascii_digit).count();
    (10..=15).contains(&n)
}

/// An e-mail address of a person: not at an example or reserved domain, not a no-reply or
/// `git@` address (SSH remotes).
pub fn email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let domain = domain.to_ascii_lowercase();
    let local = local.to_ascii_lowercase();
    let reserved = ["example.com", "example.org", "example.net", "localhost"]
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
        || [".example", ".test", ".invalid", ".local", ".localhost"]
            .iter()
            .any(|t| domain.ends_with(t));
    let machine = local == "git"
        || [&local, &domain]
            .iter()
            .any(|p| p.contains("noreply") || p.contains("no-reply"));
    let file_like = [".png", ".jpg", ".svg", ".gif", ".webp"]
        .iter()
        .any(|e| domain.ends_with(e));
    !(reserved || machine || file_like)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends the Luhn check digit to `body`.
    pub fn with_luhn(body: &str) -> String {
        (0..10)
            .map(|d| format!("{body}{d}"))
            .find(|s| luhn(&s.chars().filter_map(|c| c.to_digit(10)).collect::<Vec<_>>()))
            .unwrap_or_default()
    }

    #[test]
    fn cards_need_the_luhn_digit_and_a_network_prefix() {
        let card = with_luhn(&format!("4{}", "111 1111 1111 111"));
        assert!(payment_card(&card), "{card}");
        let mut wrong = card.clone();
        let last = wrong.pop().and_then(|c| c.to_digit(10)).unwrap_or(0);
        wrong.push_str(&((last + 1) % 10).to_string());
        assert!(!payment_card(&wrong));
        assert!(!payment_card(&with_luhn("9123456789012")), "no network");
        assert!(!payment_card("0000000000000000"));
    }

    #[test]
    fn ibans_need_country_length_and_checksum() {
        let iban_de = ["DE", "89", "3704", "0044", "0532", "0130", "00"].concat();
        assert!(iban(&iban_de));
        assert!(iban(&["GB", "82 WEST 1234 5698 7654 32"].concat()));
        assert!(!iban(&iban_de.replace("89", "88")));
        assert!(!iban(&format!("{iban_de}1")));
        assert!(!iban("ZZ891234"));
    }

    #[test]
    fn private_addresses_count_only_when_asked() {
        assert!(ipv4("8.8.4.4", false));
        assert!(!ipv4("10.1.2.3", false) && ipv4("10.1.2.3", true));
        assert!(!ipv4("127.0.0.1", true) && !ipv4("0.0.0.0", true));
        assert!(!ipv4("192.0.2.7", true), "documentation range");
        assert!(!ipv4("1.2.3", true) && !ipv4("300.1.1.1", true));
    }

    #[test]
    fn ipv6_global_unicast_only_unless_private() {
        assert!(ipv6(&["2a00:", "1450:4009:81f::200e"].concat(), false));
        assert!(ipv6("2606:4700:4700:0:0:0:0:1111", false));
        assert!(!ipv6("2001:db8:85a3::8a2e:370:7334", true), "documentation");
        assert!(!ipv6("3fff:1:2::1", true), "documentation");
        assert!(
            !ipv6("::1", true) && !ipv6("0:0:0:0:0:0:0:1", true),
            "loopback"
        );
        assert!(!ipv6("ff02::1:2", true), "multicast");
        assert!(!ipv6("fe80::1ff:fe23:4567", false) && ipv6("fe80::1ff:fe23:4567", true));
        assert!(!ipv6("fd12:3456:789a::1", false) && ipv6("fd12:3456:789a::1", true));
        assert!(!ipv6("12:34:56", true), "a time");
        assert!(!ipv6("00:1a:2b:3c:4d:5e", true), "a MAC address");
        assert!(!ipv6("2a00::", true), "fewer than three groups");
    }

    #[test]
    fn assigned_values_need_entropy_and_no_code() {
        assert!(secret_value("q8Zr2LmX0pTv"));
        assert!(!secret_value("changeme"));
        assert!(!secret_value("get_password()"));
        assert!(!secret_value("${DB_PASSWORD}"));
        assert!(!secret_value("aaaaaaaa1"));
        assert!(!secret_value("os.environ"));
    }

    #[test]
    fn emails_of_people_not_machines_or_examples() {
        assert!(email(&["jane.doe", "@", "mailhost.io"].concat()));
        assert!(!email("someone@example.com"));
        assert!(!email("git@github.com"));
        assert!(!email("12345+bot@users.noreply.github.com"));
        assert!(!email("icon@2x.png"));
    }
}

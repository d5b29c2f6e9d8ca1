//! Finding the rules' matches in one text: a [`RegexSet`] pass says which rules match at all
//! (most texts match none, and are read once), then only those rules' patterns are run,
//! their matches checked, and overlaps resolved by rule priority.

use std::borrow::Cow;
use std::ops::Range;

use regex::{Regex, RegexSet};

use super::checks;
use super::rules::{Check, Rule, RULES};

/// A match of a rule in a text: the part to replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Index of the rule in [`RULES`].
    pub rule: usize,
    /// Byte range of the replaced part.
    pub span: Range<usize>,
}

/// A trajkit placeholder, already redacted: never matched again.
const PLACEHOLDER: &str = r"<(?:SECRET|PII):[a-z0-9_]+(?::[0-9a-f]{8})?>";

/// Appends the placeholder of `rule` to `out`: `<SECRET:name>`, or `<SECRET:name:TAG>` with a
/// keyed hash's `tag`.
pub fn push_placeholder(out: &mut String, rule: &Rule, tag: Option<&str>) {
    out.push('<');
    out.push_str(rule.kind.tag());
    out.push(':');
    out.push_str(rule.name);
    if let Some(tag) = tag {
        out.push(':');
        out.push_str(tag);
    }
    out.push('>');
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Scanner {
    set: RegexSet,
    patterns: Vec<Regex>,
    placeholder: Regex,
    private_ips: bool,
}

/// Texts shorter than this hold no match of any rule.
const SHORTEST: usize = 7;

impl Scanner {
    /// Compiles the built-in rules; `private_ips` makes private IPv4 addresses count.
    pub fn new(private_ips: bool) -> Scanner {
        let pattern = |p: &str| {
            // The patterns are constants, compiled by a test: this cannot fail at run time.
            Regex::new(p).unwrap_or_else(|e| unreachable!("built-in pattern: {e}"))
        };
        Scanner {
            set: RegexSet::new(RULES.iter().map(|r| r.pattern))
                .unwrap_or_else(|e| unreachable!("built-in patterns: {e}")),
            patterns: RULES.iter().map(|r| pattern(r.pattern)).collect(),
            placeholder: pattern(PLACEHOLDER),
            private_ips,
        }
    }

    /// The rules' matches in `text`, without overlaps, in text order.
    pub fn find(&self, text: &str) -> Vec<Found> {
        if text.len() < SHORTEST {
            return Vec::new();
        }
        let matched = self.set.matches(text);
        if !matched.matched_any() {
            return Vec::new();
        }
        let placeholders: Vec<Range<usize>> = if text.contains("<SECRET:") || text.contains("<PII:")
        {
            self.placeholder
                .find_iter(text)
                .map(|m| m.range())
                .collect()
        } else {
            Vec::new()
        };
        let mut found: Vec<Found> = Vec::new();
        for rule in matched.iter() {
            for caps in self.patterns[rule].captures_iter(text) {
                let Some(m) = (1..caps.len()).find_map(|g| caps.get(g)).or(caps.get(0)) else {
                    continue;
                };
                let span = m.range();
                let overlaps = |a: &Range<usize>| a.start < span.end && span.start < a.end;
                if m.is_empty()
                    || placeholders.iter().any(overlaps)
                    || found.iter().any(|f| overlaps(&f.span))
                    || !self.passes(&RULES[rule], text, &span)
                {
                    continue;
                }
                found.push(Found { rule, span });
            }
        }
        found.sort_by_key(|f| f.span.start);
        found
    }

    /// `text` with every match replaced by its key-less placeholder (`<SECRET:rule>`): for
    /// what is shown of a finding (its record id, the member names in its pointer).
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let found = self.find(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            out.push_str(&text[at..f.span.start]);
            push_placeholder(&mut out, &RULES[f.rule], None);
            at = f.span.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    fn passes(&self, rule: &Rule, text: &str, span: &Range<usize>) -> bool {
        let s = &text[span.clone()];
        match rule.check {
            Check::None => true,
            Check::SecretValue => checks::secret_value(s),
            Check::UrlPassword => {
                !(s.starts_with('$') || s.starts_with('%') || s.bytes().all(|b| b == b'*'))
            }
            Check::PaymentCard => checks::payment_card(s),
            Check::Iban => checks::iban(s),
            Check::Phone => checks::phone(s),
            Check::Email => checks::email(s),
            Check::Ipv6 => {
                let bytes = text.as_bytes();
                let part_of_word = |b: &u8| b.is_ascii_alphanumeric() || b"_:.-".contains(b);
                let before = span.start.checked_sub(1).map(|i| &bytes[i]);
                !before.is_some_and(part_of_word)
                    && !bytes.get(span.end).is_some_and(part_of_word)
                    && checks::ipv6(s, self.private_ips)
            }
            Check::Ipv4 => {
                let bytes = text.as_bytes();
                let before = span.start.checked_sub(1).map(|i| bytes[i]);
                let after = bytes.get(span.end..span.end + 2);
                let dotted_before = before.is_some_and(|b| b".=v_~^<>-".contains(&b));
                let dotted_after = matches!(after, Some([b'.', d]) if d.is_ascii_digit());
                // pip's "Requirement already satisfied: … (from …) (1.11.1.1)" version column.
                // A number the same text pins or names as a version elsewhere: pip and
                // easy_install print `pkg==8.5.0.96` then `Best match: pkg 8.5.0.96`.
                let pip_version = (text[..span.start].ends_with(") (")
                    && text[span.end..].starts_with(')'))
                    || text.contains(&format!("=={s}"))
                    || text.contains(&format!("-{s}"));
                !dotted_before && !dotted_after && !pip_version && checks::ipv4(s, self.private_ips)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(scanner: &Scanner, text: &str) -> Vec<&'static str> {
        scanner
            .find(text)
            .iter()
            .map(|f| RULES[f.rule].name)
            .collect()
    }

    #[test]
    fn every_pattern_compiles_and_names_are_unique() {
        let scanner = Scanner::new(false);
        assert_eq!(scanner.patterns.len(), RULES.len());
        let mut names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
    }

    #[test]
    fn overlaps_go_to_the_earlier_rule_and_placeholders_are_skipped() {
        let s = Scanner::new(false);
        let url = ["postgres://app:", "Zq8", "rT2vLw@db.internal.net/main"].concat();
        assert_eq!(names(&s, &url), ["database_connection_string"]);
        assert!(s
            .find("password=<SECRET:secret_assignment:0a1b2c3d>")
            .is_empty());
        assert!(s
            .find("github_token:<SECRET:github_token:7f3a91c2> done")
            .is_empty());
    }

    #[test]
    fn ordinary_code_and_ids_do_not_match() {
        let s = Scanner::new(true);
        for text in [
            "550e8400-e29b-41d4-a716-446655440000",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "version 1.2.3.4.5 of numpy 1.26.4, nvidia-cudnn-cu11==8.5.0.96, tag v8.8.4.4",
            "\\n+@dataclasses.dataclass(slots=True)",
            "token = tokenizer(text)",
            "password = os.environ[\"DB_PASSWORD\"]",
            "max_new_tokens: 4096, timestamp 1714000000123",
            "def login(user, password: str) -> Token:",
            "Requirement already satisfied: nvidia-cublas-cu12 (from torch) (12.1.3.1)",
            "Searching for nvidia-cufft-cu12==11.0.2.54\nBest match: nvidia-cufft-cu12 11.0.2.54",
            "at 2024-01-15 12:30:45.123456 in 0.25 s",
            "link/ether 00:1a:2b:3c:4d:5e brd ff:ff:ff:ff:ff:ff",
            "lo inet6 ::1/128 scope host; mcast ff02::1:2",
            "ping 2001:db8::8a2e:370:7334; std::vector<int>::iterator; a::b::c",
            "sha 2a00:1450 dead:beef:cafe 10:20:30:40 at 12:34:56",
        ] {
            assert_eq!(names(&s, text), Vec::<&str>::new(), "{text}");
        }
    }
}

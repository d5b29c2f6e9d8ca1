//! Finding the rules' matches in one text: a [`RegexSet`] pass says which rules match at all
//! (most texts match none, and are read once), then only those rules' patterns are run,
//! their matches checked, and overlaps resolved by rule priority.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexSet};

use super::checks;
use super::rules::Check;
use super::ruleset::{ActiveRule, RuleSet};

/// A match of a rule in a text: the part to replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Index of the rule in [`Scanner::rules`].
    pub rule: usize,
    /// Byte range of the replaced part.
    pub span: Range<usize>,
}

/// A trajkit placeholder, already redacted: never matched again.
const PLACEHOLDER: &str = r"<(?:SECRET|PII):[a-z0-9_]+(?::[0-9a-f]{8})?>";

/// Appends the placeholder of `rule` to `out`: `<SECRET:name>`, or `<SECRET:name:TAG>` with a
/// keyed hash's `tag`.
pub fn push_placeholder(out: &mut String, rule: &ActiveRule, tag: Option<&str>) {
    out.push('<');
    out.push_str(rule.kind.tag());
    out.push(':');
    out.push_str(&rule.name);
    if let Some(tag) = tag {
        out.push(':');
        out.push_str(tag);
    }
    out.push('>');
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Scanner {
    rules: RuleSet,
    /// The patterns of the rules without keywords, in one set: which of them match at all.
    set: RegexSet,
    /// The rule of each pattern of `set`.
    set_rules: Vec<usize>,
    /// The keywords of the rules that have some, and the rule of each keyword.
    keywords: Option<(AhoCorasick, Vec<usize>)>,
    patterns: Vec<Regex>,
    placeholder: Regex,
    /// Texts shorter than this hold no match of any rule.
    shortest: usize,
}

/// Texts shorter than this hold no match of any built-in rule.
const SHORTEST_BUILTIN: usize = 7;

impl Scanner {
    /// Compiles the built-in rules; `private_ips` makes private IP addresses count.
    pub fn builtin(private_ips: bool) -> Scanner {
        // The built-in patterns are constants, compiled by a test: this cannot fail.
        Scanner::new(RuleSet::builtin(private_ips))
            .unwrap_or_else(|e| unreachable!("built-in patterns: {e}"))
    }

    /// Compiles `rules` (a rule file's patterns were compiled when it was read).
    pub fn new(rules: RuleSet) -> Result<Scanner, regex::Error> {
        let patterns = (rules.rules.iter())
            .map(|r| Regex::new(&r.pattern))
            .collect::<Result<Vec<_>, _>>()?;
        let set_rules: Vec<usize> = (0..rules.rules.len())
            .filter(|&i| rules.rules[i].keywords.is_empty())
            .collect();
        let set = RegexSet::new(set_rules.iter().map(|&i| &rules.rules[i].pattern))?;
        let mut words = Vec::new();
        let mut word_rules = Vec::new();
        for (i, r) in rules.rules.iter().enumerate() {
            for k in &r.keywords {
                words.push(k.as_str());
                word_rules.push(i);
            }
        }
        let keywords = if words.is_empty() {
            None
        } else {
            let automaton = AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&words)
                .map_err(|e| regex::Error::Syntax(format!("keywords: {e}")))?;
            Some((automaton, word_rules))
        };
        let shortest = if rules.rules.iter().all(|r| r.builtin) {
            SHORTEST_BUILTIN
        } else {
            1
        };
        Ok(Scanner {
            set,
            set_rules,
            keywords,
            patterns,
            placeholder: Regex::new(PLACEHOLDER)?,
            shortest,
            rules,
        })
    }

    /// The rules, in priority order; [`Found::rule`] indexes them.
    pub fn rules(&self) -> &[ActiveRule] {
        &self.rules.rules
    }

    /// The rule set compiled.
    pub fn rule_set(&self) -> &RuleSet {
        &self.rules
    }

    /// The string at JSON pointer `pointer` is allowed (never redacted nor scanned).
    pub fn allowed_path(&self, pointer: &str) -> bool {
        self.rules.allow.path(pointer)
    }

    /// The rules that may match `text`, in priority order.
    fn candidates(&self, text: &str) -> Vec<usize> {
        let mut rules: Vec<usize> = if self.set_rules.is_empty() {
            Vec::new()
        } else {
            (self.set.matches(text).iter())
                .map(|i| self.set_rules[i])
                .collect()
        };
        if let Some((words, word_rules)) = &self.keywords {
            let before = rules.len();
            rules.extend(
                words
                    .find_overlapping_iter(text)
                    .map(|m| word_rules[m.pattern().as_usize()]),
            );
            if rules.len() > before {
                rules.sort_unstable();
                rules.dedup();
            }
        }
        rules
    }

    /// The rules' matches in `text`, without overlaps, in text order.
    pub fn find(&self, text: &str) -> Vec<Found> {
        if text.len() < self.shortest {
            return Vec::new();
        }
        let candidates = self.candidates(text);
        if candidates.is_empty() {
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
        for rule in candidates {
            let group = self.rules.rules[rule].group;
            for caps in self.patterns[rule].captures_iter(text) {
                let m = match group {
                    Some(g) => caps.get(g),
                    None => (1..caps.len()).find_map(|g| caps.get(g)).or(caps.get(0)),
                };
                let Some(m) = m else {
                    continue;
                };
                let span = m.range();
                let overlaps = |a: &Range<usize>| a.start < span.end && span.start < a.end;
                if m.is_empty()
                    || placeholders.iter().any(overlaps)
                    || found.iter().any(|f| overlaps(&f.span))
                    || !self.passes(&self.rules.rules[rule], text, &span)
                    || self.rules.allow.value(m.as_str())
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
            push_placeholder(&mut out, &self.rules.rules[f.rule], None);
            at = f.span.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    fn passes(&self, rule: &ActiveRule, text: &str, span: &Range<usize>) -> bool {
        let s = &text[span.clone()];
        let private_ips = self.rules.private_ips;
        match rule.check {
            Check::None => true,
            Check::MinEntropy(bits) => checks::entropy(s) >= bits,
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
                    && checks::ipv6(s, private_ips)
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
                !dotted_before && !dotted_after && !pip_version && checks::ipv4(s, private_ips)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::rules::RULES;

    fn names(scanner: &Scanner, text: &str) -> Vec<String> {
        scanner
            .find(text)
            .iter()
            .map(|f| scanner.rules()[f.rule].name.clone())
            .collect()
    }

    #[test]
    fn every_pattern_compiles_and_names_are_unique() {
        let scanner = Scanner::builtin(false);
        assert_eq!(scanner.patterns.len(), RULES.len());
        let mut names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
    }

    #[test]
    fn overlaps_go_to_the_earlier_rule_and_placeholders_are_skipped() {
        let s = Scanner::builtin(false);
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
        let s = Scanner::builtin(true);
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
            assert_eq!(names(&s, text), Vec::<String>::new(), "{text}");
        }
    }
}

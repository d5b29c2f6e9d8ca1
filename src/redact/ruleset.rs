//! The rules a redaction runs: the built-in ones (less those a rule file disables), then the
//! rule file's own, in its order, and what the rule file allows.

use regex::Regex;
use sha2::{Digest, Sha256};

use super::rules::{Check, Kind, Rule, RULES};

/// One rule as the scanner runs it: a built-in one, or one of the user's rule file.
#[derive(Debug, Clone)]
pub struct ActiveRule {
    /// The rule's name, in placeholders, summaries and diagnostics (`[a-z0-9_]+`).
    pub name: String,
    /// A secret or personal data.
    pub kind: Kind,
    /// The pattern (the `regex` crate's syntax).
    pub pattern: String,
    /// The capture group replaced; `None`: the first group that took part in the match, or
    /// the whole match when the pattern has none.
    pub group: Option<usize>,
    /// What a match must also pass.
    pub check: Check,
    /// A pattern that ends a match (a built-in rule's `Rule::until`).
    pub until: Option<String>,
    /// Prefilter: the pattern runs only on texts holding one of these (ASCII case
    /// insensitively); empty: on every text the first pass says it matches.
    pub keywords: Vec<String>,
    /// What the rule finds, for `redact --list-rules`.
    pub help: String,
    /// A built-in rule (its patterns are tested), not one of a rule file.
    pub builtin: bool,
}

impl From<&Rule> for ActiveRule {
    fn from(r: &Rule) -> Self {
        ActiveRule {
            name: r.name.to_owned(),
            kind: r.kind,
            pattern: r.pattern.to_owned(),
            group: None,
            check: r.check,
            until: r.until.map(str::to_owned),
            keywords: Vec::new(),
            help: r.help.to_owned(),
            builtin: true,
        }
    }
}

/// What is never redacted, whatever rule finds it.
#[derive(Debug, Clone, Default)]
pub struct Allow {
    /// Texts a rule finds that are left as they are (exactly these).
    pub values: Vec<String>,
    /// A found text one of these matches is left as it is.
    pub regexes: Vec<Regex>,
    /// JSON pointer prefixes (segments as written, `*` for any one segment): the strings at or
    /// under them are neither redacted nor scanned.
    pub paths: Vec<Vec<String>>,
}

impl Allow {
    /// `found` (a rule's match) is allowed.
    pub fn value(&self, found: &str) -> bool {
        self.values.iter().any(|v| v == found) || self.regexes.iter().any(|r| r.is_match(found))
    }

    /// The string at JSON pointer `pointer` is allowed.
    pub fn path(&self, pointer: &str) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        self.paths.iter().any(|prefix| {
            let mut segments = pointer.split('/').skip(1);
            prefix.iter().all(|want| {
                segments
                    .next()
                    .is_some_and(|got| want == "*" || want == got)
            })
        })
    }

    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.regexes.is_empty() && self.paths.is_empty()
    }
}

/// Every rule a redaction runs, in priority order, and what it allows.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// The rules; where two matches overlap, the earlier rule's is kept.
    pub rules: Vec<ActiveRule>,
    /// What is never redacted.
    pub allow: Allow,
    /// Private IPv4 and IPv6 addresses count too (`--private-ips`).
    pub private_ips: bool,
}

impl RuleSet {
    /// The built-in rules, nothing allowed.
    pub fn builtin(private_ips: bool) -> RuleSet {
        RuleSet {
            rules: RULES.iter().map(ActiveRule::from).collect(),
            allow: Allow::default(),
            private_ips,
        }
    }

    /// Only the built-in rules, as they are.
    pub fn is_builtin(&self) -> bool {
        self.allow.is_empty()
            && self.rules.len() == RULES.len()
            && self.rules.iter().all(|r| r.builtin)
    }

    /// A digest of everything that decides what is redacted and how, so a resumed run can
    /// refuse a changed rule set.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |s: &str| {
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        field(if self.private_ips {
            "private"
        } else {
            "public"
        });
        for r in &self.rules {
            field(&r.name);
            field(r.kind.prefix());
            field(&r.pattern);
            field(r.until.as_deref().unwrap_or(""));
            field(&format!("{:?}/{:?}", r.group, r.check));
            r.keywords.iter().for_each(|k| field(k));
        }
        self.allow.values.iter().for_each(|v| field(v));
        self.allow.regexes.iter().for_each(|r| field(r.as_str()));
        self.allow.paths.iter().for_each(|p| field(&p.join("/")));
        h.finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_paths_are_prefixes_with_wildcard_segments() {
        let allow = Allow {
            paths: vec![
                vec!["details".into()],
                vec!["content".into(), "*".into(), "kwargs".into(), "url".into()],
            ],
            ..Allow::default()
        };
        assert!(allow.path("/details"));
        assert!(allow.path("/details/commit/sha"));
        assert!(allow.path("/content/3/kwargs/url"));
        assert!(allow.path("/content/3/kwargs/url/0"));
        assert!(!allow.path("/content/3/kwargs/urls"));
        assert!(!allow.path("/content/3/content"));
        assert!(!allow.path("/id"));
    }

    #[test]
    fn the_fingerprint_follows_the_rules() {
        let a = RuleSet::builtin(false);
        assert!(a.is_builtin());
        assert_eq!(a.fingerprint(), RuleSet::builtin(false).fingerprint());
        assert_ne!(a.fingerprint(), RuleSet::builtin(true).fingerprint());
        let mut b = RuleSet::builtin(false);
        b.rules.pop();
        assert!(!b.is_builtin());
        assert_ne!(a.fingerprint(), b.fingerprint());
    }
}

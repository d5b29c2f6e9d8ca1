//! A rule file of the user's own (TOML; docs/redaction.md#rules-of-your-own): rules added after
//! the built-in ones, built-in rules disabled, and values and JSON paths allowed. Every problem
//! is reported at once, with the file, the line and the key.

use std::collections::BTreeSet;

use regex::Regex;
use serde::Deserialize;

use super::ConfigError;
use crate::located::{LocatedDoc, LocatedError};
use crate::redact::checks::entropy;
use crate::redact::rules::{Check, Kind, RULES};
use crate::redact::ruleset::{ActiveRule, Allow, RuleSet};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[serde(default)]
    disable: Vec<String>,
    #[serde(default)]
    rule: Vec<RuleDoc>,
    #[serde(default)]
    allow: AllowDoc,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDoc {
    name: String,
    #[serde(default)]
    kind: KindDoc,
    regex: String,
    #[serde(default)]
    group: Option<usize>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KindDoc {
    #[default]
    Secret,
    Pii,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowDoc {
    #[serde(default)]
    values: Vec<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
}

/// The highest `entropy` a rule may ask for: bits per character of a byte string.
const MAX_ENTROPY: f64 = 8.0;

/// Reads the rule file at `path` into the rule set: the built-in rules less those it
/// disables, then its own; `private_ips` as `--private-ips`.
pub fn load(path: &str, private_ips: bool) -> Result<RuleSet, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Io(format!("cannot read the rule file {path}: {e}")))?;
    parse(path, &text, private_ips)
}

/// [`load`] of the rule file `file` whose text is `text`.
pub fn parse(file: &str, text: &str, private_ips: bool) -> Result<RuleSet, ConfigError> {
    let invalid = |lines: Vec<String>| {
        ConfigError::Invalid(format!(
            "the redaction rule file is invalid:\n{}",
            lines.join("\n")
        ))
    };
    let doc = LocatedDoc::parse(text)
        .map_err(|e| invalid(vec![format!("{file}:{}: {}", e.line, e.message)]))?;
    let mut problems = Problems {
        file,
        doc: &doc,
        list: Vec::new(),
    };
    let parsed: Result<Doc, _> = serde_path_to_error::deserialize(&doc.value);
    let set = match parsed {
        Ok(d) => build(d, private_ips, &mut problems),
        Err(e) => {
            let pointer = pointer_of(e.path());
            problems.add(&pointer, e.inner().to_string());
            None
        }
    };
    match set {
        Some(set) if problems.list.is_empty() => Ok(set),
        _ => Err(invalid(
            problems.list.iter().map(ToString::to_string).collect(),
        )),
    }
}

struct Problems<'a> {
    file: &'a str,
    doc: &'a LocatedDoc,
    list: Vec<LocatedError>,
}

impl Problems<'_> {
    fn add(&mut self, pointer: &str, message: impl Into<String>) {
        self.list.push(LocatedError {
            file: self.file.to_owned(),
            line: self.doc.line(pointer),
            pointer: pointer.to_owned(),
            message: message.into(),
        });
    }

    /// `pattern` compiled, or the problem added at `pointer`.
    fn regex(&mut self, pointer: &str, pattern: &str) -> Option<Regex> {
        match Regex::new(pattern) {
            Ok(r) => Some(r),
            Err(e) => {
                self.add(pointer, format!("not a valid regex: {e}"));
                None
            }
        }
    }
}

/// The JSON pointer of a deserializer's path (`/rule/2/regex`).
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for s in path.iter() {
        match s {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => out.push_str(&format!("/{key}")),
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

fn build(doc: Doc, private_ips: bool, problems: &mut Problems<'_>) -> Option<RuleSet> {
    let builtin: BTreeSet<&str> = RULES.iter().map(|r| r.name).collect();
    for (i, name) in doc.disable.iter().enumerate() {
        if !builtin.contains(name.as_str()) {
            problems.add(
                &format!("/disable/{i}"),
                format!(
                    "{name:?} is no built-in rule (trajkit redact --list-rules lists them: {})",
                    builtin.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
    let mut rules: Vec<ActiveRule> = RULES
        .iter()
        .filter(|r| !doc.disable.iter().any(|d| d == r.name))
        .map(ActiveRule::from)
        .collect();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (i, r) in doc.rule.into_iter().enumerate() {
        let at = |key: &str| format!("/rule/{i}/{key}");
        if let Some(rule) = user_rule(r, &at, &builtin, &mut names, problems) {
            rules.push(rule);
        }
    }
    let allow = Allow {
        regexes: (doc.allow.regexes.iter().enumerate())
            .filter_map(|(i, p)| problems.regex(&format!("/allow/regexes/{i}"), p))
            .collect(),
        paths: (doc.allow.paths.iter().enumerate())
            .filter_map(|(i, p)| match p.strip_prefix('/') {
                Some(rest) => Some(rest.split('/').map(str::to_owned).collect()),
                None => {
                    problems.add(
                        &format!("/allow/paths/{i}"),
                        format!(
                            "{p:?} is not a JSON pointer: write it from the trajectory's root, \
                             like /details or /content/*/kwargs/url"
                        ),
                    );
                    None
                }
            })
            .collect(),
        values: doc.allow.values,
    };
    Some(RuleSet {
        rules,
        allow,
        private_ips,
    })
}

/// One `[[rule]]` checked and compiled into an [`ActiveRule`], its problems added.
fn user_rule(
    r: RuleDoc,
    at: &dyn Fn(&str) -> String,
    builtin: &BTreeSet<&str>,
    names: &mut BTreeSet<String>,
    problems: &mut Problems<'_>,
) -> Option<ActiveRule> {
    let before = problems.list.len();
    let good_name = !r.name.is_empty()
        && r.name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !good_name {
        problems.add(
            &at("name"),
            format!(
                "{:?}: a rule's name is lowercase letters, digits and _ (it goes into \
                 placeholders: <SECRET:name>)",
                r.name
            ),
        );
    } else if builtin.contains(r.name.as_str()) {
        problems.add(
            &at("name"),
            format!(
                "{:?} is a built-in rule's name: choose another (to replace the built-in \
                 rule, also list it in disable)",
                r.name
            ),
        );
    } else if !names.insert(r.name.clone()) {
        problems.add(&at("name"), format!("a second rule named {:?}", r.name));
    }
    if let Some(re) = problems.regex(&at("regex"), &r.regex) {
        if re.is_match("") {
            problems.add(
                &at("regex"),
                "the regex matches the empty text: it would find nothing to replace",
            );
        }
        if let Some(g) = r.group {
            if g >= re.captures_len() {
                problems.add(
                    &at("group"),
                    format!(
                        "group {g}: the regex has {} capture groups (0 is the whole match)",
                        re.captures_len() - 1
                    ),
                );
            }
        }
    }
    if let Some(i) = r.keywords.iter().position(String::is_empty) {
        problems.add(&format!("{}/{i}", at("keywords")), "an empty keyword");
    }
    let check = match r.entropy {
        Some(e) if !(e > 0.0 && e <= MAX_ENTROPY) => {
            problems.add(
                &at("entropy"),
                format!(
                    "{e}: the entropy threshold is in bits per character, above 0 and at \
                     most {MAX_ENTROPY} (random hex has 4, base64 about 6; {:.1} for \
                     \"password123\")",
                    entropy("password123")
                ),
            );
            Check::None
        }
        Some(e) => Check::MinEntropy(e),
        None => Check::None,
    };
    if problems.list.len() > before {
        return None;
    }
    let help = r
        .description
        .unwrap_or_else(|| format!("the rule file's {}", r.name));
    Some(ActiveRule {
        name: r.name,
        kind: match r.kind {
            KindDoc::Secret => Kind::Secret,
            KindDoc::Pii => Kind::Personal,
        },
        pattern: r.regex,
        group: r.group,
        check,
        until: None,
        keywords: r.keywords,
        help,
        builtin: false,
    })
}

/// The rule set of an optional rule file: the built-in rules without one.
pub fn rule_set(path: Option<&str>, private_ips: bool) -> Result<RuleSet, ConfigError> {
    match path {
        Some(p) => load(p, private_ips),
        None => Ok(RuleSet::builtin(private_ips)),
    }
}

//! Redaction: secrets and personal data replaced by placeholders naming the rule that found
//! them, before a trajectory reaches a dataset (docs/redaction.md).
//!
//! - [`rules`]: the built-in rules (name, kind, pattern, check), in priority order;
//! - [`ruleset`]: the rules a redaction runs, and what it allows;
//! - [`checks`]: checksums, entropy and address classes a match must also pass;
//! - [`scan`]: the rules' matches in one text, a [`regex::RegexSet`] pass first;
//! - [`mod@walk`]: every string of a trajectory, with its JSON pointer;
//! - [`hash`]: the keyed hash (HMAC-SHA256) of `--hash-key` placeholders;
//! - [`counts`]: what a redaction stage counts, per rule;
//! - [`mask`]: rejected records and diagnostics with what the rules find masked.
//!
//! [`Redactor::redact_trajectory`] redacts every free string of a trajectory and scans the
//! result again (fail closed: anything still found rejects the trajectory as
//! `redaction-residual`); as a stage of a pass ([`stage`]) `run` and the `redact` command
//! apply it to each trajectory; [`scan_record`] only reports what it finds, never the text found.

pub mod checks;
pub mod counts;
pub mod hash;
pub mod mask;
pub mod rules;
pub mod ruleset;
pub mod scan;
pub mod stage;
pub mod walk;

use crate::ingest::{Provenance, RawRecord};
use crate::model::Trajectory;
use crate::validate::{check_adp, Diagnostic};

pub use counts::{Redaction, RuleCount, Tally};
pub use hash::HashKey;
pub use mask::MaskedReporter;
pub use rules::{Kind, Rule, RULES};
pub use ruleset::{ActiveRule, RuleSet};
use scan::push_placeholder;
pub use scan::Scanner;
use walk::{walk, Role, Visit};

/// The environment variable `redact --hash-key` falls back to.
pub const HASH_KEY_ENV: &str = "TRAJKIT_REDACT_KEY";

/// The rules compiled, and how placeholders are made.
#[derive(Debug, Clone)]
pub struct Redactor {
    scanner: Scanner,
    key: Option<HashKey>,
}

impl Redactor {
    /// A redactor running `scanner`'s rules; with `key`, placeholders carry a keyed hash of
    /// what they replace (`<SECRET:github_token:7f3a91c2>`).
    pub fn new(key: Option<&[u8]>, scanner: Scanner) -> Redactor {
        Redactor {
            scanner,
            key: key.map(HashKey::new),
        }
    }

    /// `text` with every match replaced, and a count per rule added to `counts`; `None` when
    /// nothing matched.
    pub fn redact_text(&self, text: &str, counts: &mut [u64]) -> Option<String> {
        let found = self.scanner.find(text);
        if found.is_empty() {
            return None;
        }
        // The placeholders' bytes over the text's, counted first: a text of many short secrets
        // grows a few times (`a://b:c@` → `a://b:<SECRET:url_password>@`), and is not copied
        // as it grows.
        let rules = self.scanner.rules();
        let tag_len = if self.key.is_some() { 9 } else { 0 };
        let placeholders: usize = (found.iter())
            .map(|f| rules[f.rule].name.len() + rules[f.rule].kind.tag().len() + 3 + tag_len)
            .sum();
        let removed: usize = found.iter().map(|f| f.span.len()).sum();
        let mut out = String::with_capacity((text.len() + placeholders).saturating_sub(removed));
        let mut at = 0;
        for f in found {
            out.push_str(&text[at..f.span.start]);
            let tag = self
                .key
                .as_ref()
                .map(|k| k.tag(text[f.span.clone()].as_bytes()));
            push_placeholder(&mut out, &self.scanner.rules()[f.rule], tag.as_deref());
            at = f.span.end;
            if let Some(c) = counts.get_mut(f.rule) {
                *c += 1;
            }
        }
        out.push_str(&text[at..]);
        Some(out)
    }
}

/// A finding of a scan: where, and which rule; never the text found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// JSON pointer of the string (for an object key, of its member).
    pub pointer: String,
    /// Index of the rule in [`Scanner::rules`].
    pub rule: usize,
    /// Length of the text found, in characters.
    pub chars: usize,
    /// Where it was.
    pub role: Role,
}

impl Finding {
    /// This finding of `scanner` as a diagnostic of the record at `prov`: rule `secret:NAME`
    /// or `pii:NAME`, or `redaction-residual` after a redaction.
    pub fn diagnostic(
        &self,
        scanner: &Scanner,
        prov: &Provenance,
        id: &str,
        residual: bool,
    ) -> Diagnostic {
        let rule = &scanner.rules()[self.rule];
        let place = match self.role {
            Role::Text => "",
            Role::Key => " in an object key",
            Role::Fixed => " in a field that is not rewritten (an id, link or name)",
        };
        let (name, message) = if residual {
            (
                "redaction-residual".to_owned(),
                format!(
                    "{} ({} characters) still found{place} after redaction: the trajectory is not written",
                    rule.name, self.chars
                ),
            )
        } else {
            (
                format!("{}:{}", rule.kind.prefix(), rule.name),
                format!("{} ({} characters){place}", rule.help_name(), self.chars),
            )
        };
        Diagnostic::error(prov, Some(id), self.pointer.clone(), name, message)
    }
}

impl ActiveRule {
    /// `a secret (github_token)` / `personal data (email)`, for messages.
    fn help_name(&self) -> String {
        match self.kind {
            Kind::Secret => format!("a secret ({})", self.name),
            Kind::Personal => format!("personal data ({})", self.name),
        }
    }
}

/// Collects every match of every string, rewriting none.
struct Findings<'a> {
    scanner: &'a Scanner,
    found: Vec<Finding>,
    /// For a scan after a redaction: whether each string, in the order visited, was scanned
    /// by it and found clean (so left as it was, and clean again: it is not read twice).
    clean: &'a [bool],
    visited: usize,
}

impl Visit for Findings<'_> {
    fn text(&mut self, text: &str, pointer: &str, role: Role) -> Option<String> {
        let clean = self.clean.get(self.visited).copied().unwrap_or(false);
        self.visited += 1;
        if clean || self.scanner.allowed_path(pointer) {
            return None;
        }
        for f in self.scanner.find(text) {
            self.found.push(Finding {
                pointer: pointer.to_owned(),
                rule: f.rule,
                chars: text[f.span].chars().count(),
                role,
            });
        }
        None
    }

    fn collision(&mut self, _: &str) {}
}

/// Rewrites every free string and key, counting per rule; counts what it may not rewrite.
struct Replace<'a> {
    redactor: &'a Redactor,
    counts: Vec<u64>,
    collisions: Vec<String>,
    /// Whether each string visited, in order, was scanned and found clean.
    clean: Vec<bool>,
    /// Bytes the placeholders added over what they replaced.
    grown: usize,
}

impl Visit for Replace<'_> {
    fn text(&mut self, text: &str, pointer: &str, role: Role) -> Option<String> {
        if role == Role::Fixed || self.redactor.scanner.allowed_path(pointer) {
            // Left as it is: the residual scan finds it and rejects the trajectory.
            self.clean.push(false);
            return None;
        }
        let new = self.redactor.redact_text(text, &mut self.counts);
        self.clean.push(new.is_none());
        if let Some(new) = &new {
            self.grown += new.len().saturating_sub(text.len());
        }
        new
    }

    fn collision(&mut self, pointer: &str) {
        self.collisions.push(pointer.to_owned());
    }
}

/// Every finding in `traj`.
pub fn find_all(scanner: &Scanner, traj: &mut Trajectory) -> Vec<Finding> {
    find_unless_clean(scanner, traj, &[])
}

/// Every finding in `traj`, but in the strings `clean` says (in the order visited) were found
/// clean and left as they were.
fn find_unless_clean(scanner: &Scanner, traj: &mut Trajectory, clean: &[bool]) -> Vec<Finding> {
    let mut v = Findings {
        scanner,
        found: Vec::new(),
        clean,
        visited: 0,
    };
    walk(traj, &mut v);
    v.found
}

/// What a scan found in one record: its findings as diagnostics, or why it is not ADP.
/// Diagnostics show no text a rule finds.
pub fn scan_record(
    scanner: &Scanner,
    record: &RawRecord,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let (mut traj, _) = check_adp(record)
        .into_result()
        .map_err(|d| scanner.masked(d))?;
    let found = find_all(scanner, &mut traj)
        .iter()
        .map(|f| f.diagnostic(scanner, &record.provenance, &traj.id, false))
        .collect();
    Ok(scanner.masked(found))
}

impl Redactor {
    /// The compiled rules.
    pub fn scanner(&self) -> &Scanner {
        &self.scanner
    }

    /// The keyed hash's tag of `text`, when placeholders carry one.
    pub fn key_tag(&self, text: &[u8]) -> Option<String> {
        self.key.as_ref().map(|k| k.tag(text))
    }

    /// Replaces what the rules find in every free string of `traj` (an upgraded, checked
    /// trajectory), then scans the whole result again, ids and links included. Returns the
    /// replacements per rule (indexed like [`Scanner::rules`]), or why the trajectory may not be
    /// written (`redaction-residual`; the diagnostics show no text a rule finds).
    pub fn redact_trajectory(
        &self,
        traj: &mut Trajectory,
        prov: &Provenance,
    ) -> Result<Vec<u64>, Vec<Diagnostic>> {
        self.redact_counted(traj, prov).map(|(counts, _)| counts)
    }

    /// [`Redactor::redact_trajectory`], and the bytes the placeholders added to the strings
    /// over what they replaced.
    fn redact_counted(
        &self,
        traj: &mut Trajectory,
        prov: &Provenance,
    ) -> Result<(Vec<u64>, usize), Vec<Diagnostic>> {
        let mut replace = Replace {
            redactor: self,
            counts: vec![0; self.scanner.rules().len()],
            collisions: Vec::new(),
            clean: Vec::new(),
            grown: 0,
        };
        walk(traj, &mut replace);
        // A string found clean and left as it was is clean again: the scan after skips it,
        // unless a collision dropped a member (then the strings are not visited alike).
        let clean: &[bool] = if replace.collisions.is_empty() {
            &replace.clean
        } else {
            &[]
        };
        let mut problems: Vec<Diagnostic> = find_unless_clean(&self.scanner, traj, clean)
            .iter()
            .map(|f| f.diagnostic(&self.scanner, prov, &traj.id, true))
            .collect();
        problems.extend(replace.collisions.iter().map(|p| {
            Diagnostic::error(
                prov,
                Some(&traj.id),
                p.clone(),
                "redaction-residual",
                "two members of this object were given the same placeholder as their name: the trajectory is not written",
            )
        }));
        if problems.is_empty() {
            Ok((replace.counts, replace.grown))
        } else {
            Err(self.scanner.masked(problems))
        }
    }
}

//! What a redaction stage counts: trajectories in, written, rejected, those in which something
//! was replaced, and the replacements per rule, as summaries, manifests and run.json report
//! them.

use serde::{Deserialize, Serialize};

use super::rules::RULES;
use super::scan::Scanner;

/// Replacements of one rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCount {
    /// The rule's name.
    pub rule: String,
    /// `secret` or `pii`.
    pub kind: String,
    /// Replacements in written trajectories.
    pub count: u64,
}

/// The counts of a redaction stage, as reported: `in == written + rejected` (redaction filters
/// nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    /// Trajectories redacted.
    #[serde(rename = "in")]
    pub records_in: u64,
    /// Trajectories passed on.
    pub written: u64,
    /// Trajectories rejected (`redaction-residual`).
    pub rejected: u64,
    /// Trajectories passed on in which something was replaced.
    pub redacted: u64,
    /// Replacements in all.
    pub replacements: u64,
    /// Replacements per rule, in rule order; rules that found nothing are left out.
    pub rules: Vec<RuleCount>,
}

impl Redaction {
    /// Adds the counts of `other` (another partition's) to these.
    pub fn add(&mut self, other: &Redaction) {
        self.records_in += other.records_in;
        self.written += other.written;
        self.rejected += other.rejected;
        self.redacted += other.redacted;
        self.replacements += other.replacements;
        for r in &other.rules {
            match self.rules.iter_mut().find(|m| m.rule == r.rule) {
                Some(m) => m.count += r.count,
                None => self.rules.push(r.clone()),
            }
        }
        // Built-in rules in their order, then a rule file's, in the order they were first met.
        let order = |name: &str| {
            RULES
                .iter()
                .position(|r| r.name == name)
                .unwrap_or(usize::MAX)
        };
        self.rules.sort_by_key(|r| order(&r.rule));
    }

    /// `3 replacements in 2 of 5 trajectories (email 2, github_token 1), 0 rejected`.
    pub fn describe(&self) -> String {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|r| format!("{} {}", r.rule, r.count))
            .collect();
        let by_rule = if rules.is_empty() {
            String::new()
        } else {
            format!(" ({})", rules.join(", "))
        };
        format!(
            "{} replacements in {} of {} trajectories{by_rule}, {} rejected",
            self.replacements, self.redacted, self.records_in, self.rejected
        )
    }
}

/// Counts gathered trajectory by trajectory, in the order the writer sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Trajectories redacted.
    pub records_in: u64,
    /// Trajectories rejected.
    pub rejected: u64,
    /// Trajectories passed on in which something was replaced.
    pub redacted: u64,
    /// Replacements per rule, one entry for each rule of the scanner, in its order.
    pub per_rule: Vec<RuleCount>,
}

impl Tally {
    /// No trajectory yet, for the rules of `scanner`.
    pub fn new(scanner: &Scanner) -> Tally {
        Tally {
            records_in: 0,
            rejected: 0,
            redacted: 0,
            per_rule: zeros(scanner),
        }
    }

    /// Counts a trajectory passed on with `counts` replacements per rule.
    pub fn written(&mut self, counts: &[u64]) {
        self.records_in += 1;
        if counts.iter().any(|&c| c > 0) {
            self.redacted += 1;
        }
        for (total, c) in self.per_rule.iter_mut().zip(counts) {
            total.count += c;
        }
    }

    /// Counts a rejected trajectory.
    pub fn rejected(&mut self) {
        self.records_in += 1;
        self.rejected += 1;
    }

    /// The counts as reported.
    pub fn report(&self) -> Redaction {
        let rules: Vec<RuleCount> = self
            .per_rule
            .iter()
            .filter(|r| r.count > 0)
            .cloned()
            .collect();
        Redaction {
            records_in: self.records_in,
            written: self.records_in - self.rejected,
            rejected: self.rejected,
            redacted: self.redacted,
            replacements: rules.iter().map(|r| r.count).sum(),
            rules,
        }
    }
}

/// A zero count for each rule of `scanner`, in its order.
fn zeros(scanner: &Scanner) -> Vec<RuleCount> {
    scanner
        .rules()
        .iter()
        .map(|r| RuleCount {
            rule: r.name.clone(),
            kind: r.kind.prefix().to_owned(),
            count: 0,
        })
        .collect()
}

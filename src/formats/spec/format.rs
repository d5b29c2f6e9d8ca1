//! The converter-spec file format, as written (`converters/*.toml`). The JSON Schema in
//! `schemas/converter-spec.schema.json` describes the same shape and is checked first, so these
//! types only decode what the schema has accepted. docs/specs.md is the
//! reference.

use serde::Deserialize;
use serde_json::{Map, Value};

/// A whole spec file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    /// The name used with `--from`.
    pub name: String,
    /// One line about the dataset.
    pub description: String,
    /// Where the id and the turns are in a record.
    pub record: RecordSpec,
    /// Raw role → what an unmatched turn of that role becomes.
    pub roles: Map<String, Value>,
    /// Every turn must match a rule, except turns of roles mapped to `drop` (a turn that does
    /// not rejects the record).
    #[serde(default)]
    pub strict: bool,
    /// Rules, tried in order; the first that applies to a turn converts it.
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleSpec>,
    /// The final-answer convention applied to the last step.
    #[serde(default)]
    pub finish: Option<FinishSpec>,
    /// Named templates rendered once per record, after the extractions; each becomes a
    /// variable of the later templates.
    #[serde(default)]
    pub vars: Map<String, Value>,
    /// Trajectory details: key → template over the record.
    #[serde(default)]
    pub details: Map<String, Value>,
    /// Lookup tables of the `lookup` filter: name → a TOML table (key → value) or a list
    /// (position → value).
    #[serde(default)]
    pub tables: Map<String, Value>,
}

/// Where a record's id and turns are.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    /// Template of the trajectory id.
    pub id: String,
    /// JSON pointer to the list of turns.
    #[serde(default)]
    pub turns: Option<String>,
    /// Turns built from fields of the record, for records that are not a list of turns.
    #[serde(default, rename = "turn")]
    pub fixed_turns: Vec<FixedTurn>,
    /// JSON pointer, inside a turn, to its role, or a template (`{$turn/...}`) that renders it.
    #[serde(default)]
    pub role: Option<String>,
    /// JSON pointer, inside a turn, to its text.
    #[serde(default)]
    pub text: Option<String>,
    /// Record-level extractions whose named groups every template can use.
    #[serde(default)]
    pub extract: Vec<ExtractSpec>,
    /// Template of a group key: consecutive records with the same key make one trajectory.
    #[serde(default)]
    pub group: Option<String>,
    /// What a group key that comes back after another key means: `reject` (the default) or
    /// `separate` (a trajectory of its own).
    #[serde(default)]
    pub regroup: Option<String>,
    /// JSON pointer to a list whose items each make a trajectory of their own.
    #[serde(default)]
    pub split: Option<String>,
    /// What a trajectory id that an earlier trajectory of the run has means: `error` (the
    /// default: the record is rejected), `keep` or `suffix` (numbered `ID_2`, `ID_3`, ...).
    #[serde(default)]
    pub duplicate_ids: Option<String>,
}

/// A regex applied once per record; its named groups become variables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractSpec {
    /// Template of the text to search (usually one field, `{/prompt}`).
    pub from: String,
    /// The regular expression.
    #[serde(rename = "match")]
    pub pattern: String,
    /// A record the regex does not match is rejected.
    #[serde(default)]
    pub required: bool,
    /// Use the last match rather than the first.
    #[serde(default)]
    pub last: bool,
}

/// One turn taken from a field of the record.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedTurn {
    /// The role given to the turn.
    pub role: String,
    /// JSON pointer to the text in the record.
    pub text: String,
}

/// One rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Shown in diagnostics.
    #[serde(default)]
    pub name: Option<String>,
    /// Raw roles the rule applies to (one or a list); all roles when absent.
    #[serde(default)]
    pub role: Option<Value>,
    /// Positions the rule applies to (0-based; negative counts from the end).
    #[serde(default)]
    pub turn: Option<Value>,
    /// Positions in its group of the records whose turns the rule applies to.
    #[serde(default)]
    pub member: Option<Value>,
    /// Regular expression the turn's text must match; its named groups feed the templates.
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// Emit once per non-overlapping match instead of once per turn.
    #[serde(default)]
    pub each: bool,
    /// Use the last match rather than the first.
    #[serde(default)]
    pub last: bool,
    /// Steps the rule produces; an empty list drops the turn.
    #[serde(default)]
    pub emit: Option<Vec<Map<String, Value>>>,
    /// The rule applies only when this template holds (renders more than nothing, "", [] or {}).
    #[serde(default)]
    pub when: Option<String>,
    /// Template of the reason a record with a turn this rule applies to is rejected.
    #[serde(default)]
    pub reject: Option<String>,
}

/// The final-answer convention.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishSpec {
    /// Template applied to the last step when it is a message whose content lacks `unless`;
    /// `{content}` is the message text.
    pub wrap: String,
    /// Text whose presence means the message is already marked.
    #[serde(default = "default_finish_marker")]
    pub unless: String,
}

fn default_finish_marker() -> String {
    "<finish>".to_owned()
}

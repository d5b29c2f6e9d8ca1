//! What a side format provides: the trait an input format implements, in its own folder, so that
//! `join` reads its files as side files (`--reflections-from NAME`, `--rewards-from NAME`), and
//! what a side record attaches. The formats' side formats are listed by the formats registry
//! (`crate::formats::side_formats`); `generic` (`super::generic`), which reads declared paths,
//! is the one built into `join`.

use std::fmt;

use serde_json::{json, Map, Number, Value};

use super::key::kind;

/// How `join` reads the records of one side format: their keys, the trajectory keys they match,
/// their loops and iterations for the memory window, and what each record attaches. Everything
/// but [`SideFormat::prepare`] and [`SideFormat::attach`] is asked once, when a side set is
/// set up; those two run once per record.
pub trait SideFormat: fmt::Debug + Sync {
    /// The name `--reflections-from` and `--rewards-from` take (the format's `--from` name).
    fn name(&self) -> &'static str;

    /// What `join --help` says of the format, in parentheses after its name: its key, and what
    /// else a user should know (`key {loop_id}#{iteration}`).
    fn help(&self) -> &'static str;

    /// The key expressions of a record (see [`super::key`]): a record has the keys of all of
    /// them (those whose fields are missing are passed over, but one must give a key).
    /// `--reflections-key` / `--rewards-key` replace them.
    fn keys(&self) -> Vec<String>;

    /// The key expressions of a trajectory, matched against the record keys; `--trajectory-key`
    /// replaces them. The default is `id`: the id the format's own converter gives the
    /// trajectory made from the same fields.
    fn trajectory_keys(&self) -> &'static [&'static str] {
        &["id"]
    }

    /// Where the memory window (`--memory-window`) finds a record's loop and iteration, and a
    /// trajectory's; `None` (the default) when the format's records have none.
    fn window(&self) -> Option<WindowKeys> {
        None
    }

    /// Readies `record`, a JSON object read from `file` (the path as given), before its keys
    /// are read: [`Prepared::Skip`] when the format does not attach such records (they are
    /// counted as skipped), or a field added from outside the record (its path) for the keys
    /// and the memory window to read. The default reads every record as it is.
    fn prepare(&self, _record: &mut Value, _file: &str) -> Prepared {
        Prepared::Read
    }

    /// What `record` attaches; `key` is its first key. An error is a message about the record
    /// (the side file and line are added to it).
    fn attach(&self, record: &Value, key: &str) -> Result<Attach, String>;
}

/// What [`SideFormat::prepare`] did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// The format does not attach it: it is counted as skipped, not read.
    Skip,
    /// It is read as it is.
    Read,
    /// This top-level field was added for its keys and memory window to read; it is removed
    /// again before [`SideFormat::attach`] sees the record.
    Added(&'static str),
}

/// The texts of the memory window's key expressions (see [`super::spec::WindowSpec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowKeys {
    /// The loop (group) of a side record.
    pub group: &'static str,
    /// The iteration of a side record (an integer, or a string of decimal digits).
    pub iteration: &'static str,
    /// The loop of a trajectory that no record of the set matched.
    pub trajectory_group: &'static str,
    /// The iteration of such a trajectory.
    pub trajectory_iteration: &'static str,
}

/// What one side record attaches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attach {
    /// `details.reward`.
    pub reward: Option<Number>,
    /// `details.reward_components`: (name, value) in record order.
    pub components: Option<Vec<(String, Number)>>,
    /// `details.outcome`.
    pub outcome: Option<Outcome>,
    /// One entry of `details.reflections`.
    pub reflection: Option<Value>,
    /// `(step index, reward)` for the steps' `reward`.
    pub step_rewards: Vec<(usize, f64)>,
}

/// The outcome statuses of `schemas/details.schema.json`.
pub const OUTCOMES: &[&str] = &[
    "success",
    "partial_success",
    "failure",
    "timeout",
    "unknown",
];

/// The outcome a side record gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `{"status": status, "native": …}` from a generic file: native is the boolean read, or
    /// (`None`) the status string itself.
    Status {
        /// One of [`OUTCOMES`].
        status: &'static str,
        /// The boolean the status was read from.
        native: Option<bool>,
    },
    /// A whole `details.outcome` object, as a format's converter builds it.
    Value(Value),
}

impl Outcome {
    /// The `details.outcome` value.
    pub fn to_value(&self) -> Value {
        match self {
            Outcome::Status { status, native } => {
                let native =
                    native.map_or_else(|| Value::String((*status).to_owned()), Value::Bool);
                json!({"status": status, "native": native})
            }
            Outcome::Value(v) => v.clone(),
        }
    }
}

/// Reward components read from the object `c` found at `at` (a pointer, for messages): every
/// value must be a number.
pub fn components(c: &Map<String, Value>, at: &str) -> Result<Vec<(String, Number)>, String> {
    c.iter()
        .map(|(name, v)| match v {
            Value::Number(n) => Ok((name.clone(), n.clone())),
            other => Err(format!(
                "value {at}/{name}: is {}; reward components are numbers",
                kind(other)
            )),
        })
        .collect()
}

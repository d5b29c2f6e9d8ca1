//! A join stage's options: the keys of a `[[join]]` table and the flags of `trajkit join` (one
//! definition; the command line adds its inputs, output and rejects file).

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::formats::side_format;
use crate::join::{
    Conflicts, Duplicates, GenericFields, IndexError, Join, JoinPolicies, KeyExpr, Orphans,
    SideFrom, SideIndex, SideSet, SideSpec, Unmatched,
};

/// What a join attaches, from which side files, by which keys, under which policies.
///
/// The field names are the pipeline keys; with the `cli` feature, the flags of `trajkit join`
/// (`--reflections-from` for `reflections_from`). A table deserializes with the defaults the
/// flags have.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "join",
    description = "A join stage (trajkit join): reflections and rewards from side files attached to the trajectories they match. The keys are the long options of `trajkit join`, in snake_case, with the same values and defaults."
)]
pub struct JoinConfig {
    /// Side files of reflections (JSON lines or a JSON array; .gz/.zst read).
    #[cfg_attr(feature = "cli", arg(long, num_args = 1.., value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)))]
    pub reflections: Vec<String>,
    /// Format of the --reflections files.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "FORMAT", value_parser = side_format))]
    #[serde(default, deserialize_with = "side_from")]
    #[schemars(schema_with = "side_from_schema")]
    pub reflections_from: SideFrom,
    /// Side files of rewards.
    #[cfg_attr(feature = "cli", arg(long, num_args = 1.., value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)))]
    pub rewards: Vec<String>,
    /// Format of the --rewards files.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "FORMAT", value_parser = side_format))]
    #[serde(default, deserialize_with = "side_from")]
    #[schemars(schema_with = "side_from_schema")]
    pub rewards_from: SideFrom,
    /// Key of a generic side record (pointer, field path or template).
    #[cfg_attr(feature = "cli", arg(long, value_name = "EXPR"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub key: Option<KeyExpr>,
    /// Key of a --reflections record, instead of its format's (or --key).
    #[cfg_attr(feature = "cli", arg(long, value_name = "EXPR"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub reflections_key: Option<KeyExpr>,
    /// Key of a --rewards record, instead of its format's (or --key).
    #[cfg_attr(feature = "cli", arg(long, value_name = "EXPR"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub rewards_key: Option<KeyExpr>,
    /// Key of a trajectory: `id` (the default of most side formats), a details path or a
    /// template (`help::trajectory_key` names the formats).
    #[cfg_attr(feature = "cli", arg(long, value_name = "EXPR", help = help::trajectory_key()))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "Option<String>",
        description = "Key of a trajectory: `id` (the default of most side formats), a details path or a template (`trajkit join --help` names each format's)."
    )]
    pub trajectory_key: Option<KeyExpr>,
    /// Generic: the reward (a number, or a boolean read as 1.0 / 0.0).
    #[cfg_attr(feature = "cli", arg(long, value_name = "POINTER"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Generic: reward components (an object of numbers).
    #[cfg_attr(feature = "cli", arg(long, value_name = "POINTER"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<String>,
    /// Generic: the outcome (success, partial_success, failure, timeout, unknown, or a
    /// boolean read as success / failure).
    #[cfg_attr(feature = "cli", arg(long, value_name = "POINTER"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Generic: per-step rewards (a list with a number or null per step, or of
    /// {"step": i, "reward": r}).
    #[cfg_attr(feature = "cli", arg(long, value_name = "POINTER"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_rewards: Option<String>,
    /// Generic: a reflection's text.
    #[cfg_attr(feature = "cli", arg(long, value_name = "POINTER"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Attach the reflections of the previous N iterations of the same loop as
    /// `details.prior_reflections` (`help::memory_window` names the side formats with loops).
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "N", help = help::memory_window()))]
    #[serde(default)]
    #[schemars(
        description = "Attach the reflections of the previous N iterations of the same loop as `details.prior_reflections` (`trajkit join --help` names the side formats with loops)."
    )]
    pub memory_window: usize,
    /// A trajectory no side record matches: keep, drop or reject.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "POLICY"))]
    #[serde(default)]
    pub unmatched: Unmatched,
    /// A side record no trajectory matches: report (warnings) or reject (to --rejects, exit 1).
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "POLICY"))]
    #[serde(default)]
    pub orphans: Orphans,
    /// Several side records with one key: first, last, all, or error.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "POLICY"))]
    #[serde(default)]
    pub duplicates: Duplicates,
    /// Two different values for one reward, component, outcome or step reward: error (reject
    /// the trajectory), keep (the value already there) or replace.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "POLICY"))]
    #[serde(default)]
    pub conflicts: Conflicts,
}

/// A side format by name, from the registry.
fn side_from<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SideFrom, D::Error> {
    let name = String::deserialize(d)?;
    side_format(&name).map_err(serde::de::Error::custom)
}

/// The schema of a side format's name: `generic` (the default), then the registry's.
fn side_from_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut names: Vec<&str> = crate::formats::side_formats().map(SideFrom::name).collect();
    names.sort_by_key(|n| *n != SideFrom::Generic.name());
    schemars::json_schema!({"type": "string", "enum": names, "default": SideFrom::Generic.name()})
}

impl JoinConfig {
    /// The side sets of the options (no file is read), or why they are wrong.
    pub fn side_sets(&self) -> Result<Vec<SideSet>, ConfigError> {
        let sets: Vec<SideSet> = [
            self.side_set(
                "reflections",
                &self.reflections,
                self.reflections_from,
                self.reflections_key.as_ref(),
            )?,
            self.side_set(
                "rewards",
                &self.rewards,
                self.rewards_from,
                self.rewards_key.as_ref(),
            )?,
        ]
        .into_iter()
        .flatten()
        .collect();
        if sets.is_empty() {
            return Err(ConfigError::Invalid(
                "nothing to join: give --reflections FILE... and/or --rewards FILE...".into(),
            ));
        }
        let generic_only = [
            self.key.is_some(),
            self.value.is_some(),
            self.components.is_some(),
            self.outcome.is_some(),
            self.step_rewards.is_some(),
            self.text.is_some(),
        ];
        let generic = |from| matches!(from, SideFrom::Generic);
        let any_generic = (!self.reflections.is_empty() && generic(self.reflections_from))
            || (!self.rewards.is_empty() && generic(self.rewards_from));
        if generic_only.contains(&true) && !any_generic {
            return Err(ConfigError::Invalid(
                "--key, --value, --components, --outcome, --step-rewards and --text are for \
                 generic side files, and every side set here has a format of its own (its \
                 key is --reflections-key or --rewards-key)"
                    .into(),
            ));
        }
        Ok(sets)
    }

    fn side_set(
        &self,
        name: &str,
        files: &[String],
        from: SideFrom,
        key: Option<&KeyExpr>,
    ) -> Result<Option<SideSet>, ConfigError> {
        if files.is_empty() {
            return Ok(None);
        }
        let generic = matches!(from, SideFrom::Generic);
        let fields = if generic {
            GenericFields {
                reward: self.value.clone(),
                components: self.components.clone(),
                outcome: self.outcome.clone(),
                step_rewards: self.step_rewards.clone(),
                text: self.text.clone(),
            }
        } else {
            GenericFields::default()
        };
        let key = key.or(if generic { self.key.as_ref() } else { None });
        let spec = SideSpec::new(from, key.cloned(), self.trajectory_key.clone(), fields)
            .map_err(|e| ConfigError::Invalid(format!("--{name}: {e}")))?;
        Ok(Some(SideSet {
            name: name.to_owned(),
            spec,
            files: files.to_vec(),
        }))
    }

    /// Reads and indexes the side files of `sets` (from [`JoinConfig::side_sets`]) and makes
    /// the join; records larger than `max_record_bytes` are problems of the side files.
    pub fn build(&self, sets: Vec<SideSet>, max_record_bytes: usize) -> Result<Join, IndexError> {
        Ok(Join {
            index: SideIndex::build(sets, self.duplicates, max_record_bytes)?,
            policies: JoinPolicies {
                unmatched: self.unmatched,
                conflicts: self.conflicts,
                memory_window: self.memory_window,
            },
        })
    }
}

/// Help texts that name the registry's side formats.
#[cfg(feature = "cli")]
mod help {
    use crate::formats::side_formats;
    use crate::join::{SideFormat, SideFrom};

    /// `--trajectory-key`, naming the side formats whose trajectory key is not `id`.
    pub fn trajectory_key() -> String {
        let others = listed(|f| f.trajectory_keys() != ["id"]);
        let default = if others.is_empty() {
            "the default".to_owned()
        } else {
            format!("the default for every format but {others}")
        };
        format!(
            "Key of a trajectory: `id` ({default}), a details path \
             (`/details/source/native_ids/task_id`) or a template"
        )
    }

    /// `--memory-window`, naming the side formats whose records have loops.
    pub fn memory_window() -> String {
        format!(
            "Attach the reflections of the previous N iterations of the same loop as \
             `details.prior_reflections` ({} side files)",
            listed(|f| f.window().is_some())
        )
    }

    /// The names of the registry's side formats that `pick` picks, as prose (`a, b and c`).
    fn listed(pick: impl Fn(&dyn SideFormat) -> bool) -> String {
        let names: Vec<&str> = side_formats()
            .filter_map(|s| match s {
                SideFrom::Format(f) if pick(f) => Some(f.name()),
                _ => None,
            })
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

//! The convert stage's options: which converter reads an input, and the ADP it writes; the
//! `[convert]` table of a pipeline file.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::ConfigError;
use crate::convert::{Converter, FormatOptions, OptionValue, OutputFormat};
use crate::formats::{lookup, spec};
use crate::model::upgrade::{DetailsDecode, UpgradeOptions};
use crate::model::AdpVersion;

/// The converter of a converter spec file (`spec`), of a format's name (`from`), or `None`
/// for `auto` (detected per input).
pub fn named_converter(
    from: &str,
    spec: Option<&str>,
) -> Result<Option<&'static dyn Converter>, ConfigError> {
    Ok(match (spec, from) {
        (Some(path), _) => Some(spec::load_file(path).map_err(spec_errors)?),
        (None, "auto") => None,
        (None, name) => Some(lookup(name).map_err(ConfigError::Invalid)?),
    })
}

/// Every problem of a converter spec, a line each.
fn spec_errors(errors: Vec<spec::SpecError>) -> ConfigError {
    let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    ConfigError::Invalid(format!(
        "the converter spec is invalid:\n{}",
        lines.join("\n")
    ))
}

/// The upgrade to ADP `target`, decoding the JSON strings in `details` that `decode_details`
/// names (comma-separated keys, or `*` for every one that holds an object or array).
pub fn upgrade_options(
    target: AdpVersion,
    decode_details: Option<&str>,
) -> Result<UpgradeOptions, ConfigError> {
    let decode_details = match decode_details {
        None => DetailsDecode::None,
        Some("*") => DetailsDecode::All,
        Some(keys) => DetailsDecode::Keys(keys.split(',').map(str::to_owned).collect()),
    };
    if decode_details != DetailsDecode::None && !target.has_free_details() {
        return Err(ConfigError::Invalid(format!(
            "--decode-details needs ADP 1.1.0 or later (details values are strings in {target})"
        )));
    }
    Ok(UpgradeOptions {
        target,
        decode_details,
    })
}

/// The output format of `--to NAME`: `adp`, or a format that can be written (its converter has
/// a [`Converter::writer`]), which is built from ADP 1.5.0.
pub fn output_format(name: &str, version: AdpVersion) -> Result<OutputFormat, ConfigError> {
    if name == "adp" {
        return Ok(OutputFormat::Adp);
    }
    let writable: Vec<&'static dyn Converter> = crate::formats::converters()
        .into_iter()
        .filter(|c| c.writer().is_some())
        .collect();
    match writable.iter().find(|c| c.name() == name) {
        Some(_) if version != AdpVersion::LATEST => Err(ConfigError::Invalid(format!(
            "--to {name} is built from ADP 1.5.0; leave --adp-version at its default"
        ))),
        Some(c) => Ok(OutputFormat::Native(*c)),
        None => {
            let names: Vec<&str> = writable.iter().map(|c| c.name()).collect();
            Err(ConfigError::Invalid(format!(
                "unknown output format {name:?} (supported: adp, {})",
                names.join(", ")
            )))
        }
    }
}

/// The convert stage's options: the `[convert]` table of a pipeline file and, with the `cli`
/// feature, the flags of `trajkit convert` of the same names (one definition).
///
/// Besides its fixed keys, the table holds the options the formats declare
/// ([`crate::convert::FormatOption`], each in its format's folder): keys of the table, and
/// flags of their own (`--idle-gap`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[schemars(inline, extend("additionalProperties" = false))]
pub struct ConvertConfig {
    /// ADP version to write: 1.5.0 (default), 1.4.0 ... 1.0.0, or unversioned.
    #[cfg_attr(
        feature = "cli",
        arg(long, default_value = "1.5.0", value_name = "VERSION")
    )]
    #[serde(default = "latest", deserialize_with = "adp_version")]
    #[schemars(with = "String", extend("default" = "1.5.0"))]
    pub adp_version: AdpVersion,
    /// Decode JSON-encoded strings in `details` into JSON values: a comma-separated list of
    /// keys, or `*` for every value that holds a JSON object or array (1.1.0+ only).
    #[cfg_attr(feature = "cli", arg(long, value_name = "KEYS"))]
    pub decode_details: Option<String>,
    /// Reject a record whose reader could not map a value or met a line of the wrong type,
    /// rather than keep the value in `details` and count it (docs/inputs.md, "What a reader
    /// leaves out").
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub strict: bool,
    /// The formats' options: keys of the table, and flags.
    #[cfg_attr(feature = "cli", command(flatten))]
    #[serde(flatten, deserialize_with = "format_options_field")]
    #[schemars(schema_with = "format_options_schema")]
    pub formats: FormatOptions,
}

impl Default for ConvertConfig {
    fn default() -> Self {
        ConvertConfig {
            adp_version: latest(),
            decode_details: None,
            strict: false,
            formats: FormatOptions::default(),
        }
    }
}

fn latest() -> AdpVersion {
    AdpVersion::LATEST
}

/// An ADP version by name (`1.5.0`, `1.5`, `unversioned`).
fn adp_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<AdpVersion, D::Error> {
    let name = String::deserialize(d)?;
    name.parse().map_err(serde::de::Error::custom)
}

/// The keys of `[convert]` that are not the formats' options.
pub const FIXED_KEYS: &[&str] = &["adp_version", "decode_details", "strict"];

/// The formats' options of a `[convert]` table's keys other than [`FIXED_KEYS`], or every
/// problem as `(key, message)`: a key no format declares, a value of the wrong type.
pub fn format_options(table: &Map<String, Value>) -> Result<FormatOptions, Vec<(String, String)>> {
    let mut opts = FormatOptions::default();
    let mut problems = Vec::new();
    for (key, value) in table {
        let Some(option) = crate::formats::option(key) else {
            problems.push((key.clone(), "not a key of [convert]".to_owned()));
            continue;
        };
        let wrong_type = || format!("not a {}", option.default.type_name());
        let value = match (option.default, value) {
            (OptionValue::Bool(_), Value::Bool(b)) => Ok(OptionValue::Bool(*b)),
            (OptionValue::Int(_), v) => v.as_i64().map(OptionValue::Int).ok_or_else(wrong_type),
            (OptionValue::Choice(..), Value::String(name)) => OptionValue::choice(option, name),
            _ => Err(wrong_type()),
        };
        if let Err(e) = value.and_then(|v| opts.set(option, v)) {
            problems.push((key.clone(), e));
        }
    }
    if problems.is_empty() {
        Ok(opts)
    } else {
        Err(problems)
    }
}

/// [`format_options`] as serde reads the flattened keys; the first problem is the error.
fn format_options_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<FormatOptions, D::Error> {
    let table = Map::<String, Value>::deserialize(d)?;
    format_options(&table).map_err(|problems| {
        let (key, message) = &problems[0]; // ok: an error holds at least one problem
        serde::de::Error::custom(format!("{key}: {message}"))
    })
}

/// The formats' options as properties of `[convert]`: each with its type, default and help.
fn format_options_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut properties = Map::new();
    for o in crate::formats::options() {
        let mut p = json!({
            "type": o.default.type_name(),
            "default": o.default.to_json(),
            "description": format!("{} (convert --{}).", o.help, o.flag),
        });
        if let OptionValue::Choice(_, names) = o.default {
            p["enum"] = json!(names);
        }
        properties.insert(o.key.to_owned(), p);
    }
    schemars::json_schema!({"type": "object", "properties": properties})
}

/// The options the formats declare ([`crate::convert::FormatOption`]) as flags: one per option,
/// named and described by its declaration, so a format adds a flag by declaring an option in
/// its folder (docs/inputs.md, "Mapping options").
#[cfg(feature = "cli")]
mod flags {
    use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

    use crate::convert::{FormatOption, FormatOptions, OptionValue};

    impl Args for FormatOptions {
        fn augment_args(cmd: Command) -> Command {
            let cmd = cmd.next_help_heading("Format options");
            crate::formats::options().fold(cmd, |cmd, o| cmd.arg(format_flag(o)))
        }

        fn augment_args_for_update(cmd: Command) -> Command {
            Self::augment_args(cmd)
        }
    }

    /// The flag of option `o`.
    fn format_flag(o: &'static FormatOption) -> Arg {
        let parser: clap::builder::ValueParser = match o.default {
            OptionValue::Bool(_) => clap::value_parser!(bool),
            OptionValue::Int(_) => clap::value_parser!(i64).into(),
            OptionValue::Choice(_, names) => clap::builder::PossibleValuesParser::new(names).into(),
        };
        Arg::new(o.key)
            .long(o.flag)
            .value_name(o.value_name)
            .help(format!("{} [default: {}]", o.help, o.default))
            .action(ArgAction::Set)
            .value_parser(parser)
    }

    impl FromArgMatches for FormatOptions {
        fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
            let mut args = FormatOptions::default();
            args.update_from_arg_matches(matches)?;
            Ok(args)
        }

        fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
            for o in crate::formats::options() {
                let value = match o.default {
                    OptionValue::Bool(_) => matches
                        .get_one::<bool>(o.key)
                        .copied()
                        .map(OptionValue::Bool),
                    OptionValue::Int(_) => {
                        matches.get_one::<i64>(o.key).copied().map(OptionValue::Int)
                    }
                    OptionValue::Choice(..) => match matches.get_one::<String>(o.key) {
                        Some(name) => Some(OptionValue::choice(o, name).map_err(|e| {
                            clap::Error::raw(clap::error::ErrorKind::ValueValidation, e)
                        })?),
                        None => None,
                    },
                };
                if let Some(v) = value {
                    self.set(o, v).map_err(|e| {
                        clap::Error::raw(clap::error::ErrorKind::ValueValidation, e)
                    })?;
                }
            }
            Ok(())
        }
    }
}

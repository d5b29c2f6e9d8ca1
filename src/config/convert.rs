//! The convert stage's options: which converter reads an input, and the ADP it writes.

use super::ConfigError;
use crate::convert::{Converter, OutputFormat};
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

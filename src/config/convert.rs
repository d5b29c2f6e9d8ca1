//! The convert stage's options: which converter reads an input, and the ADP it writes.

use super::ConfigError;
use crate::convert::Converter;
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

//! ADP schema versions and what each one allows.

use std::fmt;
use std::str::FromStr;

/// An ADP standardized-schema version trajkit reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdpVersion {
    /// The late-2025 form without `schema_version` (what ADP's published samples use).
    Unversioned,
    /// 1.0.0
    V1_0,
    /// 1.1.0
    V1_1,
    /// 1.2.0
    V1_2,
    /// 1.3.0
    V1_3,
    /// 1.4.0
    V1_4,
    /// 1.5.0, the newest; trajkit writes it by default.
    V1_5,
}

impl AdpVersion {
    /// Every version, oldest first.
    pub const ALL: [AdpVersion; 7] = [
        AdpVersion::Unversioned,
        AdpVersion::V1_0,
        AdpVersion::V1_1,
        AdpVersion::V1_2,
        AdpVersion::V1_3,
        AdpVersion::V1_4,
        AdpVersion::V1_5,
    ];

    /// The version trajkit writes unless told otherwise.
    pub const LATEST: AdpVersion = AdpVersion::V1_5;

    /// The `schema_version` string, or `None` for the unversioned form.
    pub fn schema_version(self) -> Option<&'static str> {
        match self {
            AdpVersion::Unversioned => None,
            AdpVersion::V1_0 => Some("1.0.0"),
            AdpVersion::V1_1 => Some("1.1.0"),
            AdpVersion::V1_2 => Some("1.2.0"),
            AdpVersion::V1_3 => Some("1.3.0"),
            AdpVersion::V1_4 => Some("1.4.0"),
            AdpVersion::V1_5 => Some("1.5.0"),
        }
    }

    /// The name used on the command line and in schema file names.
    pub fn name(self) -> &'static str {
        self.schema_version().unwrap_or("unversioned")
    }

    /// Reads the version of a record from its `schema_version` value (absent means unversioned).
    pub fn from_schema_version(value: Option<&str>) -> Result<AdpVersion, UnsupportedVersion> {
        match value {
            None => Ok(AdpVersion::Unversioned),
            Some(v) => AdpVersion::ALL
                .into_iter()
                .find(|x| x.schema_version() == Some(v))
                .ok_or_else(|| UnsupportedVersion(v.to_owned())),
        }
    }

    /// Tool-call link rules (ADP 1.3+): adjacent action/observation pairs carry a shared
    /// `tool_call_id`, each id answered exactly once.
    pub fn has_tool_call_links(self) -> bool {
        self >= AdpVersion::V1_3
    }

    /// `details` values may be any JSON value (1.1+); older forms require strings.
    pub fn has_free_details(self) -> bool {
        self >= AdpVersion::V1_1
    }

    /// `reasoning_content` on actions and `reward` on steps (1.0+).
    pub fn has_step_extras(self) -> bool {
        self >= AdpVersion::V1_0
    }

    /// `json_observation` steps. Upstream added this class on a side branch only; trajkit
    /// accepts it in 1.5.0 data (see docs/adp-versions.md).
    pub fn has_json_observation(self) -> bool {
        self >= AdpVersion::V1_5
    }

    /// `available_apis` on the trajectory (1.1 to 1.4; renamed `available_custom_tools` in 1.5).
    pub fn has_available_apis(self) -> bool {
        (AdpVersion::V1_1..=AdpVersion::V1_4).contains(&self)
    }

    /// `available_custom_tools` on the trajectory (1.5).
    pub fn has_available_custom_tools(self) -> bool {
        self >= AdpVersion::V1_5
    }

    /// `available_code_languages` on the trajectory, equal to the languages used (1.4+).
    pub fn has_available_code_languages(self) -> bool {
        self >= AdpVersion::V1_4
    }
}

impl fmt::Display for AdpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `schema_version` value trajkit does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported ADP schema_version {0:?} (supported: unversioned, 1.0.0 to 1.5.0)")]
pub struct UnsupportedVersion(pub String);

impl FromStr for AdpVersion {
    type Err = UnsupportedVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "unversioned" | "legacy" => Ok(AdpVersion::Unversioned),
            "1.0" | "1.1" | "1.2" | "1.3" | "1.4" | "1.5" => {
                AdpVersion::from_schema_version(Some(&format!("{s}.0")))
            }
            other => AdpVersion::from_schema_version(Some(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_short_forms() {
        assert_eq!("1.5.0".parse::<AdpVersion>(), Ok(AdpVersion::V1_5));
        assert_eq!("1.3".parse::<AdpVersion>(), Ok(AdpVersion::V1_3));
        assert_eq!(
            "unversioned".parse::<AdpVersion>(),
            Ok(AdpVersion::Unversioned)
        );
        assert!("2.0.0".parse::<AdpVersion>().is_err());
        assert!("1.6".parse::<AdpVersion>().is_err());
    }

    #[test]
    fn names_round_trip() {
        for v in AdpVersion::ALL {
            assert_eq!(v.name().parse::<AdpVersion>(), Ok(v));
        }
    }

    #[test]
    fn links_start_at_1_3() {
        assert!(!AdpVersion::V1_2.has_tool_call_links());
        assert!(AdpVersion::V1_3.has_tool_call_links());
        assert!(AdpVersion::V1_5.has_tool_call_links());
    }
}

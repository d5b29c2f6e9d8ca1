//! The standardized trajectory: an id, a list of steps and free-form details.

use serde::{Deserialize, Serialize};

use super::step::{JsonObject, Step};

/// One ADP trajectory, in any supported version.
///
/// `schema_version` is `None` for the unversioned late-2025 form. Keys are written in the order
/// of the fields below; `available_*` lists are written only when set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// ADP schema version (`"1.5.0"`), absent in unversioned data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// Unique id of the trajectory.
    pub id: String,
    /// The steps, in order.
    pub content: Vec<Step>,
    /// API names available to this trajectory (ADP 1.1 to 1.4; renamed
    /// `available_custom_tools` in 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_apis: Option<Vec<String>>,
    /// Custom tool names available to this trajectory (ADP 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_custom_tools: Option<Vec<String>>,
    /// The code languages used by the trajectory's code actions (ADP 1.4+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_code_languages: Option<Vec<String>>,
    /// Dataset-specific metadata and trajkit's attachments (`source`, `outcome`, `reward`, ...).
    #[serde(default)]
    pub details: JsonObject,
}

impl Trajectory {
    /// A trajectory as converters build it: no version yet (the upgrade sets it), no
    /// `available_*` lists (the upgrade infers `available_code_languages`).
    pub fn new(id: String, content: Vec<Step>, details: JsonObject) -> Trajectory {
        Trajectory {
            schema_version: None,
            id,
            content,
            available_apis: None,
            available_custom_tools: None,
            available_code_languages: None,
            details,
        }
    }

    /// Sorted, de-duplicated languages of the code actions, or `None` when there are none.
    pub fn used_code_languages(&self) -> Option<Vec<String>> {
        let mut langs: Vec<String> = self
            .content
            .iter()
            .filter_map(|s| match s {
                Step::CodeAction(c) => Some(c.language.clone()),
                _ => None,
            })
            .collect();
        langs.sort();
        langs.dedup();
        (!langs.is_empty()).then_some(langs)
    }
}

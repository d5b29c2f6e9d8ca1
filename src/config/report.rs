//! The `[report]` table of a pipeline file: a dataset report written after the run.

use schemars::JsonSchema;
use serde::Deserialize;

/// `[report]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ReportConfig {
    /// The HTML page to write.
    #[schemars(length(min = 1))]
    pub output: String,
}

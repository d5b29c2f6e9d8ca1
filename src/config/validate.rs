//! The `[validate]` table of a pipeline file: when a run fails, and where every stage's
//! rejected records go.

use schemars::JsonSchema;
use serde::Deserialize;

/// `[validate]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ValidateConfig {
    /// Rejected records over records read above which the run fails (exit 1); trajkit run
    /// --max-reject-rate overrides it.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub max_reject_rate: f64,
    /// The rejects file of every stage (JSON lines, each with its stage: `convert`, `join[N]`,
    /// `export[N]`).
    #[schemars(length(min = 1))]
    pub rejects: Option<String>,
}

//! The `[partition]` table of a pipeline file: what `trajkit run --partition I/N` partitions by.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::engine::partition::PartitionBy;

/// `[partition]` (I/N itself is given on the command line, one per run).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct PartitionConfig {
    /// path: the input's path relative to this file's directory (each partition reads its own
    /// inputs); id: the trajectory id (each partition reads every input and keeps its
    /// trajectories). trajkit run --partition-by overrides it.
    #[serde(default = "by_path")]
    #[schemars(extend("default" = "path"))]
    pub by: PartitionBy,
}

fn by_path() -> PartitionBy {
    PartitionBy::Path
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig { by: by_path() }
    }
}

//! Export: ADP trajectories into training datasets, as sharded, split JSON lines or Parquet
//! files with a manifest and a dataset card.
//!
//! - [`options`]: the target and the SFT options; [`settings`]: [`ExportOptions`]; [`filter`]: which
//!   trajectories are written; [`summary`]: the counts;
//! - [`encode`]: one trajectory into a row of the target (or why it is filtered or rejected);
//!   [`render`]: the row and its counts, or why there is none, shared by every target;
//! - [`conversation`]: a trajectory as a target-independent conversation (the mapping rules,
//!   and why a trajectory cannot train);
//! - [`openai`], [`hf`], [`sharegpt`]: the SFT targets, one file each (`adp` writes the
//!   upgraded trajectories themselves); [`parquet`]: Parquet shard files; [`tokens`]: the
//!   pre-tokenized target, and [`sample`]: one conversation into its token ids and mask
//!   ([`crate::training`] renders and tokenizes);
//! - [`code_tools`], [`tools`], [`infer`]: code actions as tool calls, tool specs from
//!   `--tools` or inferred;
//! - [`split`]: the stable split hash; [`shard`]: one split's shard files; [`writer`]: the
//!   ordered writer of one export (dedup, shards, counts, checkpoints);
//! - [`dir`]: the output directory and [`ExportError`]; [`manifest`]: `manifest.json`, the card
//!   and the commit that writes them (`merge-manifests` combines a partitioned export's parts:
//!   [`crate::commands::merge_manifests`]);
//! - [`stage`]: [`ExportStage`], an export as a stage of `trajkit run`.
//!
//! The `export` command ([`crate::commands::export`]) streams inputs through [`encode`] and a
//! [`writer`].

pub mod code_tools;
pub mod conversation;
pub mod dir;
pub mod encode;
pub mod filter;
pub mod hf;
pub mod infer;
pub mod manifest;
pub mod openai;
pub mod options;
pub mod parquet;
pub mod render;
pub mod sample;
pub mod settings;
pub mod shard;
pub mod sharegpt;
pub mod split;
pub mod stage;
pub mod summary;
pub mod target;
pub mod tokens;
pub mod tools;
pub mod writer;

pub use dir::ExportError;
pub use encode::{
    encode_any, export_record, export_trajectory, export_upgraded, AnyRow, Encode, Encoded,
    Encoder, Outcome, RenderError, Share, SharedCounts,
};
pub use filter::{Filtered, Filters};
pub use options::{visible, InferTools, SftOptions, Thoughts, TrainOn};
pub use sample::{Overlength, SampleError, Skip, Training, MAX_MESSAGE_BYTES};
pub use settings::ExportOptions;
pub use stage::ExportStage;
pub use summary::{ExportSummary, FilteredBy, TokenCounts};
pub use target::Target;
pub use writer::{ExportRestart, ShardCheckpoint};

//! Export: ADP trajectories into training datasets, as sharded, split JSON lines with a
//! manifest and a dataset card.
//!
//! - [`conversation`]: a trajectory as a target-independent conversation (the mapping rules,
//!   and why a trajectory cannot train);
//! - [`openai`], [`hf`], [`sharegpt`]: the SFT targets, one file each (`adp` writes the
//!   upgraded trajectories themselves);
//! - [`tools`]: code actions as tool calls, tool specs from `--tools` or inferred;
//! - [`split`]: the stable split hash; [`shard`]: shard files; [`manifest`]: `manifest.json`
//!   and the card.
//!
//! [`export_inputs`] streams the input through the pipeline: each record is parsed as ADP
//! (any version, like `convert --from adp`), upgraded to 1.5.0 and checked, filtered, rendered
//! and assigned its split in parallel; the ordered writer drops duplicates and writes shards,
//! so the output bytes do not depend on the thread count.

pub mod code_tools;
pub mod conversation;
mod encode;
pub mod hf;
pub mod infer;
pub mod manifest;
pub mod merge;
pub mod openai;
pub mod parquet;
pub mod shard;
pub mod sharegpt;
pub mod split;
pub mod tools;

pub use encode::*;

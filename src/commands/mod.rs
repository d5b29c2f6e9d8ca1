//! The commands: each composes stages over the engine, reading inputs and committing outputs.
//! The command-line front end (`src/cli/`) maps flags onto their options; any other front end
//! can call them the same way.

pub mod convert;
pub mod export;
pub mod files;
pub mod inputs;
pub mod join;
pub mod merge_manifests;
pub mod redact;
pub mod report;
pub mod run;
pub mod show;
pub mod stats;
pub mod validate;

//! trajkit: convert AI-agent logs into standardized ADP trajectories, validate them, and export
//! training data.
//!
//! The library has no command-line or terminal dependencies; the `trajkit` binary is a thin
//! layer over it.

pub mod convert;
pub mod export;
pub mod formats;
pub mod ingest;
pub mod join;
pub mod json;
pub mod model;
pub mod output;
pub mod partition;
pub mod pipeline;
pub mod rejects;
pub mod run;
pub mod stats;
pub mod validate;

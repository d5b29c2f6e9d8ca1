//! trajkit: convert AI-agent logs into standardized ADP trajectories, validate them, and export
//! training data.
//!
//! The library has no command-line or terminal dependencies; the `trajkit` binary is a thin
//! layer over it. Its layers, each using only those below it (docs/development.md, "Layout"):
//!
//! - [`commands`]: convert, validate, join, export, run, stats, report, show: stages composed
//!   over the engine;
//! - [`config`]: the pipeline file and each stage's options, as typed structs checked in one
//!   place (`trajkit run` and any other front end load a pipeline with
//!   [`config::pipeline::load`] and run it with [`commands::run::file`]);
//! - [`formats`]: the input formats, one folder each, and their registry;
//! - the stages: [`convert`] (what a format implements, checking and writing what it makes),
//!   [`join`], [`filter`], [`export`], [`validate`] (schemas, checks, diagnostics, reporters), and
//!   [`report`] (a dataset's counts, its HTML page, a trajectory made ready to read);
//! - [`engine`]: the streaming runner, outputs, rejects, partitions; it knows no format, stage
//!   or command;
//! - [`model`], [`parquet`], [`json`], [`ingest`], [`choice`], [`located`]: trajectories and
//!   their Parquet layout, JSON reading, framing, TOML read with the line of each value;
//! - [`training`]: chat templates and tokenizers, for training-ready exports.

pub mod choice;
pub mod commands;
pub mod config;
pub mod convert;
pub mod engine;
pub mod export;
pub mod filter;
pub mod formats;
pub mod ingest;
pub mod join;
pub mod json;
pub mod located;
pub mod model;
pub mod parquet;
pub mod redact;
pub mod report;
pub mod segment;
pub mod terminal;
pub mod training;
pub mod validate;

//! Configuration as data: the pipeline file and each stage's options, as typed serde structs
//! checked in one place. The command line maps its flags onto the same structs (with the `cli`
//! feature they derive `clap::Args`), so a flag, a pipeline key and its default are one
//! definition; the pipeline's JSON Schema is generated from them ([`schema`]).
//!
//! - [`convert`]: [`convert::ConvertConfig`], the `[convert]` table or `trajkit convert`'s
//!   options (with the formats' own); the input's converter and the ADP version to write;
//! - [`join`]: [`join::JoinConfig`], a `[[join]]` table or `trajkit join`'s options;
//! - [`export`]: [`export::ExportConfig`], an `[[export]]` table or `trajkit export`'s options;
//! - [`redact`]: [`redact::RedactConfig`], the `[redact]` table; [`rule_file`]: a rule file
//!   of the user's own (rules added, built-in ones disabled, values and paths allowed), read
//!   and checked;
//! - [`validate`], [`partition`], [`report`]: the `[validate]`, `[partition]` and `[report]`
//!   tables;
//! - [`pipeline`]: a whole pipeline file, read and checked ([`pipeline::load`]), every
//!   problem located by file, line and key; [`schema`]: its JSON Schema, generated.

pub mod convert;
pub mod export;
pub mod join;
pub mod partition;
pub mod pipeline;
pub mod redact;
pub mod report;
pub mod rule_file;
pub mod schema;
pub mod validate;

#[cfg(all(test, feature = "cli"))]
mod flag_tests;

/// Options that cannot work: wrong values or combinations (a usage error, exit 2 on the
/// command line), or a file they name that cannot be read (exit 3).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A value or combination of options that cannot work; the message names the options.
    #[error("{0}")]
    Invalid(String),
    /// A file the options name could not be read, or created, locked or written.
    #[error("{0}")]
    Io(String),
}

//! `trajkit formats`

use std::fmt::Write as _;

use clap::Args;
use trajkit::convert::Converter;
use trajkit::engine::output::print;
use trajkit::formats::{converters, spec};

use super::common::CliError;

/// List the input formats `convert --from` accepts.
///
/// Example: trajkit formats
#[derive(Debug, Args)]
pub struct FormatsArgs {}

/// Runs `formats`.
pub fn run(_args: FormatsArgs) -> Result<u8, CliError> {
    let mut text = String::new();
    for c in converters() {
        let _ = writeln!(text, "{:<14} {}", c.name(), c.description());
    }
    text.push_str(
        "\ndeclarative converters (converters/*.toml; --from NAME, or --spec FILE for your own):\n",
    );
    for c in spec::embedded() {
        let _ = writeln!(text, "{:<20} {}", c.name(), c.description());
    }
    print(&text).map_err(CliError::io)?;
    Ok(0)
}

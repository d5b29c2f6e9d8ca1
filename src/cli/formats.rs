//! `trajkit formats`

use clap::Args;
use trajkit::convert::{converters, spec, Converter};

use super::common::CliError;

/// List the input formats `convert --from` accepts.
#[derive(Debug, Args)]
pub struct FormatsArgs {}

/// Runs `formats`.
pub fn run(_args: FormatsArgs) -> Result<u8, CliError> {
    for c in converters() {
        println!("{:<14} {}", c.name(), c.description());
    }
    println!();
    println!(
        "declarative converters (converters/*.toml; --from NAME, or --spec FILE for your own):"
    );
    for c in spec::embedded() {
        println!("{:<20} {}", c.name(), c.description());
    }
    Ok(0)
}

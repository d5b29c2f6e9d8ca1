//! The command line: one file per subcommand. Doc comments are the help text.

mod common;
mod convert;
mod export;
mod formats;
mod join;
mod merge_manifests;
mod progress;
mod redact;
mod report;
mod run;
mod schema;
mod show;
mod stats;
mod validate;

use clap::{Parser, Subcommand};

pub use common::{CliError, GlobalArgs};

/// Convert AI-agent logs into standardized ADP trajectories, validate them, and export
/// training data.
///
/// Exit codes: 0 success, 1 data problems (invalid or rejected records), 2 usage errors,
/// 3 I/O errors.
#[derive(Debug, Parser)]
#[command(
    name = "trajkit",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Validate(validate::ValidateArgs),
    Convert(convert::ConvertArgs),
    Join(Box<join::JoinArgs>),
    Redact(Box<redact::RedactArgs>),
    Export(Box<export::ExportArgs>),
    Run(run::RunArgs),
    MergeManifests(merge_manifests::MergeManifestsArgs),
    Stats(stats::StatsArgs),
    Report(report::ReportArgs),
    Show(show::ShowArgs),
    Schema(schema::SchemaArgs),
    Formats(formats::FormatsArgs),
}

impl Cli {
    /// Runs the command; returns the process exit code.
    pub fn run(self) -> Result<u8, CliError> {
        self.global.configure_threads()?;
        match self.command {
            Command::Validate(a) => validate::run(a, &self.global),
            Command::Convert(a) => convert::run(a, &self.global),
            Command::Join(a) => join::run(*a, &self.global),
            Command::Redact(a) => redact::run(*a, &self.global),
            Command::Export(a) => export::run(*a, &self.global),
            Command::Run(a) => run::run(a, &self.global),
            Command::MergeManifests(a) => merge_manifests::run(a, &self.global),
            Command::Stats(a) => stats::run(a, &self.global),
            Command::Report(a) => report::run(a, &self.global),
            Command::Show(a) => show::run(a, &self.global),
            Command::Schema(a) => schema::run(a),
            Command::Formats(a) => formats::run(a),
        }
    }
}

//! Options and error handling shared by the subcommands.

use std::fmt;
use std::io;
use std::time::Instant;

use clap::Args;
use trajkit::commands::inputs::expand;
use trajkit::config::ConfigError;
use trajkit::engine::output::{warn, LockError, Stderr};
use trajkit::engine::pipeline::{PipelineError, RunOptions};
use trajkit::validate::report::{reporter, ReportFormat, Reporter, ValidationSummary};
use trajkit::validate::Diagnostic;

use super::progress::Bar;

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Print only errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more: every diagnostic of `convert`, not just the first 20.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Worker threads (default: one per core).
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
    /// Never draw progress bars (they are hidden anyway when stderr is not a terminal).
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Records larger than this many bytes are rejected without being parsed.
    #[arg(long, global = true, value_name = "BYTES", default_value_t = 256 << 20)]
    pub max_record_bytes: usize,
}

impl GlobalArgs {
    /// Sizes rayon's pool from `--threads`.
    pub fn configure_threads(&self) -> Result<(), CliError> {
        if let Some(n) = self.threads {
            if n == 0 {
                return Err(CliError::usage("--threads must be at least 1"));
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build_global()
                .map_err(|e| CliError::usage(format!("--threads: {e}")))?;
        }
        Ok(())
    }

    /// Runner options from the global flags.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            max_record_bytes: self.max_record_bytes,
            ..RunOptions::default()
        }
    }

    /// A progress bar for `inputs`, hidden when quiet, asked, or not on a terminal.
    pub fn progress(&self, inputs: &[String], what: &'static str) -> Bar {
        Bar::new(inputs, what, !(self.quiet || self.no_progress))
    }

    /// Prints `trajkit: MESSAGE` to stderr unless quiet: what the library notices on the way
    /// (a detected format, a directory entry skipped).
    pub fn notice(&self, message: &str) {
        if !self.quiet {
            warn(format_args!("trajkit: {message}"));
        }
    }

    /// How many diagnostics (and a join's orphans) are shown on stderr: none when quiet, the
    /// first 20, or all (`None`) with `-v`.
    pub fn shown_diagnostics(&self) -> Option<u64> {
        match (self.quiet, self.verbose) {
            (true, _) => Some(0),
            (false, 0) => Some(20),
            (false, _) => None,
        }
    }

    /// Prints a summary line to stderr unless quiet.
    pub fn summary(&self, line: fmt::Arguments<'_>) {
        if !self.quiet {
            warn(line);
        }
    }
}

/// A failed command: its message and exit code.
#[derive(Debug)]
pub struct CliError {
    /// 2 for usage errors, 3 for I/O errors.
    pub code: u8,
    /// What went wrong.
    pub message: String,
}

impl CliError {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }

    /// An I/O error (exit 3).
    pub fn io(message: impl fmt::Display) -> Self {
        CliError {
            code: 3,
            message: message.to_string(),
        }
    }
}

impl From<PipelineError> for CliError {
    fn from(e: PipelineError) -> Self {
        CliError::io(e)
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::Invalid(m) => CliError::usage(m),
            ConfigError::Io(m) => CliError::io(m),
        }
    }
}

impl From<LockError> for CliError {
    fn from(e: LockError) -> Self {
        CliError::io(e)
    }
}

/// Warns on stderr about inputs that held no records (unless quiet).
pub fn warn_empty<'a>(global: &GlobalArgs, paths: impl IntoIterator<Item = &'a str>) {
    if !global.quiet {
        for p in paths {
            warn(format_args!("trajkit: warning: {p} holds no records"));
        }
    }
}

/// Expands the inputs (none means stdin), or fails with exit 3 naming the unreadable one.
pub fn inputs(given: &[String], global: &GlobalArgs) -> Result<Vec<String>, CliError> {
    Ok(expand(given, &|_| false, &|_| None, &|m| global.notice(m))?)
}

/// `N.N MB in N.NN s (N MB/s)` for summaries (kB below a megabyte).
pub fn throughput(bytes: u64, started: Instant) -> String {
    let secs = started.elapsed().as_secs_f64();
    let mb = bytes as f64 / 1e6;
    let size = if bytes < 1_000_000 {
        format!("{:.1} kB", bytes as f64 / 1e3)
    } else {
        format!("{mb:.1} MB")
    };
    let rate = if secs > 0.0 { mb / secs } else { 0.0 };
    format!("{size} in {secs:.2} s ({rate:.0} MB/s)")
}

/// Shows the first diagnostics on stderr and counts the rest.
pub struct Capped {
    inner: Box<dyn Reporter>,
    shown: u64,
    limit: u64,
}

impl Capped {
    /// Human diagnostics on stderr: none when quiet, the first 20, or all with `-v`.
    pub fn stderr(global: &GlobalArgs) -> Capped {
        Capped {
            inner: reporter(ReportFormat::Human, Box::new(Stderr)),
            shown: 0,
            limit: global.shown_diagnostics().unwrap_or(u64::MAX),
        }
    }
}

impl Reporter for Capped {
    fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        self.shown += 1;
        if self.shown <= self.limit {
            self.inner.diagnostic(d)?;
        }
        Ok(())
    }

    fn finish(&mut self, summary: &ValidationSummary) -> io::Result<()> {
        // A limit of 0 is `-q`: nothing on stderr, not even the count.
        if self.limit > 0 && self.shown > self.limit {
            warn(format_args!(
                "... and {} more diagnostics (-v shows them all here; rejected records are in the --rejects file)",
                self.shown - self.limit
            ));
        }
        self.inner.finish(summary)
    }
}

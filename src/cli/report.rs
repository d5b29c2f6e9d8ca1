//! `trajkit report`

use clap::Args;
use trajkit::commands::files::lock_files;
use trajkit::commands::report::{report, ReportOptions};

use super::common::{CliError, GlobalArgs};
use super::stats::{token_options, TokenArgs};

/// Write one self-contained HTML page about a dataset: overview, distributions (steps, tokens,
/// turns, rewards, outcomes, step classes), tools and their error results, sources, rejects,
/// redaction, and a few example trajectories. The page loads nothing from the network and
/// needs no script; the numbers are also embedded as JSON.
///
/// Inputs: ADP files or directories, trajkit Parquet files, an export directory (adp or
/// parquet, with its manifest.json and run.json), or a `run`'s output directory (its
/// rejects.jsonl included).
///
/// Example: trajkit report out/pipeline -o report.html
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Inputs; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// The page to write (`-` for stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: String,
    /// A rejects file to count by stage and rule (a run's output directory brings its own).
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
    #[command(flatten)]
    pub tokens: TokenArgs,
    /// The model's context, in tokens: the page says which compaction segments (and whole
    /// compacted sessions) are longer (needs --tokenizer).
    #[arg(long, value_name = "TOKENS", requires = "tokenizer",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub context: Option<u64>,
}

/// Runs `report`.
pub fn run(args: ReportArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let _locks = lock_files([Some(args.output.as_str())])?;
    let context = args.context.and_then(|n| usize::try_from(n).ok());
    let tokens = token_options(&args.tokens, context, &args.inputs, global)?;
    let bar = global.progress(&args.inputs, "report");
    let opts = ReportOptions {
        inputs: &args.inputs,
        rejects: args.rejects.as_deref(),
        output: &args.output,
        tokens_with: tokens.as_ref(),
    };
    let profile =
        report(&opts, &global.run_options(), &bar, &|m| global.notice(m)).map_err(|e| match e {
            trajkit::commands::report::ReportError::Config(c) => CliError::from(c),
            other => CliError::io(other),
        })?;
    bar.finish();
    let s = &profile.stats;
    global.summary(format_args!(
        "trajkit: {} records, {} trajectories, {} steps, {} invalid → {}",
        s.records, s.valid, s.steps, s.invalid, args.output
    ));
    Ok(u8::from(s.invalid > 0))
}

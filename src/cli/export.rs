//! `trajkit export`

use std::path::Path;
use std::time::Instant;

use clap::Args;
use trajkit::commands::export::{export_inputs, open, OpenError};
use trajkit::commands::run::RunError;
use trajkit::config::export::ExportConfig;
use trajkit::config::redact::RedactFlags;

use super::common::{inputs, throughput, warn_empty, Capped, CliError, GlobalArgs};

/// Export ADP trajectories as training data: SFT JSON lines (openai, hf, sharegpt) or ADP,
/// sharded and split, with manifest.json and a dataset card.
///
/// Input: ADP of any version (like `convert --from adp`), upgraded to 1.5.0 and checked.
/// Output in DIR: data/{split}-{i:05}-of-{n:05}.jsonl[.zst], manifest.json (files, rows,
/// bytes, sha256, options, counts) and README.md (Hugging Face `configs` front matter).
/// Trajectories that cannot train (no assistant turn, a tool call left unanswered before the
/// conversation goes on, an empty turn) are rejected with a reason. See docs/export.md.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
#[command(mut_arg("hash_key", |a| a.requires("redact").help_heading("With --redact")))]
#[command(mut_arg("private_ips", |a| a.requires("redact").help_heading("With --redact")))]
#[command(mut_arg("rules", |a| a.requires("redact").help_heading("With --redact")))]
pub struct ExportArgs {
    /// ADP trajectory files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// What to write, where, and which trajectories.
    #[command(flatten)]
    pub config: ExportConfig,
    /// Write rejected trajectories to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
    /// Replace secrets and personal data by placeholders before exporting, as `trajkit
    /// redact` does; the rejects file and diagnostics then show them masked
    /// (docs/redaction.md).
    #[arg(long)]
    pub redact: bool,
    /// With --redact: its options, as `trajkit redact`'s.
    #[command(flatten)]
    pub redaction: RedactFlags,
}

/// Shown after the options (kept out of the doc comment, which clap re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit export out/trajectories.jsonl --to openai -o sft/ --rejects sft-rejects.jsonl
  trajkit export joined.jsonl --to hf --split train=0.98,validation=0.02 \\
      --outcome success --dedup --compress zstd -o hf/
  trajkit export joined.jsonl --to sharegpt --system-prompt prompt.txt \\
      --inject-reflections -o llamafactory/";

/// Runs `export`.
pub fn run(args: ExportArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let inputs = inputs(&args.inputs, global)?;
    let config = &args.config;
    let opts = config.options(&inputs, global.run_options())?;
    if let (Some(training), Some(path)) = (&opts.training, &config.tokenizer) {
        global.notice(&format!(
            "--tokenizer {path}: {}",
            training.tokenizer.encoder()
        ));
    }
    let redact = args.redact.then_some(&args.redaction);
    let opened = open(
        Path::new(&config.output),
        &opts,
        args.rejects.as_deref(),
        redact,
    )
    .map_err(|e| match e {
        OpenError::Config(e) => e.into(),
        other => CliError::io(other),
    })?;
    let started = Instant::now();
    let bar = global.progress(&inputs, "export");
    let summary = export_inputs(
        &inputs,
        Path::new(&config.output),
        &opts,
        &bar,
        args.rejects.as_deref(),
        Box::new(Capped::stderr(global)),
        opened.redactor.as_ref(),
    )
    .map_err(|e| match e {
        RunError::Export(e) if e.is_usage() => CliError::usage(e.to_string()),
        e => CliError::io(e),
    })?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    let speed = throughput(bar.bytes_read(), started);
    for line in summary.lines(config.to.name(), &config.output, &speed) {
        global.summary(format_args!("{line}"));
    }
    Ok(u8::from(summary.rejected > 0))
}

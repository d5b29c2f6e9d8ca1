//! `trajkit convert`

use std::time::Instant;

use clap::Args;
use trajkit::commands::convert::convert_inputs;
use trajkit::commands::files::lock_files;
use trajkit::commands::inputs::plan;
use trajkit::config::convert::{named_converter, output_format, upgrade_options, ConvertConfig};
use trajkit::convert::ConvertOptions;
use trajkit::engine::output::warn;

use super::common::{throughput, warn_empty, Capped, CliError, GlobalArgs};

/// Convert records of any supported format into ADP trajectories, one compact JSON object per
/// line. Every trajectory is validated before it is written.
///
/// `--from adp` reads ADP of any version (validating it in that version) and writes the version
/// chosen by --adp-version, upgrading on the way: tool-call links are backfilled for 1.3+,
/// available_code_languages is filled for 1.4+, available_apis becomes available_custom_tools
/// for 1.5. Writing an older version fails, per record, where the data does not fit it.
/// Rejected records go to --rejects with their diagnostics; exit code 1 when any was rejected.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ConvertArgs {
    /// Input files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// Input format (see `trajkit formats`), or `auto`: each input's format is detected from
    /// its first record and reported; an input no format claims, or more than one does, is
    /// refused. Standard input needs a named format.
    #[arg(long, default_value = "auto")]
    pub from: String,
    /// Convert with the declarative converter spec in this TOML file (see
    /// docs/specs.md); the spec is checked before any data is read.
    #[arg(long, value_name = "FILE", conflicts_with = "from")]
    pub spec: Option<String>,
    /// Output format: adp, or atif (ATIF v1.7, or v1.8 with --atif-version 1.8, built from
    /// ADP 1.5.0; what ATIF has no field for is kept in `extra.adp`, so `--from atif` gives the
    /// same ADP back).
    #[arg(long, default_value = "adp")]
    pub to: String,
    /// Output file (`-` for stdout). Written under a temporary name and renamed when complete.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub output: String,
    /// Write each rejected record, with its diagnostics, to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
    /// ADP version, details decoding, strictness and the formats' options (the keys of a
    /// pipeline's `[convert]` table).
    #[command(flatten)]
    pub convert: ConvertConfig,
}

/// Shown after the options, one example a line (kept out of the doc comment, which clap
/// re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit convert logs/ -o std.jsonl --rejects rejects.jsonl      (formats detected)
  trajkit convert --from adp old.json.gz --adp-version 1.3.0 -o v13.jsonl
  trajkit convert std.jsonl --to atif -o trajectories.atif.jsonl";

/// Runs `convert`.
pub fn run(args: ConvertArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let named = named_converter(&args.from, args.spec.as_deref())?;
    let to = output_format(&args.to, args.convert.adp_version)?;
    let upgrade = upgrade_options(
        args.convert.adp_version,
        args.convert.decode_details.as_deref(),
    )?;
    let plan = plan(&args.inputs, named, &|m| global.notice(m))?;
    let inputs: Vec<String> = plan.iter().map(|(p, _)| p.clone()).collect();
    let _locks = lock_files([Some(args.output.as_str()), args.rejects.as_deref()])?;
    let opts = ConvertOptions {
        to,
        upgrade,
        run: global.run_options(),
        mapping: args.convert.formats,
        strict: args.convert.strict,
        inputs: std::sync::Arc::new(inputs.clone()),
    };
    let shown = Capped::stderr(global);
    let started = Instant::now();
    let bar = global.progress(&inputs, "convert");
    let summary = convert_inputs(
        &plan,
        &opts,
        &bar,
        &args.output,
        args.rejects.as_deref(),
        Box::new(shown),
    )
    .map_err(CliError::io)?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    if !global.quiet {
        for w in &summary.warnings {
            warn(format_args!("trajkit: warning: {w}"));
        }
    }
    let speed = throughput(bar.bytes_read(), started);
    for line in summary.lines(&args.convert.adp_version, &speed) {
        global.summary(format_args!("{line}"));
    }
    Ok(u8::from(summary.rejected > 0))
}

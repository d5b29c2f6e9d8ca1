//! `trajkit redact`

use std::time::Instant;

use clap::Args;
use trajkit::commands::files::{lock_files, report_writer, write_summary_json};
use trajkit::commands::redact::{
    redact_inputs, rule_list, scan_inputs, scan_line, RedactRunOptions,
};
use trajkit::config::redact::RedactFlags;
use trajkit::engine::output::print;
use trajkit::model::upgrade::UpgradeOptions;
use trajkit::model::AdpVersion;
use trajkit::redact::Redactor;
use trajkit::validate::report::{reporter, ReportFormat};

use super::common::{inputs, throughput, warn_empty, Capped, CliError, GlobalArgs};

/// Replace secrets and personal data in ADP trajectories by placeholders naming the rule that
/// found them (`<SECRET:github_token>`, `<PII:email>`), or, with --scan, report them.
///
/// Every string is covered: step texts, kwargs (keys and values), tool outputs, reasoning,
/// descriptions, details. Fail closed: the result is scanned again, and a trajectory in which
/// anything is still found (in an id or a link, which are never rewritten) is rejected as
/// `redaction-residual`, never written. The rejects file holds the original records: keep it
/// as private as the input. See docs/redaction.md; --list-rules lists the rules.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct RedactArgs {
    /// ADP trajectory files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// Report what would be replaced (file, line, id, JSON pointer, rule; never the text
    /// found) and write nothing; exit 1 when anything is found.
    #[arg(long)]
    pub scan: bool,
    /// The redaction options.
    #[command(flatten)]
    pub redaction: RedactFlags,
    /// List the rules (with --rules, the file's too) and exit.
    #[arg(long)]
    pub list_rules: bool,
    /// ADP version to write: 1.5.0 (default) down to 1.0.0.
    #[arg(long, default_value = "1.5.0", value_name = "VERSION")]
    pub adp_version: AdpVersion,
    /// Output file (`-` for stdout). Written under a temporary name and renamed when complete.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub output: String,
    /// Write rejected trajectories, with why, to this JSON-lines file (it holds the original
    /// records, secrets included).
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
    /// Write the summary, with the replacements per rule, as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<String>,
    /// With --scan: report format (human, json, junit, github, sarif).
    #[arg(long, default_value = "human")]
    pub report: ReportFormat,
    /// With --scan: write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub report_file: Option<String>,
}

/// Shown after the options (kept out of the doc comment, which clap re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit redact joined.jsonl -o clean.jsonl --rejects leaked.jsonl
  TRAJKIT_REDACT_KEY=... trajkit redact corpus/ -o clean.jsonl --summary-json redact.json
  trajkit redact --scan clean.jsonl --report github";

/// Runs `redact`.
pub fn run(args: RedactArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let redactor = args.redaction.redactor()?;
    if args.list_rules {
        print(&rule_list(redactor.scanner())).map_err(CliError::io)?;
        return Ok(0);
    }
    let inputs = inputs(&args.inputs, global)?;
    let started = Instant::now();
    if args.scan {
        return scan(&args, &inputs, &redactor, global, started);
    }
    let _locks = lock_files([
        Some(args.output.as_str()),
        args.rejects.as_deref(),
        args.summary_json.as_deref(),
    ])?;
    let opts = RedactRunOptions {
        upgrade: UpgradeOptions {
            target: args.adp_version,
            ..UpgradeOptions::default()
        },
        run: global.run_options(),
    };
    let bar = global.progress(&inputs, "redact");
    let summary = redact_inputs(
        &inputs,
        &redactor,
        &opts,
        &bar,
        &args.output,
        args.rejects.as_deref(),
        Box::new(Capped::stderr(global)),
    )
    .map_err(CliError::io)?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    for line in summary.lines(&throughput(bar.bytes_read(), started)) {
        global.summary(format_args!("{line}"));
    }
    if let Some(path) = &args.summary_json {
        write_summary_json(path, &summary)?;
    }
    Ok(u8::from(summary.rejected > 0))
}

fn scan(
    args: &RedactArgs,
    inputs: &[String],
    redactor: &Redactor,
    global: &GlobalArgs,
    started: Instant,
) -> Result<u8, CliError> {
    let out = report_writer(args.report_file.as_deref())?;
    let bar = global.progress(inputs, "redact --scan");
    let summary = scan_inputs(
        inputs,
        redactor.scanner(),
        &global.run_options(),
        &bar,
        reporter(args.report, out),
    )?;
    bar.finish();
    let speed = throughput(bar.bytes_read(), started);
    global.summary(format_args!("{}", scan_line(&summary, &speed)));
    Ok(u8::from(summary.failed()))
}

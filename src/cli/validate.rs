//! `trajkit validate`

use std::time::Instant;

use clap::Args;

use trajkit::commands::files::{lock_files, rejects_writer, report_writer};
use trajkit::commands::validate::{
    specs_line, summary_line, validate_inputs, validate_specs, Target, ValidateOptions,
};
use trajkit::validate::report::{reporter, ReportFormat};

use super::common::{inputs, throughput, warn_empty, CliError, GlobalArgs};

/// Check ADP trajectories against the JSON Schema of their version and trajkit's semantic rules
/// (tool-call links, code languages, available_code_languages).
///
/// Every problem is reported once, with file, line, record id, JSON pointer and rule. Exit code
/// 0 when every record is valid, 1 when any is invalid.
///
/// Example: trajkit validate data/*.jsonl --report github --rejects bad.jsonl
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Input files or directories (JSON lines, JSON arrays, .gz/.zst); none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// What to validate against: `adp` (any ADP version, chosen by each record's
    /// schema_version), or a raw input format's schema (`trajkit schema --list` shows them as
    /// "raw input format"; an unknown name lists them too), or `converter-spec`: each input is
    /// a declarative converter spec (TOML), fully loaded as `convert --spec` would.
    #[arg(long, default_value = "adp")]
    pub schema: String,
    /// With a raw format: accept the documented drift of real files (see docs/validation.md).
    #[arg(long)]
    pub lenient: bool,
    /// Report format: human, json (one object per diagnostic), junit, github, sarif.
    #[arg(long, default_value = "human")]
    pub report: ReportFormat,
    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub report_file: Option<String>,
    /// Stop after this many errors.
    #[arg(long, value_name = "N")]
    pub max_errors: Option<u64>,
    /// Write each invalid record, with its diagnostics, to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
}

/// Runs `validate`.
pub fn run(args: ValidateArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    if args.schema == "converter-spec" {
        return check_specs(&args, global);
    }
    let target = Target::named(&args.schema, args.lenient)?;
    let inputs = inputs(&args.inputs, global)?;
    let _locks = lock_files([args.rejects.as_deref()])?;
    let out = report_writer(args.report_file.as_deref())?;
    let rejects = rejects_writer(args.rejects.as_deref())?;
    let opts = ValidateOptions {
        target,
        max_errors: args.max_errors,
        run: global.run_options(),
    };
    let started = Instant::now();
    let bar = global.progress(&inputs, "validate");
    let summary = validate_inputs(&inputs, &opts, &bar, reporter(args.report, out), rejects)?;
    bar.finish();
    warn_empty(
        global,
        summary
            .files
            .iter()
            .filter(|f| f.records == 0)
            .map(|f| f.file.as_ref()),
    );
    let speed = throughput(bar.bytes_read(), started);
    global.summary(format_args!("{}", summary_line(&summary, &speed)));
    Ok(u8::from(summary.failed()))
}

/// `validate --schema converter-spec`: loads each spec file and reports its problems.
fn check_specs(args: &ValidateArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    if args.inputs.is_empty() {
        return Err(CliError::usage(
            "--schema converter-spec needs the spec files to check",
        ));
    }
    let mut report = reporter(args.report, report_writer(args.report_file.as_deref())?);
    let summary = validate_specs(&args.inputs, report.as_mut())
        .map_err(|e| CliError::io(format!("cannot write the report: {e}")))?;
    global.summary(format_args!("{}", specs_line(&summary)));
    Ok(u8::from(summary.failed()))
}

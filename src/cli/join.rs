//! `trajkit join`

use std::time::Instant;

use clap::Args;
use trajkit::commands::files::{lock_files, write_summary_json};
use trajkit::commands::join::{check_stdin, join_inputs, side_sets};
use trajkit::config::join::JoinConfig;
use trajkit::formats::side_formats;
use trajkit::join::{IndexError, JoinRunOptions};
use trajkit::model::upgrade::UpgradeOptions;
use trajkit::model::AdpVersion;
use trajkit::validate::report::Reporter;
use trajkit::validate::Diagnostic;

use super::common::{inputs, throughput, warn_empty, Capped, CliError, GlobalArgs};

/// Attach reflections and rewards from side files to ADP trajectories, by declared keys.
///
/// The rest of `join --help` is `long_about()`, which lists the registry's side formats.
#[derive(Debug, Args)]
#[command(long_about = long_about(), after_help = EXAMPLES)]
pub struct JoinArgs {
    /// ADP trajectory files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// What to attach, from where, by which keys, under which policies.
    #[command(flatten)]
    pub config: JoinConfig,
    /// ADP version to write: 1.5.0 (default) down to 1.1.0 (older versions hold no JSON in
    /// details).
    #[arg(long, default_value = "1.5.0", value_name = "VERSION")]
    pub adp_version: AdpVersion,
    /// Output file (`-` for stdout). Written under a temporary name and renamed when complete.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub output: String,
    /// Write rejected trajectories (and orphans under --orphans reject) to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<String>,
}

/// `join --help`'s description, with the side formats of the registry and what each reads.
fn long_about() -> String {
    let formats: Vec<String> = side_formats()
        .map(|s| format!("{} ({})", s.name(), s.help()))
        .collect();
    format!(
        "Attach reflections and rewards from side files to ADP trajectories, by declared keys.\n\n\
         Trajectories (ADP of any version, like `convert --from adp`) stream through; the side \
         files are read into memory first. What is attached goes into `details` (`reward`, \
         `reward_components`, `outcome`, `reflections`, `prior_reflections`) and the steps' \
         `reward`; see `trajkit schema details`.\n\n\
         Side formats (--reflections-from / --rewards-from): {}.\n\n\
         Keys: a JSON pointer (`/instance_id`), a field path \
         (`details.source.native_ids.loop_id`) or a template (`{{task}}#{{n:03}}`); `:0N` pads \
         integers, `:lower`/`:upper` change case. Nothing else is converted.",
        formats.join(", ")
    )
}

/// Shown after the options (kept out of the doc comment, which clap re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit join std.jsonl --reflections loop.jsonl --reflections-from reflexion \\
      --memory-window 3 -o joined.jsonl
  trajkit join corpus.jsonl --rewards eval.jsonl --key /instance_id \\
      --value /resolved --outcome /resolved -o out.jsonl
  trajkit join attempts.jsonl --reflections mem/tasks/*/reflections.jsonl \\
      --reflections-from ralph -o out.jsonl";

/// The side files' problems, shown on stderr: exit 1.
pub fn side_file_problems(problems: &[Diagnostic], global: &GlobalArgs) -> CliError {
    let mut shown = Capped::stderr(global);
    let listed = problems
        .iter()
        .try_for_each(|d| shown.diagnostic(d))
        .and_then(|()| shown.finish(&Default::default()));
    if let Err(e) = listed {
        return CliError::io(e);
    }
    CliError {
        code: 1,
        message: format!(
            "{} problem(s) in the side files (listed above); nothing was written",
            problems.len()
        ),
    }
}

/// Runs `join`.
pub fn run(args: JoinArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let config = &args.config;
    let sets = side_sets(config, args.adp_version)?;
    let inputs = inputs(&args.inputs, global)?;
    check_stdin(config, &inputs)?;
    let started = Instant::now();
    let join = config
        .build(sets, global.max_record_bytes)
        .map_err(|e| match e {
            IndexError::Invalid(problems) => side_file_problems(&problems, global),
            other => CliError::io(other),
        })?;
    let _locks = lock_files([
        Some(args.output.as_str()),
        args.rejects.as_deref(),
        args.summary_json.as_deref(),
    ])?;
    let opts = JoinRunOptions {
        upgrade: UpgradeOptions {
            target: args.adp_version,
            ..UpgradeOptions::default()
        },
        run: global.run_options(),
        orphans: Some(config.orphans),
        orphan_diagnostics: global.shown_diagnostics(),
    };
    let bar = global.progress(&inputs, "join");
    let summary = join_inputs(
        &inputs,
        join,
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
    Ok(u8::from(summary.failed(config.orphans)))
}

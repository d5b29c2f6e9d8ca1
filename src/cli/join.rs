//! `trajkit join`

use std::time::Instant;

use clap::Args;
use trajkit::commands::join::join_inputs;
use trajkit::engine::output::Output;
use trajkit::formats::{side_format, side_formats};
use trajkit::join::{
    Conflicts, Duplicates, GenericFields, IndexError, Join, JoinPolicies, JoinRunOptions,
    JoinSummary, KeyExpr, Orphans, SideFormat, SideFrom, SideIndex, SideSet, SideSpec, Unmatched,
};
use trajkit::model::upgrade::UpgradeOptions;
use trajkit::model::AdpVersion;
use trajkit::validate::report::Reporter;

use super::common::{
    inputs, lock_files, rejects_writer, throughput, warn_empty, Capped, CliError, GlobalArgs,
};

/// Attach reflections and rewards from side files to ADP trajectories, by declared keys.
///
/// The rest of `join --help` is `long_about()`, which lists the registry's side formats.
#[derive(Debug, Args)]
#[command(long_about = long_about(), after_help = EXAMPLES)]
pub struct JoinArgs {
    /// ADP trajectory files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// Side files of reflections (JSON lines or a JSON array; .gz/.zst read).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub reflections: Vec<String>,
    /// Format of the --reflections files.
    #[arg(long, default_value = "generic", value_name = "FORMAT", value_parser = side_format)]
    pub reflections_from: SideFrom,
    /// Side files of rewards.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub rewards: Vec<String>,
    /// Format of the --rewards files.
    #[arg(long, default_value = "generic", value_name = "FORMAT", value_parser = side_format)]
    pub rewards_from: SideFrom,
    /// Key of a generic side record (pointer, field path or template).
    #[arg(long, value_name = "EXPR")]
    pub key: Option<KeyExpr>,
    /// Key of a --reflections record, instead of its format's (or --key).
    #[arg(long, value_name = "EXPR")]
    pub reflections_key: Option<KeyExpr>,
    /// Key of a --rewards record, instead of its format's (or --key).
    #[arg(long, value_name = "EXPR")]
    pub rewards_key: Option<KeyExpr>,
    /// Key of a trajectory: `id` (the default of most side formats), a details path or a
    /// template (`trajectory_key_help()` names the formats).
    #[arg(long, value_name = "EXPR", help = trajectory_key_help())]
    pub trajectory_key: Option<KeyExpr>,
    /// Generic: the reward (a number, or a boolean read as 1.0 / 0.0).
    #[arg(long, value_name = "POINTER")]
    pub value: Option<String>,
    /// Generic: reward components (an object of numbers).
    #[arg(long, value_name = "POINTER")]
    pub components: Option<String>,
    /// Generic: the outcome (success, partial_success, failure, timeout, unknown, or a
    /// boolean read as success / failure).
    #[arg(long, value_name = "POINTER")]
    pub outcome: Option<String>,
    /// Generic: per-step rewards (a list with a number or null per step, or of
    /// {"step": i, "reward": r}).
    #[arg(long, value_name = "POINTER")]
    pub step_rewards: Option<String>,
    /// Generic: a reflection's text.
    #[arg(long, value_name = "POINTER")]
    pub text: Option<String>,
    /// Attach the reflections of the previous N iterations of the same loop as
    /// `details.prior_reflections` (`memory_window_help()` names the side formats with loops).
    #[arg(long, default_value_t = 0, value_name = "N", help = memory_window_help())]
    pub memory_window: usize,
    /// A trajectory no side record matches: keep, drop or reject.
    #[arg(long, default_value = "keep", value_name = "POLICY")]
    pub unmatched: Unmatched,
    /// A side record no trajectory matches: report (warnings) or reject (to --rejects, exit 1).
    #[arg(long, default_value = "report", value_name = "POLICY")]
    pub orphans: Orphans,
    /// Several side records with one key: first, last, all, or error.
    #[arg(long, default_value = "all", value_name = "POLICY")]
    pub duplicates: Duplicates,
    /// Two different values for one reward, component, outcome or step reward: error (reject
    /// the trajectory), keep (the value already there) or replace.
    #[arg(long, default_value = "error", value_name = "POLICY")]
    pub conflicts: Conflicts,
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

/// The help of `--trajectory-key`, naming the side formats whose trajectory key is not `id`.
fn trajectory_key_help() -> String {
    let others = listed(|f| f.trajectory_keys() != ["id"]);
    let default = if others.is_empty() {
        "the default".to_owned()
    } else {
        format!("the default for every format but {others}")
    };
    format!(
        "Key of a trajectory: `id` ({default}), a details path \
         (`/details/source/native_ids/task_id`) or a template"
    )
}

/// The help of `--memory-window`, naming the side formats whose records have loops.
fn memory_window_help() -> String {
    format!(
        "Attach the reflections of the previous N iterations of the same loop as \
         `details.prior_reflections` ({} side files)",
        listed(|f| f.window().is_some())
    )
}

/// The names of the registry's side formats that `pick` picks, as prose (`a, b and c`).
fn listed(pick: impl Fn(&dyn SideFormat) -> bool) -> String {
    let names: Vec<&str> = side_formats()
        .filter_map(|s| match s {
            SideFrom::Format(f) if pick(f) => Some(f.name()),
            _ => None,
        })
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// Shown after the options (kept out of the doc comment, which clap re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit join std.jsonl --reflections loop.jsonl --reflections-from reflexion \\
      --memory-window 3 -o joined.jsonl
  trajkit join corpus.jsonl --rewards eval.jsonl --key /instance_id \\
      --value /resolved --outcome /resolved -o out.jsonl
  trajkit join attempts.jsonl --reflections mem/tasks/*/reflections.jsonl \\
      --reflections-from ralph -o out.jsonl";

fn side_set(
    name: &str,
    files: &[String],
    from: SideFrom,
    key: Option<&KeyExpr>,
    args: &JoinArgs,
) -> Result<Option<SideSet>, CliError> {
    if files.is_empty() {
        return Ok(None);
    }
    let generic = matches!(from, SideFrom::Generic);
    let fields = if generic {
        GenericFields {
            reward: args.value.clone(),
            components: args.components.clone(),
            outcome: args.outcome.clone(),
            step_rewards: args.step_rewards.clone(),
            text: args.text.clone(),
        }
    } else {
        GenericFields::default()
    };
    let key = key.or(if generic { args.key.as_ref() } else { None });
    let spec = SideSpec::new(from, key.cloned(), args.trajectory_key.clone(), fields)
        .map_err(|e| CliError::usage(format!("--{name}: {e}")))?;
    Ok(Some(SideSet {
        name: name.to_owned(),
        spec,
        files: files.to_vec(),
    }))
}

/// The side sets of the join's options (no file is read), or why they are wrong.
pub fn side_sets(args: &JoinArgs) -> Result<Vec<SideSet>, CliError> {
    let sets: Vec<SideSet> = [
        side_set(
            "reflections",
            &args.reflections,
            args.reflections_from,
            args.reflections_key.as_ref(),
            args,
        )?,
        side_set(
            "rewards",
            &args.rewards,
            args.rewards_from,
            args.rewards_key.as_ref(),
            args,
        )?,
    ]
    .into_iter()
    .flatten()
    .collect();
    if sets.is_empty() {
        return Err(CliError::usage(
            "nothing to join: give --reflections FILE... and/or --rewards FILE...",
        ));
    }
    Ok(sets)
}

/// Reads and indexes the side files of `sets` and makes the join of `args`; problems in the
/// side files are listed on stderr and fail with exit 1.
pub fn build_join(
    args: &JoinArgs,
    sets: Vec<SideSet>,
    global: &GlobalArgs,
) -> Result<Join, CliError> {
    let index = match SideIndex::build(sets, args.duplicates, global.max_record_bytes) {
        Ok(i) => i,
        Err(IndexError::Invalid(problems)) => {
            let mut shown = Capped::stderr(global);
            for d in &problems {
                shown.diagnostic(d).map_err(CliError::io)?;
            }
            shown.finish(&Default::default()).map_err(CliError::io)?;
            return Err(CliError {
                code: 1,
                message: format!(
                    "{} problem(s) in the side files (listed above); nothing was written",
                    problems.len()
                ),
            });
        }
        Err(e) => return Err(CliError::io(e)),
    };
    Ok(Join {
        index,
        policies: JoinPolicies {
            unmatched: args.unmatched,
            conflicts: args.conflicts,
            memory_window: args.memory_window,
        },
    })
}

/// The run options of the join of `args`.
pub fn run_options(args: &JoinArgs, global: &GlobalArgs) -> JoinRunOptions {
    JoinRunOptions {
        upgrade: UpgradeOptions {
            target: args.adp_version,
            ..UpgradeOptions::default()
        },
        run: global.run_options(),
        orphans: Some(args.orphans),
        orphan_diagnostics: match (global.quiet, global.verbose) {
            (true, _) => Some(0),
            (false, 0) => Some(20),
            (false, _) => None,
        },
    }
}

/// Runs `join`.
pub fn run(args: JoinArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    if !args.adp_version.has_free_details() {
        return Err(CliError::usage(format!(
            "join writes JSON values into details, which ADP {} cannot hold; use 1.1.0 or later",
            args.adp_version
        )));
    }
    let sets = side_sets(&args)?;
    let inputs = inputs(&args.inputs)?;
    let side_stdin = args
        .reflections
        .iter()
        .chain(&args.rewards)
        .filter(|f| *f == "-")
        .count();
    if side_stdin + usize::from(inputs.iter().any(|i| i == "-")) > 1 {
        return Err(CliError::usage(
            "stdin (`-`) can be read once: give the trajectories or one side file on stdin, not several",
        ));
    }
    let started = Instant::now();
    let join = build_join(&args, sets, global)?;
    let _locks = lock_files([
        Some(args.output.as_str()),
        args.rejects.as_deref(),
        args.summary_json.as_deref(),
    ])?;
    let output = Output::create(&args.output)
        .map_err(|e| CliError::io(format!("cannot create {}: {e}", args.output)))?;
    let rejects = rejects_writer(args.rejects.as_deref())?;
    let opts = run_options(&args, global);
    let bar = global.progress(&inputs, "join");
    let summary = join_inputs(
        &inputs,
        &join,
        &opts,
        &bar,
        output,
        rejects,
        Box::new(Capped::stderr(global)),
    )?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    print_summary(global, &summary, &throughput(bar.bytes_read(), started));
    if let Some(path) = &args.summary_json {
        write_summary(path, &summary)?;
    }
    let orphans_rejected = args.orphans == Orphans::Reject && summary.side_orphans > 0;
    Ok(u8::from(summary.rejected > 0 || orphans_rejected))
}

fn print_summary(global: &GlobalArgs, s: &JoinSummary, speed: &str) {
    global.summary(format_args!(
        "join: {} trajectories in, {} written ({} matched, {} unmatched), {} dropped, {} rejected; {}",
        s.records, s.written_records, s.matched, s.unmatched_kept, s.dropped, s.rejected, speed
    ));
    for f in &s.side_files {
        let superseded = if f.superseded > 0 {
            format!(", {} superseded by duplicates", f.superseded)
        } else {
            String::new()
        };
        let skipped = if f.skipped > 0 {
            format!(", {} skipped (not attachable)", f.skipped)
        } else {
            String::new()
        };
        global.summary(format_args!(
            "join: {} {}: {} records, {} matched, {} orphans{superseded}{skipped}",
            f.set, f.file, f.records, f.matched, f.orphans
        ));
    }
}

fn write_summary(path: &str, summary: &JoinSummary) -> Result<(), CliError> {
    let mut out =
        Output::create(path).map_err(|e| CliError::io(format!("cannot create {path}: {e}")))?;
    let io = |e: std::io::Error| CliError::io(format!("cannot write {path}: {e}"));
    serde_json::to_writer_pretty(&mut out, summary).map_err(|e| io(e.into()))?;
    std::io::Write::write_all(&mut out, b"\n").map_err(io)?;
    out.finish().map_err(io)
}

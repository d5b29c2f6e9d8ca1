//! `trajkit run`

use std::time::Instant;

use clap::Args;
use trajkit::commands::run::file::{check, list_inputs, FileRunError, Prepared, Request};
use trajkit::config::pipeline::load;
use trajkit::engine::output::print;
use trajkit::engine::partition::Partition;

use super::common::{throughput, warn_empty, Capped, CliError, GlobalArgs};
use super::join::side_file_problems;
use super::progress::Bar;

/// Run a pipeline file: inputs, convert options, validation, joins and exports, in one
/// streaming pass (each record is read once, converted, validated, joined and written to every
/// export).
///
/// The file is TOML (`trajkit schema pipeline`; see docs/pipeline.md): `[[input]]`
/// (`path`, `format` = auto, or `spec`), `[convert]` (`adp_version`, `idle_gap`,
/// `decode_details`), `[validate]` (`max_reject_rate`, `rejects`), `[[join]]` and `[[export]]`
/// stages whose keys are the long options of `trajkit join` and `trajkit export` in
/// snake_case, and `[redact]` (`hash_key_env`, `private_ips`: redaction before every export).
/// Paths are relative to the file's directory.
///
/// Exit codes: 0 success; 1 when rejected records over records read exceed the reject rate
/// (the outputs are still written, and each export's `run.json` says so); 2 for a pipeline
/// file that is not valid (every problem as file:line: key: message); 3 for I/O errors.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct RunArgs {
    /// The pipeline file (TOML).
    pub pipeline: String,
    /// Check the pipeline file (keys, values, formats, converter specs, option combinations)
    /// and exit without reading any input.
    #[arg(long)]
    pub check: bool,
    /// Print the effective configuration (defaults filled in, paths resolved against the
    /// pipeline file's directory) as TOML, and exit.
    #[arg(long, conflicts_with = "check")]
    pub print_config: bool,
    /// Print the inputs the run reads, one path a line (globs and directories expanded, each
    /// file's format detected; with --partition, the partition's share), and exit. Nothing is
    /// written.
    #[arg(long, conflicts_with_all = ["check", "print_config"])]
    pub list_inputs: bool,
    /// With --print-config: print JSON instead of TOML.
    #[arg(long, requires = "print_config")]
    pub json: bool,
    /// Fail (exit 1) when rejected records over records read exceed R (overrides
    /// `[validate] max_reject_rate`; default 0: any reject fails the run).
    #[arg(long, value_name = "R")]
    pub max_reject_rate: Option<f64>,
    /// Resume a run that was killed or interrupted (Ctrl-C): restart from the journal it left
    /// in the first export's directory (`.trajkit-run/`), keeping every shard it completed, to
    /// the same outputs as an uninterrupted run. Refused when the configuration or an input
    /// changed since; without a journal, the run starts from the beginning.
    #[arg(long)]
    pub resume: bool,
    /// Make partition I of N (0 <= I < N): N runs of the same pipeline, one per I, write
    /// disjoint shares whose union is the unpartitioned run; `trajkit merge-manifests` combines
    /// their manifests. Files are tagged `part-I-of-N` (shards, `manifest.part-*.json`,
    /// `run.part-*.json`, the rejects file).
    #[arg(long, value_name = "I/N")]
    pub partition: Option<String>,
    /// What a partition is chosen by: `path` (the input's path relative to the pipeline file's
    /// directory: each partition reads its own inputs) or `id` (the trajectory id: each reads
    /// every input and keeps its trajectories). Overrides `[partition] by`; default path.
    #[arg(long, value_name = "KEY", value_parser = ["path", "id"], requires = "partition")]
    pub partition_by: Option<String>,
    /// `json`: instead of a bar, a JSON line of progress on stderr every 5 seconds and one at
    /// the end (for batch jobs; a command-line option, not a pipeline key).
    #[arg(long, value_name = "FORMAT", value_parser = ["json"])]
    pub progress: Option<String>,
}

const EXAMPLES: &str = "Examples:
  trajkit run sample_data/pipeline.toml
  trajkit run --check pipeline.toml
  trajkit run --print-config pipeline.toml > effective.toml
  trajkit run --list-inputs pipeline.toml --partition 0/4
  trajkit run pipeline.toml --threads 2 --max-reject-rate 0.01
  trajkit run pipeline.toml --partition 3/8   # then: trajkit merge-manifests out/parquet ...";

/// Runs `run`.
pub fn run(args: RunArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    if args
        .max_reject_rate
        .is_some_and(|r| !(0.0..=1.0).contains(&r))
    {
        return Err(CliError::usage(
            "--max-reject-rate is a fraction between 0 and 1",
        ));
    }
    let pipeline = load(&args.pipeline)?;
    let partition = match &args.partition {
        Some(spec) => {
            let by = match &args.partition_by {
                Some(b) => b.parse().map_err(CliError::usage)?,
                None => pipeline.partition.by,
            };
            Some(Partition::parse(spec, by).map_err(CliError::usage)?)
        }
        None => None,
    };
    if args.print_config {
        let text = if args.json {
            let json = serde_json::to_string_pretty(&pipeline.effective()).map_err(CliError::io)?;
            format!("{json}\n")
        } else {
            pipeline.effective_toml()
        };
        print(&text).map_err(CliError::io)?;
        return Ok(0);
    }
    if args.list_inputs {
        let inputs = list_inputs(&pipeline, partition.as_ref(), &|m| global.notice(m))?;
        let text: String = inputs.iter().map(|i| format!("{i}\n")).collect();
        print(&text).map_err(CliError::io)?;
        return Ok(0);
    }
    if args.check {
        check(&pipeline, partition.as_ref())?;
        global.summary(format_args!("{}: valid", args.pipeline));
        return Ok(0);
    }
    let request = Request {
        max_reject_rate: args.max_reject_rate,
        resume: args.resume,
        partition,
        run: global.run_options(),
        orphan_diagnostics: global.shown_diagnostics(),
    };
    let prepared =
        Prepared::new(&pipeline, request, &|m| global.notice(m)).map_err(|e| match e {
            FileRunError::Config(e) => e.into(),
            FileRunError::SideFiles(problems) => side_file_problems(&problems, global),
            other => CliError::io(other),
        })?;
    let paths = prepared.inputs();
    let started = Instant::now();
    let bar = match args.progress {
        Some(_) => Bar::json(&paths, "run"),
        None => global.progress(&paths, "run"),
    };
    let outcome = prepared
        .run(&bar, Box::new(Capped::stderr(global)), &|m| {
            global.notice(m)
        })
        .map_err(|e| match prepared.usage_message(&e) {
            Some(message) => CliError::usage(message),
            None => CliError::io(e),
        })?;
    bar.finish();
    warn_empty(
        global,
        outcome.summary.empty_inputs.iter().map(String::as_str),
    );
    let speed = throughput(bar.bytes_read(), started);
    for line in outcome.lines(&pipeline, &speed) {
        global.summary(format_args!("{line}"));
    }
    if outcome.exceeded {
        return Err(CliError {
            code: 1,
            message: prepared.exceeded_message(&outcome),
        });
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use clap::{Args, Command};
    use serde_json::Value;
    use trajkit::config::export::ExportConfig;
    use trajkit::config::join::JoinConfig;
    use trajkit::config::pipeline::{EXPORT_ELSEWHERE, JOIN_ELSEWHERE};
    use trajkit::validate::schemas::PIPELINE_SCHEMA;

    use super::super::export::ExportArgs;
    use super::super::join::JoinArgs;

    fn command<A: Args>() -> Command {
        A::augment_args(Command::new("stage").no_binary_name(true))
    }

    fn ids<A: Args>() -> Vec<String> {
        command::<A>()
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .filter(|id| id != "help")
            .collect()
    }

    /// Every flag of a stage's config is a key of the pipeline schema and every key a flag;
    /// the command's other flags are listed with where the pipeline says the same thing.
    #[test]
    fn every_join_and_export_flag_has_a_pipeline_key() {
        let schema: Value = serde_json::from_str(PIPELINE_SCHEMA).expect("schema is JSON");
        for (kind, config, command, elsewhere) in [
            (
                "join",
                ids::<JoinConfig>(),
                ids::<JoinArgs>(),
                JOIN_ELSEWHERE,
            ),
            (
                "export",
                ids::<ExportConfig>(),
                ids::<ExportArgs>(),
                EXPORT_ELSEWHERE,
            ),
        ] {
            let mut keys: Vec<&str> = schema["$defs"][kind]["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .map(String::as_str)
                .collect();
            let mut flags: Vec<&str> = config.iter().map(String::as_str).collect();
            keys.sort_unstable();
            flags.sort_unstable();
            assert_eq!(flags, keys, "{kind}");
            let mut others: Vec<&str> = command
                .iter()
                .map(String::as_str)
                .filter(|id| !config.iter().any(|c| c == id))
                .collect();
            let mut listed: Vec<&str> = elsewhere.iter().map(|(k, _)| *k).collect();
            others.sort_unstable();
            listed.sort_unstable();
            assert_eq!(others, listed, "{kind}");
        }
    }
}

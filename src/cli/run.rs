//! `trajkit run`

use std::time::Instant;

use clap::Args;
use trajkit::commands::run::file::{check, list_inputs, FileRunError, Prepared, Request};
use trajkit::config::pipeline::load;
use trajkit::engine::output::print;
use trajkit::engine::partition::Partition;

use super::common::{throughput, warn_empty, Capped, CliError, GlobalArgs};
use super::join::{orphan_diagnostics, side_file_problems};
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
        orphan_diagnostics: orphan_diagnostics(global),
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
    use serde_json::{json, Map, Value};
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

    /// The arguments a table stands for: `--key=value` per key (a flag for `true`, one per
    /// item of an array).
    fn argv(table: &Map<String, Value>) -> Vec<String> {
        let mut argv = Vec::new();
        for (key, value) in table {
            let flag = format!("--{}", key.replace('_', "-"));
            match value {
                Value::Bool(true) => argv.push(flag),
                Value::Array(items) => argv.extend(
                    items
                        .iter()
                        .map(|i| format!("{flag}={}", i.as_str().unwrap_or_default())),
                ),
                Value::String(s) => argv.push(format!("{flag}={s}")),
                other => argv.push(format!("{flag}={other}")),
            }
        }
        argv
    }

    /// A table and the flags it stands for make the same config: the same names, values and
    /// defaults.
    fn agree<C>(table: Value)
    where
        C: Args + clap::FromArgMatches + serde::Serialize + serde::de::DeserializeOwned,
    {
        let from_table: C = serde_json::from_value(table.clone()).expect("the table reads");
        let map = table.as_object().expect("a table");
        let matches = command::<C>()
            .try_get_matches_from(argv(map))
            .expect("the flags parse");
        let from_flags = C::from_arg_matches(&matches).expect("the flags make a config");
        assert_eq!(json!(from_flags), json!(from_table), "{table}");
    }

    #[test]
    fn pipeline_tables_and_flags_make_the_same_stage_configs() {
        agree::<JoinConfig>(json!({"rewards": ["r.jsonl"]}));
        agree::<JoinConfig>(json!({
            "reflections": ["a", "b"], "reflections_from": "ralph", "rewards": ["r"],
            "rewards_from": "generic", "key": "/instance_id", "reflections_key": "{task}#{n:03}",
            "rewards_key": "/id", "trajectory_key": "/details/x", "value": "/v",
            "components": "/c", "outcome": "/o", "step_rewards": "/s", "text": "/t",
            "memory_window": 3, "unmatched": "drop", "orphans": "reject",
            "duplicates": "last", "conflicts": "replace"
        }));
        agree::<ExportConfig>(json!({"to": "hf", "output": "o"}));
        agree::<ExportConfig>(json!({
            "to": "openai", "output": "o", "thoughts": "drop", "description_as": "thought",
            "train_on": "last", "code_tool": ["r=run:src", "*=x"], "tools": "t.json",
            "infer_tools": "trajectory", "system_prompt": "p.txt", "inject_reflections": true,
            "split": "train=0.9,test=0.1", "shard_rows": 7, "shard_bytes": 1000,
            "row_group_bytes": 500, "compress": "zstd", "zstd_level": 9, "min_reward": 0.5,
            "outcome": ["success", "partial_success"], "max_steps": 40, "max_chars": 9000,
            "dedup": true, "force": true
        }));
    }

    /// The pipeline schema's `[convert]` keys are `adp_version`, `decode_details`, `strict` and the
    /// formats' options, each with the option's type, default and help.
    #[test]
    fn every_format_option_is_a_convert_key_of_the_schema() {
        let schema: Value = serde_json::from_str(PIPELINE_SCHEMA).expect("schema is JSON");
        let props = schema["properties"]["convert"]["properties"]
            .as_object()
            .expect("properties");
        let mut keys: Vec<&str> = trajkit::formats::options().map(|o| o.key).collect();
        for o in trajkit::formats::options() {
            let prop = &props[o.key];
            assert_eq!(prop["type"], o.default.type_name(), "{}", o.key);
            assert_eq!(prop["default"], o.default.to_json(), "{}", o.key);
            if let trajkit::convert::OptionValue::Choice(_, names) = o.default {
                assert_eq!(prop["enum"], json!(names), "{}", o.key);
            }
            let text = prop["description"].as_str().unwrap_or_default();
            assert!(
                text.starts_with(o.help) && text.ends_with(&format!("(convert --{}).", o.flag)),
                "{}: the schema's description is the option's help and its flag",
                o.key
            );
        }
        keys.extend(["adp_version", "decode_details", "strict"]);
        keys.sort_unstable();
        let mut schema_keys: Vec<&str> = props.keys().map(String::as_str).collect();
        schema_keys.sort_unstable();
        assert_eq!(schema_keys, keys);
    }

    /// The pipeline schema's `reflections_from` and `rewards_from` name the registry's side
    /// formats, and only them.
    #[test]
    fn every_side_format_is_a_join_format_of_the_schema() {
        let schema: Value = serde_json::from_str(PIPELINE_SCHEMA).expect("schema is JSON");
        let mut names: Vec<&str> = trajkit::formats::side_formats().map(|s| s.name()).collect();
        names.sort_unstable();
        for key in ["reflections_from", "rewards_from"] {
            let prop = &schema["$defs"]["join"]["properties"][key];
            let mut listed: Vec<&str> = prop["enum"]
                .as_array()
                .expect("an enum")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            listed.sort_unstable();
            assert_eq!(listed, names, "{key}");
        }
    }
}

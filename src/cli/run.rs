//! `trajkit run`

use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use clap::{Arg, ArgAction, ArgMatches, Args, Parser};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use trajkit::commands::run::journal::{identity, JournalOptions, ResumeError};
use trajkit::commands::run::{run_plan, ExportTarget, JoinStage, Plan, RunError, RunSummary};
use trajkit::convert::{ConvertOptions, Converter, FormatOptions, OptionValue, OutputFormat};
use trajkit::engine::output::print;
use trajkit::engine::partition::state_dir;
use trajkit::engine::partition::{Partition, PartitionBy};
use trajkit::export::{ExportError, InferTools};
use trajkit::formats::spec::located::LocatedDoc;
use trajkit::formats::spec::SpecError;
use trajkit::ingest::inputs::{expand_glob, is_glob};
use trajkit::join::policy::Orphans;
use trajkit::model::AdpVersion;
use trajkit::validate::schemas::{pipeline_validator, PIPELINE_SCHEMA};

use super::common::{lock_dir, lock_files, throughput, warn_empty, Capped, CliError, GlobalArgs};
use super::convert::{named_converter, plan_inputs, upgrade_options};
use super::export::{export_options, ExportArgs};
use super::join::{build_join, run_options, side_sets, JoinArgs};
use super::progress::Bar;

/// Run a pipeline file: inputs, convert options, validation, joins and exports, in one
/// streaming pass (each record is read once, converted, validated, joined and written to every
/// export).
///
/// The file is TOML (`trajkit schema pipeline`; see docs/pipeline.md): `[[input]]`
/// (`path`, `format` = auto, or `spec`), `[convert]` (`adp_version`, `idle_gap`,
/// `decode_details`), `[validate]` (`max_reject_rate`, `rejects`), `[[join]]` and `[[export]]`
/// stages whose keys are the long options of `trajkit join` and `trajkit export` in
/// snake_case. Paths are relative to the file's directory.
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
  trajkit run pipeline.toml --threads 2 --max-reject-rate 0.01
  trajkit run pipeline.toml --partition 3/8   # then: trajkit merge-manifests out/parquet ...";

/// `trajkit join` as a stage: its options parsed by clap, so the pipeline file and the command
/// line share one definition (names, defaults, value checks).
#[derive(Debug, Parser)]
#[command(name = "join")]
struct JoinStageCli {
    #[command(flatten)]
    args: JoinArgs,
}

/// `trajkit export` as a stage.
#[derive(Debug, Parser)]
#[command(name = "export")]
struct ExportStageCli {
    #[command(flatten)]
    args: ExportArgs,
}

/// `join` options that are not pipeline keys, and where the pipeline says the same thing.
const JOIN_ELSEWHERE: &[(&str, &str)] = &[
    ("inputs", "[[input]] (the converted trajectories flow in)"),
    ("output", "an [[export]] with to = \"adp\""),
    ("rejects", "[validate] rejects"),
    ("summary_json", "run.json in each export directory"),
    (
        "adp_version",
        "joins write 1.5.0 (exports read 1.5.0); [convert] adp_version checks the conversion",
    ),
];

/// `export` options that are not pipeline keys.
const EXPORT_ELSEWHERE: &[(&str, &str)] =
    &[("inputs", "[[input]]"), ("rejects", "[validate] rejects")];

/// Keys holding paths, resolved against the pipeline file's directory.
const PATH_KEYS: &[&str] = &[
    "path",
    "spec",
    "rejects",
    "reflections",
    "rewards",
    "output",
    "tools",
    "system_prompt",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputEntry {
    path: String,
    #[serde(default = "auto")]
    format: String,
    spec: Option<String>,
    /// `path` is a glob pattern.
    #[serde(skip)]
    glob: bool,
}

fn auto() -> String {
    "auto".to_owned()
}

#[derive(Debug, Default, Deserialize)]
struct ConvertSection {
    adp_version: Option<String>,
    decode_details: Option<String>,
    /// The formats' options, by pipeline key ([`trajkit::convert::FormatOption`]); the
    /// pipeline schema has checked their names and types.
    #[serde(flatten)]
    formats: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionSection {
    by: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ValidateSection {
    max_reject_rate: Option<f64>,
    rejects: Option<String>,
}

/// A pipeline file, checked, with paths resolved.
struct Pipeline {
    /// The file's directory, lexically normalized (`.` for the current one).
    dir: String,
    inputs: Vec<InputEntry>,
    partition_by: PartitionBy,
    adp_version: AdpVersion,
    decode_details: Option<String>,
    formats: FormatOptions,
    max_reject_rate: f64,
    rejects: Option<String>,
    joins: Vec<(JoinArgs, ArgMatches)>,
    exports: Vec<(ExportArgs, ArgMatches)>,
}

/// Problems of a pipeline file, each located.
struct Problems {
    file: String,
    doc: LocatedDoc,
    list: Vec<SpecError>,
}

impl Problems {
    fn add(&mut self, pointer: String, message: impl Into<String>) {
        self.list.push(SpecError {
            file: self.file.clone(),
            line: self.doc.line(&pointer),
            pointer,
            message: message.into(),
        });
    }

    fn into_error(self) -> CliError {
        let lines: Vec<String> = self.list.iter().map(|e| e.to_string()).collect();
        CliError::usage(format!(
            "the pipeline file is invalid:\n{}",
            lines.join("\n")
        ))
    }
}

/// `base/path` with `.` and `..` resolved lexically (so `sample_data/../out` is `out`, and the
/// paths recorded in the outputs are those a user would type from the same directory).
fn resolve(base: &Path, path: &str) -> String {
    let p = Path::new(path);
    if p.is_absolute() || path == "-" {
        return path.to_owned();
    }
    let mut out = PathBuf::new();
    for c in base.join(p).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        out.to_string_lossy().into_owned()
    }
}

fn resolve_paths(value: &mut Value, base: &Path) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if PATH_KEYS.contains(&k.as_str()) {
                    match v {
                        Value::String(s) => *s = resolve(base, s),
                        Value::Array(items) => {
                            for i in items.iter_mut() {
                                if let Value::String(s) = i {
                                    *s = resolve(base, s);
                                }
                            }
                        }
                        _ => {}
                    }
                } else {
                    resolve_paths(v, base);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| resolve_paths(i, base)),
        _ => {}
    }
}

/// The command-line arguments a stage table stands for.
fn stage_argv(name: &str, table: &Map<String, Value>, args: &[&Arg]) -> Vec<String> {
    let mut argv = vec![name.to_owned()];
    for (key, value) in table {
        let Some(arg) = args.iter().find(|a| a.get_id() == key.as_str()) else {
            continue;
        };
        let Some(long) = arg.get_long() else {
            continue;
        };
        let flag = matches!(arg.get_action(), ArgAction::SetTrue);
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match value {
            Value::Bool(b) if flag => {
                if *b {
                    argv.push(format!("--{long}"));
                }
            }
            Value::Array(items) => {
                argv.extend(items.iter().map(|i| format!("--{long}={}", text(i))));
            }
            other => argv.push(format!("--{long}={}", text(other))),
        }
    }
    argv
}

/// Parses a stage table with the subcommand's own definition.
fn parse_stage<C: Parser, A>(
    kind: &str,
    i: usize,
    table: &Map<String, Value>,
    problems: &mut Problems,
    into: impl Fn(C) -> A,
) -> Option<(A, ArgMatches)> {
    let cmd = C::command();
    let args: Vec<&Arg> = cmd.get_arguments().collect();
    let argv = stage_argv(kind, table, &args);
    let pointer = format!("/{kind}/{i}");
    let parsed = cmd
        .clone()
        .try_get_matches_from(&argv)
        .and_then(|m| C::from_arg_matches(&m).map(|c| (c, m)));
    match parsed {
        Ok((c, m)) => Some((into(c), m)),
        Err(e) => {
            let key = match e.get(clap::error::ContextKind::InvalidArg) {
                Some(clap::error::ContextValue::String(s)) => s
                    .trim_start_matches('-')
                    .split([' ', '=', '<'])
                    .next()
                    .and_then(|long| args.iter().find(|a| a.get_long() == Some(long)))
                    .map(|a| a.get_id().to_string()),
                _ => None,
            };
            let message = e
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_owned();
            match key {
                Some(k) => problems.add(format!("{pointer}/{k}"), message),
                None => problems.add(pointer, message),
            }
            None
        }
    }
}

/// Reads and checks the pipeline file: TOML syntax, the schema, every stage's options.
fn load(path: &str) -> Result<Pipeline, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::io(format!("cannot read {path}: {e}")))?;
    let mut doc = LocatedDoc::parse(&text).map_err(|e| {
        CliError::usage(format!(
            "the pipeline file is invalid:\n{path}:{}: {}",
            e.line, e.message
        ))
    })?;
    let mut value = std::mem::take(&mut doc.value);
    let mut problems = Problems {
        file: path.to_owned(),
        doc,
        list: Vec::new(),
    };
    if value.get("resume").is_some() {
        problems.add(
            "/resume".to_owned(),
            "not a pipeline key: resuming an interrupted run is chosen on the command line \
             (--resume)"
                .to_owned(),
        );
    }
    if value.get("progress").is_some() {
        problems.add(
            "/progress".to_owned(),
            "not a pipeline key: how a run reports is chosen on the command line \
             (--progress json)"
                .to_owned(),
        );
    }
    for (kind, elsewhere) in [("join", JOIN_ELSEWHERE), ("export", EXPORT_ELSEWHERE)] {
        let Some(Value::Array(tables)) = value.get(kind) else {
            continue;
        };
        for (i, t) in tables.iter().enumerate() {
            for (key, instead) in elsewhere {
                if t.get(*key).is_some() {
                    problems.add(
                        format!("/{kind}/{i}/{key}"),
                        format!(
                            "not a pipeline key (`{kind} --{}`): use {instead}",
                            key.replace('_', "-")
                        ),
                    );
                }
            }
        }
    }
    if !problems.list.is_empty() {
        return Err(problems.into_error());
    }
    let schema = pipeline_validator();
    if !schema.is_valid(&value) {
        for e in schema.iter_errors(&value) {
            let mut pointer = e.instance_path().as_str().to_owned();
            // An unknown key is reported at the key itself.
            if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
                e.kind()
            {
                if let Some(k) = unexpected.first() {
                    pointer = format!("{pointer}/{k}");
                }
            }
            problems.add(pointer, e.to_string());
        }
        return Err(problems.into_error());
    }
    let base = Path::new(path).parent().unwrap_or(Path::new(""));
    let raw_inputs: Vec<String> = match value.get("input") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i["path"].as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    };
    resolve_paths(&mut value, base);
    let section = |key: &str| value.get(key).cloned().unwrap_or(Value::Null);
    let mut inputs: Vec<InputEntry> =
        serde_json::from_value(section("input")).map_err(|e| CliError::usage(e.to_string()))?;
    for (i, (input, raw)) in inputs.iter_mut().zip(&raw_inputs).enumerate() {
        if !is_glob(raw) || Path::new(raw).is_absolute() {
            input.glob = is_glob(raw);
        } else {
            // The directory is a literal prefix of the pattern, whatever characters it holds.
            let escaped = glob::Pattern::escape(&base.to_string_lossy());
            input.path = resolve(Path::new(&escaped), raw);
            input.glob = true;
        }
        if let (true, Err(e)) = (input.glob, glob::Pattern::new(&input.path)) {
            problems.add(
                format!("/input/{i}/path"),
                format!("not a valid glob pattern: {e}"),
            );
        }
    }
    for (i, input) in inputs.iter().enumerate() {
        if input.path == "-" {
            problems.add(
                format!("/input/{i}/path"),
                "stdin cannot be a pipeline input (a pipeline may read its inputs twice)",
            );
        }
    }
    let convert: ConvertSection = match section("convert") {
        Value::Null => ConvertSection::default(),
        v => serde_json::from_value(v).map_err(|e| CliError::usage(e.to_string()))?,
    };
    let partition: PartitionSection = match section("partition") {
        Value::Null => PartitionSection::default(),
        v => serde_json::from_value(v).map_err(|e| CliError::usage(e.to_string()))?,
    };
    let partition_by = partition
        .by
        .as_deref()
        .unwrap_or("path")
        .parse()
        .map_err(CliError::usage)?;
    let validate: ValidateSection = match section("validate") {
        Value::Null => ValidateSection::default(),
        v => serde_json::from_value(v).map_err(|e| CliError::usage(e.to_string()))?,
    };
    let formats = format_options(&convert.formats, &mut problems);
    let adp_version = match convert.adp_version.as_deref().unwrap_or("1.5.0").parse() {
        Ok(v) => v,
        Err(e) => {
            problems.add("/convert/adp_version".into(), format!("{e}"));
            AdpVersion::LATEST
        }
    };
    let tables = |key: &str| -> Vec<Map<String, Value>> {
        match value.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|t| t.as_object().cloned())
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut joins = Vec::new();
    for (i, t) in tables("join").iter().enumerate() {
        joins.extend(parse_stage::<JoinStageCli, _>(
            "join",
            i,
            t,
            &mut problems,
            |c| c.args,
        ));
    }
    let mut exports = Vec::new();
    for (i, t) in tables("export").iter().enumerate() {
        exports.extend(parse_stage::<ExportStageCli, _>(
            "export",
            i,
            t,
            &mut problems,
            |c| c.args,
        ));
    }
    if !problems.list.is_empty() {
        return Err(problems.into_error());
    }
    // `run` is one streaming pass that reads each record once, so its SFT exports infer tool
    // specs per trajectory unless a pipeline asks for `infer_tools = "dataset"`, which costs a
    // first pass over every input (`export`, which reads ADP files, defaults to "dataset").
    for (a, _) in exports.iter_mut().filter(|(a, _)| a.to.is_sft()) {
        a.infer_tools.get_or_insert(InferTools::Trajectory);
    }
    Ok(Pipeline {
        dir: resolve(base, "."),
        inputs,
        partition_by,
        adp_version,
        decode_details: convert.decode_details,
        formats,
        max_reject_rate: validate.max_reject_rate.unwrap_or(0.0),
        rejects: validate.rejects,
        joins,
        exports,
    })
}

/// The formats' options of a `[convert]` table (its keys other than `adp_version` and
/// `decode_details`); a key no format declares, or a value of the wrong type, is a problem.
fn format_options(table: &Map<String, Value>, problems: &mut Problems) -> FormatOptions {
    let mut opts = FormatOptions::default();
    for (key, value) in table {
        let Some(option) = trajkit::formats::option(key) else {
            problems.add(
                format!("/convert/{key}"),
                "not a key of [convert]".to_owned(),
            );
            continue;
        };
        let value = match (option.default, value) {
            (OptionValue::Bool(_), Value::Bool(b)) => Some(OptionValue::Bool(*b)),
            (OptionValue::Int(_), v) => v.as_i64().map(OptionValue::Int),
            _ => None,
        };
        let set = value
            .ok_or_else(|| format!("not a {}", option.default.type_name()))
            .and_then(|v| opts.set(option, v));
        if let Err(e) = set {
            problems.add(format!("/convert/{key}"), e);
        }
    }
    opts
}

/// A stage's effective options: every pipeline key with its value or default, typed as the
/// schema says.
fn stage_config(kind: &str, matches: &ArgMatches, schema: &Value) -> Value {
    let props = &schema["$defs"][kind]["properties"];
    let mut out = Map::new();
    let Some(props) = props.as_object() else {
        return Value::Object(out);
    };
    for (key, prop) in props {
        let Ok(Some(raw)) = matches.try_get_raw(key) else {
            continue;
        };
        let values: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
        let ty = prop["type"].as_str().unwrap_or("array");
        let first = values.first().cloned().unwrap_or_default();
        let v = match ty {
            "boolean" => Value::Bool(first == "true"),
            "integer" => first
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or(Value::String(first)),
            "number" => first
                .parse::<f64>()
                .map(Value::from)
                .unwrap_or(Value::String(first)),
            "string" => Value::String(first),
            _ => Value::Array(values.into_iter().map(Value::String).collect()),
        };
        if v.as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        out.insert(key.clone(), v);
    }
    Value::Object(out)
}

/// The effective configuration as JSON.
fn effective(p: &Pipeline) -> Value {
    let schema: Value = serde_json::from_str(PIPELINE_SCHEMA).unwrap_or(Value::Null);
    let inputs: Vec<Value> = p
        .inputs
        .iter()
        .map(|i| match &i.spec {
            Some(s) => json!({"path": i.path, "spec": s}),
            None => json!({"path": i.path, "format": i.format}),
        })
        .collect();
    let mut convert = json!({"adp_version": p.adp_version.to_string()});
    for o in trajkit::formats::options() {
        convert[o.key] = p.formats.get(o).to_json();
    }
    if let Some(d) = &p.decode_details {
        convert["decode_details"] = json!(d);
    }
    let mut validate = json!({"max_reject_rate": p.max_reject_rate});
    if let Some(r) = &p.rejects {
        validate["rejects"] = json!(r);
    }
    let mut out = json!({
        "input": inputs,
        "convert": convert,
        "validate": validate,
        "partition": {"by": p.partition_by.name()},
    });
    if !p.joins.is_empty() {
        out["join"] = p
            .joins
            .iter()
            .map(|(_, m)| stage_config("join", m, &schema))
            .collect();
    }
    out["export"] = p
        .exports
        .iter()
        .map(|(a, m)| {
            let mut c = stage_config("export", m, &schema);
            if let (Some(i), true) = (a.infer_tools, a.to.is_sft()) {
                c["infer_tools"] = json!(i.name());
            }
            c
        })
        .collect();
    out
}

/// TOML for the effective configuration: tables of scalars and arrays of scalars, and arrays of
/// such tables. JSON strings and numbers are valid TOML.
fn to_toml(config: &Value) -> String {
    let mut out = String::from(
        "# trajkit run --print-config: paths are relative to the directory trajkit ran in\n",
    );
    let scalars = |out: &mut String, table: &Map<String, Value>| {
        for (k, v) in table {
            out.push_str(&format!("{k} = {v}\n"));
        }
    };
    let Some(top) = config.as_object() else {
        return out;
    };
    for (name, v) in top {
        match v {
            Value::Object(t) => {
                out.push_str(&format!("\n[{name}]\n"));
                scalars(&mut out, t);
            }
            Value::Array(items) => {
                for t in items.iter().filter_map(Value::as_object) {
                    out.push_str(&format!("\n[[{name}]]\n"));
                    scalars(&mut out, t);
                }
            }
            _ => {}
        }
    }
    out
}

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
                None => pipeline.partition_by,
            };
            Some(Partition::parse(spec, by).map_err(CliError::usage)?)
        }
        None => None,
    };
    if args.print_config {
        let config = effective(&pipeline);
        if args.json {
            let text = serde_json::to_string_pretty(&config).map_err(CliError::io)?;
            print(&format!("{text}\n")).map_err(CliError::io)?;
        } else {
            print(&to_toml(&config)).map_err(CliError::io)?;
        }
        return Ok(0);
    }
    let upgrade = upgrade_options(pipeline.adp_version, pipeline.decode_details.as_deref())?;
    let mut named = Vec::new();
    for input in &pipeline.inputs {
        named.push(named_converter(&input.format, input.spec.as_deref())?);
    }
    let mut sets = Vec::new();
    for (i, (a, _)) in pipeline.joins.iter().enumerate() {
        if partition.is_some() && a.orphans == Orphans::Reject {
            return Err(stage_error(
                &args.pipeline,
                "join",
                i,
                CliError::usage(
                    "not supported yet: orphans = \"reject\" with --partition (a partition \
                     sees its share of the trajectories, so it cannot tell which side records \
                     no partition uses)",
                ),
            ));
        }
        sets.push(side_sets(a).map_err(|e| stage_error(&args.pipeline, "join", i, e))?);
    }
    check_outputs(&args.pipeline, &pipeline)?;
    if args.check {
        for (i, (a, _)) in pipeline.exports.iter().enumerate() {
            export_options(a, &[], global)
                .map_err(|e| stage_error(&args.pipeline, "export", i, e))?;
        }
        global.summary(format_args!("{}: valid", args.pipeline));
        return Ok(0);
    }
    // Each partition writes its own rejects file and run.json (stdout stays stdout).
    let tagged = |path: &str| match &partition {
        Some(p) if path != "-" => p.file_name(path),
        _ => path.to_owned(),
    };
    let rejects_path = pipeline.rejects.as_deref().map(tagged);
    // Every output is locked for the whole run, before any input is read: another command
    // writing one is refused.
    let mut _locks = lock_files([rejects_path.as_deref()])?;
    for (a, _) in &pipeline.exports {
        _locks.push(lock_dir(Path::new(&a.output), partition.as_ref())?);
    }
    let mut plan: Vec<(String, &'static dyn Converter)> = Vec::new();
    for (input, conv) in pipeline.inputs.iter().zip(named) {
        let given = if input.glob {
            expand_glob(&input.path).map_err(CliError::io)?
        } else {
            vec![input.path.clone()]
        };
        plan.extend(plan_inputs(&given, conv, global)?);
    }
    let all_paths: Vec<String> = plan.iter().map(|(p, _)| p.clone()).collect();
    let share: Vec<(String, &'static dyn Converter)> = match partition {
        Some(p) if p.by == PartitionBy::Path => plan
            .iter()
            .filter(|(path, _)| p.owns(&partition_key(&pipeline.dir, path)))
            .cloned()
            .collect(),
        _ => plan.clone(),
    };
    let paths: Vec<String> = share.iter().map(|(p, _)| p.clone()).collect();
    let mut exports = Vec::new();
    for (i, (a, _)) in pipeline.exports.iter().enumerate() {
        // Every partition records every input, so their options agree.
        let mut opts = export_options(a, &all_paths, global)
            .map_err(|e| stage_error(&args.pipeline, "export", i, e))?;
        opts.shards.partition = partition;
        exports.push(ExportTarget {
            dir: PathBuf::from(&a.output),
            opts,
        });
    }
    let mut joins = Vec::new();
    for ((a, _), s) in pipeline.joins.iter().zip(sets) {
        let mut opts = run_options(a, global);
        if partition.is_some() {
            // Side records other partitions use would be reported as orphans.
            opts.orphan_diagnostics = Some(0);
        }
        joins.push(JoinStage {
            join: build_join(a, s, global)?,
            opts,
        });
    }
    let convert = ConvertOptions {
        to: OutputFormat::Adp,
        upgrade,
        run: global.run_options(),
        mapping: pipeline.formats.clone(),
    };
    if args.resume && pipeline.rejects.as_deref() == Some("-") {
        return Err(CliError::usage(
            "not supported yet: --resume with the rejects written to stdout",
        ));
    }
    let max = args.max_reject_rate.unwrap_or(pipeline.max_reject_rate);
    let identity_text = json!({
        "config": effective(&pipeline),
        "max_reject_rate": max,
        "max_record_bytes": global.max_record_bytes,
        "partition": partition.map(|p| p.spec()),
    })
    .to_string();
    let journal = JournalOptions {
        identity: identity(&identity_text, &paths),
        resume: args.resume,
    };
    // `run.json` in each export directory is written with the outputs it describes.
    let run_jsons: Vec<PathBuf> = exports
        .iter()
        .map(|e| e.dir.join(tagged("run.json")))
        .collect();
    let describe = |summary: &RunSummary| -> Vec<(PathBuf, String)> {
        let report = run_report(&args.pipeline, max, summary);
        let text = format!("{report:#}\n");
        run_jsons
            .iter()
            .map(|p| (p.clone(), text.clone()))
            .collect()
    };
    let started = Instant::now();
    let bar = match args.progress {
        Some(_) => Bar::json(&paths, "run"),
        None => global.progress(&paths, "run"),
    };
    let summary = run_plan(
        &Plan {
            inputs: &share,
            convert: &convert,
            joins: &joins,
            exports: &exports,
            partition,
            all_inputs: partition.map(|_| plan.as_slice()),
            journal: &journal,
            describe: Some(&describe),
        },
        &bar,
        rejects_path.as_deref(),
        Box::new(Capped::stderr(global)),
    )
    .map_err(|e| match e {
        RunError::Export(ExportError::Exists(dir)) => {
            let journal = exports
                .first()
                .map(|e| state_dir(&e.dir, partition.as_ref()));
            let hint = if journal.is_some_and(|j| j.exists()) {
                "; or pass --resume to finish the interrupted run it holds"
            } else {
                ""
            };
            CliError::usage(format!(
                "{dir} already holds an export (manifest.json or data files); set `force = \
                 true` in its [[export]] table to replace it{hint}"
            ))
        }
        RunError::Resume(ResumeError::Refused(_)) => CliError::usage(e.to_string()),
        other => CliError::io(other),
    })?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    let exceeded = summary.reject_rate() > max;
    print_summary(
        global,
        &pipeline,
        &summary,
        &throughput(bar.bytes_read(), started),
    );
    if let Some(e) = &summary.partition {
        global.summary(format_args!(
            "run: partition {} by {}: left to the other partitions: {} inputs, {} records, {} \
             trajectories",
            e.partition, e.by, e.inputs, e.records, e.trajectories
        ));
    }
    if exceeded {
        return Err(CliError {
            code: 1,
            message: format!(
                "{} of {} records rejected ({:.2}%), above the maximum reject rate {max}; the \
                 outputs were written and each export's run.json records it{}",
                summary.rejected_records,
                summary.records,
                summary.reject_rate() * 100.0,
                match &rejects_path {
                    Some(r) => format!("; the rejected records are in {r}"),
                    None => "; set [validate] rejects to keep the rejected records".to_owned(),
                }
            ),
        });
    }
    Ok(0)
}

/// The key an input is partitioned by: its path relative to the pipeline file's directory
/// `dir` (so machines that mount the data in different places agree), or as given when it is
/// outside that directory.
fn partition_key(dir: &str, path: &str) -> String {
    if dir == "." {
        return path.to_owned();
    }
    match Path::new(path).strip_prefix(dir) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_owned(),
    }
}

/// A stage's option error, located at its table.
fn stage_error(file: &str, kind: &str, i: usize, e: CliError) -> CliError {
    CliError {
        code: e.code,
        message: format!("{file}: {kind}[{}]: {}", i + 1, e.message),
    }
}

fn print_summary(global: &GlobalArgs, p: &Pipeline, s: &RunSummary, speed: &str) {
    for i in &s.inputs {
        global.summary(format_args!(
            "run: input {}: {} records in, {} trajectories, {} rejected; {:.2} s",
            i.path, i.records, i.trajectories, i.rejected, i.seconds
        ));
    }
    for (n, st) in s.stages.iter().enumerate() {
        let what = if st.stage == "convert" {
            "records"
        } else {
            "trajectories"
        };
        let target = st
            .stage
            .strip_prefix("export[")
            .and_then(|_| p.exports.get(n - 1 - p.joins.len()))
            .map(|(a, _)| format!(" --to {} -> {}", a.to.name(), a.output))
            .unwrap_or_default();
        global.summary(format_args!(
            "run: {}{target}: {} {what} in, {} written, {} filtered, {} rejected; {:.2} s busy",
            st.stage, st.records_in, st.written, st.filtered, st.rejected, st.seconds
        ));
    }
    for (n, j) in s.joins.iter().enumerate() {
        for f in &j.side_files {
            global.summary(format_args!(
                "run: join[{}] {} {}: {} records, {} matched, {} orphans",
                n + 1,
                f.set,
                f.file,
                f.records,
                f.matched,
                f.orphans
            ));
        }
    }
    global.summary(format_args!(
        "run: {} records in, {} trajectories, {} records rejected ({:.2}%); {}",
        s.records,
        s.trajectories,
        s.rejected_records,
        s.reject_rate() * 100.0,
        speed
    ));
}

/// `summary` as JSON without its times (`seconds` of stages and inputs): `run.json` holds
/// what the run made, so the same run (or one resumed) writes the same bytes; the times are
/// in the summary on stderr and in `--progress json` lines.
fn untimed(summary: &RunSummary) -> Value {
    let mut v = json!(summary);
    for list in ["stages", "inputs"] {
        for item in v[list].as_array_mut().into_iter().flatten() {
            if let Some(o) = item.as_object_mut() {
                o.remove("seconds");
            }
        }
    }
    v
}

/// What `run.json` holds: the run's options that matter to its outcome and its summary.
fn run_report(pipeline: &str, max: f64, summary: &RunSummary) -> Value {
    json!({
        "trajkit_version": env!("CARGO_PKG_VERSION"),
        "pipeline": pipeline,
        "max_reject_rate": max,
        "reject_rate": summary.reject_rate(),
        "reject_rate_exceeded": summary.reject_rate() > max,
        "summary": untimed(summary),
    })
}

/// Refuses exports that would write the same files: two with one `output`, or one inside
/// another's, or the rejects file inside an export's directory (paths compared as resolved
/// from the pipeline file, component by component).
fn check_outputs(file: &str, p: &Pipeline) -> Result<(), CliError> {
    let outputs: Vec<&Path> = p
        .exports
        .iter()
        .map(|(a, _)| Path::new(&a.output))
        .collect();
    for (i, out) in outputs.iter().enumerate() {
        for (j, other) in outputs.iter().enumerate().take(i) {
            let problem = if out == other {
                format!("its output {} is export[{}]'s too", out.display(), j + 1)
            } else if out.starts_with(other) || other.starts_with(out) {
                let (inner, outer) = if out.starts_with(other) {
                    (out, other)
                } else {
                    (other, out)
                };
                format!(
                    "its output and export[{}]'s nest ({} is inside {})",
                    j + 1,
                    inner.display(),
                    outer.display()
                )
            } else {
                continue;
            };
            return Err(stage_error(
                file,
                "export",
                i,
                CliError::usage(format!(
                    "{problem}; each export needs a directory of its own"
                )),
            ));
        }
    }
    if let Some(rejects) = p.rejects.as_deref().filter(|r| *r != "-") {
        let inside = outputs
            .iter()
            .enumerate()
            .find(|(_, o)| Path::new(rejects).starts_with(o));
        if let Some((i, dir)) = inside {
            return Err(CliError::usage(format!(
                "{file}: [validate] rejects: {rejects} is inside the directory of export[{}] \
                 ({}); write it elsewhere",
                i + 1,
                dir.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn ids<C: CommandFactory>() -> Vec<String> {
        C::command()
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .filter(|id| id != "help")
            .collect()
    }

    /// Every option of `join` and `export` is a key of the pipeline schema, or is listed with
    /// where the pipeline says the same thing; and every schema key is an option.
    #[test]
    fn every_join_and_export_flag_has_a_pipeline_key() {
        let schema: Value = serde_json::from_str(PIPELINE_SCHEMA).expect("schema is JSON");
        for (kind, ids, elsewhere) in [
            ("join", ids::<JoinStageCli>(), JOIN_ELSEWHERE),
            ("export", ids::<ExportStageCli>(), EXPORT_ELSEWHERE),
        ] {
            let props = schema["$defs"][kind]["properties"]
                .as_object()
                .expect("properties");
            for id in &ids {
                assert!(
                    props.contains_key(id) || elsewhere.iter().any(|(k, _)| k == id),
                    "{kind} --{id} has no pipeline key"
                );
            }
            for key in props.keys() {
                assert!(ids.contains(key), "{kind} key {key} is no option");
                assert!(
                    !elsewhere.iter().any(|(k, _)| k == key),
                    "{kind} key {key} is also listed as elsewhere"
                );
            }
        }
    }

    /// The pipeline schema's `[convert]` keys are `adp_version`, `decode_details` and the
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
            let text = prop["description"].as_str().unwrap_or_default();
            assert!(
                text.starts_with(o.help) && text.ends_with(&format!("(convert --{}).", o.flag)),
                "{}: the schema's description is the option's help and its flag",
                o.key
            );
        }
        keys.extend(["adp_version", "decode_details"]);
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

    #[test]
    fn partition_keys_are_relative_to_the_pipeline_directory() {
        assert_eq!(
            partition_key("/mnt/a/p", "/mnt/a/p/logs/x.jsonl"),
            "logs/x.jsonl"
        );
        assert_eq!(partition_key("data", "data/logs/x.jsonl"), "logs/x.jsonl");
        assert_eq!(partition_key(".", "logs/x.jsonl"), "logs/x.jsonl");
        assert_eq!(
            partition_key("data", "/elsewhere/x.jsonl"),
            "/elsewhere/x.jsonl"
        );
    }

    #[test]
    fn paths_resolve_lexically() {
        assert_eq!(resolve(Path::new("sample_data"), "../out/pq"), "out/pq");
        assert_eq!(resolve(Path::new("sample_data"), "."), "sample_data");
        assert_eq!(resolve(Path::new(""), "a/b"), "a/b");
        assert_eq!(resolve(Path::new("x"), "/abs"), "/abs");
        assert_eq!(resolve(Path::new(""), ".."), "..");
    }
}

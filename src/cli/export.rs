//! `trajkit export`

use std::path::Path;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use trajkit::commands::export::export_inputs;
use trajkit::export::code_tools::CodeTools;
use trajkit::export::conversation::{DescriptionAs, MapOptions};
use trajkit::export::parquet::ParquetConfig;
use trajkit::export::shard::ShardOptions;
use trajkit::export::split::Splits;
use trajkit::export::tools::ToolCatalog;
use trajkit::export::{
    ExportError, ExportOptions, ExportSummary, Filters, InferTools, SftOptions, Target, Thoughts,
    TrainOn,
};
use trajkit::model::upgrade::UpgradeOptions;

use super::common::{
    inputs, lock_dir, lock_files, rejects_writer, throughput, warn_empty, Capped, CliError,
    GlobalArgs,
};

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
pub struct ExportArgs {
    /// ADP trajectory files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// Target: parquet, openai, hf, sharegpt, adp.
    #[arg(long, value_name = "TARGET")]
    pub to: Target,
    /// Output directory.
    #[arg(short, long, value_name = "DIR")]
    pub output: String,
    /// Where thoughts (reasoning_content) go: content, reasoning (hf only), think (inline
    /// <think>), drop. Default: reasoning for hf, think otherwise.
    #[arg(long, value_name = "WHERE")]
    pub thoughts: Option<Thoughts>,
    /// Where action descriptions go: text (the assistant's visible text), thought, drop.
    #[arg(long, default_value = "text", value_name = "WHERE")]
    pub description_as: DescriptionAs,
    /// openai: `last` writes weight 1 on the last assistant message and 0 on the others.
    #[arg(long, default_value = "all", value_name = "WHICH")]
    pub train_on: TrainOn,
    /// Map a code language to a tool: LANG=TOOL[:ARG] (ARG default `code`; LANG `*` for all
    /// others, whose calls also carry `language`). Defaults: bash/shell/sh=bash:command,
    /// python=python:code, *=execute_code:code.
    #[arg(long, value_name = "LANG=TOOL[:ARG]")]
    pub code_tool: Vec<String>,
    /// Tool specs (a JSON array of OpenAI tools or {name, description, parameters}) used by
    /// name instead of inferring them.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<String>,
    /// Inferred tool specs from the calls of the whole input (dataset: a first pass over the
    /// inputs) or of the same trajectory. Default: dataset, trajectory when reading stdin.
    #[arg(long, value_name = "FROM")]
    pub infer_tools: Option<InferTools>,
    /// System prompt, from a text file.
    #[arg(long, value_name = "FILE")]
    pub system_prompt: Option<String>,
    /// Append details.prior_reflections (from `join --memory-window`) to the system prompt.
    #[arg(long)]
    pub inject_reflections: bool,
    /// Splits by a stable hash of the id, e.g. train=0.98,validation=0.02 (default: all train).
    #[arg(long, value_name = "NAME=FRACTION,...")]
    pub split: Option<String>,
    /// At most N rows per shard.
    #[arg(long, value_name = "N")]
    pub shard_rows: Option<u64>,
    /// At most N bytes of row data per shard (JSON lines, or Parquet column values; before
    /// compression; default 500000000).
    #[arg(long, value_name = "N")]
    pub shard_bytes: Option<u64>,
    /// Parquet: a row group ends before the row that would take its data past N bytes
    /// (before encoding and compression).
    #[arg(long, default_value_t = 100_000_000, value_name = "N")]
    pub row_group_bytes: u64,
    /// Compress JSON-lines shards: zstd (Parquet pages are always zstd-compressed).
    #[arg(long, value_name = "CODEC", value_parser = ["zstd"])]
    pub compress: Option<String>,
    /// zstd level of Parquet pages and of `--compress zstd` shards (1-22).
    #[arg(long, default_value_t = 3, value_name = "LEVEL",
          value_parser = clap::value_parser!(i32).range(1..=22))]
    pub zstd_level: i32,
    /// Keep trajectories whose details.reward is at least R.
    #[arg(long, value_name = "R")]
    pub min_reward: Option<f64>,
    /// Keep trajectories whose details.outcome status is this (repeatable).
    #[arg(long, value_name = "STATUS")]
    pub outcome: Vec<String>,
    /// Keep trajectories of at most N steps.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// Keep trajectories of at most N characters of free text.
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    /// Drop rows whose content (without the id) was already written.
    #[arg(long)]
    pub dedup: bool,
    /// Replace an earlier export in DIR.
    #[arg(long)]
    pub force: bool,
    /// Write rejected trajectories to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
}

/// Shown after the options (kept out of the doc comment, which clap re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit export out/trajectories.jsonl --to openai -o sft/ --rejects sft-rejects.jsonl
  trajkit export joined.jsonl --to hf --split train=0.98,validation=0.02 \\
      --outcome success --dedup --compress zstd -o hf/
  trajkit export joined.jsonl --to sharegpt --system-prompt prompt.txt \\
      --inject-reflections -o llamafactory/";

fn read_text(path: &str, what: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::io(format!("cannot read {what} {path}: {e}")))
}

/// The export options of `args` for `inputs` (already expanded; `-` is stdin): checks the
/// combinations, reads `--tools` and `--system-prompt`.
pub fn export_options(
    args: &ExportArgs,
    inputs: &[String],
    global: &GlobalArgs,
) -> Result<ExportOptions, CliError> {
    let thoughts = args.thoughts.unwrap_or(args.to.default_thoughts());
    if thoughts == Thoughts::Reasoning && args.to != Target::Hf {
        return Err(CliError::usage(
            "--thoughts reasoning needs --to hf (openai and sharegpt have no reasoning field)",
        ));
    }
    if args.train_on == TrainOn::Last && args.to != Target::Openai {
        return Err(CliError::usage(
            "--train-on last needs --to openai (weight)",
        ));
    }
    let mut code_tools = CodeTools::default();
    for m in &args.code_tool {
        code_tools.set(m).map_err(CliError::usage)?;
    }
    let catalog = match &args.tools {
        Some(path) => ToolCatalog::parse(&read_text(path, "--tools")?)
            .map_err(|e| CliError::usage(format!("--tools {path}: {e}")))?,
        None => ToolCatalog::default(),
    };
    let system_prompt = args
        .system_prompt
        .as_deref()
        .map(|p| read_text(p, "--system-prompt"))
        .transpose()?;
    let splits = match &args.split {
        Some(s) => Splits::parse(s).map_err(CliError::usage)?,
        None => Splits::default(),
    };
    if args.shard_rows == Some(0) || args.shard_bytes == Some(0) || args.row_group_bytes == 0 {
        return Err(CliError::usage(
            "--shard-rows, --shard-bytes and --row-group-bytes must be at least 1",
        ));
    }
    let shards = ShardOptions {
        rows: args.shard_rows,
        bytes: Some(args.shard_bytes.unwrap_or(500_000_000)),
        zstd: args.compress.as_ref().map(|_| args.zstd_level),
        partition: None,
    };
    let filters = Filters {
        min_reward: args.min_reward,
        outcome: args.outcome.clone(),
        max_steps: args.max_steps,
        max_chars: args.max_chars,
    };
    let stdin = inputs.iter().any(|i| i == "-");
    let infer_tools = match args.infer_tools {
        Some(InferTools::Dataset) if stdin => {
            return Err(CliError::usage(
                "--infer-tools dataset reads the inputs twice, and stdin can be read once: \
                 pass files or --infer-tools trajectory",
            ))
        }
        Some(i) => i,
        None if stdin => InferTools::Trajectory,
        None => InferTools::Dataset,
    };
    let mut recorded_options = json!({
        "to": args.to.name(),
        "thoughts": thoughts.name(),
        "description_as": args.description_as.name(),
        "train_on": args.train_on.name(),
        "code_tool": &args.code_tool,
        "tools": &args.tools,
        "infer_tools": infer_tools.name(),
        "system_prompt": &args.system_prompt,
        "inject_reflections": args.inject_reflections,
        "split": args.split.as_deref().unwrap_or("train=1"),
        "shard_rows": shards.rows,
        "shard_bytes": shards.bytes,
        "row_group_bytes": args.row_group_bytes,
        "compress": &args.compress,
        "zstd_level": args.zstd_level,
        "filters": &filters,
        "dedup": args.dedup,
    });
    // The Parquet files carry the options that shape them, but not the input paths: the same
    // trajectories read from elsewhere give the same bytes.
    let parquet = ParquetConfig {
        row_group_bytes: args.row_group_bytes,
        zstd_level: args.zstd_level,
        metadata: vec![
            ("trajkit.version".into(), env!("CARGO_PKG_VERSION").into()),
            ("trajkit.options".into(), recorded_options.to_string()),
        ],
    };
    recorded_options["inputs"] = json!(inputs);
    Ok(ExportOptions {
        target: args.to,
        sft: SftOptions {
            thoughts,
            train_on: args.train_on,
            map: MapOptions {
                code_tools,
                description: args.description_as,
                keep_thoughts: thoughts != Thoughts::Drop,
                system_prompt,
                inject_reflections: args.inject_reflections,
            },
            catalog,
            infer_tools,
        },
        splits,
        shards,
        parquet,
        filters,
        dedup: args.dedup,
        force: args.force,
        recorded_options,
        upgrade: UpgradeOptions::default(),
        run: global.run_options(),
    })
}

/// Runs `export`.
pub fn run(args: ExportArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let inputs = inputs(&args.inputs)?;
    let opts = export_options(&args, &inputs, global)?;
    let _locks = (
        lock_dir(Path::new(&args.output), opts.shards.partition.as_ref())?,
        lock_files([args.rejects.as_deref()])?,
    );
    let rejects = rejects_writer(args.rejects.as_deref())?;
    let started = Instant::now();
    let bar = global.progress(&inputs, "export");
    let summary = export_inputs(
        &inputs,
        Path::new(&args.output),
        &opts,
        &bar,
        rejects,
        Box::new(Capped::stderr(global)),
    )
    .map_err(|e| match e {
        ExportError::Exists(_) => CliError::usage(e.to_string()),
        other => CliError::io(other),
    })?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    print_summary(
        global,
        &args,
        &summary,
        &throughput(bar.bytes_read(), started),
    );
    Ok(u8::from(summary.rejected > 0))
}

fn print_summary(global: &GlobalArgs, args: &ExportArgs, s: &ExportSummary, speed: &str) {
    global.summary(format_args!(
        "export --to {}: {} trajectories in, {} written, {} filtered, {} rejected -> {}; {}",
        args.to.name(),
        s.records_in,
        s.written,
        s.filtered,
        s.rejected,
        args.output,
        speed
    ));
}

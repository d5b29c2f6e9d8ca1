//! An export's options: the keys of an `[[export]]` table and the flags of `trajkit export`
//! (one definition; the command line adds its inputs and rejects file).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ConfigError;
use crate::engine::pipeline::RunOptions;
use crate::export::code_tools::CodeTools;
use crate::export::conversation::{DescriptionAs, MapOptions};
use crate::export::parquet::ParquetConfig;
use crate::export::shard::ShardOptions;
use crate::export::split::Splits;
use crate::export::tools::ToolCatalog;
use crate::export::{ExportOptions, Filters, InferTools, SftOptions, Target, Thoughts, TrainOn};
use crate::export::{Overlength, Training, MAX_MESSAGE_BYTES};
use crate::model::upgrade::UpgradeOptions;
use crate::segment::Mode;
use crate::training::{ChatTemplate, TokenizerFile};

/// `row_group_bytes` unless set.
pub const ROW_GROUP_BYTES: u64 = 100_000_000;
/// `shard_bytes` unless set.
pub const SHARD_BYTES: u64 = 500_000_000;
/// `zstd_level` unless set.
pub const ZSTD_LEVEL: i32 = 3;

/// What an export writes, where, and which trajectories.
///
/// The field names are the pipeline keys; with the `cli` feature, the flags of `trajkit
/// export`. A table deserializes with the defaults the flags have; [`ExportConfig::options`]
/// checks the combinations.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "export",
    description = "An export (trajkit export): the trajectories written as a dataset of one target. The keys are the long options of `trajkit export`, in snake_case, with the same values and defaults."
)]
pub struct ExportConfig {
    /// Target: parquet, openai, hf, sharegpt, adp, tokens.
    #[cfg_attr(feature = "cli", arg(long, value_name = "TARGET"))]
    pub to: Target,
    /// Output directory.
    #[cfg_attr(feature = "cli", arg(short, long, value_name = "DIR"))]
    #[schemars(length(min = 1))]
    pub output: String,
    /// Where thoughts (reasoning_content) go: content, reasoning (hf only), think (inline
    /// `<think>`), drop. Default: reasoning for hf, think otherwise.
    #[cfg_attr(feature = "cli", arg(long, value_name = "WHERE"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts: Option<Thoughts>,
    /// Where action descriptions go: text (the assistant's visible text), thought, drop.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "WHERE"))]
    #[serde(default)]
    pub description_as: DescriptionAs,
    /// Which turns train: assistant (every assistant turn), last-assistant (openai: weight 1
    /// on it, 0 on the others), final-answer (tokens: the last assistant turn, when it calls no
    /// tool), all (tokens: every token).
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "WHICH"))]
    #[serde(default)]
    pub train_on: TrainOn,
    /// The model's chat template, a Jinja file or a tokenizer_config.json (with --tokenizer):
    /// tokens renders with it; parquet, openai, hf and sharegpt count each row's tokens
    /// (n_tokens, and the manifest's counts).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// Which template of a tokenizer_config.json that holds several (default: `default`),
    /// e.g. tool_use.
    #[cfg_attr(feature = "cli", arg(long, value_name = "NAME"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_name: Option<String>,
    /// The model's tokenizer.json (with --chat-template): tokens tokenizes with it; parquet,
    /// openai, hf and sharegpt count each row's tokens.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// tokens: thoughts train with their turn (false: the thought's tokens are left out of the
    /// loss where the template writes them).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = true, action = clap::ArgAction::Set,
          value_name = "BOOL"))]
    #[serde(default = "yes")]
    pub train_reasoning: bool,
    /// tokens: the longest row, in tokens (see --overlength).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<usize>,
    /// tokens: a row over --max-tokens is dropped (filtered), or truncated after the last whole
    /// assistant turn that fits.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "WHAT"))]
    #[serde(default)]
    pub overlength: Overlength,
    /// With a chat template: the largest message, in bytes of its JSON as the hf target writes
    /// it (default 8388608); a trajectory with a larger one is rejected before rendering.
    #[cfg_attr(feature = "cli", arg(long, value_name = "BYTES"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = MAX_MESSAGE_BYTES))]
    pub max_message_bytes: Option<u64>,
    /// Map a code language to a tool: `LANG=TOOL[:ARG]` (ARG default `code`; LANG `*` for all
    /// others, whose calls also carry `language`). Defaults: bash/shell/sh=bash:command,
    /// python=python:code, *=execute_code:code.
    #[cfg_attr(feature = "cli", arg(long, value_name = "LANG=TOOL[:ARG]"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_tool: Vec<String>,
    /// Tool specs (a JSON array of OpenAI tools or {name, description, parameters}) used by
    /// name instead of inferring them.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// Inferred tool specs from the calls of the whole input (dataset: a first pass over the
    /// inputs) or of the same trajectory. Default: dataset, trajectory when reading stdin.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FROM"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infer_tools: Option<InferTools>,
    /// System prompt, from a text file.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Append details.prior_reflections (from `join --memory-window`) to the system prompt.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub inject_reflections: bool,
    /// Splits by a stable hash of the id, e.g. train=0.98,validation=0.02 (default: all train).
    #[cfg_attr(feature = "cli", arg(long, value_name = "NAME=FRACTION,..."))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// At most N rows per shard.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub shard_rows: Option<u64>,
    /// At most N bytes of row data per shard (JSON lines, or Parquet column values; before
    /// compression; default 500000000).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub shard_bytes: Option<u64>,
    /// Parquet: a row group ends before the row that would take its data past N bytes
    /// (before encoding and compression).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = ROW_GROUP_BYTES, value_name = "N"))]
    #[serde(default = "row_group_bytes")]
    #[schemars(range(min = 1))]
    pub row_group_bytes: u64,
    /// Compress JSON-lines shards: zstd (Parquet pages are always zstd-compressed).
    #[cfg_attr(feature = "cli", arg(long, value_name = "CODEC", value_parser = ["zstd"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["zstd"]))]
    pub compress: Option<String>,
    /// zstd level of Parquet pages and of `--compress zstd` shards (1-22).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = ZSTD_LEVEL, value_name = "LEVEL",
          value_parser = clap::value_parser!(i32).range(1..=22)))]
    #[serde(default = "zstd_level")]
    #[schemars(range(min = 1, max = 22))]
    pub zstd_level: i32,
    /// Keep trajectories whose details.reward is at least R.
    #[cfg_attr(feature = "cli", arg(long, value_name = "R"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_reward: Option<f64>,
    /// Keep trajectories whose details.outcome status is this (repeatable).
    #[cfg_attr(feature = "cli", arg(long, value_name = "STATUS"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcome: Vec<String>,
    /// Keep trajectories of at most N steps.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<usize>,
    /// Keep trajectories of at most N characters of free text.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// Drop rows whose content (without the id) was already written.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub dedup: bool,
    /// Rows per trajectory: none (one row each, as converted), compaction (one row per
    /// compaction segment, starting from the summary the model was given), subagents (a
    /// subagent's row linked to its parent's call, in its parent's split) or
    /// compaction,subagents (both); docs/segments.md.
    #[cfg_attr(feature = "cli", arg(long, default_value_t, value_name = "MODE"))]
    #[serde(default, skip_serializing_if = "is_default_segments")]
    #[schemars(extend("default" = "none"))]
    pub segments: Mode,
    /// Replace an earlier export in DIR.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub force: bool,
}

fn row_group_bytes() -> u64 {
    ROW_GROUP_BYTES
}

fn zstd_level() -> i32 {
    ZSTD_LEVEL
}

fn is_default_segments(mode: &Mode) -> bool {
    *mode == Mode::None
}

fn yes() -> bool {
    true
}

fn read_text(path: &str, what: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Io(format!("cannot read {what} {path}: {e}")))
}

impl ExportConfig {
    /// True when this export counts its rows' tokens: a counting target (parquet, openai, hf,
    /// sharegpt) given a chat template or tokenizer (or `tokens`).
    pub fn counts_tokens(&self) -> bool {
        self.to.writes_samples()
            || (self.to.can_count_tokens()
                && (self.chat_template.is_some()
                    || self.chat_template_name.is_some()
                    || self.tokenizer.is_some()))
    }

    /// The chat template and tokenizer of `--to tokens`, or of an export that counts tokens,
    /// loaded; the length and loss options are refused on other targets than `tokens`.
    fn training(&self) -> Result<Option<Arc<Training>>, ConfigError> {
        let invalid = |m: String| ConfigError::Invalid(m);
        if !self.to.writes_samples() {
            let counting = self.to.can_count_tokens();
            let template = [
                ("--chat-template", self.chat_template.is_some()),
                ("--chat-template-name", self.chat_template_name.is_some()),
                ("--tokenizer", self.tokenizer.is_some()),
            ];
            let tokens_only = [
                ("--max-tokens", self.max_tokens.is_some()),
                ("--train-reasoning", !self.train_reasoning),
                ("--overlength", self.overlength != Overlength::Drop),
            ];
            if let Some((flag, _)) = tokens_only.iter().find(|(_, g)| *g) {
                return Err(invalid(format!("{flag} needs --to tokens")));
            }
            if let Some((flag, _)) = template.iter().find(|(_, g)| *g && !counting) {
                return Err(invalid(format!(
                    "{flag} needs --to tokens, or parquet, openai, hf or sharegpt (token counts)"
                )));
            }
            if !self.counts_tokens() {
                if self.max_message_bytes.is_some() {
                    return Err(invalid(
                        "--max-message-bytes needs --chat-template and --tokenizer".into(),
                    ));
                }
                return Ok(None);
            }
        }
        let (Some(template), Some(tokenizer)) = (&self.chat_template, &self.tokenizer) else {
            return Err(invalid(if self.to.writes_samples() {
                "--to tokens needs --chat-template FILE and --tokenizer FILE".into()
            } else {
                format!(
                    "token counts on --to {} need --chat-template FILE and --tokenizer FILE",
                    self.to.name()
                )
            }));
        };
        if self.max_tokens == Some(0) {
            return Err(invalid("--max-tokens must be at least 1".into()));
        }
        if self.max_message_bytes == Some(0) {
            return Err(invalid("--max-message-bytes must be at least 1".into()));
        }
        Ok(Some(Arc::new(Training {
            template: ChatTemplate::load(template, self.chat_template_name.as_deref())
                .map_err(invalid)?,
            tokenizer: TokenizerFile::load(tokenizer).map_err(invalid)?,
            train_on: self.train_on,
            train_reasoning: self.train_reasoning,
            max_tokens: self.max_tokens,
            overlength: self.overlength,
            max_message_bytes: self.max_message_bytes.unwrap_or(MAX_MESSAGE_BYTES),
        })))
    }

    /// The export options for `inputs` (already expanded; `-` is stdin): checks the
    /// combinations and values, reads `tools` and `system_prompt`.
    pub fn options(
        &self,
        inputs: &[String],
        run: RunOptions,
    ) -> Result<ExportOptions, ConfigError> {
        let invalid = |m: &str| ConfigError::Invalid(m.to_owned());
        // Parquet rows hold trajectories, not messages: the tokens they count are those the
        // tokens target writes, with its default.
        let counted_as = match self.to {
            Target::Parquet if self.counts_tokens() => Target::Tokens,
            to => to,
        };
        let thoughts = self.thoughts.unwrap_or(counted_as.default_thoughts());
        if thoughts == Thoughts::Reasoning && !counted_as.has_reasoning_field() {
            return Err(invalid(
                "--thoughts reasoning needs --to hf or tokens, or parquet with --chat-template \
                 (openai and sharegpt have no reasoning field)",
            ));
        }
        match self.train_on {
            _ if self.to.writes_samples() => {}
            TrainOn::Assistant => {}
            TrainOn::LastAssistant | TrainOn::All if self.to.weights_turns() => {}
            t => {
                return Err(ConfigError::Invalid(format!(
                    "--train-on {t} needs --to tokens{}",
                    if t == TrainOn::FinalAnswer {
                        ""
                    } else {
                        " or --to openai (weight)"
                    }
                )))
            }
        }
        let training = self.training()?;
        if !(1..=22).contains(&self.zstd_level) {
            return Err(invalid("--zstd-level is a zstd level from 1 to 22"));
        }
        if let Some(codec) = self.compress.as_deref().filter(|c| *c != "zstd") {
            return Err(ConfigError::Invalid(format!(
                "--compress {codec:?}: the one codec is zstd"
            )));
        }
        let mut code_tools = CodeTools::default();
        for m in &self.code_tool {
            code_tools.set(m).map_err(ConfigError::Invalid)?;
        }
        let catalog = match &self.tools {
            Some(path) => ToolCatalog::parse(&read_text(path, "--tools")?)
                .map_err(|e| ConfigError::Invalid(format!("--tools {path}: {e}")))?,
            None => ToolCatalog::default(),
        };
        let system_prompt = self
            .system_prompt
            .as_deref()
            .map(|p| read_text(p, "--system-prompt"))
            .transpose()?;
        let splits = match &self.split {
            Some(s) => Splits::parse(s).map_err(ConfigError::Invalid)?,
            None => Splits::default(),
        };
        if self.shard_rows == Some(0) || self.shard_bytes == Some(0) || self.row_group_bytes == 0 {
            return Err(invalid(
                "--shard-rows, --shard-bytes and --row-group-bytes must be at least 1",
            ));
        }
        let shards = ShardOptions {
            rows: self.shard_rows,
            bytes: Some(self.shard_bytes.unwrap_or(SHARD_BYTES)),
            zstd: self.compress.as_ref().map(|_| self.zstd_level),
            partition: None,
        };
        let filters = Filters {
            min_reward: self.min_reward,
            outcome: self.outcome.clone(),
            max_steps: self.max_steps,
            max_chars: self.max_chars,
        };
        let stdin = inputs.iter().any(|i| i == "-");
        let infer_tools =
            match self.infer_tools {
                Some(InferTools::Dataset) if stdin => return Err(invalid(
                    "--infer-tools dataset reads the inputs twice, and stdin can be read once: \
                     pass files or --infer-tools trajectory",
                )),
                Some(i) => i,
                None if stdin => InferTools::Trajectory,
                None => InferTools::Dataset,
            };
        let mut recorded_options = json!({
            "to": self.to.name(),
            "thoughts": thoughts.name(),
            "description_as": self.description_as.name(),
            "train_on": self.train_on.name(),
            "chat_template": &self.chat_template,
            "chat_template_name": &self.chat_template_name,
            "tokenizer": &self.tokenizer,
            "train_reasoning": self.train_reasoning,
            "max_tokens": self.max_tokens,
            "overlength": self.overlength.name(),
            "code_tool": &self.code_tool,
            "tools": &self.tools,
            "infer_tools": infer_tools.name(),
            "system_prompt": &self.system_prompt,
            "inject_reflections": self.inject_reflections,
            "split": self.split.as_deref().unwrap_or("train=1"),
            "shard_rows": shards.rows,
            "shard_bytes": shards.bytes,
            "row_group_bytes": self.row_group_bytes,
            "compress": &self.compress,
            "zstd_level": self.zstd_level,
            "filters": &filters,
            "dedup": self.dedup,
        });
        if self.segments != Mode::None {
            // Recorded when set (exports without it keep their bytes).
            recorded_options["segments"] = json!(self.segments.name());
        }
        if let Some(n) = self.max_message_bytes {
            // Recorded when set (exports that leave it at its default keep their bytes).
            recorded_options["max_message_bytes"] = json!(n);
        }
        // The Parquet files carry the options that shape them, but not the input paths: the
        // same trajectories read from elsewhere give the same bytes.
        let parquet = ParquetConfig {
            row_group_bytes: self.row_group_bytes,
            zstd_level: self.zstd_level,
            metadata: vec![
                ("trajkit.version".into(), env!("CARGO_PKG_VERSION").into()),
                ("trajkit.options".into(), recorded_options.to_string()),
            ],
            token_counts: self.to == Target::Parquet && training.is_some(),
        };
        recorded_options["inputs"] = json!(inputs);
        Ok(ExportOptions {
            target: self.to,
            sft: SftOptions {
                thoughts,
                train_on: self.train_on,
                map: MapOptions {
                    code_tools,
                    description: self.description_as,
                    keep_thoughts: thoughts != Thoughts::Drop,
                    system_prompt,
                    inject_reflections: self.inject_reflections,
                },
                catalog,
                infer_tools,
            },
            splits,
            shards,
            parquet,
            training,
            filters,
            dedup: self.dedup,
            segments: self.segments,
            force: self.force,
            recorded_options,
            upgrade: UpgradeOptions::default(),
            run,
        })
    }
}

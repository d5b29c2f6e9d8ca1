//! The options of an export: the target, where thoughts go and the other SFT options, and
//! [`ExportOptions`], everything one export needs (splits, shards, Parquet files, filters,
//! `--dedup`, runner options).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::conversation::MapOptions;
use super::filter::Filters;
use super::parquet::ParquetConfig;
use super::shard::ShardOptions;
use super::split::Splits;
use super::tools::ToolCatalog;
use crate::choice::choice;
use crate::engine::pipeline::RunOptions;
use crate::model::upgrade::UpgradeOptions;
use crate::training::Training;

choice!(
    /// What `export` writes.
    Target, "export target" {
        /// OpenAI chat fine-tuning JSONL.
        Openai = "openai",
        /// Hugging Face chat-template messages (TRL, transformers, axolotl).
        Hf = "hf",
        /// LLaMA-Factory ShareGPT.
        Sharegpt = "sharegpt",
        /// ADP 1.5.0 trajectories.
        Adp = "adp",
        /// Parquet, one row per ADP 1.5.0 trajectory.
        Parquet = "parquet",
        /// Pre-tokenized Parquet (`--chat-template`, `--tokenizer`): `input_ids`, masks,
        /// `labels`.
        Tokens = "tokens",
    }
);

impl Target {
    /// True for the SFT targets (openai, hf, sharegpt, tokens), which list tool specs.
    pub fn is_sft(self) -> bool {
        matches!(
            self,
            Target::Openai | Target::Hf | Target::Sharegpt | Target::Tokens
        )
    }

    /// Where thoughts go unless `--thoughts` says otherwise.
    pub fn default_thoughts(self) -> Thoughts {
        match self {
            Target::Hf | Target::Tokens => Thoughts::Reasoning,
            _ => Thoughts::Think,
        }
    }

    /// The row shape, for the dataset card.
    pub(super) fn shape(self) -> &'static str {
        match self {
            Target::Openai => "Each row is an OpenAI chat fine-tuning record: `messages` (system, user, assistant with `tool_calls` whose `arguments` are JSON strings, tool with `tool_call_id`; optional `weight`), `tools` (function specs) and `parallel_tool_calls`.",
            Target::Hf => "Each row has `id`, `messages` for chat templates (assistant `tool_calls` with `arguments` as objects, thoughts in `reasoning_content`, tool messages with `tool_call_id` and `name`) and `tools` (function specs).",
            Target::Sharegpt => "Each row is LLaMA-Factory ShareGPT: `id`, `conversations` of `{from, value}` (human/observation at odd positions, gpt/function_call at even ones), `system` and `tools` (a JSON string).",
            Target::Adp => "Each row is an ADP 1.5.0 trajectory (`schema_version`, `id`, `content`, `details`, ...).",
            Target::Tokens => "Each row is one trajectory rendered by the model's chat template and tokenized: `id`, `input_ids` (list of int32), `attention_mask` (all 1), `assistant_masks` (1 on the tokens that train), `labels` (the token id where it trains, else -100) and `n_tokens`.",
            Target::Parquet => "Each row is one ADP 1.5.0 trajectory: `id`, `schema_version`, columns derived from `details` (`source_format`, `outcome`, `reward`, `reward_components`, `reflections`), counts (`num_steps`, `num_actions`, `num_observations`, `num_chars`), `available_custom_tools`, `available_code_languages`, `steps` (a list of structs tagged by `class`; kwargs, JSON content and other free-form values as JSON text) and `details` (JSON text). `trajkit convert --from parquet` turns the files back into ADP JSON lines.",
        }
    }
}

choice!(
    /// Where an assistant turn's thought (`reasoning_content`, and descriptions with
    /// `--description-as thought`) goes.
    Thoughts, "thought placement" {
        /// Before the text, as plain text.
        Content = "content",
        /// In `reasoning_content` (hf and tokens).
        Reasoning = "reasoning",
        /// Before the text, as `<think>\n…\n</think>\n\n`.
        Think = "think",
        /// Nowhere.
        Drop = "drop",
    }
);

choice!(
    /// Where the inferred spec of a tool comes from (tools without a `--tools` or code-tool
    /// spec).
    InferTools, "--infer-tools value" {
        /// The arguments of all its calls in the input (a first pass over the inputs).
        Dataset = "dataset",
        /// The arguments of its calls in the same trajectory (one pass; for stdin).
        Trajectory = "trajectory",
    }
);

choice!(
    /// Which turns train: `weight` on assistant messages (openai), the loss mask (tokens).
    TrainOn, "--train-on value", default = Assistant {
        /// Every assistant turn (openai: no `weight` written).
        Assistant = "assistant",
        /// Only the last assistant turn (openai: `weight` 1 on it, 0 on the others).
        LastAssistant = "last-assistant" | "last",
        /// Only the final answer: the last assistant turn, when it calls no tool (tokens).
        FinalAnswer = "final-answer",
        /// Every token (tokens); every assistant message (openai, which weights nothing else).
        All = "all",
    }
);

/// Options of the SFT targets.
#[derive(Debug, Clone)]
pub struct SftOptions {
    /// Where thoughts go.
    pub thoughts: Thoughts,
    /// `weight` on assistant messages (openai).
    pub train_on: TrainOn,
    /// The mapping from trajectories to conversations.
    pub map: MapOptions,
    /// Tool specs by name (`--tools`).
    pub catalog: ToolCatalog,
    /// Where inferred tool specs come from.
    pub infer_tools: InferTools,
}

/// An assistant turn's text with its thought placed: before it (plain or in `<think>`), or
/// not at all.
pub fn visible<'a>(text: &'a str, thought: &'a str, placement: Thoughts) -> Cow<'a, str> {
    if thought.is_empty() {
        return Cow::Borrowed(text);
    }
    let sep = if text.is_empty() { "" } else { "\n\n" };
    match placement {
        Thoughts::Reasoning | Thoughts::Drop => Cow::Borrowed(text),
        Thoughts::Content => Cow::Owned(format!("{thought}{sep}{text}")),
        Thoughts::Think => Cow::Owned(format!("<think>\n{thought}\n</think>\n\n{text}")),
    }
}

/// Options of an export ([`crate::commands::export::export_inputs`], [`super::ExportStage`]).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The target.
    pub target: Target,
    /// SFT options (ignored by `adp`).
    pub sft: SftOptions,
    /// Splits.
    pub splits: Splits,
    /// Shards.
    pub shards: ShardOptions,
    /// Parquet files (`--to parquet`, `--to tokens`).
    pub parquet: ParquetConfig,
    /// The chat template, tokenizer and loss options (`--to tokens`).
    pub training: Option<Arc<Training>>,
    /// Filters.
    pub filters: Filters,
    /// Drop rows whose content (the row without its id) was already written.
    pub dedup: bool,
    /// Replace the data files and manifest of an earlier export in the directory.
    pub force: bool,
    /// Recorded in the manifest as the run's options.
    pub recorded_options: Value,
    /// The ADP version read into (1.5.0).
    pub upgrade: UpgradeOptions,
    /// Runner options.
    pub run: RunOptions,
}

impl ExportOptions {
    /// True when the export builds each trajectory's conversation: the SFT targets, and any
    /// export that counts tokens (so it lists tool specs, and may infer them from the dataset).
    pub fn builds_conversations(&self) -> bool {
        self.target.is_sft() || self.training.is_some()
    }

    /// True when this export counts tokens ([`super::encode::count_tokens`]) and `other` counts
    /// the same number for any trajectory whose conversation has no thoughts (and for any
    /// trajectory with equal `--thoughts`): the same template and tokenizer, and the same
    /// trajectory (ADP version) mapped to the same conversation and tool specs (the catalog
    /// holds the specs `--infer-tools dataset` found). The `tokens`
    /// target counts its samples instead, and no other export counts alike.
    pub fn counts_like(&self, other: &ExportOptions) -> bool {
        let counts = |o: &ExportOptions| o.target != Target::Tokens;
        match (&self.training, &other.training) {
            (Some(a), Some(b)) if counts(self) && counts(other) => {
                a.counts_like(b)
                    && self.upgrade == other.upgrade
                    && self.sft.map == other.sft.map
                    && self.sft.catalog == other.sft.catalog
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thoughts_are_placed() {
        assert_eq!(
            visible("a", "t", Thoughts::Think),
            "<think>\nt\n</think>\n\na"
        );
        assert_eq!(visible("a", "t", Thoughts::Content), "t\n\na");
        assert_eq!(visible("", "t", Thoughts::Content), "t");
        assert_eq!(visible("a", "t", Thoughts::Reasoning), "a");
        assert_eq!(visible("a", "", Thoughts::Think), "a");
    }
}

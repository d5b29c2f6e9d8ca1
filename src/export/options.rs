//! The options of an export's rows: the target, where thoughts go and the other SFT options
//! ([`super::settings::ExportOptions`] holds them with the rest).

use std::borrow::Cow;

use super::conversation::MapOptions;
use super::tools::ToolCatalog;
use crate::choice::choice;

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

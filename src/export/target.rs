//! An export target and its facts, in one place: what it writes, what it needs, what it counts
//! and what its dataset card says. The options' checks, the encoders, the manifest and the run
//! ask these methods rather than naming targets.

use super::options::Thoughts;
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

    /// True when its rows are trajectories (adp, parquet), which `trajkit report` reads; the
    /// others hold conversations.
    pub fn holds_trajectories(self) -> bool {
        matches!(self, Target::Adp | Target::Parquet)
    }

    /// True for `tokens`: its rows are samples rendered by a chat template and tokenized, so
    /// it needs a chat template and a tokenizer, and it counts its samples' tokens.
    pub fn writes_samples(self) -> bool {
        self == Target::Tokens
    }

    /// True when, given a chat template and a tokenizer, it counts each row's tokens (parquet,
    /// openai, hf, sharegpt; `tokens` needs them and counts its samples).
    pub fn can_count_tokens(self) -> bool {
        matches!(
            self,
            Target::Parquet | Target::Openai | Target::Hf | Target::Sharegpt
        )
    }

    /// True when a row it writes carries its count as `n_tokens` (when tokens are counted):
    /// OpenAI documents no key besides its own, so openai rows carry none.
    pub fn writes_n_tokens(self) -> bool {
        matches!(self, Target::Parquet | Target::Hf | Target::Sharegpt)
    }

    /// True when a JSON-lines row starts with the trajectory's id (OpenAI's format has no id
    /// key).
    pub fn writes_id(self) -> bool {
        self != Target::Openai
    }

    /// True when its messages have a reasoning field for thoughts (`--thoughts reasoning`).
    pub fn has_reasoning_field(self) -> bool {
        matches!(self, Target::Hf | Target::Tokens)
    }

    /// True when it can weight turns (openai's `weight`: `--train-on last-assistant` or
    /// `all`); `tokens` masks the loss for any `--train-on`.
    pub fn weights_turns(self) -> bool {
        self == Target::Openai
    }

    /// Where thoughts go unless `--thoughts` says otherwise.
    pub fn default_thoughts(self) -> Thoughts {
        match self {
            Target::Hf | Target::Tokens => Thoughts::Reasoning,
            _ => Thoughts::Think,
        }
    }

    /// What its dataset card says of a row, with the `n_tokens` column when `counted` (tokens
    /// were counted).
    pub fn card_shape(self, counted: bool) -> String {
        let mut shape = self.shape().to_owned();
        if counted && self.writes_n_tokens() {
            shape.push_str(" Each row also has `n_tokens`: its conversation's tokens under the chat template and tokenizer of the options.");
        }
        shape
    }

    /// The row shape, for the dataset card.
    fn shape(self) -> &'static str {
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

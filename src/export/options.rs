//! The options of an export's rows: the target, where thoughts go and the other SFT options
//! ([`super::settings::ExportOptions`] holds them with the rest).

use std::borrow::Cow;

use super::conversation::MapOptions;
use super::tools::ToolCatalog;
use crate::choice::choice;

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

//! One conversation into a training sample: the `hf` target's messages and tools rendered by
//! the chat template, tokenized, and the mask of the tokens that train.
//!
//! Which characters train:
//! - each assistant message's span: with `{% generation %}` blocks, their output (a block per
//!   assistant message, or matched to the messages by where they start); without them, the
//!   message's rendered boundaries: from the end of `messages[..i]` rendered with the
//!   generation prompt (so the assistant header is prompt, as a generation block would leave
//!   it) to the end of `messages[..=i]` rendered, each measured as the part it shares with the
//!   whole rendering;
//! - `--train-on` picks the messages (every assistant one, the last, the final answer) or
//!   every character (`all`); assistant turns marked not for training never train;
//! - without `--train-reasoning`, a turn's thought, where the template writes it inside the
//!   span, is cut out.
//!
//! A token trains when it overlaps a trained span ([`crate::training::tokenize::mask`]).

use std::ops::Range;
use std::sync::Arc;

use minijinja::value::Serde;
use minijinja::Value;

use super::conversation::{Conversation, Turn};
use super::hf;
use super::openai::Tool;
use super::options::{SftOptions, TrainOn};
use super::tools::ToolSpec;
use crate::choice::choice;
use crate::training::generation::has_sentinel;
use crate::training::template::{ChatTemplate, TemplateError};
use crate::training::tokenize::TokenizerFile;

choice!(
    /// What happens to a trajectory longer than `--max-tokens`.
    Overlength, "--overlength value", default = Drop {
        /// Filtered out (counted in `filtered_by.max_tokens`).
        Drop = "drop",
        /// Cut after the last whole assistant turn that fits.
        Truncate = "truncate",
    }
);

/// A chat template, a tokenizer and the loss options.
pub struct Training {
    /// The chat template.
    pub template: ChatTemplate,
    /// The tokenizer (shared with the other exports of a run that load the same file).
    pub tokenizer: Arc<TokenizerFile>,
    /// Which turns train.
    pub train_on: TrainOn,
    /// Thoughts train with their turn.
    pub train_reasoning: bool,
    /// The longest sample, in tokens.
    pub max_tokens: Option<usize>,
    /// What happens to longer ones.
    pub overlength: Overlength,
    /// The largest message, in bytes of its JSON as the `hf` target writes it: a
    /// conversation with a larger one is refused before rendering ([`SampleError::TooLarge`]).
    pub max_message_bytes: u64,
}

/// [`Training::max_message_bytes`] unless set: 8 MiB, far above the messages of real agent
/// sessions (whose tools cut their outputs to kilobytes), and low enough that rendering and
/// tokenizing the largest message allowed stays under a gigabyte (the `tokenizers` library's
/// encoding costs about 100 bytes of memory per byte of text).
pub const MAX_MESSAGE_BYTES: u64 = 8 << 20;

impl std::fmt::Debug for Training {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Training")
            .field("train_on", &self.train_on)
            .field("train_reasoning", &self.train_reasoning)
            .field("max_tokens", &self.max_tokens)
            .field("overlength", &self.overlength)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish_non_exhaustive()
    }
}

/// A tokenized conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Token ids.
    pub ids: Vec<u32>,
    /// 1 for each token that trains.
    pub trained: Vec<u8>,
}

/// True when a string of `value` (serialized as JSON, which writes those characters as they
/// are) holds a generation block's sentinel.
fn holds_sentinel(value: &impl serde::Serialize) -> bool {
    thread_local! {
        static JSON: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    JSON.with_borrow_mut(|json| {
        json.clear();
        // Serializing these values cannot fail; were it to, the check passes and the
        // rendering finds unpaired sentinels.
        let _ = serde_json::to_writer(&mut *json, value);
        let found = has_sentinel(json);
        if json.capacity() > 4 << 20 {
            *json = Vec::new();
        }
        found
    })
}

/// Why a conversation gives no sample, without being at fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Longer than `--max-tokens` (and no prefix fits, with `truncate`).
    Overlength,
    /// No token trains.
    NothingToTrain,
}

/// Why a conversation could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleError {
    /// The template failed (its message and line).
    Template(TemplateError),
    /// Content holds a character the `{% generation %}` rewrite prints.
    Sentinel,
    /// The tokenizer failed.
    Tokenizer(String),
    /// A message is larger than [`Training::max_message_bytes`] (what is wrong).
    TooLarge(String),
}

impl From<TemplateError> for SampleError {
    fn from(e: TemplateError) -> Self {
        SampleError::Template(e)
    }
}

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleError::Template(e) => e.fmt(f),
            SampleError::Sentinel => f.write_str(
                "the conversation holds U+F0001 or U+F0002, which mark {% generation %} blocks",
            ),
            SampleError::Tokenizer(e) | SampleError::TooLarge(e) => f.write_str(e),
        }
    }
}

/// The messages of a conversation as the template sees them, and what training needs of
/// each.
struct Messages {
    values: Vec<Value>,
    tools: Value,
    /// Per message: an assistant one, whether it may train (not marked otherwise), whether
    /// it calls tools, and its thought.
    info: Vec<Info>,
}

#[derive(Default, Clone)]
struct Info {
    assistant: bool,
    may_train: bool,
    calls: bool,
    thought: String,
}

impl Training {
    /// The sample of `conv` with `tools`, or why there is none.
    pub fn sample(
        &self,
        conv: &Conversation,
        tools: &[ToolSpec<'_>],
        sft: &SftOptions,
    ) -> Result<Result<Sample, Skip>, SampleError> {
        let m = self.messages(conv, tools, sft, true)?;
        let full = self.encode(&m, m.values.len())?;
        let Some(max) = self.max_tokens.filter(|max| full.ids.len() > *max) else {
            return Ok(trains(full));
        };
        if self.overlength == Overlength::Drop {
            return Ok(Err(Skip::Overlength));
        }
        // The longest prefix that ends on a whole assistant turn and fits.
        for end in (1..m.values.len()).rev() {
            if !m.info[end - 1].assistant {
                continue;
            }
            let s = self.encode(&m, end)?;
            if s.ids.len() <= max {
                return Ok(trains(s));
            }
        }
        Ok(Err(Skip::Overlength))
    }

    /// True when [`Training::count`] gives the same numbers as `other`'s: the same template
    /// (by [`ChatTemplate::fingerprint`]) and tokenizer (the options of samples play no part).
    pub fn counts_like(&self, other: &Training) -> bool {
        self.template.fingerprint() == other.template.fingerprint()
            && Arc::ptr_eq(&self.tokenizer, &other.tokenizer)
    }

    /// The number of tokens of `conv` with `tools`, rendered whole (no masks, no limit).
    pub fn count(
        &self,
        conv: &Conversation,
        tools: &[ToolSpec<'_>],
        sft: &SftOptions,
    ) -> Result<usize, SampleError> {
        let m = self.messages(conv, tools, sft, false)?;
        let text = self.template.render_text(&m.values, &m.tools, false)?;
        self.tokenizer.count(&text).map_err(SampleError::Tokenizer)
    }

    /// The messages and tools of `conv` as the template sees them. For a `sample` (not a
    /// count), content holding a sentinel is refused when the generation blocks give the
    /// spans, and each message's [`Info`] is gathered (a count leaves `info` empty).
    fn messages(
        &self,
        conv: &Conversation,
        tools: &[ToolSpec<'_>],
        sft: &SftOptions,
        sample: bool,
    ) -> Result<Messages, SampleError> {
        let messages = hf::messages(conv, sft);
        self.check_sizes(&messages)?;
        let tool_list: Vec<Tool<'_>> = tools.iter().map(Tool::new).collect();
        if sample && self.template.has_generation() && holds_sentinel(&(&messages, &tool_list)) {
            return Err(SampleError::Sentinel);
        }
        let info = if sample { info(conv) } else { Vec::new() };
        Ok(Messages {
            values: messages
                .iter()
                .map(|m| Value::from(Serde(&m.for_template())))
                .collect(),
            tools: Value::from(Serde(&tool_list)),
            info,
        })
    }

    /// Refuses `messages` when one is larger than [`Training::max_message_bytes`] (measured
    /// as JSON, without building it).
    fn check_sizes(&self, messages: &[hf::Message<'_>]) -> Result<(), SampleError> {
        for (i, m) in messages.iter().enumerate() {
            let mut size = JsonSize(0);
            // Writing into a counter cannot fail.
            let _ = serde_json::to_writer(&mut size, m);
            if size.0 > self.max_message_bytes {
                return Err(SampleError::TooLarge(format!(
                    "message {i} ({}) is {} bytes of JSON, over --max-message-bytes {}",
                    m.role(),
                    size.0,
                    self.max_message_bytes
                )));
            }
        }
        Ok(())
    }

    /// The sample of `m.values[..end]`.
    fn encode(&self, m: &Messages, end: usize) -> Result<Sample, SampleError> {
        let values = &m.values[..end];
        let info = &m.info[..end];
        let rendered = self.template.render(values, &m.tools, false)?;
        let text = &rendered.text;
        let selected = self.selected(info);
        let all_assistants_train = info.iter().zip(&selected).all(|(i, s)| !i.assistant || *s);
        let spans: Vec<Range<usize>> = if self.train_on == TrainOn::All {
            if info.iter().any(|i| i.assistant && !i.may_train) {
                let bounds = self.boundaries(m, end, text);
                complement(
                    text.len(),
                    info.iter()
                        .zip(bounds)
                        .filter(|(i, _)| i.assistant && !i.may_train)
                        .filter_map(|(_, b)| b),
                )
            } else {
                complement(text.len(), std::iter::empty())
            }
        } else if self.template.has_generation() && all_assistants_train && self.train_reasoning {
            rendered.spans.clone()
        } else {
            let per_message = if self.template.has_generation() {
                self.generation_by_message(m, end, text, &rendered.spans)
            } else {
                self.boundaries(m, end, text)
                    .into_iter()
                    .map(|b| b.into_iter().collect())
                    .collect()
            };
            let mut out = Vec::new();
            for ((i, s), spans) in info.iter().zip(&selected).zip(per_message) {
                if !*s {
                    continue;
                }
                for span in spans {
                    out.extend(self.without_thought(text, span, &i.thought));
                }
            }
            out
        };
        let (ids, trained) = self
            .tokenizer
            .encode_masked(text, &spans)
            .map_err(SampleError::Tokenizer)?;
        Ok(Sample { ids, trained })
    }

    /// Per message: whether `--train-on` picks it (assistant messages that may train).
    fn selected(&self, info: &[Info]) -> Vec<bool> {
        let last = info.iter().rposition(|i| i.assistant);
        info.iter()
            .enumerate()
            .map(|(k, i)| {
                i.assistant
                    && i.may_train
                    && match self.train_on {
                        TrainOn::Assistant | TrainOn::All => true,
                        TrainOn::LastAssistant => Some(k) == last,
                        TrainOn::FinalAnswer => Some(k) == last && !i.calls,
                    }
            })
            .collect()
    }

    /// `span`, less the first place `thought` appears in it unless thoughts train.
    fn without_thought(&self, text: &str, span: Range<usize>, thought: &str) -> Vec<Range<usize>> {
        if self.train_reasoning || thought.is_empty() {
            return vec![span];
        }
        match text.get(span.clone()).and_then(|s| s.find(thought)) {
            Some(at) => {
                let (a, b) = (span.start + at, span.start + at + thought.len());
                [span.start..a, b..span.end]
                    .into_iter()
                    .filter(|r| !r.is_empty())
                    .collect()
            }
            None => vec![span],
        }
    }

    /// The generation spans of each message: one per assistant message when the counts
    /// agree, else each span goes to the assistant message whose rendered boundaries hold its
    /// start.
    fn generation_by_message(
        &self,
        m: &Messages,
        end: usize,
        text: &str,
        spans: &[Range<usize>],
    ) -> Vec<Vec<Range<usize>>> {
        let info = &m.info[..end];
        let mut out = vec![Vec::new(); end];
        let assistants: Vec<usize> = (0..end).filter(|&k| info[k].assistant).collect();
        if assistants.len() == spans.len() {
            for (k, s) in assistants.into_iter().zip(spans) {
                out[k].push(s.clone());
            }
            return out;
        }
        let bounds = self.boundaries(m, end, text);
        for s in spans {
            let owner = bounds.iter().enumerate().find(|(k, b)| {
                info[*k].assistant
                    && b.as_ref()
                        .is_some_and(|b| b.start <= s.start && s.start < b.end)
            });
            if let Some((k, _)) = owner {
                out[k].push(s.clone());
            }
        }
        out
    }

    /// Each assistant message's rendered span (docs above), `None` for the others.
    fn boundaries(&self, m: &Messages, end: usize, text: &str) -> Vec<Option<Range<usize>>> {
        let shared = |values: &[Value], prompt: bool| {
            self.template
                .render(values, &m.tools, prompt)
                .ok()
                .map(|r| common_prefix(&r.text, text))
        };
        let mut out = vec![None; end];
        let mut prev_end = 0;
        for (k, slot) in out.iter_mut().enumerate() {
            if !m.info[k].assistant {
                continue;
            }
            let before = &m.values[..k];
            let start = shared(before, true)
                .or_else(|| shared(before, false))
                .unwrap_or(prev_end);
            let stop = shared(&m.values[..=k], false).unwrap_or(text.len());
            prev_end = stop;
            *slot = Some(start.min(stop)..stop);
        }
        out
    }
}

/// Counts the bytes written to it.
struct JsonSize(u64);

impl std::io::Write for JsonSize {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What training needs of each message of `conv` (the system prompt first, if any).
fn info(conv: &Conversation) -> Vec<Info> {
    let system = conv.system.as_ref().map(|_| Info::default());
    let turns = conv.turns.iter().map(|t| match t {
        Turn::Assistant(a) => Info {
            assistant: true,
            may_train: !a.untrained,
            calls: !a.calls.is_empty(),
            thought: a.thought.clone(),
        },
        _ => Info::default(),
    });
    system.into_iter().chain(turns).collect()
}

/// The sample, or [`Skip::NothingToTrain`] when no token trains.
fn trains(s: Sample) -> Result<Sample, Skip> {
    if s.trained.contains(&1) {
        Ok(s)
    } else {
        Err(Skip::NothingToTrain)
    }
}

/// The byte length of the longest common prefix of `a` and `b`, on a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    if b.starts_with(a) {
        return a.len();
    }
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// `0..len` less the `holes` (in order).
fn complement(len: usize, holes: impl Iterator<Item = Range<usize>>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    for h in holes {
        if h.start > at {
            out.push(at..h.start);
        }
        at = at.max(h.end);
    }
    if at < len {
        out.push(at..len);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prefixes_end_on_characters() {
        assert_eq!(common_prefix("abc", "abcd"), 3);
        assert_eq!(common_prefix("aé", "aè"), 1);
        assert_eq!(common_prefix("x", "y"), 0);
    }

    #[test]
    fn complements_leave_out_the_holes() {
        assert_eq!(complement(10, [2..4, 6..10].into_iter()), vec![0..2, 4..6]);
        let whole = complement(3, std::iter::empty());
        assert_eq!((whole.len(), whole.first().cloned()), (1, Some(0..3)));
    }
}

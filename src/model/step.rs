//! The step classes of an ADP trajectory: actions taken by the agent and observations it receives.
//!
//! Field order in these structs is the key order trajkit writes (see docs/adp-versions.md,
//! "Output key order"). Class-specific fields are always written (as `null` when absent), as
//! ADP's own dumps do; the link and training fields added in ADP 1.x (`reasoning_content`,
//! `tool_call_id`, `reward`) are written only when set.
//!
//! Each struct repeats those shared optional fields rather than `#[serde(flatten)]`-ing them:
//! flatten disables `deny_unknown_fields` and makes decoding buffer every step.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object with its keys in input order.
pub type JsonObject = Map<String, Value>;

/// One element of a trajectory's `content`, tagged by `class_`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class_", rename_all = "snake_case")]
pub enum Step {
    /// A call of a named function with keyword arguments.
    ApiAction(ApiAction),
    /// Code the agent runs in some language.
    CodeAction(CodeAction),
    /// A message from the agent (a reply, a question, the final answer).
    MessageAction(MessageAction),
    /// Text the agent receives.
    TextObservation(TextObservation),
    /// An image the agent receives.
    ImageObservation(ImageObservation),
    /// A web page state: HTML, accessibility tree, URL, screenshot.
    WebObservation(WebObservation),
    /// A structured JSON value the agent receives (ADP 1.x).
    JsonObservation(JsonObservation),
}

/// Who produced an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The human or task giver.
    User,
    /// The agent itself.
    Agent,
    /// The environment: tool results, program output, pages.
    Environment,
}

impl Source {
    /// The name written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Agent => "agent",
            Source::Environment => "environment",
        }
    }
}

/// `api_action`: a function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiAction {
    /// Name of the function called.
    pub function: String,
    /// Keyword arguments, in their original order.
    pub kwargs: JsonObject,
    /// The agent's stated thought for this action.
    #[serde(default)]
    pub description: Option<String>,
    /// Extended reasoning (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Link to the observation answering this call (ADP 1.3+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// `code_action`: code to execute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeAction {
    /// Language of the code (one of ADP's language set).
    pub language: String,
    /// The code.
    pub content: String,
    /// The agent's stated thought (required by ADP, may be null).
    pub description: Option<String>,
    /// Extended reasoning (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Link to the observation answering this call (ADP 1.3+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// `message_action`: a message from the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageAction {
    /// The message text.
    pub content: String,
    /// Extra context or thought.
    #[serde(default)]
    pub description: Option<String>,
    /// Extended reasoning (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Must stay empty: a message is not a tool call. Kept so that validation can report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// `text_observation`: text received by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextObservation {
    /// The text.
    pub content: String,
    /// Name of the participant or tool that produced it.
    #[serde(default)]
    pub name: Option<String>,
    /// Who produced it.
    pub source: Source,
    /// The tool call this observation answers (ADP 1.3+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// `image_observation`: an image (a path or URL) received by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageObservation {
    /// Path or URL of the image.
    pub content: String,
    /// Free-form annotations (bounding boxes, labels).
    #[serde(default)]
    pub annotations: Option<Vec<Value>>,
    /// Who produced it.
    pub source: Source,
    /// The tool call this observation answers (ADP 1.3+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// `web_observation`: a browser state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebObservation {
    /// Raw HTML (or ADP's text rendering of the page).
    #[serde(default)]
    pub html: Option<String>,
    /// Accessibility tree rendering.
    #[serde(default)]
    pub axtree: Option<String>,
    /// Page URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Screenshot, written with its own `class_: "image_observation"` tag.
    #[serde(default)]
    pub image_observation: Option<TaggedImage>,
    /// Viewport `[width, height]`.
    #[serde(default)]
    pub viewport_size: Option<Vec<Value>>,
    /// The tool call this observation answers (ADP 1.3+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward (ADP 1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// An [`ImageObservation`] nested in a web observation, carrying its `class_` tag as ADP writes
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class_")]
pub enum TaggedImage {
    /// The only variant.
    #[serde(rename = "image_observation")]
    Image(ImageObservation),
}

/// `json_observation`: a structured value received by the agent (ADP 1.x).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonObservation {
    /// The value (a JSON object).
    pub content: JsonObject,
    /// Name of the participant or tool that produced it.
    #[serde(default)]
    pub name: Option<String>,
    /// Who produced it.
    pub source: Source,
    /// The tool call this observation answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Per-step reward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

impl Step {
    /// The `class_` tag of this step.
    pub fn class_name(&self) -> &'static str {
        match self {
            Step::ApiAction(_) => "api_action",
            Step::CodeAction(_) => "code_action",
            Step::MessageAction(_) => "message_action",
            Step::TextObservation(_) => "text_observation",
            Step::ImageObservation(_) => "image_observation",
            Step::WebObservation(_) => "web_observation",
            Step::JsonObservation(_) => "json_observation",
        }
    }

    /// True for the three action classes.
    pub fn is_action(&self) -> bool {
        matches!(
            self,
            Step::ApiAction(_) | Step::CodeAction(_) | Step::MessageAction(_)
        )
    }

    /// True for tool actions (api and code actions), the ones that take a `tool_call_id`.
    pub fn is_tool_action(&self) -> bool {
        matches!(self, Step::ApiAction(_) | Step::CodeAction(_))
    }

    /// The `tool_call_id` of this step, if any.
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            Step::ApiAction(s) => s.tool_call_id.as_deref(),
            Step::CodeAction(s) => s.tool_call_id.as_deref(),
            Step::MessageAction(s) => s.tool_call_id.as_deref(),
            Step::TextObservation(s) => s.tool_call_id.as_deref(),
            Step::ImageObservation(s) => s.tool_call_id.as_deref(),
            Step::WebObservation(s) => s.tool_call_id.as_deref(),
            Step::JsonObservation(s) => s.tool_call_id.as_deref(),
        }
    }

    /// Mutable access to the `tool_call_id` slot.
    pub fn tool_call_id_mut(&mut self) -> &mut Option<String> {
        match self {
            Step::ApiAction(s) => &mut s.tool_call_id,
            Step::CodeAction(s) => &mut s.tool_call_id,
            Step::MessageAction(s) => &mut s.tool_call_id,
            Step::TextObservation(s) => &mut s.tool_call_id,
            Step::ImageObservation(s) => &mut s.tool_call_id,
            Step::WebObservation(s) => &mut s.tool_call_id,
            Step::JsonObservation(s) => &mut s.tool_call_id,
        }
    }

    /// The per-step reward, if any.
    pub fn reward(&self) -> Option<f64> {
        match self {
            Step::ApiAction(s) => s.reward,
            Step::CodeAction(s) => s.reward,
            Step::MessageAction(s) => s.reward,
            Step::TextObservation(s) => s.reward,
            Step::ImageObservation(s) => s.reward,
            Step::WebObservation(s) => s.reward,
            Step::JsonObservation(s) => s.reward,
        }
    }

    /// Mutable access to the per-step `reward` slot.
    pub fn reward_mut(&mut self) -> &mut Option<f64> {
        match self {
            Step::ApiAction(s) => &mut s.reward,
            Step::CodeAction(s) => &mut s.reward,
            Step::MessageAction(s) => &mut s.reward,
            Step::TextObservation(s) => &mut s.reward,
            Step::ImageObservation(s) => &mut s.reward,
            Step::WebObservation(s) => &mut s.reward,
            Step::JsonObservation(s) => &mut s.reward,
        }
    }

    /// The `reasoning_content` of an action, if any.
    pub fn reasoning_content(&self) -> Option<&str> {
        match self {
            Step::ApiAction(s) => s.reasoning_content.as_deref(),
            Step::CodeAction(s) => s.reasoning_content.as_deref(),
            Step::MessageAction(s) => s.reasoning_content.as_deref(),
            _ => None,
        }
    }

    /// The observation source, for observation classes that have one.
    pub fn source(&self) -> Option<Source> {
        match self {
            Step::TextObservation(s) => Some(s.source),
            Step::ImageObservation(s) => Some(s.source),
            Step::JsonObservation(s) => Some(s.source),
            _ => None,
        }
    }

    /// Number of characters of free text in this step (content, code, html, thoughts).
    pub fn text_chars(&self) -> usize {
        fn n(s: &Option<String>) -> usize {
            s.as_deref().map_or(0, |s| s.chars().count())
        }
        match self {
            Step::ApiAction(s) => n(&s.description) + n(&s.reasoning_content),
            Step::CodeAction(s) => {
                s.content.chars().count() + n(&s.description) + n(&s.reasoning_content)
            }
            Step::MessageAction(s) => {
                s.content.chars().count() + n(&s.description) + n(&s.reasoning_content)
            }
            Step::TextObservation(s) => s.content.chars().count(),
            Step::ImageObservation(_) | Step::JsonObservation(_) => 0,
            Step::WebObservation(s) => n(&s.html) + n(&s.axtree),
        }
    }
}

/// Constructors for the steps converters build most (ADP 1.5 shape, no link ids yet).
impl Step {
    /// A text observation from the user.
    pub fn user_text(content: impl Into<String>) -> Step {
        Step::TextObservation(TextObservation {
            content: content.into(),
            name: None,
            source: Source::User,
            tool_call_id: None,
            reward: None,
        })
    }

    /// A text observation from the environment (a tool result, program output), named after
    /// what produced it.
    pub fn environment_text(name: Option<String>, content: impl Into<String>) -> Step {
        Step::TextObservation(TextObservation {
            content: content.into(),
            name,
            source: Source::Environment,
            tool_call_id: None,
            reward: None,
        })
    }

    /// An image (a path, URL or data URI) received from `source`.
    pub fn image(content: impl Into<String>, source: Source) -> Step {
        Step::ImageObservation(ImageObservation {
            content: content.into(),
            annotations: None,
            source,
            tool_call_id: None,
            reward: None,
        })
    }

    /// A function call.
    pub fn api(
        function: impl Into<String>,
        kwargs: JsonObject,
        description: Option<String>,
    ) -> Step {
        Step::ApiAction(ApiAction {
            function: function.into(),
            kwargs,
            description,
            reasoning_content: None,
            tool_call_id: None,
            reward: None,
        })
    }

    /// Code in `language`.
    pub fn code(
        language: impl Into<String>,
        content: impl Into<String>,
        description: Option<String>,
    ) -> Step {
        Step::CodeAction(CodeAction {
            language: language.into(),
            content: content.into(),
            description,
            reasoning_content: None,
            tool_call_id: None,
            reward: None,
        })
    }

    /// A message from the agent.
    pub fn message(content: impl Into<String>, description: Option<String>) -> Step {
        Step::MessageAction(MessageAction {
            content: content.into(),
            description,
            reasoning_content: None,
            tool_call_id: None,
            reward: None,
        })
    }

    /// Sets an action's stated thought (`description`) and `reasoning_content`; observations
    /// are left as they are.
    pub fn set_thought(&mut self, description: Option<String>, reasoning: Option<String>) {
        match self {
            Step::ApiAction(a) => (a.description, a.reasoning_content) = (description, reasoning),
            Step::CodeAction(c) => (c.description, c.reasoning_content) = (description, reasoning),
            Step::MessageAction(m) => {
                (m.description, m.reasoning_content) = (description, reasoning)
            }
            _ => {}
        }
    }

    /// Sets the `tool_call_id` (builder style).
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Step {
        *self.tool_call_id_mut() = Some(id.into());
        self
    }
}

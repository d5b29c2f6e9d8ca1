//! Training-ready rendering: a model's chat template and tokenizer applied to the `hf`
//! target's messages, as transformers' `apply_chat_template` applies them, with loss masks
//! and length limits (docs/training.md).
//!
//! - [`template`]: [`ChatTemplate`], the Jinja environment of transformers; [`generation`]:
//!   the `{% generation %}` blocks; [`literals`]: string literals decoded as Python decodes
//!   them; [`pyjson`]: Python's `json.dumps` and `repr`; [`budget`]: what one rendering may
//!   spend; [`memory`] and [`render_thread`]: the memory one rendering may hold, on a thread
//!   of its own;
//! - [`guard`]: calls into the libraries a user's file can make panic;
//! - [`tokenize`]: [`TokenizerFile`] and the assistant mask of tokens; [`tokens`]: a text's
//!   [`Tokens`]; [`bpe`]: trajkit's own
//!   encoder of byte-level BPE tokenizers, the common shape; [`tokenizer_checks`]: the
//!   settings of a tokenizer file refused at load.
//!
//! One conversation into token ids and the mask of the tokens that train is the tokens
//! target's [`crate::export::sample`].

pub mod bpe;
pub mod budget;
pub mod generation;
pub mod guard;
pub mod literals;
pub mod memory;
pub mod pyjson;
pub mod render_thread;
pub mod template;
pub mod tokenize;
pub mod tokenizer_checks;
pub mod tokens;

pub use template::{ChatTemplate, Rendered, TemplateError};
pub use tokenize::{TokenizerFile, Tokens};

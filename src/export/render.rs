//! What encoding a trajectory makes, shared by every target: a row with its counts
//! ([`Encoded`]), or why there is none ([`RenderError`]); the conversation and tool specs the
//! SFT and `tokens` targets start from ([`with_conversation`]).

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::conversation::{self, Conversation, Untrainable};
use super::filter::Filtered;
use super::options::SftOptions;
use super::sample::SampleError;
use super::tools::{tool_specs, ToolSpec};
use crate::model::Trajectory;

/// A row of the target, ready for the writer.
pub struct Encoded<R> {
    /// The row.
    pub row: R,
    /// Its bytes of data (what shards are cut by).
    pub len: u64,
    /// With `--dedup`, the hash of its content without the id.
    pub hash: Option<[u8; 16]>,
    /// Its number of tokens (`tokens` target, and the others with a chat template and
    /// tokenizer).
    pub tokens: Option<u64>,
}

impl Encoded<()> {
    /// These counts around `row`.
    pub fn with_row<T>(self, row: T) -> Encoded<T> {
        Encoded {
            row,
            len: self.len,
            hash: self.hash,
            tokens: self.tokens,
        }
    }
}

/// Why a trajectory could not be encoded.
pub enum RenderError {
    /// It cannot train.
    Untrainable(Untrainable),
    /// A value did not serialize.
    Json(serde_json::Error),
    /// The chat template or the tokenizer failed (the template's message and line).
    Template(String),
    /// Nothing to write, and no fault of the data: filtered (too long, nothing trains).
    Skipped(Filtered),
}

impl From<serde_json::Error> for RenderError {
    fn from(e: serde_json::Error) -> Self {
        RenderError::Json(e)
    }
}

/// Builds the conversation of `traj` and its tool specs, and hands them to `f`: what the SFT
/// targets render, the `tokens` target tokenizes, and token counts count. The conversation
/// takes a given trajectory's steps apart; of a borrowed one it copies the steps, never the
/// details (it only reads them).
pub fn with_conversation<T>(
    traj: Cow<'_, Trajectory>,
    sft: &SftOptions,
    f: impl FnOnce(&Conversation, &[ToolSpec<'_>]) -> Result<T, RenderError>,
) -> Result<T, RenderError> {
    let available = traj.available_custom_tools.clone().unwrap_or_default();
    let conv = match traj {
        Cow::Owned(t) => conversation::build_from(t.content, &t.details, &sft.map),
        Cow::Borrowed(t) => conversation::build_from(t.content.clone(), &t.details, &sft.map),
    }
    .map_err(RenderError::Untrainable)?;
    let tools = tool_specs(&conv, &available, &sft.map.code_tools, &sft.catalog);
    f(&conv, &tools)
}

/// Why rendering a sample failed, as a reason to reject the trajectory: a message over
/// `--max-message-bytes` under a rule of its own, the rest as the chat template's.
pub fn sample_error(e: SampleError) -> RenderError {
    match e {
        SampleError::TooLarge(m) => {
            RenderError::Untrainable(Untrainable::new("max-message-bytes", "", m))
        }
        e => RenderError::Template(e.to_string()),
    }
}

/// The `--dedup` hash of a row's content: the first 16 bytes of its SHA-256.
pub(super) fn content_hash(body: &[u8]) -> [u8; 16] {
    let mut h = [0u8; 16];
    h.copy_from_slice(&Sha256::digest(body)[..16]);
    h
}

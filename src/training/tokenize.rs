//! [`TokenizerFile`]: a Hugging Face `tokenizer.json`, loaded offline, and the assistant mask
//! of a rendered text's tokens.
//!
//! Tokenizing is transformers' inside `apply_chat_template(..., tokenize=True)`: the rendered
//! text is encoded without adding special tokens again (the template wrote them). A token is
//! in a span's mask when it overlaps the span (its end past the span's start, its start
//! before the span's end), as transformers decides it from the tokens' character offsets.
//! trajkit compares byte offsets instead: a token's offsets and a span's ends lie on character
//! boundaries, where byte and character order agree, so the masks are the same; and byte
//! offsets spare the tokenizer a byte-to-character map of every text (a fifth of its time).

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

/// A loaded tokenizer.
///
/// Threads never share one copy: an encode takes an idle copy (or clones a new one from
/// `loaded`) and gives it back after. A BPE model caches the words it has merged behind a
/// lock, and two threads on one copy contend for it (a lookup that finds it locked misses and
/// merges again): on 2 threads that cost 40 % more CPU time than on one.
pub struct TokenizerFile {
    loaded: tokenizers::Tokenizer,
    idle: Mutex<Vec<tokenizers::Tokenizer>>,
}

/// A text's tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Each token's byte range in the text.
    pub offsets: Vec<(usize, usize)>,
}

impl TokenizerFile {
    /// Loads `path`; the error names the file.
    pub fn load(path: &str) -> Result<Self, String> {
        tokenizers::Tokenizer::from_file(path)
            .map(|loaded| TokenizerFile {
                loaded,
                idle: Mutex::new(Vec::new()),
            })
            .map_err(|e| format!("--tokenizer {path}: not a tokenizer.json that loads: {e}"))
    }

    /// Encodes `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Tokens, String> {
        let idle = || self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let copy = idle().pop().unwrap_or_else(|| self.loaded.clone());
        let encoded = copy.encode(text, false);
        idle().push(copy);
        let e = encoded.map_err(|e| format!("the tokenizer failed: {e}"))?;
        Ok(Tokens {
            ids: e.get_ids().to_vec(),
            offsets: e.get_offsets().to_vec(),
        })
    }
}

/// 1 for each token overlapping one of `spans` (byte ranges, in order), else 0.
pub fn mask(offsets: &[(usize, usize)], spans: &[Range<usize>]) -> Vec<u8> {
    let mut out = vec![0u8; offsets.len()];
    let mut k = 0;
    for (m, &(start, end)) in out.iter_mut().zip(offsets) {
        while k < spans.len() && start >= spans[k].end {
            k += 1;
        }
        let Some(span) = spans.get(k) else { break };
        if end > span.start {
            *m = 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_overlapping_a_span_are_masked() {
        let offsets = [(0, 2), (2, 4), (4, 6), (6, 6), (6, 9)];
        let one = [3..5, 9..9];
        assert_eq!(mask(&offsets, &one), vec![0, 1, 1, 0, 0]);
        assert_eq!(mask(&offsets, &[0..1, 6..7]), vec![1, 0, 0, 0, 1]);
        assert_eq!(mask(&offsets, &[]), vec![0, 0, 0, 0, 0]);
    }
}

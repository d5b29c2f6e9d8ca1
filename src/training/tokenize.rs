//! [`TokenizerFile`]: a Hugging Face `tokenizer.json`, loaded offline, and the assistant mask
//! of a rendered text's tokens.
//!
//! Tokenizing is transformers' inside `apply_chat_template(..., tokenize=True)`: the rendered
//! text is encoded without adding special tokens again (the template wrote them). A token is
//! in a span's mask when it overlaps the span (its end past the span's start, its start
//! before the span's end), as transformers decides it from the tokens' character offsets.

use std::ops::Range;

/// A loaded tokenizer.
pub struct TokenizerFile {
    inner: tokenizers::Tokenizer,
}

/// A text's tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Each token's character (not byte) range in the text.
    pub offsets: Vec<(usize, usize)>,
}

impl TokenizerFile {
    /// Loads `path`; the error names the file.
    pub fn load(path: &str) -> Result<Self, String> {
        tokenizers::Tokenizer::from_file(path)
            .map(|inner| TokenizerFile { inner })
            .map_err(|e| format!("--tokenizer {path}: not a tokenizer.json that loads: {e}"))
    }

    /// Encodes `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Tokens, String> {
        let e = self
            .inner
            .encode_char_offsets(text, false)
            .map_err(|e| format!("the tokenizer failed: {e}"))?;
        Ok(Tokens {
            ids: e.get_ids().to_vec(),
            offsets: e.get_offsets().to_vec(),
        })
    }
}

/// `spans` (byte ranges of `text`, ordered by start) as character ranges.
pub fn char_spans(text: &str, spans: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut bounds: Vec<usize> = spans.iter().flat_map(|s| [s.start, s.end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut chars_at = Vec::with_capacity(bounds.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    for b in &bounds {
        let b = (*b).min(text.len());
        chars += text.get(byte..b).map_or(0, |s| s.chars().count());
        byte = byte.max(b);
        chars_at.push(chars);
    }
    let at = |b: usize| {
        bounds
            .binary_search(&b)
            .ok()
            .and_then(|i| chars_at.get(i))
            .copied()
            .unwrap_or(0)
    };
    spans.iter().map(|s| at(s.start)..at(s.end)).collect()
}

/// 1 for each token overlapping one of `spans` (character ranges, in order), else 0.
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
    fn byte_spans_become_character_spans() {
        let text = "éa😀b";
        // é = 2 bytes, 😀 = 4 bytes.
        assert_eq!(char_spans(text, &[2..3, 3..8]), vec![1..2, 2..4]);
    }

    #[test]
    fn tokens_overlapping_a_span_are_masked() {
        let offsets = [(0, 2), (2, 4), (4, 6), (6, 6), (6, 9)];
        let one = [3..5, 9..9];
        assert_eq!(mask(&offsets, &one), vec![0, 1, 1, 0, 0]);
        assert_eq!(mask(&offsets, &[0..1, 6..7]), vec![1, 0, 0, 0, 1]);
        assert_eq!(mask(&offsets, &[]), vec![0, 0, 0, 0, 0]);
    }
}

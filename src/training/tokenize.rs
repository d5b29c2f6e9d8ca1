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
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::bpe::{ByteLevelBpe, Cache};

/// A loaded tokenizer.
///
/// A byte-level BPE (the common shape) encodes with trajkit's own [`ByteLevelBpe`], the same
/// ids and offsets as the `tokenizers` library at several times its speed; other tokenizers,
/// and the texts that encoder leaves (see its docs), encode with the library.
///
/// Threads never share a BPE cache: an encode takes an idle one (a new one when none is idle)
/// and gives it back after. (They share the stretches between added tokens that any of them
/// encoded, looked up behind a lock only when a thread's own cache misses.) The library's BPE model caches the words it has merged behind a
/// lock, and two threads on one copy contend for it (a lookup that finds it locked misses and
/// merges again): on 2 threads that cost 40 % more CPU time than on one. So each thread has its
/// own copy of the library's tokenizer too.
pub struct TokenizerFile {
    loaded: tokenizers::Tokenizer,
    idle: Mutex<Vec<tokenizers::Tokenizer>>,
    fast: Option<ByteLevelBpe>,
    caches: Mutex<Vec<Cache>>,
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
    /// Loads `path`, once per process: the exports of a run that name the same file share one
    /// tokenizer, so a large one is read once and its caches serve them all. The error names
    /// the file.
    pub fn load(path: &str) -> Result<Arc<Self>, String> {
        /// The tokenizers loaded and still in use, by canonical path.
        static LOADED: Mutex<Vec<(PathBuf, Weak<TokenizerFile>)>> = Mutex::new(Vec::new());
        let bad = |e: &dyn std::fmt::Display| {
            format!("--tokenizer {path}: not a tokenizer.json that loads: {e}")
        };
        let key = std::fs::canonicalize(path).map_err(|e| bad(&e))?;
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.retain(|(_, t)| t.strong_count() > 0);
        if let Some(t) = loaded
            .iter()
            .find(|(p, _)| *p == key)
            .and_then(|(_, t)| t.upgrade())
        {
            return Ok(t);
        }
        let text = std::fs::read_to_string(&key).map_err(|e| bad(&e))?;
        let t = Arc::new(Self::from_json(&text).map_err(|e| bad(&e))?);
        loaded.push((key, Arc::downgrade(&t)));
        Ok(t)
    }

    /// The tokenizer of a `tokenizer.json`'s text.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let loaded = tokenizers::Tokenizer::from_str(text).map_err(|e| e.to_string())?;
        let fast = serde_json::from_str(text)
            .ok()
            .and_then(|json| ByteLevelBpe::new(&json, |t| loaded.token_to_id(t)));
        Ok(TokenizerFile {
            loaded,
            idle: Mutex::new(Vec::new()),
            fast,
            caches: Mutex::new(Vec::new()),
        })
    }

    /// Encodes `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Tokens, String> {
        let mut tokens = Tokens::default();
        if self.with_own(|own, cache| own.encode(text, cache, &mut tokens)) == Some(true) {
            return Ok(tokens);
        }
        self.encode_with_library(text)
    }

    /// The number of tokens [`TokenizerFile::encode`] gives `text`.
    pub fn count(&self, text: &str) -> Result<usize, String> {
        match self.with_own(|own, cache| own.count(text, cache)).flatten() {
            Some(n) => Ok(n),
            None => Ok(self.encode_with_library(text)?.ids.len()),
        }
    }

    /// `f` of the own encoder and an idle cache of it; `None` without the own encoder.
    fn with_own<T>(&self, f: impl FnOnce(&ByteLevelBpe, &mut Cache) -> T) -> Option<T> {
        let own = self.fast.as_ref()?;
        let caches = || self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        let mut cache = caches().pop().unwrap_or_else(|| own.cache());
        let out = f(own, &mut cache);
        caches().push(cache);
        Some(out)
    }

    /// Encodes `text` without special tokens with the `tokenizers` library.
    pub fn encode_with_library(&self, text: &str) -> Result<Tokens, String> {
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

    /// Whether trajkit's own encoder takes this tokenizer (the library takes the others).
    pub fn is_own(&self) -> bool {
        self.fast.is_some()
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
    fn a_file_is_loaded_once_while_in_use() {
        let path = "tests/fixtures/templates/words.tokenizer.json";
        let a = TokenizerFile::load(path).expect("loads");
        let b = TokenizerFile::load("tests/fixtures/../fixtures/templates/words.tokenizer.json")
            .expect("loads");
        assert!(Arc::ptr_eq(&a, &b), "the same file, however named");
        let missing = TokenizerFile::load("tests/fixtures/templates/none.json").err();
        assert!(missing
            .is_some_and(|e| e.starts_with("--tokenizer tests/fixtures/templates/none.json:")));
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

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
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use super::bpe::{ByteLevelBpe, Cache, TokenizerJson};
use super::guard;
use super::tokenizer_checks;
pub use super::tokens::Tokens;

/// A loaded tokenizer.
///
/// A byte-level or SentencePiece-style BPE (the common shapes) encodes with trajkit's own
/// [`ByteLevelBpe`], the same ids and offsets as the `tokenizers` library at several times its
/// speed; other tokenizers, and the texts that encoder leaves (see its docs), encode with the
/// library.
///
/// Threads never share a BPE cache: an encode takes an idle one (a new one when none is idle)
/// and gives it back after. (They share the stretches between added tokens that any of them
/// encoded, looked up behind a lock only when a thread's own cache misses.) The library's BPE model caches the words it has merged behind a
/// lock, and two threads on one copy contend for it (a lookup that finds it locked misses and
/// merges again): on 2 threads that cost 40 % more CPU time than on one. So each thread has its
/// own copy of the library's tokenizer too.
pub struct TokenizerFile {
    /// The `tokenizers` library's tokenizer of the file: built when the file loads if the own
    /// encoder does not take it, else the first time a text goes to the library (it costs
    /// as much as the own encoder's loading again).
    library: OnceLock<Result<tokenizers::Tokenizer, String>>,
    /// The file's text, for building the library's tokenizer later.
    text: Box<str>,
    idle: Mutex<Vec<tokenizers::Tokenizer>>,
    fast: Option<ByteLevelBpe>,
    /// Why the own encoder does not take the file, when it does not.
    library_because: Option<String>,
    caches: Mutex<Vec<Cache>>,
}

impl TokenizerFile {
    /// Loads `path`, once per process: the exports of a run that name the same file share one
    /// tokenizer, so a large one is read once and its caches serve them all. The error names
    /// the file.
    pub fn load(path: &str) -> Result<Arc<Self>, String> {
        /// The tokenizers loaded and still in use, by canonical path.
        static LOADED: Mutex<Vec<(PathBuf, Weak<TokenizerFile>)>> = Mutex::new(Vec::new());
        let bad = |e: &dyn std::fmt::Display| format!("--tokenizer {path}: {e}");
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
        let t = Arc::new(Self::from_json_checked(text.into(), true).map_err(|e| bad(&e))?);
        loaded.push((key, Arc::downgrade(&t)));
        Ok(t)
    }

    /// The tokenizer of a `tokenizer.json`'s text, refused when it has a setting that makes
    /// tokenizing unsafe or nondeterministic ([`super::tokenizer_checks`]), the library does
    /// not load it, or (when the library encodes) the library panics on a few plain texts.
    pub fn from_json(text: &str) -> Result<Self, String> {
        Self::from_json_checked(text.into(), true)
    }

    /// [`TokenizerFile::from_json`], with the checks of its settings or without.
    fn from_json_checked(text: Box<str>, check: bool) -> Result<Self, String> {
        let bad = |e: &dyn std::fmt::Display| format!("not a tokenizer.json that loads: {e}");
        let file = TokenizerJson::read(&text).map_err(|e| bad(&e))?;
        if let Some((pointer, why)) = check
            .then(|| tokenizer_checks::check(&file.settings))
            .flatten()
        {
            return Err(format!("refused: {pointer}: {why}"));
        }
        let own = guard::call(|| ByteLevelBpe::new(&file))
            .unwrap_or_else(|panic| Err(format!("reading it panicked: {panic}")));
        let (fast, library_because) = match own {
            Ok(own) => (Some(own), None),
            Err(why) => (None, Some(why)),
        };
        let library = OnceLock::new();
        if fast.is_some() {
            // The parts the own encoder does not read must still load in the library.
            check_loads(file.settings).map_err(|e| bad(&e))?;
        } else {
            let loaded = library_tokenizer(&text).map_err(|e| bad(&e))?;
            for probe in PROBES.iter().filter(|_| check) {
                // An error (a word a vocabulary without an unknown token lacks) is the
                // record's problem when it happens; only a panic refuses the file.
                let _encoded = guard::call(|| loaded.encode(*probe, false)).map_err(|panic| {
                    format!("refused: the tokenizers library {panic} encoding the text {probe:?}")
                })?;
            }
            let _ = library.set(Ok(loaded));
        }
        Ok(TokenizerFile {
            library,
            text,
            idle: Mutex::new(Vec::new()),
            fast,
            library_because,
            caches: Mutex::new(Vec::new()),
        })
    }

    /// Encodes `text` without special tokens. A panic inside (the library's, on a text a
    /// tokenizer file makes it fail on) is an error.
    pub fn encode(&self, text: &str) -> Result<Tokens, String> {
        guard::call(|| {
            let mut tokens = Tokens::default();
            if self.with_own(|own, cache| own.encode(text, cache, &mut tokens)) == Some(true) {
                return Ok(tokens);
            }
            self.encode_with_library(text)
        })
        .map_err(failed)?
    }

    /// The ids of `text`'s tokens without special tokens ([`TokenizerFile::encode`]) and
    /// their [`mask`] of `spans`. The own encoder's offsets go to a buffer its thread's cache
    /// keeps (not to fresh memory for each text), and the ids are copied out at their size.
    pub fn encode_masked(
        &self,
        text: &str,
        spans: &[Range<usize>],
    ) -> Result<(Vec<u32>, Vec<u8>), String> {
        guard::call(|| {
            let own = self.with_own(|own, cache| {
                own.encode_with(text, cache, |t| (t.ids.clone(), mask(&t.offsets, spans)))
            });
            if let Some(Some(out)) = own {
                return Ok(out);
            }
            let tokens = self.encode_with_library(text)?;
            let trained = mask(&tokens.offsets, spans);
            Ok((tokens.ids, trained))
        })
        .map_err(failed)?
    }

    /// The number of tokens [`TokenizerFile::encode`] gives `text`.
    pub fn count(&self, text: &str) -> Result<usize, String> {
        guard::call(
            || match self.with_own(|own, cache| own.count(text, cache)).flatten() {
                Some(n) => Ok(n),
                None => Ok(self.encode_with_library(text)?.ids.len()),
            },
        )
        .map_err(failed)?
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

    /// Encodes `text` without special tokens with the `tokenizers` library (unguarded: a
    /// panic in it unwinds, and the copy it panicked in is dropped, not used again).
    pub fn encode_with_library(&self, text: &str) -> Result<Tokens, String> {
        let idle = || self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let copy = match idle().pop() {
            Some(copy) => copy,
            None => self
                .library
                .get_or_init(|| library_tokenizer(&self.text))
                .clone()
                .map_err(|e| format!("the tokenizers library does not load the file: {e}"))?,
        };
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

    /// Which encoder tokenizes with this file, and why, in a sentence for the user.
    pub fn encoder(&self) -> String {
        match &self.library_because {
            None => "encoded by trajkit's own BPE encoder (the tokenizers library's ids and \
                     offsets)"
                .to_owned(),
            Some(why) => format!(
                "encoded by the tokenizers library, several times slower than trajkit's own \
                 BPE encoder, which does not take it: {why}"
            ),
        }
    }
}

/// The `tokenizers` library's tokenizer of a file's text (a panic in it is an error).
fn library_tokenizer(text: &str) -> Result<tokenizers::Tokenizer, String> {
    guard::call(|| tokenizers::Tokenizer::from_str(text))
        .map_err(|panic| format!("the tokenizers library {panic}"))?
        .map_err(|e| e.to_string())
}

/// Whether the library loads a file of `settings` (a file without its model's vocabulary and
/// merges, which the own encoder has read): the error it gives if not.
fn check_loads(mut settings: serde_json::Value) -> Result<(), String> {
    if let Some(model) = settings.get_mut("model").and_then(|m| m.as_object_mut()) {
        model.insert("vocab".into(), serde_json::json!({}));
        model.insert("merges".into(), serde_json::json!([]));
    }
    library_tokenizer(&settings.to_string()).map(|_| ())
}

/// Plain texts every tokenizer file is tried on when it loads (by the library).
const PROBES: &[&str] = &[
    "Hello, world!",
    " two  spaces and\ttabs\r\nlines ",
    "é中文😀 ʻokina <|im_start|>",
];

/// The reason a record's tokenizing failed, of a `panic` caught.
fn failed(panic: String) -> String {
    format!("the tokenizer failed: the tokenizers library {panic}")
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

    /// The words tokenizer of the fixtures with `part` set to `value`.
    fn words_with(part: &str, value: serde_json::Value) -> String {
        let path = "tests/fixtures/templates/words.tokenizer.json";
        let text = std::fs::read_to_string(path).expect("fixture");
        let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
        json[part] = value;
        json.to_string()
    }

    /// A normalizer: `Replace` of `pattern` by "x", then BERT's (the pair of issue
    /// huggingface/tokenizers#736, which panics where the pattern matches empty).
    fn replace_then_bert(pattern: serde_json::Value) -> String {
        words_with(
            "normalizer",
            serde_json::json!({"type": "Sequence", "normalizers": [
                {"type": "Replace", "pattern": pattern, "content": "x"},
                {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                 "strip_accents": null, "lowercase": true}]}),
        )
    }

    #[test]
    fn files_that_make_the_library_panic_are_refused_at_load() {
        let text = replace_then_bert(serde_json::json!({"String": ""}));
        // The library loads it, then panics on the first text.
        let library = tokenizers::Tokenizer::from_str(&text).expect("the library loads it");
        let panicked = guard::call(|| library.encode("hello", false)).expect_err("panics");
        assert!(panicked.contains("index out of bounds"), "{panicked}");
        let e = TokenizerFile::from_json(&text).err().expect("refused");
        assert!(
            e.contains("/normalizer/normalizers/0/pattern") && e.contains("empty"),
            "{e}"
        );
    }

    #[test]
    fn a_panic_the_checks_do_not_foresee_fails_the_text_not_the_process() {
        // Loaded without the checks, as a file whose panic they do not foresee would be.
        let text = replace_then_bert(serde_json::json!({"String": ""}));
        let file = TokenizerFile::from_json_checked(text.into(), false).expect("loads");
        let e = file.encode("hello").expect_err("fails");
        assert!(
            e.starts_with("the tokenizer failed: the tokenizers library panicked at ")
                && e.contains("index out of bounds"),
            "{e}"
        );
        assert!(file.count("hello").is_err());
        // The same text, again: the tokenizer is still usable, and fails the same way.
        assert_eq!(file.encode("hello"), Err(e));
    }

    #[test]
    fn dropout_is_refused() {
        let model = serde_json::json!({"type": "BPE", "dropout": 0.5, "unk_token": "[UNK]",
            "vocab": {"[UNK]": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]});
        let e = TokenizerFile::from_json(&words_with("model", model.clone()))
            .err()
            .expect("refused");
        assert!(e.contains("/model/dropout") && e.contains("0.5"), "{e}");
        let mut none = model;
        none["dropout"] = serde_json::Value::Null;
        assert!(TokenizerFile::from_json(&words_with("model", none)).is_ok());
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

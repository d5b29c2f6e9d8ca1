//! [`ByteLevelBpe`]: trajkit's own encoder for the common shapes of `tokenizer.json`, giving
//! the same ids and offsets as the `tokenizers` library: a byte-level BPE (GPT-2's
//! pre-tokenizer, or `Split` patterns in a `Sequence` before a byte-level one, as Llama 3,
//! Qwen 2, GPT-OSS and DeepSeek V3 have), or a SentencePiece-style BPE with byte fallback
//! (Llama 2, Mistral, Gemma: `sentencepiece.rs`).
//!
//! The library builds a normalized string with a per-byte alignment map for every text, and
//! an `Encoding` of owned token strings; that bookkeeping was four fifths of its time.
//! This encoder keeps only what the ids and byte offsets need:
//! - the added tokens are found as the library finds them (leftmost-longest, the
//!   non-normalized ones first, then the normalized ones in the text between);
//! - the text between is split by the pre-tokenizer's patterns (`split.rs`): the ones real
//!   tokenizers ship by hand-written matchers (`pattern.rs`, on the Unicode classes of
//!   `classes.rs`), any other on the regex engine;
//! - each piece's bytes are merged (`merge.rs`), through a per-thread cache of pieces;
//! - a token's offsets are its bytes' range, widened to whole characters (the library aligns
//!   each byte-level character to the whole character it came from), and trimmed of spaces
//!   when the post-processor is a byte-level one with `trim_offsets`.
//!
//! Anything else in a `tokenizer.json` (other models, normalizers, pre-tokenizers, added
//! tokens that strip or match single words, truncation, padding) makes [`ByteLevelBpe::new`]
//! say why it does not take the file, and the library encodes. A text the encoder cannot take
//! (not in NFC under an NFC normalizer, a byte or character without a token, a pattern
//! matching an empty piece) goes to the library too: [`ByteLevelBpe::encode`] returns `false`.

mod classes;
pub mod file;
mod merge;
mod pattern;
mod sentencepiece;
mod split;

use std::borrow::Cow;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};

use aho_corasick::{AhoCorasick, MatchKind};
use foldhash::fast::FixedState;
use hashbrown::HashMap;
use serde_json::Value;

pub use file::TokenizerJson;
use merge::{Merges, Pieces, Whole};
use sentencepiece::{Buffers, Metaspace};
use split::{Caches, Chain, Step};

use super::tokens::Tokens;

/// A byte-level or SentencePiece-style BPE tokenizer, encoded without the `tokenizers`
/// library.
#[derive(Debug)]
pub struct ByteLevelBpe {
    words: Words,
    merges: Merges,
    /// Added tokens matched on the raw text, then those matched after normalizing.
    raw_added: Option<Added>,
    normalized_added: Option<Added>,
    /// The normalizer is NFC (the only one supported besides none).
    nfc: bool,
    /// By token id: the token's length in bytes of the text, and its leading and trailing
    /// spaces (for `trim_offsets`).
    lens: Vec<u32>,
    spaces: Vec<(u8, u8)>,
    /// A byte-level post-processor's `trim_offsets` (and its `add_prefix_space`).
    trim: Option<bool>,
    /// The stretches any thread has encoded: a thread that misses its own cache looks here
    /// before encoding, so each stretch is merged once per process, not once per thread.
    shared: Mutex<Stretches>,
}

/// What cuts a text into words and words into symbols.
#[derive(Debug)]
enum Words {
    /// The pre-tokenizer's patterns, then each byte's symbol id (`NONE` when the vocabulary
    /// lacks it).
    ByteLevel {
        splitter: Chain,
        byte_ids: Box<[u32; 256]>,
    },
    /// SentencePiece-style: characters, spaces as `▁`, byte fallback (`sentencepiece.rs`).
    Metaspace(Metaspace),
}

/// Added tokens of one kind and the automaton finding them.
#[derive(Debug)]
struct Added {
    finder: AhoCorasick,
    ids: Vec<u32>,
}

const NONE: u32 = u32::MAX;

/// A thread's state for encoding with one [`ByteLevelBpe`]: the pieces merged so far, the
/// stretches encoded so far, the pattern's search state, buffers.
///
/// The stretches between raw added tokens encode independently of each other (the library
/// splits at those tokens before anything else), so a stretch is encoded once and looked up
/// after: the system prompt and the tools block that every trajectory of a dataset shares,
/// the template's role headers, repeated tool results. A thread looks in its own cache
/// first (no lock), then in the encoder's shared one.
#[derive(Debug)]
pub struct Cache {
    pieces: Pieces,
    stretches: Stretches,
    split: Vec<Option<Caches>>,
    metaspace: Buffers,
    scratch: Tokens,
    /// The tokens of [`ByteLevelBpe::encode_with`], kept from text to text.
    out: Tokens,
}

/// Encoded stretches by their text, and the bytes they hold (text and tokens).
#[derive(Debug, Default)]
struct Stretches {
    map: HashMap<Arc<str>, Arc<[StretchToken]>, FixedState>,
    bytes: usize,
    /// The shared cache's: hashes of the stretches longer than [`STRETCH_AT_ONCE`] encoded
    /// once and not kept. Such a stretch is kept when it comes again: most of a session's
    /// text comes once, and copying it (with its tokens) into the caches cost more than the
    /// lookups saved.
    seen: hashbrown::HashSet<u64, FixedState>,
}

impl Stretches {
    /// Whether a stretch of `len` bytes and hash `hash`, just encoded, is to be kept: a short
    /// one at once, a longer one when it was seen before (else it is noted as seen).
    fn keeps(&mut self, len: usize, hash: u64) -> bool {
        if len <= STRETCH_AT_ONCE || self.seen.remove(&hash) {
            return true;
        }
        if self.seen.len() >= SEEN_STRETCHES {
            self.seen.clear();
        }
        self.seen.insert(hash);
        false
    }

    /// Keeps `tokens` of `text`, first starting again when the cache is full.
    fn insert(&mut self, text: Arc<str>, tokens: Arc<[StretchToken]>) {
        let bytes = text.len() + std::mem::size_of_val(&*tokens);
        if self.bytes + bytes > STRETCH_BYTES {
            self.map.clear();
            self.bytes = 0;
        }
        self.bytes += bytes;
        self.map.insert(text, tokens);
    }
}

/// A token of a kept stretch: its id, and its offsets from the stretch's start.
type StretchToken = (u32, u32, u32);

/// Stretches longer than this are encoded every time, not kept.
const STRETCH_LEN: usize = 1 << 20;
/// Stretches up to this long are kept the first time they are encoded.
const STRETCH_AT_ONCE: usize = 64;
/// The shared cache notes this many stretches seen once, then starts again.
const SEEN_STRETCHES: usize = 1 << 20;
/// A stretch cache (a thread's, or the shared one) keeps stretches of this many bytes in all
/// (text and tokens), then starts again.
const STRETCH_BYTES: usize = 32 << 20;

impl ByteLevelBpe {
    /// The encoder of the read `tokenizer.json`, or why not: the part of it this encoder
    /// does not reproduce.
    pub fn new(file: &TokenizerJson<'_>) -> Result<Self, String> {
        let json = &file.settings;
        let model = json.get("model").ok_or("no model")?;
        let kind = model.get("type").and_then(Value::as_str);
        if kind.is_some_and(|t| t != "BPE") {
            return Err(format!(
                "the model is {}, not BPE",
                kind.unwrap_or_default()
            ));
        }
        let metaspace = Metaspace::of(json)?;
        let nfc = match metaspace {
            Some(_) => false,
            None => normalizer(json.get("normalizer").unwrap_or(&Value::Null))?,
        };
        for off in ["truncation", "padding"] {
            if !json.get(off).is_none_or(Value::is_null) {
                return Err(format!("{off} is set"));
            }
        }
        let splitter = match metaspace {
            Some(_) => None,
            None => Some(pre_tokenizer(
                json.get("pre_tokenizer").unwrap_or(&Value::Null),
            )?),
        };
        let trim = post_processor(json.get("post_processor").unwrap_or(&Value::Null))
            .ok_or("the post-processor is not a byte-level or template one")?;
        for (key, why) in [
            ("dropout", "BPE dropout"),
            ("continuing_subword_prefix", "a continuing-subword prefix"),
            ("end_of_word_suffix", "an end-of-word suffix"),
        ] {
            if !model.get(key).is_none_or(Value::is_null) {
                return Err(format!("the model has {why}"));
            }
        }
        let unreadable = || "the model's vocabulary or merges do not read".to_owned();
        let bpe = file.bpe.as_ref().ok_or_else(unreadable)?;
        let mut ids: HashMap<&str, u32, FixedState> =
            HashMap::with_capacity_and_hasher(bpe.vocab.len(), FixedState::default());
        let mut size = 0;
        for (token, id) in &bpe.vocab {
            ids.insert(token, *id);
            size = size.max(*id as usize + 1);
        }
        let mut lens = vec![0u32; size];
        let mut spaces = vec![(0u8, 0u8); size];
        for (token, id) in &bpe.vocab {
            lens[*id as usize] = token.chars().count() as u32;
            spaces[*id as usize] = space_counts(token);
        }
        let mut words = match (splitter, metaspace) {
            (Some(splitter), _) => {
                let mut byte_ids = Box::new([NONE; 256]);
                for (b, c) in byte_chars().iter().enumerate() {
                    if let Some(&id) = ids.get(c.encode_utf8(&mut [0; 4]) as &str) {
                        byte_ids[b] = id;
                    }
                }
                Words::ByteLevel { splitter, byte_ids }
            }
            (None, shape) => {
                Words::Metaspace(Metaspace::new(shape.ok_or("no pre-tokenizer")?, &ids, size))
            }
        };
        // The merges as ids, in two halves on two threads (the second half's error only
        // counts when the first has none).
        let (first, second) = bpe.merges.split_at(bpe.merges.len() / 2);
        let sentencepiece = match &words {
            Words::Metaspace(m) => Some(m),
            Words::ByteLevel { .. } => None,
        };
        let (first, second) = std::thread::scope(|s| {
            let second = s.spawn(|| merge_ids(second, &ids, sentencepiece));
            (merge_ids(first, &ids, sentencepiece), second.join())
        });
        let (mut ranked, crosses_first) = first?;
        let (rest, crosses_second) = second.map_err(|_| "reading the merges panicked")??;
        ranked.extend(rest);
        let crosses_words = crosses_first || crosses_second;
        if let Words::Metaspace(m) = &mut words {
            if !crosses_words {
                m.cut_before_words();
            }
            for &(left, right, _) in &ranked {
                m.merged(left, right);
            }
        }
        let whole = match model.get("ignore_merges").and_then(Value::as_bool) {
            Some(true) if matches!(words, Words::Metaspace(_)) => {
                return Err("a SentencePiece-style model ignores merges".into())
            }
            Some(true) => Some(whole_tokens(&ids)),
            _ => None,
        };
        if matches!(words, Words::Metaspace(_)) && trim.is_some() {
            return Err("a SentencePiece-style model with byte-level offsets trimmed".into());
        }
        let added = file
            .added_ids(&ids)
            .ok_or("the added tokens' ids run out")?;
        let (raw_added, normalized_added) = added_tokens(
            json.get("added_tokens"),
            &|t: &str| added.get(t).copied(),
            nfc,
            &mut lens,
            &mut spaces,
        )?;
        if let (Words::Metaspace(_), Some(normalizer)) = (&words, json.get("normalizer")) {
            if !normalizer.is_null() && normalized_added.is_some() {
                return Err("added tokens matched after a SentencePiece-style normalizer".into());
            }
        }
        Ok(ByteLevelBpe {
            words,
            merges: Merges::new(ranked, whole),
            raw_added,
            normalized_added,
            nfc,
            lens,
            spaces,
            trim,
            shared: Mutex::default(),
        })
    }

    /// A new thread's state.
    pub fn cache(&self) -> Cache {
        Cache {
            pieces: Pieces::default(),
            split: match &self.words {
                Words::ByteLevel { splitter, .. } => splitter.caches(),
                Words::Metaspace(_) => Vec::new(),
            },
            metaspace: Buffers::default(),
            stretches: Stretches::default(),
            scratch: Tokens::default(),
            out: Tokens::default(),
        }
    }

    /// The number of tokens [`ByteLevelBpe::encode`] gives `text`, or `None` when the text
    /// must go to the library.
    pub fn count(&self, text: &str, cache: &mut Cache) -> Option<usize> {
        let mut n = 0;
        let mut ok = true;
        let mut scratch = std::mem::take(&mut cache.scratch);
        find_added(
            self.raw_added.as_ref(),
            text,
            0,
            text.len(),
            &mut |found| match found {
                _ if !ok => {}
                Found::Token(..) => n += 1,
                Found::Text(a, b) => {
                    if let Some(known) = cache.stretches.map.get(&text[a..b]) {
                        n += known.len();
                        return;
                    }
                    scratch.ids.clear();
                    scratch.offsets.clear();
                    ok = self.encode_stretch(text, a, b, cache, &mut scratch);
                    n += scratch.ids.len();
                }
            },
        );
        cache.scratch = scratch;
        ok.then_some(n)
    }

    /// Encodes `text` into `out` (emptied first); `false` when the text must go to the
    /// `tokenizers` library instead (`out` is then left in any state).
    pub fn encode(&self, text: &str, cache: &mut Cache, out: &mut Tokens) -> bool {
        out.ids.clear();
        out.offsets.clear();
        let mut ok = true;
        find_added(self.raw_added.as_ref(), text, 0, text.len(), &mut |found| {
            ok = ok
                && match found {
                    Found::Token(id, a, b) => push_added(id, a, b, out),
                    Found::Text(a, b) => self.encode_stretch(text, a, b, cache, out),
                }
        });
        if ok && self.trim.is_some() {
            self.trim_offsets(out);
        }
        ok
    }

    /// `f` of the tokens of `text` ([`ByteLevelBpe::encode`]) in a buffer `cache` keeps;
    /// `None` when the text must go to the library.
    pub fn encode_with<T>(
        &self,
        text: &str,
        cache: &mut Cache,
        f: impl FnOnce(&Tokens) -> T,
    ) -> Option<T> {
        let mut out = std::mem::take(&mut cache.out);
        let done = self.encode(text, cache, &mut out).then(|| f(&out));
        cache.out = out;
        done
    }

    /// Encodes `text[start..end]`, a stretch between raw added tokens, from the thread's
    /// cache or the shared one, or encoded (and kept in both: see [`Stretches::keeps`]).
    fn encode_stretch(
        &self,
        text: &str,
        start: usize,
        end: usize,
        cache: &mut Cache,
        out: &mut Tokens,
    ) -> bool {
        let stretch = &text[start..end];
        let push = |known: &[StretchToken], out: &mut Tokens| {
            for &(id, a, b) in known {
                out.ids.push(id);
                out.offsets.push((start + a as usize, start + b as usize));
            }
        };
        if let Some(known) = cache.stretches.map.get(stretch) {
            push(known, out);
            return true;
        }
        let shared = || self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let found = shared()
            .map
            .get_key_value(stretch)
            .map(|(k, v)| (k.clone(), v.clone()));
        if let Some((key, known)) = found {
            push(&known, out);
            cache.stretches.insert(key, known);
            return true;
        }
        let from = out.ids.len();
        if !self.encode_normalized(text, start, end, cache, out) {
            return false;
        }
        let hash = || FixedState::default().hash_one(stretch);
        if stretch.len() <= STRETCH_LEN && shared().keeps(stretch.len(), hash()) {
            let relative = |o: usize| o.saturating_sub(start) as u32;
            let tokens: Arc<[_]> = (out.ids[from..].iter().zip(&out.offsets[from..]))
                .map(|(&id, &(a, b))| (id, relative(a), relative(b)))
                .collect();
            let key: Arc<str> = stretch.into();
            shared().insert(key.clone(), tokens.clone());
            cache.stretches.insert(key, tokens);
        }
        true
    }

    /// Encodes `text[start..end]`, a stretch between raw added tokens, which the library
    /// normalizes and splits at the normalized added tokens.
    fn encode_normalized(
        &self,
        text: &str,
        start: usize,
        end: usize,
        cache: &mut Cache,
        out: &mut Tokens,
    ) -> bool {
        let part = &text[start..end];
        if self.nfc && !part.is_ascii() && !unicode_normalization_alignments::is_nfc(part) {
            return false;
        }
        let mut ok = true;
        find_added(
            self.normalized_added.as_ref(),
            text,
            start,
            end,
            &mut |found| {
                ok = ok
                    && match found {
                        Found::Token(id, a, b) => push_added(id, a, b, out),
                        Found::Text(a, b) => self.encode_text(text, a, b, cache, out),
                    }
            },
        );
        ok
    }

    /// Encodes `text[start..end]`, a stretch without added tokens.
    fn encode_text(
        &self,
        text: &str,
        start: usize,
        end: usize,
        cache: &mut Cache,
        out: &mut Tokens,
    ) -> bool {
        let part = &text[start..end];
        let mut ok = true;
        let Cache {
            pieces,
            split,
            metaspace,
            ..
        } = cache;
        let (splitter, byte_ids) = match &self.words {
            Words::ByteLevel { splitter, byte_ids } => (splitter, byte_ids),
            Words::Metaspace(m) => {
                let Tokens { ids, offsets } = out;
                return m.encode(
                    text,
                    start,
                    end,
                    &self.merges,
                    &self.lens,
                    metaspace,
                    pieces,
                    ids,
                    offsets,
                );
            }
        };
        let split = splitter.split(part, split, |a, b| {
            if !ok {
                return;
            }
            let piece = &part.as_bytes()[a..b];
            let from = out.ids.len();
            let symbols_of = |symbols: &mut Vec<u32>| {
                symbols.extend(piece.iter().map(|&b| byte_ids[b as usize]));
                !symbols.contains(&NONE)
            };
            if !self
                .merges
                .tokenize(piece, symbols_of, pieces, &mut out.ids)
            {
                ok = false;
                return;
            }
            let mut at = start + a;
            for &id in &out.ids[from..] {
                let len = self.lens.get(id as usize).copied().unwrap_or(0) as usize;
                let (mut s, mut e) = (at, at + len);
                while !text.is_char_boundary(s) {
                    s -= 1;
                }
                while !text.is_char_boundary(e) {
                    e += 1;
                }
                out.offsets.push((s, e));
                at += len;
            }
        });
        ok && split
    }

    /// The byte-level post-processor's `trim_offsets`: a token's leading and trailing spaces
    /// leave its offsets (the first token's single leading space stays with
    /// `add_prefix_space`).
    fn trim_offsets(&self, out: &mut Tokens) {
        let add_prefix_space = self.trim == Some(true);
        for (i, (id, o)) in out.ids.iter().zip(out.offsets.iter_mut()).enumerate() {
            let (mut lead, trail) = self.spaces.get(*id as usize).copied().unwrap_or_default();
            if lead > 0 {
                if (i == 0 || o.0 == 0) && add_prefix_space && lead == 1 {
                    lead = 0;
                }
                o.0 = (o.0 + lead as usize).min(o.1);
            }
            if trail > 0 && o.1 >= trail as usize {
                o.1 = (o.1 - trail as usize).max(o.0);
            }
        }
    }
}

/// A merge as ids: left, right, merged.
type Merge = (u32, u32, u32);

/// `merges` as ids `(left, right, merged)`, and whether a merged token holds a character
/// before a `▁` (with a SentencePiece-style `metaspace`); or why they are not reproduced.
fn merge_ids(
    merges: &[(Cow<'_, str>, Cow<'_, str>)],
    ids: &HashMap<&str, u32, FixedState>,
    metaspace: Option<&Metaspace>,
) -> Result<(Vec<Merge>, bool), String> {
    let mut ranked = Vec::with_capacity(merges.len());
    let mut joined = String::new();
    let mut crosses_words = false;
    for (l, r) in merges {
        let id = |t: &str| {
            ids.get(t).copied().ok_or_else(|| {
                format!("the merge of {l:?} and {r:?} names a token the vocabulary lacks")
            })
        };
        joined.clear();
        joined.push_str(l);
        joined.push_str(r);
        let merge = (id(l)?, id(r)?, id(&joined)?);
        if let Some(m) = metaspace {
            if m.is_byte(merge.0) || m.is_byte(merge.1) {
                return Err(format!("the merge of {l:?} and {r:?} merges byte tokens"));
            }
            crosses_words = crosses_words || m.crosses_words(&joined);
        }
        ranked.push(merge);
    }
    Ok((ranked, crosses_words))
}

/// Appends an added token; `true`.
fn push_added(id: u32, start: usize, end: usize, out: &mut Tokens) -> bool {
    out.ids.push(id);
    out.offsets.push((start, end));
    true
}

/// What [`find_added`] finds: an added token's id and range, or text between.
enum Found {
    Token(u32, usize, usize),
    Text(usize, usize),
}

/// Splits `text[start..end]` at the tokens of `added`, leftmost-longest.
fn find_added(
    added: Option<&Added>,
    text: &str,
    start: usize,
    end: usize,
    each: &mut impl FnMut(Found),
) {
    if start == end {
        return;
    }
    let Some(added) = added else {
        return each(Found::Text(start, end));
    };
    let mut at = start;
    for m in added.finder.find_iter(&text[start..end]) {
        let (a, b) = (start + m.start(), start + m.end());
        if a > at {
            each(Found::Text(at, a));
        }
        each(Found::Token(added.ids[m.pattern().as_usize()], a, b));
        at = b;
    }
    if at < end {
        each(Found::Text(at, end));
    }
}

/// Whether the normalizer is NFC (`true`) or none (`false`); a `Sequence` of those is the one
/// it sums to. Any other is refused.
fn normalizer(n: &Value) -> Result<bool, String> {
    match n.get("type").and_then(Value::as_str) {
        _ if n.is_null() => Ok(false),
        Some("NFC") => Ok(true),
        Some("Sequence") => {
            let mut nfc = false;
            for each in n
                .get("normalizers")
                .and_then(Value::as_array)
                .ok_or("the normalizer does not read")?
            {
                nfc |= normalizer(each)?;
            }
            Ok(nfc)
        }
        kind => Err(format!(
            "the normalizer is {}, not NFC or none",
            kind.unwrap_or("unnamed")
        )),
    }
}

/// The pre-tokenizer's splitters: `Split` pre-tokenizers (isolated, not inverted) in a
/// `Sequence` before a byte-level one, or a byte-level one alone; a byte-level one with its
/// own pattern (GPT-2's) splits last.
fn pre_tokenizer(p: &Value) -> Result<Chain, String> {
    let steps = match p.get("type").and_then(Value::as_str) {
        Some("ByteLevel") => std::slice::from_ref(p),
        Some("Sequence") => p
            .get("pretokenizers")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .ok_or("the pre-tokenizer does not read")?,
        kind => {
            return Err(format!(
                "the pre-tokenizer is {}, not byte-level",
                kind.unwrap_or("none")
            ))
        }
    };
    let Some((last, splits)) = steps.split_last() else {
        return Err("the pre-tokenizer is an empty sequence".into());
    };
    let flag = |p: &Value, k: &str| p.get(k).and_then(Value::as_bool);
    if last.get("type").and_then(Value::as_str) != Some("ByteLevel") {
        return Err("the pre-tokenizer does not end with a byte-level one".into());
    }
    if flag(last, "add_prefix_space") != Some(false) {
        return Err("the byte-level pre-tokenizer adds a prefix space".into());
    }
    let mut chain = Vec::with_capacity(steps.len());
    for s in splits {
        let kind = s.get("type").and_then(Value::as_str).unwrap_or("unnamed");
        if kind != "Split" {
            return Err(format!(
                "the pre-tokenizer has a {kind} step before the byte-level one"
            ));
        }
        let behavior = s.get("behavior").and_then(Value::as_str).unwrap_or("none");
        if behavior != "Isolated" || flag(s, "invert") != Some(false) {
            return Err(format!(
                "a Split pre-tokenizer is {behavior}{}, not isolated",
                if flag(s, "invert") == Some(true) {
                    " and inverted"
                } else {
                    ""
                }
            ));
        }
        let pattern = s.get("pattern");
        let regex = match (
            pattern.and_then(|p| p.get("Regex")).and_then(Value::as_str),
            pattern
                .and_then(|p| p.get("String"))
                .and_then(Value::as_str),
        ) {
            (Some(r), None) => split::portable(r)?.to_owned(),
            (None, Some(s)) => regex::escape(s),
            _ => return Err("a Split pre-tokenizer's pattern does not read".into()),
        };
        chain.push(Step::new(&regex).ok_or_else(|| {
            "a Split pattern has look-around or back-references, or matches the empty text"
                .to_owned()
        })?);
    }
    if flag(last, "use_regex").unwrap_or(true) {
        chain.push(Step::new(pattern::BYTE_LEVEL).ok_or("GPT-2's pattern does not compile")?);
    }
    Ok(Chain::new(chain))
}

/// `Some(trim)` for the post-processors this encoder reproduces (with
/// `add_special_tokens = false`, only a byte-level one's `trim_offsets` changes anything):
/// `trim` is `None`, or `Some(add_prefix_space)` when offsets are trimmed.
fn post_processor(p: &Value) -> Option<Option<bool>> {
    if p.is_null() {
        return Some(None);
    }
    match p.get("type")?.as_str()? {
        "TemplateProcessing" => Some(None),
        "ByteLevel" => Some(p.get("trim_offsets")?.as_bool()?.then(|| {
            p.get("add_prefix_space")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        })),
        "Sequence" => {
            let mut trim = None;
            for q in p.get("processors")?.as_array()? {
                match (trim, post_processor(q)?) {
                    (_, None) => {}
                    (None, t) => trim = t,
                    (Some(_), Some(_)) => return None, // trimmed twice: left to the library
                }
            }
            Some(trim)
        }
        _ => None,
    }
}

/// The added tokens, split by whether they match before or after normalizing; refused when
/// one strips spaces or must be a single word.
fn added_tokens(
    list: Option<&Value>,
    added_id: &impl Fn(&str) -> Option<u32>,
    nfc: bool,
    lens: &mut Vec<u32>,
    spaces: &mut Vec<(u8, u8)>,
) -> Result<(Option<Added>, Option<Added>), String> {
    let (mut raw, mut normalized) = (Vec::new(), Vec::new());
    for t in list
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let flag = |k: &str| t.get(k).and_then(Value::as_bool).unwrap_or(false);
        let content = t
            .get("content")
            .and_then(Value::as_str)
            .ok_or("an added token does not read")?;
        for (key, what) in [
            ("single_word", "must be a single word"),
            ("lstrip", "strips the spaces before it"),
            ("rstrip", "strips the spaces after it"),
        ] {
            if flag(key) {
                return Err(format!("the added token {content:?} {what}"));
            }
        }
        let id = added_id(content)
            .ok_or_else(|| format!("the added token {content:?} has no id in the library"))?;
        if content.is_empty() {
            continue;
        }
        if nfc && flag("normalized") && !unicode_normalization_alignments::is_nfc(content) {
            return Err(format!(
                "the added token {content:?} is matched in its NFC form"
            ));
        }
        if id as usize >= lens.len() {
            lens.resize(id as usize + 1, 0);
            spaces.resize(id as usize + 1, (0, 0));
        }
        spaces[id as usize] = space_counts(content);
        if flag("normalized") {
            &mut normalized
        } else {
            &mut raw
        }
        .push((content, id));
    }
    let build = |tokens: Vec<(&str, u32)>| -> Result<Option<Added>, String> {
        if tokens.is_empty() {
            return Ok(None);
        }
        let finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(tokens.iter().map(|t| t.0))
            .map_err(|e| format!("the added tokens do not make an automaton: {e}"))?;
        Ok(Some(Added {
            finder,
            ids: tokens.iter().map(|t| t.1).collect(),
        }))
    };
    Ok((build(raw)?, build(normalized)?))
}

/// With `ignore_merges`, pieces that are a token of the vocabulary, by their bytes.
fn whole_tokens(ids: &HashMap<&str, u32, FixedState>) -> Whole {
    let mut byte_of = HashMap::<char, u8, FixedState>::with_hasher(FixedState::default());
    for (b, c) in byte_chars().iter().enumerate() {
        byte_of.insert(*c, b as u8);
    }
    let mut whole = Whole::default();
    let mut bytes = Vec::new();
    for (token, &id) in ids {
        bytes.clear();
        let all = token.chars().all(|c| match byte_of.get(&c) {
            Some(&b) => {
                bytes.push(b);
                true
            }
            None => false,
        });
        if all {
            whole.insert(&bytes, id);
        }
    }
    whole
}

/// Leading and trailing spaces of a token as `trim_offsets` counts them: the byte-level
/// space character or white space.
fn space_counts(token: &str) -> (u8, u8) {
    let space = |c: &char| *c == '\u{120}' || c.is_whitespace();
    let lead = token.chars().take_while(space).count();
    let trail = token.chars().rev().take_while(space).count();
    (lead.min(255) as u8, trail.min(255) as u8)
}

/// The byte-level alphabet: the character standing for each byte. Printable Latin-1 bytes
/// stand for themselves; the others, in order, for U+0100 onwards.
fn byte_chars() -> [char; 256] {
    let printable = |b: u32| {
        (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b)
    };
    let mut out = ['\0'; 256];
    let mut next = 0x100;
    for (b, c) in out.iter_mut().enumerate() {
        let b = b as u32;
        *c = if printable(b) {
            char::from_u32(b).unwrap_or_default()
        } else {
            next += 1;
            char::from_u32(next - 1).unwrap_or_default()
        };
    }
    out
}

#[cfg(test)]
mod tests;

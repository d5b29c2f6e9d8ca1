//! SentencePiece-style BPE, as Llama 2, Mistral and Gemma ship it in `tokenizer.json`: spaces
//! become `▁` (a `Metaspace` pre-tokenizer, or `Replace` and `Prepend` normalizers), a `▁` is
//! put before the text (always, on the first stretch only, or never), the text is one word (or
//! one word per `▁` with `split`; cut where no merge can cross), each character is a symbol, and a character the vocabulary
//! lacks becomes its UTF-8 bytes' `<0xXX>` tokens (byte fallback).
//!
//! Offsets are the library's: a `▁` standing for a space covers the space, the one put before
//! the text covers the text's first character, and each byte token covers its whole character.

use foldhash::fast::FixedState;
use std::hash::BuildHasher;

use hashbrown::{HashMap, HashTable};
use serde_json::Value;

use super::merge::{Merges, Pieces};
use super::NONE;

/// When a `▁` is put before a stretch of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prepend {
    /// Never (Gemma).
    Never,
    /// On the stretch at the start of the text, when it does not start with a space
    /// (`Metaspace` with `prepend_scheme: first`).
    First,
    /// On every stretch not starting with a space (`Metaspace` with `always`).
    Always,
    /// On every stretch (a `Prepend` normalizer: Llama 2's files).
    Every,
}

/// The settings of a SentencePiece-style file, read by [`Metaspace::of`].
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    replacement: char,
    prepend: Prepend,
    split: bool,
}

/// What turns a stretch of text into symbols.
#[derive(Debug)]
pub struct Metaspace {
    replacement: char,
    prepend: Prepend,
    /// Each `▁` starts a word (`Metaspace` with `split`).
    split: bool,
    /// A `▁` after another character starts a word: no merge makes a token holding a
    /// character before a `▁`, so no merge crosses there, and the words (short, repeated)
    /// merge as the whole stretch would, from the cache of pieces.
    cut_before_words: bool,
    /// Symbol id of each character the vocabulary has, and of each ASCII one (`NONE` when
    /// absent) without hashing.
    chars: HashMap<char, u32, FixedState>,
    ascii: Box<[u32; 128]>,
    /// By symbol id: whether the symbol is in a merge (set by [`Metaspace::merged`]). A
    /// character whose symbol is in none, or that falls back to bytes (byte tokens are in no
    /// merge: [`super::ByteLevelBpe::new`] refuses those), stays a token of its own and no
    /// merge crosses it, so words are cut before and after it: exact, and shorter words for
    /// the cache (digits, new lines, tabs, most CJK characters in Llama 2's and Mistral's
    /// vocabularies).
    merges: Vec<bool>,
    /// The `<0xXX>` token of each byte (`NONE` when absent).
    bytes: Box<[u32; 256]>,
    /// Whether an id is a byte token.
    byte_token: Vec<bool>,
}

/// A thread's words encoded so far and buffers, for [`Metaspace::encode`].
#[derive(Debug, Default)]
pub struct Buffers {
    /// Words by their text (after [`PREPENDED`] when a `▁` was put before them): their tokens,
    /// each with its byte range from the word's start.
    words: Words,
    key: Vec<u8>,
    /// A word's symbols, its tokens, and per character of it: the byte range it stands for
    /// and its length in bytes after normalizing.
    symbols: Vec<u32>,
    ids: Vec<u32>,
    origin: Vec<(usize, usize, usize)>,
    tokens: Vec<WordToken>,
}

/// A word of a stretch being encoded.
#[derive(Debug, Default)]
struct Word {
    /// Its first character (normalized) and the byte range that stands for it.
    first: (char, usize, usize),
    /// Its byte range in the text, and its number of characters.
    start: usize,
    end: usize,
    chars: usize,
    /// Whether its first character is the `▁` put before the text.
    prepended: bool,
}

/// The words a thread has encoded, in two buffers (their texts, their tokens) and a table of
/// ranges into them: no allocation per word.
#[derive(Debug, Default)]
struct Words {
    texts: Vec<u8>,
    tokens: Vec<WordToken>,
    /// Per word: its text's and its tokens' ranges in the buffers.
    table: HashTable<(u32, u32, u32, u32)>,
    hasher: FixedState,
}

impl Words {
    /// The tokens of the word `text`.
    fn get(&self, text: &[u8], hash: u64) -> Option<&[WordToken]> {
        let &(_, _, a, b) = self.table.find(hash, |&(a, b, _, _)| {
            self.texts.get(a as usize..b as usize) == Some(text)
        })?;
        self.tokens.get(a as usize..b as usize)
    }

    /// Keeps `tokens` of the word `text` (not there yet), first starting again when full.
    fn insert(&mut self, text: &[u8], hash: u64, tokens: &[WordToken]) {
        // At most CACHED_WORDS words of CACHED_WORD bytes (and as many tokens): u32 ranges.
        if self.table.len() >= CACHED_WORDS {
            self.texts.clear();
            self.tokens.clear();
            self.table.clear();
        }
        let Words {
            texts,
            tokens: all,
            table,
            hasher,
        } = self;
        let entry = (
            texts.len() as u32,
            (texts.len() + text.len()) as u32,
            all.len() as u32,
            (all.len() + tokens.len()) as u32,
        );
        texts.extend_from_slice(text);
        all.extend_from_slice(tokens);
        table.insert_unique(hash, entry, |&(a, b, _, _)| {
            hasher.hash_one(&texts[a as usize..b as usize])
        });
    }
}

/// A token of a word: its id, and its byte range from the word's start.
type WordToken = (u32, u32, u32);

/// The first byte of a word's cache key when a `▁` was put before the word (no text's
/// byte: UTF-8 has no 0xFF).
const PREPENDED: u8 = 0xff;
/// Words longer than this (in bytes) are merged every time, not kept.
const CACHED_WORD: usize = 256;
/// A thread keeps this many words, then starts again.
const CACHED_WORDS: usize = 1 << 18;

impl Metaspace {
    /// The shape of a SentencePiece-style file: `Ok(None)` when the file is not one (no byte
    /// fallback and no `Metaspace`), an error naming the part not reproduced.
    pub fn of(json: &Value) -> Result<Option<Shape>, String> {
        let model = json.get("model").unwrap_or(&Value::Null);
        let pre = json.get("pre_tokenizer").unwrap_or(&Value::Null);
        let kind = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_owned);
        let fallback = model.get("byte_fallback").and_then(Value::as_bool) == Some(true);
        if !fallback && kind(pre).as_deref() != Some("Metaspace") {
            return Ok(None);
        }
        let normalizer = json.get("normalizer").unwrap_or(&Value::Null);
        let steps: Vec<&Value> = match kind(normalizer).as_deref() {
            None => Vec::new(),
            Some("Sequence") => normalizer
                .get("normalizers")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
            Some(_) => vec![normalizer],
        };
        let string = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let one_char = |s: &str| {
            let mut c = s.chars();
            c.next().filter(|_| c.next().is_none())
        };
        let space_to = |v: &Value| {
            (kind(v).as_deref() == Some("Replace")
                && v.get("pattern")
                    .and_then(|p| p.get("String"))
                    .and_then(Value::as_str)
                    == Some(" "))
            .then(|| string(v, "content").as_deref().and_then(one_char))
            .flatten()
        };
        let shape = match (steps.as_slice(), kind(pre).as_deref()) {
            ([], Some("Metaspace")) => {
                let replacement = string(pre, "replacement")
                    .as_deref()
                    .and_then(one_char)
                    .ok_or("the Metaspace replacement is not one character")?;
                let prepend = match string(pre, "prepend_scheme").as_deref() {
                    Some("first") => Prepend::First,
                    Some("always") => Prepend::Always,
                    Some("never") => Prepend::Never,
                    Some(other) => return Err(format!("the Metaspace prepend scheme {other}")),
                    None => match pre.get("add_prefix_space").and_then(Value::as_bool) {
                        Some(false) => Prepend::Never,
                        _ => Prepend::Always,
                    },
                };
                let split = pre.get("split").and_then(Value::as_bool).unwrap_or(true);
                Shape {
                    replacement,
                    prepend,
                    split,
                }
            }
            ([prepend, replace], None)
                if kind(prepend).as_deref() == Some("Prepend") && space_to(replace).is_some() =>
            {
                let replacement = space_to(replace).unwrap_or('\u{2581}');
                if string(prepend, "prepend").as_deref().and_then(one_char) != Some(replacement) {
                    return Err("the Prepend normalizer's text is not the replacement".into());
                }
                Shape {
                    replacement,
                    prepend: Prepend::Every,
                    split: false,
                }
            }
            ([replace], None) if space_to(replace).is_some() => Shape {
                replacement: space_to(replace).unwrap_or('\u{2581}'),
                prepend: Prepend::Never,
                split: false,
            },
            _ => {
                return Err(
                    "a SentencePiece-style file whose normalizer and pre-tokenizer are not \
                     Metaspace, or Replace of spaces after an optional Prepend"
                        .into(),
                )
            }
        };
        Ok(Some(shape))
    }

    /// The symbols of the vocabulary `ids` (`byte_token` sized to the largest id) for a shape
    /// from [`Metaspace::of`].
    pub fn new(shape: Shape, ids: &HashMap<&str, u32, FixedState>, size: usize) -> Self {
        let Shape {
            replacement,
            prepend,
            split,
        } = shape;
        let mut chars = HashMap::with_hasher(FixedState::default());
        for (token, &id) in ids {
            let mut c = token.chars();
            if let (Some(one), None) = (c.next(), c.next()) {
                chars.insert(one, id);
            }
        }
        let mut ascii = Box::new([NONE; 128]);
        for (c, slot) in ascii.iter_mut().enumerate() {
            if let Some(&id) = chars.get(&(c as u8 as char)) {
                *slot = id;
            }
        }
        let mut bytes = Box::new([NONE; 256]);
        let mut byte_token = vec![false; size];
        for (b, slot) in bytes.iter_mut().enumerate() {
            if let Some(&id) = ids.get(format!("<0x{b:02X}>").as_str()) {
                *slot = id;
                if let Some(t) = byte_token.get_mut(id as usize) {
                    *t = true;
                }
            }
        }
        Metaspace {
            replacement,
            prepend,
            split,
            chars,
            ascii,
            bytes,
            byte_token,
            cut_before_words: false,
            merges: Vec::new(),
        }
    }

    /// Notes that the symbols `left` and `right` are merged (see [`Metaspace::merges`]).
    pub fn merged(&mut self, left: u32, right: u32) {
        for id in [left, right] {
            let id = id as usize;
            if id >= self.merges.len() {
                self.merges.resize(id + 1, false);
            }
            self.merges[id] = true;
        }
    }

    /// Whether the character `c` stays a token (or byte tokens) of its own: its symbol is in
    /// no merge, or it has none.
    fn alone(&self, c: char) -> bool {
        self.symbol(c)
            .is_none_or(|id| !self.merges.get(id as usize).copied().unwrap_or(false))
    }

    /// Whether the merged token `token` holds a character before a `▁`; when none does, words
    /// are cut there ([`Metaspace::cut_before_words`]).
    pub fn crosses_words(&self, token: &str) -> bool {
        let mut previous = None;
        token.chars().any(|c| {
            let crosses = c == self.replacement && previous.is_some_and(|p| p != c);
            previous = Some(c);
            crosses
        })
    }

    /// Cuts words before each `▁` that follows another character.
    pub fn cut_before_words(&mut self) {
        self.cut_before_words = true;
    }

    /// The symbol of the character `c`, when the vocabulary has it.
    fn symbol(&self, c: char) -> Option<u32> {
        match self.ascii.get(c as usize) {
            Some(&id) => (id != NONE).then_some(id),
            None => self.chars.get(&c).copied(),
        }
    }

    /// Whether `id` is a byte token (merges of byte tokens are not reproduced).
    pub fn is_byte(&self, id: u32) -> bool {
        self.byte_token.get(id as usize).copied().unwrap_or(false)
    }

    /// Encodes `text[start..end]` (a stretch without added tokens): tokens into `ids`, their
    /// byte ranges in `text` into `offsets`. `false` when a character has neither a symbol nor
    /// byte tokens (the library gives the unknown token; trajkit leaves the text to it).
    ///
    /// The stretch is cut into words where no merge crosses (see [`Metaspace::split`],
    /// [`Metaspace::cut_before_words`], [`Metaspace::merges`]); each word merges as it would
    /// inside the whole stretch, and is looked up in (or kept in) the thread's words by its
    /// text, which stands for its normalized text (spaces as `▁`, one `▁` put before the
    /// first word or not).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        text: &str,
        start: usize,
        end: usize,
        merges: &Merges,
        lens: &[u32],
        buffers: &mut Buffers,
        pieces: &mut Pieces,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
    ) -> bool {
        let part = &text[start..end];
        let Some(first) = part.chars().next() else {
            return true;
        };
        let r = self.replacement;
        let prepend = match self.prepend {
            Prepend::Never => false,
            Prepend::First => start == 0 && first != ' ' && first != r,
            Prepend::Always => first != ' ' && first != r,
            Prepend::Every => true,
        };
        // The normalized characters, each with the byte range it stands for: a `▁` put
        // before the text stands for the text's first character.
        let chars = prepend
            .then_some((r, start, start + first.len_utf8()))
            .into_iter()
            .chain(part.char_indices().map(|(i, c)| {
                let at = start + i;
                (if c == ' ' { r } else { c }, at, at + c.len_utf8())
            }));
        let mut word = Word::default();
        let mut last = (r, false);
        for (k, (c, s, e)) in chars.enumerate() {
            let alone = self.alone(c);
            if word.chars > 0 {
                let (p, p_alone) = last;
                let cut = p_alone
                    || alone
                    || (c == r && (self.split || (self.cut_before_words && p != r)));
                if !cut {
                    word.chars += 1;
                    last = (c, alone);
                    continue;
                }
                word.end = s;
                if !self.push_word(&word, text, merges, lens, buffers, pieces, ids, offsets) {
                    return false;
                }
            }
            word = Word {
                first: (c, s, e),
                start: s,
                end,
                chars: 1,
                prepended: prepend && k == 0,
            };
            last = (c, alone);
        }
        word.chars == 0 || self.push_word(&word, text, merges, lens, buffers, pieces, ids, offsets)
    }

    /// Appends the tokens of `word` of `text`: a character's symbol or byte tokens, a longer
    /// word's from the thread's words or merged (and kept there).
    #[allow(clippy::too_many_arguments)]
    fn push_word(
        &self,
        word: &Word,
        text: &str,
        merges: &Merges,
        lens: &[u32],
        buffers: &mut Buffers,
        pieces: &mut Pieces,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
    ) -> bool {
        if word.chars == 1 {
            let (c, s, e) = word.first;
            if let Some(id) = self.symbol(c) {
                ids.push(id);
                offsets.push((s, e));
                return true;
            }
            // Each of a character's byte tokens covers the whole character.
            for b in c.encode_utf8(&mut [0; 4]).bytes() {
                let id = self.bytes[b as usize];
                if id == NONE {
                    return false;
                }
                ids.push(id);
                offsets.push((s, e));
            }
            return true;
        }
        let bytes = &text.as_bytes()[word.start..word.end];
        let key: &[u8] = if word.prepended {
            buffers.key.clear();
            buffers.key.push(PREPENDED);
            buffers.key.extend_from_slice(bytes);
            &buffers.key
        } else {
            bytes
        };
        let push = |tokens: &[WordToken], ids: &mut Vec<u32>, offsets: &mut Vec<(usize, usize)>| {
            for &(id, a, b) in tokens {
                ids.push(id);
                offsets.push((word.start + a as usize, word.start + b as usize));
            }
        };
        let hash = buffers.words.hasher.hash_one(key);
        if let Some(tokens) = buffers.words.get(key, hash) {
            push(tokens, ids, offsets);
            return true;
        }
        if !self.merge_word(word, text, merges, lens, buffers, pieces) {
            return false;
        }
        push(&buffers.tokens, ids, offsets);
        let key = if word.prepended { &buffers.key } else { bytes };
        if key.len() <= CACHED_WORD {
            buffers.words.insert(key, hash, &buffers.tokens);
        }
        true
    }

    /// Merges `word` of `text` (two characters or more) into `buffers.tokens`; `false` when a
    /// character has neither a symbol nor byte tokens.
    fn merge_word(
        &self,
        word: &Word,
        text: &str,
        merges: &Merges,
        lens: &[u32],
        buffers: &mut Buffers,
        pieces: &mut Pieces,
    ) -> bool {
        let Buffers {
            symbols,
            ids,
            origin,
            tokens,
            ..
        } = buffers;
        symbols.clear();
        origin.clear();
        let r = self.replacement;
        let chars = word
            .prepended
            .then_some((r, word.first.1, word.first.2))
            .into_iter()
            .chain(text[word.start..word.end].char_indices().map(|(i, c)| {
                let at = word.start + i;
                (if c == ' ' { r } else { c }, at, at + c.len_utf8())
            }));
        for (c, s, e) in chars {
            origin.push((s - word.start, e - word.start, c.len_utf8()));
            if let Some(id) = self.symbol(c) {
                symbols.push(id);
                continue;
            }
            for b in c.encode_utf8(&mut [0; 4]).bytes() {
                let id = self.bytes[b as usize];
                if id == NONE {
                    return false;
                }
                symbols.push(id);
            }
        }
        ids.clear();
        merges.merge_symbols(symbols, pieces, ids);
        tokens.clear();
        let mut char_at = 0;
        let mut byte_of_char = 0;
        for &id in ids.iter() {
            let Some(&(s, e, width)) = origin.get(char_at) else {
                return false;
            };
            if self.is_byte(id) {
                // Each of a character's byte tokens covers the whole character.
                tokens.push((id, s as u32, e as u32));
                byte_of_char += 1;
                if byte_of_char == width {
                    byte_of_char = 0;
                    char_at += 1;
                }
            } else {
                let len = lens.get(id as usize).copied().unwrap_or(1).max(1) as usize;
                let Some(&(_, e, _)) = origin.get(char_at + len - 1) else {
                    return false;
                };
                tokens.push((id, s as u32, e as u32));
                char_at += len;
            }
        }
        true
    }
}

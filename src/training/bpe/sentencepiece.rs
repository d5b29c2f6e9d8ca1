//! SentencePiece-style BPE, as Llama 2, Mistral and Gemma ship it in `tokenizer.json`: spaces
//! become `▁` (a `Metaspace` pre-tokenizer, or `Replace` and `Prepend` normalizers), a `▁` is
//! put before the text (always, on the first stretch only, or never), the text is one word (or
//! one word per `▁` with `split`), each character is a symbol, and a character the vocabulary
//! lacks becomes its UTF-8 bytes' `<0xXX>` tokens (byte fallback).
//!
//! Offsets are the library's: a `▁` standing for a space covers the space, the one put before
//! the text covers the text's first character, and each byte token covers its whole character.

use foldhash::fast::FixedState;
use hashbrown::HashMap;
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
    /// The `<0xXX>` token of each byte (`NONE` when absent).
    bytes: Box<[u32; 256]>,
    /// Whether an id is a byte token.
    byte_token: Vec<bool>,
}

/// A thread's buffers for [`Metaspace::encode`].
#[derive(Debug, Default)]
pub struct Buffers {
    normalized: String,
    /// Per character of `normalized`: the original byte range it stands for, and its own
    /// length in bytes.
    origin: Vec<(usize, usize, usize)>,
}

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
        }
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
        let Buffers { normalized, origin } = buffers;
        normalized.clear();
        origin.clear();
        let Some(first) = part.chars().next() else {
            return true;
        };
        let prepend = match self.prepend {
            Prepend::Never => false,
            Prepend::First => start == 0 && first != ' ' && first != self.replacement,
            Prepend::Always => first != ' ' && first != self.replacement,
            Prepend::Every => true,
        };
        if prepend {
            normalized.push(self.replacement);
            origin.push((start, start + first.len_utf8(), self.replacement.len_utf8()));
        }
        for (i, c) in part.char_indices() {
            let c2 = if c == ' ' { self.replacement } else { c };
            normalized.push(c2);
            origin.push((start + i, start + i + c.len_utf8(), c2.len_utf8()));
        }
        // Words: the whole stretch, or each `▁` with what follows it.
        let mut char_at = 0;
        let mut word_start = 0;
        let mut chars = normalized.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            let next = chars.peek().copied();
            let cut = next.is_none_or(|(_, n)| {
                n == self.replacement && (self.split || (self.cut_before_words && c != n))
            });
            if !cut {
                continue;
            }
            let word_end = next.map_or(normalized.len(), |(j, _)| j);
            let word = &normalized[word_start..word_end];
            word_start = word_end;
            let from = ids.len();
            let symbols_of = |symbols: &mut Vec<u32>| {
                for c in word.chars() {
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
                true
            };
            if !merges.tokenize(word.as_bytes(), symbols_of, pieces, ids) {
                return false;
            }
            let mut byte_of_char = 0;
            for &id in &ids[from..] {
                let Some(&(s, e, width)) = origin.get(char_at) else {
                    return false;
                };
                if self.is_byte(id) {
                    // Each of a character's byte tokens covers the whole character.
                    offsets.push((s, e));
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
                    offsets.push((s, e));
                    char_at += len;
                }
            }
        }
        true
    }
}

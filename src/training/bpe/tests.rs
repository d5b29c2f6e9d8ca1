//! [`ByteLevelBpe`] against the `tokenizers` library: the same ids and offsets on texts meant
//! to find the edges (white space runs, contractions, digits, accents, combining marks, wide
//! and four-byte characters, added tokens), for each supported shape of `tokenizer.json`.

use serde_json::{json, Value};

use super::pattern::BYTE_LEVEL;
use super::split::Splitter;
use super::{byte_chars, ByteLevelBpe, TokenizerJson};
use crate::training::tokenize::{TokenizerFile, Tokens};

/// A `Split` pattern in the style of recent byte-level models, written for these tests.
const SPLIT: &str = r"(?i:'(?:[sdmt]|ll|ve|re))|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}{1,2}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Texts to train on and to encode.
fn texts() -> Vec<String> {
    let mut out: Vec<String> = [
        "Hello world! It's a test: don't we'll they've I'm you'd HE'S.",
        "  leading spaces\tand\ttabs\n\nnew  lines   \n  \r\n trailing   ",
        "numbers 12345 3.14159 1,000,000 and x2 y_3",
        "<|im_start|>user\nList files<|im_end|>\n<|im_start|>assistant\nls -la<|im_end|>",
        "café naïve résumé e\u{301}te\u{301} — “quotes” … «guillemets»",
        "日本語のテキスト、中文文本。 한국어 텍스트",
        "emoji 🎉🚀 and flags 🇫🇷 mixed👍🏽text",
        "\u{a0}nbsp\u{a0}\u{a0}x\u{3000}ideographic\u{2028}sep",
        "def f(x):\n    return {'a': [1, 2]}  # comment\n\n\n",
        "<|begin|><|header|>system<|end_header|>\n\nYou are helpful.<|eot|>",
        "ending with spaces    ",
        "   ",
        "",
        "a",
        "'s's ''ll",
        "x.foo /usr/bin/env -rf --all @user #tag 1234567 ４５６ ١٢٣٤",
        "中文混合English和123数字。カタカナとひらがな！",
        "CamelCaseWord HTTPServer iPhone ÉCOLE Ǆemal",
        "line\r\n\r\n  \n\t\n",
        "x<|im_end|>y <|im_start|> z<|eot|>\n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Pseudo-random strings over the same kinds of characters.
    let alphabet: Vec<char> = "ab Z9 0\t\n\r'sé\u{301}日🎉\u{a0}\u{3000}<|>._-"
        .chars()
        .collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for len in 1..200 {
        let s = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect();
        out.push(s);
    }
    out
}

/// A byte-level BPE vocabulary and merges learned from `texts`: the most frequent adjacent
/// pair of each round is merged (the smallest on ties), `n` rounds.
fn train(texts: &[String], n: usize) -> (Value, Value) {
    let chars = byte_chars();
    let splitter = Splitter::new(BYTE_LEVEL).expect("compiles"); // ok: test code on built-in strings
    let mut words: Vec<Vec<String>> = Vec::new();
    for t in texts {
        splitter.split(t, &mut splitter.caches(), |a, b| {
            words.push(
                t.as_bytes()[a..b]
                    .iter()
                    .map(|&b| chars[b as usize].to_string())
                    .collect(),
            )
        });
    }
    let mut vocab: Vec<String> = chars.iter().map(char::to_string).collect();
    let mut merges = Vec::new();
    for _ in 0..n {
        let mut counts = std::collections::BTreeMap::new();
        for w in &words {
            for p in w.windows(2) {
                *counts.entry((p[0].clone(), p[1].clone())).or_insert(0) += 1;
            }
        }
        let Some(best) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
            break;
        };
        let (l, r) = best.0.clone();
        let merged = format!("{l}{r}");
        for w in &mut words {
            let mut i = 0;
            while i + 1 < w.len() {
                if w[i] == l && w[i + 1] == r {
                    w[i] = merged.clone();
                    w.remove(i + 1);
                }
                i += 1;
            }
        }
        merges.push(json!([l, r]));
        vocab.push(merged);
    }
    let vocab: serde_json::Map<String, Value> = vocab
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, json!(i)))
        .collect();
    (Value::Object(vocab), Value::Array(merges))
}

/// Added tokens, numbered after the vocabulary's `n` tokens.
fn added(n: usize, normalized: bool) -> Value {
    let names = [
        "<|im_start|>",
        "<|im_end|>",
        "<|begin|>",
        "<|header|>",
        "<|end_header|>",
        "<|eot|>",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": n + i, "content": c, "single_word": false, "lstrip": false, "rstrip": false,
                   "normalized": normalized && i % 2 == 0, "special": true})
        })
        .collect()
}

fn tokenizer(
    pre: Value,
    normalizer: Value,
    post: Value,
    normalized: bool,
    ignore_merges: bool,
) -> String {
    static TRAINED: std::sync::OnceLock<(Value, Value)> = std::sync::OnceLock::new();
    let (vocab, merges) = TRAINED.get_or_init(|| train(&texts(), 300)).clone();
    json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": added(vocab.as_object().map_or(0, |v| v.len()), normalized), "normalizer": normalizer, "pre_tokenizer": pre,
        "post_processor": post, "decoder": null,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": ignore_merges,
                  "vocab": vocab, "merges": merges}
    })
    .to_string()
}

fn gpt2() -> Value {
    json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})
}

fn split_then_bytes(pattern: &str) -> Value {
    splits_then_bytes(&[pattern], false)
}

/// `Split` pre-tokenizers of `patterns`, then a byte-level one (with GPT-2's pattern when
/// `regex`).
fn splits_then_bytes(patterns: &[&str], regex: bool) -> Value {
    let mut steps: Vec<Value> = patterns
        .iter()
        .map(|p| json!({"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated", "invert": false}))
        .collect();
    steps.push(json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": regex}));
    json!({"type": "Sequence", "pretokenizers": steps})
}

/// Llama 3's pattern (numbers by three), Qwen 2's (digits one by one), o200k's (cased
/// letter runs, GPT-OSS), and DeepSeek V3's three steps (numbers by three, CJK runs, then
/// its main pattern): the public patterns of those families' `tokenizer.json` files.
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const O200K: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const DEEPSEEK: [&str; 3] = [
    r"\p{N}{1,3}",
    "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
];

/// Encodes every text both ways; returns how many the own encoder took.
fn same_as_library(json: &str) -> usize {
    same_as_library_on(json, &texts())
}

/// [`same_as_library`] on `texts`.
fn same_as_library_on(json: &str, texts: &[String]) -> usize {
    let t = TokenizerFile::from_json(json).expect("loads"); // ok: test code on built-in strings
    assert!(t.is_own(), "the own encoder takes {json:.200}");
    let parsed = TokenizerJson::read(json).expect("json"); // ok: test code on built-in strings
                                                           // Added tokens' ids are the library's (its encodings below hold them).
    let own = ByteLevelBpe::new(&parsed).expect("own"); // ok: test code

    // The second round is a new thread's: its stretches come from the encoder's shared cache.
    let mut caches = [own.cache(), own.cache()];
    let mut taken = 0;
    for cache in &mut caches {
        for text in texts {
            let text = text.as_str();
            let mut tokens = Tokens::default();
            if own.encode(text, cache, &mut tokens) {
                taken += 1;
                assert_eq!(
                    tokens,
                    t.encode_with_library(text).expect("encodes"), // ok: test code on built-in strings
                    "{text:?}"
                );
                assert_eq!(own.count(text, cache), Some(tokens.ids.len()), "{text:?}");
            }
        }
    }
    taken
}

#[test]
fn gpt2_byte_level() {
    let all = 2 * texts().len();
    assert_eq!(
        same_as_library(&tokenizer(gpt2(), Value::Null, Value::Null, false, false)),
        all
    );
    let trimmed = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true});
    assert_eq!(
        same_as_library(&tokenizer(gpt2(), Value::Null, trimmed, true, false)),
        all
    );
    let prefix = json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true});
    let seq = json!({"type": "Sequence", "processors": [prefix, {"type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}}], "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
        "special_tokens": {}}]});
    assert_eq!(
        same_as_library(&tokenizer(gpt2(), Value::Null, seq, false, true)),
        all
    );
}

#[test]
fn split_pattern_then_byte_level() {
    let all = 2 * texts().len();
    let pre = split_then_bytes(SPLIT);
    assert_eq!(
        same_as_library(&tokenizer(
            pre.clone(),
            Value::Null,
            Value::Null,
            false,
            true
        )),
        all
    );
    // NFC: texts not in NFC go to the library.
    let nfc = json!({"type": "NFC"});
    let taken = same_as_library(&tokenizer(pre, nfc, Value::Null, true, false));
    assert!(taken > all / 2 && taken < all, "{taken} of {all}");
}

#[test]
fn family_patterns_in_sequences() {
    let all = 2 * texts().len();
    let empty = json!({"type": "Sequence", "normalizers": []});
    let nfc = json!({"type": "Sequence", "normalizers": [{"type": "NFC"}]});
    for (patterns, normalizer) in [
        (&[LLAMA3][..], Value::Null),
        (&[QWEN2][..], Value::Null),
        (&[O200K][..], empty.clone()),
        (&DEEPSEEK[..], empty),
    ] {
        let pre = splits_then_bytes(patterns, false);
        for ignore_merges in [false, true] {
            let json = tokenizer(
                pre.clone(),
                normalizer.clone(),
                Value::Null,
                true,
                ignore_merges,
            );
            assert_eq!(same_as_library(&json), all, "{patterns:?}");
        }
    }
    // NFC in a sequence: the texts already in NFC stay with the own encoder.
    let json = tokenizer(
        splits_then_bytes(&[QWEN2], false),
        nfc,
        Value::Null,
        false,
        false,
    );
    let taken = same_as_library(&json);
    assert!(taken > all / 2 && taken < all, "{taken} of {all}");
    // Splits before a byte-level pre-tokenizer with GPT-2's own pattern.
    let pre = splits_then_bytes(&DEEPSEEK[..2], true);
    assert_eq!(
        same_as_library(&tokenizer(pre, Value::Null, Value::Null, false, false)),
        all
    );
}

#[test]
fn unsupported_shapes_go_to_the_library() {
    let json = tokenizer(gpt2(), Value::Null, Value::Null, false, false);
    let mut v: Value = serde_json::from_str(&json).expect("json"); // ok: test code on built-in strings
    let why = |v: &Value| {
        let text = v.to_string();
        let file = TokenizerJson::read(&text).expect("json"); // ok: test code
        ByteLevelBpe::new(&file).err()
    };
    assert_eq!(why(&v), None);
    v["added_tokens"][0]["lstrip"] = json!(true);
    assert_eq!(
        why(&v).as_deref(),
        Some("the added token \"<|im_start|>\" strips the spaces before it")
    );
    v["added_tokens"][0]["lstrip"] = json!(false);
    v["normalizer"] = json!({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]});
    assert_eq!(
        why(&v).as_deref(),
        Some("the normalizer is Lowercase, not NFC or none")
    );
    v["normalizer"] = Value::Null;
    for (pattern, reason) in [
        (r"(?=x)y|\s+", "look-around"),
        (r"\s+$|\S+", "anchor ($)"),
        (r"\d+|\D+", "\\d"),
    ] {
        v["pre_tokenizer"] = split_then_bytes(pattern);
        let e = why(&v).unwrap_or_default();
        assert!(e.contains(reason), "{pattern}: {e}");
    }
    v["pre_tokenizer"] = json!({"type": "Whitespace"});
    assert_eq!(
        why(&v).as_deref(),
        Some("the pre-tokenizer is Whitespace, not byte-level")
    );
    let mut unigram = v.clone();
    unigram["model"] = json!({"type": "Unigram", "vocab": [["a", 0.0]]});
    unigram["pre_tokenizer"] = json!({"type": "Metaspace", "replacement": "▁"});
    assert_eq!(
        why(&unigram).as_deref(),
        Some("the model is Unigram, not BPE")
    );
    v["pre_tokenizer"] = json!({"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": true}, gpt2()]});
    assert_eq!(
        why(&v).as_deref(),
        Some("the pre-tokenizer has a Digits step before the byte-level one")
    );
}

/// By hand, on real `tokenizer.json` files (not in the repository) and real text:
/// `TRAJKIT_REAL_TOKENIZERS="a.json b.json" TRAJKIT_REAL_TEXTS="log.jsonl ..." cargo test --lib
/// real_tokenizers -- --ignored --nocapture` encodes the edge-case texts and each line of the
/// text files with the own encoder and the library, and fails on the first difference.
#[test]
#[ignore]
fn real_tokenizers_match_the_library() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let mut all = texts();
    for path in var("TRAJKIT_REAL_TEXTS").split_whitespace() {
        let text = std::fs::read_to_string(path).expect("reads"); // ok: test code
        all.extend(text.lines().map(str::to_owned));
    }
    for path in var("TRAJKIT_REAL_TOKENIZERS").split_whitespace() {
        let json = std::fs::read_to_string(path).expect("reads"); // ok: test code
        let taken = same_as_library_on(&json, &all);
        println!(
            "{path}: {taken} of {} texts by the own encoder",
            2 * all.len()
        );
    }
}

/// A SentencePiece-style vocabulary and merges from `texts` (spaces as `▁`): the control
/// tokens, the 256 byte tokens, the characters of the ASCII and Latin texts (the others fall
/// back to bytes), then `n` rounds of merging the most frequent pair (the smallest on ties).
/// With `words_only`, no merge crosses from a character to a `▁` (as in real vocabularies, whose
/// trainer splits at spaces); without, merges cross anywhere.
fn train_pieces(texts: &[String], n: usize, words_only: bool) -> (Value, Value) {
    let mut vocab: Vec<String> = ["<unk>", "<s>", "</s>"].map(str::to_owned).to_vec();
    vocab.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
    let mut words: Vec<Vec<String>> = texts
        .iter()
        .map(|t| format!("▁{}", t.replace(' ', "▁")))
        .map(|t| t.chars().map(String::from).collect())
        .collect();
    let mut known: Vec<String> = words
        .iter()
        .flatten()
        .filter(|c| c.chars().all(|c| (c as u32) < 0x300 || c == '▁'))
        .cloned()
        .collect();
    known.sort();
    known.dedup();
    vocab.extend(known.iter().cloned());
    for w in &mut words {
        w.retain(|c| known.contains(c));
    }
    if words_only {
        words = words
            .iter()
            .flat_map(|w| {
                let mut cut = vec![Vec::new()];
                for (i, c) in w.iter().enumerate() {
                    if c == "▁" && i > 0 && w[i - 1] != "▁" {
                        cut.push(Vec::new());
                    }
                    cut.last_mut().expect("one").push(c.clone()); // ok: test code
                }
                cut
            })
            .collect();
    }
    let mut merges = Vec::new();
    for _ in 0..n {
        let mut counts = std::collections::BTreeMap::new();
        for w in &words {
            for p in w.windows(2) {
                *counts.entry((p[0].clone(), p[1].clone())).or_insert(0) += 1;
            }
        }
        let Some(best) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
            break;
        };
        let (l, r) = best.0.clone();
        let merged = format!("{l}{r}");
        for w in &mut words {
            let mut i = 0;
            while i + 1 < w.len() {
                if w[i] == l && w[i + 1] == r {
                    w[i] = merged.clone();
                    w.remove(i + 1);
                }
                i += 1;
            }
        }
        if !vocab.contains(&merged) {
            vocab.push(merged);
        }
        merges.push(json!([l, r]));
    }
    let vocab: serde_json::Map<String, Value> = vocab
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, json!(i)))
        .collect();
    (Value::Object(vocab), Value::Array(merges))
}

/// A SentencePiece-style `tokenizer.json` with `normalizer` and `pre` (its added tokens
/// normalized when `normalized`).
fn pieces_tokenizer(normalizer: Value, pre: Value, normalized: bool, words_only: bool) -> String {
    static TRAINED: std::sync::OnceLock<[(Value, Value); 2]> = std::sync::OnceLock::new();
    let trained = TRAINED
        .get_or_init(|| [false, true].map(|words_only| train_pieces(&texts(), 300, words_only)));
    let (vocab, merges) = trained[usize::from(words_only)].clone();
    let n = vocab.as_object().map_or(0, |v| v.len());
    json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": added(n, normalized), "normalizer": normalizer, "pre_tokenizer": pre,
        "post_processor": null, "decoder": null,
        "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>",
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
                  "vocab": vocab, "merges": merges}
    })
    .to_string()
}

#[test]
fn sentencepiece_bpe_with_byte_fallback() {
    let all = 2 * texts().len();
    let metaspace = |scheme: &str, split: bool| json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split});
    let replace = json!({"type": "Replace", "pattern": {"String": " "}, "content": "▁"});
    let llama2 = json!({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"}, replace.clone()]});
    for (name, normalizer, pre, normalized) in [
        ("Mistral", Value::Null, metaspace("first", false), false),
        (
            "Mistral, normalized added tokens",
            Value::Null,
            metaspace("first", false),
            true,
        ),
        (
            "Metaspace always, split",
            Value::Null,
            metaspace("always", true),
            false,
        ),
        (
            "Metaspace never",
            Value::Null,
            metaspace("never", false),
            false,
        ),
        ("Llama 2", llama2, Value::Null, false),
        ("Gemma", replace, Value::Null, false),
    ] {
        for words_only in [false, true] {
            let json = pieces_tokenizer(normalizer.clone(), pre.clone(), normalized, words_only);
            // Words are cut before `▁` (no merge crosses there) with `words_only` alone.
            let crossing = serde_json::from_str::<Value>(&json).expect("json")["model"]["merges"] // ok: test code
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| Some(format!("{}{}", m[0].as_str()?, m[1].as_str()?)))
                .filter(|t| t.trim_start_matches('▁').contains('▁'))
                .count();
            assert_eq!(crossing == 0, words_only, "{name}");
            assert_eq!(same_as_library(&json), all, "{name}, {words_only}");
        }
    }
}

//! A `tokenizer.json` read for trajkit's own encoder: the BPE model's vocabulary and merges
//! as borrowed strings, everything else (the few small settings) as JSON values.
//!
//! A real file is mostly its vocabulary and merges (a 128 k vocabulary is 6 MB of JSON):
//! read into a `serde_json::Value` they cost an allocation per string and an ordered map of
//! 128 k entries; read here they are slices of the file's text (unless a string has escapes),
//! the vocabulary and the merges on two threads.

use std::borrow::Cow;
use std::fmt;

use foldhash::fast::FixedState;
use hashbrown::HashMap;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A `tokenizer.json`, read.
#[derive(Debug)]
pub struct TokenizerJson<'a> {
    /// The file without the model's `vocab` and `merges`.
    pub settings: Value,
    /// The model's vocabulary, in the file's order, and its merges; `None` when the model is
    /// not BPE or they do not read as a BPE model's.
    pub bpe: Option<Bpe<'a>>,
}

/// A BPE model's vocabulary and merges.
#[derive(Debug, Default)]
pub struct Bpe<'a> {
    /// Tokens and their ids (a token listed twice is listed twice here).
    pub vocab: Vec<(Cow<'a, str>, u32)>,
    /// The merged pairs, in rank order.
    pub merges: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> TokenizerJson<'a> {
    /// Reads `text`; the error is serde_json's, as reading it into a `Value` gives it.
    pub fn read(text: &'a str) -> Result<Self, serde_json::Error> {
        let top: Vec<(String, &'a RawValue)> = serde_json::from_str::<Entries<'a>>(text)?.0;
        let mut settings = Map::new();
        let mut model_raw = None;
        for (key, raw) in top {
            if key == "model" {
                model_raw = Some(raw);
                settings.insert(key, Value::Null);
            } else {
                settings.insert(key, serde_json::from_str(raw.get())?);
            }
        }
        let Some(raw) = model_raw else {
            return Ok(TokenizerJson {
                settings: Value::Object(settings),
                bpe: None,
            });
        };
        let Ok(Entries(entries)) = serde_json::from_str::<Entries<'a>>(raw.get()) else {
            // Not an object: the model as it is (the encoder says it does not read).
            settings.insert("model".into(), serde_json::from_str(raw.get())?);
            return Ok(TokenizerJson {
                settings: Value::Object(settings),
                bpe: None,
            });
        };
        let mut model = Map::new();
        let (mut vocab, mut merges) = (None, None);
        for (key, raw) in entries {
            match key.as_str() {
                "vocab" => vocab = Some(raw),
                "merges" => merges = Some(raw),
                _ => {
                    model.insert(key, serde_json::from_str(raw.get())?);
                }
            }
        }
        let bpe_type = model.get("type").is_none_or(|t| t.as_str() == Some("BPE"));
        let bpe = match (vocab, merges) {
            (Some(v), Some(m)) if bpe_type => {
                let (vocab, merges) = std::thread::scope(|s| {
                    let merges = s.spawn(|| serde_json::from_str::<Merges<'a>>(m.get()));
                    let vocab = serde_json::from_str::<Vocab<'a>>(v.get());
                    (vocab, merges.join())
                });
                match (vocab, merges) {
                    (Ok(Vocab(vocab)), Ok(Ok(Merges(merges)))) => Some(Bpe { vocab, merges }),
                    _ => None,
                }
            }
            _ => {
                // Kept as JSON: a model other than BPE reads them its own way.
                for (key, raw) in [("vocab", vocab), ("merges", merges)] {
                    if let Some(raw) = raw {
                        model.insert(key.into(), serde_json::from_str(raw.get())?);
                    }
                }
                None
            }
        };
        settings.insert("model".into(), Value::Object(model));
        Ok(TokenizerJson {
            settings: Value::Object(settings),
            bpe,
        })
    }
}

impl TokenizerJson<'_> {
    /// The id of each added token (by its text) as the `tokenizers` library assigns them when
    /// it loads the file: the id in the model's `vocab` (token to id) of a token it has, else
    /// the next id after the vocabulary (the file's `id` is not read); `None` when the ids
    /// run out.
    pub fn added_ids(
        &self,
        vocab: &HashMap<&str, u32, FixedState>,
    ) -> Option<HashMap<String, u32, FixedState>> {
        let mut next = u32::try_from(vocab.len()).ok()?;
        let mut out = HashMap::with_hasher(FixedState::default());
        let list = self.settings.get("added_tokens").and_then(Value::as_array);
        for content in list
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("content")?.as_str())
        {
            if content.is_empty() {
                continue;
            }
            let id = match out.get(content).or_else(|| vocab.get(content)) {
                Some(&id) => id,
                None => {
                    next += 1;
                    next - 1
                }
            };
            out.insert(content.to_owned(), id);
        }
        Some(out)
    }
}

/// An object's entries, its values unread.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A string, borrowed from the text when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// A BPE vocabulary: an object of tokens to ids.
struct Vocab<'a>(Vec<(Cow<'a, str>, u32)>);

impl<'de: 'a, 'a> Deserialize<'de> for Vocab<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Vocab<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of tokens to ids")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((Str(k), id)) = map.next_entry::<Str<'de>, u32>()? {
                    out.push((k, id));
                }
                Ok(Vocab(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// BPE merges: each a string `"left right"` or a pair `["left", "right"]`.
struct Merges<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Merges<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Merges<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of merges")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(Merge(l, r)) = seq.next_element::<Merge<'de>>()? {
                    out.push((l, r));
                }
                Ok(Merges(out))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// One merge.
struct Merge<'a>(Cow<'a, str>, Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Merge<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        /// `"left right"`: exactly one space.
        fn halves(s: &str) -> Option<(&str, &str)> {
            let (l, r) = s.split_once(' ')?;
            (!r.contains(' ')).then_some((l, r))
        }
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Merge<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a merge")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                let (l, r) = halves(s).ok_or_else(|| E::custom("a merge is not two tokens"))?;
                Ok(Merge(Cow::Borrowed(l), Cow::Borrowed(r)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                let (l, r) = halves(s).ok_or_else(|| E::custom("a merge is not two tokens"))?;
                Ok(Merge(Cow::Owned(l.to_owned()), Cow::Owned(r.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let l = seq.next_element::<Str<'de>>()?;
                let r = seq.next_element::<Str<'de>>()?;
                match (l, r, seq.next_element::<de::IgnoredAny>()?) {
                    (Some(Str(l)), Some(Str(r)), None) => Ok(Merge(l, r)),
                    _ => Err(de::Error::custom("a merge is not two tokens")),
                }
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_and_merges_are_read_apart_from_the_settings() {
        let text = r#"{"version": "1.0", "normalizer": null,
            "model": {"type": "BPE", "dropout": null, "vocab": {"a": 0, "b\"": 1, "ab\"": 2},
                      "merges": ["a b\"", ["ab\"", "a"]]}}"#;
        let read = TokenizerJson::read(text).expect("reads");
        let bpe = read.bpe.expect("a BPE model");
        assert_eq!(bpe.vocab.len(), 3);
        assert!(matches!(bpe.vocab[0].0, Cow::Borrowed("a")));
        assert_eq!((&*bpe.vocab[1].0, bpe.vocab[1].1), ("b\"", 1));
        assert_eq!((&*bpe.merges[0].0, &*bpe.merges[0].1), ("a", "b\""));
        assert_eq!((&*bpe.merges[1].0, &*bpe.merges[1].1), ("ab\"", "a"));
        assert_eq!(
            read.settings,
            serde_json::json!({"version": "1.0", "normalizer": null,
                "model": {"type": "BPE", "dropout": null}})
        );
    }

    #[test]
    fn other_models_and_odd_merges_keep_their_json() {
        let unigram = r#"{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}"#;
        let read = TokenizerJson::read(unigram).expect("reads");
        assert!(read.bpe.is_none());
        assert_eq!(read.settings["model"]["vocab"][0][0], "a");
        let three = r#"{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b c"]}}"#;
        assert!(TokenizerJson::read(three).expect("reads").bpe.is_none());
        assert!(TokenizerJson::read("[1]").is_err());
    }
}

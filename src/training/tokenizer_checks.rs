//! What makes a `tokenizer.json` unsafe or nondeterministic to export with, found when it is
//! loaded ([`check`]), so that such a file is refused up front (a usage error naming the file
//! and the setting) rather than failing on records later:
//!
//! - a BPE model with `dropout` above 0: merges are skipped at random, so two runs write
//!   different tokens (dropout is a training-time regularizer, not a way to tokenize data);
//! - a `Replace` normalizer or a `Split` pre-tokenizer whose pattern can match the empty text
//!   (an empty string, or a regex such as `^` or `(?=x)`): the `tokenizers` library panics on
//!   the texts where it matches empty (an index out of bounds in its normalized string);
//! - a `FixedLength` pre-tokenizer of length 0 (the library panics on any text).
//!
//! A file that passes is still encoded under [`super::guard`]: a panic the checks do not
//! foresee rejects the record it happened on.

use regex_automata::util::syntax;
use serde_json::Value;
use tokenizers::utils::SysRegex;

/// Texts a regex pattern is tried on when it cannot be analysed (look-around): an empty match
/// on any of them refuses it.
const PROBES: &[&str] = &[
    "a",
    "Hello, world! 123",
    " leading and  double  spaces ",
    "line\nbreaks\r\n\ttabs",
    "é中文😀 ʻokina",
    "'s 've (x) [y] {z} <t> \"q\"",
];

/// The first unsafe or nondeterministic setting of the parsed `tokenizer.json`, as a JSON
/// pointer and what is wrong with it.
pub fn check(json: &Value) -> Option<(String, String)> {
    if let Some(found) = model(json.get("model")?) {
        return Some(found);
    }
    let mut found = None;
    if let Some(n) = json.get("normalizer") {
        walk(n, "/normalizer", "normalizers", &mut found);
    }
    if found.is_none() {
        if let Some(p) = json.get("pre_tokenizer") {
            walk(p, "/pre_tokenizer", "pretokenizers", &mut found);
        }
    }
    found
}

/// A BPE model's dropout.
fn model(model: &Value) -> Option<(String, String)> {
    let dropout = model.get("dropout")?.as_f64()?;
    (dropout > 0.0).then(|| {
        (
            "/model/dropout".to_owned(),
            format!(
                "BPE dropout {dropout} skips merges at random, so the same text tokenizes \
                 differently from run to run; set it to null for exporting"
            ),
        )
    })
}

/// Checks a normalizer or pre-tokenizer at `pointer`, and the members of a `Sequence` (under
/// `list`).
fn walk(part: &Value, pointer: &str, list: &str, found: &mut Option<(String, String)>) {
    if found.is_some() {
        return;
    }
    match part.get("type").and_then(Value::as_str) {
        Some("Sequence") => {
            for (i, member) in part
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                walk(member, &format!("{pointer}/{list}/{i}"), list, found);
            }
        }
        Some(kind @ ("Replace" | "Split")) => {
            if let Some(why) = part.get("pattern").and_then(empty_match) {
                *found = Some((
                    format!("{pointer}/pattern"),
                    format!(
                        "a {kind} whose pattern {why}: the tokenizers library panics on the \
                         texts where it matches nothing"
                    ),
                ));
            }
        }
        Some("FixedLength") if part.get("length").and_then(Value::as_u64) == Some(0) => {
            *found = Some((
                format!("{pointer}/length"),
                "a FixedLength of length 0: the tokenizers library panics on any text".into(),
            ));
        }
        _ => {}
    }
}

/// Why a `{"String": ...}` or `{"Regex": ...}` pattern can match the empty text, if it can.
fn empty_match(pattern: &Value) -> Option<String> {
    if let Some(s) = pattern.get("String").and_then(Value::as_str) {
        return s.is_empty().then(|| "is the empty string".to_owned());
    }
    let regex = pattern.get("Regex").and_then(Value::as_str)?;
    let can = match syntax::parse(regex) {
        Ok(hir) => hir.properties().minimum_len() == Some(0),
        // Look-around or back-references: tried on a few texts with the library's engine (a
        // pattern that does not compile fails the load anyway).
        Err(_) => SysRegex::new(regex).is_ok_and(|r| {
            PROBES
                .iter()
                .any(|text| r.find_iter(text).any(|(a, b)| a == b))
        }),
    };
    can.then(|| format!("{regex:?} can match the empty text"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(json: Value) -> Option<String> {
        check(&json).map(|(pointer, _)| pointer)
    }

    #[test]
    fn the_settings_that_panic_or_vary_are_found() {
        let model = json!({"type": "BPE", "dropout": null, "vocab": {}, "merges": []});
        let with = |key: &str, part: Value| {
            let mut t = json!({"model": model, "normalizer": null, "pre_tokenizer": null});
            t[key] = part;
            t
        };
        assert_eq!(found(with("normalizer", Value::Null)), None);
        let mut dropout = model.clone();
        dropout["dropout"] = json!(0.1);
        assert_eq!(
            found(json!({"model": dropout})).as_deref(),
            Some("/model/dropout")
        );
        let replace = |p: Value| json!({"type": "Replace", "pattern": p, "content": "x"});
        assert_eq!(
            found(with("normalizer", replace(json!({"String": ""})))).as_deref(),
            Some("/normalizer/pattern")
        );
        assert_eq!(
            found(with("normalizer", replace(json!({"String": " "})))),
            None
        );
        for empty in [r"^", r"a*", r"\b", r"^(?=\p{Latin})", r"(?<=a)"] {
            let seq = json!({"type": "Sequence", "normalizers": [
                {"type": "NFC"}, replace(json!({"Regex": empty}))]});
            assert_eq!(
                found(with("normalizer", seq)).as_deref(),
                Some("/normalizer/normalizers/1/pattern"),
                "{empty}"
            );
        }
        assert_eq!(
            found(with("normalizer", replace(json!({"Regex": r"\s+"})))),
            None
        );
        let split = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": ""}, "behavior": "Isolated", "invert": false}]});
        assert_eq!(
            found(with("pre_tokenizer", split)).as_deref(),
            Some("/pre_tokenizer/pretokenizers/0/pattern")
        );
        assert_eq!(
            found(with(
                "pre_tokenizer",
                json!({"type": "FixedLength", "length": 0})
            ))
            .as_deref(),
            Some("/pre_tokenizer/length")
        );
        // GPT-2's and Llama 3's patterns never match the empty text.
        for pattern in [
            r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ] {
            let split = json!({"type": "Split", "pattern": {"Regex": pattern},
                "behavior": "Isolated", "invert": false});
            assert_eq!(found(with("pre_tokenizer", split)), None, "{pattern}");
        }
    }
}

//! Corpus tests over `../shared/corpus/adp/`: every `sample_std.json` validates, converts to ADP
//! 1.5.0 without losing content, and converts identically whatever the thread count.
//! Skipped on a laptop without the corpus; they fail when `CI` is set and the corpus is missing.

use std::path::Path;

use crate::common::{adp_corpus, corpus_std_files, json_lines, trajkit};
use serde_json::{Map, Value};

fn convert_bytes(inputs: &[&Path], extra: &[&str]) -> Vec<u8> {
    let out = trajkit()
        .args(["convert", "-q", "--from", "adp"])
        .args(extra)
        .args(inputs)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn every_corpus_sample_std_validates_with_no_diagnostic() {
    let Some(dir) = adp_corpus() else { return };
    let files = corpus_std_files(&dir);
    assert_eq!(files.len(), 17, "the corpus has 17 datasets");
    for f in files {
        let expected = serde_json::from_slice::<Vec<Value>>(&std::fs::read(&f).expect("read"))
            .expect("corpus file is a JSON array")
            .len();
        let out = trajkit()
            .args(["validate", "--report", "json"])
            .arg(&f)
            .output()
            .expect("runs");
        let diags = json_lines(&out.stdout);
        assert!(diags.is_empty(), "{}: {diags:?}", f.display());
        assert_eq!(out.status.code(), Some(0), "{}", f.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{expected} records, {expected} valid, 0 invalid")),
            "{}: {stderr}",
            f.display()
        );
    }
}

/// Checks that `converted` (ADP 1.5.0) holds everything in `original` (unversioned). Allowed
/// differences are exactly the documented upgrade: `schema_version`, link ids on adjacent
/// tool-action/observation pairs, `source: user` becoming `environment` on such linked results,
/// `available_code_languages` equal to the languages used, and absent nullable keys written as
/// `null` (or an absent `details` as `{}`).
fn assert_lossless(original: &Value, converted: &Value, context: &str) {
    assert_eq!(converted["schema_version"], "1.5.0", "{context}");
    assert_eq!(converted["id"], original["id"], "{context}");
    let empty = Value::Object(Map::new());
    let details = original.get("details").unwrap_or(&empty);
    assert_eq!(&converted["details"], details, "{context}: details");
    let o_steps = original["content"].as_array().expect("content");
    let c_steps = converted["content"].as_array().expect("content");
    assert_eq!(o_steps.len(), c_steps.len(), "{context}: step count");
    let mut languages: Vec<&str> = Vec::new();
    for (k, (o, c)) in o_steps.iter().zip(c_steps).enumerate() {
        let ctx = format!("{context} step {k}");
        let (o, c) = (o.as_object().expect("step"), c.as_object().expect("step"));
        let linked = c.contains_key("tool_call_id");
        for (key, value) in o {
            let got = &c[key];
            if key == "source" && linked && value == "user" {
                assert_eq!(got, "environment", "{ctx}");
            } else {
                assert_eq!(got, value, "{ctx}: {key}");
            }
        }
        for (key, value) in c {
            if !o.contains_key(key) {
                assert!(
                    key == "tool_call_id" || value.is_null(),
                    "{ctx}: unexpected new key {key}"
                );
            }
        }
        if linked {
            let is_action = o["class_"].as_str().is_some_and(|s| s.ends_with("_action"));
            let partner = if is_action {
                &c_steps[k + 1]
            } else {
                &c_steps[k - 1]
            };
            assert_eq!(
                partner["tool_call_id"], c["tool_call_id"],
                "{ctx}: link pair"
            );
        }
        if o["class_"] == "code_action" {
            languages.push(o["language"].as_str().expect("language"));
        }
    }
    languages.sort_unstable();
    languages.dedup();
    if languages.is_empty() {
        assert!(
            converted.get("available_code_languages").is_none(),
            "{context}"
        );
    } else {
        assert_eq!(
            converted["available_code_languages"],
            serde_json::json!(languages),
            "{context}"
        );
    }
}

#[test]
fn corpus_converts_to_1_5_without_loss_and_validates() {
    let Some(dir) = adp_corpus() else { return };
    for f in corpus_std_files(&dir) {
        let original: Vec<Value> =
            serde_json::from_slice(&std::fs::read(&f).expect("read")).expect("array");
        let bytes = convert_bytes(&[&f], &[]);
        let converted = json_lines(&bytes);
        assert_eq!(original.len(), converted.len(), "{}", f.display());
        for (i, (o, c)) in original.iter().zip(&converted).enumerate() {
            assert_lossless(o, c, &format!("{} record {i}", f.display()));
        }
        trajkit()
            .args(["validate", "-q", "-"])
            .write_stdin(bytes.clone())
            .assert()
            .code(0);
        let again = trajkit()
            .args(["convert", "-q", "--from", "adp", "-"])
            .write_stdin(bytes.clone())
            .output()
            .expect("runs");
        assert_eq!(
            again.stdout,
            bytes,
            "{}: converting 1.5.0 again changes nothing",
            f.display()
        );
    }
}

#[test]
fn corpus_output_is_identical_for_one_and_two_threads() {
    let Some(dir) = adp_corpus() else { return };
    let files = corpus_std_files(&dir);
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let one = convert_bytes(&refs, &["--threads", "1"]);
    let two = convert_bytes(&refs, &["--threads", "2"]);
    assert!(!one.is_empty());
    assert_eq!(one, two);
}

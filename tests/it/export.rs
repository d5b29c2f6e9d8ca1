//! `trajkit export`: the SFT targets' shapes and rules on the corpus and fixtures, rejects,
//! filters, dedup, splits, shards, the manifest and determinism.
//! Expected values come from `tests/fixtures/export/small.jsonl` and the documented rules.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::common::{adp_corpus, converted_samples, corpus_std_files, json_lines, trajkit};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export/small.jsonl")
}

/// Runs `trajkit export INPUTS --to TO -o DIR EXTRA...`; returns the exit code and stderr.
fn export(inputs: &[&Path], to: &str, dir: &Path, extra: &[&str]) -> (i32, String) {
    let out = trajkit()
        .arg("export")
        .args(inputs)
        .args(["--to", to, "-o"])
        .arg(dir)
        .args(extra)
        .output()
        .expect("runs");
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
        .expect("manifest is JSON")
}

/// Every row of the export in `dir`, in manifest order (zstd files decompressed).
fn rows(dir: &Path) -> Vec<Value> {
    let m = manifest(dir);
    let mut out = Vec::new();
    for f in m["files"].as_array().expect("files") {
        let bytes = std::fs::read(dir.join(f["path"].as_str().expect("path"))).expect("read");
        let bytes = if f["path"].as_str().is_some_and(|p| p.ends_with(".zst")) {
            zstd::decode_all(&bytes[..]).expect("zstd")
        } else {
            bytes
        };
        out.extend(json_lines(&bytes));
    }
    out
}

fn counts(dir: &Path) -> (u64, u64, u64, u64) {
    let c = &manifest(dir)["counts"];
    let n = |k: &str| c[k].as_u64().expect("count");
    (n("in"), n("written"), n("filtered"), n("rejected"))
}

/// The rules of OpenAI chat fine-tuning records with tools, checked in Rust.
fn check_openai(r: &Value, ctx: &str) {
    let msgs = r["messages"].as_array().expect("messages");
    assert!(r["tools"].is_array(), "{ctx}");
    assert!(r["parallel_tool_calls"].is_boolean(), "{ctx}");
    let last_assistant = msgs
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .expect("an assistant message");
    let mut waiting: Vec<String> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().expect("role");
        assert!(
            ["system", "user", "assistant", "tool"].contains(&role),
            "{ctx}: role {role}"
        );
        assert!(role != "system" || i == 0, "{ctx}: system first");
        if role != "tool" {
            assert!(
                waiting.is_empty(),
                "{ctx}: calls {waiting:?} unanswered at message {i}"
            );
        }
        match role {
            "assistant" => {
                let calls = m["tool_calls"].as_array();
                let text = m["content"].as_str().unwrap_or("");
                assert!(
                    !text.trim().is_empty() || calls.is_some_and(|c| !c.is_empty()),
                    "{ctx}: empty assistant message {i}"
                );
                for c in calls.into_iter().flatten() {
                    assert_eq!(c["type"], "function", "{ctx}");
                    assert!(c["function"]["name"].is_string(), "{ctx}");
                    let args = c["function"]["arguments"]
                        .as_str()
                        .expect("arguments string");
                    let parsed: Value = serde_json::from_str(args).expect("arguments are JSON");
                    assert!(parsed.is_object(), "{ctx}");
                    let id = c["id"].as_str().expect("call id").to_owned();
                    assert!(!answered.contains(&id), "{ctx}: id {id} reused");
                    if i != last_assistant {
                        waiting.push(id);
                    }
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().expect("tool_call_id");
                let k = waiting
                    .iter()
                    .position(|w| w == id)
                    .unwrap_or_else(|| panic!("{ctx}: tool message {i} answers {id}, not waiting"));
                waiting.remove(k);
                assert!(answered.insert(id.to_owned()), "{ctx}: {id} answered twice");
                assert!(m["content"].is_string(), "{ctx}");
            }
            _ => assert!(
                m["content"].as_str().is_some_and(|s| !s.trim().is_empty()),
                "{ctx}: empty {role} message {i}"
            ),
        }
    }
    assert!(waiting.is_empty(), "{ctx}");
    assert_eq!(
        msgs.last().map(|m| &m["role"]),
        Some(&json!("assistant")),
        "{ctx}"
    );
}

/// LLaMA-Factory's rule: human/observation at odd positions, gpt/function_call at even ones,
/// an even count; function_call values hold JSON after an optional <think> block.
fn check_sharegpt(r: &Value, ctx: &str) {
    let conv = r["conversations"].as_array().expect("conversations");
    assert!(
        !conv.is_empty() && conv.len().is_multiple_of(2),
        "{ctx}: count {}",
        conv.len()
    );
    for (i, m) in conv.iter().enumerate() {
        let from = m["from"].as_str().expect("from");
        let allowed: &[&str] = if i % 2 == 0 {
            &["human", "observation"]
        } else {
            &["gpt", "function_call"]
        };
        assert!(allowed.contains(&from), "{ctx}: {from} at {i}");
        let value = m["value"].as_str().expect("value");
        if from == "function_call" {
            let json_part = value.rsplit_once("</think>\n\n").map_or(value, |(_, j)| j);
            let calls: Value = serde_json::from_str(json_part).expect("function_call JSON");
            for c in calls
                .as_array()
                .cloned()
                .unwrap_or_else(|| vec![calls.clone()])
            {
                assert!(c["name"].is_string() && c["arguments"].is_object(), "{ctx}");
            }
        }
    }
    assert!(r["system"].is_string(), "{ctx}");
    let tools = r["tools"].as_str().expect("tools string");
    assert!(tools.is_empty() || serde_json::from_str::<Value>(tools).is_ok_and(|t| t.is_array()));
}

fn check_hf(r: &Value, ctx: &str) {
    assert!(r["id"].is_string(), "{ctx}");
    for m in r["messages"].as_array().expect("messages") {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            assert!(c["function"]["arguments"].is_object(), "{ctx}: {c}");
        }
        assert!(m["content"].is_string(), "{ctx}");
    }
}

fn check(target: &str, r: &Value, ctx: &str) {
    match target {
        "openai" => check_openai(r, ctx),
        "hf" => check_hf(r, ctx),
        _ => check_sharegpt(r, ctx),
    }
}

fn rejects(path: &Path) -> Vec<(String, String)> {
    json_lines(&std::fs::read(path).unwrap_or_default())
        .iter()
        .map(|l| {
            (
                l["record_id"].as_str().unwrap_or_default().to_owned(),
                l["diagnostics"][0]["rule"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_corpus_dataset_and_the_samples_export_to_each_sft_target() {
    let Some(corpus) = adp_corpus() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let samples = converted_samples(tmp.path());
    let mut inputs = corpus_std_files(&corpus);
    assert_eq!(inputs.len(), 17);
    inputs.push(samples);
    for input in &inputs {
        let name = match input.file_name().and_then(|n| n.to_str()) {
            Some("sample_std.json") => input.parent().and_then(|p| p.file_name()),
            _ => input.file_stem(),
        }
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
        for target in ["openai", "hf", "sharegpt"] {
            let dir = tmp.path().join(format!("{name}-{target}"));
            let rej = tmp.path().join(format!("{name}-{target}-rejects.jsonl"));
            let (code, stderr) = export(
                &[input],
                target,
                &dir,
                &["-q", "--rejects", rej.to_str().expect("utf-8")],
            );
            let (n_in, written, filtered, rejected) = counts(&dir);
            assert_eq!(n_in, written + filtered + rejected, "{name} {target}");
            assert_eq!(code, i32::from(rejected > 0), "{name} {target}: {stderr}");
            let rows = rows(&dir);
            assert_eq!(rows.len() as u64, written);
            for (i, r) in rows.iter().enumerate() {
                check(target, r, &format!("{name} {target} row {i}"));
            }
            let reasons = rejects(&rej);
            assert_eq!(reasons.len() as u64, rejected, "{name} {target}");
            // Android in the Wild (and one Ralph sample) start with the agent's own message:
            // ShareGPT cannot hold that; the other targets can, and reject nothing here.
            if target == "sharegpt" {
                assert!(
                    reasons
                        .iter()
                        .all(|(_, r)| r == "sharegpt-starts-with-assistant"),
                    "{name}: {reasons:?}"
                );
            } else {
                assert_eq!(rejected, 0, "{name} {target}: {reasons:?}");
            }
            if !(target == "sharegpt" && name == "android_in_the_wild") {
                assert!(
                    written > 0,
                    "{name} {target}: nothing written ({reasons:?})"
                );
            }
        }
    }
}

#[test]
fn openai_rows_have_the_documented_shape() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("out");
    let (code, stderr) = export(&[&fixture()], "openai", &dir, &["-q"]);
    assert_eq!(code, 1, "{stderr}");
    let rows = rows(&dir);
    assert_eq!(rows.len(), 5);
    assert_eq!(
        rows[0],
        json!({
            "messages": [
                {"role": "user", "content": "Find the answer."},
                {"role": "assistant", "content": "<think>\nStart with the files.\n</think>\n\nLook around.",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                {"role": "tool", "content": "notes.txt", "tool_call_id": "c1"},
                {"role": "assistant", "content": null,
                 "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"answer\",\"n\":3}"}}]},
                {"role": "tool", "content": "42", "tool_call_id": "c2"},
                {"role": "assistant", "content": "42"}
            ],
            "tools": [
                {"type": "function", "function": {"name": "bash", "description": "Run bash/shell/sh code and return its output.",
                 "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "The code to run."}}, "required": ["command"]}}},
                {"type": "function", "function": {"name": "search",
                 "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q", "n"]}}}
            ],
            "parallel_tool_calls": false
        })
    );
    assert_eq!(rows[1]["parallel_tool_calls"], true);
    for (i, r) in rows.iter().enumerate() {
        check_openai(r, &format!("row {i}"));
    }
}

#[test]
fn hf_and_sharegpt_rows_have_the_documented_shape() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let hf = tmp.path().join("hf");
    export(&[&fixture()], "hf", &hf, &["-q"]);
    let r = &rows(&hf)[0];
    assert_eq!(r["id"], "ok-1");
    assert_eq!(
        r["messages"][1],
        json!({"role": "assistant", "content": "Look around.", "reasoning_content": "Start with the files.",
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}]})
    );
    assert_eq!(
        r["messages"][2],
        json!({"role": "tool", "content": "notes.txt", "tool_call_id": "c1", "name": "bash"})
    );
    let sg = tmp.path().join("sg");
    export(&[&fixture()], "sharegpt", &sg, &["-q"]);
    let rows = rows(&sg);
    assert_eq!(
        rows[1],
        json!({"id": "parallel", "conversations": [
            {"from": "human", "value": "Do two things."},
            {"from": "function_call", "value": "[{\"name\":\"a\",\"arguments\":{\"x\":1}},{\"name\":\"b\",\"arguments\":{\"y\":\"s\"}}]"},
            {"from": "observation", "value": "ra\n\nrb"},
            {"from": "gpt", "value": "done"}
        ], "system": "",
        "tools": "[{\"name\":\"a\",\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"]}},{\"name\":\"b\",\"parameters\":{\"type\":\"object\",\"properties\":{\"y\":{\"type\":\"string\"}},\"required\":[\"y\"]}}]"})
    );
    for (i, r) in rows.iter().enumerate() {
        check_sharegpt(r, &format!("row {i}"));
    }
}

#[test]
fn untrainable_records_are_filtered_or_rejected_with_a_reason() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for target in ["openai", "hf", "sharegpt"] {
        let dir = tmp.path().join(target);
        let rej = tmp.path().join(format!("{target}.rejects.jsonl"));
        let (code, _) = export(
            &[&fixture()],
            target,
            &dir,
            &["-q", "--rejects", rej.to_str().expect("utf-8")],
        );
        assert_eq!(code, 1);
        // No assistant turn: nothing to learn, filtered; the malformed ones are rejected.
        assert_eq!(counts(&dir), (8, 5, 1, 2), "{target}");
        assert_eq!(
            manifest(&dir)["counts"]["filtered_by"]["no_assistant_turn"],
            1
        );
        let expected: Vec<(String, String)> = [
            ("unanswered", "tool-call-unanswered"),
            ("empty", "empty-turn"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(rejects(&rej), expected, "{target}");
    }
}

#[test]
fn filters_and_dedup_are_counted() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = |name: &str, extra: &[&str]| {
        let dir = tmp.path().join(name);
        export(&[&fixture()], "hf", &dir, &[&["-q"], extra].concat());
        (
            counts(&dir),
            manifest(&dir)["counts"]["filtered_by"].clone(),
        )
    };
    let (c, by) = run("reward", &["--min-reward", "0.5"]);
    assert_eq!(c, (8, 4, 4, 0));
    assert_eq!(by["min_reward"], 4);
    let (c, by) = run("dedup", &["--min-reward", "0.5", "--dedup"]);
    assert_eq!(c, (8, 3, 5, 0));
    assert_eq!(
        (by["min_reward"].as_u64(), by["duplicate"].as_u64()),
        (Some(4), Some(1))
    );
    let (c, by) = run("outcome", &["--outcome", "success"]);
    assert_eq!(c, (8, 3, 5, 0));
    assert_eq!(by["outcome"], 5);
    let (c, by) = run("steps", &["--max-steps", "5"]);
    assert_eq!(c, (8, 2, 4, 2));
    assert_eq!(
        (by["max_steps"].as_u64(), by["no_assistant_turn"].as_u64()),
        (Some(3), Some(1))
    );
    let (c, _) = run("chars", &["--max-chars", "12"]);
    // Only no-assistant has at most 12 characters of text (6); it has no assistant turn.
    assert_eq!(c, (8, 0, 8, 0));
}

#[test]
fn splits_follow_the_documented_hash_and_proportions() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = tmp.path().join("many.jsonl");
    let lines: String = (0..2000)
        .map(|i| {
            format!(
                "{}\n",
                json!({"schema_version": "1.5.0", "id": format!("t{i}"), "content": [
                    {"class_": "text_observation", "content": "q", "name": null, "source": "user"},
                    {"class_": "message_action", "content": format!("a{i}"), "description": null}
                ], "details": {}})
            )
        })
        .collect();
    std::fs::write(&input, lines).expect("write");
    let dir = tmp.path().join("out");
    let (code, stderr) = export(
        &[&input],
        "sharegpt",
        &dir,
        &[
            "-q",
            "--split",
            "train=0.9,validation=0.1",
            "--shard-rows",
            "500",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let m = manifest(&dir);
    let names: Vec<&str> = m["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    let val_rows = m["splits"][1]["rows"].as_u64().expect("rows");
    assert_eq!(
        m["splits"][0]["rows"].as_u64().expect("rows") + val_rows,
        2000
    );
    assert!((150..=250).contains(&val_rows), "{val_rows}");
    let n_train = names
        .iter()
        .filter(|n| n.starts_with("data/train-"))
        .count();
    assert_eq!(names[0], format!("data/train-00000-of-{n_train:05}.jsonl"));
    assert!(names
        .last()
        .is_some_and(|n| n.starts_with("data/validation-00000-of-00001")));
    // Each id is where sha256(id)[..8] / 2^64 puts it.
    let mut split_of: HashMap<String, &str> = HashMap::new();
    for f in m["files"].as_array().expect("files") {
        let split = f["split"].as_str().expect("split");
        let bytes = std::fs::read(dir.join(f["path"].as_str().expect("path"))).expect("read");
        for r in json_lines(&bytes) {
            split_of.insert(r["id"].as_str().expect("id").to_owned(), split);
        }
    }
    for i in 0..2000 {
        let id = format!("t{i}");
        let d = Sha256::digest(id.as_bytes());
        let x = u64::from_be_bytes(d[..8].try_into().expect("8 bytes")) as f64 / 2f64.powi(64);
        let expected = if x < 0.9 { "train" } else { "validation" };
        assert_eq!(split_of.get(&id).copied(), Some(expected), "{id}");
    }
    let card = std::fs::read_to_string(dir.join("README.md")).expect("card");
    assert!(card.starts_with("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: \"data/train-*\"\n  - split: validation\n    path: \"data/validation-*\"\n---\n"), "{card}");
}

#[test]
fn manifest_checksums_match_and_bytes_do_not_depend_on_threads() {
    let Some(corpus) = adp_corpus() else { return };
    let files = corpus_std_files(&corpus);
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let dir = tmp.path().join(format!("t{threads}"));
        let (code, stderr) = export(
            &inputs,
            "openai",
            &dir,
            &[
                "-q",
                "--threads",
                threads,
                "--split",
                "train=0.7,test=0.3",
                "--shard-bytes",
                "200000",
                "--compress",
                "zstd",
                "--dedup",
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        let m = manifest(&dir);
        let mut all = Vec::new();
        for f in m["files"].as_array().expect("files") {
            let bytes = std::fs::read(dir.join(f["path"].as_str().expect("path"))).expect("read");
            let hex: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(f["sha256"], hex.as_str());
            assert_eq!(f["bytes"].as_u64(), Some(bytes.len() as u64));
            all.push((f["path"].as_str().expect("path").to_owned(), bytes));
        }
        assert!(all.len() > 2, "several shards");
        let mut manifest_text =
            std::fs::read_to_string(dir.join("manifest.json")).expect("manifest");
        manifest_text = manifest_text.replace(&format!("\"--threads\", \"{threads}\""), "");
        all.push(("manifest".into(), manifest_text.into_bytes()));
        all.push((
            "card".into(),
            std::fs::read(dir.join("README.md")).expect("card"),
        ));
        outputs.push(all);
    }
    assert!(
        outputs[0] == outputs[1],
        "outputs differ between --threads 1 and 2"
    );
}

#[test]
fn an_earlier_export_is_kept_without_force() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("out");
    assert_eq!(export(&[&fixture()], "openai", &dir, &["-q"]).0, 1);
    let (code, stderr) = export(&[&fixture()], "openai", &dir, &["-q"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    let (code, _) = export(
        &[&fixture()],
        "openai",
        &dir,
        &["-q", "--force", "--shard-rows", "2"],
    );
    assert_eq!(code, 1);
    let names: Vec<String> = std::fs::read_dir(dir.join("data"))
        .expect("data")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names.iter().all(|n| n.ends_with("-of-00003.jsonl")),
        "{names:?}"
    );
}

#[test]
fn inferred_tool_specs_cover_the_whole_input_or_one_trajectory() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let traj = |id: &str, kwargs: Value| {
        json!({"schema_version": "1.5.0", "id": id, "content": [
            {"class_": "text_observation", "content": "Q", "name": null, "source": "user"},
            {"class_": "api_action", "function": "search", "kwargs": kwargs, "description": null, "tool_call_id": "c1"},
            {"class_": "text_observation", "content": "r", "name": "search", "source": "environment", "tool_call_id": "c1"},
            {"class_": "message_action", "content": "done", "description": null}
        ], "details": {}})
        .to_string()
    };
    let input = tmp.path().join("calls.jsonl");
    let lines = [
        traj("a", json!({"q": "x"})),
        traj("b", json!({"q": "y", "n": 3})),
    ];
    std::fs::write(&input, lines.join("\n") + "\n").expect("write");
    let search = |row: &Value| row["tools"][0]["function"]["parameters"].clone();
    let whole = json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]});

    let dir = tmp.path().join("dataset");
    assert_eq!(export(&[&input], "openai", &dir, &["-q"]).0, 0);
    let r = rows(&dir);
    assert_eq!(search(&r[0]), whole);
    assert_eq!(search(&r[1]), whole);
    assert_eq!(manifest(&dir)["options"]["infer_tools"], "dataset");

    let dir = tmp.path().join("trajectory");
    let (code, stderr) = export(
        &[&input],
        "openai",
        &dir,
        &["-q", "--infer-tools", "trajectory"],
    );
    assert_eq!(code, 0, "{stderr}");
    let r = rows(&dir);
    assert_eq!(
        search(&r[0]),
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    );
    assert_eq!(
        search(&r[1]),
        json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q", "n"]})
    );

    // stdin is read once: per trajectory by default, and dataset-wide is refused.
    let dir = tmp.path().join("stdin");
    let out = trajkit()
        .args(["export", "-q", "--to", "openai", "-o"])
        .arg(&dir)
        .write_stdin(lines.join("\n"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(manifest(&dir)["options"]["infer_tools"], "trajectory");
    let out = trajkit()
        .args([
            "export",
            "-q",
            "--to",
            "openai",
            "--infer-tools",
            "dataset",
            "-o",
        ])
        .arg(tmp.path().join("refused"))
        .write_stdin(lines.join("\n"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdin can be read once"));
}

/// `convert DIR` of a directory `export` wrote reads the data files its manifest lists (not the
/// manifest, run.json or the dataset card), for JSON-lines and Parquet exports alike.
#[test]
fn converting_an_export_directory_reads_the_files_its_manifest_lists() {
    let tmp = tempfile::tempdir().expect("tmp");
    let samples = converted_samples(tmp.path());
    for (to, extra) in [
        ("adp", &["--shard-rows", "7"][..]),
        ("parquet", &[][..]),
        ("openai", &["--compress", "zstd"][..]),
    ] {
        let dir = tmp.path().join(format!("export-{to}"));
        let (code, err) = export(&[&samples], to, &dir, extra);
        assert!(code < 2, "{to}: {err}");
        let written = manifest(&dir)["counts"]["written"]
            .as_u64()
            .expect("written");
        std::fs::write(dir.join("run.json"), "{\"not\": \"data\"}\n").expect("run.json");
        let out = trajkit()
            .args(["convert", "-o", "-"])
            .arg(&dir)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{to}: {err}");
        assert_eq!(json_lines(&out.stdout).len() as u64, written, "{to}: {err}");
    }
}

//! Interop: the corpus and `sample_data/` exported to Parquet and every SFT target, then read by
//! pyarrow, polars, DuckDB and Hugging Face `datasets` (`tests/interop/check.py`); and the same
//! exports made by two partitions (`trajkit run --partition`) and merged.
//!
//! The Python comes from `TRAJKIT_PYTHON` (`.ci/run` makes a virtual environment with the four
//! libraries and sets it). Without it the test is skipped on a laptop and fails in CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{adp_corpus, agent_logs, converted_samples, corpus_std_files, trajkit};

pub(crate) fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRAJKIT_PYTHON") {
        return Some(PathBuf::from(p));
    }
    if std::env::var_os("CI").is_some() {
        panic!("TRAJKIT_PYTHON is not set but CI is: .ci/run must provide the interop Python");
    }
    eprintln!(
        "skipping: TRAJKIT_PYTHON is not set (a Python with pyarrow, polars, duckdb, datasets)"
    );
    None
}

fn export(inputs: &[PathBuf], to: &str, dir: &Path, extra: &[&str]) {
    let out = trajkit()
        .args(["export", "-q", "--to", to, "-o"])
        .arg(dir)
        .args(extra)
        .args(["--split", "train=0.8,validation=0.2", "--shard-rows", "30"])
        .args(inputs)
        .output()
        .expect("runs");
    // The SFT targets reject what cannot train (exit 1); Parquet and ADP take everything.
    let code = out.status.code().expect("exit code");
    let expected: &[i32] = if matches!(to, "parquet" | "adp") {
        &[0]
    } else {
        &[0, 1]
    };
    assert!(
        expected.contains(&code),
        "--to {to}: exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_readers_load_every_export() {
    let Some(corpus) = adp_corpus() else { return };
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let samples = converted_samples(tmp.path());
    let mut inputs = corpus_std_files(&corpus);
    inputs.push(samples);
    let dirs: Vec<PathBuf> = ["adp", "parquet", "openai", "hf", "sharegpt"]
        .iter()
        .map(|to| {
            let dir = tmp.path().join(to);
            export(&inputs, to, &dir, &[]);
            dir
        })
        .collect();
    check(&python, &dirs, tmp.path());
}

/// Segment rows (`--segments compaction,subagents`) of the real compacted and subagent sessions
/// of the corpus (Claude Code, Codex, Copilot CLI, Kimi CLI, ATIF continuations) and of
/// `sample_data/`: every target loads in the four readers as whole-session exports do.
#[test]
fn python_readers_load_segmented_exports() {
    let Some(logs) = agent_logs() else { return };
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut inputs = vec![converted_samples(tmp.path())];
    for format in ["claude-code", "codex", "copilot-cli", "kimi-cli", "atif"] {
        let adp = tmp.path().join(format!("{format}.jsonl"));
        let out = trajkit()
            .args(["convert", "-q", "--from", format])
            .arg(logs.join(format))
            .arg("-o")
            .arg(&adp)
            .output()
            .expect("runs");
        // A corpus folder may hold a file its reader rejects on purpose (exit 1).
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        inputs.push(adp);
    }
    let segments = ["--segments", "compaction,subagents"];
    let dirs: Vec<PathBuf> = ["adp", "parquet", "openai", "hf", "sharegpt"]
        .iter()
        .map(|to| {
            let dir = tmp.path().join(to);
            export(&inputs, to, &dir, &segments);
            dir
        })
        .collect();
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dirs[2].join("manifest.json")).expect("openai manifest"),
    )
    .expect("json");
    let text = manifest.to_string();
    assert!(
        text.contains("\"segments\""),
        "the openai manifest counts no segments: {text}"
    );
    check(&python, &dirs, tmp.path());
}

/// Runs `check.py` on the five export directories (adp, parquet, openai, hf, sharegpt).
pub(crate) fn check(python: &Path, dirs: &[PathBuf], tmp: &Path) {
    let out = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/check.py"))
        .args(dirs)
        .env("HF_HOME", tmp.join("hf-home"))
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "interop checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("ok   datasets via the dataset card"),
        "{stdout}"
    );
}

/// Two partitions (by input path) into the same directories, merged: the directories load as an
/// unpartitioned export does.
#[test]
fn python_readers_load_merged_partitions() {
    let Some(corpus) = adp_corpus() else { return };
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let samples = converted_samples(tmp.path());
    let mut inputs = corpus_std_files(&corpus);
    inputs.push(samples);
    let mut text = String::from("[validate]\nmax_reject_rate = 1.0\n\n");
    for i in &inputs {
        text.push_str(&format!(
            "[[input]]\npath = {:?}\nformat = \"adp\"\n\n",
            i.to_string_lossy()
        ));
    }
    let targets = ["adp", "parquet", "openai", "hf", "sharegpt"];
    let dirs: Vec<PathBuf> = targets.iter().map(|t| tmp.path().join(t)).collect();
    for (t, d) in targets.iter().zip(&dirs) {
        text.push_str(&format!(
            "[[export]]\nto = \"{t}\"\noutput = {:?}\nsplit = \"train=0.8,validation=0.2\"\n\
             shard_rows = 30\n\n",
            d.to_string_lossy()
        ));
    }
    let file = tmp.path().join("pipeline.toml");
    std::fs::write(&file, text).expect("write");
    for i in ["0/2", "1/2"] {
        let out = trajkit()
            .args(["run", "-q"])
            .arg(&file)
            .args(["--partition", i])
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = trajkit()
        .arg("merge-manifests")
        .args(&dirs)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&python, &dirs, tmp.path());
}

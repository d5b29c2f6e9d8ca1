//! Helpers shared by the integration tests (the `common` module of `tests/it/main.rs`).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// The `trajkit` binary, with CI-like environment (no progress bars).
pub fn trajkit() -> Command {
    let mut cmd = Command::cargo_bin("trajkit").expect("binary built");
    cmd.env_remove("RUST_LOG");
    cmd
}

/// The repository's `sample_data/`.
pub fn sample_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_data")
}

/// `../shared/corpus/adp` beside the checkout (or `$TRAJKIT_SHARED/corpus/adp`). Returns `None`
/// on a laptop without it; panics when `CI` is set, because CI always has it and a silently
/// skipped corpus test proves nothing.
pub fn adp_corpus() -> Option<PathBuf> {
    shared_corpus("adp")
}

/// `../shared/corpus/agent-logs` (real logs of other agents), as [`adp_corpus`].
pub fn agent_logs() -> Option<PathBuf> {
    shared_corpus("agent-logs")
}

/// `corpus/<name>` of the shared directory, `None` (skip) on a laptop without it, a panic in CI.
fn shared_corpus(name: &str) -> Option<PathBuf> {
    let shared = std::env::var_os("TRAJKIT_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let dir = shared.join("corpus").join(name);
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "the shared corpus is missing at {} but CI is set: corpus tests must run in CI",
            dir.display()
        );
    }
    eprintln!("skipping: no shared corpus at {}", dir.display());
    None
}

/// The 17 `sample_std.json` files of the corpus, sorted.
pub fn corpus_std_files(dir: &Path) -> Vec<PathBuf> {
    files_in(dir)
        .into_iter()
        .map(|d| d.join("sample_std.json"))
        .filter(|p| p.is_file())
        .collect()
}

/// The entries of `dir` (files and folders), sorted by path.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
}

/// Parses JSON lines.
pub fn json_lines(bytes: &[u8]) -> Vec<Value> {
    std::str::from_utf8(bytes)
        .expect("utf-8 output")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// A minimal valid ADP 1.5.0 trajectory with one linked tool call, for mutation tests.
pub fn valid_v15() -> Value {
    serde_json::json!({
        "schema_version": "1.5.0",
        "id": "m1",
        "content": [
            {"class_": "text_observation", "content": "task", "name": null, "source": "user"},
            {"class_": "code_action", "language": "bash", "content": "ls", "description": null, "tool_call_id": "c1"},
            {"class_": "text_observation", "content": "a.txt", "name": null, "source": "environment", "tool_call_id": "c1"},
            {"class_": "api_action", "function": "open", "kwargs": {"path": "a.txt"}, "description": null, "tool_call_id": "c2"},
            {"class_": "text_observation", "content": "hello", "name": null, "source": "environment", "tool_call_id": "c2"},
            {"class_": "message_action", "content": "done", "description": null}
        ],
        "available_code_languages": ["bash"],
        "details": {}
    })
}

/// Runs `trajkit convert [--from FROM] EXTRA... INPUTS...`, returning the exit code, the
/// trajectories written and stderr.
pub fn convert(inputs: &[&Path], from: Option<&str>, extra: &[&str]) -> (i32, Vec<Value>, String) {
    let mut cmd = trajkit();
    cmd.arg("convert");
    if let Some(f) = from {
        cmd.args(["--from", f]);
    }
    let out = cmd.args(extra).args(inputs).output().expect("runs");
    (
        out.status.code().expect("exited with a code, not a signal"),
        json_lines(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `class_` of each step of a trajectory.
pub fn step_classes(t: &Value) -> Vec<&str> {
    t["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|s| s["class_"].as_str())
        .collect()
}

/// Validates trajectories as ADP (any version); returns the exit code.
pub fn validate_adp(trajectories: &[Value]) -> i32 {
    trajkit()
        .args(["validate", "-q", "-"])
        .write_stdin(
            trajectories
                .iter()
                .map(|t| format!("{t}\n"))
                .collect::<String>(),
        )
        .output()
        .expect("runs")
        .status
        .code()
        .expect("exited with a code, not a signal")
}

/// Exports `trajectories` to every SFT target (openai, hf, sharegpt) and asserts each accepts
/// every one: exit 0 and as many rows written as trajectories (what `ctx` names on failure).
pub fn assert_every_sft_target_accepts(trajectories: &[Value], ctx: &str) {
    let dir = tempfile::tempdir().expect("tmp");
    let input = dir.path().join("in.jsonl");
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&input, text).expect("write");
    for target in ["openai", "hf", "sharegpt"] {
        let out_dir = dir.path().join(target);
        let out = trajkit()
            .args(["export", "-q", "--to", target, "-o"])
            .arg(&out_dir)
            .arg(&input)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{ctx}: export --to {target}: {err}"
        );
        let manifest: Value = serde_json::from_slice(
            &std::fs::read(out_dir.join("manifest.json")).expect("manifest"),
        )
        .expect("manifest JSON");
        assert_eq!(
            manifest["counts"]["written"].as_u64(),
            Some(trajectories.len() as u64),
            "{ctx}: export --to {target}"
        );
    }
}

/// Tool actions (`api_action`, `code_action`) of a trajectory, and whether every observation
/// that carries a `tool_call_id` answers one of them.
pub fn tool_actions_and_links(t: &Value) -> (usize, bool) {
    let steps = t["content"].as_array().expect("content");
    let calls: Vec<&str> = steps
        .iter()
        .filter(|s| s["class_"] == "api_action" || s["class_"] == "code_action")
        .filter_map(|s| s["tool_call_id"].as_str())
        .collect();
    let actions = steps
        .iter()
        .filter(|s| s["class_"] == "api_action" || s["class_"] == "code_action")
        .count();
    let linked = steps
        .iter()
        .filter(|s| s["class_"] != "api_action" && s["class_"] != "code_action")
        .filter_map(|s| s["tool_call_id"].as_str())
        .all(|id| calls.contains(&id));
    (actions, linked)
}

/// `sample_data/` converted to ADP 1.5.0 JSON lines in `dir/samples.jsonl` (every sample
/// converts: the conversion must exit 0).
pub fn converted_samples(dir: &Path) -> PathBuf {
    let samples = dir.join("samples.jsonl");
    let out = trajkit()
        .args(["convert", "-q"])
        .arg(sample_data())
        .arg("-o")
        .arg(&samples)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    samples
}

/// The sample pipeline over `sample_data` (both joins, Parquet with two splits, openai, hf
/// and sharegpt), with outputs under `out`; `hf_keys` are extra keys of the hf export.
pub fn sample_pipeline(out: &Path, hf_keys: &str) -> String {
    let sd = sample_data().to_string_lossy().into_owned();
    let out = out.to_string_lossy().into_owned();
    format!(
        r#"[[input]]
path = "{sd}"

[validate]
max_reject_rate = 0.5
rejects = "{out}/rejects.jsonl"

[[join]]
reflections = ["{sd}/reflexion/loop.jsonl"]
reflections_from = "reflexion"
memory_window = 2
rewards = ["{sd}/side/evaluations.rewards"]
key = "/id"
value = "/reward"
outcome = "/resolved"

[[join]]
reflections = ["{sd}/ralph/tasks/task-001/reflections.jsonl"]
reflections_from = "ralph"

[[export]]
to = "parquet"
output = "{out}/parquet"
split = "train=0.8,validation=0.2"

[[export]]
to = "openai"
output = "{out}/openai"

[[export]]
to = "hf"
output = "{out}/hf"
{hf_keys}
[[export]]
to = "sharegpt"
output = "{out}/sharegpt"
inject_reflections = true
"#
    )
}

/// Every file under `dir` (recursively, hidden ones included) by its path relative to `dir`,
/// with its bytes; empty when `dir` does not exist.
pub fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).expect("under root");
                let bytes = std::fs::read(&p).expect("read");
                out.insert(rel.to_string_lossy().into_owned(), bytes);
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out
}

/// Copies the directory `from` (recursively) to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// An Inspect log's samples: the `samples/` entries of an `.eval` archive, or `samples` of a
/// `.json` log.
pub fn inspect_samples(file: &Path) -> Vec<Value> {
    if file.extension().is_some_and(|e| e == "eval") {
        let mut archive =
            zip::ZipArchive::new(std::fs::File::open(file).expect("open")).expect("zip");
        let names: Vec<String> = archive
            .file_names()
            .filter_map(Result::ok)
            .filter(|n| n.starts_with("samples/"))
            .map(|n| n.into_owned())
            .collect();
        names
            .iter()
            .map(|n| serde_json::from_reader(archive.by_name(n).expect("entry")).expect("JSON"))
            .collect()
    } else {
        let log: Value = serde_json::from_slice(&std::fs::read(file).expect("read")).expect("JSON");
        log["samples"].as_array().cloned().unwrap_or_default()
    }
}

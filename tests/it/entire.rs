//! Entire checkpoints: a checkpoint's session folders (`<id[:2]>/<id[2:]>/<n>/` holding the
//! agent's `full.jsonl` and the `metadata.json` naming it), each read by the named agent's
//! reader with the session's metadata in `details.entire`; checkpoints written by us in the
//! layout of entire's CLI, around the bundled samples of the agents.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{convert, sample_data, tool_actions_and_links, validate_adp};

/// Session folder `n` of checkpoint `a3b2c4d5e6f7` under `root`, holding `transcript` as
/// `full.jsonl` and `metadata` (with the checkpoint's id) as `metadata.json`.
fn session(root: &Path, n: u32, transcript: &Path, metadata: Value) -> PathBuf {
    let dir = root.join(format!("a3/b2c4d5e6f7/{n}"));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::copy(transcript, dir.join("full.jsonl")).expect("copy");
    let mut metadata = metadata;
    metadata["checkpoint_id"] = json!("a3b2c4d5e6f7");
    std::fs::write(dir.join("metadata.json"), metadata.to_string()).expect("write");
    std::fs::write(dir.join("prompt.txt"), "fix the bug").expect("write");
    std::fs::write(dir.join("content_hash.txt"), "sha256:00").expect("write");
    dir
}

fn claude_sample() -> PathBuf {
    sample_data().join("claude-code/7f3c2a10-0000-4000-8000-000000000001.jsonl")
}

fn only_file(dir: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sample_data().join(dir))
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.remove(0)
}

/// Without the `entire` key and the file it names, what the named agent's reader makes of the
/// transcript on its own.
fn without_entire(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(d) = t["details"].as_object_mut() {
        d.remove("entire");
        if let Some(s) = d.get_mut("source").and_then(Value::as_object_mut) {
            s.remove("file");
        }
    }
    t
}

#[test]
fn a_checkpoint_converts_each_session_with_its_agents_reader() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("entire-checkpoints");
    let claude = json!({"session_id": "7f3c2a10-0000-4000-8000-000000000001",
        "strategy": "manual-commit", "created_at": "2026-01-10T10:00:00Z", "agent": "Claude Code",
        "files_touched": ["app.py"], "token_usage": {"input_tokens": 10, "output_tokens": 20}});
    session(&root, 0, &claude_sample(), claude.clone());
    session(
        &root,
        1,
        &only_file("codex"),
        json!({"session_id": "s-codex", "agent": "Codex"}),
    );
    // An agent trajkit has no reader named for (the early default "Agent"): detected.
    session(
        &root,
        2,
        &only_file("pi"),
        json!({"session_id": "s-pi", "agent": "Agent"}),
    );
    // A session Entire kept only the metadata of (no full.jsonl), as real checkpoints have.
    let empty = root.join("a3/b2c4d5e6f7/3");
    std::fs::create_dir_all(&empty).expect("dir");
    std::fs::write(
        empty.join("metadata.json"),
        json!({"checkpoint_id": "a3b2c4d5e6f7", "session_id": "s-empty", "agent": "Claude Code",
            "checkpoints_count": 0})
        .to_string(),
    )
    .expect("write");
    std::fs::write(
        root.join("a3/b2c4d5e6f7/metadata.json"),
        json!({"checkpoint_id": "a3b2c4d5e6f7", "sessions": []}).to_string(),
    )
    .expect("write");
    let (code, out, stderr) = convert(&[&root], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("skipped: an Entire checkpoint's summary"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skipped: an Entire checkpoint session with no transcript"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("detected entire").count(), 3, "{stderr}");
    assert_eq!(validate_adp(&out), 0);
    let formats: Vec<&Value> = out
        .iter()
        .map(|t| &t["details"]["source"]["format"])
        .collect();
    assert_eq!(
        formats,
        [&json!("claude-code"), &json!("codex"), &json!("pi")]
    );
    let e = &out[0]["details"]["entire"];
    assert_eq!(e["agent"], "Claude Code");
    assert_eq!(e["reader"], "claude-code");
    assert_eq!(e["checkpoint_id"], "a3b2c4d5e6f7");
    assert_eq!(e["token_usage"], claude["token_usage"]);
    assert_eq!(out[2]["details"]["entire"]["reader"], "pi");
    // The steps are the agent reader's own.
    let (code, alone, stderr) = convert(&[&claude_sample()], Some("claude-code"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(without_entire(&out[0]), without_entire(&alone[0]));
    assert!(tool_actions_and_links(&out[0]).1);
}

#[test]
fn a_session_folder_converts_alone_and_other_inputs_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let folder = session(
        dir.path(),
        0,
        &claude_sample(),
        json!({"agent": "Claude Code"}),
    );
    let (code, out, stderr) = convert(&[&folder], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1);
    // A folder whose metadata names no checkpoint is not a session folder.
    std::fs::write(folder.join("metadata.json"), r#"{"agent": "Claude Code"}"#).expect("write");
    let (code, _, stderr) = convert(&[&folder], Some("entire"), &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("not an Entire checkpoint session folder"),
        "{stderr}"
    );
    // An agent with no reader whose transcript no format claims.
    std::fs::write(
        folder.join("metadata.json"),
        r#"{"checkpoint_id": "a3b2c4d5e6f7", "agent": "OpenCode"}"#,
    )
    .expect("write");
    std::fs::write(folder.join("full.jsonl"), "{\"x\": 1}\n").expect("write");
    let (code, out, stderr) = convert(&[&folder], None, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("\"OpenCode\" has no reader"), "{stderr}");
    // A file given to --from entire.
    let (code, out, _) = convert(&[&claude_sample()], Some("entire"), &[]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
}

#[test]
fn a_misnamed_agent_is_read_by_its_transcripts_format_and_a_bad_line_keeps_its_reason() {
    let dir = tempfile::tempdir().expect("tmp");
    // Early Entire versions named "Gemini CLI" for Claude Code sessions.
    let folder = session(
        dir.path(),
        0,
        &claude_sample(),
        json!({"agent": "Gemini CLI"}),
    );
    let (code, out, stderr) = convert(&[&folder], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["details"]["entire"]["reader"], "claude-code");
    assert_eq!(out[0]["details"]["source"]["format"], "claude-code");
    // Two of the transcript's lines written as one: rejected for what the line breaks.
    let text = std::fs::read_to_string(folder.join("full.jsonl")).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    let glued = format!(
        "{}\n{}{}\n",
        lines[..n - 2].join("\n"),
        lines[n - 2],
        lines[n - 1]
    );
    std::fs::write(folder.join("full.jsonl"), glued).expect("write");
    let (code, out, stderr) = convert(&[&folder], None, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("full.jsonl:{}: error[json-syntax]", n - 1)),
        "{stderr}"
    );
    assert!(!stderr.contains("not-a-unit"), "{stderr}");
}

#[test]
fn a_gemini_session_document_entire_copied_to_full_jsonl_is_read_whole() {
    // Entire copies Gemini CLI's session file, one pretty-printed JSON document, to
    // `full.jsonl`; early versions named no agent for it.
    let lines = std::fs::read_to_string(only_file("gemini-cli")).expect("read");
    let mut records = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"));
    let mut document = records.next().expect("header");
    document["messages"] = Value::Array(records.collect());
    let dir = tempfile::tempdir().expect("tmp");
    let pretty = dir.path().join("session.json");
    std::fs::write(
        &pretty,
        serde_json::to_string_pretty(&document).expect("json"),
    )
    .expect("write");
    let folder = session(dir.path(), 0, &pretty, json!({"session_id": "g"}));
    let (code, out, stderr) = convert(&[&folder], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["details"]["entire"]["reader"], "gemini-cli");
    let (code, alone, stderr) = convert(&[&pretty], Some("gemini-cli"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["content"], alone[0]["content"]);
    assert!(tool_actions_and_links(&out[0]).1);
}

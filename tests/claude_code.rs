//! Claude Code sessions: lines of one response merged, the main chain followed, tool results
//! linked; interleaved responses, unknown results and bad lines diagnosed.

mod common;

use std::path::{Path, PathBuf};

use common::{convert, sample_data, step_classes, trajkit};
use serde_json::{json, Value};

fn session_file() -> PathBuf {
    sample_data().join("claude-code/7f3c2a10-0000-4000-8000-000000000001.jsonl")
}

fn sample_lines() -> Vec<Value> {
    std::fs::read_to_string(session_file())
        .expect("sample")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

fn write_lines(dir: &Path, lines: &[Value]) -> PathBuf {
    let path = dir.join("session.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn a_session_becomes_one_trajectory_along_its_main_chain() {
    let (code, out, stderr) = convert(&[&session_file()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(t["id"], "7f3c2a10-0000-4000-8000-000000000001");
    let c = t["content"].as_array().expect("content");
    let classes = step_classes(t);
    // Derived by hand from the fixture: the prompt; msg_1's three lines (thinking, text, Bash
    // with its own description, so the text stays a message); its error result; the edit and
    // its result; the second test run and its result; the answer. The sidechain is left out.
    assert_eq!(
        classes,
        vec![
            "text_observation",
            "message_action",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(
        c[2]["reasoning_content"],
        "Run the test first to see the failure."
    );
    assert_eq!(c[2]["description"], "Run the date tests");
    assert_eq!(c[2]["tool_call_id"], "toolu_1");
    assert_eq!(c[3]["tool_call_id"], "toolu_1");
    assert_eq!(c[4]["kwargs"]["file_path"], "src/dates.py");
    assert_eq!(c[5]["content"], "The file src/dates.py has been updated.");
    let details = &t["details"]["claude_code"];
    assert_eq!(details["left_out_uuids"], json!(["s1"]));
    assert_eq!(details["error_results"], json!(["toolu_1"]));
    assert_eq!(details["summaries"], json!(["Fix failing date test"]));
    trajkit()
        .args(["validate", "-q", "-"])
        .write_stdin(format!("{t}\n"))
        .assert()
        .code(0);
}

#[test]
fn interleaved_response_lines_are_a_clear_error() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    // u3 (a line of msg_1) now claims to belong to another response, so msg_1's lines u2 and
    // u4 are no longer consecutive on the chain.
    lines[3]["message"]["id"] = json!("msg_other");
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(stderr.contains(":5: error[session-structure]"), "{stderr}");
    assert!(stderr.contains("interleaved"), "{stderr}");
}

#[test]
fn a_result_for_an_unknown_call_and_bad_lines_are_diagnosed() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    lines[5]["message"]["content"][0]["tool_use_id"] = json!("toolu_ghost");
    let (code, _, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains(":6: error[session-structure]")
            && stderr.contains("/message/content/0/tool_use_id"),
        "{stderr}"
    );
    let mut lines = sample_lines();
    lines.push(json!(["not", "an entry"]));
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(out.len(), 1, "the session still converts");
    assert!(stderr.contains(":13: error[invalid-record]"), "{stderr}");
}

//! Claude Code sessions: lines of one response merged, the main chain followed, tool results
//! linked; interleaved responses, unknown results and bad lines diagnosed.

use std::path::{Path, PathBuf};

use crate::common::{agent_logs, convert, sample_data, step_classes, trajkit, validate_adp};
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

#[test]
fn user_content_of_every_shape_is_read_and_what_is_not_mapped_is_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    // The prompt (line 2) as a list of blocks: text, a bare string, a block of a type the
    // reader does not map, and a text block whose text is not a string.
    lines[1]["message"]["content"] = json!([
        {"type": "text", "text": "Fix the date test."},
        "It fails on leap years.",
        {"type": "document", "source": {"data": "JVBERi0="}},
        {"type": "text", "text": 7}
    ]);
    // A progress entry, and the final answer (line 12) given as one block, not a list.
    lines.insert(
        2,
        json!({"type": "progress", "uuid": "p1", "parentUuid": "u1", "data": {"n": 1}}),
    );
    lines[12]["message"]["content"] = json!({"type": "text", "text": "Done."});
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[0]["content"], "Fix the date test.");
    assert_eq!(c[1]["content"], "It fails on leap years.");
    assert_eq!(c[1]["source"], "user");
    assert_eq!(c.last().expect("last")["content"], "Done.");
    let unmapped = &t["details"]["claude_code"]["unmapped"];
    assert_eq!(
        unmapped
            .as_array()
            .expect("unmapped")
            .iter()
            .map(|u| (
                u["line"].as_u64().expect("line"),
                u["pointer"].as_str().expect("pointer")
            ))
            .collect::<Vec<_>>(),
        vec![
            (3, ""),
            (2, "/message/content/2"),
            (2, "/message/content/3")
        ]
    );
    assert_eq!(unmapped[0]["value"]["data"], json!({"n": 1}));
    assert_eq!(unmapped[1]["value"]["type"], "document");
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn an_empty_session_id_falls_back_to_the_file_name() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    for l in &mut lines {
        if l.get("sessionId").is_some() {
            l["sessionId"] = json!("");
        }
    }
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["id"], "session");
    assert_eq!(validate_adp(&out), 0);
    // From stdin there is no file name: rejected with the reason.
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = trajkit()
        .args(["convert", "--from", "claude-code", "-"])
        .write_stdin(text)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[missing-id]"), "{stderr}");
}

/// True when every line of the session file is a sidechain (a subagent's file).
fn is_subagent_file(file: &Path) -> bool {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .all(|v| v["isSidechain"] == true)
}

/// Every line of the real sessions is accounted for: on the main chain, left out (its uuid
/// listed), a summary, or kept as unmapped; and every trajectory validates.
#[test]
fn no_line_of_a_real_session_vanishes() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let dir = logs.join("claude-code");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let (code, out, stderr) = convert(&[&file], Some("claude-code"), &[]);
        if is_subagent_file(&file) {
            // A subagent's file has no main-chain line: refused rather than written empty.
            assert_eq!(code, 1, "{}: {stderr}", file.display());
            assert!(stderr.contains("error[empty-trajectory]"), "{stderr}");
            continue;
        }
        assert_eq!(code, 0, "{}: {stderr}", file.display());
        assert_eq!(out.len(), 1);
        assert_eq!(validate_adp(&out), 0, "{}", file.display());
        let cc = &out[0]["details"]["claude_code"];
        let listed = |key: &str| -> Vec<Value> { cc[key].as_array().cloned().unwrap_or_default() };
        let on_chain = listed("main_chain_lines");
        let left_out = listed("left_out_uuids");
        let unmapped: Vec<u64> = listed("unmapped")
            .iter()
            .filter_map(|u| u["line"].as_u64())
            .collect();
        let text = std::fs::read_to_string(&file).expect("read");
        for (i, line) in text.lines().enumerate() {
            let n = i as u64 + 1;
            let e: Value = serde_json::from_str(line).expect("json");
            let kept = on_chain.contains(&json!(n))
                || left_out.contains(&e["uuid"])
                || e["type"] == "summary"
                || unmapped.contains(&n);
            assert!(kept, "{}:{n} vanished", file.display());
        }
    }
}

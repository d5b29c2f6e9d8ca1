//! Gemini CLI sessions: the JSON document and the JSON-lines log (rewritten messages, `$set`,
//! `$rewindTo`), tool calls and their results, a cut-off log, and the real files of the shared
//! corpus.

use std::path::{Path, PathBuf};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, files_in, sample_data,
    tool_actions_and_links, validate_adp,
};
use serde_json::{json, Value};

fn sample() -> PathBuf {
    sample_data().join("gemini-cli/session-2026-03-05T09-12-4f1c2a9e.jsonl")
}

fn sample_lines() -> Vec<Value> {
    std::fs::read_to_string(sample())
        .expect("sample")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// The tool calls a session file holds: each `toolCalls` entry of its last record per message
/// id (a log writes a message again when its calls arrive).
fn source_calls(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).expect("read");
    let records: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(doc) => doc["messages"].as_array().cloned().unwrap_or_default(),
        Err(_) => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    };
    let mut last: std::collections::BTreeMap<String, usize> = Default::default();
    for r in &records {
        if let Some(id) = r["id"].as_str() {
            last.insert(id.to_owned(), r["toolCalls"].as_array().map_or(0, Vec::len));
        }
    }
    last.values().sum()
}

#[test]
fn a_log_becomes_one_trajectory_with_every_call_answered() {
    let (code, out, err) = convert(&[&sample()], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected gemini-cli"), "{err}");
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(t["id"], "4f1c2a9e-6b0d-4c51-9a57-0d8f3e6b2c11");
    let (actions, linked) = tool_actions_and_links(t);
    assert_eq!(actions, source_calls(&sample()));
    assert!(linked);
    let c = t["content"].as_array().expect("content");
    // The shell call with only a command (and a description) is bash code; its description is
    // the call's own, so the message's text stays a message before it.
    assert_eq!(c[1]["class_"], "message_action");
    assert_eq!(c[2]["class_"], "code_action");
    assert_eq!(c[2]["description"], "Run the parser tests.");
    assert!(c[2]["reasoning_content"]
        .as_str()
        .is_some_and(|r| r.starts_with("Reproducing the failure: ")));
    // Parallel calls, then their results in call order.
    assert_eq!(c[3]["function"], "read_file");
    assert_eq!(c[4]["tool_call_id"], c[2]["tool_call_id"]);
    assert_eq!(c[5]["tool_call_id"], c[3]["tool_call_id"]);
    let g = &t["details"]["gemini_cli"];
    assert_eq!(g["summary"], "Fix the date format in the parser");
    assert_eq!(g["notices"][0]["content"], "Request cancelled.");
    assert_eq!(
        g["tool_descriptions"]["read_file"],
        "Reads and returns the content of a specified file."
    );
    // The message written twice is one message, with the tokens of its second record.
    let metas = g["messages"].as_array().expect("messages");
    assert_eq!(metas.len(), 5);
    assert_eq!(metas[1]["tokens"]["total"], 5225);
    // A thought's timestamp has no place in the reasoning text: it stays with its message.
    assert_eq!(
        metas[1]["thoughts"][0]["timestamp"],
        "2026-03-05T09:12:43.900Z"
    );
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "gemini-cli sample");
}

#[test]
fn the_json_document_and_the_log_give_the_same_steps() {
    let lines = sample_lines();
    let dir = tempfile::tempdir().expect("tmp");
    // The session as the earlier CLI wrote it: the metadata and every message, once.
    let mut doc = lines[0].clone();
    let mut messages: Vec<Value> = Vec::new();
    for l in &lines[1..] {
        if l["id"].is_string() {
            match messages.iter().position(|m| m["id"] == l["id"]) {
                Some(i) => messages[i] = l.clone(),
                None => messages.push(l.clone()),
            }
        } else if let Some(set) = l["$set"].as_object() {
            for (k, v) in set {
                doc[k] = v.clone();
            }
        }
    }
    doc["messages"] = json!(messages);
    let path = dir.path().join("session-legacy.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
    let (code, legacy, err) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{err}");
    let (_, log, _) = convert(&[&sample()], None, &[]);
    assert_eq!(legacy[0]["content"], log[0]["content"]);
    assert_eq!(
        legacy[0]["details"]["gemini_cli"]["messages"],
        log[0]["details"]["gemini_cli"]["messages"]
    );
}

#[test]
fn a_rewind_drops_the_messages_it_undoes() {
    let mut lines = sample_lines();
    let last_user =
        json!({"id": "u2", "timestamp": "t", "type": "user", "content": "no, undo that"});
    lines.push(last_user);
    lines.push(json!({"$rewindTo": "u2"}));
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("s.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    let (code, out, err) = convert(&[&path], Some("gemini-cli"), &[]);
    assert_eq!(code, 0, "{err}");
    let (_, original, _) = convert(&[&sample()], None, &[]);
    assert_eq!(out[0]["content"], original[0]["content"]);
    assert_eq!(
        out[0]["details"]["gemini_cli"]["rewound_message_ids"],
        json!(["u2"])
    );
}

#[test]
fn a_cut_off_log_converts_its_complete_part_and_keeps_an_unanswered_call() {
    let lines = sample_lines();
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("s.jsonl");
    // The session ends in a call still running (no result yet), then a line cut mid-write.
    let mut text: String = lines[..3].iter().map(|l| format!("{l}\n")).collect();
    let mut call = lines[3].clone();
    call["toolCalls"][1]["result"] = Value::Null;
    call["toolCalls"][1]["status"] = json!("executing");
    text.push_str(&format!("{call}\n"));
    text.push_str("{\"id\":\"7d3f\",\"type\":\"gem");
    std::fs::write(&path, text).expect("write");
    let (code, out, err) = convert(&[&path], Some("gemini-cli"), &[]);
    assert_eq!(code, 1, "the cut line is rejected: {err}");
    assert!(err.contains(":5"), "the cut line is named: {err}");
    assert_eq!(out.len(), 1, "{err}");
    let t = &out[0];
    let c = t["content"].as_array().expect("content");
    let unanswered = &t["details"]["gemini_cli"]["unanswered_calls"];
    assert_eq!(unanswered[0]["id"], "read_file-1741165964518-b2");
    let step = unanswered[0]["step"].as_u64().expect("step") as usize;
    assert_eq!(c[step]["function"], "read_file");
    assert!(c[step].get("tool_call_id").is_none_or(Value::is_null));
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "cut-off gemini-cli log");
}

/// Every Gemini CLI file of the shared corpus: detected, every tool call an action, every result
/// linked, valid ADP that every SFT target accepts.
#[test]
fn real_sessions_convert_with_every_call_and_result() {
    let Some(dir) = agent_logs() else { return };
    let files = files_in(&dir.join("gemini-cli"));
    assert!(!files.is_empty());
    for f in &files {
        let (code, out, err) = convert(&[f], None, &[]);
        assert_eq!(code, 0, "{}: {err}", f.display());
        assert!(err.contains("detected gemini-cli"), "{err}");
        let (actions, linked) = tool_actions_and_links(&out[0]);
        assert_eq!(actions, source_calls(f), "{}", f.display());
        assert!(linked, "{}", f.display());
        assert_eq!(validate_adp(&out), 0, "{}", f.display());
        assert_every_sft_target_accepts(&out, &f.display().to_string());
    }
}

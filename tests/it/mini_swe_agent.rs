//! mini-swe-agent runs (`.traj.json`): trajectory formats 1 and 1.1 and bare lists of
//! messages; real files from the shared corpus (every tool call becomes one tool action, every
//! result is linked, every run validates and exports); SWE-agent `.traj` files with only a
//! `history`; OpenAI files of bare messages read as one chat.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::common::{
    agent_logs, convert, files_in, sample_data, step_classes, trajkit, validate_adp,
};
use regex::Regex;
use serde_json::{json, Value};

fn samples() -> PathBuf {
    sample_data().join("mini-swe-agent")
}

/// The messages of a run (a bare list is its own messages).
fn messages(run: &Value) -> &[Value] {
    match run {
        Value::Array(items) => items,
        other => other["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    }
}

/// The tool calls of a raw run, counted as mini-swe-agent makes them: an assistant message's
/// `tool_calls`, else its `extra.actions`, else its fenced bash block when it has exactly one;
/// a Responses API response's `function_call` items.
fn raw_calls(run: &Value) -> usize {
    let block = Regex::new(r"(?s)```(?:bash|mswea_bash_command)\s*\n(.*?)\n```").expect("regex");
    let len = |v: &Value| v.as_array().map_or(0, Vec::len);
    messages(run)
        .iter()
        .map(|m| {
            if m["object"] == "response" {
                return m["output"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|i| i["type"] == "function_call")
                    .count();
            }
            if m["role"] != "assistant" {
                return 0;
            }
            if len(&m["tool_calls"]) > 0 {
                return len(&m["tool_calls"]);
            }
            if len(&m["extra"]["actions"]) > 0 {
                return len(&m["extra"]["actions"]);
            }
            let text = m["content"].as_str().unwrap_or_default();
            usize::from(block.find_iter(text).count() == 1)
        })
        .sum()
}

/// The ids of the raw run's tool results (`tool` messages, `function_call_output` items).
fn raw_result_ids(run: &Value) -> Vec<String> {
    messages(run)
        .iter()
        .filter_map(|m| match (m["role"].as_str(), m["type"].as_str()) {
            (Some("tool"), _) => m["tool_call_id"].as_str(),
            (None, Some("function_call_output")) => m["call_id"].as_str(),
            _ => None,
        })
        .map(str::to_owned)
        .collect()
}

fn write_lines(dir: &Path, name: &str, trajectories: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

/// `trajkit export` of `input` to each SFT target writes every trajectory and rejects none.
fn assert_exports(input: &Path, n: u64, dir: &Path) {
    for to in ["openai", "hf", "sharegpt"] {
        let out_dir = dir.join(format!("export-{to}"));
        let out = trajkit()
            .args(["export", "-q", "--to", to, "-o"])
            .arg(&out_dir)
            .arg(input)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "--to {to}: {stderr}");
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("manifest.json")).expect("read"))
                .expect("manifest");
        let counts = &manifest["counts"];
        assert_eq!(
            (counts["written"].as_u64(), counts["rejected"].as_u64()),
            (Some(n), Some(0)),
            "--to {to}: {counts}"
        );
    }
}

/// Tool calls in = tool actions out; results linked to their calls; the calls no result answers
/// carry no id and are listed.
fn assert_calls_kept(raw: &Value, t: &Value, what: &str) {
    let content = t["content"].as_array().expect("content");
    let actions: Vec<&Value> = content
        .iter()
        .filter(|s| matches!(s["class_"].as_str(), Some("api_action" | "code_action")))
        .collect();
    assert_eq!(
        actions.len(),
        raw_calls(raw),
        "{what}: tool calls in, tool actions out"
    );
    let linked: HashSet<&str> = content
        .iter()
        .filter(|s| s["class_"] == "text_observation")
        .filter_map(|s| s["tool_call_id"].as_str())
        .collect();
    for id in raw_result_ids(raw) {
        assert!(
            linked.contains(id.as_str()),
            "{what}: result {id} not linked"
        );
    }
    let with_id = actions
        .iter()
        .filter(|a| a["tool_call_id"].is_string())
        .count();
    assert_eq!(
        with_id,
        linked.len(),
        "{what}: each linked call has its result"
    );
    let listed = t["details"]["mini_swe_agent"]["unanswered_calls"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(
        actions.len() - with_id,
        listed,
        "{what}: unanswered calls listed"
    );
}

#[test]
fn real_runs_keep_every_call_validate_and_export() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let dir = logs.join("mini-swe-agent");
    let files = files_in(&dir);
    assert!(!files.is_empty());
    let tmp = tempfile::tempdir().expect("dir");
    for file in files {
        let what = file.display().to_string();
        let raw: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
        // A bare list of messages has no key of mini-swe-agent's own: named with --from.
        let from = raw.is_array().then_some("mini-swe-agent");
        let (code, out, stderr) = convert(&[&file], from, &[]);
        assert_eq!(code, 0, "{what}: {stderr}");
        if from.is_none() {
            assert!(
                stderr.contains("detected mini-swe-agent"),
                "{what}: {stderr}"
            );
        }
        assert_eq!(out.len(), 1, "{what}");
        let t = &out[0];
        assert_calls_kept(&raw, t, &what);
        assert_eq!(validate_adp(&out), 0, "{what}");
        // The system and instance prompts survive.
        let c = t["content"].as_array().expect("content");
        assert_eq!(c[0]["name"], "system", "{what}");
        assert_eq!(c[0]["content"], messages(&raw)[0]["content"], "{what}");
        assert_eq!(c[1]["source"], "user", "{what}");
        assert_eq!(c[1]["content"], messages(&raw)[1]["content"], "{what}");
        let name = file.file_name().and_then(|n| n.to_str()).expect("name");
        let each = tmp.path().join(name);
        std::fs::create_dir(&each).expect("dir");
        assert_exports(&write_lines(&each, "converted.jsonl", &out), 1, &each);
        if let Some(info) = raw.get("info") {
            let d = &t["details"];
            assert_eq!(d["mini_swe_agent"]["info"], *info, "{what}");
            assert_eq!(
                d["outcome"]["native"]["exit_status"], info["exit_status"],
                "{what}"
            );
        }
    }
}

/// The corpus run of format 1.1, step by step where it matters: its submit call is unanswered
/// and listed, the exit message is kept, and `Submitted` is no verdict.
#[test]
fn a_real_format_1_1_run_ends_on_its_submit_call() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let file = logs.join("mini-swe-agent/mswea__astropy-12907.traj.json");
    let (code, out, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "astropy__astropy-12907");
    let c = t["content"].as_array().expect("content");
    let last = c.last().expect("steps");
    assert_eq!(last["class_"], "code_action");
    assert!(last["content"]
        .as_str()
        .is_some_and(|s| s.contains("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")));
    assert!(last.get("tool_call_id").is_none());
    let d = &t["details"]["mini_swe_agent"];
    assert_eq!(
        d["unanswered_calls"],
        json!([{"step": c.len() - 1, "id": "call_00_0yKPVZ7Jm6cEwsBTs4Lx0555"}])
    );
    assert_eq!(d["exit"]["role"], "exit");
    assert_eq!(d["exit"]["extra"]["exit_status"], "Submitted");
    assert_eq!(t["details"]["outcome"]["status"], "unknown");
    // Every message but the exit is a step or more; each one's extra is kept.
    let meta = d["messages"].as_array().expect("messages");
    assert_eq!(
        meta.len(),
        127,
        "64 model outputs and 63 results carry extra"
    );
    assert!(meta.iter().all(|m| m["fields"]["extra"].is_object()));
}

/// Detection: format 1 and 1.1 runs are mini-swe-agent's (format 1 used to pass for an OpenAI
/// chat); the sample's two runs map as documented.
#[test]
fn the_samples_are_detected_and_mapped() {
    let (code, out, stderr) = convert(&[&samples()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stderr.matches("detected mini-swe-agent").count(),
        2,
        "{stderr}"
    );
    assert_eq!(out.len(), 2);
    assert_eq!(validate_adp(&out), 0);
    let by_id = |id: &str| out.iter().find(|t| t["id"] == id).expect("trajectory");

    // Format 1: bash blocks, a reply with no block (a message, then the format error), and the
    // LimitsExceeded end kept in details.
    let t = by_id("last_mini_run");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "message_action",
            "text_observation",
            "code_action",
            "text_observation"
        ]
    );
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[2]["content"], "tail -c 20 notes.txt | od -c | tail -3");
    assert_eq!(
        c[2]["description"],
        "THOUGHT: First I'll look at the end of the file to confirm the missing newline."
    );
    assert_eq!(c[3]["tool_call_id"], c[2]["tool_call_id"]);
    assert_eq!(c[5]["name"], "FormatError");
    assert_eq!(c[5]["source"], "environment");
    let d = &t["details"];
    assert_eq!(
        d["mini_swe_agent"]["exit"],
        json!({"role": "user", "content": ""})
    );
    assert_eq!(
        d["outcome"],
        json!({"status": "timeout", "native": {"exit_status": "LimitsExceeded"}})
    );

    // Format 1.1: parallel calls answered by tool messages; the submit call unanswered.
    let t = by_id("slugs__slugs-12");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "code_action",
            "code_action",
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "code_action"
        ]
    );
    let c = t["content"].as_array().expect("content");
    assert_eq!(
        c[4]["description"],
        "I'll read the function and run the existing tests at the same time."
    );
    assert!(c[5].get("description").is_none_or(Value::is_null));
    assert_eq!(
        (&c[6]["tool_call_id"], &c[7]["tool_call_id"]),
        (&json!("call_Rk7b"), &json!("call_Sd3c"))
    );
    assert_eq!(
        t["details"]["mini_swe_agent"]["unanswered_calls"],
        json!([{"step": 10, "id": "call_Uw4e"}])
    );
    let dir = tempfile::tempdir().expect("dir");
    assert_exports(
        &write_lines(dir.path(), "samples.jsonl", &out),
        2,
        dir.path(),
    );
}

/// A bare list of messages (the test file of mini-swe-agent's repository) is one run: its
/// `mswea_bash_command` fences are mini-swe-agent's own, so detection picks it as `--from` does.
#[test]
fn a_bare_list_of_messages_with_mini_swe_agent_marks_is_one_run() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let file = logs.join("mini-swe-agent/mswea__test_local.traj.json");
    let (code, detected, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected mini-swe-agent"), "{stderr}");
    let (code, out, stderr) = convert(&[&file], Some("mini-swe-agent"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(detected, out);
    assert_eq!(out[0]["id"], "mswea__test_local");
    assert_eq!(
        step_classes(&out[0]),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "code_action",
            "text_observation"
        ]
    );
    assert_eq!(out[0]["content"][2]["content"], "echo 'hello world'");
    assert!(out[0]["details"].get("outcome").is_none());
}

fn chat_messages() -> Value {
    json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "assistant", "content": "There is a.txt."}
    ])
}

/// An OpenAI JSON array of messages converts as one chat; cut by the end of the file, the
/// complete messages convert and the cut one is rejected with its line.
#[test]
fn an_openai_array_of_messages_is_one_chat() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("chat.json");
    let text = serde_json::to_string_pretty(&chat_messages()).expect("json");
    std::fs::write(&path, &text).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected openai"), "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], "chat.json#0");
    assert_eq!(
        step_classes(&out[0]),
        [
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(out[0]["content"][3]["tool_call_id"], "c1");
    assert_eq!(validate_adp(&out), 0);

    // Cut inside the last message.
    let cut = &text[..text.rfind("There is").expect("last message")];
    std::fs::write(&path, cut).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1, "the complete part converts: {stderr}");
    assert_eq!(step_classes(&out[0]).len(), 4);
    // The cut message starts two lines above the cut (`{`, `"role"`, then the cut `"content"`).
    let cut_line = cut.matches('\n').count() - 1;
    assert!(
        stderr.contains(&format!("chat.json:{cut_line}: error[json-truncated]")),
        "{stderr}"
    );

    // A result for a call no message made fails the chat, pointing at the file's element.
    let mut bad = chat_messages();
    bad[3]["tool_call_id"] = json!("ghost");
    std::fs::write(&path, bad.to_string()).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(stderr.contains("/messages/3/tool_call_id"), "{stderr}");
}

/// A run cut by the end of its file is rejected with its line, not a panic; a run with no
/// messages is rejected with the reason.
#[test]
fn cut_and_empty_runs_are_rejected_with_a_reason() {
    let dir = tempfile::tempdir().expect("dir");
    let text = std::fs::read_to_string(samples().join("slugs__slugs-12.traj.json")).expect("read");
    let path = dir.path().join("cut.traj.json");
    std::fs::write(&path, &text[..text.len() / 2]).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("mini-swe-agent"), &[]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(stderr.contains("cut.traj.json:1: error["), "{stderr}");
    let path = dir.path().join("empty.traj.json");
    std::fs::write(
        &path,
        json!({"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": []}).to_string(),
    )
    .expect("write");
    let (code, _, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("error[empty-trajectory]") && stderr.contains("the run has no messages"),
        "{stderr}"
    );
}

/// A SWE-agent `.traj` with a `history` and no `trajectory` converts from the history, to the
/// steps the trajectory gives.
#[test]
fn a_swe_agent_traj_with_only_a_history_converts() {
    let sample = sample_data().join("swe-agent/tinycalc__tinycalc-7.traj");
    let mut run: Value =
        serde_json::from_slice(&std::fs::read(&sample).expect("read")).expect("json");
    let (code, full, stderr) = convert(&[&sample], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    if let Some(o) = run.as_object_mut() {
        o.remove("trajectory");
    }
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("tinycalc__tinycalc-7.traj");
    std::fs::write(&path, serde_json::to_string_pretty(&run).expect("json")).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected swe-agent"), "{stderr}");
    assert_eq!(validate_adp(&out), 0);
    let t = &out[0];
    assert_eq!(t["id"], full[0]["id"]);
    assert_eq!(step_classes(t), step_classes(&full[0]));
    // The history's results are read as the chat's (`OBSERVATION:` and the blank ends
    // removed), the trajectory's steps' as they are.
    let strip = |t: &Value| -> Vec<Value> {
        t["content"]
            .as_array()
            .expect("content")
            .iter()
            .map(|s| {
                let text = s["content"].as_str().map(str::trim);
                json!([
                    s["class_"],
                    text,
                    s["description"],
                    s["function"],
                    s["kwargs"]
                ])
            })
            .collect()
    };
    assert_eq!(strip(t), strip(&full[0]));
    let d = &t["details"]["swe_agent"];
    assert_eq!(d["demonstration_messages"], 1);
    assert_eq!(d["info"]["exit_status"], "submitted");
}

//! Codex CLI rollouts: the sample, the legacy layout, the item shapes of other CLI versions,
//! links and their failures, bad lines, and every real rollout of the corpus (tool calls in =
//! tool actions out, outputs linked, valid ADP, accepted by every SFT target).

use std::path::{Path, PathBuf};

use crate::common::{
    agent_logs, convert, files_in, json_lines, sample_data, step_classes, trajkit, validate_adp,
};
use serde_json::{json, Value};

fn sample() -> PathBuf {
    sample_data()
        .join("codex/rollout-2025-11-03T09-41-07-019a48c2-7d1e-7a30-9b52-4f0c2e6a1d88.jsonl")
}

fn write_lines(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

/// An envelope line.
fn env(kind: &str, payload: Value) -> Value {
    json!({"timestamp": "2026-01-05T10:00:00.000Z", "type": kind, "payload": payload})
}

fn meta(id: &str) -> Value {
    env(
        "session_meta",
        json!({"id": id, "cwd": "/w", "cli_version": "0.77.0"}),
    )
}

fn item(payload: Value) -> Value {
    env("response_item", payload)
}

fn user(text: &str) -> Value {
    item(
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
    )
}

fn assistant(text: &str) -> Value {
    item(
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
    )
}

fn call(name: &str, arguments: &str, id: &str) -> Value {
    item(json!({"type": "function_call", "name": name, "arguments": arguments, "call_id": id}))
}

fn output(id: &str, output: Value) -> Value {
    item(json!({"type": "function_call_output", "call_id": id, "output": output}))
}

fn convert_lines(lines: &[Value]) -> (i32, Vec<Value>, String) {
    let dir = tempfile::tempdir().expect("dir");
    let path = write_lines(dir.path(), "rollout-x.jsonl", lines);
    convert(&[&path], Some("codex"), &[])
}

#[test]
fn the_sample_is_one_trajectory_with_calls_linked_and_repeats_left_out() {
    let (code, out, stderr) = convert(&[&sample()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected codex"), "{stderr}");
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(t["id"], "019a48c2-7d1e-7a30-9b52-4f0c2e6a1d88");
    // Derived by hand from the sample: instructions, environment context, prompt; the rg
    // call and its output; the apply_patch call (described by the message before it) and its
    // output; the test run and its output; the answer.
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[0]["name"], "system");
    assert_eq!(c[1]["name"], "environment_context");
    assert_eq!(c[1]["source"], "environment");
    assert_eq!(c[2]["source"], "user");
    assert_eq!(c[3]["content"], "rg -n \"def divide\" -A3");
    assert_eq!(c[3]["reasoning_content"], "**Locating divide**");
    assert_eq!(c[3]["tool_call_id"], "call_Jx2mQh7Yw3");
    assert_eq!(c[4]["tool_call_id"], "call_Jx2mQh7Yw3");
    assert_eq!(c[4]["name"], "shell");
    assert_eq!(c[5]["function"], "apply_patch");
    assert_eq!(
        c[5]["description"],
        "I'll guard the zero divisor in ops.py."
    );
    assert!(c[5]["kwargs"]["input"]
        .as_str()
        .is_some_and(|p| p.starts_with("*** Begin Patch")));
    assert_eq!(c[6]["name"], "apply_patch");
    let d = &t["details"]["codex"];
    assert_eq!(d["session_meta"]["payload"]["cli_version"], "0.55.0");
    assert!(d["session_meta"]["payload"].get("instructions").is_none());
    assert_eq!(
        d["repeated_events"],
        json!({"user_message": 1, "agent_reasoning": 1, "agent_message": 2})
    );
    let events: Vec<&str> = d["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["payload"]["type"].as_str())
        .collect();
    assert_eq!(events, ["token_count", "task_complete"]);
    assert_eq!(d["reasoning"][0]["step"], 3);
    assert!(d["reasoning"][0]["fields"]["encrypted_content"].is_string());
    assert_eq!(d["steps"].as_array().map(Vec::len), Some(c.len()));
    assert_eq!(d["steps"][3]["line"], 8);
    let extras = d["extras"].as_array().expect("extras");
    assert!(extras.iter().any(|e| e["step"] == 3
        && e["fields"]["tool"] == "shell"
        && e["fields"]["argv_prefix"] == json!(["bash", "-lc"])
        && e["fields"]["arguments"]["timeout_ms"] == 120000));
    assert!(d.get("unanswered_calls").is_none());
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn a_legacy_rollout_of_bare_lines_is_detected_and_read() {
    let lines = [
        json!({"id": "legacy-1", "timestamp": "2025-08-20T13:20:47.060Z", "instructions": null, "git": {"branch": "main"}}),
        json!({"record_type": "state"}),
        json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "list the files"}]}),
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}),
        json!({"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"ls\",\"-la\",\"my dir\"]}", "call_id": "call_1"}),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}),
        json!({"type": "local_shell_call", "id": "lsc_1", "call_id": "call_2", "status": "completed", "action": {"type": "exec", "command": ["bash", "-lc", "wc -l a.txt"], "timeout_ms": 1000}}),
        json!({"type": "function_call_output", "call_id": "call_2", "output": {"content": "3 a.txt", "success": true}}),
        json!({"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "wc manual"}}),
        json!({"type": "message", "id": null, "role": "assistant", "content": [{"type": "output_text", "text": "a.txt has 3 lines"}]}),
    ];
    let dir = tempfile::tempdir().expect("dir");
    let path = write_lines(dir.path(), "rollout-legacy.jsonl", &lines);
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected codex"), "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "legacy-1");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["content"], "ls -la 'my dir'");
    assert_eq!(c[3]["content"], "wc -l a.txt");
    assert_eq!(c[4]["content"], "3 a.txt");
    assert_eq!(c[4]["tool_call_id"], "call_2");
    assert_eq!(c[5]["function"], "web_search");
    assert_eq!(c[5]["kwargs"]["query"], "wc manual");
    assert!(c[5].get("tool_call_id").is_none());
    let d = &t["details"]["codex"];
    assert_eq!(d["unanswered_calls"], json!([{"step": 5, "id": "ws_1"}]));
    assert_eq!(d["legacy_state"][0]["line"], 2);
    assert_eq!(d["session_meta"]["payload"]["git"]["branch"], "main");
    assert_eq!(d["reasoning"][0]["fields"]["encrypted_content"], "opaque");
    assert_eq!(d["reasoning"][0]["step"], 1);
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn the_earliest_one_document_rollout_is_read() {
    let doc = json!({
        "session": {"timestamp": "2025-06-26T00:00:00Z", "id": "doc-1", "instructions": "Be brief."},
        "items": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "prompt"}]},
            {"type": "local_shell_call", "call_id": "call-1", "status": "completed", "action": {"type": "exec", "command": ["pwd"]}},
            {"type": "local_shell_call_output", "call_id": "call-1", "output": "/w"},
            {"type": "item_of_the_future"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "answer"}]}
        ]
    });
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("rollout-2025-06-26-doc.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected codex"), "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "doc-1");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(t["content"][0]["content"], "Be brief.");
    assert_eq!(t["content"][3]["tool_call_id"], "call-1");
    assert_eq!(t["details"]["codex"]["unmapped"][0]["pointer"], "/items/3");
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn newer_items_outputs_and_unknown_lines_are_mapped_or_kept() {
    let lines = [
        meta("s-new"),
        item(
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>never</permissions instructions>"}]}),
        ),
        // A user message whose response item is missing: its event is the step.
        env(
            "event_msg",
            json!({"type": "user_message", "message": "show the png", "images": [], "kind": "plain"}),
        ),
        env(
            "event_msg",
            json!({"type": "agent_reasoning", "text": "Plan: run it"}),
        ),
        call(
            "exec_command",
            "{\"cmd\":\"python plot.py\",\"yield_time_ms\":1000}",
            "c1",
        ),
        output(
            "c1",
            json!([{"type": "input_text", "text": "saved"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]),
        ),
        call("shell_command", "{\"command\":\"ls out\"}", "c2"),
        output(
            "c2",
            json!([{"type": "input_image", "image_url": "data:image/png;base64,BBBB"}]),
        ),
        call("mcp__fs__read", "not json", "c3"),
        output("c3", json!("denied")),
        item(json!({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}})),
        env(
            "compacted",
            json!({"message": "summary", "replacement_history": []}),
        ),
        env("mystery", json!({"x": 1})),
        assistant("done"),
    ];
    let (code, out, stderr) = convert_lines(&lines);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "code_action",
            "image_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[0]["name"], "developer");
    assert_eq!(c[1]["content"], "show the png");
    assert_eq!(c[1]["source"], "user");
    assert_eq!(c[2]["content"], "python plot.py");
    assert_eq!(c[2]["reasoning_content"], "Plan: run it");
    assert_eq!(c[3]["content"], "saved");
    assert_eq!(c[5]["content"], "data:image/png;base64,BBBB");
    assert_eq!(c[5]["tool_call_id"], "c2");
    assert_eq!(c[6]["kwargs"], json!({"arguments": "not json"}));
    let d = &t["details"]["codex"];
    let reasons: Vec<&str> = d["unmapped"]
        .as_array()
        .expect("unmapped")
        .iter()
        .filter_map(|u| u["reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].contains("image of a tool output"));
    assert!(reasons[1].contains("\"mystery\" line"));
    // The work-tree snapshot is bookkeeping: kept, with its pointer, and counted as a line.
    assert_eq!(d["bookkeeping"][0]["type"], "ghost_snapshot");
    assert_eq!(d["bookkeeping"][0]["pointer"], "/payload");
    assert_eq!(d["bookkeeping"][0]["value"]["ghost_commit"]["id"], "abc");
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["where"], "details.codex");
    assert_eq!(
        (&left["lines"], &left["values"], &left["blocks"]),
        (&json!(1), &json!(1), &json!(1))
    );
    assert_eq!(left["first"]["line"], 13);
    assert_eq!(d["compactions"][0]["step"], 8);
    assert!(d["extras"]
        .as_array()
        .expect("extras")
        .iter()
        .any(|e| e["step"] == 6 && e["fields"]["arguments_error"].is_string()));
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn calls_without_outputs_and_outputs_without_calls_are_listed() {
    // The session ends on a call: it keeps no link id and is listed.
    let (code, out, stderr) = convert_lines(&[
        meta("s-end"),
        user("go"),
        call("shell", "{\"command\":[\"make\"]}", "c1"),
        output("c1", json!("ok")),
        output("c9", json!("stray")),
        call("update_plan", "{\"plan\":[]}", "c2"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = &t["content"];
    assert!(c[4].get("tool_call_id").is_none());
    let d = &t["details"]["codex"];
    assert_eq!(d["unanswered_calls"], json!([{"step": 4, "id": "c2"}]));
    assert_eq!(d["orphan_outputs"][0]["id"], "c9");
    assert_eq!(d["orphan_outputs"][0]["step"], 3);
    assert_eq!(validate_adp(&out), 0);
    // A call no output answers, followed by the next prompt, is answered as Codex answers it
    // when it sends the history again (`aborted`), marked synthetic: else ADP would take the
    // prompt for the call's result.
    let (code, out, stderr) = convert_lines(&[
        meta("s-cut"),
        user("go"),
        call("shell", "{\"command\":[\"sleep\",\"99\"]}", "c1"),
        user("stop, do it differently"),
        assistant("ok"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = &t["content"];
    assert_eq!(c[2]["content"], "aborted");
    assert_eq!(c[2]["name"], "shell");
    assert_eq!(c[2]["tool_call_id"], "c1");
    assert_eq!(c[1]["tool_call_id"], "c1");
    assert_eq!(c[3]["content"], "stop, do it differently");
    let d = &t["details"]["codex"];
    assert_eq!(d["synthetic_outputs"], json!([{"step": 2, "id": "c1"}]));
    assert_eq!(
        d["steps"][2],
        json!({"line": 3, "timestamp": null, "synthetic": true})
    );
    assert!(d.get("unanswered_calls").is_none());
    assert_eq!(validate_adp(&out), 0);
    // A call without an id cannot be answered: followed by an observation, it is refused,
    // naming the lines.
    let (code, out, stderr) = convert_lines(&[
        meta("s-noid"),
        user("go"),
        item(json!({"type": "function_call", "name": "shell", "arguments": "{}"})),
        user("stop"),
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(stderr.contains(":4: error[session-structure]"), "{stderr}");
    assert!(stderr.contains("line 3 has no output"), "{stderr}");
}

#[test]
fn a_cut_last_line_is_rejected_alone_and_the_rest_converts() {
    let dir = tempfile::tempdir().expect("dir");
    let lines = [meta("s-cut"), user("hi"), assistant("hello")];
    let path = write_lines(dir.path(), "rollout-cut.jsonl", &lines);
    let mut text = std::fs::read_to_string(&path).expect("read");
    text.push_str("{\"timestamp\":\"2026-01-05T10:00:01Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"mess");
    std::fs::write(&path, text).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 1, "{stderr}");
    assert_eq!(
        step_classes(&out[0]),
        ["text_observation", "message_action"]
    );
    assert!(stderr.contains(":4: error[json-truncated]"), "{stderr}");
}

#[test]
fn a_rollout_with_no_step_or_no_id_is_rejected_with_the_reason() {
    let (code, out, stderr) = convert_lines(&[
        meta("s-empty"),
        env("turn_context", json!({"model": "gpt-5"})),
        env("event_msg", json!({"type": "task_started"})),
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(stderr.contains("error[empty-trajectory]"), "{stderr}");
    assert!(
        stderr.contains("1 session_meta, 1 turn_context, 1 event_msg"),
        "{stderr}"
    );
    // Without a session id the file name is the id; from stdin there is none.
    let lines = [env("session_meta", json!({"cwd": "/w"})), user("hi")];
    let (code, out, stderr) = convert_lines(&lines);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["id"], "rollout-x");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = trajkit()
        .args(["convert", "--from", "codex", "-"])
        .write_stdin(text)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[missing-id]"), "{stderr}");
}

/// A message.
fn message(role: &str, text: &str) -> Value {
    item(
        json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}),
    )
}

#[test]
fn a_message_between_a_call_and_its_output_is_placed_after_the_output() {
    let (code, out, stderr) = convert_lines(&[
        meta("s-between"),
        user("run the tests"),
        call("shell_command", "{\"command\":\"make test\"}", "c1"),
        // The user stopped the turn: Codex wrote its notice and the next turn's context before
        // the call's output.
        message(
            "developer",
            "<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>",
        ),
        message(
            "user",
            "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
        ),
        output("c1", json!("aborted by user")),
        user("only the unit tests"),
        // Two calls of one response, a notice between them and their outputs.
        call("shell_command", "{\"command\":\"make unit\"}", "c2"),
        call("shell_command", "{\"command\":\"make lint\"}", "c3"),
        message(
            "developer",
            "<permissions instructions>never</permissions instructions>",
        ),
        output("c3", json!("lint ok")),
        output("c2", json!("unit ok")),
        assistant("Unit tests and lint pass."),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = t["content"].as_array().expect("content");
    let summary: Vec<(String, String)> = c
        .iter()
        .map(|s| {
            let class = s["class_"].as_str().unwrap_or_default().to_owned();
            let what = s["name"]
                .as_str()
                .or(s["tool_call_id"].as_str())
                .unwrap_or_default()
                .to_owned();
            (class, what)
        })
        .collect();
    let expected = [
        ("text_observation", ""),
        ("code_action", "c1"),
        ("text_observation", "shell_command"),
        ("text_observation", "turn_aborted"),
        ("text_observation", "environment_context"),
        ("text_observation", ""),
        ("code_action", "c2"),
        ("code_action", "c3"),
        ("text_observation", "shell_command"),
        ("text_observation", "shell_command"),
        ("text_observation", "developer"),
        ("message_action", ""),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(summary, expected);
    assert_eq!(c[2]["tool_call_id"], "c1");
    assert_eq!(c[2]["content"], "aborted by user");
    assert_eq!(c[8]["tool_call_id"], "c3");
    assert_eq!(c[9]["tool_call_id"], "c2");
    // Each step keeps its line; the moved ones say so.
    let d = &t["details"]["codex"];
    let lines: Vec<u64> = d["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["line"].as_u64())
        .collect();
    assert_eq!(lines, [2, 3, 6, 4, 5, 7, 8, 9, 11, 12, 10, 13]);
    let moved: Vec<usize> = d["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .enumerate()
        .filter(|(_, s)| s["moved"] == true)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(moved, [3, 4, 10]);
    assert_eq!(validate_adp(&out), 0);
    for target in ["openai", "hf", "sharegpt"] {
        let (code, rules) = export(&out, target);
        assert_eq!((code, rules), (0, vec![]), "--to {target}");
    }
}

#[test]
fn new_line_and_item_types_and_forked_sessions_are_kept_and_counted() {
    // A Codex Desktop rollout (no turn_context) of a forked session: the first session_meta
    // is the session's, the parent's follows.
    let parent = env(
        "session_meta",
        json!({"id": "s-parent", "cwd": "/w", "originator": "Codex Desktop"}),
    );
    let lines = [
        env(
            "session_meta",
            json!({"id": "s-fork", "forked_from_id": "s-parent", "cwd": "/w", "originator": "Codex Desktop"}),
        ),
        parent,
        env("world_state", json!({"full": true, "state": {"cwd": "/w"}})),
        user("find the parser tool"),
        item(
            json!({"type": "tool_search_call", "call_id": "t1", "execution": "client", "arguments": {"query": "parser"}}),
        ),
        item(
            json!({"type": "tool_search_output", "call_id": "t1", "status": "completed", "execution": "client", "tools": [{"name": "parse"}]}),
        ),
        call("mcp__docs__parse", "{\"path\":\"a.md\"}", "c1"),
        // An output object whose body is a list of content items.
        output(
            "c1",
            json!({"body": [{"type": "input_text", "text": "parsed"}, {"type": "encrypted_content", "encrypted_content": "zz"}], "success": true}),
        ),
        item(
            json!({"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"}),
        ),
        item(
            json!({"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "Done!"}]}),
        ),
        item(
            json!({"type": "agent_message", "author": "worker", "recipient": "root", "content": [{"type": "input_text", "text": "subtask finished"}]}),
        ),
        env(
            "inter_agent_communication_metadata",
            json!({"trigger_turn": false}),
        ),
        item(json!({"type": "ghost_snapshot", "ghost_commit": {"id": "g"}})),
        item(json!({"type": "warp_drive", "x": 1})),
        env("teleport", json!({"x": 1})),
        env(
            "event_msg",
            json!({"type": "thread_settings_applied", "thread_id": "s-fork"}),
        ),
        assistant("The parser works."),
    ];
    let (code, out, stderr) = convert_lines(&lines);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "s-fork");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["function"], "tool_search");
    assert_eq!(c[1]["kwargs"], json!({"query": "parser"}));
    assert_eq!(c[2]["tool_call_id"], "t1");
    assert_eq!(c[4]["content"], "parsed");
    assert_eq!(c[4]["tool_call_id"], "c1");
    assert_eq!(c[6]["content"], "Done!");
    assert_eq!(c[7]["name"], "agent_message");
    assert_eq!(c[7]["content"], "subtask finished");
    let d = &t["details"]["codex"];
    assert_eq!(d["session_meta"]["payload"]["id"], "s-fork");
    assert_eq!(d["more_session_meta"][0]["payload"]["id"], "s-parent");
    assert_eq!(d["more_session_meta"][0]["line"], 2);
    let kept: Vec<(&str, &str)> = d["bookkeeping"]
        .as_array()
        .expect("bookkeeping")
        .iter()
        .filter_map(|b| Some((b["type"].as_str()?, b["pointer"].as_str()?)))
        .collect();
    assert_eq!(
        kept,
        [
            ("world_state", "/payload"),
            ("inter_agent_communication_metadata", "/payload"),
            ("ghost_snapshot", "/payload")
        ]
    );
    let unmapped: Vec<(u64, &str)> = d["unmapped"]
        .as_array()
        .expect("unmapped")
        .iter()
        .filter_map(|u| Some((u["line"].as_u64()?, u["pointer"].as_str()?)))
        .collect();
    assert_eq!(
        unmapped,
        [(8, "/payload/output/body/1"), (14, "/payload"), (15, "")]
    );
    assert!(d["extras"]
        .as_array()
        .expect("extras")
        .iter()
        .any(|e| e["step"] == 4 && e["fields"]["success"] == true));
    assert_eq!(d["events"][0]["payload"]["type"], "thread_settings_applied");
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(
        left,
        &json!({"lines": 3, "values": 2, "blocks": 1, "messages": {"in": 5, "kept": 5},
            "where": "details.codex",
            "first": {"line": 14, "pointer": "/payload", "reason": "a \"warp_drive\" response item is not mapped"}})
    );
    assert_eq!(validate_adp(&out), 0);
}

/// The response items of a rollout, enveloped or bare.
fn items(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .expect("read")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| match (v["type"].as_str(), v.get("payload")) {
            (Some("response_item"), Some(p)) => Some(p.clone()),
            (Some(_), None) => Some(v),
            _ => None,
        })
        .collect()
}

/// `trajkit export --to TARGET` of `trajectories`: the exit code and the rules of the rejects.
fn export(trajectories: &[Value], target: &str) -> (i32, Vec<String>) {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("in.jsonl");
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&input, text).expect("write");
    let rejects = dir.path().join("rejects.jsonl");
    let out = trajkit()
        .args(["export", "-q", "--to", target])
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("out"))
        .arg("--rejects")
        .arg(&rejects)
        .output()
        .expect("runs");
    let rules = json_lines(&std::fs::read(&rejects).unwrap_or_default())
        .iter()
        .filter_map(|r| r["diagnostics"][0]["rule"].as_str().map(str::to_owned))
        .collect();
    (out.status.code().expect("exit code"), rules)
}

/// Every real rollout: each tool call is one tool action, each output is linked to its call,
/// the trajectory validates, and every SFT target takes it (a session with no assistant turn
/// has nothing to train on: it is filtered, not rejected).
#[test]
fn every_call_of_the_real_rollouts_is_one_tool_action_and_every_output_is_linked() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let files = files_in(&logs.join("codex"));
    assert!(!files.is_empty());
    for file in files {
        let name = file.display().to_string();
        let (code, out, stderr) = convert(&[&file], None, &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(stderr.contains("detected codex"), "{name}: {stderr}");
        assert_eq!(out.len(), 1, "{name}");
        let t = &out[0];
        let raw = items(&file);
        let calls = raw
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some(
                        "function_call"
                            | "custom_tool_call"
                            | "local_shell_call"
                            | "web_search_call"
                            | "tool_search_call"
                    )
                )
            })
            .count();
        let classes = step_classes(t);
        let actions = classes
            .iter()
            .filter(|c| matches!(**c, "api_action" | "code_action"))
            .count();
        assert_eq!(calls, actions, "{name}: tool calls in, tool actions out");
        let steps = t["content"].as_array().expect("content");
        for o in raw.iter().filter(|i| {
            matches!(
                i["type"].as_str(),
                Some(
                    "function_call_output"
                        | "custom_tool_call_output"
                        | "local_shell_call_output"
                        | "tool_search_output"
                )
            )
        }) {
            let id = &o["call_id"];
            let linked: Vec<&Value> = steps.iter().filter(|s| s["tool_call_id"] == *id).collect();
            assert_eq!(linked.len(), 2, "{name}: call and output of {id}");
            assert!(linked[0]["class_"]
                .as_str()
                .is_some_and(|c| c.ends_with("_action")));
            assert!(linked[1]["class_"]
                .as_str()
                .is_some_and(|c| c.ends_with("_observation")));
        }
        assert_eq!(validate_adp(&out), 0, "{name}");
        for target in ["openai", "hf", "sharegpt"] {
            let (code, rules) = export(&out, target);
            assert_eq!((code, rules), (0, vec![]), "{name} --to {target}");
        }
    }
}

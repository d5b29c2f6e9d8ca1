//! Pi sessions (also OpenClaw's and OMP's): the corpus's real files, and small sessions of
//! our own for the tree (branches), compactions, shell commands the user ran, extension
//! messages, images, aborted messages, unanswered calls and version-1 linear files.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links, trajkit, validate_adp,
};

/// A session file of `lines` (the header first) in `dir`, named as Pi names them.
fn session(dir: &Path, lines: &[Value]) -> PathBuf {
    let path = dir.join("2026-03-01T10-00-00-000Z_5b0c8a52-1f7e-4c1e-9d7a-0a1b2c3d4e5f.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

fn header() -> Value {
    json!({"type": "session", "version": 3, "id": "5b0c8a52-1f7e-4c1e-9d7a-0a1b2c3d4e5f",
        "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/dev/shop"})
}

fn entry(id: &str, parent: Option<&str>, message: Value) -> Value {
    json!({"type": "message", "id": id, "parentId": parent,
        "timestamp": "2026-03-01T10:00:01.000Z", "message": message})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
}

fn assistant(content: Value, stop: &str) -> Value {
    json!({"role": "assistant", "content": content, "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
            "cost": {"input": 0.01, "output": 0.02, "cacheRead": 0, "cacheWrite": 0, "total": 0.03}},
        "stopReason": stop, "timestamp": 2})
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
}

fn result(id: &str, name: &str, text: &str) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3})
}

/// Converts `lines` with `--from auto`: the one trajectory, checked valid and detected as Pi.
fn converted(lines: &[Value]) -> Value {
    let dir = tempfile::tempdir().expect("dir");
    let path = session(dir.path(), lines);
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected pi"), "{err}");
    assert_eq!(out.len(), 1, "{err}");
    assert_eq!(validate_adp(&out), 0);
    out[0].clone()
}

#[test]
fn the_corpus_sessions_convert_with_every_call_linked() {
    let Some(root) = agent_logs() else { return };
    let pi = root.join("pi/teich__example_pi_session.jsonl");
    let (code, out, err) = convert(&[&pi], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected pi"), "{err}");
    let t = &out[0];
    assert_eq!(t["id"], "4293a326-81ca-4327-b450-85275e1ca645");
    let (actions, linked) = tool_actions_and_links(t);
    assert_eq!(actions, 144);
    assert!(linked);
    let steps = t["content"].as_array().expect("content");
    let ids = steps
        .iter()
        .filter(|s| s["tool_call_id"].is_string())
        .count();
    assert_eq!(ids, 2 * 144, "every call and its result carry the link");
    // The two aborted messages: their error is observed.
    let errors: Vec<&Value> = steps.iter().filter(|s| s["name"] == "aborted").collect();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["content"], "Operation aborted");
    // The image a tool result holds is kept, from the environment.
    assert!(steps.iter().any(|s| s["class_"] == "image_observation"
        && s["source"] == "environment"
        && s["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("data:image/"))));
    let d = &t["details"]["pi"];
    assert!(d["name"]
        .as_str()
        .is_some_and(|n| n.starts_with("Issue: Prompts")));
    assert_eq!(d["names"].as_array().map(Vec::len), Some(2));
    assert_eq!(d["session"]["cwd"], "/Users/badlogic/workspaces/pi-mono");
    assert_eq!(d["error_results"].as_array().map(Vec::len), Some(6));
    assert_eq!(d["stop_reasons"]["aborted"], 2);
    assert!(d["usage"]["cost"].as_f64().is_some_and(|c| c > 0.0));
    assert!(
        t["details"]["source"].get("left_out").is_none() || {
            let l = &t["details"]["source"]["left_out"];
            l.get("lines").is_none() && l.get("values").is_none()
        }
    );
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "pi corpus");

    // OpenClaw writes the same format: its extension state is kept in details, not as steps.
    let claw = root.join("openclaw/teich__example_openclaw_session.jsonl");
    let (code, out, err) = convert(&[&claw], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected pi"), "{err}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        ["text_observation", "message_action", "text_observation"]
    );
    assert!(t["content"][1]["reasoning_content"]
        .as_str()
        .is_some_and(|r| r.contains("BOOTSTRAP")));
    let d = &t["details"]["pi"];
    assert_eq!(d["custom"][0]["customType"], "model-snapshot");
    assert_eq!(d["blank_texts"], 1);
    assert_eq!(d["thinking_levels"][0]["thinkingLevel"], "low");
}

#[test]
fn the_conversation_is_the_path_to_the_last_entry() {
    let t = converted(&[
        header(),
        json!({"type": "model_change", "id": "m0", "parentId": null, "timestamp": "t",
            "provider": "anthropic", "modelId": "claude-sonnet-4-5"}),
        entry("u1", Some("m0"), user("list the files")),
        entry(
            "a1",
            Some("u1"),
            assistant(
                json!([{"type": "thinking", "thinking": "ls will do"},
                call("c1", "bash", json!({"command": "ls"}))]),
                "toolUse",
            ),
        ),
        entry("r1", Some("a1"), result("c1", "bash", "src\nCargo.toml")),
        // The first attempt at the next prompt, abandoned with /tree.
        entry("u2", Some("r1"), user("delete everything")),
        entry(
            "a2",
            Some("u2"),
            assistant(
                json!([call("c2", "bash", json!({"command": "rm -rf ."}))]),
                "toolUse",
            ),
        ),
        entry("r2", Some("a2"), result("c2", "bash", "")),
        json!({"type": "branch_summary", "id": "b1", "parentId": "r1", "timestamp": "t",
            "fromId": "r2", "summary": "The user tried deleting the files, then went back."}),
        entry("u3", Some("b1"), user("read Cargo.toml")),
        entry(
            "a3",
            Some("u3"),
            assistant(
                json!([{"type": "text", "text": "Reading it."},
                call("c3", "read", json!({"path": "Cargo.toml"}))]),
                "toolUse",
            ),
        ),
        entry("r3", Some("a3"), result("c3", "read", "[package]")),
        entry(
            "a4",
            Some("r3"),
            assistant(json!([{"type": "text", "text": "A Rust package."}]), "stop"),
        ),
        json!({"type": "label", "id": "l1", "parentId": "a4", "timestamp": "t",
            "targetId": "u3", "label": "good"}),
        json!({"type": "session_info", "id": "s1", "parentId": "l1", "timestamp": "t",
            "name": "files"}),
    ]);
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["content"], "ls");
    assert_eq!(c[1]["reasoning_content"], "ls will do");
    assert_eq!(c[1]["tool_call_id"], "c1");
    assert_eq!(c[2]["tool_call_id"], "c1");
    // The abandoned branch's summary is what the model saw of it.
    assert_eq!(c[3]["name"], "branch_summary");
    assert_eq!(c[3]["source"], "environment");
    assert_eq!(c[5]["function"], "read");
    assert_eq!(c[5]["description"], "Reading it.");
    let d = &t["details"]["pi"];
    assert_eq!(d["branches_left_out"], json!(["u2", "a2", "r2"]));
    assert_eq!(d["branch_summaries"][0]["fromId"], "r2");
    assert_eq!(
        d["labels"][0],
        json!({"id": "l1", "targetId": "u3", "label": "good"})
    );
    assert_eq!(d["name"], "files");
    assert_eq!(d["model_changes"][0]["modelId"], "claude-sonnet-4-5");
    assert_eq!(d["usage"]["totalTokens"], 45);
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 3);
    assert_eq!(left["messages"], json!({"in": 11, "kept": 8}));
}

#[test]
fn a_compaction_is_marked_where_it_applies() {
    let t = converted(&[
        header(),
        entry("u1", None, user("first task")),
        entry(
            "a1",
            Some("u1"),
            assistant(json!([{"type": "text", "text": "done"}]), "stop"),
        ),
        entry("u2", Some("a1"), user("second task")),
        entry(
            "a2",
            Some("u2"),
            assistant(json!([{"type": "text", "text": "done too"}]), "stop"),
        ),
        json!({"type": "compaction", "id": "k1", "parentId": "a2", "timestamp": "t",
            "summary": "## Goal\nTwo tasks, both done.", "firstKeptEntryId": "u2",
            "tokensBefore": 50000, "details": {"readFiles": [], "modifiedFiles": ["a.rs"]}}),
        entry("u3", Some("k1"), user("third task")),
        entry(
            "a3",
            Some("u3"),
            assistant(json!([{"type": "text", "text": "on it"}]), "stop"),
        ),
    ]);
    // Every message of the path stays a step, in order.
    assert_eq!(t["content"].as_array().map(Vec::len), Some(6));
    let k = &t["details"]["pi"]["compactions"][0];
    assert_eq!(k["step"], 4);
    assert_eq!(k["kept_from_step"], 2);
    assert_eq!(k["tokensBefore"], 50000);
    assert_eq!(k["firstKeptEntryId"], "u2");
    assert!(k["summary"]
        .as_str()
        .is_some_and(|s| s.starts_with("## Goal")));
    assert_eq!(k["details"]["modifiedFiles"][0], "a.rs");
}

#[test]
fn shell_commands_extension_messages_and_images() {
    let t = converted(&[
        header(),
        entry(
            "u1",
            None,
            json!({"role": "user", "timestamp": 1, "content": [
                {"type": "text", "text": "what is in this screenshot?"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}),
        ),
        entry(
            "x1",
            Some("u1"),
            json!({"role": "bashExecution", "command": "git status", "output": "clean",
                "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 2}),
        ),
        entry(
            "x2",
            Some("x1"),
            json!({"role": "bashExecution", "command": "cat .env", "output": "SECRET=1",
                "exitCode": 0, "cancelled": false, "truncated": false,
                "excludeFromContext": true, "timestamp": 3}),
        ),
        json!({"type": "custom_message", "id": "cm", "parentId": "x2", "timestamp": "t",
            "customType": "reminder", "content": "Run the tests before you finish.",
            "display": false, "details": {"rule": 7}}),
        json!({"type": "custom", "id": "cs", "parentId": "cm", "timestamp": "t",
            "customType": "todo-state", "data": {"open": 2}}),
        entry(
            "a1",
            Some("cs"),
            assistant(
                json!([call("c1", "read", json!({"path": "shot.png"}))]),
                "toolUse",
            ),
        ),
        entry(
            "r1",
            Some("a1"),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": false,
                "timestamp": 4, "content": [{"type": "image", "data": "R0lGOD", "mimeType": "image/gif"}],
                "details": {"bytes": 6}}),
        ),
        entry(
            "a2",
            Some("r1"),
            assistant(json!([{"type": "text", "text": "A terminal."}]), "stop"),
        ),
    ]);
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "image_observation",
            "code_action",
            "text_observation",
            "code_action",
            "text_observation",
            "text_observation",
            "api_action",
            "image_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["content"], "data:image/png;base64,iVBORw0KGgo=");
    assert_eq!(c[1]["source"], "user");
    assert_eq!(c[2]["content"], "git status");
    assert_eq!(c[3]["content"], "clean");
    assert_eq!(c[2]["tool_call_id"], c[3]["tool_call_id"]);
    assert_eq!(c[6]["name"], "reminder");
    assert_eq!(c[6]["source"], "environment");
    assert_eq!(c[8]["tool_call_id"], "c1");
    assert_eq!(c[8]["content"], "data:image/gif;base64,R0lGOD");
    let d = &t["details"]["pi"];
    assert_eq!(d["bash_executions"][1]["excludeFromContext"], true);
    assert_eq!(d["custom_messages"][0]["details"]["rule"], 7);
    assert_eq!(d["custom"][0]["data"]["open"], 2);
    assert_eq!(
        d["result_details"][0],
        json!({"step": 8, "details": {"bytes": 6}})
    );
    assert!(t["details"]["source"].get("left_out").is_none());
    assert_every_sft_target_accepts(&[t], "pi fixture");
}

#[test]
fn aborted_messages_and_unanswered_calls() {
    let t = converted(&[
        header(),
        entry("u1", None, user("fix the bug")),
        // Interrupted while streaming: the call never ran.
        entry("a1", Some("u1"), {
            let mut m = assistant(
                json!([{"type": "text", "text": "Editing."},
                    call("c1", "edit", json!({"path": "a.rs", "oldText": "x", "newText": "y"}))]),
                "aborted",
            );
            m["errorMessage"] = json!("Operation aborted");
            m
        }),
        entry("u2", Some("a1"), user("go on")),
        entry("a2", Some("u2"), {
            let mut m = assistant(json!([]), "error");
            m["errorMessage"] = json!("overloaded_error");
            m["responseId"] = json!("resp-7");
            m
        }),
        entry("u3", Some("a2"), user("again")),
        entry(
            "a3",
            Some("u3"),
            assistant(
                json!([call(
                    "c3",
                    "bash",
                    json!({"command": "cargo test", "timeout": 60})
                )]),
                "toolUse",
            ),
        ),
    ]);
    // The session ends on calls: one answered, the other not (its result is Pi's, as the
    // result of the other follows it).
    let cut = converted(&[
        header(),
        entry("u1", None, user("look")),
        entry(
            "a1",
            Some("u1"),
            assistant(
                json!([
                    call("x1", "read", json!({"path": "a"})),
                    call("x2", "read", json!({"path": "b"}))
                ]),
                "toolUse",
            ),
        ),
        entry("r2", Some("a1"), result("x2", "read", "b's text")),
    ]);
    assert_eq!(cut["content"][3]["tool_call_id"], "x2");
    assert_eq!(cut["content"][4]["tool_call_id"], "x1");
    assert_eq!(cut["content"][4]["content"], "No result provided");
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "text_observation",
            "text_observation",
            "api_action"
        ]
    );
    let c = &t["content"];
    // The call gets the answer Pi gives the model for it, then the error is observed.
    assert_eq!(c[1]["tool_call_id"], "c1");
    assert_eq!(c[1]["description"], "Editing.");
    assert_eq!(c[2]["tool_call_id"], "c1");
    assert_eq!(c[2]["content"], "No result provided");
    assert_eq!(c[3]["name"], "aborted");
    assert_eq!(c[3]["content"], "Operation aborted");
    assert_eq!(c[5]["name"], "error");
    assert_eq!(c[5]["content"], "overloaded_error");
    // A bash call with more than its command is an api action; at the end it stays unlinked.
    assert_eq!(c[7]["function"], "bash");
    assert!(c[7].get("tool_call_id").is_none());
    let d = &t["details"]["pi"];
    assert_eq!(
        d["unanswered_calls"],
        json!([{"step": 1, "id": "c1", "result_step": 2}, {"step": 7, "id": "c3", "result_step": null}])
    );
    assert_eq!(
        d["errors"][1],
        json!({"step": 5, "line": 5, "stop_reason": "error"})
    );
    assert_eq!(
        d["stop_reasons"],
        json!({"aborted": 1, "error": 1, "toolUse": 1})
    );
    assert_every_sft_target_accepts(&[t], "pi fixture");
}

#[test]
fn a_version_1_file_is_one_linear_conversation() {
    let t = converted(&[
        json!({"type": "session", "id": "0d1e2f3a-0000-4000-8000-000000000001",
            "timestamp": "2025-11-20T10:00:00.000Z", "cwd": "/home/dev/shop",
            "provider": "anthropic", "modelId": "claude-sonnet-4-5", "thinkingLevel": "off"}),
        json!({"type": "message", "timestamp": "t", "message": user("count the lines")}),
        json!({"type": "message", "timestamp": "t", "message": assistant(
            json!([call("c1", "bash", json!({"command": "wc -l *.rs"}))]), "toolUse")}),
        json!({"type": "message", "timestamp": "t", "message": result("c1", "bash", "42 total")}),
        json!({"type": "thinking_level_change", "timestamp": "t", "thinkingLevel": "high"}),
        json!({"type": "compaction", "timestamp": "t", "summary": "Counted lines.",
            "firstKeptEntryIndex": 3, "tokensBefore": 1000}),
        json!({"type": "message", "timestamp": "t", "message": assistant(
            json!([{"type": "text", "text": "42 lines."}]), "stop")}),
    ]);
    assert_eq!(t["id"], "0d1e2f3a-0000-4000-8000-000000000001");
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(t["content"][1]["tool_call_id"], "c1");
    let d = &t["details"]["pi"];
    assert_eq!(d["session"]["modelId"], "claude-sonnet-4-5");
    assert_eq!(d["compactions"][0]["kept_from_step"], 2);
    assert_eq!(d["compactions"][0]["step"], 3);
    assert_eq!(
        d["thinking_levels"][0],
        json!({"step": 3, "thinkingLevel": "high"})
    );
    assert!(t["details"]["source"].get("left_out").is_none());
}

#[test]
fn other_files_are_refused_and_other_readers_never_write_an_empty_trajectory() {
    let dir = tempfile::tempdir().expect("dir");
    // A Claude Code line given to the Pi reader: no session header.
    let claude = dir.path().join("claude.jsonl");
    std::fs::write(
        &claude,
        "{\"type\":\"user\",\"sessionId\":\"s\",\"uuid\":\"u\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .expect("write");
    let (code, out, err) = convert(&[&claude], Some("pi"), &[]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert!(err.contains("not a Pi session"), "{err}");
    // A Pi session given to every other reader: refused or read, never an empty trajectory.
    let pi = session(
        dir.path(),
        &[
            header(),
            entry("u1", None, user("hi")),
            entry(
                "a1",
                Some("u1"),
                assistant(json!([{"type": "text", "text": "hello"}]), "stop"),
            ),
        ],
    );
    let listed = trajkit().arg("formats").output().expect("runs");
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    assert!(names.len() > 10, "{names:?}");
    for name in names.iter().filter(|n| *n != "pi") {
        let (_, out, _) = convert(&[&pi], Some(name), &[]);
        for t in &out {
            assert!(
                t["content"].as_array().is_some_and(|c| !c.is_empty()),
                "--from {name}: {t}"
            );
        }
    }
}

#[test]
fn the_sample_converts() {
    let sample = sample_data().join("pi");
    let (code, out, err) = convert(&[&sample], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected pi"), "{err}");
    assert_eq!(out.len(), 1);
    let (actions, linked) = tool_actions_and_links(&out[0]);
    assert!(actions >= 2 && linked);
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "pi sample");
}

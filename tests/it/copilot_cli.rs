//! GitHub Copilot CLI sessions (`events.jsonl`): the corpus's shape fixture, the bundled
//! sample, and sessions of our own for the streaming events the log leaves out, images,
//! errors, truncations and compactions, subagents, calls no result answered, and detection.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links, validate_adp,
};

/// The session fixture of our own: a system prompt, a user message with an image, parallel
/// calls answered out of order, a failed call, a truncation, a subagent, a compaction, a call
/// no result answered and an image a tool returned.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot-cli/events.jsonl")
}

/// A session file of `lines` in `dir`, where Copilot CLI keeps it
/// (`session-state/<id>/events.jsonl`).
fn session(dir: &Path, lines: &[Value]) -> PathBuf {
    let folder = dir.join("session-state/5e0b1c2d-0000-4000-8000-00000000abcd");
    std::fs::create_dir_all(&folder).expect("dir");
    let path = folder.join("events.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

fn event(kind: &str, data: Value) -> Value {
    json!({"type": kind, "data": data, "id": format!("e-{kind}"),
        "timestamp": "2026-05-01T08:00:00.000Z", "parentId": null})
}

/// Converts `lines` with `--from auto`: the trajectories, checked valid and detected.
fn converted(lines: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("dir");
    let path = session(dir.path(), lines);
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected copilot-cli"), "{err}");
    assert_eq!(validate_adp(&out), 0);
    out
}

#[test]
fn the_corpus_fixture_and_the_sample_convert_with_their_calls_linked() {
    if let Some(root) = agent_logs() {
        let file = root.join("copilot-cli/letta__copilot-cli_tool-calls_input.jsonl");
        let (code, out, err) = convert(&[&file], None, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("detected copilot-cli"), "{err}");
        let t = &out[0];
        assert_eq!(t["id"], "copilot-session-1");
        assert_eq!(
            step_classes(t),
            ["text_observation", "api_action", "text_observation"]
        );
        let c = &t["content"];
        // The file has no user.message: the prompt its userPromptSubmitted hook saw stands
        // for it.
        assert_eq!(
            (&c[0]["content"], &c[0]["source"]),
            (&json!("Refresh the landing page."), &json!("user"))
        );
        assert_eq!(c[1]["function"], "read_file");
        assert_eq!(c[1]["description"], "I will inspect the page.");
        assert_eq!(
            c[1]["reasoning_content"],
            "I should inspect the current page first."
        );
        assert_eq!(c[2]["content"], "Current landing page");
        assert_eq!(tool_actions_and_links(t), (1, true));
        let d = &t["details"]["copilot_cli"];
        assert_eq!(d["hooks"][0]["hookType"], "userPromptSubmitted");
        assert_eq!(d["hooks"][0]["prompt_step"], 0);
        assert_eq!(d["session"]["context"]["cwd"], "/workspace/copilot-demo");
        assert_eq!(validate_adp(&out), 0);
    }
    let sample = sample_data().join("copilot-cli/events.jsonl");
    let (code, out, err) = convert(&[&sample], None, &[]);
    assert_eq!(code, 0, "{err}");
    let t = &out[0];
    assert_eq!(t["id"], "3f6c2a9e-8d41-4b7a-a0c5-6e2d9b1f4c77");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "message_action",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    // A shell call of its command and a description is bash code with that description; the
    // text before it stays a message, with the reasoning.
    assert_eq!(
        t["content"][2]["content"],
        "grep -n add_argument weather/cli.py"
    );
    assert_eq!(t["content"][2]["description"], "Find the options");
    assert!(t["content"][1]["reasoning_content"].is_string());
    assert_eq!(tool_actions_and_links(t), (2, true));
    let d = &t["details"]["copilot_cli"];
    assert_eq!(d["usage"]["message_output_tokens"], 144);
    assert_eq!(d["shutdowns"][0]["codeChanges"]["linesAdded"], 1);
    assert_eq!(d["skipped_events"]["assistant.turn_start"], 1);
    assert_every_sft_target_accepts(&out, "copilot-cli sample");
}

#[test]
fn a_session_with_subagents_images_and_compactions_converts_whole() {
    let (code, out, err) = convert(&[&fixture()], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(validate_adp(&out), 0);
    assert_eq!(out.len(), 2, "the session and its subagent");
    let t = &out[0];
    assert_eq!(t["id"], "7d1e0c52-5b8a-4c57-9a51-0f2b6f1e9a10");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "image_observation",
            "message_action",
            "code_action",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action",
            "api_action",
            "text_observation",
            "image_observation",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(
        (&c[0]["name"], &c[0]["source"]),
        (&json!("system"), &json!("environment"))
    );
    // The user's attached image, from the user.
    assert_eq!(c[2]["source"], "user");
    assert!(c[2]["content"]
        .as_str()
        .is_some_and(|u| u.starts_with("data:image/png;base64,")));
    // Text before a command with its own description is a message, with the reasoning.
    assert_eq!(c[3]["content"], "I'll run the tests first.");
    assert_eq!(
        c[3]["reasoning_content"],
        "Run the tests to see the failure."
    );
    assert_eq!(c[4]["description"], "Run the test suite");
    // Results answer their calls by id, whatever their order; a failure's message is its text.
    assert_eq!(
        (&c[6]["tool_call_id"], &c[6]["name"]),
        (&json!("toolu_02"), &json!("view"))
    );
    assert_eq!(c[7]["tool_call_id"], "toolu_01");
    assert_eq!(c[7]["content"], "1 failing: add() keeps duplicates");
    assert_eq!(c[10]["name"], "compaction_summary");
    // The edit no result answered, followed by another call, is unlinked; the image a tool
    // gave the model follows its result.
    assert!(c[11].get("tool_call_id").is_none_or(Value::is_null));
    assert_eq!(c[14]["source"], "environment");
    let d = &t["details"]["copilot_cli"];
    assert_eq!(d["error_results"], json!(["toolu_01"]));
    assert_eq!(
        d["unanswered_calls"],
        json!([{"step": 11, "id": "toolu_04", "empty_result": false}])
    );
    assert_eq!(d["truncations"][0]["messagesRemovedDuringTruncation"], 10);
    assert_eq!(d["truncations"][0]["step"], 8);
    assert_eq!(d["compactions"][0]["event"], "start");
    assert_eq!(d["compactions"][1]["summary_step"], 10);
    assert_eq!(d["usage"]["inputTokens"], 1200);
    assert_eq!(d["usage"]["opaque_reasoning"], 1);
    assert_eq!(d["models"], json!(["claude-sonnet-4.6"]));
    assert_eq!(
        d["subagent_trajectories"],
        json!([{"agent_id": "sub-1",
            "trajectory_id": "7d1e0c52-5b8a-4c57-9a51-0f2b6f1e9a10/agent-sub-1",
            "spawned_by": "toolu_03"}])
    );
    // Streaming events and turn markers are counted as left out, with their types.
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 5);
    assert_eq!(left["messages"], json!({"in": 7, "kept": 7}));
    assert_eq!(d["skipped_events"]["assistant.usage"], 1);

    let sub = &out[1];
    assert_eq!(
        sub["id"],
        "7d1e0c52-5b8a-4c57-9a51-0f2b6f1e9a10/agent-sub-1"
    );
    assert_eq!(
        step_classes(sub),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(
        sub["details"]["copilot_cli"]["agent"]["spawned_by"],
        "toolu_03"
    );
    assert_eq!(sub["details"]["source"]["native_ids"]["agent_id"], "sub-1");
    assert_every_sft_target_accepts(&out, "copilot-cli fixture");
}

#[test]
fn a_call_no_result_answered_before_an_observation_gets_an_empty_one() {
    let out = converted(&[
        event("session.start", json!({"sessionId": "s-1", "version": 1})),
        event("user.message", json!({"content": "list the files"})),
        event(
            "assistant.message",
            json!({"messageId": "m1", "content": "", "toolRequests": [
                {"toolCallId": "c2", "name": "view", "arguments": "{\"path\": \"README.md\"}"},
                {"toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"}}
            ]}),
        ),
        event(
            "tool.execution_complete",
            json!({"toolCallId": "c2", "success": true, "result": {"content": "# Readme"}}),
        ),
        event("abort", json!({"reason": "user_initiated"})),
        event("user.message", json!({"content": "stop"})),
    ]);
    let t = &out[0];
    assert_eq!(t["id"], "s-1");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "api_action",
            "code_action",
            "text_observation",
            "text_observation",
            "text_observation"
        ]
    );
    let c = &t["content"];
    // String arguments are parsed.
    assert_eq!(c[1]["kwargs"], json!({"path": "README.md"}));
    // c1, directly followed by c2's result, is answered by an empty result put right after it.
    assert_eq!(
        (
            &c[2]["tool_call_id"],
            &c[3]["tool_call_id"],
            &c[3]["content"]
        ),
        (&json!("c1"), &json!("c1"), &json!(""))
    );
    assert_eq!(c[4]["tool_call_id"], "c2");
    let d = &t["details"]["copilot_cli"];
    assert_eq!(
        d["unanswered_calls"],
        json!([{"step": 2, "id": "c1", "empty_result": true}])
    );
    // Step numbers after the inserted result moved with their steps.
    assert_eq!(d["tool_results"][0]["step"], 4);
    assert_eq!(d["aborts"][0]["step"], 5);
    assert_eq!(d["user_messages"][1]["step"], 5);
}

#[test]
fn older_logs_mark_subagent_events_by_their_parent_call_and_name_no_start() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("events.jsonl");
    let lines = [
        json!({"type": "user.message", "data": {"content": "find the bug"}, "id": "u1", "timestamp": "t"}),
        json!({"type": "assistant.message", "data": {"content": "", "toolRequests": [
            {"toolCallId": "t1", "name": "task", "arguments": {"prompt": "search"}}]}, "id": "a1", "timestamp": "t"}),
        json!({"type": "assistant.message", "data": {"content": "Searching.", "parentToolCallId": "t1"}, "id": "a2", "timestamp": "t"}),
        json!({"type": "tool.execution_complete", "data": {"toolCallId": "t1", "success": true,
            "result": {"content": "found it"}}, "id": "r1", "timestamp": "t"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{err}");
    // No session.start: the session is named after its folder.
    let folder = dir
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .expect("name");
    assert_eq!(out[0]["id"], folder);
    assert_eq!(out[1]["id"], format!("{folder}/agent-t1"));
    assert_eq!(out[1]["details"]["copilot_cli"]["agent"]["agent_id"], "t1");
    assert_eq!(step_classes(&out[1]), ["message_action"]);
}

#[test]
fn detection_claims_events_and_declines_near_misses() {
    let dir = tempfile::tempdir().expect("dir");
    // A session.start without its session id comes close, and says why not.
    let file = dir.path().join("events.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"session.start\",\"data\":{\"startTime\":\"t\"},\"id\":\"e\"}\n",
    )
    .expect("write");
    let (code, _, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("closest: copilot-cli (") && stderr.contains("sessionId"),
        "{stderr}"
    );
    // A file of events with no message, call or result is refused, not written empty.
    std::fs::write(
        &file,
        "{\"type\":\"session.start\",\"data\":{\"sessionId\":\"s\"}}\n{\"type\":\"session.info\",\"data\":{\"infoType\":\"x\",\"message\":\"y\"}}\n",
    )
    .expect("write");
    let (code, out, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("empty-trajectory"), "{stderr}");
}

/// The legacy session document of our own (`history-session-state/<id>.json`, the format
/// before `events.jsonl`): OpenAI-style `chatMessages` with an image, parallel calls, a custom
/// tool, arguments that are not JSON and a call no result answered; a `timeline` with failed,
/// rejected and unrecorded calls and an error notice.
fn legacy_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/copilot-cli/history-session-state.json")
}

#[test]
fn a_legacy_session_document_converts_from_its_chat_with_the_timeline_in_details() {
    let (code, out, err) = convert(&[&legacy_fixture()], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected copilot-cli"), "{err}");
    assert_eq!(validate_adp(&out), 0);
    let t = &out[0];
    assert_eq!(t["id"], "0c9d8e7f-2222-4000-8000-00000000beef");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "image_observation",
            "code_action",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action",
        ]
    );
    let c = &t["content"];
    assert_eq!(c[0]["name"], "system");
    assert_eq!(c[2]["content"], "data:image/png;base64,iVBORw0KGgo=");
    assert_eq!(
        (&c[3]["content"], &c[3]["description"]),
        (&json!("make 2>&1 | tail -5"), &json!("Run the build"))
    );
    assert_eq!(c[5]["tool_call_id"], "toolu_01");
    assert_eq!(c[6]["tool_call_id"], "toolu_02");
    // A custom tool's free-form input, the turn's text its description.
    assert_eq!(c[7]["function"], "apply_patch");
    assert!(c[7]["kwargs"]["input"]
        .as_str()
        .is_some_and(|i| i.contains("missing.c")));
    assert_eq!(
        c[7]["description"],
        "The Makefile lists missing.c; I will remove it."
    );
    assert_eq!(c[10]["tool_call_id"], "toolu_03");
    // Arguments that are not JSON: kept unmapped; the call no result answered gets an empty one.
    assert_eq!(c[8]["kwargs"], json!({}));
    assert_eq!(
        (&c[9]["tool_call_id"], &c[9]["content"]),
        (&json!("toolu_04"), &json!(""))
    );
    assert_eq!(tool_actions_and_links(t), (4, true));
    let d = &t["details"]["copilot_cli"];
    assert_eq!(d["session"]["startTime"], "2025-09-12T14:20:00.000Z");
    assert_eq!(d["models"], json!(["gpt-5"]));
    assert_eq!(d["timestamps"]["last"], "2025-09-12T14:20:30.000Z");
    assert_eq!(d["error_results"], json!(["toolu_01", "toolu_02"]));
    assert_eq!(d["tool_results"][0]["result"], json!({"type": "failure"}));
    assert_eq!(d["tool_results"][0]["toolTitle"], "Run the build");
    // A completion the chat does not hold keeps its log.
    assert_eq!(d["tool_results"][3]["not_in_chat"], true);
    assert_eq!(d["tool_results"][3]["result"]["log"], "ok");
    assert_eq!(d["unanswered_calls"][0]["id"], "toolu_04");
    assert_eq!(d["notices"][0]["text"], "Rate limited, retrying");
    assert_eq!(d["skipped_events"]["timeline:copilot"], 2);
    assert_eq!(
        d["unmapped"][0]["pointer"],
        "/chatMessages/5/tool_calls/1/function/arguments"
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!((&left["lines"], &left["values"]), (&json!(4), &json!(1)));
    assert_eq!(left["messages"], json!({"in": 5, "kept": 5}));
    assert_every_sft_target_accepts(&out, "copilot-cli legacy");
}

#[test]
fn a_legacy_session_imported_into_an_event_log_is_read_where_its_event_comes() {
    let legacy: Value =
        serde_json::from_str(&std::fs::read_to_string(legacy_fixture()).expect("read"))
            .expect("json");
    let out = converted(&[
        event(
            "session.start",
            json!({"sessionId": "s-new", "version": 1, "producer": "copilot-agent"}),
        ),
        event(
            "session.import_legacy",
            json!({"legacySession": legacy, "importTime": "2025-10-20T09:00:00.000Z",
                "sourceFile": "/home/u/.copilot/history-session-state/0c9d8e7f.json"}),
        ),
        event("user.message", json!({"content": "and now the tests?"})),
        event(
            "assistant.message",
            json!({"content": "They pass.", "toolRequests": []}),
        ),
    ]);
    let t = &out[0];
    assert_eq!(t["id"], "s-new");
    let c = t["content"].as_array().expect("steps");
    assert_eq!(c.len(), 14);
    assert_eq!(c[0]["content"], "You are a terminal coding assistant.");
    assert_eq!(c[12]["content"], "and now the tests?");
    assert_eq!(tool_actions_and_links(t), (4, true));
    let d = &t["details"]["copilot_cli"];
    let import = &d["other_events"][0];
    assert_eq!(import["type"], "session.import_legacy");
    assert_eq!(
        import["legacy_session"]["sessionId"],
        "0c9d8e7f-2222-4000-8000-00000000beef"
    );
    assert!(import.get("legacySession").is_none());
    assert_eq!(
        d["unmapped"][0]["pointer"],
        "/data/legacySession/chatMessages/5/tool_calls/1/function/arguments"
    );
}

//! Anthropic Messages API conversations: the bundled sample (requests with a system prompt,
//! tools, thinking, errors, images and a tool the API runs), a file that is one bare list of
//! messages (Cline's task history shape), detection against `openai`, other formats given to
//! `--from anthropic`, and the corpus's real Cline task.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, files_in, sample_data, step_classes,
    tool_actions_and_links, validate_adp,
};

fn sample() -> PathBuf {
    sample_data().join("anthropic/messages.jsonl")
}

/// Writes `messages` as one JSON array (a task's `api_conversation_history.json`).
fn write_history(dir: &Path, task: &str, messages: &Value) -> PathBuf {
    let folder = dir.join(task);
    std::fs::create_dir_all(&folder).expect("dir");
    let path = folder.join("api_conversation_history.json");
    std::fs::write(&path, serde_json::to_vec_pretty(messages).expect("json")).expect("write");
    path
}

#[test]
fn the_sample_requests_convert_with_linked_calls_reasoning_and_system() {
    let (code, out, stderr) = convert(&[&sample()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected anthropic"), "{stderr}");
    assert_eq!(out.len(), 2);
    let t = &out[0];
    assert_eq!(t["id"], "msgs-fix-parser-1");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "code_action",
            "api_action",
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[0]["name"], "system");
    assert_eq!(
        c[2]["description"],
        "Let me run the tests to see the failure."
    );
    assert_eq!(
        c[2]["reasoning_content"],
        "I should look at the parser and run its tests first."
    );
    assert_eq!(c[2]["tool_call_id"], c[3]["tool_call_id"]);
    assert_eq!(c[3]["name"], "bash");
    assert_eq!(c[5]["function"], "edit_file");
    assert_eq!(c[7]["tool_call_id"], "toolu_03");
    assert_eq!(c[10]["content"], "Nice. Is that all?");
    assert_eq!(
        t["details"]["anthropic"]["error_results"],
        json!(["toolu_01"])
    );
    assert_eq!(t["details"]["anthropic"]["model"], "claude-sonnet-4-5");
    assert_eq!(t["available_custom_tools"], json!(["bash", "edit_file"]));
    let research = &out[1];
    assert_eq!(
        step_classes(research),
        [
            "text_observation",
            "image_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &research["content"];
    assert_eq!(c[0]["content"], "Answer briefly and cite your sources.");
    assert!(c[1]["content"]
        .as_str()
        .is_some_and(|u| u.starts_with("data:image/png;base64,")));
    assert_eq!(c[3]["function"], "web_search");
    assert_eq!(c[3]["description"], "I'll look that up.");
    assert_eq!(c[4]["tool_call_id"], "srvtoolu_01");
    let pointers: Vec<&str> = research["details"]["anthropic"]["block_fields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["pointer"].as_str())
        .collect();
    assert_eq!(pointers, ["/system/0", "/messages/1/content/3"]);
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "anthropic sample");
}

/// A task history (a bare JSON array, the first message text only) is this format's: every
/// call is kept, a call whose result came back as Cline's user text (`[name for 'x'] Result:`,
/// no `tool_result`) is linked to it, the trajectory is named after the task folder.
#[test]
fn a_bare_list_of_messages_is_one_conversation_with_every_call() {
    let dir = tempfile::tempdir().expect("tmp");
    let history = write_history(
        dir.path(),
        "1769000000001",
        &json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<task>\nList the files.\n</task>"},
                {"type": "text", "text": "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"}
            ], "ts": 1},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "List them.", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "execute_command", "input": {"command": "ls", "requires_approval": false}}
            ], "modelInfo": {"modelId": "m"}},
            {"role": "user", "content": [{"type": "text", "text": "[execute_command for 'ls'] Result:\na.txt"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_2", "name": "attempt_completion", "input": {"result": "One file."}}
            ]}
        ]),
    );
    let (code, out, stderr) = convert(&[&history], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected anthropic"), "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "1769000000001");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action"
        ]
    );
    assert_eq!(t["content"][2]["reasoning_content"], "List them.");
    assert_eq!(
        t["content"][3]["content"],
        "[execute_command for 'ls'] Result:\na.txt"
    );
    assert_eq!(t["content"][3]["name"], "execute_command");
    assert_eq!(t["content"][3]["tool_call_id"], "toolu_1");
    let notes = &t["details"]["anthropic"];
    assert_eq!(
        notes["text_results"],
        json!([{"step": 2, "id": "toolu_1", "pointer": "/messages/2/content/0"}])
    );
    assert_eq!(
        notes["unanswered_calls"],
        json!([{"step": 4, "id": "toolu_2"}])
    );
    assert_eq!(
        t["details"]["anthropic"]["message_fields"][0]["fields"],
        json!({"ts": 1})
    );
    assert_eq!(tool_actions_and_links(t), (2, true));
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "task history");

    // JSON lines of the same messages read the same.
    let lines = dir.path().join("history.jsonl");
    let messages: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&history).expect("read")).expect("array");
    let text: String = messages.iter().map(|m| format!("{m}\n")).collect();
    std::fs::write(&lines, text).expect("write");
    let (code, again, stderr) = convert(&[&lines], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected anthropic"), "{stderr}");
    assert_eq!(again[0]["content"], t["content"]);
}

/// Older Cline versions write a result's header as a text block of its own and the result in
/// the next one; a text naming another tool, or a header followed by the environment details,
/// is not taken for the result of the call.
#[test]
fn cline_text_results_are_linked_by_the_tool_name_in_either_layout() {
    let dir = tempfile::tempdir().expect("tmp");
    let call = |id: &str, name: &str| {
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": name, "input": {"path": "a.txt"}}
        ]})
    };
    let history = write_history(
        dir.path(),
        "1769000000002",
        &json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nRead a.txt\n</task>"}]},
            call("toolu_1", "read_file"),
            {"role": "user", "content": [
                {"type": "text", "text": "[read_file for 'a.txt'] Result:"},
                {"type": "text", "text": "hello"},
                {"type": "text", "text": "<environment_details>\nx\n</environment_details>"}
            ]},
            call("toolu_2", "read_file"),
            {"role": "user", "content": [
                {"type": "text", "text": "[write_to_file for 'a.txt'] Result:\ndone"}
            ]},
            call("toolu_3", "list_files"),
            {"role": "user", "content": [
                {"type": "text", "text": "[list_files] Result:"},
                {"type": "text", "text": "<environment_details>\nx\n</environment_details>"}
            ]}
        ]),
    );
    let (code, out, stderr) = convert(&[&history], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = &t["content"];
    assert_eq!(c[2]["content"], "[read_file for 'a.txt'] Result:\nhello");
    assert_eq!(c[2]["tool_call_id"], "toolu_1");
    assert_eq!(
        c[3]["content"],
        "<environment_details>\nx\n</environment_details>"
    );
    // The second call's text names another tool: an empty result, then the text as the user's.
    assert_eq!(c[5]["content"], "");
    assert_eq!(c[5]["tool_call_id"], "toolu_2");
    assert_eq!(c[6]["content"], "[write_to_file for 'a.txt'] Result:\ndone");
    assert!(c[6]["tool_call_id"].is_null());
    // A header alone, then the environment details: the header is the (empty) result.
    assert_eq!(c[8]["content"], "[list_files] Result:");
    assert_eq!(c[8]["tool_call_id"], "toolu_3");
    let notes = &t["details"]["anthropic"];
    let steps: Vec<&Value> = notes["text_results"]
        .as_array()
        .expect("text results")
        .iter()
        .map(|r| &r["step"])
        .collect();
    assert_eq!(steps, [&json!(1), &json!(7)]);
    assert_eq!(notes["unanswered_calls"][0]["id"], "toolu_2");
    assert_eq!(tool_actions_and_links(t), (3, true));
    assert_eq!(validate_adp(&out), 0);
}

/// A folder of Cline tasks converts whole: each task's conversation is read, and the files
/// Cline keeps beside it (UI log, context edits, metadata) are skipped with one notice saying
/// why; given as an input itself, such a file is refused as before.
#[test]
fn a_folder_of_cline_tasks_reads_each_conversation_and_says_what_it_skips() {
    let dir = tempfile::tempdir().expect("tmp");
    let tasks = dir.path().join("tasks");
    for task in ["1769000000010", "1769000000011"] {
        write_history(
            &tasks,
            task,
            &json!([
                {"role": "user", "content": [{"type": "text", "text": "<task>\nHi\n</task>"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]}
            ]),
        );
        let folder = tasks.join(task);
        std::fs::write(
            folder.join("ui_messages.json"),
            r#"[{"ts": 1, "type": "say", "say": "text", "text": "Hi"}]"#,
        )
        .expect("write");
        std::fs::write(
            folder.join("task_metadata.json"),
            r#"{"files_in_context": [], "model_usage": []}"#,
        )
        .expect("write");
    }
    let (code, out, stderr) = convert(&[&tasks], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&Value> = out.iter().map(|t| &t["id"]).collect();
    assert_eq!(ids, [&json!("1769000000010"), &json!("1769000000011")]);
    let skipped: Vec<&str> = stderr.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    assert!(
        skipped[0].contains("and 3 more: skipped: a Cline task's"),
        "{stderr}"
    );
    let ui = tasks.join("1769000000010/ui_messages.json");
    let (code, out, stderr) = convert(&[&ui], None, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        out.is_empty() && stderr.contains("no format claims it"),
        "{stderr}"
    );
}

/// Text-only chats stay OpenAI's; files of other formats are not claimed; given to
/// `--from anthropic` they are refused, never written empty.
#[test]
fn other_formats_are_not_claimed_and_refused_when_forced() {
    let dir = tempfile::tempdir().expect("tmp");
    let plain = dir.path().join("plain.json");
    std::fs::write(
        &plain,
        r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]"#,
    )
    .expect("write");
    let (code, _, stderr) = convert(&[&plain], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected openai"), "{stderr}");
    let ui = dir.path().join("ui_messages.json");
    std::fs::write(
        &ui,
        r#"[{"ts": 1, "type": "say", "say": "text", "text": "hi"}, {"ts": 2, "type": "ask", "ask": "tool", "text": "{}"}]"#,
    )
    .expect("write");
    let (code, out, stderr) = convert(&[&ui], None, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        out.is_empty() && !stderr.contains("detected anthropic"),
        "{stderr}"
    );
    for file in [
        sample_data().join("openai/chats.jsonl"),
        sample_data().join("codex"),
        sample_data().join("claude-code/7f3c2a10-0000-4000-8000-000000000001.jsonl"),
        sample_data().join("sharegpt/conversations.json"),
        ui,
    ] {
        let (code, out, stderr) = convert(&[&file], Some("anthropic"), &[]);
        assert_ne!(code, 0, "{}: {stderr}", file.display());
        assert!(out.is_empty(), "{}: {out:?}", file.display());
    }
}

/// The corpus's real Cline task: a JSON array of 94 messages whose results are user text with
/// no ids. Every one of its 47 calls is kept, each but the last (`attempt_completion`, never
/// answered) linked to the text that answers it; its UI log is not this format's.
#[test]
fn the_real_cline_task_history_keeps_every_call() {
    let Some(root) = agent_logs() else { return };
    let cline = root.join("cline");
    let files = files_in(&cline);
    let history = files
        .iter()
        .find(|f| {
            f.to_string_lossy()
                .ends_with("api_conversation_history.json")
        })
        .expect("the Cline history is in the corpus");
    let raw: Value = serde_json::from_slice(&std::fs::read(history).expect("read")).expect("JSON");
    let calls = raw
        .as_array()
        .expect("an array of messages")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_use")
        .count();
    assert_eq!(calls, 47);
    let (code, out, stderr) = convert(&[history], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected anthropic"), "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(tool_actions_and_links(&out[0]), (calls, true));
    let notes = &out[0]["details"]["anthropic"];
    assert_eq!(notes["text_results"].as_array().map(Vec::len), Some(46));
    assert_eq!(notes["unanswered_calls"].as_array().map(Vec::len), Some(1));
    let left = &out[0]["details"]["source"]["left_out"];
    assert!(left.is_null(), "{left}");
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "cline");
    for ui in files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with("ui_messages.json"))
    {
        let (_, _, stderr) = convert(&[ui], None, &[]);
        assert!(!stderr.contains("detected anthropic"), "{stderr}");
    }
}

/// A Cline task's UI log joins its conversation's trajectory: each `api_req_started`
/// message's tokens, cost, model and failure in `details.anthropic.cline.api_requests`, their
/// sums in `totals`, the UI's other messages counted by kind; a UI log that is not JSON is
/// named with why, and the conversation still converts.
#[test]
fn a_cline_tasks_ui_log_joins_its_api_request_costs_to_the_conversation() {
    let dir = tempfile::tempdir().expect("tmp");
    let tasks = dir.path().join("tasks");
    let history = json!([
        {"role": "user", "content": [{"type": "text", "text": "<task>\nFix the test\n</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    ]);
    write_history(&tasks, "1769000000020", &history);
    write_history(&tasks, "1769000000021", &history);
    let model = json!({"providerId": "anthropic", "modelId": "claude-sonnet-4-5", "mode": "act"});
    let req = |tokens_in: u64, cost: f64, extra: Value| {
        let mut text = json!({"request": "<task>\nFix the test\n</task>", "tokensIn": tokens_in,
            "tokensOut": 20, "cacheWrites": 100, "cacheReads": 0, "cost": cost});
        if let (Some(t), Some(e)) = (text.as_object_mut(), extra.as_object()) {
            t.extend(e.clone());
        }
        json!({"ts": 1769000001000u64 + tokens_in, "type": "say", "say": "api_req_started",
            "text": text.to_string(), "conversationHistoryIndex": -1, "modelInfo": model})
    };
    let ui = json!([
        {"ts": 1769000000500u64, "type": "say", "say": "text", "text": "Fix the test", "conversationHistoryIndex": -1},
        req(5, 0.25, json!({"cancelReason": "streaming_failed", "streamingFailedMessage": "overloaded"})),
        req(7, 0.5, json!({})),
        {"ts": 1769000002000u64, "type": "say", "say": "reasoning", "text": "thinking", "partial": false},
        {"ts": 1769000003000u64, "type": "ask", "ask": "completion_result", "text": ""}
    ]);
    std::fs::write(tasks.join("1769000000020/ui_messages.json"), ui.to_string()).expect("write");
    std::fs::write(tasks.join("1769000000021/ui_messages.json"), "[{\"ts\": 1,").expect("write");
    let (code, out, stderr) = convert(&[&tasks], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(validate_adp(&out), 0);
    let c = &out[0]["details"]["anthropic"]["cline"];
    assert_eq!(
        c["totals"],
        json!({"tokensIn": 12, "tokensOut": 40, "cacheWrites": 200, "cacheReads": 0,
            "cost": 0.75, "requests": 2})
    );
    let first = &c["api_requests"][0];
    assert_eq!(first["cancelReason"], "streaming_failed");
    assert_eq!(
        (&first["history_index"], &first["model"]),
        (&json!(-1), &model)
    );
    assert!(first.get("request").is_none());
    assert_eq!(c["models"], json!([model]));
    assert_eq!(
        c["timestamps"],
        json!({"first": 1769000000500u64, "last": 1769000003000u64})
    );
    assert_eq!(
        c["ui_message_kinds"],
        json!({"say:text": 1, "say:reasoning": 1, "ask:completion_result": 1})
    );
    // The steps are the conversation's, as without the UI log.
    assert_eq!(
        step_classes(&out[0]),
        ["text_observation", "message_action"]
    );
    let broken = &out[1]["details"]["anthropic"]["cline"];
    assert!(
        broken["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("not JSON")),
        "{broken}"
    );
    // The corpus's task: 47 API requests.
    if let Some(root) = agent_logs() {
        let task = dir.path().join("corpus-task");
        std::fs::create_dir_all(&task).expect("dir");
        for (from, to) in [
            (
                "online-card__api_conversation_history.json",
                "api_conversation_history.json",
            ),
            ("online-card__ui_messages.json", "ui_messages.json"),
        ] {
            std::fs::copy(root.join("cline").join(from), task.join(to)).expect("copy");
        }
        let (code, out, stderr) = convert(&[&task], None, &[]);
        assert_eq!(code, 0, "{stderr}");
        let c = &out[0]["details"]["anthropic"]["cline"];
        assert_eq!(c["totals"]["requests"], 47);
        assert_eq!(c["api_requests"].as_array().map(Vec::len), Some(47));
        assert!(c["totals"]["cost"]
            .as_f64()
            .is_some_and(|x| (x - 1.0546).abs() < 1e-3));
    }
}

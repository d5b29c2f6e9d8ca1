//! Factory Droid sessions: the corpus's real session, and small sessions of our own
//! (`tests/fixtures/droid/`) for hook rows, todo lists between a call and its result, images,
//! the settings sidecar, a cancelled call whose `tool_use` was never written, reused ids,
//! compactions (inside a session, and the session `/compress` starts) and unknown lines.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links, validate_adp,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/droid")
        .join(name)
}

/// Converts `file` with `--from auto`: the one trajectory, checked valid and detected as Droid.
fn converted(file: &Path) -> Value {
    let (code, out, err) = convert(&[file], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected droid"), "{err}");
    assert_eq!(out.len(), 1, "{err}");
    assert_eq!(validate_adp(&out), 0);
    out[0].clone()
}

fn len(v: &Value) -> Option<usize> {
    v.as_array().map(Vec::len)
}

#[test]
fn the_corpus_session_converts_with_every_answered_call_linked() {
    let Some(root) = agent_logs() else { return };
    let file = root.join("droid/teich__example_droid_session.jsonl");
    let t = converted(&file);
    assert_eq!(t["id"], "8534a502-106a-4227-a227-55fac3265fcd");
    let (actions, linked) = tool_actions_and_links(&t);
    assert_eq!(actions, 22);
    assert!(linked);
    let steps = t["content"].as_array().expect("content");
    assert_eq!(steps.len(), 65);
    // 21 calls answered, each with its result; the last call (the session ends on it) is not.
    let ids = steps
        .iter()
        .filter(|s| s["tool_call_id"].is_string())
        .count();
    assert_eq!(ids, 2 * 21);
    let last = steps.last().expect("a step");
    assert_eq!(last["function"], "Execute");
    assert!(last.get("tool_call_id").is_none_or(Value::is_null));
    // Every assistant message's thinking is the reasoning of its text or call.
    let reasoned = steps
        .iter()
        .filter(|s| {
            s["reasoning_content"]
                .as_str()
                .is_some_and(|r| !r.is_empty())
        })
        .count();
    assert_eq!(reasoned, 28);
    // The first message is the injected context (four system reminders), kept as user text.
    assert!(steps[0]["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("<system-reminder>")));
    assert_eq!(steps[4]["content"], "where are you");
    // The screenshot a Read result holds follows the result, from the environment.
    assert_eq!(steps[22]["tool_call_id"], "Read_5");
    assert_eq!(steps[23]["class_"], "image_observation");
    assert_eq!(steps[23]["source"], "environment");
    // The cancelled TodoWrite's result: its call was never written.
    assert_eq!(
        steps[11]["content"],
        "Error: Tool execution cancelled by user"
    );
    let d = &t["details"]["droid"];
    assert_eq!(d["session"]["owner"], "calebfahlgren");
    assert_eq!(d["unlinked_results"][0]["id"], "TodoWrite_1");
    assert_eq!(d["unlinked_results"][0]["line"], 10);
    assert_eq!(d["unanswered_calls"][0]["id"], "Execute_22");
    assert_eq!(d["reused_ids"][0]["line"], 10);
    assert_eq!(d["reused_ids"][0]["first_line"], 7);
    assert_eq!(
        d["error_results"],
        serde_json::json!(["TodoWrite_1", "Glob_7"])
    );
    assert_eq!(len(&d["messages"]), Some(61));
    assert_eq!(d["messages"][0]["message"]["visibility"], "llm_only");
    assert_eq!(d["thinking_copies"], 28);
    // Each todo list stands between its TodoWrite call and the call's result.
    assert_eq!(len(&d["todos"]), Some(3));
    for todo in d["todos"].as_array().into_iter().flatten() {
        let step = todo["step"].as_u64().expect("step") as usize;
        assert_eq!(steps[step - 1]["function"], "TodoWrite");
        assert_eq!(steps[step]["name"], "TodoWrite");
    }
    assert_eq!(
        d["timestamps"]["first"], "2026-06-18T14:13:21.754Z",
        "{}",
        d["timestamps"]
    );
    // Every message is kept and every line read: nothing is left out.
    assert!(t["details"]["source"].get("left_out").is_none());
    assert_every_sft_target_accepts(std::slice::from_ref(&t), "droid corpus");
}

#[test]
fn a_session_keeps_calls_reasoning_images_todos_hooks_and_its_settings() {
    let t = converted(&fixture("session.jsonl"));
    assert_eq!(t["id"], "3f6c1d2e-8a41-4b7e-9c55-2d0e7f1a9b33");
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "image_observation",
            "message_action",
            "image_observation",
            "text_observation",
            "api_action",
        ]
    );
    let c = &t["content"];
    // The text before a call is its description, the thinking its reasoning.
    assert_eq!(c[3]["function"], "Execute");
    assert_eq!(c[3]["kwargs"]["command"], "cargo test date");
    assert_eq!(c[3]["kwargs"]["riskLevel"], "low");
    assert_eq!(c[3]["description"], "Running the test.");
    assert_eq!(c[3]["reasoning_content"], "I should run the test first.");
    assert_eq!(c[4]["tool_call_id"], "Execute_0");
    assert_eq!(
        c[10]["reasoning_content"],
        "The week starts on Sunday in the fixture."
    );
    // The user's own image, from the user; the result's, from the environment.
    assert_eq!(c[9]["source"], "environment");
    assert_eq!(c[11]["source"], "user");
    // The last call: no result, no link.
    assert!(c[13].get("tool_call_id").is_none_or(Value::is_null));

    let d = &t["details"]["droid"];
    assert_eq!(d["session"]["cwd"], "/home/dev/calendar");
    assert_eq!(d["settings"]["model"], "custom:Kimi-K2-0");
    assert_eq!(d["settings"]["tokenUsage"]["inputTokens"], 5120);
    assert_eq!(d["models"], serde_json::json!(["custom:Kimi-K2-0"]));
    assert_eq!(d["todos"][0]["line"], 9);
    assert_eq!(d["todos"][0]["step"], 6);
    assert_eq!(c[5]["function"], "TodoWrite");
    assert_eq!(d["turn_outcomes"][0]["reason"], "completed");
    assert_eq!(d["turn_outcomes"][0]["step"], 11);
    assert_eq!(d["session_ends"][0]["step"], 14);
    // Hook runs are message rows without content: no step, kept and counted.
    assert_eq!(len(&d["hooks"]), Some(3));
    assert_eq!(d["hooks"][1]["message"]["hookToolCallId"], "Execute_0");
    assert_eq!(d["hooks"][1]["step"], 4);
    assert_eq!(d["error_results"], serde_json::json!(["Execute_0"]));
    assert_eq!(d["unanswered_calls"][0]["step"], 13);
    // The reasoning Droid copies into chatCompletionReasoningContent is counted, not kept twice.
    assert_eq!(d["thinking_copies"], 5);
    assert!(d["messages"][2]["message"]
        .get("chatCompletionReasoningContent")
        .is_none());
    assert_eq!(d["messages"][2]["message"]["modelId"], "custom:Kimi-K2-0");
    assert_eq!(d["messages"][2]["parentId"], "u1");
    // A thinking block's signature and duration are kept by pointer and line.
    assert_eq!(d["block_fields"][0]["line"], 5);
    assert_eq!(d["block_fields"][0]["pointer"], "/message/content/0");
    assert_eq!(d["block_fields"][0]["fields"]["durationMs"], 1200);
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 3);
    assert_eq!(left["messages"]["in"], 11);
    assert_eq!(left["messages"]["kept"], 11);
}

#[test]
fn a_cancelled_call_leaves_an_unlinked_result_and_a_reused_id() {
    let t = converted(&fixture("cancelled.jsonl"));
    let c = &t["content"];
    assert_eq!(c[1]["tool_call_id"], "LS_0");
    assert_eq!(c[2]["tool_call_id"], "LS_0");
    assert_eq!(c[4]["content"], "Error: Tool execution cancelled by user");
    assert!(c[4].get("tool_call_id").is_none_or(Value::is_null));
    let d = &t["details"]["droid"];
    assert_eq!(d["unlinked_results"][0]["id"], "TodoWrite_1");
    assert_eq!(d["unlinked_results"][0]["step"], 4);
    assert_eq!(d["reused_ids"][0]["id"], "c3");
    assert_eq!(d["messages"][4]["message"]["visibility"], "user_only");
    assert_eq!(d["error_results"], serde_json::json!(["TodoWrite_1"]));
}

#[test]
fn compactions_are_marked_and_unknown_lines_counted() {
    let t = converted(&fixture("compacted.jsonl"));
    assert_eq!(step_classes(&t).len(), 7);
    let d = &t["details"]["droid"];
    let k = &d["compactions"][0];
    assert_eq!(k["line"], 6);
    assert_eq!(k["step"], 4);
    // The messages after the anchor stay in the model's context: from the Grep result on.
    assert_eq!(k["kept_from_step"], 2);
    assert_eq!(k["removedCount"], 2);
    assert!(k["summaryText"]
        .as_str()
        .is_some_and(|s| s.contains("utils")));
    assert_eq!(d["other_lines"][0]["line"], 10);
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 1);
    assert_eq!(left["wrong_typed"], 1);
    assert_eq!(left["first"]["line"], 11);
    // --strict rejects the session for its line without a type.
    let (code, out, _) = convert(&[&fixture("compacted.jsonl")], Some("droid"), &["--strict"]);
    assert_eq!(code, 1);
    assert!(out.is_empty());

    // The session /compress starts: the summary first, its parent session in the header.
    let t = converted(&fixture("compressed.jsonl"));
    let d = &t["details"]["droid"];
    assert_eq!(
        d["session"]["parent"],
        "7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
    );
    assert_eq!(d["compactions"][0]["step"], 0);
    assert_eq!(d["compactions"][0]["kept_from_step"], 0);
    assert_eq!(d["messages"][0]["compactionSummaryId"], "k2");
}

#[test]
fn other_files_are_refused_and_near_misses_named() {
    // A Pi session given to --from droid: its header is not Droid's.
    let (code, out, err) = convert(&[&sample_data().join("pi")], Some("droid"), &[]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("not a Droid session"), "{err}");
    // A session_start without Droid's fields: no format claims it, Droid says why.
    let dir = tempfile::tempdir().expect("dir");
    let near = dir.path().join("near.jsonl");
    std::fs::write(
        &near,
        "{\"type\":\"session_start\",\"id\":\"s\",\"title\":\"t\"}\n{\"type\":\"message\",\"id\":\"m\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n",
    )
    .expect("write");
    let (code, _, err) = convert(&[&near], None, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("droid"), "{err}");
}

#[test]
fn the_bundled_sample_converts() {
    let t = converted(&sample_data().join("droid/b4e1c9a2-5d3f-4e8a-9b7c-1f2e3d4c5b6a.jsonl"));
    let (actions, linked) = tool_actions_and_links(&t);
    assert!(actions >= 2);
    assert!(linked);
    assert!(t["details"]["droid"]["todos"].is_array());
}

#[test]
fn a_subagent_session_names_the_call_that_spawned_it() {
    let t = converted(&fixture("subagent.jsonl"));
    let (actions, linked) = tool_actions_and_links(&t);
    assert_eq!(actions, 1);
    assert!(linked);
    let agent = &t["details"]["droid"]["agent"];
    assert_eq!(
        agent["parent_trajectory_id"],
        "3f6c1d2e-8a41-4b7e-9c55-2d0e7f1a9b33"
    );
    assert_eq!(agent["spawned_by"], "Task_7");
}

#[test]
fn a_directory_of_sessions_converts_whole_with_its_sidecars() {
    let dir = fixture("");
    let (code, out, err) = convert(&[&dir], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(": detected droid"), "{err}");
    assert!(!err.contains("settings.json"), "{err}");
    assert_eq!(out.len(), 5, "{err}");
    assert_eq!(validate_adp(&out), 0);
    let session = out
        .iter()
        .find(|t| t["id"] == "3f6c1d2e-8a41-4b7e-9c55-2d0e7f1a9b33")
        .expect("the session");
    assert_eq!(
        session["details"]["droid"]["settings"]["model"],
        "custom:Kimi-K2-0"
    );
    // A directory holding another file is not Droid's: each file is detected on its own.
    let mixed = tempfile::tempdir().expect("dir");
    std::fs::copy(fixture("cancelled.jsonl"), mixed.path().join("a.jsonl")).expect("copy");
    std::fs::write(mixed.path().join("notes.txt"), "not a session\n").expect("write");
    let (_, _, err) = convert(&[mixed.path()], None, &[]);
    assert!(err.contains("a.jsonl: detected droid"), "{err}");
}

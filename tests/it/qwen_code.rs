//! Qwen Code sessions: the corpus's real file, and sessions of our own
//! (`tests/fixtures/qwen_code/`, and small ones written here) for the tree (a rewound turn, a
//! subagent's records, a uuid written twice), thoughts, images, parallel and failed calls,
//! compactions, unanswered calls and the older session documents.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, step_classes, tool_actions_and_links,
    validate_adp,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qwen_code")
        .join(name)
}

/// Converts `path` with `--from auto`: the one trajectory, checked valid and detected as Qwen
/// Code.
fn converted(path: &Path) -> Value {
    let (code, out, err) = convert(&[path], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected qwen-code"), "{err}");
    assert_eq!(out.len(), 1, "{err}");
    assert_eq!(validate_adp(&out), 0);
    out[0].clone()
}

/// A session file of `records` in `dir`.
fn session(dir: &Path, records: &[Value]) -> PathBuf {
    let path = dir.join("3c0d5e6f-1111-4222-8333-444455556666.jsonl");
    let text: String = records.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

fn record(uuid: &str, parent: Option<&str>, kind: &str, message: Value) -> Value {
    json!({"uuid": uuid, "parentUuid": parent, "sessionId": "s-1",
        "timestamp": "2026-05-04T09:00:00.000Z", "type": kind, "cwd": "/w", "version": "0.18.1",
        "message": message})
}

#[test]
fn the_corpus_session_converts_with_its_failed_call_linked_and_marked() {
    let Some(root) = agent_logs() else { return };
    let file = root.join("qwen-code/splitrail__qwen_code.jsonl");
    let t = converted(&file);
    assert_eq!(t["id"], "69f0814a-8bfc-4c8e-93d3-05757f17b96f");
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let (actions, linked) = tool_actions_and_links(&t);
    assert_eq!(actions, 1);
    assert!(linked);
    let steps = &t["content"];
    assert_eq!(steps[1]["function"], "list_directory");
    assert_eq!(steps[1]["tool_call_id"], "call_1");
    assert_eq!(steps[2]["tool_call_id"], "call_1");
    // The error text is in `response.error`; `toolCallResult.error` is `{}`.
    assert_eq!(steps[2]["content"], "Path must be absolute: .");
    let d = &t["details"]["qwen_code"];
    assert_eq!(d["error_results"][0]["step"], 2);
    assert_eq!(d["error_results"][0]["error_type"], "invalid_tool_params");
    assert_eq!(d["models"], json!(["coder-model"]));
    assert_eq!(d["usage"]["promptTokenCount"], 1100);
    assert_eq!(d["envelope"]["version"], "0.18.1");
    assert_eq!(d["timestamps"]["first"], "2026-06-15T14:40:22.832Z");
    // The system records between the call and its result are bookkeeping, kept and counted.
    let subtypes: Vec<&str> = d["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["subtype"].as_str())
        .collect();
    assert_eq!(
        subtypes,
        [
            "attribution_snapshot",
            "ui_telemetry",
            "ui_telemetry",
            "ui_telemetry"
        ]
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 4);
    assert_eq!(left["messages"], json!({"in": 4, "kept": 4}));
    assert_every_sft_target_accepts(&[t], "qwen-code corpus");
}

#[test]
fn the_conversation_is_the_path_to_the_last_record() {
    let t = converted(&fixture("session.jsonl"));
    let steps = t["content"].as_array().expect("content");
    // The rewound answer and the subagent's record are not steps.
    let texts: Vec<&str> = steps.iter().filter_map(|s| s["content"].as_str()).collect();
    assert!(!texts.iter().any(|c| c.contains("rewrite the whole module")));
    assert!(!texts.contains(&"exploring"));
    let d = &t["details"]["qwen_code"];
    assert_eq!(
        d["left_out"],
        json!([{"line": 6, "uuid": "a-x1", "reason": "branch"},
            {"line": 10, "uuid": "sub-01", "reason": "sidechain"}])
    );
    // The two records of one uuid are one message, as Qwen Code merges them.
    let last = steps.last().expect("a step");
    assert_eq!(last["class_"], "message_action");
    assert_eq!(
        last["content"],
        "litres() ignores the season factor. Multiply by plant.season_factor to fix it."
    );
    let merged = d["records"]
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["uuid"] == "a-03")
        .expect("a-03");
    assert_eq!(merged["merged"][0]["line"], 13);
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["messages"], json!({"in": 9, "kept": 7}));
    assert_eq!(d["usage"]["totalTokenCount"], 2445);
}

#[test]
fn calls_thoughts_images_failures_and_compactions_are_kept() {
    let t = converted(&fixture("session.jsonl"));
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "image_observation",
            "api_action",
            "code_action",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action",
        ]
    );
    let s = &t["content"];
    assert!(s[1]["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("data:image/png;base64,")));
    // The thought parts are the reasoning of the first call, the text its description.
    assert_eq!(
        s[2]["reasoning_content"],
        "The user wants the failing test found. I will look for tests first."
    );
    assert_eq!(s[2]["description"], "Let me look at the tests.");
    // The shell call keeps its own description; both results follow in call order.
    assert_eq!(s[3]["content"], "pytest -q tests/test_water.py");
    assert_eq!(s[3]["description"], "Run the watering tests");
    assert_eq!(
        [&s[4]["tool_call_id"], &s[5]["tool_call_id"]],
        [&json!("call_a"), &json!("call_b")]
    );
    let d = &t["details"]["qwen_code"];
    assert_eq!(d["error_results"][0]["id"], "call_b");
    assert_eq!(d["error_results"][0]["error_type"], "execution_failed");
    // The compaction: its summary is a step, and it is listed from that step.
    assert_eq!(s[8]["name"], "compaction_summary");
    assert!(s[8]["content"]
        .as_str()
        .is_some_and(|c| c.contains("season factor")));
    assert_eq!(d["compactions"][0]["step"], 8);
    assert_eq!(d["compactions"][0]["info"]["newTokenCount"], 300);
    // The acknowledgement and the message kept after the summary are copies: counted.
    assert_eq!(t["details"]["source"]["left_out"]["blocks"], 2);
    assert_every_sft_target_accepts(&[t], "qwen-code fixture");
}

#[test]
fn a_call_without_a_result_is_answered_when_the_conversation_goes_on_and_unlinked_at_the_end() {
    let dir = tempfile::tempdir().expect("dir");
    let call = |id: &str| {
        json!({"role": "model", "parts": [{"functionCall":
        {"id": id, "name": "read_file", "args": {"absolute_path": "/w/a"}}}]})
    };
    let path = session(
        dir.path(),
        &[
            record(
                "u1",
                None,
                "user",
                json!({"role": "user", "parts": [{"text": "read a"}]}),
            ),
            record("a1", Some("u1"), "assistant", call("c1")),
            record(
                "u2",
                Some("a1"),
                "user",
                json!({"role": "user", "parts": [{"text": "stop"}]}),
            ),
            record("a2", Some("u2"), "assistant", call("c2")),
        ],
    );
    let t = converted(&path);
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action"
        ]
    );
    let s = &t["content"];
    assert_eq!(s[2]["tool_call_id"], "c1");
    assert_eq!(s[2]["content"], "No result was recorded for this call.");
    assert!(s[4].get("tool_call_id").is_none_or(Value::is_null));
    assert_eq!(
        t["details"]["qwen_code"]["unanswered_calls"],
        json!([{"step": 1, "id": "c1", "result_step": 2},
            {"step": 4, "id": "c2", "result_step": null}])
    );
}

#[test]
fn an_old_session_document_is_read_in_qwen_codes_dialect() {
    let file = fixture("session-2025-09-01T08-00-0c9e8d7f.json");
    let t = converted(&file);
    assert_eq!(
        step_classes(&t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(t["details"]["source"]["format"], "qwen-code");
    assert_eq!(
        t["content"][1]["reasoning_content"],
        "Searching: grep is quickest."
    );
    let d = &t["details"]["qwen_code"];
    assert_eq!(d["project_hash"], "5f2a0d");
    assert_eq!(d["messages"][1]["tokens"]["total"], 525);
    // Gemini CLI's reader refuses it, naming this one.
    let (code, out, err) = convert(&[&file], Some("gemini-cli"), &[]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("use --from qwen-code"), "{err}");
}

#[test]
fn a_file_with_no_conversation_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let mut only = record("t1", None, "system", Value::Null);
    only.as_object_mut().map(|o| o.remove("message"));
    only["subtype"] = json!("custom_title");
    only["systemPayload"] = json!({"customTitle": "empty"});
    let path = session(dir.path(), &[only]);
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("empty-trajectory"), "{err}");
}

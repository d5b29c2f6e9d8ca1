//! Cursor agent transcripts: the corpus's shape fixture, the bundled sample, and a transcript
//! of our own with results, calls without ids or results, images, turns and a subagent.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes, validate_adp,
};

/// The conversation of our own fixture (`<uuid>/<uuid>.jsonl`, a subagent under `subagents/`).
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cursor/9b2f7c1e-4d3a-4e8b-a1c2-5f6e7d8c9b0a")
}

fn converted(path: &Path) -> Vec<Value> {
    let (code, out, err) = convert(&[path], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected cursor"), "{err}");
    assert_eq!(validate_adp(&out), 0);
    out
}

#[test]
fn the_corpus_fixture_and_the_sample_convert_saying_what_is_missing() {
    if let Some(root) = agent_logs() {
        let out = converted(&root.join("cursor/letta__cursor_tool-calls_input.jsonl"));
        let t = &out[0];
        assert_eq!(step_classes(t), ["text_observation", "api_action"]);
        let c = &t["content"];
        assert_eq!(c[1]["function"], "write");
        assert_eq!(c[1]["description"], "Starting with the API.");
        assert_eq!(c[1]["reasoning_content"], "I should start with the API.");
        // The last call has no result: unlinked, and said so.
        assert!(c[1].get("tool_call_id").is_none());
        let d = &t["details"]["cursor"];
        assert_eq!(
            d["missing"],
            json!({"timestamps": true, "tool_call_ids": 0, "tool_results": 1})
        );
        assert_eq!(d["models"], json!(["cursor-test"]));
        assert_eq!(d["line_fields"][0]["fields"]["id"], "cursor-user");
    }
    let sample = sample_data().join(
        "cursor/e4a7c2d9-1b3f-4a6e-8c5d-2f9b0e1a7c3d/e4a7c2d9-1b3f-4a6e-8c5d-2f9b0e1a7c3d.jsonl",
    );
    let out = converted(&sample);
    let t = &out[0];
    assert_eq!(t["id"], "e4a7c2d9-1b3f-4a6e-8c5d-2f9b0e1a7c3d");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "api_action",
            "api_action",
            "api_action",
            "message_action"
        ]
    );
    assert_eq!(t["details"]["cursor"]["missing"]["tool_results"], 3);
    assert_eq!(t["details"]["cursor"]["turns"][0]["status"], "success");
    assert_every_sft_target_accepts(&out, "cursor sample");
}

#[test]
fn a_transcript_links_the_results_it_has_and_keeps_images_and_its_subagent() {
    let dir = fixture();
    let out = converted(&dir.join("9b2f7c1e-4d3a-4e8b-a1c2-5f6e7d8c9b0a.jsonl"));
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "image_observation",
            "api_action",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action",
            "api_action",
            "message_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["source"], "user");
    assert_eq!(
        c[2]["reasoning_content"],
        "Probably a missing preventDefault."
    );
    assert_eq!(c[2]["description"], "Let me read the form.");
    // The result the transcript has answers its call by id; a call with no id nor result,
    // followed by an observation, gets an empty one.
    assert_eq!(
        (&c[2]["tool_call_id"], &c[5]["tool_call_id"]),
        (&json!("tool_7f1"), &json!("tool_7f1"))
    );
    assert_eq!(
        (&c[3]["tool_call_id"], &c[4]["content"]),
        (&json!("call_3"), &json!(""))
    );
    let d = &t["details"]["cursor"];
    assert_eq!(
        d["missing"],
        json!({"timestamps": true, "tool_call_ids": 3, "tool_results": 3})
    );
    assert_eq!(d["tool_results_in_transcript"], 1);
    assert_eq!(d["message_lines"], json!([1, 2, 3, 4, 6, 7]));
    assert_eq!(d["turns"].as_array().map(Vec::len), Some(2));
    // A block no step holds is kept and counted; the turn markers are counted as lines.
    assert_eq!(d["unmapped"][0]["value"]["type"], "redacted_reasoning");
    let left = &t["details"]["source"]["left_out"];
    assert_eq!((&left["lines"], &left["blocks"]), (&json!(2), &json!(1)));
    assert_every_sft_target_accepts(&out, "cursor fixture");

    // The whole folder: the conversation and its subagent, linked.
    let out = converted(&dir);
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert!(
        ids.contains(&"9b2f7c1e-4d3a-4e8b-a1c2-5f6e7d8c9b0a/agent-tests-1"),
        "{ids:?}"
    );
    let sub = out
        .iter()
        .find(|t| t["details"]["cursor"].get("agent").is_some())
        .expect("the subagent");
    assert_eq!(
        sub["details"]["cursor"]["agent"]["parent_trajectory_id"],
        "9b2f7c1e-4d3a-4e8b-a1c2-5f6e7d8c9b0a"
    );
}

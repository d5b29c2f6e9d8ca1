//! Letta Code transcripts: the corpus's shape fixture, the bundled sample, and a transcript of
//! our own with reasoning, failed and unanswered calls, errors and a reused row id.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links, validate_adp,
};

fn converted(path: &Path) -> Vec<Value> {
    let (code, out, err) = convert(&[path], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected letta-code"), "{err}");
    assert_eq!(validate_adp(&out), 0);
    out
}

#[test]
fn the_corpus_fixture_and_the_sample_convert_with_their_calls_linked() {
    if let Some(root) = agent_logs() {
        let out = converted(&root.join("letta-code/letta__letta-code_tool-calls_input.jsonl"));
        let t = &out[0];
        assert_eq!(
            step_classes(t),
            [
                "text_observation",
                "message_action",
                "api_action",
                "text_observation",
                "message_action"
            ]
        );
        let c = &t["content"];
        assert_eq!(c[1]["reasoning_content"], "I should read the file first.");
        assert_eq!(c[2]["kwargs"], json!({"file_path": "src/app.ts"}));
        assert_eq!(c[3]["content"], "export const value = 1;");
        assert_eq!(tool_actions_and_links(t), (1, true));
        let d = &t["details"]["letta_code"];
        assert_eq!(d["rows"][0]["source_line_id"], "line-user-1");
        assert_eq!(d["timestamps"]["last"], "2026-07-22T12:00:03.000Z");
    }
    let out = converted(&sample_data().join("letta-code/agent-51c0/conv-9e42/transcript.jsonl"));
    let t = &out[0];
    assert_eq!(t["id"], "agent-51c0/conv-9e42");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(
        t["content"][1]["reasoning_content"],
        "A grep over src counts them."
    );
    assert_eq!(t["details"]["letta_code"]["conversation_id"], "conv-9e42");
    assert_every_sft_target_accepts(&out, "letta-code sample");
}

#[test]
fn calls_carry_their_results_and_what_is_missing_is_listed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/letta-code/agent-7f3a/conv-2b91/transcript.jsonl");
    let out = converted(&path);
    let t = &out[0];
    assert_eq!(t["id"], "agent-7f3a/conv-2b91");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action",
            "api_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    // A bash command with its description is code; the reasoning before it is its reasoning.
    assert_eq!(c[1]["content"], "npm run build");
    assert_eq!(c[1]["description"], "Build the project");
    assert_eq!(c[1]["reasoning_content"], "Check the CI log first.");
    assert_eq!(
        (&c[1]["tool_call_id"], &c[2]["tool_call_id"]),
        (&json!("call-1"), &json!("call-1"))
    );
    // A call with no result in its row, followed by an observation (the error), is answered
    // by an empty result put right after it.
    assert_eq!(
        (&c[6]["tool_call_id"], &c[7]["tool_call_id"]),
        (&json!("call-3"), &json!("call-3"))
    );
    assert_eq!(c[7]["content"], "");
    assert_eq!(
        (&c[8]["name"], &c[8]["source"]),
        (&json!("error"), &json!("environment"))
    );
    // A reused row id is made unique; arguments that are not JSON are kept aside.
    assert_eq!(c[10]["tool_call_id"], "call-1#2");
    assert_eq!(c[10]["kwargs"], json!({}));
    // Reasoning at the end is a message's reasoning.
    assert_eq!(c[12]["reasoning_content"], "Done for now.");
    let d = &t["details"]["letta_code"];
    assert_eq!(d["error_results"], json!(["call-1"]));
    assert_eq!(
        d["unanswered_calls"],
        json!([{"step": 6, "id": "call-3", "empty_result": 7}])
    );
    assert_eq!(d["unmapped"][0]["pointer"], "/argsText");
    assert_eq!(d["agent_id"], "agent-7f3a");
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["values"], 1);
    assert_every_sft_target_accepts(&out, "letta-code fixture");
}

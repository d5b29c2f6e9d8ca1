//! OpenAI chat and ShareGPT: the bundled samples, malformed chats, and corpus raw samples of
//! these families (toucan_1_5m must match ADP's own step structure).

use crate::common::{adp_corpus, convert, sample_data, step_classes, validate_adp};
use serde_json::{json, Value};

#[test]
fn openai_chats_map_parallel_calls_reasoning_images_and_tools() {
    let (code, out, stderr) = convert(&[&sample_data().join("openai/chats.jsonl")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected openai"), "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "text_observation",
            "image_observation",
            "api_action",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[0]["name"], "system");
    assert_eq!(c[2]["content"], "https://example.invalid/oslo.jpg");
    assert_eq!(c[3]["kwargs"], json!({"city": "Oslo"}));
    assert_eq!(c[3]["description"], "Let me check both.");
    assert_eq!(
        c[3]["reasoning_content"],
        "Two independent lookups; call them in parallel."
    );
    assert_eq!(c[3]["tool_call_id"], "call_w");
    // Results answer the parallel calls out of order, linked by id and named after the call.
    assert_eq!(c[5]["tool_call_id"], "call_t");
    assert_eq!(c[5]["name"], "get_time");
    assert_eq!(c[6]["tool_call_id"], "call_w");
    assert_eq!(
        t["available_custom_tools"],
        json!(["get_weather", "get_time"])
    );
    assert_eq!(t["details"]["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(t["details"]["openai"]["split"], "demo");
    let legacy = &out[1];
    assert_eq!(legacy["content"][1]["function"], "add");
    assert_eq!(legacy["content"][2]["name"], "add");
    assert_eq!(
        legacy["content"][1]["tool_call_id"],
        legacy["content"][2]["tool_call_id"]
    );
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn sharegpt_function_calls_and_observations_become_linked_steps() {
    let (code, out, stderr) = convert(
        &[&sample_data().join("sharegpt/conversations.json")],
        None,
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected sharegpt"), "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(
        t["content"][2]["kwargs"],
        json!({"q": "The Left Hand of Darkness author"})
    );
    assert_eq!(t["content"][3]["name"], "search");
    assert_eq!(
        t["content"][2]["tool_call_id"],
        t["content"][3]["tool_call_id"]
    );
    assert_eq!(t["available_custom_tools"], json!(["search"]));
    assert_eq!(
        step_classes(&out[1]),
        vec!["text_observation", "message_action"]
    );
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn malformed_chats_are_rejected_at_their_pointer_and_the_rest_converted() {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("chats.jsonl");
    let unknown_call = json!({"id": "u", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "?"}
    ]});
    let bad_arguments = json!({"id": "b", "messages": [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}
        ]}
    ]});
    let good = json!({"id": "g", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]});
    std::fs::write(&input, format!("{unknown_call}\n{bad_arguments}\n{good}\n")).expect("write");
    let (code, out, stderr) = convert(&[&input], Some("openai"), &[]);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 1);
    assert!(
        stderr.contains(":1: error[chat-structure] id=\"u\" /messages/1/tool_call_id"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            ":2: error[chat-structure] id=\"b\" /messages/0/tool_calls/0/function/arguments"
        ),
        "{stderr}"
    );
    let sharegpt = dir.path().join("sg.jsonl");
    let bad_call = json!({"conversations": [{"from": "function_call", "value": "search(q)"}]});
    std::fs::write(&sharegpt, format!("{bad_call}\n")).expect("write");
    let (code, _, stderr) = convert(&[&sharegpt], Some("sharegpt"), &[]);
    assert_eq!(code, 1);
    assert!(stderr.contains("/conversations/0/value"), "{stderr}");
}

#[test]
fn toucan_raw_sample_matches_adps_step_structure() {
    let Some(corpus) = adp_corpus() else { return };
    let dataset = corpus.join("toucan_1_5m");
    let (code, out, stderr) = convert(&[&dataset.join("sample_raw.json")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected openai"), "{stderr}");
    let theirs: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dataset.join("sample_std.json")).expect("std"))
            .expect("json");
    assert_eq!(out.len(), theirs.len());
    for (mine, adp) in out.iter().zip(&theirs) {
        assert_eq!(step_classes(mine), step_classes(adp));
        let a = mine["content"].as_array().expect("content");
        let b = adp["content"].as_array().expect("content");
        // ADP's toucan script strips the tool server's prefix (`exa-search-`) from tool names
        // wherever they appear, and wraps the final answer in <finish> tags; trajkit's generic
        // converter does neither. Everything else must be equal.
        let (call, adp_call) = a
            .iter()
            .zip(b)
            .find(|(x, _)| x["class_"] == "api_action")
            .expect("a tool call");
        let full = call["function"].as_str().expect("function");
        let short = adp_call["function"].as_str().expect("function");
        let prefix = full.strip_suffix(short).expect("a server prefix");
        let unprefixed = |v: &Value| v.as_str().map(|t| t.replace(prefix, ""));
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            if x["class_"] == "api_action" {
                assert_eq!(
                    unprefixed(&x["function"]),
                    unprefixed(&y["function"]),
                    "step {k}"
                );
                assert_eq!(x["kwargs"], y["kwargs"], "step {k}");
            } else if x["class_"] == "message_action" && k + 1 == a.len() {
                let answer = y["content"].as_str().expect("text");
                let inner = answer
                    .trim_start_matches("<finish>")
                    .trim_end_matches("</finish>")
                    .trim();
                assert_eq!(x["content"], inner, "step {k}");
            } else {
                assert_eq!(
                    unprefixed(&x["content"]),
                    unprefixed(&y["content"]),
                    "step {k}"
                );
            }
        }
    }
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn sharegpt_family_corpus_samples_convert_to_valid_adp() {
    let Some(corpus) = adp_corpus() else { return };
    for dataset in ["eto", "llava_plus"] {
        let (code, out, stderr) =
            convert(&[&corpus.join(dataset).join("sample_raw.json")], None, &[]);
        assert_eq!(code, 0, "{dataset}: {stderr}");
        assert!(stderr.contains("detected sharegpt"), "{stderr}");
        assert!(!out.is_empty());
        assert_eq!(validate_adp(&out), 0, "{dataset}");
    }
}

#[test]
fn openai_family_corpus_samples_convert_to_valid_adp() {
    let Some(corpus) = adp_corpus() else { return };
    for dataset in [
        "swe-gym_openhands_sampled_trajectories",
        "mini-coder",
        "swe-smith",
        "code_feedback",
    ] {
        let input = corpus.join(dataset).join("sample_raw.json");
        let raw: Vec<Value> =
            serde_json::from_slice(&std::fs::read(&input).expect("raw")).expect("json");
        let (code, out, stderr) = convert(&[&input], Some("openai"), &[]);
        assert_eq!(code, 0, "{dataset}: {stderr}");
        assert_eq!(out.len(), raw.len(), "{dataset}");
        assert_eq!(validate_adp(&out), 0, "{dataset}");
    }
}

/// Records the compiled raw-schema checks refuse take the `Value` and JSON Schema path: an
/// invalid role keeps the validator's diagnostic, and a record with a duplicate key is rejected
/// (`json-duplicate-key`, with its pointer) rather than read with its last value.
#[test]
fn records_the_fast_check_refuses_keep_the_validators_diagnostics_and_reading() {
    let dir = tempfile::tempdir().expect("dir");
    let cases = [
        (
            "openai",
            r#"{"id":"r","messages":[{"role":"robot","content":"x"}]}"#,
            r#"{"id":"d","messages":[{"role":"user","content":"first"}],"messages":[{"role":"user","content":"last"}]}"#,
            "error[schema-enum] id=\"r\" /messages/0/role: \"robot\" is not one of",
            "error[json-duplicate-key] id=\"d\" /messages: duplicate key \"messages\"",
        ),
        (
            "sharegpt",
            r#"{"id":"r","conversations":[{"from":"robot","value":"x"}]}"#,
            r#"{"id":"d","conversations":[{"from":"human","value":"first","value":"last"}]}"#,
            "error[schema-enum] id=\"r\" /conversations/0/from: \"robot\" is not one of",
            "error[json-duplicate-key] id=\"d\" /conversations/0/value: duplicate key \"value\"",
        ),
    ];
    for (format, invalid, duplicate, diagnostic, duplicated) in cases {
        let input = dir.path().join(format!("{format}.jsonl"));
        std::fs::write(&input, format!("{invalid}\n{duplicate}\n")).expect("write");
        let (code, out, stderr) = convert(&[&input], Some(format), &[]);
        assert_eq!(code, 1, "{format}");
        assert!(stderr.contains(&format!(":1: {diagnostic}")), "{stderr}");
        assert!(stderr.contains(&format!(":2: {duplicated}")), "{stderr}");
        assert!(out.is_empty(), "{format}: {out:?}");
    }
}

#[test]
fn openai_parts_no_step_holds_are_kept_with_their_pointer() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("chat.jsonl");
    let chat = json!({"id": "c1", "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "Transcribe this."},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
        ]},
        {"role": "assistant", "content": "Hello."}
    ]});
    std::fs::write(&path, format!("{chat}\n")).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("openai"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let kept = &out[0]["details"]["openai"]["unmapped_parts"];
    assert_eq!(kept[0]["pointer"], "/messages/0/content/1");
    assert_eq!(kept[0]["value"]["input_audio"]["format"], "wav");
    assert_eq!(validate_adp(&out), 0);
}

/// What a step has no place for (a message's `weight`, `refusal` or speaker `name`, a call's
/// other type) is kept in `details.openai.message_fields`, with its pointer.
#[test]
fn openai_message_fields_no_step_holds_are_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("chat.jsonl");
    let chat = json!({"id": "w", "messages": [
        {"role": "user", "content": "Hi", "name": "ada"},
        {"role": "assistant", "content": "Hello.", "weight": 0, "refusal": null},
        {"role": "user", "content": "List files."},
        {"role": "assistant", "content": null, "weight": 1, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "c2", "type": "custom", "function": {"name": "pwd", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": "/"},
        {"role": "assistant", "content": "Done."}
    ]});
    std::fs::write(&path, format!("{chat}\n")).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out[0]["details"]["openai"]["message_fields"],
        json!([
            {"pointer": "/messages/0", "fields": {"name": "ada"}},
            {"pointer": "/messages/1", "fields": {"weight": 0, "refusal": null}},
            {"pointer": "/messages/3", "fields": {"weight": 1}},
            {"pointer": "/messages/3/tool_calls/1", "fields": {"type": "custom"}}
        ])
    );
    assert_eq!(validate_adp(&out), 0);
}

/// A ShareGPT turn's keys besides `from` and `value` (a loss weight, a speaker) are kept in
/// `details.sharegpt.turn_fields`, with the turn's pointer.
#[test]
fn sharegpt_turn_fields_no_step_holds_are_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sg.jsonl");
    let row = json!({"id": "s", "conversations": [
        {"from": "human", "value": "Hi"},
        {"from": "gpt", "value": "Hello.", "weight": 0.5, "name": "bot"}
    ]});
    std::fs::write(&path, format!("{row}\n")).expect("write");
    let (code, out, stderr) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out[0]["details"]["sharegpt"]["turn_fields"],
        json!([{"pointer": "/conversations/1", "fields": {"weight": 0.5, "name": "bot"}}])
    );
}

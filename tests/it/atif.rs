//! ATIF v1.7 in and out: ADP -> ATIF -> ADP is the identity on the corpus and the samples, the
//! ATIF written validates, native ATIF maps by ATIF's conventions, malformed ATIF is rejected.

use std::path::PathBuf;

use crate::common::{self, adp_corpus, corpus_std_files, json_lines, sample_data, trajkit};
use serde_json::json;

fn run(args: &[&str], inputs: &[PathBuf], stdin: Option<Vec<u8>>) -> (i32, Vec<u8>, String) {
    let mut cmd = trajkit();
    cmd.args(args).args(inputs);
    if let Some(bytes) = stdin {
        cmd.write_stdin(bytes);
    }
    let out = cmd.output().expect("runs");
    (
        out.status.code().expect("exit code"),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Converts `inputs` to ADP 1.5.0 and to ATIF, checks the ATIF against its schema, reads it
/// back, and requires the bytes to equal the direct conversion.
fn assert_round_trip(inputs: &[PathBuf], from: &str) {
    let (code, adp, stderr) = run(&["convert", "-q", "--from", from], inputs, None);
    assert_eq!(code, 0, "{stderr}");
    let (code, atif, stderr) = run(
        &["convert", "-q", "--from", from, "--to", "atif"],
        inputs,
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(
        &["validate", "-q", "--schema", "atif", "-"],
        &[],
        Some(atif.clone()),
    );
    assert_eq!(code, 0, "ATIF output must validate: {stderr}");
    let (code, back, stderr) = run(&["convert", "-q", "--from", "atif", "-"], &[], Some(atif));
    assert_eq!(code, 0, "{stderr}");
    assert!(!adp.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&back),
        String::from_utf8_lossy(&adp),
        "ADP -> ATIF -> ADP must be the identity"
    );
}

#[test]
fn corpus_round_trips_through_atif_unchanged() {
    let Some(dir) = adp_corpus() else { return };
    assert_round_trip(&corpus_std_files(&dir), "adp");
}

#[test]
fn every_sample_format_round_trips_through_atif_unchanged() {
    let inputs: Vec<PathBuf> = [
        "adp",
        "memabra",
        "reflexion",
        "openai",
        "sharegpt",
        "ledgermind",
        "swe-agent",
        "openhands",
        "mini-swe-agent",
    ]
    .iter()
    .map(|d| sample_data().join(d))
    .collect();
    for input in inputs {
        let from = input
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_owned();
        assert_round_trip(&[input], &from);
    }
    assert_round_trip(&[sample_data().join("ralph")], "ralph");
}

#[test]
fn native_atif_maps_calls_results_and_marks_copied_context() {
    let (code, out, stderr) = run(&["convert"], &[sample_data().join("atif")], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected atif"), "{stderr}");
    let t = &json_lines(&out)[0];
    assert_eq!(t["id"], "atif-demo-1");
    let c = t["content"].as_array().expect("content");
    let classes: Vec<&str> = c.iter().filter_map(|s| s["class_"].as_str()).collect();
    assert_eq!(
        classes,
        vec![
            "text_observation",
            "text_observation",
            "image_observation",
            "api_action",
            "code_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(c[0]["name"], "system");
    assert_eq!(c[2]["content"], "screens/build.png");
    assert_eq!(c[3]["description"], "I'll read the log and the config.");
    assert_eq!(c[3]["reasoning_content"], "Two reads, independent.");
    assert_eq!(c[4]["content"], "cat Makefile");
    assert_eq!(
        (c[5]["tool_call_id"].clone(), c[5]["name"].clone()),
        (json!("c2"), json!("execute_bash"))
    );
    assert_eq!(c[6]["tool_call_id"], "c1");
    // A result for a call no step made is kept, unlinked, and its id recorded.
    assert!(c[7].get("tool_call_id").is_none());
    let atif = &t["details"]["atif"];
    assert_eq!(
        atif["unmatched_results"],
        json!([{"content_index": 7, "source_call_id": "zz"}])
    );
    assert_eq!(atif["excluded_from_training"], json!([0]));
    assert_eq!(atif["session_id"], "sess-42");
    assert_eq!(atif["steps"][2]["metrics"]["prompt_tokens"], 812);
    assert_eq!(atif["subagent_trajectories"][0]["trajectory_id"], "sub-1");
    // Native extras of calls and results are kept, by position.
    assert_eq!(
        atif["steps"][2]["tool_calls"],
        json!([{"index": 0, "native": {"extra": {"timeout_s": 30}}}])
    );
    assert_eq!(
        atif["steps"][2]["results"][0]["native"]["subagent_trajectory_ref"],
        json!([{"trajectory_id": "sub-1"}])
    );
}

#[test]
fn malformed_atif_is_rejected_with_a_pointer() {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("bad.jsonl");
    let skipped = json!({"schema_version": "ATIF-v1.7", "trajectory_id": "a", "steps": [
        {"step_id": 1, "source": "user", "message": "hi"},
        {"step_id": 3, "source": "agent", "message": "hello"}
    ]});
    let user_calls = json!({"schema_version": "ATIF-v1.7", "trajectory_id": "b", "steps": [
        {"step_id": 1, "source": "user", "message": "hi",
         "tool_calls": [{"tool_call_id": "x", "function_name": "f", "arguments": {}}]}
    ]});
    let good = json!({"schema_version": "ATIF-v1.7", "trajectory_id": "c", "steps": [
        {"step_id": 1, "source": "user", "message": "hi"}
    ]});
    std::fs::write(&input, format!("{skipped}\n{user_calls}\n{good}\n")).expect("write");
    let (code, out, stderr) = run(&["convert", "--from", "atif"], &[input], None);
    assert_eq!(code, 1);
    assert_eq!(json_lines(&out).len(), 1);
    assert!(
        stderr.contains(":1: error[atif-step-id] id=\"a\" /steps/1/step_id"),
        "{stderr}"
    );
    assert!(
        stderr.contains(":2: error[schema-maxItems] id=\"b\" /steps/0/tool_calls"),
        "{stderr}"
    );
}

#[test]
fn an_empty_trajectory_id_falls_back_and_what_is_written_validates() {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("empty-id.jsonl");
    let doc = json!({"schema_version": "ATIF-v1.7", "trajectory_id": "", "session_id": "", "steps": [
        {"step_id": 1, "source": "user", "message": "hi"}
    ]});
    std::fs::write(&input, format!("{doc}\n")).expect("write");
    let (code, out, stderr) = run(&["convert", "--from", "atif"], &[input], None);
    assert_eq!(code, 0, "{stderr}");
    let out = json_lines(&out);
    assert_eq!(out[0]["id"], "empty-id.jsonl#0");
    assert_eq!(common::validate_adp(&out), 0);
}

//! ATIF in (v1.0 to v1.8) and out (v1.7, v1.8): ADP -> ATIF -> ADP is the identity on the
//! corpus and the samples, the ATIF written validates against its version's schema, native
//! ATIF maps by ATIF's conventions (real Harbor traces, continuation files, subagent refs,
//! unanswered calls), malformed ATIF is rejected.

use std::path::{Path, PathBuf};

use crate::common::{
    self, adp_corpus, agent_logs, corpus_std_files, json_lines, sample_data, trajkit,
};
use serde_json::{json, Value};

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
    assert_round_trip_as(inputs, from, "1.7");
}

/// [`assert_round_trip`] writing ATIF `version`, checked against `atif-v{version}` (and, as
/// read, against `atif`).
fn assert_round_trip_as(inputs: &[PathBuf], from: &str, version: &str) {
    let (code, adp, stderr) = run(&["convert", "-q", "--from", from], inputs, None);
    assert_eq!(code, 0, "{stderr}");
    let (code, atif, stderr) = run(
        &[
            "convert",
            "-q",
            "--from",
            from,
            "--to",
            "atif",
            "--atif-version",
            version,
        ],
        inputs,
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    let stated = format!("\"schema_version\":\"ATIF-v{version}\"");
    assert!(
        json_lines(&atif)
            .iter()
            .all(|t| t.to_string().contains(&stated)),
        "every record says ATIF-v{version}"
    );
    for schema in [format!("atif-v{version}"), "atif".to_owned()] {
        let (code, _, stderr) = run(
            &["validate", "-q", "--schema", &schema, "-"],
            &[],
            Some(atif.clone()),
        );
        assert_eq!(
            code, 0,
            "ATIF output must validate against {schema}: {stderr}"
        );
    }
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
    assert_round_trip_as(&[sample_data().join("openhands")], "openhands", "1.8");
}

#[test]
fn each_version_is_checked_against_its_own_schema() {
    let (code, atif, stderr) = run(
        &[
            "convert",
            "-q",
            "--from",
            "adp",
            "--to",
            "atif",
            "--atif-version",
            "1.8",
        ],
        &[sample_data().join("adp")],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, _) = run(
        &["validate", "-q", "--schema", "atif-v1.7", "-"],
        &[],
        Some(atif),
    );
    assert_eq!(code, 1, "ATIF-v1.8 is not ATIF-v1.7");
    let (code, _, stderr) = run(
        &["convert", "--to", "atif", "--atif-version", "1.9"],
        &[sample_data().join("adp")],
        None,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("1.7") && stderr.contains("1.8"), "{stderr}");
}

#[test]
fn native_atif_maps_calls_results_and_marks_copied_context() {
    let (code, out, stderr) = run(&["convert"], &[sample_data().join("atif")], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected atif"), "{stderr}");
    let out = json_lines(&out);
    let t = out
        .iter()
        .find(|t| t["id"] == "atif-demo-1")
        .expect("the sample trajectory");
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

/// The schema's conditional rules (content parts by type, no reasoning on system and user
/// steps) are diagnosed as the validator words them, and what they allow is read.
#[test]
fn conditional_rules_of_the_schema_are_diagnosed_with_their_pointers() {
    let dir = tempfile::tempdir().expect("dir");
    let step = |source: &str, message: Value, reasoning: Option<&str>| {
        let mut s = json!({"step_id": 1, "source": source, "message": message});
        if let Some(r) = reasoning {
            s["reasoning_content"] = json!(r);
        }
        s
    };
    let audio = |duration: i64| json!({"type": "audio", "source": {"path": "a.wav", "duration_sec": duration}});
    let docs = [
        doc(
            "ATIF-v1.8",
            json!([step("user", json!([{"type": "text"}]), None)]),
        ),
        doc(
            "ATIF-v1.8",
            json!([step(
                "user",
                json!([{"type": "image", "source": {"media_type": "image/png"}}]),
                None
            )]),
        ),
        doc("ATIF-v1.8", json!([step("user", json!([audio(-1)]), None)])),
        doc("ATIF-v1.8", json!([step("system", json!("x"), Some("r"))])),
        doc(
            "ATIF-v1.8",
            json!([step("user", json!([{"type": "text", "text": "hi"}, audio(2)]), None),
                   {"step_id": 2, "source": "agent", "message": "x", "reasoning_content": "r"}]),
        ),
    ];
    let input = write_docs(dir.path(), "conditional.jsonl", &docs);
    let (code, out, stderr) = common::convert(&[&input], Some("atif"), &[]);
    assert_eq!((code, out.len()), (1, 1), "{stderr}");
    for line in [
        ":1: error[schema-required] id=\"s\" /steps/0/message/0/text: required key \"text\" is missing",
        ":2: error[schema-required] id=\"s\" /steps/0/message/0/source/path: required key \"path\" is missing",
        ":3: error[schema-minimum] id=\"s\" /steps/0/message/0/source/duration_sec: -1 is less than the minimum of 0",
        ":4: error[schema-type] id=\"s\" /steps/0/reasoning_content: \"r\" is not of type \"null\"",
    ] {
        assert!(stderr.contains(line), "{line} in {stderr}");
    }
    assert_eq!(out[0]["content"][1]["reasoning_content"], "r");
    assert_eq!(
        out[0]["details"]["atif"]["steps"][0]["message_parts"][0]["part"]["source"]["duration_sec"],
        2
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

// ----- real Harbor traces and native ATIF -----

/// Reads a JSON file.
fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON")
}

/// The tool calls of an ATIF document's steps.
fn tool_calls(doc: &Value) -> usize {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["tool_calls"].as_array().map_or(0, Vec::len))
        .sum()
}

/// The ADP steps of `t` that are tool actions.
fn tool_actions(t: &Value) -> Vec<&Value> {
    t["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|s| matches!(s["class_"].as_str(), Some("api_action" | "code_action")))
        .collect()
}

/// Writes `docs` as JSON lines in `dir/name`.
fn write_docs(dir: &Path, name: &str, docs: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

/// Exports `trajectories` to each SFT target; each must take every one (exit 0, no rejects).
fn assert_exports_take_all(trajectories: &[Value]) {
    let tmp = tempfile::tempdir().expect("dir");
    let input = write_docs(tmp.path(), "in.jsonl", trajectories);
    for to in ["openai", "hf", "sharegpt"] {
        let dir = tmp.path().join(to);
        let out = trajkit()
            .args(["export", "-q"])
            .arg(&input)
            .args(["--to", to, "-o"])
            .arg(&dir)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "--to {to}: {stderr}");
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["counts"]["rejected"], 0, "--to {to}");
        assert_eq!(
            manifest["counts"]["written"],
            trajectories.len(),
            "--to {to}"
        );
    }
}

/// The first openai record of `trajectories`.
fn openai_record(trajectories: &[Value]) -> Value {
    let tmp = tempfile::tempdir().expect("dir");
    let input = write_docs(tmp.path(), "in.jsonl", trajectories);
    let dir = tmp.path().join("openai");
    let out = trajkit()
        .args(["export", "-q"])
        .arg(&input)
        .args(["--to", "openai", "-o"])
        .arg(&dir)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = read_json(&dir.join("manifest.json"));
    let file = manifest["files"][0]["path"].as_str().expect("a file");
    json_lines(&std::fs::read(dir.join(file)).expect("rows"))
        .into_iter()
        .next()
        .expect("a record")
}

#[test]
fn real_harbor_traces_convert_with_every_call_an_action_and_every_result_linked() {
    let Some(logs) = agent_logs() else { return };
    let dir = logs.join("atif");
    let (code, out, stderr) = common::convert(&[&dir], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    // Four files, one of them the continuation of another.
    assert_eq!(out.len(), 3, "{stderr}");
    for t in &out {
        let file = PathBuf::from(t["details"]["source"]["file"].as_str().expect("file"));
        let mut docs = vec![read_json(&file)];
        for c in t["details"]["atif"]["continuations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            docs.push(read_json(Path::new(c["file"].as_str().expect("file"))));
        }
        let calls: usize = docs.iter().map(tool_calls).sum();
        let actions = tool_actions(t);
        assert_eq!(calls, actions.len(), "{}", file.display());
        // Every call of these traces has its result (one per step, naming no call): each
        // action is linked, and answered by exactly one observation.
        let observed: Vec<&str> = t["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter(|s| {
                s["class_"]
                    .as_str()
                    .is_some_and(|c| c.ends_with("observation"))
            })
            .filter_map(|s| s["tool_call_id"].as_str())
            .collect();
        for a in &actions {
            let id = a["tool_call_id"].as_str().expect("linked");
            assert_eq!(observed.iter().filter(|o| **o == id).count(), 1, "{id}");
        }
        assert_eq!(observed.len(), actions.len());
    }
    assert_eq!(common::validate_adp(&out), 0);
    assert_exports_take_all(&out);
    // The v1.6 trace: cost_usd and token ids kept with the step's metrics.
    let timeout = out
        .iter()
        .find(|t| t["details"]["atif"]["schema_version"] == "ATIF-v1.6")
        .expect("the v1.6 trace");
    assert_eq!(
        timeout["details"]["atif"]["steps"][0]["metrics"]["cost_usd"],
        0.002255
    );
    assert_eq!(
        timeout["details"]["atif"]["linked_by_position"][0],
        json!({"step": 1, "id": "call_0_1"})
    );
}

#[test]
fn a_continuation_given_with_its_trajectory_is_merged_without_its_copies() {
    let Some(logs) = agent_logs() else { return };
    let dir = logs.join("atif");
    let base =
        dir.join("golang-exp__hello-world-context-summarization-linear-history.trajectory.json");
    let cont = dir.join(
        "golang-exp__hello-world-context-summarization-linear-history.trajectory.cont-1.json",
    );
    // As two inputs (in either order) as in one directory.
    let (code, out, stderr) = common::convert(&[&cont, &base], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1, "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "NORMALIZED_SESSION_ID");
    let c = t["content"].as_array().expect("content");
    // 9 steps from the first file; the continuation's copy of the task prompt is left out,
    // its summary hand-off and questions (copied from the summarization subagents) stay,
    // marked as not for training.
    assert_eq!(c.len(), 9 + 3 + 8);
    assert_eq!(c[8]["class_"], "json_observation");
    assert_eq!(
        c[8]["content"]["subagent_trajectory_ref"][0]["trajectory_path"],
        "trajectory.summarization-1-summary.json"
    );
    assert!(c[9]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You are picking up work")));
    let atif = &t["details"]["atif"];
    assert_eq!(atif["excluded_from_training"], json!([9, 10, 11]));
    let continuation = &atif["continuations"][0];
    assert!(continuation["file"]
        .as_str()
        .is_some_and(|f| f.ends_with(".cont-1.json")));
    assert_eq!(
        continuation["copied_steps"],
        json!([{"step_id": 1, "same_as": 0}])
    );
    assert_eq!(continuation["agent"]["extra"]["continuation_index"], 1);
    assert_eq!(common::validate_adp(&out), 0);
    // Given alone, a continuation is a trajectory of its own, copies included.
    let (code, alone, stderr) = common::convert(&[&cont], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(alone[0]["content"].as_array().map(Vec::len), Some(12));
}

#[test]
fn continuations_can_stay_separate_trajectories_that_name_each_other() {
    let Some(logs) = agent_logs() else { return };
    let dir = logs.join("atif");
    let (code, out, stderr) =
        common::convert(&[&dir], None, &["--atif-merge-continuations", "false"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 4);
    let chained: Vec<&Value> = out
        .iter()
        .filter(|t| t["details"]["atif"]["chain"].is_object())
        .collect();
    assert_eq!(chained.len(), 2);
    let at = |i: u64| {
        *chained
            .iter()
            .find(|t| t["details"]["atif"]["chain"]["index"] == i)
            .expect("both files of the chain")
    };
    let (first, second) = (at(0), at(1));
    assert_eq!(second["id"], "NORMALIZED_SESSION_ID#cont-1");
    assert_eq!(
        first["details"]["atif"]["chain"]["continued_by"]["trajectory_id"],
        second["id"]
    );
    assert_eq!(
        second["details"]["atif"]["chain"]["continues"]["trajectory_id"],
        first["id"]
    );
    assert_eq!(common::validate_adp(&out), 0);
}

/// A minimal native document of `version` with `steps`.
fn doc(version: &str, steps: Value) -> Value {
    json!({"schema_version": version, "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": steps})
}

#[test]
fn every_version_is_read_and_a_later_one_with_a_warning() {
    let tmp = tempfile::tempdir().expect("dir");
    let user = json!({"step_id": 1, "source": "user", "message": "hi"});
    let agent = json!({"step_id": 2, "source": "agent", "message": "hello"});
    let mut docs: Vec<Value> = (0..=8)
        .map(|m| {
            let mut d = doc(&format!("ATIF-v1.{m}"), json!([user, agent]));
            d["session_id"] = json!(format!("s{m}"));
            d
        })
        .collect();
    // v1.8: an audio part, kept in details.
    docs[8]["steps"][0]["message"] = json!([
        {"type": "text", "text": "what is said?"},
        {"type": "audio", "source": {"media_type": "audio/wav", "path": "a/q.wav", "duration_sec": 2.5}}
    ]);
    // A later version with a key trajkit does not know.
    let mut later = doc("ATIF-v1.9", json!([user, agent]));
    later["session_id"] = json!("s9");
    later["steps"][1]["confidence"] = json!(0.9);
    docs.push(later);
    let input = write_docs(tmp.path(), "versions.jsonl", &docs);
    let (code, out, stderr) = common::convert(&[&input], Some("atif"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 10);
    assert!(
        stderr.contains(":10: warning[atif-version-unknown] id=\"s9\" /schema_version"),
        "{stderr}"
    );
    assert_eq!(out[8]["content"][0]["content"], "what is said?");
    assert_eq!(
        out[8]["details"]["atif"]["steps"][0]["message_parts"][0]["part"]["source"]["path"],
        "a/q.wav"
    );
    assert_eq!(out[9]["details"]["atif"]["steps"][0]["confidence"], 0.9);
    // `run` reports the warning too.
    let pipeline = tmp.path().join("p.toml");
    let text = format!(
        "[[input]]\npath = {:?}\nformat = \"atif\"\n\n[[export]]\nto = \"adp\"\noutput = {:?}\n",
        input.display().to_string(),
        tmp.path().join("run-out").display().to_string()
    );
    std::fs::write(&pipeline, text).expect("write");
    let (code, _, stderr) = run(&["run"], &[pipeline], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning[atif-version-unknown]"), "{stderr}");
    // Another major version, or no version at all, is refused with the reason.
    let bad = write_docs(
        tmp.path(),
        "bad.jsonl",
        &[
            doc("ATIF-v2.0", json!([user])),
            doc("ATIF-1.7", json!([user])),
        ],
    );
    let (code, out, stderr) = common::convert(&[&bad], Some("atif"), &[]);
    assert_eq!((code, out.len()), (1, 0));
    assert!(
        stderr.contains(":1: error[atif-version] id=\"s\" /schema_version"),
        "{stderr}"
    );
    assert!(stderr.contains(":2: error[atif-version]"), "{stderr}");
}

#[test]
fn a_subagent_result_holding_only_its_reference_answers_its_call() {
    let tmp = tempfile::tempdir().expect("dir");
    let mut d = doc(
        "ATIF-v1.7",
        json!([
            {"step_id": 1, "source": "user", "message": "research X"},
            {"step_id": 2, "source": "agent", "message": "Delegating.",
             "tool_calls": [{"tool_call_id": "d1", "function_name": "delegate", "arguments": {"task": "X"}}],
             "observation": {"results": [{"source_call_id": "d1",
                "subagent_trajectory_ref": [{"trajectory_id": "sub-1", "extra": {"summary": "X is Y"}}]}]}},
            {"step_id": 3, "source": "agent", "message": "X is Y."}
        ]),
    );
    d["subagent_trajectories"] = json!([doc(
        "ATIF-v1.7",
        json!([{"step_id": 1, "source": "user", "message": "X?"},
               {"step_id": 2, "source": "agent", "message": "X is Y."}])
    )]);
    d["subagent_trajectories"][0]["trajectory_id"] = json!("sub-1");
    let input = write_docs(tmp.path(), "delegation.jsonl", &[d]);
    let (code, out, stderr) = common::convert(&[&input], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let c = &out[0]["content"];
    assert_eq!(c[1]["tool_call_id"], "d1");
    assert_eq!(c[2]["class_"], "json_observation");
    assert_eq!(c[2]["tool_call_id"], "d1");
    assert_eq!(c[2]["name"], "delegate");
    assert_eq!(
        c[2]["content"]["subagent_trajectory_ref"][0]["trajectory_id"],
        "sub-1"
    );
    // The embedded subagent is a trajectory of its own, named after its parent.
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0]["details"]["atif"]["subagent_trajectories"][0],
        json!({"trajectory_id": "sub-1", "session_id": "s", "converted_as": "s/sub-1"})
    );
    assert_eq!(out[1]["id"], "s/sub-1");
    assert_eq!(out[1]["details"]["atif"]["parent"]["trajectory_id"], "s");
    assert_eq!(out[1]["content"][1]["content"], "X is Y.");
    assert_eq!(common::validate_adp(&out), 0);
    assert_exports_take_all(&out);
}

#[test]
fn calls_without_results_stay_unlinked_and_are_listed() {
    let tmp = tempfile::tempdir().expect("dir");
    let user = json!({"step_id": 1, "source": "user", "message": "do it"});
    let call = |step: u64, id: &str, name: &str| {
        json!({"step_id": step, "source": "agent", "message": "",
               "tool_calls": [{"tool_call_id": id, "function_name": name, "arguments": {}}]})
    };
    // The run ends on a call; a call whose result was lost, then the conversation goes on; a
    // call followed by a user turn; a Terminus-2 batch reported once.
    let last = doc("ATIF-v1.7", json!([user, call(2, "f1", "finish")]));
    let mut middle = doc(
        "ATIF-v1.7",
        json!([user, {"step_id": 2, "source": "agent", "message": "",
            "tool_calls": [
                {"tool_call_id": "c0", "function_name": "probe", "arguments": {}},
                {"tool_call_id": "c1", "function_name": "read", "arguments": {"path": "a"}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "text of a"}]}},
            {"step_id": 3, "source": "agent", "message": "Done."}]),
    );
    middle["session_id"] = json!("middle");
    let mut interrupted = doc(
        "ATIF-v1.7",
        json!([user, call(2, "c1", "probe"), {"step_id": 3, "source": "user", "message": "stop"},
               {"step_id": 4, "source": "agent", "message": "Stopped."}]),
    );
    interrupted["session_id"] = json!("interrupted");
    let mut batch = doc(
        "ATIF-v1.7",
        json!([user, {"step_id": 2, "source": "agent", "message": "Two commands.",
            "tool_calls": [
                {"tool_call_id": "k1", "function_name": "bash_command", "arguments": {"keystrokes": "cd /app\n"}},
                {"tool_call_id": "k2", "function_name": "bash_command", "arguments": {"keystrokes": "ls\n"}}],
            "observation": {"results": [{"content": "$ cd /app\n$ ls\na.txt"}]}},
            {"step_id": 3, "source": "agent", "message": "Listed."}]),
    );
    batch["session_id"] = json!("batch");
    let input = write_docs(
        tmp.path(),
        "calls.jsonl",
        &[last, middle, interrupted, batch],
    );
    let (code, out, stderr) = common::convert(&[&input], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    for t in &out {
        let two = t["id"] == "batch" || t["id"] == "middle";
        assert_eq!(tool_actions(t).len(), 1 + usize::from(two));
    }
    let (last, middle, interrupted, batch) = (&out[0], &out[1], &out[2], &out[3]);
    assert!(last["content"][1].get("tool_call_id").is_none());
    assert_eq!(
        last["details"]["atif"]["unanswered_calls"],
        json!([{"step": 1, "id": "f1"}])
    );
    assert!(middle["content"][1].get("tool_call_id").is_none());
    assert_eq!(
        middle["details"]["atif"]["unanswered_calls"],
        json!([{"step": 1, "id": "c0"}])
    );
    // ADP links a tool action followed by an observation: an empty result is put between.
    assert_eq!(interrupted["content"][1]["tool_call_id"], "c1");
    assert_eq!(
        (
            interrupted["content"][2]["content"].clone(),
            interrupted["content"][2]["tool_call_id"].clone()
        ),
        (json!(""), json!("c1"))
    );
    assert_eq!(
        interrupted["details"]["atif"]["unanswered_calls"],
        json!([{"step": 1, "id": "c1", "empty_result": 2}])
    );
    // The batch's one result answers its last call; the first stays unanswered, first.
    let b = &batch["content"];
    assert_eq!(b[1]["kwargs"]["keystrokes"], "cd /app\n");
    assert!(b[1].get("tool_call_id").is_none());
    assert_eq!(b[1]["description"], "Two commands.");
    assert_eq!(
        (b[2]["tool_call_id"].clone(), b[3]["tool_call_id"].clone()),
        (json!("k2"), json!("k2"))
    );
    assert_eq!(common::validate_adp(&out), 0);
    assert_exports_take_all(&out);
    // The lost result is an empty tool message, so the conversation can go on.
    let record = openai_record(&out[1..2]);
    let messages = record["messages"].as_array().expect("messages");
    let tool: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool.len(), 2);
    assert_eq!(tool[0]["content"], "text of a");
    assert_eq!(tool[1]["content"], "");
    assert_eq!(
        messages.last().map(|m| m["content"].clone()),
        Some(json!("Done."))
    );
}

#[test]
fn a_truncated_file_converts_its_complete_records_and_reports_the_cut_line() {
    let tmp = tempfile::tempdir().expect("dir");
    let good = doc(
        "ATIF-v1.7",
        json!([{"step_id": 1, "source": "user", "message": "hi"}, {"step_id": 2, "source": "agent", "message": "hello"}]),
    );
    let text = format!("{good}\n{}", &good.to_string()[..40]);
    let input = tmp.path().join("cut.jsonl");
    std::fs::write(&input, text).expect("write");
    let (code, out, stderr) = common::convert(&[&input], Some("atif"), &[]);
    assert_eq!((code, out.len()), (1, 1), "{stderr}");
    assert!(stderr.contains("cut.jsonl:2:"), "{stderr}");
}

//! The seed formats (memabra, Reflexion): conversion of the bundled samples and the real
//! Reflexion example, edge cases, raw-schema validation and auto-detection.

use std::path::PathBuf;

use crate::common::{self, convert, json_lines, sample_data, step_classes, trajkit, validate_adp};
use serde_json::{json, Value};

fn seeds() -> Option<PathBuf> {
    common::adp_corpus().map(|adp| adp.join("../seeds"))
}

#[test]
fn real_reflexion_example_converts_to_valid_adp_with_its_reward_and_reflection() {
    let Some(seeds) = seeds() else { return };
    let input = seeds.join("aiwg/examples/reflections-example-001.json");
    let raw: Value = serde_json::from_slice(&std::fs::read(&input).expect("read")).expect("json");
    let (code, out, stderr) = convert(&[&input], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected reflexion"), "{stderr}");
    assert_eq!(out.len(), 1);
    let t = &out[0];
    let expected_id = format!(
        "{}#{}",
        raw["loop_id"].as_str().expect("loop_id"),
        raw["iteration"]
    );
    assert_eq!(t["id"], expected_id);
    assert_eq!(
        t["details"]["reward"],
        raw["evaluator_output"]["reward_signal"]
    );
    assert_eq!(t["details"]["outcome"]["status"], "failure");
    let reflection = &t["details"]["reflections"][0];
    assert_eq!(
        reflection["text"],
        raw["self_reflection"]["reflection_text"]
    );
    assert_eq!(
        reflection["lessons"],
        raw["self_reflection"]["lessons_learned"]
    );
    assert_eq!(
        reflection["root_cause"],
        raw["self_reflection"]["credit_assignment"]["root_cause"]
    );
    assert_eq!(t["details"]["memory_metadata"], raw["memory_metadata"]);
    let actions = raw["actor_output"]["actions"].as_array().expect("actions");
    // task, one step per action, the rationale, the evaluation
    assert_eq!(
        t["content"].as_array().expect("content").len(),
        actions.len() + 3
    );
    assert_eq!(t["content"][2]["class_"], "code_action");
    assert_eq!(t["content"][2]["content"], actions[1]["command"]);
    assert_eq!(validate_adp(&out), 0);
    trajkit()
        .args(["validate", "-q", "--schema", "reflexion"])
        .arg(&input)
        .assert()
        .code(0);
    let (_, again, _) = convert(&[&input], None, &[]);
    assert_eq!(again, out, "ids and content are stable across runs");
}

#[test]
fn reflexion_samples_map_actions_rationale_and_evaluation() {
    let (code, out, stderr) = convert(&[&sample_data().join("reflexion/loop.jsonl")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(
        ids,
        vec![
            "ralph-fix-parser-2026-03-02#0",
            "ralph-fix-parser-2026-03-02#1"
        ]
    );
    assert_eq!(
        step_classes(&out[0]),
        vec![
            "text_observation",
            "api_action",
            "code_action",
            "message_action",
            "text_observation"
        ]
    );
    assert_eq!(out[0]["content"][1]["function"], "code_modification");
    assert_eq!(out[0]["content"][1]["kwargs"]["file_path"], "src/dates.py");
    assert_eq!(
        out[0]["content"][3]["description"],
        "Smallest change first."
    );
    let evaluation = out[0]["content"][4]["content"].as_str().expect("text");
    assert!(
        evaluation.contains("failed") && evaluation.contains("NameError"),
        "{evaluation}"
    );
    assert_eq!(out[1]["details"]["outcome"]["status"], "success");
    assert_eq!(out[1]["details"]["reward"], 1.0);
    assert_eq!(
        out[1]["details"]["reflexion"]["previous_reflections_used"],
        json!([0])
    );
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn a_bad_reflexion_record_is_rejected_with_a_pointer_and_the_rest_converted() {
    let dir = tempfile::tempdir().expect("dir");
    let good = std::fs::read_to_string(sample_data().join("reflexion/loop.jsonl")).expect("read");
    let mut bad: Value = serde_json::from_str(good.lines().next().expect("line")).expect("json");
    bad.as_object_mut()
        .expect("object")
        .remove("evaluator_output");
    let input = dir.path().join("loop.jsonl");
    std::fs::write(&input, format!("{good}{bad}\n[1, 2]\n")).expect("write");
    let rejects = dir.path().join("rejects.jsonl");
    let rejects_arg = rejects.to_string_lossy().into_owned();
    let (code, out, stderr) = convert(&[&input], Some("reflexion"), &["--rejects", &rejects_arg]);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 2);
    assert!(stderr.contains(":3: error[schema-required]"), "{stderr}");
    assert!(stderr.contains("/evaluator_output"), "{stderr}");
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects"));
    assert_eq!(rejected.len(), 2);
    assert_eq!(rejected[0]["record"], bad);
    assert_eq!(rejected[1]["line"], 4);
    assert_eq!(rejected[1]["diagnostics"][0]["rule"], "schema-type");
}

#[test]
fn memabra_events_drive_the_steps_in_timestamp_order() {
    let (code, out, stderr) = convert(&[&sample_data().join("memabra/traces.jsonl")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected memabra"), "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "traj-weather-001");
    // Derived by hand from the fixture: task, memory injection and its content, the first call
    // (recorded after its result, so reordered) and result, the user's correction, the second
    // call and result, the final answer.
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[3]["function"], "weather_api");
    assert_eq!(c[3]["kwargs"], json!({"city": "Lisbon", "day": "tomorrow"}));
    assert_eq!(c[3]["description"], "A forecast needs the weather API.");
    assert_eq!(c[3]["tool_call_id"], "e4");
    assert_eq!(c[4]["tool_call_id"], "e4");
    assert_eq!(c[4]["source"], "environment");
    assert_eq!(c[5]["source"], "user");
    assert_eq!(c[5]["content"], "I meant Lisbon, Ohio.");
    assert_eq!(c[1]["description"], "The user's unit preference is stored.");
    assert!(c[8]["content"].as_str().is_some_and(|a| a.contains("Ohio")));
    assert_eq!(t["details"]["reward"], 0.7);
    assert_eq!(t["details"]["reward_components"]["user_correction"], -0.3);
    assert_eq!(t["details"]["outcome"]["status"], "partial_success");
    // Events that make no step are kept whole; mapped ones keep what their step does not hold.
    let events = t["details"]["memabra"]["events"]
        .as_array()
        .expect("events");
    let recalled = events
        .iter()
        .find(|e| e["event_type"] == "candidates_recalled")
        .expect("unmapped event kept");
    assert_eq!(recalled["payload"], json!({"count": 2}));
    assert!(recalled.get("mapped").is_none());
    let call = events.iter().find(|e| e["event_id"] == "e4").expect("kept");
    assert_eq!(call["payload"], json!({"timeout_s": 5}));
    assert_eq!(call["mapped"], true);
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn memabra_without_execution_events_falls_back_to_decisions() {
    let input = sample_data().join("memabra/traces.jsonl");
    let (_, out, _) = convert(&[&input], Some("memabra"), &[]);
    let t = &out[1];
    assert_eq!(step_classes(t), vec!["text_observation", "message_action"]);
    assert_eq!(t["content"][1]["content"], "Bonjour !");
    assert_eq!(
        t["details"]["memabra"]["decisions"][0]["decision_type"],
        "direct_answer"
    );
    assert_eq!(t["details"]["outcome"]["status"], "success");
}

#[test]
fn memabra_strict_schema_flags_selected_payloads_and_lenient_accepts_it() {
    let input = sample_data().join("memabra/traces.jsonl");
    let out = trajkit()
        .args(["validate", "--report", "json", "--schema", "memabra"])
        .arg(&input)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let diags = json_lines(&out.stdout);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0]["pointer"], "/decisions/0/selected_payloads");
    assert_eq!(diags[0]["record_id"], "traj-weather-001");
    trajkit()
        .args(["validate", "-q", "--schema", "memabra", "--lenient"])
        .arg(&input)
        .assert()
        .code(0);
}

#[test]
fn auto_detection_refuses_unknown_input_and_unsniffable_stdin() {
    let dir = tempfile::tempdir().expect("dir");
    let unknown = dir.path().join("chat.jsonl");
    std::fs::write(&unknown, "{\"messages\": []}\n").expect("write");
    let (code, _, stderr) = convert(&[&unknown], None, &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot detect the format of"), "{stderr}");
    assert!(stderr.contains("messages"), "{stderr}");
    let out = trajkit()
        .args(["convert", "-"])
        .write_stdin("{}\n")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from"));
}

#[test]
fn the_whole_sample_directory_converts_with_every_format_detected() {
    let (code, out, stderr) = convert(&[&sample_data()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    for format in [
        "adp",
        "aider",
        "anthropic",
        "codex",
        "copilot-cli",
        "crush",
        "cursor",
        "droid",
        "gemini-cli",
        "goose",
        "hermes",
        "inspect",
        "kimi-cli",
        "ledgermind",
        "letta-code",
        "memabra",
        "mini-swe-agent",
        "openai",
        "opencode",
        "openhands",
        "pi",
        "qwen-code",
        "ralph",
        "reflexion",
        "sharegpt",
        "swe-agent",
    ] {
        assert!(stderr.contains(&format!("detected {format}")), "{stderr}");
    }
    // 5 ADP + 3 ATIF (a trajectory and the subagent it embeds; a trajectory and its
    // continuation file) + 2 Claude Code files (a session and its subagent) + 1 Codex rollout
    // + 2 memabra + 2 Reflexion + 3 Ralph attempts + 4 LedgerMind sessions + 2 OpenAI chats
    // + 2 ShareGPT conversations + 2 OpenHands runs + 2 SWE-agent runs + 1 Gemini CLI session
    // + 2 mini-swe-agent runs + 2 Inspect samples + 2 Anthropic Messages API conversations
    // + 1 Pi session + 1 Droid session + 2 Hermes sessions (a parent and its subagent)
    // + 1 Kimi CLI session + 2 Crush sessions (one a sub-session)
    // + 1 Aider session + 1 Qwen Code session
    // + 1 Copilot CLI session + 1 Cursor transcript + 1 Letta Code transcript
    // + 2 Goose sessions (one in its store, one a session file)
    // + 2 OpenCode sessions (one a sub-session).
    assert_eq!(out.len(), 53);
    assert_eq!(validate_adp(&out), 0);
}

/// Every step text of a trajectory, concatenated.
fn texts(t: &Value) -> String {
    t["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["content"].as_str().or(s["description"].as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn mapping_options_leave_their_part_in_details_instead_of_the_steps() {
    // memabra: no steps from decisions; they stay in details.
    let memabra = sample_data().join("memabra/traces.jsonl");
    let (code, out, stderr) = convert(&[&memabra], None, &["--memabra-decisions", "false"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(step_classes(&out[1]), vec!["text_observation"]);
    assert_eq!(
        out[1]["details"]["memabra"]["decisions"][0]["decision_type"],
        "direct_answer"
    );
    // Traces whose events record execution do not change.
    let (_, default, _) = convert(&[&memabra], None, &[]);
    assert_eq!(out[0], default[0]);

    // Reflexion: no closing message; rationale and strategy stay in details.
    let loop_file = sample_data().join("reflexion/loop.jsonl");
    let (code, out, stderr) = convert(
        &[&loop_file],
        None,
        &["--reflexion-closing-message", "false"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        step_classes(&out[0]),
        vec![
            "text_observation",
            "api_action",
            "code_action",
            "text_observation"
        ]
    );
    assert_eq!(
        out[0]["details"]["reflexion"]["actor_strategy"],
        "Smallest change first."
    );
    assert_eq!(validate_adp(&out), 0);

    // Ralph: the plan leaves the first observation for details.ralph.plan.
    let ralph = sample_data().join("ralph");
    let (_, with_plan, _) = convert(&[&ralph], Some("ralph"), &[]);
    let (code, out, stderr) = convert(&[&ralph], Some("ralph"), &["--ralph-plan", "false"]);
    assert_eq!(code, 0, "{stderr}");
    let first = &out[0];
    let plan = first["details"]["ralph"]["plan"]
        .as_str()
        .expect("plan kept");
    assert!(!plan.trim().is_empty());
    assert!(!texts(first).contains(plan.trim_end()), "{}", texts(first));
    assert!(texts(&with_plan[0]).contains(plan.trim_end()));
    assert!(with_plan[0]["details"]["ralph"].get("plan").is_none());
    assert_eq!(validate_adp(&out), 0);
}

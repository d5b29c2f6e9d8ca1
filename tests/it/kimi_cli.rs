//! Kimi CLI context files: the corpus's real session and its two subagent transcripts, and
//! files of our own (`tests/fixtures/kimi_cli/`) for the layout from 0.59 on (a session folder
//! with an `Agent` subagent under `subagents/`), a file of an older version that starts with a
//! message, and lines Kimi would not write.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, step_classes, tool_actions_and_links,
    validate_adp,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kimi_cli")
}

const SESSION: &str = "w_7f3a/6e0f2c1d-8b4a-4c55-9a0e-3d2b1c0a9f88";

/// Lines of `file` whose `role` is `role`.
fn count_role(file: &Path, role: &str) -> usize {
    std::fs::read_to_string(file)
        .expect("read")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["role"] == role)
        .count()
}

#[test]
fn the_corpus_session_and_its_subagents_convert_linked() {
    let Some(root) = agent_logs() else { return };
    let dir = root.join("kimi-cli");
    let stem = "kimi-cli__531d195b-6436-426e-b010-4bf723a992de";
    let main = dir.join(format!("{stem}.jsonl"));
    let read_1 = dir.join(format!("{stem}_read_1.jsonl"));
    let read_2 = dir.join(format!("{stem}_read_2.jsonl"));
    let (code, out, err) = convert(&[&main, &read_1, &read_2], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("detected kimi-cli").count(), 3, "{err}");
    assert_eq!(out.len(), 3);
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "kimi-cli corpus");
    for (t, file) in out.iter().zip([&main, &read_1, &read_2]) {
        // Every call is an action linked to its result, one call per assistant message.
        let (actions, linked) = tool_actions_and_links(t);
        assert_eq!(actions, count_role(file, "tool"), "{}", t["id"]);
        assert!(linked, "{}", t["id"]);
        let steps = t["content"].as_array().expect("content");
        let results: Vec<&Value> = steps
            .iter()
            .filter(|s| s["tool_call_id"].is_string() && s["class_"] == "text_observation")
            .collect();
        assert_eq!(results.len(), actions);
        // Checkpoints and usage lines are all in details.
        let kimi = &t["details"]["kimi_cli"];
        assert_eq!(
            kimi["checkpoints"].as_array().map(Vec::len),
            Some(count_role(file, "_checkpoint"))
        );
        assert_eq!(
            kimi["usage"].as_array().map(Vec::len),
            Some(count_role(file, "_usage"))
        );
        assert!(t["details"]["source"]["left_out"].is_null(), "{}", t["id"]);
        assert_eq!(step_classes(t).last(), Some(&"message_action"));
    }
    let [session, first, second] = [&out[0], &out[1], &out[2]];
    assert_eq!(session["id"], stem);
    let steps = session["content"].as_array().expect("content");
    // The status block stays at the head of the result.
    let bash = steps
        .iter()
        .position(|s| s["tool_call_id"] == "Bash:4" && s["class_"] == "code_action")
        .expect("Bash:4");
    assert_eq!(
        steps[bash]["content"],
        "cd /testbed && python reproduce_issue.py"
    );
    let result = steps[bash + 1]["content"].as_str().expect("text");
    assert!(result.starts_with("<system>Command executed successfully.</system>\n"));
    // The session names its subagents' files in the ReadContext results; each subagent, converted
    // in the same run, names the call that spawned it.
    let subagents = session["details"]["kimi_cli"]["subagents"]
        .as_array()
        .expect("subagents");
    let named: Vec<(&str, &str)> = subagents
        .iter()
        .map(|s| {
            (
                s["tool_call_id"].as_str().unwrap_or_default(),
                s["trajectory_id"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        named,
        vec![
            ("ReadContext:1", first["id"].as_str().unwrap_or_default()),
            ("ReadContext:5", second["id"].as_str().unwrap_or_default()),
        ]
    );
    for (sub, call) in [(first, "ReadContext:1"), (second, "ReadContext:5")] {
        let agent = &sub["details"]["kimi_cli"]["agent"];
        assert_eq!(agent["parent_trajectory_id"], stem);
        assert_eq!(agent["via"], "read");
        assert_eq!(agent["spawned_by"]["tool_call_id"], call);
        // Subagent ids restart at 0.
        assert_eq!(sub["content"][1]["tool_call_id"], "Glob:0");
    }
    // Alone, a subagent still names its session, but not the call.
    let (code, out, err) = convert(&[&read_1], None, &[]);
    assert_eq!(code, 0, "{err}");
    let agent = &out[0]["details"]["kimi_cli"]["agent"];
    assert_eq!(agent["parent_trajectory_id"], stem);
    assert!(agent["spawned_by"].is_null());
}

#[test]
fn a_session_folder_converts_with_its_agent_subagent() {
    let dir = fixtures().join(SESSION);
    let main = dir.join("context.jsonl");
    let sub = dir.join("subagents/a4c1e9f0/context.jsonl");
    let (code, out, err) = convert(&[&main, &sub], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "kimi-cli fixture");
    let (session, agent) = (&out[0], &out[1]);
    assert_eq!(session["id"], "6e0f2c1d-8b4a-4c55-9a0e-3d2b1c0a9f88");
    assert_eq!(
        step_classes(session),
        vec![
            "text_observation", // the system prompt
            "text_observation", // the user's request
            "code_action",      // Shell with only a command is bash
            "text_observation",
            "api_action",       // ReadFile
            "text_observation", // its error
            "api_action",       // Agent
            "text_observation",
            "text_observation",  // Kimi's CHECKPOINT note
            "text_observation",  // the user's text
            "image_observation", // and image
            "api_action",
            "text_observation",
            "message_action",
        ]
    );
    let steps = session["content"].as_array().expect("content");
    assert_eq!(steps[0]["name"], "system");
    assert_eq!(steps[2]["description"], "Let me look at the report module.");
    assert_eq!(
        steps[2]["reasoning_content"],
        "I should look at the report code first."
    );
    assert_eq!(steps[8]["source"], "environment");
    assert_eq!(steps[9]["source"], "user");
    assert_eq!(
        steps[13]["reasoning_content"],
        "The fix is in; the report should be right now."
    );
    let kimi = &session["details"]["kimi_cli"];
    assert_eq!(kimi["error_results"][0]["tool_call_id"], "ReadFile:1");
    assert_eq!(
        kimi["error_results"][0]["status"],
        "ERROR: `src/reports.py` does not exist."
    );
    assert_eq!(kimi["token_count"], 2601);
    assert_eq!(kimi["thinking_signatures"], 1);
    assert_eq!(kimi["extra_fields"][0]["fields"]["name"], "kimi");
    assert_eq!(kimi["checkpoints"][1]["step"], 8);
    // The audio part no step holds is kept and counted.
    assert_eq!(kimi["unmapped"][0]["pointer"], "/content/2");
    let left = &session["details"]["source"]["left_out"];
    assert_eq!(left["blocks"], 1);
    assert_eq!(left["messages"]["in"], left["messages"]["kept"]);
    assert_eq!(
        kimi["subagents"][0]["trajectory_id"],
        "6e0f2c1d-8b4a-4c55-9a0e-3d2b1c0a9f88/subagents/a4c1e9f0"
    );
    assert_eq!(agent["id"], kimi["subagents"][0]["trajectory_id"]);
    let link = &agent["details"]["kimi_cli"]["agent"];
    assert_eq!(link["via"], "agent");
    assert_eq!(link["spawned_by"]["tool_call_id"], "Agent:2");
    assert_eq!(link["spawned_by"]["line"], 12);
}

/// A session folder (0.59 on) is one input: its context files are read, its subagents linked,
/// and Kimi's other files (`wire.jsonl`, `state.json`, a subagent's `meta.json`) left alone;
/// walking a folder above it finds it.
#[test]
fn a_session_folder_is_read_whole() {
    let folder = fixtures().join(SESSION);
    for input in [folder.clone(), fixtures().join("w_7f3a")] {
        let (code, out, err) = convert(&[&input], None, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("detected kimi-cli"), "{err}");
        let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "6e0f2c1d-8b4a-4c55-9a0e-3d2b1c0a9f88",
                "6e0f2c1d-8b4a-4c55-9a0e-3d2b1c0a9f88/subagents/a4c1e9f0"
            ]
        );
        let link = &out[1]["details"]["kimi_cli"]["agent"]["spawned_by"];
        assert_eq!(link["tool_call_id"], "Agent:2");
    }
    // A folder with a data file that is not Kimi's is walked file by file instead.
    let dir = tempfile::tempdir().expect("dir");
    let copy = dir.path().join("s1");
    std::fs::create_dir(&copy).expect("mkdir");
    std::fs::copy(folder.join("context.jsonl"), copy.join("context.jsonl")).expect("copy");
    std::fs::write(copy.join("notes.json"), "{\"todo\": []}\n").expect("write");
    let (code, _, err) = convert(&[&copy], None, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("notes.json"), "{err}");
}

#[test]
fn a_file_starting_with_a_message_is_kimis_by_its_ids_and_status_blocks() {
    let file = fixtures().join("legacy/9d2e4b10-55c3-4f0e-8a61-2b7c9e0d1a34.jsonl");
    let (code, out, err) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected kimi-cli"), "{err}");
    let t = &out[0];
    assert_eq!(t["id"], "9d2e4b10-55c3-4f0e-8a61-2b7c9e0d1a34");
    // `Bash` with only its command is bash code; with a timeout too it stays a call.
    assert_eq!(t["content"][1]["class_"], "code_action");
    assert_eq!(t["content"][3]["class_"], "api_action");
    assert_eq!(
        t["details"]["kimi_cli"]["error_results"][0]["tool_call_id"],
        "Bash:1"
    );
}

#[test]
fn lines_kimi_would_not_write_are_kept_or_counted() {
    let file = fixtures().join("odd/3c9a7e21-0b6d-4e8f-9a12-7d5c4b3a2e10.jsonl");
    let (code, out, err) = convert(&[&file], Some("kimi-cli"), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(validate_adp(&out), 0);
    let t = &out[0];
    let kimi = &t["details"]["kimi_cli"];
    assert_eq!(kimi["unlinked_results"][0]["tool_call_id"], "Shell:9");
    assert_eq!(kimi["unanswered_calls"][0]["tool_call_id"], "Shell:1");
    assert!(t["content"][4]["tool_call_id"].is_null());
    assert_eq!(
        kimi["unmapped"][0]["pointer"],
        "/tool_calls/0/function/arguments"
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(
        (left["values"].as_u64(), left["wrong_typed"].as_u64()),
        (Some(1), Some(2))
    );
    // --strict rejects what could not be mapped.
    let (code, out, _) = convert(&[&file], Some("kimi-cli"), &["--strict"]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
}

#[test]
fn other_chat_readers_do_not_take_a_kimi_file() {
    let file = fixtures().join(SESSION).join("context.jsonl");
    for from in ["openai", "anthropic", "sharegpt"] {
        let (code, out, err) = convert(&[&file], Some(from), &[]);
        assert_ne!(code, 0, "{from}: {err}");
        assert!(out.is_empty(), "{from}");
    }
    // From standard input the file has no name, so no session id.
    let out = crate::common::trajkit()
        .args(["convert", "--from", "kimi-cli", "-"])
        .write_stdin(std::fs::read(&file).expect("read"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing-id"));
}

/// A Kimi Code agent log (`.kimi-code/sessions/wd_<project>/session_<uuid>/agents/<agent>/
/// wire.jsonl`, protocol 1.4): the conversation of each agent rebuilt from its messages and
/// loop events, every call linked to its result, the subagent linked to its parent through
/// the session's `state.json` and the parent's `Agent` call, bookkeeping counted.
#[test]
fn a_kimi_code_agent_log_converts_with_its_subagent() {
    let session = fixtures().join("code/wd_shop_4e1f/session_0b7c2d9e-1a3f-4e5b-8c6d-7e8f9a0b1c2d");
    let main = session.join("agents/main/wire.jsonl");
    let sub = session.join("agents/agent-0/wire.jsonl");
    let (code, out, err) = convert(&[&main, &sub], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("detected kimi-cli").count(), 2, "{err}");
    assert_eq!(validate_adp(&out), 0);
    assert_every_sft_target_accepts(&out, "kimi code fixture");
    let (parent, agent) = (&out[0], &out[1]);
    assert_eq!(parent["id"], "session_0b7c2d9e-1a3f-4e5b-8c6d-7e8f9a0b1c2d");
    assert_eq!(
        step_classes(parent),
        vec![
            "text_observation",  // the system prompt
            "text_observation",  // the user's request
            "image_observation", // and its image
            "api_action",        // Read
            "code_action",       // Bash with only a command
            "text_observation",
            "text_observation",
            "api_action", // Agent
            "text_observation",
            "text_observation", // the system reminder
            "text_observation", // the compaction's summary
            "message_action",
        ]
    );
    let (actions, linked) = tool_actions_and_links(parent);
    assert_eq!(actions, 3);
    assert!(linked);
    let steps = parent["content"].as_array().expect("content");
    assert_eq!(steps[0]["name"], "system");
    assert_eq!(steps[3]["description"], "Reading the cart code.");
    assert_eq!(
        steps[3]["reasoning_content"],
        "I should read the cart module first."
    );
    assert_eq!(steps[4]["content"], "python -m pytest -q");
    // A result keeps Kimi's note after the output.
    assert!(steps[5]["content"]
        .as_str()
        .is_some_and(|t| t.ends_with("<system>2 lines read from file.</system>")));
    assert_eq!(steps[9]["source"], "environment");
    assert_eq!(steps[10]["name"], "compaction");
    assert_eq!(steps[11]["reasoning_content"], "Drop the + 1.");
    let kimi = &parent["details"]["kimi_cli"];
    assert_eq!(kimi["protocol_version"], "1.4");
    assert_eq!(kimi["created_at"], 1785751200000u64);
    assert_eq!(kimi["model"], "moonshot-ai/kimi-demo");
    assert_eq!(kimi["error_results"][0]["tool_call_id"], "Bash_1");
    assert_eq!(kimi["compactions"][0]["step"], 10);
    assert_eq!(kimi["compactions"][0]["record"]["compactedCount"], 9);
    assert_eq!(kimi["usage_records"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        kimi["subagents"][0]["trajectory_id"],
        "session_0b7c2d9e-1a3f-4e5b-8c6d-7e8f9a0b1c2d/agents/agent-0"
    );
    let left = &parent["details"]["source"]["left_out"];
    // tools, configs without a new prompt (x2), turn.prompt, llm.request, approval,
    // step.begin (x3), step.end (x3), compaction begin/complete, turn.ended.
    assert_eq!(left["lines"], 15);
    assert_eq!(left["messages"]["in"], left["messages"]["kept"]);
    // The subagent names its parent and the call that spawned it.
    assert_eq!(agent["id"], kimi["subagents"][0]["trajectory_id"]);
    let link = &agent["details"]["kimi_cli"]["agent"];
    assert_eq!(
        link["parent_trajectory_id"],
        "session_0b7c2d9e-1a3f-4e5b-8c6d-7e8f9a0b1c2d"
    );
    assert_eq!(link["spawned_by"]["tool_call_id"], "Agent_2");
    assert_eq!(link["spawned_by"]["line"], 20);
    let (actions, linked) = tool_actions_and_links(agent);
    assert_eq!((actions, linked), (1, true));
    assert_eq!(step_classes(agent).last(), Some(&"message_action"));
}

/// Walking a folder of Kimi Code sessions reads each agent's log and skips the session's
/// `state.json`, saying why.
#[test]
fn walking_kimi_code_sessions_reads_the_logs_and_skips_state_json() {
    let (code, out, err) = convert(&[&fixtures().join("code")], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.len(), 2, "{err}");
    assert!(err.contains("state.json: skipped"), "{err}");
    let agent = out
        .iter()
        .find(|t| t["details"]["kimi_cli"]["file_kind"] == "subagent")
        .expect("the subagent");
    assert_eq!(
        agent["details"]["kimi_cli"]["agent"]["spawned_by"]["tool_call_id"],
        "Agent_2"
    );
}

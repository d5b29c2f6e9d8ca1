//! Aider chat histories: the corpus's real session (v0.82.2: models and edit formats switched
//! mid-session, an edit-format error, rate-limit retries, unpaired markers) and histories of
//! our own for the edit formats, the first versions' layout, files whose trailing spaces were
//! trimmed, empty sessions, commands; Aider's LLM history (the corpus's, and logs of our own in
//! both layouts Aider wrote), alone and beside the chat history.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links, validate_adp,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/aider/{name}.aider.chat.history.md"))
}

/// The steps of class `class` (`api_action`, ...).
fn of_class<'a>(t: &'a Value, class: &str) -> Vec<&'a Value> {
    t["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|s| s["class_"] == class)
        .collect()
}

/// The observation answering the action `step`, if any.
fn answer<'a>(t: &'a Value, step: &Value) -> Option<&'a Value> {
    let id = step["tool_call_id"].as_str()?;
    t["content"]
        .as_array()?
        .iter()
        .find(|s| s["class_"] == "text_observation" && s["tool_call_id"] == id)
}

#[test]
fn the_corpus_session_converts_with_every_edit_and_model() {
    let Some(root) = agent_logs() else { return };
    let file = root.join("aider/simple-calulator__.aider.chat.history.md");
    let (code, out, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected aider"), "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(validate_adp(&out), 0);
    let t = &out[0];
    assert_eq!(t["id"], "aider-2025-05-04T17:02:36");
    let aider = &t["details"]["aider"];
    assert_eq!(aider["version"], "v0.82.2");
    let formats: Vec<&str> = aider["models"]
        .as_array()
        .expect("models")
        .iter()
        .filter_map(|m| m["edit_format"].as_str())
        .collect();
    assert_eq!(formats, ["diff-fenced", "whole", "diff-fenced", "whole"]);
    assert_eq!(aider["model"], "openai/deepseek.deepseek-chat");
    // 25 complete SEARCH/REPLACE blocks (the one in the edit-format error is Aider's message,
    // not an edit) and 14 whole files; every edit is linked.
    let edits = of_class(t, "api_action");
    let count = |f: &str| edits.iter().filter(|e| e["function"] == f).count();
    assert_eq!((count("replace_in_file"), count("write_file")), (25, 14));
    let (actions, linked) = tool_actions_and_links(t);
    assert!(actions == 39 && linked);
    let applied = of_class(t, "text_observation")
        .iter()
        .filter(|o| {
            o["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Applied edit to "))
        })
        .count();
    assert_eq!(
        applied, 28,
        "one per edit of a file with an \"Applied edit\" line"
    );
    let failure = edits
        .iter()
        .filter_map(|e| answer(t, e))
        .find(|o| {
            o["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("The LLM did not conform"))
        })
        .expect("the edit-format error answers an edit");
    assert!(failure["content"]
        .as_str()
        .is_some_and(|c| c.contains("SearchReplaceNoExactMatch")));
    // The two markers that start no block are counted, with their lines.
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["values"], 2);
    assert_eq!(aider["unpaired_markers"][0]["line"], 515);
    // Commands, rate-limit retries and the /models listing are kept as they were written.
    let commands: Vec<&str> = aider["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(|c| c["command"].as_str())
        .collect();
    assert!(["/code", "/commit", "/help", "/model", "/models", "/reset"]
        .iter()
        .all(|c| commands.contains(c)));
    let status: String = aider["status"]
        .as_array()
        .expect("status")
        .iter()
        .filter_map(|s| s["text"].as_str())
        .collect();
    assert!(
        status.contains("Retrying in 32.0 seconds...")
            && status.contains("mistral/open-mistral-7b")
    );
    // Qwen's <think> blocks are reasoning.
    assert!(t["content"]
        .as_array()
        .expect("content")
        .iter()
        .any(|s| s["reasoning_content"]
            .as_str()
            .is_some_and(|r| r.starts_with("Okay, the user is experiencing an error"))));
    assert_every_sft_target_accepts(&out, "aider corpus");
}

/// A log of the requests Aider sent, written for these tests (`NAME.aider.llm.history`).
fn llm_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/aider/{name}.aider.llm.history"))
}

/// The text of each step of `t`.
fn texts(t: &Value) -> Vec<&str> {
    t["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|s| s["content"].as_str())
        .collect()
}

#[test]
fn the_corpus_llm_history_makes_a_trajectory_per_request_that_got_a_reply() {
    let Some(root) = agent_logs() else { return };
    let file = root.join("aider/simple-calulator__.aider.llm.history");
    let (code, out, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected aider"), "{stderr}");
    // 34 requests: 20 replies, 14 rate-limited calls listed with the request after them.
    assert_eq!(out.len(), 20);
    assert_eq!(validate_adp(&out), 0);
    let failed: Vec<usize> = out
        .iter()
        .filter_map(|t| t["details"]["aider"]["failed_attempts"].as_array())
        .map(Vec::len)
        .collect();
    assert_eq!(failed, [9, 5]);
    let ids: std::collections::HashSet<&str> =
        out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids.len(), 20);
    for t in &out {
        let steps = t["content"].as_array().expect("content");
        assert_eq!(steps[0]["name"], "system", "{}", t["id"]);
        assert_eq!(steps.last().expect("reply")["class_"], "message_action");
        assert!(t["details"]["aider"]["sent_at"].is_string());
    }
    // The first request: the system prompt, Aider's example turns, the repo map, the ask.
    assert!(texts(&out[0])[0].starts_with("Act as an expert software developer."));
    assert!(texts(&out[0])
        .last()
        .is_some_and(|r| r.starts_with("This repository contains a simple web-based calculator")));
    // qwen3's <think> block in a reply is its reasoning.
    assert!(out.iter().any(|t| t["content"]
        .as_array()
        .and_then(|s| s.last())
        .is_some_and(|r| r["reasoning_content"].is_string())));
    assert_every_sft_target_accepts(&out, "aider llm history");
}

#[test]
fn llm_history_requests_are_read_as_the_model_got_them() {
    let (code, out, stderr) = convert(&[&llm_fixture("notes")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 2, "the failed call rides with its retry");
    assert_eq!(validate_adp(&out), 0);
    let (first, retry) = (&out[0], &out[1]);
    assert_eq!(first["id"], "aider-llm-2025-03-01T10:00:00");
    assert_eq!(
        step_classes(first),
        [
            "text_observation",
            "text_observation",
            "message_action",
            "text_observation",
            "message_action"
        ]
    );
    let reply = &first["content"][4];
    assert_eq!(reply["reasoning_content"], "A one-line rename.");
    assert!(reply["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("notes.py\n```\n<<<<<<< SEARCH")));
    // The retry: a list content (an image, a cached text part), an empty message.
    assert_eq!(retry["id"], "aider-llm-2025-03-01T10:01:09");
    assert_eq!(
        step_classes(retry),
        [
            "text_observation",
            "text_observation",
            "image_observation",
            "text_observation",
            "message_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(texts(retry)[3], "notes.py\n```\nprint(\"hello\")\n\n```");
    let aider = &retry["details"]["aider"];
    assert_eq!(
        aider["failed_attempts"][0]["sent_at"],
        "2025-03-01T10:01:00"
    );
    assert_eq!(aider["empty_messages"], 1);
    let left = &retry["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 23, "{left}");
    assert!(
        stderr.contains("23 lines left out, 6 of 7 messages kept"),
        "{stderr}"
    );
    assert_every_sft_target_accepts(&out, "aider llm fixture");

    // Before v0.49: blank lines between messages; a failed call at the end rides with the
    // request before it.
    let (code, out, stderr) = convert(&[&llm_fixture("legacy")], Some("aider"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(
        texts(&out[0]),
        [
            "Act as an expert software developer.\nTake requests for changes to the supplied code.",
            "Add a docstring to main.",
            "data:image/png;base64,AAAA",
            "Here is the docstring."
        ]
    );
    assert_eq!(
        out[0]["details"]["aider"]["failed_attempts"][0]["sent_at"],
        "2024-06-20T09:02:00"
    );

    // Only failed calls: nothing to train on, refused.
    let (code, out, stderr) = convert(&[&llm_fixture("failed")], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains("empty-trajectory") && stderr.contains("2 request(s)"),
        "{stderr}"
    );
}

#[test]
fn a_walk_reads_the_chat_history_not_the_llm_history_of_the_same_session() {
    let dir = tempfile::tempdir().expect("dir");
    let both = dir.path().join("both");
    let alone = dir.path().join("alone");
    std::fs::create_dir_all(&both).expect("dir");
    std::fs::create_dir_all(&alone).expect("dir");
    std::fs::copy(fixture("shop"), both.join("s.aider.chat.history.md")).expect("copy");
    std::fs::copy(llm_fixture("notes"), both.join("s.aider.llm.history")).expect("copy");
    std::fs::copy(llm_fixture("notes"), alone.join(".aider.llm.history")).expect("copy");
    let (code, out, stderr) = convert(&[&both], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), 1, "{stderr}");
    assert!(out[0]["details"]["aider"]["log"].is_null());
    assert!(
        stderr
            .contains("s.aider.llm.history: skipped: Aider's LLM history beside the chat history"),
        "{stderr}"
    );
    // Given itself, or alone in its folder, the LLM history is read.
    let (code, out, stderr) = convert(&[&both.join("s.aider.llm.history")], None, &[]);
    assert_eq!((code, out.len()), (0, 2), "{stderr}");
    let (code, out, stderr) = convert(&[&alone], None, &[]);
    assert_eq!((code, out.len()), (0, 2), "{stderr}");
    // A file of that name that does not start with a request is declined, saying why.
    let odd = dir.path().join("odd.aider.llm.history");
    std::fs::write(&odd, "notes\n").expect("write");
    let (code, _, stderr) = convert(&[&odd], None, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("closest: aider (named as Aider's LLM history, but its first line is not `TO LLM <time>`"),
        "{stderr}"
    );
    let (code, _, stderr) = convert(&[&odd], Some("aider"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("not-a-unit"), "{stderr}");
}

#[test]
fn edits_are_actions_answered_by_applied_lines_errors_or_nothing() {
    let (code, out, stderr) = convert(&[&fixture("shop")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out.len(),
        1,
        "the empty session before it makes no trajectory"
    );
    assert_eq!(validate_adp(&out), 0);
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "api_action",
            "api_action",
            "api_action",
            "message_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action",
            "text_observation",
            "api_action",
            "message_action",
            "text_observation",
            "text_observation",
            "api_action",
        ]
    );
    let c = t["content"].as_array().expect("content");
    // A two-line turn; reasoning and prose before the first edit on it.
    assert_eq!(
        c[0]["content"],
        "Round prices to cents\nand keep the total in sync."
    );
    assert_eq!(
        c[1]["reasoning_content"],
        "Both files compute money; round in one place."
    );
    assert!(c[1]["description"]
        .as_str()
        .is_some_and(|d| d.starts_with("I will round")));
    assert_eq!(c[1]["kwargs"]["path"], "shop/prices.py");
    assert_eq!(
        c[1]["kwargs"]["replace"],
        "def price(p):\n    return round(p, 2)\n"
    );
    // Both edits of cart.py are answered by its one line; the model's own heading and quote
    // stay in its reply.
    assert_eq!(
        answer(t, &c[2]).map(|o| &o["content"]),
        Some(&Value::from("Applied edit to shop/cart.py"))
    );
    assert_eq!(
        answer(t, &c[3]).map(|o| &o["content"]),
        Some(&Value::from("Applied edit to shop/cart.py"))
    );
    assert!(c[4]["content"]
        .as_str()
        .is_some_and(|m| m.starts_with("#### Why one place\n> Rounding")));
    // The edit-format error (several lines) answers the failed edit; the retry is applied.
    let error = c[10]["content"].as_str().expect("text");
    assert!(error.starts_with("The LLM did not conform") && error.ends_with("docstrings, etc"));
    assert_eq!(c[12]["content"], "Applied edit to shop/receipt.py");
    // After `/ask`, fenced code is shown, not written; under `whole`, a named block is a file
    // and an unnamed one (a shell command) is prose.
    assert!(c[14]["content"]
        .as_str()
        .is_some_and(|m| m.contains("TAX = 0.2")));
    assert_eq!(c[16]["function"], "write_file");
    assert_eq!(c[16]["kwargs"]["content"], "TAX = 0.1\n");
    // The last edit has no result and nothing after it: unlinked.
    assert!(c[20]["tool_call_id"].is_null());
    let aider = &t["details"]["aider"];
    assert_eq!(aider["unanswered_edits"][0]["step"], 20);
    assert_eq!(aider["edit_format"], "whole");
    assert_eq!(aider["models"][0]["edit_format"], "diff-fenced");
    assert_eq!(aider["commands"][1]["command"], "/model");
    assert_eq!(aider["cost_usd"], 0.03);
    assert_eq!(
        aider["empty_sessions"][0]["started_at"],
        "2026-04-01 09:00:00"
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 6, "the empty session's lines");
    assert_every_sft_target_accepts(&out, "aider shop");
}

#[test]
fn the_first_versions_and_trimmed_files_read_the_same() {
    for (name, function, path) in [
        ("legacy", "replace_in_file", "app.py"),
        ("head-updated", "replace_in_file", "main.go"),
        ("trimmed", "apply_diff", "lib.py"),
    ] {
        let (code, out, stderr) = convert(&[&fixture(name)], None, &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(validate_adp(&out), 0);
        let t = &out[0];
        assert_eq!(
            step_classes(t),
            ["text_observation", "api_action", "text_observation"],
            "{name}"
        );
        let c = t["content"].as_array().expect("content");
        assert_eq!(
            (c[1]["function"].as_str(), c[1]["kwargs"]["path"].as_str()),
            (Some(function), Some(path))
        );
        assert_eq!(c[2]["content"], format!("Applied edit to {path}"), "{name}");
    }
    let (_, out, _) = convert(&[&fixture("legacy")], None, &[]);
    assert_eq!(out[0]["content"][0]["content"], "add a /health endpoint");
}

#[test]
fn a_repository_converts_its_hidden_history_and_sessions_get_unique_ids() {
    let dir = tempfile::tempdir().expect("dir");
    let sample = sample_data().join("aider/todo-app.aider.chat.history.md");
    for repo in ["one", "two"] {
        std::fs::create_dir_all(dir.path().join(repo)).expect("dir");
        std::fs::copy(
            &sample,
            dir.path().join(repo).join(".aider.chat.history.md"),
        )
        .expect("copy");
        std::fs::write(dir.path().join(repo).join("README.md"), "# a repository\n").expect("write");
    }
    let (code, out, stderr) = convert(&[dir.path()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(
        ids,
        ["aider-2026-03-06T10:02:11", "aider-2026-03-06T10:02:11_2"]
    );
}

#[test]
fn a_history_with_only_empty_sessions_is_rejected_and_other_files_are_not_histories() {
    let dir = tempfile::tempdir().expect("dir");
    let empty = dir.path().join(".aider.chat.history.md");
    std::fs::write(
        &empty,
        "\n# aider chat started at 2026-01-01 10:00:00\n\n> Aider v0.86.2  \n\n#### /exit  \n",
    )
    .expect("write");
    let (code, out, stderr) = convert(&[&empty], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains("empty-trajectory") && stderr.contains("1 session(s)"),
        "{stderr}"
    );
    let json = dir.path().join("chat.jsonl");
    std::fs::write(&json, "{\"role\": \"user\", \"content\": \"hi\"}\n").expect("write");
    let (code, out, stderr) = convert(&[&json], Some("aider"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        out.is_empty() && stderr.contains("not an Aider chat history"),
        "{stderr}"
    );
}

//! Claude Code sessions: the parentUuid tree followed (parallel calls keep their results, edits
//! are left out), lines of one response merged, subagent files and project directories,
//! bookkeeping lines, cut-off sessions, other tools' files refused, and the real sessions of the
//! corpus checked call by call and through validate and every SFT export.

use std::path::{Path, PathBuf};

use crate::common::{
    agent_logs, convert, files_in, sample_data, step_classes, trajkit, validate_adp,
};
use serde_json::{json, Value};

const SESSION: &str = "7f3c2a10-0000-4000-8000-000000000001";

fn session_file() -> PathBuf {
    sample_data().join(format!("claude-code/{SESSION}.jsonl"))
}

fn sample_lines() -> Vec<Value> {
    std::fs::read_to_string(session_file())
        .expect("sample")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

fn write_lines(dir: &Path, lines: &[Value]) -> PathBuf {
    let path = dir.join("session.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

/// A turn of a hand-made session `s1`.
fn turn(uuid: &str, parent: Option<&str>, kind: &str, mid: &str, content: Value) -> Value {
    let mut v = json!({"sessionId": "s1", "uuid": uuid, "parentUuid": parent,
        "isSidechain": false, "type": kind, "message": {"role": kind, "content": content}});
    if kind == "assistant" {
        v["message"]["id"] = json!(mid);
    }
    v
}

fn call(id: &str, name: &str) -> Value {
    json!([{"type": "tool_use", "id": id, "name": name, "input": {"path": id}}])
}

fn result(id: &str, text: &str) -> Value {
    json!([{"type": "tool_result", "tool_use_id": id, "content": text}])
}

#[test]
fn a_session_becomes_one_trajectory_along_its_tree() {
    let (code, out, stderr) = convert(&[&session_file()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(t["id"], SESSION);
    let c = t["content"].as_array().expect("content");
    // Derived by hand from the sample: the prompt; msg_1's three lines (thinking, text, Bash
    // with its own description, so the text stays a message); its error result; the edit and
    // its result; the second test run and its result; the answer. Then the second prompt,
    // msg_5's parallel Grep and Task calls, their results (each hanging off its own call) in
    // call order, and the answer. The inline sidechain line is left out.
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "message_action",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "message_action",
            "text_observation",
            "api_action",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(
        c[2]["reasoning_content"],
        "Run the test first to see the failure."
    );
    assert_eq!(c[2]["description"], "Run the date tests");
    assert_eq!(c[2]["tool_call_id"], "toolu_1");
    assert_eq!(c[3]["tool_call_id"], "toolu_1");
    assert_eq!(c[4]["kwargs"]["file_path"], "src/dates.py");
    assert_eq!(c[5]["content"], "The file src/dates.py has been updated.");
    assert_eq!(c[10]["function"], "Grep");
    assert_eq!(
        c[10]["reasoning_content"],
        "Search for the same pattern while a subagent reviews the tests."
    );
    assert_eq!(
        [
            &c[11]["function"],
            &c[12]["tool_call_id"],
            &c[13]["tool_call_id"]
        ],
        [&json!("Task"), &json!("toolu_4"), &json!("toolu_5")]
    );
    let cc = &t["details"]["claude_code"];
    assert_eq!(
        cc["left_out"],
        json!([{"line": 7, "uuid": "s1", "reason": "sidechain"}])
    );
    assert_eq!(cc["error_results"], json!(["toolu_1"]));
    assert_eq!(cc["summaries"][0]["summary"], "Fix failing date test");
    assert!(cc["summaries"][0]["leafUuid"].is_string());
    // A thinking block's signature has no place in a step: it stays, at its block.
    assert!(cc["unmapped"]
        .as_array()
        .expect("unmapped")
        .iter()
        .any(|u| u["value"]["signature"].is_string()
            && u["pointer"]
                .as_str()
                .is_some_and(|p| p.starts_with("/message/content/"))));
    assert_eq!(cc["envelope"]["cwd"], "/home/dev/app");
    assert_eq!(
        cc["subagents"],
        json!([{"agent_id": "a1f0c3d", "tool_use_id": "toolu_5", "via": "agent_progress",
            "trajectory_id": format!("{SESSION}/agent-a1f0c3d")}])
    );
    // Per line: its steps and what the steps do not hold (here the Task's toolUseResult).
    let line19 = cc["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["line"] == 19)
        .expect("line 19");
    assert_eq!(line19["steps"], json!([13]));
    assert_eq!(line19["fields"]["toolUseResult"]["agentId"], "a1f0c3d");
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn a_project_directory_converts_whole_with_its_subagents() {
    // The sample directory: the session, then its subagent, linked to the Task call through
    // the session's agent_progress line (read first).
    let dir = sample_data().join("claude-code");
    let (code, out, stderr) = convert(&[&dir], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    let sub_id = format!("{SESSION}/agent-a1f0c3d");
    assert_eq!(ids, vec![SESSION, sub_id.as_str()]);
    let sub = &out[1];
    assert_eq!(
        step_classes(sub),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let agent = &sub["details"]["claude_code"]["agent"];
    assert_eq!(agent["agent_id"], "a1f0c3d");
    assert_eq!(agent["parent_trajectory_id"], SESSION);
    assert_eq!(agent["compaction"], false);
    assert_eq!(agent["spawned_by"]["tool_use_id"], "toolu_5");
    assert_eq!(agent["spawned_by"]["via"], "agent_progress");
    assert_eq!(validate_adp(&out), 0);

    // A project of a newer version: the subagent's meta.json names the call; a compaction
    // file is marked; the non-transcript files of the project are not read.
    let tmp = tempfile::tempdir().expect("dir");
    let project = tmp.path().join("-home-dev-app");
    let subagents = project.join("s1/subagents");
    std::fs::create_dir_all(&subagents).expect("mkdir");
    std::fs::create_dir_all(project.join("s1/tool-results")).expect("mkdir");
    std::fs::write(project.join("s1/tool-results/x.txt"), "big output").expect("write");
    let main = [
        turn("u1", None, "user", "", json!("review the tests")),
        turn("u2", Some("u1"), "assistant", "m1", call("t1", "Agent")),
        turn("u3", Some("u2"), "user", "", result("t1", "all good")),
        turn("u4", Some("u3"), "assistant", "m2", json!("They are fine.")),
    ];
    write_lines(&project, &main);
    std::fs::rename(project.join("session.jsonl"), project.join("s1.jsonl")).expect("mv");
    let side = |lines: &mut [Value], agent: &str| {
        for l in lines.iter_mut() {
            l["isSidechain"] = json!(true);
            l["agentId"] = json!(agent);
        }
    };
    let mut agent_lines = [
        turn("a1", None, "user", "", json!("review the tests")),
        turn("a2", Some("a1"), "assistant", "m3", json!("all good")),
    ];
    side(&mut agent_lines, "a9");
    let text: String = agent_lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(subagents.join("agent-a9.jsonl"), text).expect("write");
    std::fs::write(
        subagents.join("agent-a9.meta.json"),
        r#"{"agentType":"general-purpose","description":"Review","toolUseId":"t1"}"#,
    )
    .expect("write");
    let mut compact = [
        turn(
            "c1",
            Some("u3"),
            "user",
            "",
            json!("summarize the conversation"),
        ),
        turn(
            "c2",
            Some("c1"),
            "assistant",
            "m4",
            json!("<summary>tests</summary>"),
        ),
    ];
    side(&mut compact, "acompact-77");
    let text: String = compact.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(subagents.join("agent-acompact-77.jsonl"), text).expect("write");
    let (code, out, stderr) = convert(&[tmp.path()], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, vec!["s1", "s1/agent-a9", "s1/agent-acompact-77"]);
    let agent = &out[1]["details"]["claude_code"]["agent"];
    assert_eq!(
        agent["spawned_by"],
        json!({"tool_use_id": "t1", "via": "meta.json"})
    );
    assert_eq!(agent["meta"]["agentType"], "general-purpose");
    assert_eq!(
        out[2]["details"]["claude_code"]["agent"]["compaction"],
        true
    );
    assert_eq!(validate_adp(&out), 0);
    // The subagent file alone still reads its sidecar.
    let (code, out, stderr) = convert(&[&subagents.join("agent-a9.jsonl")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out[0]["details"]["claude_code"]["agent"]["spawned_by"]["via"],
        "meta.json"
    );
}

/// A 2.1.x project without `meta.json` sidecars (as 2.1.3x writes it): a subagent under
/// `<session>/subagents/` is linked to the `Task` call through the session's result
/// (`toolUseResult.agentId`), whether the project, its `subagents/` folder or the subagent's
/// file alone is read; an empty session file beside does not stop the project being read whole.
#[test]
fn a_subagent_is_linked_to_its_call_from_its_session_file_wherever_it_is_read_from() {
    let tmp = tempfile::tempdir().expect("dir");
    let project = tmp.path().join("-home-dev-app");
    let subagents = project.join("s1/subagents");
    std::fs::create_dir_all(&subagents).expect("mkdir");
    std::fs::create_dir_all(project.join("s2/subagents")).expect("mkdir");
    let mut done = turn("u3", Some("u2"), "user", "", result("t1", "two failures"));
    done["toolUseResult"] = json!({"status": "completed", "prompt": "run the tests",
        "agentId": "a7c1", "content": [{"type": "text", "text": "two failures"}]});
    let main = [
        turn("u1", None, "user", "", json!("check the tests")),
        turn("u2", Some("u1"), "assistant", "m1", call("t1", "Task")),
        done,
        turn("u4", Some("u3"), "assistant", "m2", json!("Two fail.")),
    ];
    let text = |lines: &[Value]| -> String { lines.iter().map(|l| format!("{l}\n")).collect() };
    std::fs::write(project.join("s1.jsonl"), text(&main)).expect("write");
    let side = |lines: &mut [Value], session: &str, agent: &str| {
        for l in lines.iter_mut() {
            l["isSidechain"] = json!(true);
            l["agentId"] = json!(agent);
            l["sessionId"] = json!(session);
        }
    };
    let mut agent = [
        turn("b1", None, "user", "", json!("run the tests")),
        turn("b2", Some("b1"), "assistant", "m3", json!("two failures")),
    ];
    side(&mut agent, "s1", "a7c1");
    std::fs::write(subagents.join("agent-a7c1.jsonl"), text(&agent)).expect("write");
    // A session Claude Code created and never wrote, with a subagent of its own.
    std::fs::write(project.join("s2.jsonl"), "").expect("write");
    side(&mut agent, "s2", "a8d2");
    std::fs::write(project.join("s2/subagents/agent-a8d2.jsonl"), text(&agent)).expect("write");

    let (code, out, stderr) = convert(&[&project], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, vec!["s1", "s1/agent-a7c1", "s2/agent-a8d2"]);
    let session = project.join("s1.jsonl").display().to_string();
    let linked = json!({"tool_use_id": "t1", "via": "toolUseResult", "file": session});
    assert_eq!(
        out[1]["details"]["claude_code"]["agent"]["spawned_by"],
        linked
    );
    assert_eq!(
        out[2]["details"]["claude_code"]["agent"]["spawned_by"],
        Value::Null
    );
    assert_eq!(validate_adp(&out), 0);
    for alone in [subagents.clone(), subagents.join("agent-a7c1.jsonl")] {
        let (code, out, stderr) = convert(&[&alone], None, &[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(out.len(), 1, "{}", alone.display());
        assert_eq!(
            out[0]["details"]["claude_code"]["agent"]["spawned_by"],
            linked,
            "{}",
            alone.display()
        );
    }
}

#[test]
fn parallel_results_are_kept_in_call_order_and_edits_left_out() {
    let dir = tempfile::tempdir().expect("dir");
    // m1 makes two calls; the second call's line hangs off a progress line, each result off
    // its own call, in the reverse order; m1's third call is written after a result. The
    // prompt is then edited: the first version and its answer are a branch.
    let mut lines = vec![
        json!({"type": "file-history-snapshot", "messageId": "f1",
            "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": false}),
        turn("u1", None, "user", "", json!("read a and b")),
        turn("a1", Some("u1"), "assistant", "m1", call("ta", "Read")),
        json!({"type": "progress", "uuid": "g1", "parentUuid": "a1", "sessionId": "s1",
            "data": {"type": "hook_progress"}, "toolUseID": "ta"}),
        turn("a2", Some("g1"), "assistant", "m1", call("tb", "Read")),
        turn("r2", Some("a2"), "user", "", result("tb", "B")),
        turn("r1", Some("a1"), "user", "", result("ta", "A")),
        turn("a3", Some("r1"), "assistant", "m1", call("tc", "Read")),
        turn("r3", Some("a3"), "user", "", result("tc", "C")),
        turn("e0", Some("r3"), "user", "", json!("now summarize")),
        turn("e1", Some("e0"), "assistant", "m2", json!("A and B.")),
        turn("e2", Some("r3"), "user", "", json!("now summarize briefly")),
        json!({"type": "queue-operation", "operation": "dequeue", "sessionId": "s1"}),
        turn("e3", Some("e2"), "assistant", "m3", json!("AB.")),
    ];
    lines[8]["toolUseResult"] = json!({"type": "text", "file": {"filePath": "tc"}});
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "api_action",
            "api_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    let c = t["content"].as_array().expect("content");
    let ids: Vec<&Value> = c[1..8].iter().map(|s| &s["tool_call_id"]).collect();
    assert_eq!(
        ids,
        [
            json!("ta"),
            json!("tb"),
            json!("tc"),
            json!("ta"),
            json!("tb"),
            json!("tc")
        ]
        .iter()
        .chain(std::iter::once(&Value::Null))
        .collect::<Vec<_>>()
    );
    assert_eq!(c[4]["content"], "A");
    assert_eq!(c[7]["content"], "now summarize briefly");
    let cc = &t["details"]["claude_code"];
    assert_eq!(
        cc["left_out"],
        json!([{"line": 10, "uuid": "e0", "reason": "branch"},
               {"line": 11, "uuid": "e1", "reason": "branch"}])
    );
    let bookkeeping: Vec<u64> = cc["bookkeeping"]
        .as_array()
        .expect("bookkeeping")
        .iter()
        .filter_map(|u| u["line"].as_u64())
        .collect();
    assert_eq!(bookkeeping, vec![1, 4, 13]);
    assert!(cc.get("unmapped").is_none(), "{cc}");
    assert_eq!(
        t["details"]["source"]["left_out"],
        json!({"lines": 5, "messages": {"in": 11, "kept": 9}, "where": "details.claude_code"})
    );
    assert_eq!(validate_adp(&out), 0);
    for to in ["openai", "hf", "sharegpt"] {
        let (code, stderr) = export(&out, to);
        assert_eq!(code, 0, "{to}: {stderr}");
    }
}

/// Exports `trajectories` to `to`; the exit code and stderr (a reject fails it).
fn export(trajectories: &[Value], to: &str) -> (i32, String) {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("in.jsonl");
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&input, text).expect("write");
    let rejects = dir.path().join("rejects.jsonl");
    let out = trajkit()
        .args(["export", "-q", "--to", to, "-o"])
        .arg(dir.path().join("out"))
        .arg("--rejects")
        .arg(&rejects)
        .arg(&input)
        .output()
        .expect("runs");
    let rejected = std::fs::read_to_string(&rejects).unwrap_or_default();
    let code = match out.status.code().expect("exit code") {
        0 if !rejected.trim().is_empty() => 1,
        c => c,
    };
    (
        code,
        format!("{}{rejected}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn a_session_cut_off_after_a_call_keeps_it_unanswered() {
    let dir = tempfile::tempdir().expect("dir");
    // m1 calls ta and tb; only ta's result was written before the session ended.
    let lines = [
        turn("u1", None, "user", "", json!("read a and b")),
        turn("a1", Some("u1"), "assistant", "m1", call("ta", "Read")),
        turn("a2", Some("a1"), "assistant", "m1", call("tb", "Read")),
        turn("r1", Some("a1"), "user", "", result("ta", "A")),
    ];
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = t["content"].as_array().expect("content");
    // The unanswered call comes first among its response's actions, without an id.
    assert_eq!(c[1]["kwargs"]["path"], "tb");
    assert!(c[1].get("tool_call_id").is_none_or(Value::is_null), "{t}");
    assert_eq!(c[2]["tool_call_id"], "ta");
    assert_eq!(c[3]["tool_call_id"], "ta");
    assert_eq!(
        t["details"]["claude_code"]["unanswered_calls"],
        json!([{"step": 1, "id": "tb"}])
    );
    assert_eq!(validate_adp(&out), 0);
    // Cut off with no result at all: the final turn's calls stay unanswered; exports accept it.
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines[..3])],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        out[0]["details"]["claude_code"]["unanswered_calls"],
        json!([{"step": 1, "id": "ta"}, {"step": 2, "id": "tb"}])
    );
    assert_eq!(validate_adp(&out), 0);
    for to in ["openai", "hf", "sharegpt"] {
        let (code, stderr) = export(&out, to);
        assert_eq!(code, 0, "{to}: {stderr}");
    }
    // A lost result followed by a new prompt cannot be ADP: refused with the line.
    let mut lost = lines[..3].to_vec();
    lost.push(turn("u2", Some("a2"), "user", "", json!("go on")));
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lost)], Some("claude-code"), &[]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        stderr.contains(":3: error[session-structure]") && stderr.contains("\"tb\""),
        "{stderr}"
    );
}

#[test]
fn a_truncated_last_line_converts_the_rest_and_reports_the_cut() {
    let dir = tempfile::tempdir().expect("dir");
    let path = write_lines(dir.path(), &sample_lines());
    let mut text = std::fs::read_to_string(&path).expect("read");
    text.truncate(text.len() - 40);
    std::fs::write(&path, text).expect("write");
    let (code, out, stderr) = convert(&[&path], Some("claude-code"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1, "the complete part converts");
    assert!(stderr.contains(":20: error["), "{stderr}");
    assert_eq!(
        out[0]["content"]
            .as_array()
            .expect("content")
            .last()
            .expect("last")["class_"],
        "text_observation"
    );
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn other_tools_json_lines_are_refused_not_written_empty() {
    let dir = tempfile::tempdir().expect("dir");
    let files = [
        // Pi
        vec![
            json!({"type": "session", "version": 3, "id": "p1", "cwd": "/x"}),
            json!({"type": "message", "id": "m1", "parentId": null,
                "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
        ],
        // Droid
        vec![
            json!({"type": "session_start", "id": "d1", "title": "t"}),
            json!({"type": "message", "id": "m1",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}}),
        ],
        // Cursor
        vec![json!({"role": "user", "message": {"content": [{"type": "text", "text": "hi"}]}})],
    ];
    for lines in files {
        let (code, out, stderr) = convert(
            &[&write_lines(dir.path(), &lines)],
            Some("claude-code"),
            &[],
        );
        assert_eq!(code, 1, "{stderr}");
        assert!(out.is_empty());
        assert!(
            stderr.contains("error[empty-trajectory]")
                && stderr.contains("no line is a Claude Code turn"),
            "{stderr}"
        );
    }
}

#[test]
fn results_without_their_call_and_bad_lines_are_kept_or_diagnosed() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    // A result whose call is not in the file stays an observation, unlinked and listed.
    lines[5]["message"]["content"][0]["tool_use_id"] = json!("toolu_ghost");
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(
        t["details"]["claude_code"]["unlinked_results"][0]["id"],
        "toolu_ghost"
    );
    assert_eq!(
        t["details"]["claude_code"]["unlinked_results"][0]["line"],
        6
    );
    // The call it was meant to answer is kept, unanswered, before its response's message.
    assert_eq!(
        t["details"]["claude_code"]["unanswered_calls"],
        json!([{"step": 1, "id": "toolu_1"}])
    );
    assert_eq!(
        step_classes(t)[1..4],
        ["code_action", "message_action", "text_observation"]
    );
    assert_eq!(validate_adp(&out), 0);
    let mut lines = sample_lines();
    lines.push(json!(["not", "an entry"]));
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(out.len(), 1, "the session still converts");
    assert!(stderr.contains(":21: error[invalid-record]"), "{stderr}");
}

#[test]
fn user_content_of_every_shape_is_read_and_what_is_not_mapped_is_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    // The prompt (line 2) as a list of blocks: text, a bare string, a block of a type the
    // reader does not map, and a text block whose text is not a string.
    lines[1]["message"]["content"] = json!([
        {"type": "text", "text": "Fix the date test."},
        "It fails on leap years.",
        {"type": "document", "source": {"data": "JVBERi0="}},
        {"type": "text", "text": 7}
    ]);
    // A progress entry, and the final answer (line 21) given as one block, not a list.
    lines.insert(
        2,
        json!({"type": "progress", "uuid": "p1", "parentUuid": "u1", "data": {"n": 1}}),
    );
    lines[20]["message"]["content"] = json!({"type": "text", "text": "Done."});
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[0]["content"], "Fix the date test.");
    assert_eq!(c[1]["content"], "It fails on leap years.");
    assert_eq!(c[1]["source"], "user");
    assert_eq!(c.last().expect("last")["content"], "Done.");
    let unmapped = &t["details"]["claude_code"]["unmapped"];
    let found: Vec<(u64, &str)> = unmapped
        .as_array()
        .expect("unmapped")
        .iter()
        .map(|u| {
            (
                u["line"].as_u64().expect("line"),
                u["pointer"].as_str().expect("pointer"),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            (2, "/message/content/2"),
            (2, "/message/content/3/text"),
            // The signatures of the sample's two thinking blocks.
            (4, "/message/content/0"),
            (15, "/message/content/0")
        ]
    );
    assert_eq!(unmapped[0]["value"]["type"], "document");
    let cc = &t["details"]["claude_code"];
    assert_eq!(cc["bookkeeping"][0]["line"], 3);
    assert_eq!(cc["bookkeeping"][0]["value"]["data"], json!({"n": 1}));
    // The summary, two progress lines and the sidechain are lines left out; the document a
    // block no step holds; the text that is not a string a wrong-typed value.
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(
        (&left["lines"], &left["blocks"], &left["wrong_typed"]),
        (&json!(4), &json!(1), &json!(1))
    );
    assert_eq!(left["first"]["pointer"], "/message/content/3/text");
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn an_empty_session_id_falls_back_to_the_file_name() {
    let dir = tempfile::tempdir().expect("dir");
    let mut lines = sample_lines();
    for l in &mut lines {
        if l.get("sessionId").is_some() {
            l["sessionId"] = json!("");
        }
    }
    let (code, out, stderr) = convert(
        &[&write_lines(dir.path(), &lines)],
        Some("claude-code"),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out[0]["id"], "session");
    assert_eq!(validate_adp(&out), 0);
    // From stdin there is no file name: rejected with the reason.
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = trajkit()
        .args(["convert", "--from", "claude-code", "-"])
        .write_stdin(text)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[missing-id]"), "{stderr}");
}

/// The tool_use blocks of the assistant lines and the tool_result blocks of the user lines of
/// a session file, read as raw JSON.
fn raw_calls_and_results(file: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(file).expect("read");
    let mut calls = 0;
    let mut results = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("json");
        for b in v["message"]["content"].as_array().into_iter().flatten() {
            match (v["type"].as_str(), b["type"].as_str()) {
                (Some("assistant"), Some("tool_use")) => calls += 1,
                (Some("user"), Some("tool_result")) => results += 1,
                _ => {}
            }
        }
    }
    (calls, results)
}

/// Every real session converts (the corpus directory read whole, as a project directory is):
/// each tool call is one tool action, each result an observation carrying its call's id;
/// every line is accounted for; `validate` accepts the output and every SFT export takes every
/// trajectory.
#[test]
fn real_sessions_keep_every_call_and_result_and_export() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let dir = logs.join("claude-code");
    let files = files_in(&dir);
    assert_eq!(files.len(), 5);
    let (code, out, stderr) = convert(&[&dir], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    assert_eq!(out.len(), files.len());
    for (file, t) in files.iter().zip(&out) {
        let name = file.display();
        assert_eq!(
            t["details"]["source"]["file"],
            json!(file.display().to_string())
        );
        let (calls, results) = raw_calls_and_results(file);
        let steps = t["content"].as_array().expect("content");
        let actions = steps
            .iter()
            .filter(|s| matches!(s["class_"].as_str(), Some("api_action" | "code_action")))
            .count();
        assert_eq!(actions, calls, "{name}: tool calls in, tool actions out");
        let linked = steps
            .iter()
            .filter(|s| s["class_"] == "text_observation" && s["tool_call_id"].is_string())
            .count();
        assert_eq!(linked, results, "{name}: every result linked to its call");
        let cc = &t["details"]["claude_code"];
        assert_eq!(cc["unanswered_calls"], json!([]), "{name}");
        assert_eq!(cc["unlinked_results"], json!([]), "{name}");
        assert_eq!(cc["left_out"], json!([]), "{name}");
        // Every line is accounted for: taken, left out, a summary or kept as unmapped.
        let listed = |key: &str| -> Vec<u64> {
            cc[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|u| u["line"].as_u64())
                .collect()
        };
        let (taken, left, unmapped) = (listed("lines"), listed("left_out"), listed("unmapped"));
        let bookkeeping = listed("bookkeeping");
        let text = std::fs::read_to_string(file).expect("read");
        for (i, line) in text.lines().enumerate() {
            let n = i as u64 + 1;
            let e: Value = serde_json::from_str(line).expect("json");
            let kept = taken.contains(&n)
                || left.contains(&n)
                || e["type"] == "summary"
                || bookkeeping.contains(&n)
                || unmapped.contains(&n);
            assert!(kept, "{name}:{n} vanished");
        }
    }
    // The subagent file is its own trajectory, under its session and agent id.
    let sub = out
        .iter()
        .find(|t| t["details"]["claude_code"]["agent"].is_object())
        .expect("the subagent");
    assert_eq!(
        sub["id"],
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-aac57f5"
    );
    // The Task call of python-to-rust-port names the subagent it spawned.
    let port = &out[1];
    assert_eq!(
        port["details"]["claude_code"]["subagents"][0]["agent_id"],
        "ab81802"
    );
    assert_eq!(validate_adp(&out), 0);
    for to in ["openai", "hf", "sharegpt"] {
        let (code, stderr) = export(&out, to);
        assert_eq!(code, 0, "{to}: {stderr}");
    }
}

/// Each file alone, and detected from its first line whatever that line is.
#[test]
fn real_sessions_are_detected_from_any_first_line() {
    let Some(logs) = agent_logs() else {
        return;
    };
    let files = files_in(&logs.join("claude-code"));
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (code, out, stderr) = convert(&refs, None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.matches("detected claude-code").count(), files.len());
    assert_eq!(out.len(), files.len());
}

/// The tool actions and the observations linked to a call of a trajectory.
fn calls_and_linked(t: &Value) -> (usize, usize) {
    let steps = t["content"].as_array().expect("content");
    let calls = steps
        .iter()
        .filter(|s| matches!(s["class_"].as_str(), Some("api_action" | "code_action")))
        .count();
    let linked = steps
        .iter()
        .filter(|s| s["class_"] == "text_observation" && s["tool_call_id"].is_string())
        .count();
    (calls, linked)
}

/// The text of each step that has one, in order.
fn step_texts(t: &Value) -> Vec<&str> {
    t["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|s| s["content"].as_str())
        .collect()
}

/// `(line, entry[key])` of each entry of a details list (`left_out`, `unmapped`).
fn lines_and<'a>(list: &'a Value, key: &str) -> Vec<(u64, &'a str)> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            (
                e["line"].as_u64().expect("line"),
                e[key].as_str().expect("a string"),
            )
        })
        .collect()
}

/// A turn of session `s1` without `parentUuid`, as older and exported transcripts write them.
fn bare(uuid: &str, kind: &str, mid: &str, content: Value) -> Value {
    let mut v = turn(uuid, None, kind, mid, content);
    if let Some(o) = v.as_object_mut() {
        o.remove("parentUuid");
    }
    v
}

#[test]
fn a_transcript_without_parent_uuids_reads_in_file_order() {
    let dir = tempfile::tempdir().expect("dir");
    let lines = [
        json!({"type": "summary", "summary": "Read two files", "leafUuid": "m7"}),
        bare("m1", "user", "", json!("read a then b")),
        bare("m2", "assistant", "r1", call("ta", "Read")),
        bare("m3", "user", "", result("ta", "A")),
        bare("m4", "assistant", "r2", call("tb", "Read")),
        bare("m5", "user", "", result("tb", "B")),
        bare("m6", "user", "", json!("thanks")),
        bare("m7", "assistant", "r3", json!("A and B.")),
    ];
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(calls_and_linked(t), (2, 2));
    let cc = &t["details"]["claude_code"];
    assert_eq!(cc["file_order_lines"], json!([3, 4, 5, 6, 7, 8]));
    assert_eq!(cc["left_out"], json!([]));
    // Only the summary line is left out (kept in details); every message is kept.
    assert_eq!(
        t["details"]["source"]["left_out"],
        json!({"lines": 1, "messages": {"in": 7, "kept": 7}, "where": "details.claude_code"})
    );
    // Every line null-parented reads the same way.
    let nulls: Vec<Value> = lines
        .iter()
        .map(|l| {
            let mut l = l.clone();
            if l["type"] != "summary" {
                l["parentUuid"] = Value::Null;
            }
            l
        })
        .collect();
    let (code, again, stderr) = convert(&[&write_lines(dir.path(), &nulls)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(again[0]["content"], t["content"]);
    assert_eq!(validate_adp(&out), 0);
}

/// A 2.1.2xx session: bookkeeping lines of every newer type (and one no version wrote yet)
/// stand between the messages, some of them with a uuid the next message hangs off, one a
/// `progress` root with `parentUuid: null`.
#[test]
fn bookkeeping_lines_of_any_type_are_skipped_wherever_they_stand() {
    let dir = tempfile::tempdir().expect("dir");
    let keep = |v: Value| -> Value {
        let mut v = v;
        v["sessionId"] = json!("s1");
        v
    };
    let lines = vec![
        keep(json!({"type": "permission-mode", "permissionMode": "default"})),
        keep(json!({"type": "worktree-state", "worktreeSession": {"worktreeName": "w"}})),
        keep(
            json!({"type": "attachment", "uuid": "h1", "parentUuid": null,
            "isSidechain": false, "attachment": {"type": "hook_success"}}),
        ),
        turn("u1", Some("h1"), "user", "", json!("fix the build")),
        keep(
            json!({"type": "attachment", "uuid": "h2", "parentUuid": "u1",
            "isSidechain": false, "attachment": {"type": "todo_reminder"}}),
        ),
        turn("a1", Some("h2"), "assistant", "m1", call("t1", "Bash")),
        keep(json!({"type": "progress", "uuid": "g1", "parentUuid": null,
            "isSidechain": false, "data": {"type": "hook_progress"}})),
        turn("r1", Some("g1"), "user", "", result("t1", "error: x")),
        keep(json!({"type": "mode", "mode": "normal"})),
        keep(json!({"type": "agent-name", "agentName": "fixer"})),
        keep(json!({"type": "custom-title", "customTitle": "Build"})),
        keep(json!({"type": "ai-title", "aiTitle": "Fixing the build"})),
        keep(json!({"type": "last-prompt", "lastPrompt": "fix the build", "leafUuid": "r1"})),
        turn("a2", Some("r1"), "assistant", "m2", call("t2", "Edit")),
        keep(json!({"type": "pr-link", "prNumber": 3, "prUrl": "https://example.test/3"})),
        keep(json!({"type": "frame-link", "path": "/tmp/a.html"})),
        json!({"type": "started", "key": "v2:0", "agentId": "x1"}),
        json!({"type": "result", "key": "v2:0", "agentId": "x1", "result": {}}),
        keep(json!({"type": "relocated", "relocatedCwd": "/tmp/w"})),
        keep(json!({"type": "bridge-session", "bridgeSessionId": "b1"})),
        keep(json!({"type": "future-kind", "uuid": "f1", "parentUuid": "a2", "payload": 1})),
        turn("r2", Some("f1"), "user", "", result("t2", "edited")),
        keep(
            json!({"type": "system", "subtype": "turn_duration", "uuid": "y1",
            "parentUuid": "r2", "durationMs": 5}),
        ),
        turn("a3", Some("y1"), "assistant", "m3", json!("Fixed.")),
        keep(
            json!({"type": "attachment", "uuid": "h3", "parentUuid": "a3",
            "attachment": {"type": "hook_success"}}),
        ),
        keep(json!({"type": "last-prompt", "lastPrompt": "fix the build", "leafUuid": "h3"})),
    ];
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected claude-code"), "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(calls_and_linked(t), (2, 2));
    let cc = &t["details"]["claude_code"];
    let kept: Vec<u64> = cc["bookkeeping"]
        .as_array()
        .expect("bookkeeping")
        .iter()
        .filter_map(|b| b["line"].as_u64())
        .collect();
    let expected: Vec<u64> = (1..=lines.len() as u64)
        .filter(|&n| {
            !matches!(
                lines[n as usize - 1]["type"].as_str(),
                Some("user" | "assistant")
            )
        })
        .collect();
    assert_eq!(kept, expected);
    assert_eq!(cc["left_out"], json!([]));
    assert!(cc.get("unmapped").is_none(), "{cc}");
    assert_eq!(
        t["details"]["source"]["left_out"],
        json!({"lines": expected.len(), "messages": {"in": 6, "kept": 6},
            "where": "details.claude_code"})
    );
    assert_eq!(validate_adp(&out), 0);
}

/// Auto-compaction: a boundary root joined to the conversation by its logical parent, the
/// summary after it, a `summary` line in the middle of the file.
#[test]
fn a_compacted_session_is_one_conversation_with_the_compaction_marked() {
    let dir = tempfile::tempdir().expect("dir");
    let mut summary = turn(
        "c2",
        Some("c1"),
        "user",
        "",
        json!("This session is being continued from a previous conversation. Summary: a was read."),
    );
    summary["isCompactSummary"] = json!(true);
    summary["isVisibleInTranscriptOnly"] = json!(true);
    let lines = [
        turn("u1", None, "user", "", json!("read a")),
        turn("a1", Some("u1"), "assistant", "m1", call("ta", "Read")),
        turn("r1", Some("a1"), "user", "", result("ta", "A")),
        json!({"type": "summary", "summary": "Reading files", "leafUuid": "r1"}),
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "c1",
            "parentUuid": null, "logicalParentUuid": "r1", "isSidechain": false,
            "sessionId": "s1", "content": "Conversation compacted", "level": "info",
            "compactMetadata": {"trigger": "auto", "preTokens": 155000}}),
        summary,
        turn("a2", Some("c2"), "assistant", "m2", call("tb", "Read")),
        turn("r2", Some("a2"), "user", "", result("tb", "B")),
        turn("a3", Some("r2"), "assistant", "m3", json!("A and B.")),
    ];
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(calls_and_linked(t), (2, 2));
    let cc = &t["details"]["claude_code"];
    assert_eq!(
        cc["compactions"],
        json!([{"step": 3, "line": 5, "summary_line": 6,
            "metadata": {"trigger": "auto", "preTokens": 155000}}])
    );
    let c = t["content"].as_array().expect("content");
    assert_eq!(c[3]["name"], "compact_summary");
    assert_eq!(c[3]["source"], "environment");
    assert_eq!(cc["main_chain_lines"], json!([1, 2, 3, 5, 6, 7, 8, 9]));
    assert_eq!(cc["summaries"][0]["summary"], "Reading files");
    assert_eq!(validate_adp(&out), 0);
    // Real sessions have a boundary whose logical parent is not in the file: it follows the
    // message before it, and nothing before the compaction is lost.
    let mut lost = lines.to_vec();
    lost[4]["logicalParentUuid"] = json!("not-in-this-file");
    let (code, again, stderr) = convert(&[&write_lines(dir.path(), &lost)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(again[0]["content"], t["content"]);
    assert_eq!(
        again[0]["details"]["claude_code"]["compactions"],
        cc["compactions"]
    );
}

/// 2.0.x keeps a subagent's file beside the session: found in the project directory, read
/// after the session and linked to the call that spawned it.
#[test]
fn a_subagent_file_beside_its_session_is_read_and_linked() {
    let tmp = tempfile::tempdir().expect("dir");
    let project = tmp.path().join("-home-dev-app");
    std::fs::create_dir_all(&project).expect("mkdir");
    let mut done = turn("u3", Some("u2"), "user", "", result("t1", "looks fine"));
    done["toolUseResult"] = json!({"agentId": "0a1b2c3d", "status": "completed"});
    let main = [
        turn("u1", None, "user", "", json!("review it")),
        turn("u2", Some("u1"), "assistant", "m1", call("t1", "Task")),
        done,
        turn("u4", Some("u3"), "assistant", "m2", json!("Reviewed.")),
    ];
    let mut agent = [
        turn("b1", None, "user", "", json!("review it")),
        turn("b2", Some("b1"), "assistant", "m3", json!("looks fine")),
    ];
    for l in &mut agent {
        l["isSidechain"] = json!(true);
        l["agentId"] = json!("0a1b2c3d");
    }
    let text = |lines: &[Value]| -> String { lines.iter().map(|l| format!("{l}\n")).collect() };
    // The agent's name sorts before the session's: it is still read after it.
    std::fs::write(project.join("agent-0a1b2c3d.jsonl"), text(&agent)).expect("write");
    std::fs::write(project.join("s1.jsonl"), text(&main)).expect("write");
    let (code, out, stderr) = convert(&[&project], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, vec!["s1", "s1/agent-0a1b2c3d"]);
    assert_eq!(
        out[1]["details"]["claude_code"]["agent"]["spawned_by"]["tool_use_id"],
        "t1"
    );
    assert_eq!(validate_adp(&out), 0);
}

/// The conversation that went on is the one whose last message is latest: a rewind leaves the
/// longer branch behind, and a bookkeeping line written after on that branch does not bring it
/// back.
#[test]
fn the_conversation_that_went_on_is_chosen_by_its_messages() {
    let dir = tempfile::tempdir().expect("dir");
    let lines = [
        turn("u1", None, "user", "", json!("plan it")),
        turn("a1", Some("u1"), "assistant", "m1", json!("Plan A.")),
        turn("u2", Some("a1"), "user", "", json!("go on")),
        turn("a2", Some("u2"), "assistant", "m2", json!("More of A.")),
        turn("u3", Some("a2"), "user", "", json!("and more")),
        turn(
            "a3",
            Some("u3"),
            "assistant",
            "m3",
            json!("Even more of A."),
        ),
        turn("v2", Some("a1"), "user", "", json!("no: plan B")),
        turn("b2", Some("v2"), "assistant", "m4", json!("Plan B.")),
        json!({"type": "attachment", "uuid": "h9", "parentUuid": "a3", "sessionId": "s1",
            "attachment": {"type": "hook_success"}}),
        json!({"type": "system", "subtype": "stop_hook_summary", "uuid": "y9",
            "parentUuid": "h9", "sessionId": "s1"}),
    ];
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    let texts = step_texts(t);
    assert_eq!(texts, vec!["plan it", "Plan A.", "no: plan B", "Plan B."]);
    let reasons = lines_and(&t["details"]["claude_code"]["left_out"], "reason");
    assert_eq!(
        reasons,
        vec![(3, "branch"), (4, "branch"), (5, "branch"), (6, "branch")]
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 6);
    assert_eq!(left["messages"], json!({"in": 8, "kept": 4}));
}

/// A message of the wrong type, and structural fields of the wrong type, are counted with
/// their pointer; the turns with wrong-typed structure are still placed and kept.
#[test]
fn wrong_typed_lines_and_fields_are_counted_never_dropped_silently() {
    let dir = tempfile::tempdir().expect("dir");
    let mut odd_parent = turn("a1", None, "assistant", "m1", call("ta", "Read"));
    odd_parent["parentUuid"] = json!(17);
    let mut odd_side = turn("r1", Some("a1"), "user", "", result("ta", "A"));
    odd_side["isSidechain"] = json!("false");
    let mut odd_uuid = turn("x", Some("r1"), "user", "", json!("go on"));
    odd_uuid["uuid"] = json!(42);
    // Its child names it by the same wrong-typed uuid: it follows it in file order.
    let mut odd_message = turn("u9", None, "user", "", json!(""));
    odd_message["parentUuid"] = json!(42);
    odd_message["message"] = json!("a string, not an object");
    let lines = [
        turn("u1", None, "user", "", json!("read a")),
        odd_parent,
        odd_side,
        odd_uuid,
        odd_message,
        turn("a2", Some("u9"), "assistant", "m2", json!("Done.")),
    ];
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(calls_and_linked(t), (1, 1));
    let texts = step_texts(t);
    assert_eq!(texts, vec!["read a", "A", "go on", "Done."]);
    let wrong = lines_and(&t["details"]["claude_code"]["unmapped"], "pointer");
    assert_eq!(
        wrong,
        vec![
            (2, "/parentUuid"),
            (3, "/isSidechain"),
            (4, "/uuid"),
            (5, "/parentUuid"),
            (5, "/message")
        ]
    );
    assert_eq!(
        t["details"]["claude_code"]["file_order_lines"],
        json!([2, 5])
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["wrong_typed"], 5);
    assert_eq!(left["messages"], json!({"in": 6, "kept": 5}));
    assert_eq!(left["first"]["pointer"], "/parentUuid");
    assert_eq!(validate_adp(&out), 0);
}

/// 2.1.x may write a call's result before the lines of the response that made the call: the
/// result still answers it, after it.
#[test]
fn a_result_written_before_its_call_is_linked_to_it() {
    let dir = tempfile::tempdir().expect("dir");
    let lines = [
        turn("u1", None, "user", "", json!("read a")),
        turn("r1", Some("a2"), "user", "", result("ta", "A")),
        turn(
            "a1",
            Some("u1"),
            "assistant",
            "m1",
            json!([{"type": "text", "text": "Reading a."}]),
        ),
        turn("a2", Some("a1"), "assistant", "m1", call("ta", "Read")),
        turn("a3", Some("r1"), "assistant", "m2", json!("A.")),
    ];
    let (code, out, stderr) = convert(&[&write_lines(dir.path(), &lines)], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(calls_and_linked(t), (1, 1));
    assert_eq!(t["details"]["claude_code"]["unlinked_results"], json!([]));
    assert_eq!(validate_adp(&out), 0);
}

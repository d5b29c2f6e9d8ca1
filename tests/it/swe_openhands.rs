//! SWE-agent and OpenHands: the bundled samples, the chat shapes read with `--from`, malformed
//! input diagnosed at its line and pointer, and agreement with ADP's own conversion of the
//! corpus datasets these agents produced.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{
    adp_corpus, convert, json_lines, sample_data, step_classes, trajkit, validate_adp,
};
use serde_json::{json, Value};

fn write(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

/// Converts with `--rejects`, returning the exit code, trajectories, stderr and rejects.
fn convert_with_rejects(input: &Path, from: &str) -> (i32, Vec<Value>, String, Vec<Value>) {
    let dir = tempfile::tempdir().expect("dir");
    let rejects = dir.path().join("rejects.jsonl");
    let (code, out, stderr) = convert(
        &[input],
        Some(from),
        &["--rejects", rejects.to_str().expect("utf-8")],
    );
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects file"));
    (code, out, stderr, rejected)
}

#[test]
fn swe_agent_samples_convert_to_valid_adp() {
    let (code, out, stderr) = convert(&[&sample_data().join("swe-agent")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("rows.jsonl: detected swe-agent"),
        "{stderr}"
    );
    assert!(stderr.contains(".traj: detected swe-agent"), "{stderr}");
    assert_eq!(out.len(), 2);
    assert_eq!(validate_adp(&out), 0);

    // The nebius-style row: windowed commands become api actions named by their signature.
    let row = &out[0];
    assert_eq!(row["id"], "tinyjson__tinyjson-3_1");
    assert_eq!(
        step_classes(row),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "api_action"
        ]
    );
    let c = &row["content"];
    assert_eq!(c[0]["source"], "user");
    assert_eq!(
        c[1]["kwargs"],
        json!({"path": "src/parse.py", "line_number": 20})
    );
    assert_eq!(
        c[1]["description"],
        "The whitespace handling is probably in the tokenizer. Let me open it."
    );
    assert_eq!(
        c[3]["kwargs"],
        json!({"start_line": 23, "end_line": 23, "replacement_text": "        if ch in ' \\t\\n\\r':\n"})
    );
    assert_eq!(c[2]["source"], "environment");
    assert_eq!(c[2]["tool_call_id"], c[1]["tool_call_id"]);
    assert_eq!(c[7]["function"], "submit");
    assert_eq!(row["details"]["outcome"]["status"], "success");
    assert!(row["details"]["swe_agent"]["system_prompt"]
        .as_str()
        .is_some_and(|p| p.starts_with("SETTING:")));

    // The .traj: task from history (the demonstration skipped), one action and observation
    // per step, id from the file name.
    let traj = &out[1];
    assert_eq!(traj["id"], "tinycalc__tinycalc-7");
    let c = traj["content"].as_array().expect("content");
    assert_eq!(c.len(), 11);
    assert!(c[0]["content"]
        .as_str()
        .is_some_and(|t| t.contains("divide(1, 0) returns inf")));
    assert_eq!(c[1]["function"], "find_file");
    assert_eq!(
        c[3]["kwargs"],
        json!({"command": "view", "path": "/tinycalc/src/calc.py", "view_range": [1, 6]})
    );
    assert_eq!(
        c[5]["kwargs"]["new_str"],
        "    if b == 0:\n        raise ZeroDivisionError(\"division by zero\")\n    return a / b\n"
    );
    assert_eq!(c[7]["class_"], "code_action");
    assert_eq!(
        c[7]["content"],
        "cd /tinycalc && python -m pytest -q tests/test_calc.py"
    );
    assert_eq!(c[9]["function"], "submit");
    assert!(c[10]["content"]
        .as_str()
        .is_some_and(|t| t.starts_with("diff --git")));
    let d = &traj["details"];
    assert_eq!(
        d["outcome"],
        json!({"status": "unknown", "native": {"exit_status": "submitted"}})
    );
    assert_eq!(d["swe_agent"]["demonstration_messages"], 1);
    assert_eq!(d["swe_agent"]["steps"].as_array().map(Vec::len), Some(5));
    assert_eq!(d["swe_agent"]["info"]["model_stats"]["api_calls"], 5);
}

#[test]
fn openhands_samples_convert_to_valid_adp() {
    let (code, out, stderr) = convert(&[&sample_data().join("openhands")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("session-42.jsonl: detected openhands"),
        "{stderr}"
    );
    assert!(
        stderr.contains("output.jsonl: detected openhands"),
        "{stderr}"
    );
    assert_eq!(out.len(), 2);
    assert_eq!(validate_adp(&out), 0);

    let run = &out[0];
    assert_eq!(run["id"], "tinyqueue-release-year");
    assert_eq!(
        step_classes(run),
        vec![
            "text_observation",
            "api_action",
            "web_observation",
            "code_action",
            "text_observation",
            "message_action",
            "message_action"
        ]
    );
    let c = &run["content"];
    assert_eq!(
        c[1]["kwargs"],
        json!({"url": "https://tinyqueue.example/releases"})
    );
    assert_eq!(c[2]["url"], "https://tinyqueue.example/releases");
    assert_eq!(c[2]["tool_call_id"], c[1]["tool_call_id"]);
    assert_eq!(c[3]["description"], "Version 1.0 came out in 2021.");
    assert_eq!(c[6]["content"], "<finish> 2021 </finish>");
    assert_eq!(run["details"]["outcome"]["status"], "success");
    assert_eq!(
        run["details"]["openhands"]["metadata"]["max_iterations"],
        30
    );

    // The event stream: one trajectory per file, named after it.
    let s = &out[1];
    assert_eq!(s["id"], "session-42");
    assert_eq!(
        step_classes(s),
        vec![
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &s["content"];
    assert_eq!(c[1]["tool_call_id"], "toolu_01");
    assert_eq!(c[2]["tool_call_id"], "toolu_01");
    assert_eq!(c[2]["name"], "execute_bash");
    // Two calls of one model response: the thought is the first call's only.
    assert_eq!(
        c[3]["description"],
        "The queue pops from the wrong end. Let me read the code and the test."
    );
    assert_eq!(c[5]["description"], Value::Null);
    assert_eq!(
        c[5]["kwargs"],
        json!({"command": "view", "path": "/workspace/tinyqueue/tests/test_queue.py", "view_range": [1, 8]})
    );
    assert_eq!(
        c[7]["kwargs"]["new_str"],
        "        return self.items.pop(0)"
    );
    assert_eq!(c[9]["language"], "python");
    assert_eq!(c[11]["function"], "think");
    assert_eq!(
        c[13]["content"],
        "<finish> pop() now returns the oldest item, so test_fifo passes. </finish>"
    );
    assert_eq!(c[13]["description"], "The fix works.");
    assert_eq!(
        s["available_custom_tools"],
        json!([
            "execute_bash",
            "execute_ipython_cell",
            "str_replace_editor",
            "think",
            "finish"
        ])
    );
    let d = &s["details"]["openhands"];
    assert!(d["system_prompt"]
        .as_str()
        .is_some_and(|p| p.starts_with("You are OpenHands agent")));
    let skipped: Vec<&Value> = d["skipped_events"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(skipped, vec![&json!(2), &json!(3), &json!(4), &json!(18)]);
    // What the steps do not hold stays, event by event: the system action's own arguments,
    // and every mapped event's id and timestamp.
    let fields = d["event_fields"].as_array().expect("event fields");
    assert_eq!(fields[0]["line"], 1);
    assert_eq!(fields[0]["steps"], json!([]));
    assert_eq!(fields[0]["fields"]["args"]["agent_class"], "CodeActAgent");
    assert_eq!(fields[1]["steps"], json!([0]));
    assert!(fields.iter().all(|f| f["fields"]["timestamp"].is_string()));
}

#[test]
fn swe_agent_chat_rows_are_read_with_from_and_calls_parsed_as_swe_agent_does() {
    let dir = tempfile::tempdir().expect("dir");
    let row = json!({"id": "demo-xml_1", "instance_id": "demo-xml", "resolved": false, "messages": [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer to solve tasks."},
        {"role": "user", "content": "<uploaded_files>\n/testbed\n</uploaded_files>\nFix the typo in README.md."},
        {"role": "assistant", "content": "Let me look at the file.\n\n<function=str_replace_editor>\n<parameter=command>view</parameter>\n<parameter=path>/testbed/README.md</parameter>\n<parameter=view_range>[1, 3]</parameter>\n</function>"},
        {"role": "user", "content": "OBSERVATION:\nHere's the result of running `cat -n` on /testbed/README.md:\n     1\tTiny demo projetc\n"},
        {"role": "assistant", "content": "<function=str_replace_editor>\n<parameter=command>str_replace</parameter>\n<parameter=path>/testbed/README.md</parameter>\n<parameter=old_str>Tiny demo projetc</parameter>\n<parameter=new_str>Tiny demo project</parameter>\n</function>"},
        {"role": "user", "content": "OBSERVATION:\nThe file /testbed/README.md has been edited."},
        {"role": "assistant", "content": "Check it.\n\n<function=execute_bash>\n<parameter=command>\ngrep -c project /testbed/README.md\n</parameter>\n</function>"},
        {"role": "user", "content": "Your command ran successfully and did not produce any output."},
        {"role": "assistant", "content": "<function=submit>\n</function>"}
    ]});
    let input = write(dir.path(), "rows.jsonl", &[row]);
    // Chats look like any OpenAI chat: detection says so, --from swe-agent applies SWE-agent's
    // conventions.
    let (code, _, stderr) = convert(&[&input], None, &[]);
    assert_eq!(code, 0);
    assert!(stderr.contains("detected openai"), "{stderr}");
    let (code, out, stderr) = convert(&[&input], Some("swe-agent"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "demo-xml_1");
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "api_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["description"], "Let me look at the file.");
    assert_eq!(
        c[1]["kwargs"],
        json!({"command": "view", "path": "/testbed/README.md", "view_range": [1, 3]})
    );
    assert_eq!(
        c[2]["content"],
        "Here's the result of running `cat -n` on /testbed/README.md:\n     1\tTiny demo projetc"
    );
    assert_eq!(c[2]["source"], "environment");
    assert_eq!(c[2]["name"], "str_replace_editor");
    assert_eq!(c[5]["content"], "grep -c project /testbed/README.md");
    assert_eq!(c[6]["source"], "environment");
    assert_eq!(c[7]["kwargs"], json!({}));
    assert_eq!(t["details"]["outcome"]["status"], "failure");
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn openhands_chats_put_each_result_after_its_call() {
    let dir = tempfile::tempdir().expect("dir");
    let chat = json!({"instance_id": "chat-1", "resolved": false, "messages": [
        {"role": "system", "content": "You are OpenHands agent."},
        {"role": "user", "content": "Count the files in /w."},
        {"role": "assistant", "content": "Two checks at once.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "execute_bash", "arguments": "{\"command\": \"ls /w | wc -l\"}"}},
            {"id": "b", "type": "function", "function": {"name": "str_replace_editor", "arguments": "{\"command\": \"view\", \"path\": \"/w\"}"}}]},
        {"role": "tool", "tool_call_id": "b", "name": "str_replace_editor", "content": "OBSERVATION:\nx.txt\ny.txt"},
        {"role": "tool", "tool_call_id": "a", "name": "execute_bash", "content": "OBSERVATION:\n2"},
        {"role": "assistant", "content": "There are 2 files."},
        {"role": "user", "content": "Please continue working on the task."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "f", "type": "function", "function": {"name": "finish", "arguments": "{}"}}]}
    ]});
    let input = write(dir.path(), "chats.jsonl", &[chat]);
    let (code, out, stderr) = convert(&[&input], Some("openhands"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let t = &out[0];
    assert_eq!(t["id"], "chat-1");
    assert_eq!(
        step_classes(t),
        vec![
            "text_observation",
            "code_action",
            "text_observation",
            "api_action",
            "text_observation",
            "message_action",
            "text_observation",
            "message_action"
        ]
    );
    let c = &t["content"];
    assert_eq!(c[1]["description"], "Two checks at once.");
    assert_eq!(c[2]["content"], "2");
    assert_eq!(c[2]["tool_call_id"], "a");
    assert_eq!(c[3]["description"], Value::Null);
    assert_eq!(c[4]["content"], "x.txt\ny.txt");
    assert_eq!(c[4]["tool_call_id"], "b");
    assert_eq!(c[6]["source"], "user");
    assert_eq!(c[7]["content"], "<finish> </finish>");
    assert_eq!(
        t["details"]["openhands"]["system_prompt"],
        "You are OpenHands agent."
    );
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn bad_swe_agent_records_are_rejected_at_their_pointer_and_the_rest_converted() {
    let dir = tempfile::tempdir().expect("dir");
    let good = json!({"instance_id": "ok", "trajectory": [
        {"action": "ls\n", "observation": "a.py", "thought": "Look."}], "info": {"exit_status": "submitted"}});
    let no_trajectory = json!({"instance_id": "no-traj", "info": {}});
    let no_action = json!({"instance_id": "no-action", "trajectory": [
        {"action": "ls", "observation": "a.py"}, {"observation": "b.py", "thought": "?"}], "history": []});
    let unknown_call = json!({"id": "ghost", "messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
        {"role": "tool", "tool_call_ids": ["c9"], "content": "a.py"}
    ]});
    let input = write(
        dir.path(),
        "runs.jsonl",
        &[good, no_trajectory, no_action, json!(42), unknown_call],
    );
    let (code, out, stderr, rejects) = convert_with_rejects(&input, "swe-agent");
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], "ok");
    for expected in [
        ":2: error[schema-required] id=\"no-traj\" /trajectory: required key \"trajectory\" is missing",
        ":3: error[schema-required] id=\"no-action\" /trajectory/1/action",
        ":4: error[schema-type]",
        ":5: error[swe-agent-structure] id=\"ghost\" /messages/2/tool_call_ids/0: tool result for call \"c9\"",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    assert_eq!(rejects.len(), 4);
    for r in &rejects {
        assert!(r["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("runs.jsonl")));
        assert_eq!(r["stage"], "convert");
        assert!(r.get("record").is_some(), "the record is kept: {r}");
    }
    assert_eq!(rejects[3]["record_id"], "ghost");
    assert_eq!(
        rejects[3]["diagnostics"][0]["pointer"],
        "/messages/2/tool_call_ids/0"
    );
}

#[test]
fn bad_openhands_events_are_diagnosed_with_their_line() {
    let dir = tempfile::tempdir().expect("dir");
    let task = json!({"id": 1, "source": "user", "action": "message", "args": {"content": "hi"}});
    let run = json!({"id": 2, "source": "agent", "action": "run", "args": {"command": "ls", "thought": ""}});
    let result = json!({"id": 3, "source": "agent", "observation": "run", "content": "a", "cause": 2, "extras": {}});
    // A line that is not an object is rejected on its own; the stream still converts.
    let stream = write(
        dir.path(),
        "stream.jsonl",
        &[task.clone(), json!("oops"), run.clone(), result.clone()],
    );
    let (code, out, stderr, rejects) = convert_with_rejects(&stream, "openhands");
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1);
    assert_eq!(
        step_classes(&out[0]),
        vec!["text_observation", "code_action", "text_observation"]
    );
    assert!(stderr.contains(":2: error[invalid-record]"), "{stderr}");
    assert_eq!(rejects.len(), 1);
    assert_eq!(rejects[0]["line"], 2);
    assert_eq!(rejects[0]["raw"], "\"oops\"");

    // An observation caused by no earlier event rejects the stream, naming the line.
    let orphan =
        json!({"id": 3, "source": "agent", "observation": "run", "content": "a", "cause": 99});
    let input = write(
        dir.path(),
        "orphan.jsonl",
        &[task.clone(), run.clone(), orphan],
    );
    let (code, out, stderr, rejects) = convert_with_rejects(&input, "openhands");
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        stderr.contains(
            ":3: error[openhands-structure] id=\"orphan\" /cause: observation caused by event 99"
        ),
        "{stderr}"
    );
    assert_eq!(rejects[0]["diagnostics"][0]["line"], 3);
    assert!(rejects[0]["record"]["openhands_events"] == true);

    // A tool result whose call no action made, in a record with a history.
    let unmatched = json!({"id": 3, "source": "agent", "observation": "run", "content": "a",
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "nope"}});
    let record = json!({"instance_id": "hist", "history": [task.clone(), unmatched]});
    let input = write(dir.path(), "output.jsonl", &[record]);
    let (code, _, stderr, _) = convert_with_rejects(&input, "openhands");
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            ":1: error[openhands-structure] id=\"hist\" /history/1/tool_call_metadata/tool_call_id"
        ),
        "{stderr}"
    );

    // A missing required field: an observation without content.
    let no_content = json!({"id": 3, "source": "agent", "observation": "run", "cause": 2});
    let input = write(dir.path(), "partial.jsonl", &[task, run, no_content]);
    let (code, _, stderr, _) = convert_with_rejects(&input, "openhands");
    assert_eq!(code, 1);
    assert!(
        stderr.contains(":3: error[schema-required] id=\"partial\" /content: required key \"content\" is missing"),
        "{stderr}"
    );

    // A chat's tool message answering an unknown call.
    let chat = json!({"instance_id": "c", "messages": [
        {"role": "user", "content": "task"},
        {"role": "tool", "tool_call_id": "zzz", "content": "?"}]});
    let input = write(dir.path(), "chat.jsonl", &[chat]);
    let (code, _, stderr, _) = convert_with_rejects(&input, "openhands");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("error[openhands-structure] id=\"c\" /messages/1/tool_call_id"),
        "{stderr}"
    );
}

/// (class, name or link id, content) of each step, to compare in one assertion.
fn steps_of(t: &Value) -> Vec<(String, String, String)> {
    t["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
            let content = match s["class_"].as_str() {
                Some("api_action") => String::new(),
                Some("web_observation") => text("html"),
                _ => text("content"),
            };
            let label = s["function"]
                .as_str()
                .or(s["name"].as_str())
                .unwrap_or(s["source"].as_str().unwrap_or_default());
            (text("class_"), label.to_owned(), content)
        })
        .collect()
}

fn triples(expected: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    expected
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[test]
fn the_oldest_openhands_histories_are_read() {
    // The resolver's output: `dataclasses.asdict(event)` of each event, fields flat on it (no
    // id, source, cause, args or extras).
    let history = json!([
        {"content": "Fix issue #7: ls fails", "image_urls": null, "wait_for_response": false, "action": "message", "security_risk": null},
        {"command": "ls", "thought": "Let me look.", "blocking": false, "keep_prompt": true, "hidden": false, "action": "run", "is_confirmed": "confirmed", "security_risk": null},
        {"content": "a.py\r\n", "command_id": -1, "command": "ls", "exit_code": 0, "hidden": false, "observation": "run", "interpreter_details": ""},
        {"content": "", "agent_state": "running", "observation": "agent_state_changed"},
        {"content": "Should I update the docs too?", "image_urls": null, "wait_for_response": true, "action": "message"},
        {"content": "Please continue working on the task.", "image_urls": null, "wait_for_response": false, "action": "message"},
        {"path": "a.py", "start": 0, "end": -1, "thought": "", "action": "read", "security_risk": null},
        {"content": "print(1)\n", "path": "a.py", "observation": "read"},
        {"outputs": {}, "thought": "Fixed.", "action": "finish"}
    ]);
    let record = json!({"issue": {"owner": "o", "repo": "r", "number": 7}, "issue_type": "issue",
        "instance_id": "o__r-7", "git_patch": "", "history": history, "success": true});
    let dir = tempfile::tempdir().expect("dir");
    let input = write(dir.path(), "output.jsonl", &[record]);
    let (code, out, stderr) = convert(&[&input], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected openhands"), "{stderr}");
    let t = &out[0];
    assert_eq!(
        steps_of(t),
        triples(&[
            ("text_observation", "user", "Fix issue #7: ls fails"),
            ("code_action", "", "ls"),
            ("text_observation", "execute_bash", "a.py\r\n"),
            ("message_action", "", "Should I update the docs too?"),
            (
                "text_observation",
                "user",
                "Please continue working on the task."
            ),
            ("api_action", "read", ""),
            ("text_observation", "read", "print(1)\n"),
            ("message_action", "", "<finish> </finish>"),
        ])
    );
    let c = &t["content"];
    assert_eq!(
        c[5]["kwargs"],
        json!({"path": "a.py", "start": 0, "end": -1})
    );
    assert_eq!(c[7]["description"], "Fixed.");
    assert_eq!(c[1]["description"], "Let me look.");
    assert_eq!(c[1]["tool_call_id"], c[2]["tool_call_id"]);
    assert_eq!(c[5]["tool_call_id"], c[6]["tool_call_id"]);
    let d = &t["details"]["openhands"];
    assert_eq!(d["legacy_events"], 9);
    assert_eq!(d["skipped_events"][0]["observation"], "agent_state_changed");
    assert_eq!(t["details"]["source"]["left_out"]["lines"], 1);
    assert!(d["event_fields"]
        .as_array()
        .expect("event_fields")
        .iter()
        .any(|e| e["pointer"] == "/history/2" && e["fields"]["extras"]["exit_code"] == 0));
    // What the run action has beside its command is kept too.
    assert!(d["event_fields"]
        .as_array()
        .expect("event_fields")
        .iter()
        .any(|e| e["pointer"] == "/history/1"
            && e["fields"]["args"]["keep_prompt"] == true
            && e["fields"]["args"]["is_confirmed"] == "confirmed"));
    assert_eq!(validate_adp(&out), 0);

    // OpenDevin's evaluation outputs: a history of [action, observation] pairs.
    let pairs = json!({"instance_id": "od-1", "history": [
        [{"source": "user", "action": "message", "args": {"content": "task"}},
         {"source": "user", "observation": "null", "content": "", "extras": {}}],
        [{"source": "agent", "action": "run", "args": {"command": "pwd", "thought": ""}},
         {"source": "agent", "observation": "run", "content": "/workspace", "extras": {"command_id": -1, "command": "pwd", "exit_code": 0}}],
        [{"source": "agent", "action": "finish", "args": {"outputs": {}, "thought": ""}},
         {"source": "agent", "observation": "null", "content": "", "extras": {}}]
    ]});
    let input = write(dir.path(), "pairs.jsonl", &[pairs]);
    let (code, out, stderr) = convert(&[&input], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        steps_of(&out[0]),
        triples(&[
            ("text_observation", "user", "task"),
            ("code_action", "", "pwd"),
            ("text_observation", "execute_bash", "/workspace"),
            ("message_action", "", "<finish> </finish>"),
        ])
    );
    assert_eq!(validate_adp(&out), 0);

    // A file of OpenDevin's events with a source but no ids: each observation answers the
    // call before it.
    let stream = [
        json!({"source": "user", "action": "message", "args": {"content": "check git"}}),
        json!({"source": "agent", "action": "run", "args": {"command": "git status", "thought": "", "keep_prompt": true}}),
        json!({"source": "agent", "observation": "run", "content": "fatal: not a git repository", "extras": {"command_id": -1, "command": "git status", "exit_code": 128}}),
        json!({"source": "agent", "observation": "error", "content": "no such action", "extras": {}}),
    ];
    let input = write(dir.path(), "opendevin.jsonl", &stream);
    let (code, out, stderr) = convert(&[&input], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    let c = &out[0]["content"];
    assert_eq!(c[1]["tool_call_id"], c[2]["tool_call_id"]);
    assert!(c[1]["tool_call_id"].is_string());
    assert_eq!(c[3]["name"], "error");
    assert!(c[3].get("tool_call_id").is_none());
    assert_eq!(validate_adp(&out), 0);
}

#[test]
fn raw_schemas_check_the_samples_and_flag_drift() {
    for (schema, dir) in [("swe-agent", "swe-agent"), ("openhands", "openhands")] {
        trajkit()
            .args(["validate", "-q", "--schema", schema])
            .arg(sample_data().join(dir))
            .assert()
            .code(0);
    }
    let dir = tempfile::tempdir().expect("dir");
    let bad = write(
        dir.path(),
        "bad.jsonl",
        &[json!({"id": 1, "source": "robot", "action": "run", "args": {}})],
    );
    let out = trajkit()
        .args(["validate", "--schema", "openhands"])
        .arg(&bad)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("error[schema-enum]") && report.contains("/source"),
        "{report}"
    );
}

/// A difference from ADP's `sample_std.json` that trajkit makes on purpose. Each is an error or
/// an invention in ADP's conversion (its scripts are `datasets/<name>/raw_to_standardized.py`);
/// docs/agreement.md explains them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Documented {
    /// ADP appends a closing pair picked at random from fixed texts (a user "Congratulations!
    /// ..." and an assistant `<finish> ... </finish>`) to runs that do not end with a finish;
    /// it is not in the log, so trajkit does not write it.
    NoRandomClosing,
    /// Output of the environment (command results, SWE-agent's "Your command ran successfully
    /// and did not produce any output.") that ADP labels `source: user` is `environment`.
    EnvironmentSource,
    /// ADP's nebius output wraps each argument that is not a whole number in double quotes
    /// (`"\"image.py\""`; in `find_file "image.py" plumbum` the quotes are shell quoting, not
    /// part of the name) and writes line numbers as text (`"536"`; SWE-agent declares them
    /// integers).
    QuotedArguments,
    /// ADP's nebius output drops the indentation of the first line of an `edit`'s replacement
    /// text (it splits the command on whitespace), which changes the code the agent wrote.
    EditIndentation,
    /// ADP strips the whitespace around every `<parameter=…>` value (swe-smith), removing the
    /// indentation of `old_str`/`new_str`; SWE-agent removes one newline at each end.
    ParameterWhitespace,
    /// ADP writes `""` as the description of a call whose message had no text; trajkit null.
    EmptyDescription,
    /// ADP repeats a message's text as the description of each of its parallel calls;
    /// OpenHands gives the thought to the first call only (`response_to_actions`).
    ThoughtOnFirstCall,
    /// ADP rewrites "...execute it with `python <filename.py>` using the BashTool" to
    /// "...execute it" in the task; trajkit keeps the task as given.
    TaskRewritten,
    /// ADP writes `<finish> Task completed. </finish>` for a finish call without a message;
    /// trajkit `<finish> </finish>` (the agent said nothing).
    FinishWithoutMessage,
}

use Documented::*;

/// The corpus datasets these converters reproduce, the `--from` that reads them, and the
/// differences allowed.
const DATASETS: &[(&str, &str, &[Documented])] = &[
    (
        "nebius_SWE-agent-trajectories",
        "swe-agent",
        &[
            NoRandomClosing,
            EnvironmentSource,
            QuotedArguments,
            EditIndentation,
        ],
    ),
    (
        "swe-smith",
        "swe-agent",
        &[NoRandomClosing, EnvironmentSource, ParameterWhitespace],
    ),
    (
        "swe-gym_openhands_sampled_trajectories",
        "openhands",
        &[
            NoRandomClosing,
            EmptyDescription,
            ThoughtOnFirstCall,
            TaskRewritten,
            FinishWithoutMessage,
        ],
    ),
];

/// The documented difference explaining `ours` vs `adp` in one kwarg value, if any.
fn argument_difference(ours: &Value, adp: &Value) -> Option<Documented> {
    match (ours, adp) {
        (Value::Number(n), Value::String(s)) if *s == n.to_string() => Some(QuotedArguments),
        (Value::String(o), Value::String(a)) if *a == format!("\"{o}\"") => Some(QuotedArguments),
        (Value::String(o), Value::String(a)) if *a == format!("\"{}\"", o.trim_start()) => {
            Some(EditIndentation)
        }
        (Value::String(o), Value::String(a)) if a == o.trim() => Some(ParameterWhitespace),
        _ => None,
    }
}

/// Compares one trajectory with ADP's; returns the undocumented differences, and counts the
/// documented ones seen and the steps equal in every compared field (`same`, of `steps`).
fn compare(
    ours: &Value,
    adp: &Value,
    allowed: &[Documented],
    seen: &mut BTreeMap<Documented, usize>,
    (same, steps): (&mut usize, &mut usize),
) -> Vec<String> {
    const PRIOR: &str = "2. Create a script to reproduce the error and execute it with `python <filename.py>` using the BashTool";
    const REWRITTEN: &str = "2. Create a script to reproduce the error and execute it";
    let mut problems = Vec::new();
    let mut note = |d: Documented, problems: &mut Vec<String>, what: String| {
        if allowed.contains(&d) {
            *seen.entry(d).or_default() += 1;
        } else {
            problems.push(format!("{what} ({d:?} is not allowed here)"));
        }
    };
    let a = ours["content"].as_array().expect("content");
    let mut b: &[Value] = adp["content"].as_array().expect("content");
    let closing = b.len() == a.len() + 2
        && b[b.len() - 2]["source"] == "user"
        && b[b.len() - 1]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("<finish>"));
    if closing {
        b = &b[..a.len()];
        note(NoRandomClosing, &mut problems, "closing pair".into());
    }
    if step_classes(ours)
        != b.iter()
            .filter_map(|s| s["class_"].as_str())
            .collect::<Vec<_>>()
    {
        problems.push(format!(
            "step classes: ours {:?}, ADP {:?}",
            step_classes(ours),
            b.iter()
                .filter_map(|s| s["class_"].as_str())
                .collect::<Vec<_>>()
        ));
        return problems;
    }
    let mut last_description: Option<&Value> = None;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        *steps += 1;
        let fields = [
            "content",
            "description",
            "language",
            "function",
            "source",
            "kwargs",
        ];
        if fields.iter().all(|f| x[*f] == y[*f]) {
            *same += 1;
        }
        for field in ["content", "description", "language", "function", "source"] {
            let (o, t) = (&x[field], &y[field]);
            if o == t {
                continue;
            }
            let what = format!("step {i} {field}: ours {o}, ADP {t}");
            let known = match field {
                "source" if o == "environment" && t == "user" => Some(EnvironmentSource),
                "description" if o.is_null() && t == "" => Some(EmptyDescription),
                "description" if o.is_null() && Some(t) == last_description => {
                    Some(ThoughtOnFirstCall)
                }
                "content"
                    if i == 0
                        && o.as_str().map(|s| s.replace(PRIOR, REWRITTEN)).as_deref()
                            == t.as_str() =>
                {
                    Some(TaskRewritten)
                }
                "content"
                    if o == "<finish> </finish>" && t == "<finish> Task completed. </finish>" =>
                {
                    Some(FinishWithoutMessage)
                }
                _ => None,
            };
            match known {
                Some(d) => note(d, &mut problems, what),
                None => problems.push(what),
            }
        }
        let (o, t) = (&x["kwargs"], &y["kwargs"]);
        let keys = |v: &Value| {
            v.as_object()
                .map(|m| m.keys().cloned().collect::<BTreeSet<_>>())
        };
        if keys(o) != keys(t) {
            problems.push(format!("step {i} kwargs: ours {o}, ADP {t}"));
        } else if o != t {
            for (k, v) in o.as_object().into_iter().flatten() {
                let w = &t[k];
                if w == v {
                    continue;
                }
                match argument_difference(v, w) {
                    Some(d) => note(d, &mut problems, format!("step {i} kwargs.{k}")),
                    None => problems.push(format!("step {i} kwargs.{k}: ours {v}, ADP {w}")),
                }
            }
        }
        if x["class_"] != "text_observation" && x["class_"] != "web_observation" {
            last_description = x
                .get("description")
                .filter(|d| !d.is_null())
                .or(last_description);
        } else if y["class_"] == "text_observation" && y["source"] == "user" {
            last_description = None;
        }
    }
    problems
}

#[test]
fn swe_agent_and_openhands_corpus_samples_agree_with_adp() {
    let Some(corpus) = adp_corpus() else { return };
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (name, from, allowed) in DATASETS {
        let dir = corpus.join(name);
        let (code, ours, stderr) = convert(&[&dir.join("sample_raw.json")], Some(from), &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(validate_adp(&ours), 0, "{name}");
        let adp: Vec<Value> = serde_json::from_slice(
            &std::fs::read(dir.join("sample_std.json")).expect("sample_std"),
        )
        .expect("sample_std is JSON");
        assert_eq!(ours.len(), adp.len(), "{name}: one trajectory per record");
        let (mut identical, mut documented_only) = (0, 0);
        let (mut same_steps, mut steps) = (0, 0);
        let mut seen_total: BTreeMap<Documented, usize> = BTreeMap::new();
        for expected in &adp {
            let id = &expected["id"];
            let Some(mine) = ours.iter().find(|t| &t["id"] == id) else {
                failures.push(format!("{name} {id}: missing from our output"));
                continue;
            };
            let mut seen = BTreeMap::new();
            let problems = compare(
                mine,
                expected,
                allowed,
                &mut seen,
                (&mut same_steps, &mut steps),
            );
            match (problems.is_empty(), seen.is_empty()) {
                (true, true) => identical += 1,
                (true, false) => documented_only += 1,
                (false, _) => failures.extend(problems.iter().map(|p| format!("{name} {id}: {p}"))),
            }
            for (d, n) in seen {
                *seen_total.entry(d).or_default() += n;
            }
        }
        let seen: Vec<String> = seen_total
            .iter()
            .map(|(d, n)| format!("{d:?} ×{n}"))
            .collect();
        report.push(format!(
            "{name:<40} --from {from:<10} {identical}/{} identical, {documented_only} differ only as documented; steps equal: {same_steps}/{steps}; documented: {}",
            adp.len(),
            seen.join(", ")
        ));
    }
    eprintln!(
        "agreement with ADP's sample_std.json:\n  {}",
        report.join("\n  ")
    );
    assert!(
        failures.is_empty(),
        "undocumented differences:\n{}",
        failures.join("\n")
    );
}

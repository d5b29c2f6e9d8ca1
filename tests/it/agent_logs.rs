//! The conformance test of the agent-log readers: every file of `../shared/corpus/agent-logs/`
//! (real logs other projects' agents wrote) converts with `--from auto`, exit 0 and no reject;
//! its trajectories validate; the tool calls counted in the source, by this file's own reading
//! of each format, equal the tool actions out; every result whose call is in the source is
//! linked to it; and the `openai`, `hf` and `sharegpt` exports take every trajectory (a
//! trajectory with no assistant turn, nothing to train on, is filtered, never rejected).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{agent_logs, convert, files_in, inspect_samples, trajkit, validate_adp};

/// What a source holds, counted from its raw records: tool calls, and results whose call is
/// among them.
#[derive(Debug, Default, PartialEq)]
struct Calls {
    calls: usize,
    answered: usize,
}

impl Calls {
    /// Counts `ids` as calls and `results` (the call id each result names) as answered when
    /// they name one of them, once each.
    fn of<'a>(
        ids: impl IntoIterator<Item = &'a str>,
        results: impl IntoIterator<Item = &'a str>,
    ) -> Calls {
        let ids: Vec<&str> = ids.into_iter().collect();
        let known: HashSet<&str> = ids.iter().copied().collect();
        let mut seen = HashSet::new();
        let answered = results
            .into_iter()
            .filter(|r| known.contains(r) && seen.insert(*r))
            .count();
        Calls {
            calls: ids.len(),
            answered,
        }
    }
}

#[test]
fn every_agent_log_converts_whole_and_exports() {
    let Some(root) = agent_logs() else { return };
    let files: Vec<PathBuf> = files_in(&root)
        .into_iter()
        .filter(|d| d.is_dir())
        .flat_map(|d| files_in(&d))
        .collect();
    assert!(files.len() >= 17, "{files:?}");
    let work = tempfile::tempdir().expect("dir");
    let mut read = 0;
    for file in &files {
        let name = file.display().to_string();
        let (code, out, stderr) = convert(&[file], None, &[]);
        let Expect::Reads(format) = expect_of(file) else {
            // A format trajkit does not read yet: a clear refusal, never a misread.
            assert_ne!(code, 0, "{name}: {stderr}");
            assert!(out.is_empty(), "{name}: {out:?}");
            assert!(stderr.contains("no format claims"), "{name}: {stderr}");
            continue;
        };
        read += 1;
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("detected {format}")),
            "{name}: {stderr}"
        );
        assert!(!out.is_empty(), "{name}");
        assert_eq!(validate_adp(&out), 0, "{name}");
        assert_eq!(source_calls(format, file), converted_calls(&out), "{name}");
        exported_whole(work.path(), &out, &name);
    }
    assert!(read >= 17, "{read} files read");
}

/// What `--from auto` does with a corpus file.
enum Expect {
    /// Detects the format (spelled as `--from` spells it) and converts the file whole.
    Reads(&'static str),
    /// Refuses it: no format trajkit reads claims it (agents whose readers are still to come).
    Refused,
}

/// What is expected of a corpus file, by its folder's name. A folder this test does not know
/// fails it: a new folder of the corpus gets its line here.
fn expect_of(file: &Path) -> Expect {
    let folder = file
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match folder {
        "atif" => Expect::Reads("atif"),
        "claude-code" => Expect::Reads("claude-code"),
        "codex" => Expect::Reads("codex"),
        "copilot-cli" => Expect::Reads("copilot-cli"),
        "cursor" => Expect::Reads("cursor"),
        "letta-code" => Expect::Reads("letta-code"),
        "gemini-cli" => Expect::Reads("gemini-cli"),
        "inspect" => Expect::Reads("inspect"),
        "mini-swe-agent" => Expect::Reads("mini-swe-agent"),
        "pi" | "openclaw" => Expect::Reads("pi"),
        // Cline's API history is an Anthropic Messages conversation; its UI log is Cline's own
        // (a Cline reader is still to come).
        "cline"
            if file
                .to_string_lossy()
                .ends_with("api_conversation_history.json") =>
        {
            Expect::Reads("anthropic")
        }
        "aider" | "cline" | "crush" | "droid" | "hermes" | "kimi-cli" | "opencode"
        | "qwen-code" => Expect::Refused,
        other => panic!(
            "{}: a corpus folder this test does not know: {other}",
            file.display()
        ),
    }
}

/// Tool actions out, and observations linked to one of them.
fn converted_calls(trajectories: &[Value]) -> Calls {
    let mut calls = 0;
    let mut answered = 0;
    for t in trajectories {
        let mut ids = HashSet::new();
        for s in t["content"].as_array().expect("content") {
            let id = s["tool_call_id"].as_str();
            match s["class_"].as_str() {
                Some("api_action" | "code_action") => {
                    calls += 1;
                    ids.extend(id);
                }
                _ => answered += usize::from(id.is_some_and(|id| ids.contains(id))),
            }
        }
    }
    Calls { calls, answered }
}

/// The tool calls of a source file, read by this test from the format's raw records.
fn source_calls(format: &str, file: &Path) -> Calls {
    let bytes = std::fs::read(file).expect("read");
    let lines = || {
        std::str::from_utf8(&bytes)
            .expect("utf-8")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
            .collect::<Vec<_>>()
    };
    match format {
        "atif" => {
            let doc: Value = serde_json::from_slice(&bytes).expect("JSON");
            let steps = doc["steps"].as_array().cloned().unwrap_or_default();
            let calls: Vec<Value> = steps
                .iter()
                .flat_map(|s| s["tool_calls"].as_array().cloned().unwrap_or_default())
                .collect();
            // A result names its call (`source_call_id`), or answers the one call of its step.
            let results: Vec<&str> = steps
                .iter()
                .flat_map(|s| {
                    let only = match s["tool_calls"].as_array().map(Vec::as_slice) {
                        Some([one]) => one["tool_call_id"].as_str(),
                        _ => None,
                    };
                    s["observation"]["results"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(move |r| r["source_call_id"].as_str().or(only))
                })
                .collect();
            Calls::of(
                calls.iter().filter_map(|c| c["tool_call_id"].as_str()),
                results,
            )
        }
        "claude-code" => {
            let blocks: Vec<Value> = lines()
                .iter()
                .flat_map(|l| {
                    l["message"]["content"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .collect();
            let mut uses = HashSet::new();
            let calls: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str())
                .filter(|id| uses.insert(*id))
                .collect();
            Calls::of(
                calls,
                blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .filter_map(|b| b["tool_use_id"].as_str()),
            )
        }
        "codex" => {
            let items: Vec<Value> = lines()
                .into_iter()
                .filter(|l| l["type"] == "response_item")
                .map(|l| l["payload"].clone())
                .collect();
            let of_type = |types: &'static [&'static str]| {
                move |i: &&Value| i["type"].as_str().is_some_and(|t| types.contains(&t))
            };
            let calls = of_type(&[
                "function_call",
                "custom_tool_call",
                "local_shell_call",
                "web_search_call",
                "tool_search_call",
            ]);
            let outputs = of_type(&[
                "function_call_output",
                "custom_tool_call_output",
                "local_shell_call_output",
                "tool_search_output",
            ]);
            Calls::of(
                items
                    .iter()
                    .filter(calls)
                    .map(|i| i["call_id"].as_str().or(i["id"].as_str()).unwrap_or("")),
                items
                    .iter()
                    .filter(outputs)
                    .filter_map(|i| i["call_id"].as_str()),
            )
        }
        "copilot-cli" => {
            // Tool requests of assistant messages (a start no request announced is a call
            // too), answered by `tool.execution_complete` events naming their `toolCallId`.
            let events = lines();
            let of = |kind: &'static str| {
                events
                    .iter()
                    .filter(move |e| e["type"] == kind)
                    .map(|e| &e["data"])
            };
            let mut ids: Vec<&str> = of("assistant.message")
                .flat_map(|d| d["toolRequests"].as_array().into_iter().flatten())
                .filter_map(|r| r["toolCallId"].as_str())
                .collect();
            let started: Vec<&str> = of("tool.execution_start")
                .filter_map(|d| d["toolCallId"].as_str())
                .filter(|id| !ids.contains(id))
                .collect();
            ids.extend(started);
            let results: Vec<&str> = of("tool.execution_complete")
                .filter_map(|d| d["toolCallId"].as_str())
                .collect();
            Calls::of(ids, results)
        }
        "gemini-cli" => {
            let doc: Value = serde_json::from_slice(&bytes).expect("JSON");
            let calls: Vec<Value> = doc["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
                .collect();
            Calls::of(
                calls.iter().filter_map(|c| c["id"].as_str()),
                calls
                    .iter()
                    .filter(|c| !c["result"].is_null())
                    .filter_map(|c| c["id"].as_str()),
            )
        }
        "inspect" => {
            let messages: Vec<Value> = inspect_samples(file)
                .iter()
                .flat_map(|s| s["messages"].as_array().cloned().unwrap_or_default())
                .collect();
            let calls: Vec<Value> = messages
                .iter()
                .filter(|m| m["role"] == "assistant")
                .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
                .collect();
            Calls::of(
                calls.iter().filter_map(|c| c["id"].as_str()),
                messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .filter_map(|m| m["tool_call_id"].as_str()),
            )
        }
        "mini-swe-agent" => mini_swe_agent_calls(&serde_json::from_slice(&bytes).expect("JSON")),
        "cursor" => {
            // `tool_use` blocks of the message lines; as for `anthropic`, a call with no result
            // is answered by an empty one when a message follows, so every call but those of
            // the last message is answered.
            let messages: Vec<Value> = lines()
                .into_iter()
                .filter(|l| l["role"].is_string())
                .map(|l| l["message"].clone())
                .collect();
            let blocks = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
            let results: HashSet<String> = messages
                .iter()
                .flat_map(blocks)
                .filter(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str().map(str::to_owned))
                .collect();
            let mut calls = Calls::default();
            for (i, m) in messages.iter().enumerate() {
                for b in blocks(m).iter().filter(|b| b["type"] == "tool_use") {
                    calls.calls += 1;
                    let id = b["id"].as_str().unwrap_or_default();
                    calls.answered += usize::from(results.contains(id) || i + 1 < messages.len());
                }
            }
            calls
        }
        "letta-code" => {
            // A `tool_call` row is a call; its result is in the same row (`resultText` or
            // `resultOk`), or there is none.
            let rows: Vec<Value> = lines()
                .into_iter()
                .filter(|r| r["kind"] == "tool_call")
                .collect();
            Calls {
                calls: rows.len(),
                answered: rows
                    .iter()
                    .filter(|r| r["resultText"].is_string() || r["resultOk"].is_boolean())
                    .count(),
            }
        }
        "anthropic" => {
            // `tool_use` blocks; the reader gives a call with no `tool_result` (Cline's results
            // are user text) an empty result linked to it when a message follows, so every call
            // but one in the last message is answered.
            let doc: Value = serde_json::from_slice(&bytes).expect("JSON");
            let messages = doc.as_array().cloned().unwrap_or_default();
            let blocks = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
            let results: HashSet<String> = messages
                .iter()
                .flat_map(blocks)
                .filter(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str().map(str::to_owned))
                .collect();
            let mut calls = Calls::default();
            for (i, m) in messages.iter().enumerate() {
                for b in blocks(m).iter().filter(|b| b["type"] == "tool_use") {
                    calls.calls += 1;
                    let id = b["id"].as_str().unwrap_or_default();
                    calls.answered += usize::from(results.contains(id) || i + 1 < messages.len());
                }
            }
            calls
        }
        "pi" => {
            // `toolCall` blocks of assistant messages, answered by `toolResult` messages; a
            // shell command the user ran (`bashExecution`) is a call and its own answer.
            let messages: Vec<Value> = lines()
                .into_iter()
                .filter(|l| l["type"] == "message")
                .map(|l| l["message"].clone())
                .collect();
            let bash: Vec<String> = messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m["role"] == "bashExecution")
                .map(|(i, _)| format!("bash {i}"))
                .collect();
            let calls = messages
                .iter()
                .filter(|m| m["role"] == "assistant")
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .filter(|b| b["type"] == "toolCall")
                .filter_map(|b| b["id"].as_str().map(str::to_owned));
            let ids: Vec<String> = calls.chain(bash.iter().cloned()).collect();
            let results: Vec<String> = messages
                .iter()
                .filter(|m| m["role"] == "toolResult")
                .filter_map(|m| m["toolCallId"].as_str().map(str::to_owned))
                .chain(bash)
                .collect();
            Calls::of(
                ids.iter().map(String::as_str),
                results.iter().map(String::as_str),
            )
        }
        other => unreachable!("{other}"),
    }
}

/// A mini-swe-agent run's calls: tool calls (format 1.1) answered by `tool` messages, or one
/// fenced command per assistant message (format 1, bare lists) answered by the next message.
fn mini_swe_agent_calls(run: &Value) -> Calls {
    let messages = run
        .get("messages")
        .unwrap_or(run)
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tool_calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["id"].as_str())
        .collect();
    if !tool_calls.is_empty() {
        return Calls::of(
            tool_calls,
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .filter_map(|m| m["tool_call_id"].as_str()),
        );
    }
    let fenced = |m: &Value| {
        let text = m["content"].as_str().unwrap_or_default();
        m["role"] == "assistant"
            && text.matches("```bash").count() + text.matches("```mswea_bash_command").count() == 1
    };
    let calls = messages.iter().filter(|m| fenced(m)).count();
    let answered = messages
        .windows(2)
        .filter(|w| fenced(&w[0]) && w[1]["role"] == "user")
        .count();
    Calls { calls, answered }
}

/// Exports `trajectories` to every SFT target: exit 0, nothing rejected, every trajectory
/// written or (having no assistant turn) filtered as such.
fn exported_whole(work: &Path, trajectories: &[Value], name: &str) {
    let input = work.join("in.jsonl");
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&input, text).expect("write");
    for target in ["openai", "hf", "sharegpt"] {
        let dir: PathBuf = work.join(target);
        let out = trajkit()
            .args(["export", "-q", "--force", "--to", target, "-o"])
            .arg(&dir)
            .arg(&input)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name} --to {target}: {err}");
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
                .expect("JSON");
        let c = &manifest["counts"];
        assert_eq!(
            (
                c["written"].as_u64().unwrap_or(0)
                    + c["filtered_by"]["no_assistant_turn"].as_u64().unwrap_or(0),
                c["rejected"].as_u64()
            ),
            (trajectories.len() as u64, Some(0)),
            "{name} --to {target}: {c}"
        );
    }
}

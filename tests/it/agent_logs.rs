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
        "goose" => Expect::Reads("goose"),
        "hermes" => Expect::Reads("hermes"),
        "inspect" => Expect::Reads("inspect"),
        "mini-swe-agent" => Expect::Reads("mini-swe-agent"),
        "droid" => Expect::Reads("droid"),
        "kimi-cli" => Expect::Reads("kimi-cli"),
        "pi" | "openclaw" => Expect::Reads("pi"),
        "qwen-code" => Expect::Reads("qwen-code"),
        // Cline's API history is an Anthropic Messages conversation; its UI log holds none of
        // its own (skipped in a task folder, refused given alone).
        "cline"
            if file
                .to_string_lossy()
                .ends_with("api_conversation_history.json") =>
        {
            Expect::Reads("anthropic")
        }
        // Crush's store, and the Go OpenCode's (the same schema); the current OpenCode's export
        // is OpenCode's own.
        "crush" => Expect::Reads("crush"),
        "opencode" if file.extension().is_some_and(|e| e == "db") => Expect::Reads("crush"),
        "opencode" => Expect::Reads("opencode"),
        "aider" => Expect::Reads("aider"),
        "cline" => Expect::Refused,
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
        "opencode" => {
            // An export: each `tool` part is a call and holds its own result (an interrupted
            // one is answered by an empty result).
            let doc: Value = serde_json::from_slice(&bytes).expect("JSON");
            let parts: Vec<Value> = doc["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
                .filter(|p| p["type"] == "tool")
                .collect();
            Calls {
                calls: parts.len(),
                answered: parts.len(),
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
        "droid" => {
            // `tool_use` blocks of assistant message rows, answered by `tool_result` blocks of
            // user message rows (a cancelled call's result can name a call never written).
            let blocks: Vec<(Value, Value)> = lines()
                .into_iter()
                .filter(|l| l["type"] == "message")
                .flat_map(|l| {
                    let role = l["message"]["role"].clone();
                    let content = l["message"]["content"].as_array().cloned();
                    content
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |b| (role.clone(), b))
                })
                .collect();
            Calls::of(
                blocks
                    .iter()
                    .filter(|(r, b)| r == "assistant" && b["type"] == "tool_use")
                    .filter_map(|(_, b)| b["id"].as_str()),
                blocks
                    .iter()
                    .filter(|(r, b)| r == "user" && b["type"] == "tool_result")
                    .filter_map(|(_, b)| b["tool_use_id"].as_str()),
            )
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
        "hermes" => {
            // The store's `messages` rows, or each export line's `messages`: assistant
            // `tool_calls` (a JSON string in the store), answered by `tool` messages.
            let messages: Vec<Value> = if bytes.starts_with(b"SQLite format 3\0") {
                hermes_rows(file)
            } else {
                lines()
                    .iter()
                    .flat_map(|l| l["messages"].as_array().cloned().unwrap_or_default())
                    .collect()
            };
            let calls: Vec<Value> = messages
                .iter()
                .flat_map(|m| match &m["tool_calls"] {
                    Value::String(s) => serde_json::from_str(s).unwrap_or_default(),
                    Value::Array(a) => a.clone(),
                    _ => Vec::new(),
                })
                .collect();
            Calls::of(
                calls.iter().filter_map(|c| c["id"].as_str()),
                messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .filter_map(|m| m["tool_call_id"].as_str()),
            )
        }
        "kimi-cli" => {
            // OpenAI-style `tool_calls` of assistant lines, answered by `tool` lines.
            let lines = lines();
            let ids: Vec<&str> = lines
                .iter()
                .filter(|l| l["role"] == "assistant")
                .flat_map(|l| l["tool_calls"].as_array().into_iter().flatten())
                .filter_map(|c| c["id"].as_str())
                .collect();
            Calls::of(
                ids,
                lines
                    .iter()
                    .filter(|l| l["role"] == "tool")
                    .filter_map(|l| l["tool_call_id"].as_str()),
            )
        }
        "crush" => {
            // The store's `tool_call` parts, answered by `tool_result` parts naming them.
            let uri = format!("file:{}?immutable=1", file.display());
            let flags =
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI;
            let conn = rusqlite::Connection::open_with_flags(uri, flags).expect("store");
            let mut stmt = conn.prepare("SELECT parts FROM messages").expect("query");
            let parts: Vec<Value> = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .expect("rows")
                .flat_map(|p| {
                    let list: Value = serde_json::from_str(&p.expect("row")).expect("parts");
                    list.as_array().cloned().unwrap_or_default()
                })
                .collect();
            let of = |kind: &str, key: &str| -> Vec<String> {
                parts
                    .iter()
                    .filter(|p| p["type"] == kind)
                    .filter_map(|p| p["data"][key].as_str().map(str::to_owned))
                    .collect()
            };
            let (ids, results) = (of("tool_call", "id"), of("tool_result", "tool_call_id"));
            Calls::of(
                ids.iter().map(String::as_str),
                results.iter().map(String::as_str),
            )
        }
        // The LLM history: the replies are kept as the model wrote them, no tool calls; a
        // trajectory per request that got a reply (checked in llm_history_requests).
        "aider" if file.to_string_lossy().ends_with(".aider.llm.history") => {
            llm_history_requests(file);
            Calls::default()
        }
        "aider" => aider_calls(std::str::from_utf8(&bytes).expect("utf-8")),
        "qwen-code" => {
            // `functionCall` parts of the model's records, answered by the `functionResponse`
            // parts of `tool_result` records (by id).
            let parts: Vec<(String, Value)> = lines()
                .iter()
                .flat_map(|l| {
                    let kind = l["type"].as_str().unwrap_or_default().to_owned();
                    l["message"]["parts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |p| (kind.clone(), p))
                })
                .collect();
            Calls::of(
                parts
                    .iter()
                    .filter(|(k, _)| k == "assistant")
                    .filter_map(|(_, p)| p["functionCall"]["id"].as_str()),
                parts
                    .iter()
                    .filter(|(k, _)| k == "tool_result")
                    .filter_map(|(_, p)| p["functionResponse"]["id"].as_str()),
            )
        }
        other => unreachable!("{other}"),
    }
}

/// The `messages` rows of a Hermes store (role, calls, call id), read without writing beside it.
fn hermes_rows(file: &Path) -> Vec<Value> {
    use rusqlite::{Connection, OpenFlags};
    let uri = format!("file:{}?immutable=1", file.display());
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(uri, flags).expect("open the store");
    let mut q = conn
        .prepare("SELECT role, tool_calls, tool_call_id FROM messages ORDER BY id")
        .expect("messages");
    let rows = q
        .query_map([], |r| {
            Ok(serde_json::json!({
                "role": r.get::<_, String>(0)?,
                "tool_calls": r.get::<_, Option<String>>(1)?,
                "tool_call_id": r.get::<_, Option<String>>(2)?,
            }))
        })
        .expect("rows");
    rows.map(|r| r.expect("row")).collect()
}

/// Aider's LLM history: its `TO LLM <time>` requests counted by this test's own reading, the
/// trajectories (one per request whose `LLM RESPONSE` has a line of text) and the failed
/// attempts they list.
fn llm_history_requests(file: &Path) {
    let text = std::fs::read_to_string(file).expect("utf-8");
    let mut requests = 0;
    let mut replied = 0;
    let mut in_reply = false;
    let mut has_text = false;
    for line in text.lines() {
        if line.starts_with("TO LLM ") {
            replied += usize::from(has_text);
            requests += 1;
            (in_reply, has_text) = (false, false);
        } else if line.starts_with("LLM RESPONSE ") {
            in_reply = true;
        } else if in_reply && !line.trim().is_empty() {
            has_text = true;
        }
    }
    replied += usize::from(has_text);
    let (code, out, stderr) = convert(&[file], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out.len(), replied, "{stderr}");
    let failed: usize = out
        .iter()
        .filter_map(|t| t["details"]["aider"]["failed_attempts"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(replied + failed, requests);
    if file.ends_with("simple-calulator__.aider.llm.history") {
        assert_eq!((requests, replied), (34, 20));
    }
}

/// An Aider chat history's edits, read line by line: complete SEARCH/REPLACE blocks outside
/// Aider's own messages (an edit-format error quotes the block that failed: from a `> ` line
/// without the two trailing spaces to the line that has them), and, while the banner's edit
/// format is `whole`, fenced blocks after a line naming a file (a path, or a name an "Applied
/// edit to" or "Skipping edits to" line gives). The sessions go on after every edit, so
/// each is answered (by Aider's line, its error, or the reader's "no result").
fn aider_calls(text: &str) -> Calls {
    let lines: Vec<&str> = text.lines().collect();
    let named: HashSet<&str> = lines
        .iter()
        .filter_map(|l| {
            let l = l.strip_prefix("> ")?.trim_end();
            l.strip_prefix("Applied edit to ")
                .or_else(|| l.strip_prefix("Skipping edits to "))
        })
        .collect();
    let mut edits = 0;
    let mut in_message = false;
    let mut whole = false;
    let mut fence = false;
    let mut pending_search = false;
    let mut divider = false;
    for (i, l) in lines.iter().enumerate() {
        if in_message {
            in_message = !l.ends_with("  ");
            continue;
        }
        if let Some(status) = l.strip_prefix("> ") {
            in_message = !l.ends_with("  ");
            if status.starts_with("Main model: ") {
                whole = status.contains(" with whole edit format");
            }
            continue;
        }
        match *l {
            "<<<<<<< SEARCH" => (pending_search, divider) = (true, false),
            "=======" => divider = pending_search,
            ">>>>>>> REPLACE" => {
                edits += usize::from(pending_search && divider);
                pending_search = false;
            }
            _ if l.starts_with("```") => {
                let before = if i > 0 { lines[i - 1] } else { "" };
                // Cleaned as Aider cleans it: `**name**`, `name:`, `` `name` ``, `#### name`.
                let name = before.trim().trim_matches('*').trim_end_matches(':');
                let name = name.trim_matches('`').trim_start_matches('#').trim();
                let names_file = !name.is_empty() && (!name.contains(' ') || named.contains(name));
                if whole && !fence && !pending_search && names_file {
                    edits += 1;
                }
                fence = !fence;
            }
            _ => {}
        }
    }
    Calls {
        calls: edits,
        answered: edits,
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

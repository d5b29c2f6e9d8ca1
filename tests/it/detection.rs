//! Detection (`--from auto`) and readers given files of other formats (`--from NAME`): a format
//! claims a file only when the fields that make it that format are there; when none does, the
//! error says so and names the formats that came closest and why they declined; and every
//! reader, given a file of any other format, refuses it or reads it with content, never writing
//! an empty or near-empty trajectory with exit 0.

use std::path::{Path, PathBuf};

use serde_json::Value;
use trajkit::convert::Converter;

use crate::common::{agent_logs, convert, files_in, sample_data, trajkit};

/// Shapes of the agents trajkit does not read, written for these tests after the fields real
/// files of each carry (one line each; the real files are in `../shared/corpus/agent-logs/`),
/// with the format that comes closest and the words of its reason.
const NEAR_MISSES: &[(&str, &str, &str, &str)] = &[
    (
        "qwen-code.jsonl",
        r#"{"parentUuid":null,"sessionId":"s1","timestamp":"2026-01-01T00:00:00Z","type":"user","cwd":"/w","version":"0.18.1","message":{"role":"user","parts":[{"text":"list files"}]}}"#,
        "claude-code",
        "qwen-code (lines have Qwen Code's Gemini-style `message.parts` but no string `uuid`",
    ),
    (
        "kimi.jsonl",
        r#"{"role": "_checkpoint", "id": "0"}"#,
        "openai",
        r#"the role "_checkpoint", which is not one of OpenAI's"#,
    ),
    (
        "hermes-transcript.jsonl",
        r#"{"role":"session_meta","tools":[],"model":"m","platform":"telegram","timestamp":"2026-01-01T00:00:00"}"#,
        "hermes",
        "a Hermes gateway transcript",
    ),
    (
        "wire.jsonl",
        r#"{"type": "metadata", "protocol_version": "1.9"}"#,
        "kimi-cli",
        "a Kimi Code wire.jsonl event log",
    ),
    (
        "opencode.json",
        r#"{"info":{"id":"s"},"messages":[{"info":{"role":"user"},"parts":[{"type":"text","text":"hi"}]}]}"#,
        "openai",
        "its `messages` have no `role`",
    ),
];

#[test]
fn a_near_miss_is_refused_naming_the_closest_format_and_why_it_declined() {
    let dir = tempfile::tempdir().expect("dir");
    for (name, line, closest, why) in NEAR_MISSES {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("{line}\n")).expect("write");
        let (code, out, stderr) = convert(&[&file], None, &[]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(out.is_empty(), "{name}");
        assert!(stderr.contains("no format claims it"), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("closest: {closest} (")) && stderr.contains(why),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn a_file_nothing_comes_close_to_names_no_candidate() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("events.jsonl");
    std::fs::write(
        &file,
        "{\"event\":\"start\",\"at\":\"2026-01-01T00:00:00Z\",\"host\":\"w\"}\n",
    )
    .expect("write");
    let (code, _, stderr) = convert(&[&file], None, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no format claims it: its first record (line 1) has keys"),
        "{stderr}"
    );
    assert!(!stderr.contains("closest:"), "{stderr}");
}

/// A SQLite store of another tool is not LedgerMind's: detection refuses it (naming the
/// tables it has), where LedgerMind used to claim every SQLite file and fail to read it.
#[test]
fn a_sqlite_store_without_an_events_table_is_not_ledgermind() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("store.db");
    let conn = rusqlite::Connection::open(&db).expect("create");
    conn.execute_batch(
        "CREATE TABLE runs (id TEXT PRIMARY KEY, title TEXT);
         CREATE TABLE steps (id TEXT PRIMARY KEY, run_id TEXT, body TEXT);",
    )
    .expect("tables");
    drop(conn);
    let (code, out, stderr) = convert(&[&db], None, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(out.is_empty());
    assert!(
        stderr.contains(
            "no format claims it; closest: ledgermind (a SQLite database without LedgerMind's \
             `events` table; its tables: runs, steps)"
        ),
        "{stderr}"
    );
}

/// OpenAI's and mini-swe-agent's readers refuse a message with no body rather than write empty
/// steps (a Cursor transcript given to them with `--from`).
#[test]
fn chat_readers_refuse_a_message_without_content() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("cursor.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"role":"user","message":{"content":[{"type":"text","text":"build it"}]}}"#,
            "\n",
            r#"{"role":"assistant","message":{"content":[{"type":"text","text":"done"}]}}"#,
            "\n"
        ),
    )
    .expect("write");
    for from in ["openai", "mini-swe-agent"] {
        let (code, out, stderr) = convert(&[&file], Some(from), &[]);
        assert_eq!(code, 1, "{from}: {stderr}");
        assert!(out.is_empty(), "{from}");
        assert!(
            stderr.contains("/messages/0") && stderr.contains("no `content` nor `tool_calls`"),
            "{from}: {stderr}"
        );
    }
}

/// Files of the corpus another format's work reads, left to it here: Cline's API history is an
/// Anthropic Messages conversation; the Go OpenCode's store is read by `crush`.
const READ_ELSEWHERE: &[&str] = &[
    "online-card__api_conversation_history.json",
    "teich__example_openclaw_session.jsonl",
    "rlox__opencode.db",
];

/// What `--from auto` names as closest for the corpus's files of agents trajkit does not read
/// (a file not listed names none).
const CLOSEST_IN_CORPUS: &[(&str, &str)] = &[];

/// Every file of `../shared/corpus/agent-logs/` whose folder names no format trajkit reads is
/// refused by `--from auto` (exit 2, nothing written, "no format claims it"), naming the
/// closest formats where one comes close; none is taken for another format.
#[test]
fn every_agent_log_of_a_format_trajkit_does_not_read_is_refused_clearly() {
    let Some(root) = agent_logs() else { return };
    let mut refused = 0;
    for dir in files_in(&root).into_iter().filter(|d| d.is_dir()) {
        let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if trajkit::formats::lookup(folder).is_ok() {
            continue;
        }
        for file in files_in(&dir) {
            let file_name = file
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if READ_ELSEWHERE.contains(&file_name) {
                continue;
            }
            let rel = format!("{folder}/{file_name}");
            let (code, out, stderr) = convert(&[&file], None, &[]);
            assert_eq!(code, 2, "{rel}: {stderr}");
            assert!(out.is_empty(), "{rel}");
            assert!(stderr.contains("no format claims it"), "{rel}: {stderr}");
            match CLOSEST_IN_CORPUS.iter().find(|(p, _)| rel.starts_with(p)) {
                Some((_, closest)) => assert!(
                    stderr.contains(&format!("; closest: {closest} (")),
                    "{rel}: {stderr}"
                ),
                None => assert!(!stderr.contains("closest:"), "{rel}: {stderr}"),
            }
            refused += 1;
        }
    }
    assert!(refused >= 1, "{refused} files refused");
}

/// Every reader, given every file of the corpus (`agent-logs/`) and every sample of
/// `sample_data/`, refuses it (a non-zero exit: its records rejected) or reads it with content:
/// with exit 0, every trajectory holds a step with content, and the steps with content are at
/// least half the messages of the source (and two, when it has two or more), so that a foreign
/// file is never written as an empty or near-empty trajectory.
#[test]
fn every_reader_refuses_or_reads_with_content_a_file_of_any_format() {
    let mut inputs = Vec::new();
    if let Some(root) = agent_logs() {
        inputs.extend(
            files_in(&root)
                .into_iter()
                .filter(|d| d.is_dir())
                .flat_map(|d| files_in(&d)),
        );
    }
    for dir in files_in(&sample_data()).into_iter().filter(|d| d.is_dir()) {
        if dir.file_name().is_some_and(|n| n == "side") {
            continue;
        }
        inputs.extend(files_in(&dir));
    }
    let readers: Vec<&str> = trajkit::formats::converters()
        .iter()
        .map(|c| c.name())
        .chain(trajkit::formats::spec::embedded().iter().map(|c| c.name()))
        .collect();
    let jobs: Vec<(&str, &PathBuf)> = readers
        .iter()
        .flat_map(|r| inputs.iter().map(move |i| (*r, i)))
        .collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(4))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(reader, input)| near_empty(reader, input))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "readers that wrote a near-empty trajectory with exit 0:\n{}",
        failures.join("\n")
    );
}

/// Why `convert --from reader input` wrote a near-empty trajectory with exit 0, if it did.
fn near_empty(reader: &str, input: &Path) -> Option<String> {
    let out = trajkit()
        .args(["convert", "-q", "--from", reader])
        .arg(input)
        .output()
        .expect("runs");
    if out.status.code() != Some(0) {
        return None;
    }
    let trajectories: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let held: Vec<usize> = trajectories.iter().map(steps_with_content).collect();
    let total: usize = held.iter().sum();
    let messages = source_messages(input);
    let enough = if messages >= 2 {
        total >= 2 && 2 * total >= messages
    } else {
        true
    };
    let what = format!("--from {reader} {}", input.display());
    if trajectories.is_empty() {
        Some(format!("{what}: exit 0 and nothing written"))
    } else if held.contains(&0) || !enough {
        Some(format!(
            "{what}: steps with content per trajectory {held:?}, of {messages} source messages"
        ))
    } else {
        None
    }
}

/// The steps of a trajectory that hold something: every action but a message with no text and
/// no reasoning, every observation but a text one with no text.
fn steps_with_content(t: &Value) -> usize {
    let blank = |v: &Value| v.as_str().is_some_and(|s| s.trim().is_empty()) || v.is_null();
    t["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| match s["class_"].as_str() {
            Some("message_action") => !blank(&s["content"]) || !blank(&s["reasoning_content"]),
            Some("text_observation") => !blank(&s["content"]),
            _ => true,
        })
        .count()
}

/// The conversation messages of a source (a file, or the files under a directory), as this test
/// counts them whatever the format: the JSON objects anywhere in it with a string `role` (not a
/// pseudo-role starting with `_`, as Kimi CLI's `_checkpoint`) or a string `from` (ShareGPT). A
/// file that is not JSON (nor JSON lines) has none.
fn source_messages(path: &Path) -> usize {
    if path.is_dir() {
        return files_in(path).iter().map(|p| source_messages(p)).sum();
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    let values: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    };
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(o) => {
                let role = o
                    .get("role")
                    .and_then(Value::as_str)
                    .is_some_and(|r| !r.starts_with('_'));
                let from = o.get("from").is_some_and(Value::is_string);
                usize::from(role || from) + o.values().map(count).sum::<usize>()
            }
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    values.iter().map(count).sum()
}

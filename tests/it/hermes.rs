//! Hermes Agent: the corpus's real store and export, and stores these tests build with the
//! columns of Hermes' schema versions (8, with no flags; 17, with `active`/`compacted`; 30,
//! with shared system prompts, summaries and `api_content`), read while a writer holds them,
//! with rows only in the write-ahead log, a corrupt page, and a schema version it does not
//! know.

use std::path::Path;

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links,
};
use crate::stores::{
    converted_as, converted_copy_of_log, create_store, insert, keep_in_log, overwrite,
};

/// The columns of the `sessions` and `messages` tables at schema version 8, as Hermes created
/// them (the corpus's store has exactly these).
const SCHEMA_8: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
    model_config TEXT, system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL,
    ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0, estimated_cost_usd REAL, title TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT, reasoning TEXT,
    reasoning_content TEXT, reasoning_details TEXT, codex_reasoning_items TEXT);
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
";

/// What version 17 added to messages: the flags of compaction and rewind.
const FLAGS_17: &str = "
ALTER TABLE messages ADD COLUMN observed INTEGER DEFAULT 0;
ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1;
ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;
";

/// What version 30 added: system prompts shared by hash, summary rows, what the model was sent.
const ADDED_30: &str = "
CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL);
ALTER TABLE sessions ADD COLUMN system_prompt_hash TEXT;
ALTER TABLE messages ADD COLUMN _compressed_summary INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN api_content TEXT;
ALTER TABLE messages ADD COLUMN display_identity BLOB;
";

/// A call in Hermes' stored shape (`tool_calls` is a JSON list of these).
fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "call_id": id, "response_item_id": format!("fc_{id}"), "type": "function",
        "function": {"name": name, "arguments": args.to_string()}})
}

/// A store at `path` with `schema` and schema version `version`.
fn store(path: &Path, schema: &str, version: i64) -> Connection {
    let conn = create_store(path, &[schema]);
    insert(&conn, "schema_version", &[("version", &version)]);
    conn
}

fn session(conn: &Connection, id: &str, parent: Option<&str>, started: f64, prompt: Option<&str>) {
    insert(
        conn,
        "sessions",
        &[
            ("id", &id),
            ("source", &"cli"),
            ("model", &"gpt-4o"),
            ("model_config", &"{\"max_iterations\": 90}"),
            ("system_prompt", &prompt),
            ("parent_session_id", &parent),
            ("started_at", &started),
            ("input_tokens", &1200),
            ("output_tokens", &80),
            ("estimated_cost_usd", &0.01),
        ],
    );
}

/// Inserts a message; `calls` as Hermes stores them (a JSON string) when given.
fn message(
    conn: &Connection,
    session: &str,
    role: &str,
    content: Option<&str>,
    calls: Option<Value>,
    call_id: Option<&str>,
    at: f64,
) -> i64 {
    let assistant = role == "assistant";
    let finish = assistant.then_some(if calls.is_some() {
        "tool_calls"
    } else {
        "stop"
    });
    insert(
        conn,
        "messages",
        &[
            ("session_id", &session),
            ("role", &role),
            ("content", &content),
            ("tool_calls", &calls.as_ref().map(Value::to_string)),
            ("tool_call_id", &call_id),
            ("timestamp", &at),
            ("finish_reason", &finish),
            (
                "reasoning_content",
                &assistant.then_some("I should look first."),
            ),
        ],
    )
}

/// A store of schema version 8: a parent session whose turn delegated to a subagent (the
/// subagent's rows written first, as Hermes writes a turn's rows when it ends), a session with
/// no messages, a tool result with no `tool_name`.
fn store_8(path: &Path) -> Connection {
    let conn = store(path, SCHEMA_8, 8);
    session(
        &conn,
        "20260101_090000_aaaaaa",
        None,
        100.0,
        Some("You are Hermes."),
    );
    session(
        &conn,
        "20260101_090005_bbbbbb",
        Some("20260101_090000_aaaaaa"),
        105.0,
        Some("You are a focused subagent."),
    );
    session(
        &conn,
        "20260101_100000_cccccc",
        None,
        200.0,
        Some("You are Hermes."),
    );
    let child = "20260101_090005_bbbbbb";
    message(
        &conn,
        child,
        "user",
        Some("Find the config file."),
        None,
        None,
        106.0,
    );
    message(
        &conn,
        child,
        "assistant",
        Some(""),
        Some(json!([call(
            "call_c1",
            "search_files",
            json!({"pattern": "*.toml"})
        )])),
        None,
        107.0,
    );
    message(
        &conn,
        child,
        "tool",
        Some("{\"total_count\": 1}"),
        None,
        Some("call_c1"),
        108.0,
    );
    message(
        &conn,
        child,
        "assistant",
        Some("It is config.toml."),
        None,
        None,
        109.0,
    );
    let parent = "20260101_090000_aaaaaa";
    message(
        &conn,
        parent,
        "user",
        Some("Check the config."),
        None,
        None,
        101.0,
    );
    message(
        &conn,
        parent,
        "assistant",
        Some("Delegating."),
        Some(json!([call(
            "call_p1",
            "delegate_task",
            json!({"goal": "Find the config file."})
        )])),
        None,
        102.0,
    );
    message(
        &conn,
        parent,
        "tool",
        Some("{\"results\": []}"),
        None,
        Some("call_p1"),
        110.0,
    );
    message(
        &conn,
        parent,
        "assistant",
        Some(""),
        Some(json!([call(
            "call_p2",
            "terminal",
            json!({"command": "cat config.toml"})
        )])),
        None,
        111.0,
    );
    message(
        &conn,
        parent,
        "tool",
        Some("{\"output\": \"x = 1\"}"),
        None,
        Some("call_p2"),
        112.0,
    );
    message(
        &conn,
        parent,
        "assistant",
        Some("x is 1."),
        None,
        None,
        113.0,
    );
    conn
}

/// Converts the store with `--from auto`: exit 0, detected as Hermes, valid; the trajectories.
fn converted(path: &Path) -> Vec<Value> {
    converted_as("hermes", &[path], &[])
}

/// The trajectories with an assistant turn (a session of a system prompt alone has none, and
/// the exports filter it).
fn trainable(out: &[Value]) -> Vec<Value> {
    out.iter()
        .filter(|t| step_classes(t).iter().any(|c| c.ends_with("_action")))
        .cloned()
        .collect()
}

fn by_id<'t>(out: &'t [Value], id: &str) -> &'t Value {
    out.iter().find(|t| t["id"] == id).expect(id)
}

#[test]
fn a_version_8_store_converts_each_session_with_its_calls_linked_and_subagents_apart() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("state.db");
    drop(store_8(&path));
    let out = converted(&path);
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "20260101_090000_aaaaaa",
            "20260101_090005_bbbbbb",
            "20260101_100000_cccccc"
        ]
    );
    let parent = by_id(&out, "20260101_090000_aaaaaa");
    assert_eq!(
        step_classes(parent),
        [
            "text_observation",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(parent["content"][0]["name"], "system");
    assert_eq!(parent["content"][0]["content"], "You are Hermes.");
    assert_eq!(parent["content"][2]["description"], "Delegating.");
    assert_eq!(
        parent["content"][2]["reasoning_content"],
        "I should look first."
    );
    assert_eq!(parent["content"][4]["content"], "cat config.toml");
    // A result with no `tool_name` is named after its call.
    assert_eq!(parent["content"][3]["name"], "delegate_task");
    assert_eq!(parent["content"][3]["tool_call_id"], "call_p1");
    assert_eq!(tool_actions_and_links(parent), (2, true));
    let h = &parent["details"]["hermes"];
    assert_eq!(h["child_session_ids"], json!(["20260101_090005_bbbbbb"]));
    assert_eq!(h["schema_version"], 8);
    assert_eq!(h["session"]["model"], "gpt-4o");
    assert_eq!(h["session"]["input_tokens"], 1200);
    assert_eq!(h["session"]["model_config"]["max_iterations"], 90);
    assert_eq!(h["messages"][0]["step"], 1);
    assert_eq!(h["messages"][0]["timestamp"], 101.0);

    let child = by_id(&out, "20260101_090005_bbbbbb");
    assert_eq!(
        child["details"]["hermes"]["parent_session_id"],
        "20260101_090000_aaaaaa"
    );
    assert_eq!(tool_actions_and_links(child), (1, true));
    // A session with no messages keeps its system prompt.
    let empty = by_id(&out, "20260101_100000_cccccc");
    assert_eq!(step_classes(empty), ["text_observation"]);
    assert_every_sft_target_accepts(&trainable(&out), "hermes store 8");
}

/// Version 17's flags and version 30's shared prompts, summaries, `api_content` and JSON
/// content: the archived history stays, the compaction's copies and rewound rows are left out
/// and counted, and the compaction is marked.
#[test]
fn compacted_and_rewound_rows_of_a_version_30_store() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("state.db");
    let conn = store(&path, &format!("{SCHEMA_8}{FLAGS_17}{ADDED_30}"), 30);
    conn.execute(
        "INSERT INTO system_prompts VALUES ('h1', 'You are Hermes (shared).')",
        [],
    )
    .expect("prompt");
    session(&conn, "s30", None, 1.0, None);
    conn.execute("UPDATE sessions SET system_prompt_hash = 'h1'", [])
        .expect("hash");
    let ask = message(
        &conn,
        "s30",
        "user",
        Some("Run the tests."),
        None,
        None,
        2.0,
    );
    let act = message(
        &conn,
        "s30",
        "assistant",
        Some(""),
        Some(json!([call(
            "call_1",
            "terminal",
            json!({"command": "cargo test"})
        )])),
        None,
        3.0,
    );
    let out_row = message(&conn, "s30", "tool", Some("ok"), None, Some("call_1"), 4.0);
    let undone = message(&conn, "s30", "user", Some("never mind"), None, None, 4.5);
    conn.execute("UPDATE messages SET active = 0 WHERE id = ?1", [undone])
        .expect("rewind");
    // The compaction: every live row archived, then a summary and copies of the kept rows.
    conn.execute(
        "UPDATE messages SET active = 0, compacted = 1 WHERE active = 1",
        [],
    )
    .expect("archive");
    let summary = message(
        &conn,
        "s30",
        "user",
        Some("[Summary] tests ran."),
        None,
        None,
        5.0,
    );
    conn.execute(
        "UPDATE messages SET _compressed_summary = 1 WHERE id = ?1",
        [summary],
    )
    .expect("summary");
    message(&conn, "s30", "tool", Some("ok"), None, Some("call_1"), 4.0);
    let image = "\0json:[{\"type\": \"text\", \"text\": \"And this?\"}, {\"type\": \"image_url\", \"image_url\": {\"url\": \"data:image/png;base64,AAAA\"}}]";
    message(&conn, "s30", "user", Some(image), None, None, 6.0);
    let last = message(
        &conn,
        "s30",
        "assistant",
        Some("Shown: a pixel."),
        None,
        None,
        7.0,
    );
    conn.execute(
        "UPDATE messages SET api_content = 'Shown: a pixel (sent).' WHERE id = ?1",
        [last],
    )
    .expect("api content");
    drop(conn);
    let out = converted(&path);
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "image_observation",
            "message_action"
        ]
    );
    assert_eq!(t["content"][0]["content"], "You are Hermes (shared).");
    assert_eq!(t["content"][4]["name"], "compaction_summary");
    assert_eq!(t["content"][6]["content"], "data:image/png;base64,AAAA");
    assert_eq!(t["content"][7]["content"], "Shown: a pixel (sent).");
    let h = &t["details"]["hermes"];
    assert_eq!(
        h["compactions"],
        json!([{"step": 4, "message_id": summary, "summary": true}])
    );
    assert_eq!(h["rewound_left_out"], json!([undone]));
    assert_eq!(
        h["compaction_copies_left_out"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        h["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| &m["display_content"]),
        Some(&json!("Shown: a pixel."))
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 2);
    assert_eq!(left["messages"], json!({"in": 8, "kept": 6}));
    assert!(ask < act && act < out_row);
}

/// A store whose rows are still in the write-ahead log while a writer holds it (and holds a
/// write transaction of rows not committed), and the log copied without its `-shm` file.
#[test]
fn rows_in_the_write_ahead_log_are_read_and_a_writer_is_not_blocked() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("state.db");
    let conn = Connection::open(&path).expect("create");
    keep_in_log(&conn);
    conn.execute_batch(SCHEMA_8).expect("schema");
    insert(&conn, "schema_version", &[("version", &8)]);
    session(&conn, "logged", None, 1.0, Some("You are Hermes."));
    message(&conn, "logged", "user", Some("hello"), None, None, 2.0);
    message(&conn, "logged", "assistant", Some("hi"), None, None, 3.0);
    let wal = dir.path().join("state.db-wal");
    assert!(std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0));
    // A write transaction the writer has not committed.
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    message(
        &conn,
        "logged",
        "user",
        Some("uncommitted"),
        None,
        None,
        4.0,
    );
    let out = converted(&path);
    assert_eq!(out.len(), 1);
    assert_eq!(step_classes(&out[0]).len(), 3, "{}", out[0]);
    // The writer goes on.
    conn.execute_batch("COMMIT").expect("commit");
    message(&conn, "logged", "assistant", Some("after"), None, None, 5.0);

    // The store and its log copied elsewhere, without the -shm file.
    let out = converted_copy_of_log("hermes", &path);
    assert_eq!(step_classes(&out[0]).len(), 5, "{}", out[0]);
    drop(conn);
}

#[test]
fn an_unknown_schema_version_and_a_corrupt_page_are_errors_naming_file_and_table() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("state.db");
    drop(store(&path, SCHEMA_8, 99));
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains(&path.display().to_string())
            && err.contains("table `schema_version`")
            && err.contains("schema version 99"),
        "{err}"
    );

    // Many messages, then the last pages overwritten.
    let path = dir.path().join("corrupt.db");
    let conn = store_8(&path);
    let long = "x".repeat(3000);
    for i in 0..60 {
        message(
            &conn,
            "20260101_100000_cccccc",
            "user",
            Some(&long),
            None,
            None,
            300.0 + f64::from(i),
        );
    }
    drop(conn);
    overwrite(&path, |len| len - 8192..len, 0xA5);
    let (code, _, err) = convert(&[&path], Some("hermes"), &[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("corrupt.db")
            && (err.contains("table `messages`") || err.contains("table `sessions`")),
        "{err}"
    );
}

/// The JSON lines of `hermes sessions export`: the session row with its messages (the
/// `session_meta` role kept in details), and a lineage export's segments.
#[test]
fn an_export_line_converts_like_the_store() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("export.jsonl");
    let line = json!({"id": "20260301_080000_dddddd", "source": "telegram", "model": "kimi-k2",
    "system_prompt": "You are Hermes.", "parent_session_id": null, "started_at": 1.0,
    "input_tokens": 10, "actual_cost_usd": null, "active": 1,
    "messages": [
        {"id": 4, "session_id": "20260301_080000_dddddd", "role": "session_meta",
         "content": null, "tool_calls": null, "timestamp": 1.1},
        {"id": 5, "session_id": "20260301_080000_dddddd", "role": "user", "content": "weather?",
         "tool_calls": null, "timestamp": 1.2, "active": 1},
        {"id": 6, "session_id": "20260301_080000_dddddd", "role": "assistant", "content": "",
         "tool_calls": [call("functions.web_search:0", "web_search", json!({"q": "weather"}))],
         "reasoning": "Search.", "reasoning_content": "Search.", "timestamp": 1.3},
        {"id": 7, "session_id": "20260301_080000_dddddd", "role": "tool",
         "content": "<untrusted_tool_result source=\"web_search\">\nsunny\n</untrusted_tool_result>",
         "tool_call_id": "functions.web_search:0", "tool_name": "web_search", "timestamp": 1.4},
        {"id": 8, "session_id": "20260301_080000_dddddd", "role": "assistant",
         "content": "Sunny.", "tool_calls": null, "finish_reason": "stop", "timestamp": 1.5}
    ]});
    std::fs::write(&path, format!("{line}\n")).expect("write");
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("detected hermes"), "{err}");
    let t = &out[0];
    assert_eq!(t["id"], "20260301_080000_dddddd");
    assert_eq!(tool_actions_and_links(t), (1, true));
    assert_eq!(t["content"][2]["reasoning_content"], "Search.");
    let h = &t["details"]["hermes"];
    assert_eq!(h["session_meta"][0]["id"], 4);
    assert!(h["messages"][1].get("reasoning").is_none(), "{h}");
    assert_eq!(h["session"]["source"], "telegram");
    assert!(t["details"]["source"]
        .get("left_out")
        .is_none_or(|l| l.get("lines").is_none()));
}

#[test]
fn the_corpus_store_and_export_convert_whole() {
    let Some(root) = agent_logs() else { return };
    let db = root.join("hermes/hermes-trading-agent__state.db");
    let out = converted(&db);
    assert_eq!(out.len(), 56);
    let (calls, linked): (usize, bool) = out
        .iter()
        .map(tool_actions_and_links)
        .fold((0, true), |(n, all), (c, l)| (n + c, all && l));
    assert_eq!((calls, linked), (86, true));
    let parents = out
        .iter()
        .filter(|t| t["details"]["hermes"]["parent_session_id"].is_string())
        .count();
    assert_eq!(parents, 4);
    // The parent with no messages keeps its system prompt.
    assert_eq!(
        step_classes(by_id(&out, "20260427_175954_561d10")),
        ["text_observation"]
    );
    assert_every_sft_target_accepts(&trainable(&out), "hermes corpus store");

    let export = root.join("hermes/teich__example_hermes_session.jsonl");
    let out = converted(&export);
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(tool_actions_and_links(t), (1, true));
    // The stray piece of call JSON the model answered with is its message; the export ends on
    // the user's question.
    let steps = t["content"].as_array().expect("steps");
    assert!(steps.iter().any(|s| s["class_"] == "message_action"
        && s["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("queries\""))));
    assert_eq!(steps.last().map(|s| &s["source"]), Some(&json!("user")));
    assert_eq!(
        t["details"]["hermes"]["session"]["model"],
        "moonshotai/Kimi-K2.6"
    );
}

#[test]
fn the_sample_converts() {
    let dir = sample_data().join("hermes");
    for file in crate::common::files_in(&dir) {
        let out = converted(&file);
        assert!(!out.is_empty());
        for t in &out {
            assert!(tool_actions_and_links(t).1);
        }
    }
}

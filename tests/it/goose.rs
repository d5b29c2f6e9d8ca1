//! Goose: stores these tests build with the columns of Goose's schema versions (16, the newest
//! this reader knows; 2, before `metadata_json` and `message_id`), read while a writer holds
//! them, with rows only in the write-ahead log, a corrupt page and a schema version it does not
//! know; and the session files Goose wrote before its store. No corpus folder holds Goose
//! files: the shapes are those of Goose's own source (`session_manager.rs`, `message.rs`).
//! `sample_data/goose/` is what [`write_sample`] writes (checked by converting both).

use std::path::Path;

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::common::{
    assert_every_sft_target_accepts, convert, files_in, sample_data, step_classes,
    tool_actions_and_links, trajkit,
};
use crate::stores::{
    converted_as, converted_copy_of_log, create_store, insert, keep_in_log, overwrite,
};

/// The tables of schema version 16, as Goose creates them.
const SCHEMA_16: &str = "
CREATE TABLE schema_version (version INTEGER PRIMARY KEY,
    applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '', user_set_name BOOLEAN DEFAULT FALSE,
    session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER,
    output_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, accumulated_cache_read_tokens INTEGER,
    accumulated_cache_write_tokens INTEGER, accumulated_cost REAL, schedule_id TEXT,
    recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    goose_mode TEXT NOT NULL DEFAULT 'auto', archived_at TIMESTAMP, project_id TEXT,
    parent_session_id TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
    session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
CREATE TABLE usage_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_timestamp INTEGER NOT NULL, model TEXT, input_tokens INTEGER, output_tokens INTEGER,
    total_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER, cost REAL,
    cost_source TEXT, is_compaction INTEGER DEFAULT 0);
";

/// The tables of schema version 2 (Goose 1.10's first migrations): no `metadata_json`,
/// `message_id`, `name` or provider columns yet.
const SCHEMA_2: &str = "
CREATE TABLE schema_version (version INTEGER PRIMARY KEY,
    applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (id TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, schedule_id TEXT, recipe_json TEXT,
    user_recipe_values_json TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER);
";

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"type": "toolRequest", "id": id,
        "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}})
}

fn result(id: &str, out: &str) -> Value {
    json!({"type": "toolResponse", "id": id, "toolResult": {"status": "success",
        "value": {"content": [text(out)], "isError": false}}})
}

/// A store at `path` with `schema` and schema version `version`.
fn store(path: &Path, schema: &str, version: i64) -> Connection {
    let conn = create_store(path, &[schema]);
    insert(&conn, "schema_version", &[("version", &version)]);
    conn
}

fn session(conn: &Connection, id: &str) {
    insert(
        conn,
        "sessions",
        &[
            ("id", &id),
            ("working_dir", &"/w"),
            ("created_at", &"2026-01-01"),
        ],
    );
}

/// A message with `metadata` (in version 2, which has no such column, none is written).
fn message(conn: &Connection, session: &str, role: &str, content: Value, at: i64, meta: Value) {
    insert(
        conn,
        "messages",
        &[
            ("session_id", &session),
            ("role", &role),
            ("content_json", &content.to_string()),
            ("created_timestamp", &at),
            ("metadata_json", &meta.to_string()),
        ],
    );
}

const BOTH: fn() -> Value = || json!({"userVisible": true, "agentVisible": true});

/// Converts with `--from auto`: exit 0, detected as Goose, valid; the trajectories.
fn converted(path: &Path) -> Vec<Value> {
    converted_as("goose", &[path], &[])
}

#[test]
fn a_version_16_store_converts_every_item_kind_with_calls_linked() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sessions.db");
    let conn = store(&path, SCHEMA_16, 16);
    session(&conn, "20260101_1");
    conn.execute(
        "UPDATE sessions SET provider_name = 'openai', model_config_json = ?1",
        [json!({"model_name": "gpt-5", "context_limit": 400000}).to_string()],
    )
    .expect("model");
    conn.execute(
        "INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens,
            output_tokens, total_tokens, cost) VALUES ('20260101_1', 5, 'gpt-5', 100, 10, 110, 0.5)",
        [],
    )
    .expect("ledger");
    let s = "20260101_1";
    let only_user = json!({"userVisible": true, "agentVisible": false});
    let only_agent = json!({"userVisible": false, "agentVisible": true});
    let neither = json!({"userVisible": false, "agentVisible": false});
    message(
        &conn,
        s,
        "user",
        json!([text("count the files"),
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]),
        1,
        only_user.clone(),
    );
    message(
        &conn,
        s,
        "assistant",
        json!([
        {"type": "thinking", "thinking": "ls will do", "signature": "x"},
        text("Listing them."),
        call("c1", "shell", json!({"command": "ls | wc -l"})),
        call("c2", "developer__text_editor", json!({"command": "view", "path": "a.txt"}))]),
        2,
        only_user.clone(),
    );
    message(
        &conn,
        s,
        "user",
        json!([result("c1", "3"),
        {"type": "toolResponse", "id": "c2", "toolResult": {"status": "error",
            "error": "-32603: no such file"}}]),
        3,
        only_user,
    );
    message(
        &conn,
        s,
        "user",
        json!([text("Summary: three files.")]),
        4,
        only_agent.clone(),
    );
    message(
        &conn,
        s,
        "assistant",
        json!([text("Your context was compacted.")]),
        4,
        only_agent,
    );
    message(
        &conn,
        s,
        "user",
        json!([text("count the files")]),
        4,
        neither,
    );
    message(
        &conn,
        s,
        "assistant",
        json!([
        {"type": "redactedThinking", "data": "opaque"},
        call("c3", "shell", json!({"command": "sleep 100"}))]),
        5,
        BOTH(),
    );
    message(
        &conn,
        s,
        "user",
        json!([text("stop, that's enough"),
        {"type": "systemNotification", "notificationType": "inlineMessage", "msg": "cancelled"},
        {"type": "hologram", "x": 1}]),
        6,
        BOTH(),
    );
    message(
        &conn,
        s,
        "assistant",
        json!([text("There are 3 files.")]),
        7,
        BOTH(),
    );
    drop(conn);

    let out = converted(&path);
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(t["id"], "20260101_1");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "image_observation",
            "code_action",
            "api_action",
            "text_observation",
            "text_observation",
            "text_observation",
            "text_observation",
            "code_action",
            "text_observation",
            "text_observation",
            "message_action"
        ],
        "{t}"
    );
    let c = &t["content"];
    assert_eq!(c[2]["reasoning_content"], "ls will do");
    assert_eq!(c[2]["description"], "Listing them.");
    assert_eq!(c[4]["tool_call_id"], c[2]["tool_call_id"]);
    assert_eq!(c[5]["content"], "-32603: no such file");
    assert_eq!(c[5]["tool_call_id"], "c2");
    assert_eq!(c[6]["name"], "compact_summary");
    assert_eq!(c[7]["name"], "compact_continuation");
    // A call canceled by the next prompt: an empty result linked to it.
    assert_eq!(c[9]["content"], "");
    assert_eq!(c[9]["tool_call_id"], "c3");
    assert_eq!(c[10]["content"], "stop, that's enough");
    assert!(tool_actions_and_links(t).1);
    let g = &t["details"]["goose"];
    assert_eq!(g["schema_version"], 16);
    assert_eq!(g["model"], "gpt-5");
    assert_eq!(g["provider"], "openai");
    assert_eq!(g["usage"][0]["total_tokens"], 110);
    assert_eq!(g["working_dir"], "/w");
    assert_eq!(
        g["compactions"],
        json!([{"step": 6, "line": 4, "kind": "summary"}])
    );
    assert_eq!(
        g["error_results"],
        json!([{"step": 5, "tool_call_id": "c2"}])
    );
    assert_eq!(g["unanswered_calls"][0]["empty_result"], true);
    // The copy of the prompt a compaction replaced: kept whole in details, no step.
    let hidden = &g["messages"][5];
    assert_eq!(hidden["step"], Value::Null);
    assert_eq!(hidden["content"][0]["text"], "count the files");
    // The signature, the redacted thinking and the notification stay in details.
    assert_eq!(g["messages"][1]["content"][0]["signature"], "x");
    assert_eq!(g["messages"][6]["content"][0]["type"], "redactedThinking");
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["lines"], 1);
    assert_eq!(left["blocks"], 2);
    assert_eq!(left["values"], 1);
    assert_eq!(left["messages"], json!({"in": 9, "kept": 8}));
    assert_every_sft_target_accepts(&out, "goose v16");
}

#[test]
fn a_version_2_store_without_metadata_converts() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("old.db");
    let conn = store(&path, SCHEMA_2, 2);
    session(&conn, "20251001_3");
    message(
        &conn,
        "20251001_3",
        "user",
        json!([text("hi")]),
        10,
        Value::Null,
    );
    // A bare list of items as the result's value (before Goose 1.10's CallToolResult).
    message(
        &conn,
        "20251001_3",
        "assistant",
        json!([call("t", "developer__shell", json!({"command": "pwd"}))]),
        11,
        Value::Null,
    );
    message(
        &conn,
        "20251001_3",
        "user",
        json!([{"type": "toolResponse", "id": "t",
        "toolResult": {"status": "success", "value": [text("/w")]}}]),
        12,
        Value::Null,
    );
    message(
        &conn,
        "20251001_3",
        "assistant",
        json!([text("In /w.")]),
        13,
        Value::Null,
    );
    drop(conn);
    let out = converted(&path);
    assert_eq!(
        step_classes(&out[0]),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(out[0]["content"][2]["content"], "/w");
    assert_eq!(out[0]["details"]["goose"]["schema_version"], 2);
}

#[test]
fn a_session_file_converts_like_the_store() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("20250401_7.jsonl");
    let lines = [
        json!({"working_dir": "/w", "description": "old", "message_count": 3, "total_tokens": 9}),
        json!({"role": "user", "created": 1, "content": [text("what time is it")]}),
        json!({"role": "assistant", "created": 2, "content": [call("x", "developer__shell",
            json!({"command": "date"}))]}),
        json!({"role": "user", "created": 3, "content": [{"type": "toolResponse", "id": "x",
            "toolResult": {"status": "success", "value": [text("noon")]}}]}),
        json!({"role": "assistant", "created": 4, "content": [
            {"type": "conversationCompacted", "msg": "Conversation compacted."},
            text("It is noon.")]}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).expect("write");
    let out = converted(&path);
    let t = &out[0];
    assert_eq!(t["id"], "20250401_7");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "code_action",
            "text_observation",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(t["content"][3]["name"], "compaction");
    assert_eq!(t["details"]["goose"]["store"], "jsonl");
    assert_eq!(t["details"]["goose"]["session"]["total_tokens"], 9);
    assert_eq!(t["details"]["goose"]["tokens"], json!({"total_tokens": 9}));
    assert_eq!(t["details"]["goose"]["first_message_at"], 1);
    assert_eq!(t["details"]["goose"]["last_message_at"], 4);
    assert_eq!(
        t["details"]["goose"]["compactions"][0]["kind"],
        "conversationCompacted"
    );
}

/// A store whose rows are still in the write-ahead log while a writer holds it (and holds a
/// write transaction of rows not committed), and the log copied without its `-shm` file.
#[test]
fn rows_in_the_write_ahead_log_are_read_and_a_writer_is_not_blocked() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sessions.db");
    let conn = Connection::open(&path).expect("create");
    keep_in_log(&conn);
    conn.execute_batch(SCHEMA_16).expect("schema");
    insert(&conn, "schema_version", &[("version", &16)]);
    session(&conn, "logged");
    message(&conn, "logged", "user", json!([text("hello")]), 1, BOTH());
    message(&conn, "logged", "assistant", json!([text("hi")]), 2, BOTH());
    let wal = dir.path().join("sessions.db-wal");
    assert!(std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0));
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    message(
        &conn,
        "logged",
        "user",
        json!([text("uncommitted")]),
        3,
        BOTH(),
    );
    let out = converted(&path);
    assert_eq!(step_classes(&out[0]).len(), 2, "{}", out[0]);
    conn.execute_batch("COMMIT").expect("commit");
    message(
        &conn,
        "logged",
        "assistant",
        json!([text("after")]),
        4,
        BOTH(),
    );

    let out = converted_copy_of_log("goose", &path);
    assert_eq!(step_classes(&out[0]).len(), 4, "{}", out[0]);
    drop(conn);
}

#[test]
fn an_unknown_schema_version_and_a_corrupt_page_are_errors_naming_file_and_table() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sessions.db");
    drop(store(&path, SCHEMA_16, 99));
    let (code, out, err) = convert(&[&path], None, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains(&path.display().to_string())
            && err.contains("table `schema_version`")
            && err.contains("schema version 99"),
        "{err}"
    );

    // A store of another shape given with --from goose.
    let other = dir.path().join("other.db");
    Connection::open(&other)
        .and_then(|c| c.execute_batch("CREATE TABLE sessions (id TEXT); CREATE TABLE messages (session_id TEXT, role TEXT, body TEXT);"))
        .expect("other");
    let (code, _, err) = convert(&[&other], Some("goose"), &[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("other.db")
            && err.contains("table `messages`")
            && err.contains("content_json"),
        "{err}"
    );

    // Many messages, then the last pages overwritten.
    let path = dir.path().join("corrupt.db");
    let conn = store(&path, SCHEMA_16, 16);
    session(&conn, "c");
    let long = "x".repeat(3000);
    for i in 0..60 {
        message(&conn, "c", "user", json!([text(&long)]), i, BOTH());
    }
    drop(conn);
    overwrite(&path, |len| len - 8192..len, 0xA5);
    let (code, _, err) = convert(&[&path], Some("goose"), &[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("corrupt.db")
            && (err.contains("table `messages`") || err.contains("table `sessions`")),
        "{err}"
    );
}

/// The tables of threads that schema version 10 added (a thread's messages keep the session
/// they were written in).
const THREADS_10: &str = "
CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT 'New Chat',
    user_set_name BOOLEAN DEFAULT FALSE, working_dir TEXT,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    archived_at TIMESTAMP, metadata_json TEXT DEFAULT '{}');
CREATE TABLE thread_messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL REFERENCES threads(id), session_id TEXT, message_id TEXT,
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    metadata_json TEXT DEFAULT '{}');
CREATE INDEX idx_thread_messages_thread ON thread_messages(thread_id);
";

#[test]
fn thread_messages_are_counted_as_left_out_not_read() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sessions.db");
    let conn = store(&path, SCHEMA_16, 16);
    conn.execute_batch(THREADS_10).expect("threads");
    insert(&conn, "threads", &[("id", &"t1")]);
    for id in ["s1", "s2"] {
        session(&conn, id);
        message(&conn, id, "user", json!([text("hello")]), 1, BOTH());
        message(&conn, id, "assistant", json!([text("hi")]), 2, BOTH());
    }
    for (session, n) in [(Some("s1"), 3), (None, 1)] {
        for i in 0..n {
            insert(
                &conn,
                "thread_messages",
                &[
                    ("thread_id", &"t1"),
                    ("session_id", &session),
                    ("role", &"user"),
                    ("content_json", &json!([text("hello")]).to_string()),
                    ("created_timestamp", &i),
                ],
            );
        }
    }
    drop(conn);
    let out = converted(&path);
    assert_eq!(out.len(), 2);
    let s1 = &out[0];
    assert_eq!(s1["id"], "s1");
    assert_eq!(s1["details"]["goose"]["thread_messages_not_read"], 3);
    assert_eq!(s1["details"]["source"]["left_out"]["lines"], 3);
    let s2 = &out[1];
    assert!(s2["details"]["goose"]
        .get("thread_messages_not_read")
        .is_none());
    assert!(s2["details"]["source"]
        .get("left_out")
        .is_none_or(|l| l.get("lines").is_none()));
}

/// Goose's indexes of `messages` (the sample's store has them, as Goose's do).
const MESSAGE_INDEXES: &str = "
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_messages_session_created ON messages(session_id, created_timestamp, id);
";

/// Writes the sample of `sample_data/goose/` into `dir`: a store of schema version 16 holding
/// one session with a compaction, and one session file in the JSON lines shape Goose wrote
/// before its store (a metadata line, then one message per line).
fn write_sample(dir: &Path) {
    let conn = create_store(&dir.join("sessions.db"), &[SCHEMA_16, MESSAGE_INDEXES]);
    insert(&conn, "schema_version", &[("version", &16)]);
    let sid = "20260312_4";
    let model = json!({"model_name": "claude-sonnet-4-5", "context_limit": 200000,
        "temperature": null, "max_tokens": null, "toolshim": false});
    insert(
        &conn,
        "sessions",
        &[
            ("id", &sid),
            ("name", &"Flaky date test"),
            ("working_dir", &"/home/dev/ledger"),
            ("created_at", &"2026-03-12 09:14:02"),
            ("updated_at", &"2026-03-12 09:21:40"),
            ("total_tokens", &9120),
            ("input_tokens", &8710),
            ("output_tokens", &410),
            ("accumulated_total_tokens", &31466),
            ("accumulated_input_tokens", &30102),
            ("accumulated_output_tokens", &1364),
            ("accumulated_cost", &0.1137),
            ("provider_name", &"anthropic"),
            ("model_config_json", &model.to_string()),
        ],
    );
    let user_only = json!({"userVisible": true, "agentVisible": false});
    let agent_only = json!({"userVisible": false, "agentVisible": true});
    let mut failed = result(
        "toolu_04",
        "test dates::parses_month_end ... FAILED\nassertion failed: left: 28, right: 31",
    );
    failed["toolResult"]["value"]["isError"] = json!(true);
    let rows = [
        (
            "user",
            json!([text(
                "The test `parses_month_end` fails about once a week. Find out why."
            )]),
            BOTH(),
        ),
        (
            "assistant",
            json!([
                {"type": "thinking", "thinking": "A weekly failure smells like a date boundary. \
                    Look at the test first.", "signature": "sig-a1"},
                text("I'll look at the test and the parser it exercises."),
                call("toolu_01", "developer__shell", json!({"command": "rg -n parses_month_end src"})),
            ]),
            user_only.clone(),
        ),
        (
            "user",
            json!([result(
                "toolu_01",
                "src/dates.rs:88:fn parses_month_end() {"
            )]),
            user_only.clone(),
        ),
        (
            "assistant",
            json!([call(
                "toolu_02",
                "developer__text_editor",
                json!({"command": "view", "path": "src/dates.rs"})
            )]),
            user_only.clone(),
        ),
        (
            "user",
            json!([result(
                "toolu_02",
                "88 fn parses_month_end() {\n89     let today = Local::now().date();\n90     \
                 assert_eq!(parse(\"+1m\", today).day(), today.day());"
            )]),
            user_only,
        ),
        (
            "user",
            json!([text(
                "Summary: the test `parses_month_end` in src/dates.rs uses today's date; adding \
                 a month to the 31st lands on a shorter month."
            )]),
            agent_only.clone(),
        ),
        (
            "assistant",
            json!([text(
                "Your context was compacted. The previous message contains a summary of the \
                 conversation so far."
            )]),
            agent_only,
        ),
        (
            "assistant",
            json!([
                text("The test depends on today's date: I'll pin it to a fixed day."),
                call(
                    "toolu_03",
                    "developer__text_editor",
                    json!({"command": "str_replace",
                    "path": "src/dates.rs", "old_str": "Local::now().date()",
                    "new_str": "NaiveDate::from_ymd_opt(2026, 1, 31).unwrap()"})
                ),
            ]),
            BOTH(),
        ),
        (
            "user",
            json!([result("toolu_03", "The file src/dates.rs has been edited.")]),
            BOTH(),
        ),
        (
            "assistant",
            json!([call(
                "toolu_04",
                "developer__shell",
                json!({"command": "cargo test parses_month_end"})
            )]),
            BOTH(),
        ),
        ("user", json!([failed]), BOTH()),
        (
            "assistant",
            json!([text(
                "The fixed date shows the real bug: `+1m` from January 31 gives February 28, \
                 and the test expected the same day. The test's expectation is wrong for month \
                 ends; I'll assert the clamped day instead if you agree."
            )]),
            BOTH(),
        ),
    ];
    for (i, (role, content, meta)) in rows.iter().enumerate() {
        insert(
            &conn,
            "messages",
            &[
                ("message_id", &format!("msg_{sid}_{}", i + 1)),
                ("session_id", &sid),
                ("role", role),
                ("content_json", &content.to_string()),
                ("created_timestamp", &(1773306842 + 9 * i as i64)),
                ("metadata_json", &meta.to_string()),
            ],
        );
    }
    conn.execute_batch("UPDATE messages SET timestamp = datetime(created_timestamp, 'unixepoch')")
        .expect("timestamps");
    insert(
        &conn,
        "usage_ledger",
        &[
            ("session_id", &sid),
            ("created_timestamp", &1773307300),
            ("model", &"claude-sonnet-4-5"),
            ("input_tokens", &30102),
            ("output_tokens", &1364),
            ("total_tokens", &31466),
            ("cost", &0.1137),
            ("cost_source", &"estimated"),
        ],
    );
    conn.execute_batch("VACUUM").expect("vacuum");
    drop(conn);
    let lines = [
        json!({"working_dir": "/home/dev/site", "description": "Broken link in footer",
            "schedule_id": null, "message_count": 4, "total_tokens": 2210, "input_tokens": 2034,
            "output_tokens": 176, "accumulated_total_tokens": 5012,
            "accumulated_input_tokens": 4630, "accumulated_output_tokens": 382,
            "extension_data": {}}),
        json!({"role": "user", "created": 1747310102,
            "content": [text("The footer's privacy link 404s. Fix it.")]}),
        json!({"role": "assistant", "created": 1747310106, "content": [
            text("Let me find the footer template."),
            call("toolu_bdrk_11", "developer__shell",
                json!({"command": "grep -rn privacy templates/"}))]}),
        json!({"role": "user", "created": 1747310107, "content": [
            {"type": "toolResponse", "id": "toolu_bdrk_11", "toolResult": {
                "status": "success",
                "value": [text("templates/footer.html:12:<a href=\"/privacy.htm\">")]}}]}),
        json!({"role": "assistant", "created": 1747310111, "content": [
            text("The link points to `/privacy.htm`, but the page is `/privacy/`. Change line \
                12 of templates/footer.html to `href=\"/privacy/\"`.")]}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("20250515_2.jsonl"), body).expect("write");
}

/// The trajectories of `file` in `dir`, converted from inside `dir` (so that their provenance
/// names the file alone).
fn converted_in(dir: &Path, file: &str) -> Vec<u8> {
    let out = trajkit()
        .current_dir(dir)
        .args(["convert", file])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `sample_data/goose/` converts to what [`write_sample`] writes converts to: the sample is
/// this builder's. `TRAJKIT_WRITE_SAMPLE=goose` rewrites the sample with it (its bytes then
/// change with the SQLite version and the JSON spacing, not what it converts to).
#[test]
fn the_sample_is_the_sample_builders() {
    let sample = sample_data().join("goose");
    if std::env::var("TRAJKIT_WRITE_SAMPLE").as_deref() == Ok("goose") {
        for f in ["sessions.db", "20250515_2.jsonl"] {
            let _ = std::fs::remove_file(sample.join(f));
        }
        write_sample(&sample);
    }
    let built = tempfile::tempdir().expect("dir");
    write_sample(built.path());
    for f in ["sessions.db", "20250515_2.jsonl"] {
        let want = converted_in(&sample, f);
        assert!(!want.is_empty(), "{f}");
        assert_eq!(
            String::from_utf8_lossy(&converted_in(built.path(), f)),
            String::from_utf8_lossy(&want),
            "{f}"
        );
    }
}

#[test]
fn the_sample_converts() {
    let dir = sample_data().join("goose");
    for file in files_in(&dir) {
        let out = converted(&file);
        assert_eq!(out.len(), 1);
        assert!(tool_actions_and_links(&out[0]).1);
        assert_every_sft_target_accepts(&out, "goose sample");
    }
}

/// A sub-agent's session names its parent; messages whose session has no row are a session of
/// their own; a JSON lines file of another format given with `--from goose` is refused.
#[test]
fn sub_sessions_orphan_messages_and_other_files() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sessions.db");
    let conn = store(&path, SCHEMA_16, 16);
    session(&conn, "parent");
    session(&conn, "child");
    conn.execute(
        "UPDATE sessions SET parent_session_id = 'parent', session_type = 'sub_agent'
         WHERE id = 'child'",
        [],
    )
    .expect("parent");
    // A session deleted with foreign keys off left its messages behind.
    conn.execute_batch("PRAGMA foreign_keys = OFF")
        .expect("pragma");
    for s in ["parent", "child", "gone"] {
        message(&conn, s, "user", json!([text("go")]), 1, BOTH());
        message(&conn, s, "assistant", json!([text("done")]), 2, BOTH());
    }
    drop(conn);
    let out = converted(&path);
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["parent", "child", "gone"]);
    assert_eq!(
        out[1]["details"]["source"]["native_ids"]["parent_session_id"],
        "parent"
    );
    assert_eq!(out[2]["details"]["goose"]["session"]["session_row"], false);

    let other = dir.path().join("chat.jsonl");
    std::fs::write(&other, "{\"role\": \"user\", \"content\": \"hi\"}\n").expect("write");
    let (code, out, err) = convert(&[&other], Some("goose"), &[]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("not a Goose session"), "{err}");
}

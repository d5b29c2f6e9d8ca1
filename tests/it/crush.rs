//! The `crush` reader: the SQLite stores of Crush (`.crush/crush.db`) and of the Go OpenCode
//! (`.opencode/opencode.db`), read from the corpus's real stores and from stores these tests
//! build with rusqlite in each schema version's shape (columns added by Crush's migrations
//! present or not), with rows only in the write-ahead log, a live writer holding a write
//! transaction, a corrupt page and an unknown schema version. `sample_data/crush/` is what
//! [`write_sample`] writes (checked by converting both).

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, sample_data, step_classes,
    tool_actions_and_links, trajkit,
};
use crate::stores::{
    converted_as, converted_copy_of_log, create_store, insert, middle_page, overwrite, snapshot,
};

/// The schema of the Go OpenCode (migrations up to `summary_message_id`).
const OPENCODE_SCHEMA: &str = "
CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL,
    is_applied INTEGER NOT NULL, tstamp TIMESTAMP DEFAULT (datetime('now')));
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL,
    content TEXT NOT NULL, version TEXT NOT NULL, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts TEXT NOT NULL DEFAULT '[]', model TEXT, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL, finished_at INTEGER);
CREATE INDEX idx_messages_session_id ON messages (session_id);
INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1), (20250424200609, 1),
    (20250515105448, 1);
";

/// What Crush's later migrations add.
const CRUSH_MIGRATIONS: &str = "
ALTER TABLE messages ADD COLUMN provider TEXT;
ALTER TABLE messages ADD COLUMN is_summary_message INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE sessions ADD COLUMN todos TEXT;
CREATE TABLE read_files (session_id TEXT NOT NULL, path TEXT NOT NULL, read_at INTEGER NOT NULL,
    PRIMARY KEY (path, session_id));
INSERT INTO goose_db_version (version_id, is_applied) VALUES (20250624000000, 1),
    (20250627000000, 1), (20250810000000, 1), (20250812000000, 1), (20260127000000, 1);
";

/// A store with the Go OpenCode's schema, or Crush's newest (`crush`).
fn create(path: &Path, crush: bool) -> Connection {
    let migrations: &[&str] = if crush {
        &[OPENCODE_SCHEMA, CRUSH_MIGRATIONS]
    } else {
        &[OPENCODE_SCHEMA]
    };
    create_store(path, migrations)
}

fn session(conn: &Connection, id: &str, parent: Option<&str>, summary: Option<&str>) {
    insert(
        conn,
        "sessions",
        &[
            ("id", &id),
            ("parent_session_id", &parent),
            ("title", &"A title"),
            ("prompt_tokens", &120),
            ("completion_tokens", &30),
            ("cost", &0.25),
            ("updated_at", &1700000100),
            ("created_at", &1700000000),
            ("summary_message_id", &summary),
        ],
    );
}

/// Adds a message (`parts` as a JSON value, written as the text Crush writes).
fn message(conn: &Connection, id: &str, session: &str, role: &str, parts: Value) {
    insert(
        conn,
        "messages",
        &[
            ("id", &id),
            ("session_id", &session),
            ("role", &role),
            ("parts", &parts.to_string()),
            ("model", &"a-model"),
            ("created_at", &1700000000),
            ("updated_at", &1700000001),
            ("finished_at", &1700000001),
        ],
    );
}

fn text(t: &str) -> Value {
    json!({"type": "text", "data": {"text": t}})
}

fn finish(reason: &str) -> Value {
    json!({"type": "finish", "data": {"reason": reason, "time": 1700000001}})
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_call", "data": {"id": id, "name": name, "input": input.to_string(),
        "type": "function", "finished": true}})
}

fn result(id: &str, content: &str, is_error: bool) -> Value {
    json!({"type": "tool_result", "data": {"tool_call_id": id, "name": "", "content": content,
        "metadata": "{\"lines\":3}", "is_error": is_error}})
}

/// One short session of a user prompt, a call, its result and an answer.
fn short_session(conn: &Connection, id: &str) {
    session(conn, id, None, None);
    message(
        conn,
        &format!("{id}-u"),
        id,
        "user",
        json!([text("list files"), finish("stop")]),
    );
    message(
        conn,
        &format!("{id}-a"),
        id,
        "assistant",
        json!([
            call(&format!("{id}-c"), "ls", json!({"path": "."})),
            finish("tool_use")
        ]),
    );
    message(
        conn,
        &format!("{id}-t"),
        id,
        "tool",
        json!([result(&format!("{id}-c"), "a.txt", false), finish("stop")]),
    );
    message(
        conn,
        &format!("{id}-b"),
        id,
        "assistant",
        json!([text("one file"), finish("end_turn")]),
    );
}

/// Converts `inputs`, asserting success; the trajectories, validated.
fn converted(inputs: &[&Path], extra: &[&str]) -> Vec<Value> {
    converted_as("crush", inputs, extra)
}

fn corpus_store(name: &str) -> Option<PathBuf> {
    Some(agent_logs()?.join(name))
}

/// The tool calls and the results naming one of them, counted in a store's rows.
fn store_calls(db: &Path) -> (usize, usize) {
    let uri = format!("file:{}?immutable=1", db.display());
    let conn = Connection::open_with_flags(
        uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("open");
    let mut stmt = conn.prepare("SELECT parts FROM messages").expect("query");
    let parts: Vec<Value> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .expect("rows")
        .map(|p| serde_json::from_str(&p.expect("row")).expect("parts"))
        .flat_map(|p: Value| p.as_array().cloned().unwrap_or_default())
        .collect();
    let calls: Vec<&str> = parts
        .iter()
        .filter(|p| p["type"] == "tool_call")
        .filter_map(|p| p["data"]["id"].as_str())
        .collect();
    let answered = parts
        .iter()
        .filter(|p| p["type"] == "tool_result")
        .filter(|p| calls.contains(&p["data"]["tool_call_id"].as_str().unwrap_or_default()))
        .count();
    (calls.len(), answered)
}

#[test]
fn the_corpus_stores_convert_with_every_call_linked_and_export() {
    for (name, sessions, messages) in [
        ("crush/swift-kdl__crush.db", 1, 50),
        ("opencode/rlox__opencode.db", 2, 72),
    ] {
        let Some(db) = corpus_store(name) else { return };
        // A copy, so that what the reader leaves beside the store can be seen.
        let dir = tempfile::tempdir().expect("dir");
        let copy = dir.path().join(db.file_name().expect("name"));
        std::fs::copy(&db, &copy).expect("copy");
        let before = snapshot(dir.path());
        let out = converted(&[&copy], &[]);
        assert_eq!(
            snapshot(dir.path()),
            before,
            "{name}: the store was touched"
        );
        assert_eq!(out.len(), sessions, "{name}");
        let (calls, answered) = store_calls(&copy);
        let mut actions = 0;
        let mut in_messages = 0;
        for t in &out {
            let (n, linked) = tool_actions_and_links(t);
            assert!(linked, "{name}");
            actions += n;
            let d = &t["details"];
            assert_eq!(d["source"]["format"], "crush");
            in_messages += d["crush"]["messages"].as_array().expect("messages").len();
            assert!(d["crush"]["schema_version"].as_i64().is_some());
            assert!(d["crush"]["session"]["title"].is_string());
            // The first step is the user's prompt, the last an answer.
            assert_eq!(step_classes(t)[0], "text_observation");
            assert_eq!(t["content"][0]["source"], "user");
        }
        assert_eq!(actions, calls, "{name}");
        assert_eq!(calls, answered, "{name}");
        assert_eq!(in_messages, messages, "{name}");
        assert_every_sft_target_accepts(&out, name);
    }
}

#[test]
fn every_part_and_column_maps_to_steps_or_details() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("crush.db");
    let conn = create(&db, true);
    session(&conn, "s1", None, Some("m6"));
    conn.execute(
        "UPDATE sessions SET todos = '[{\"content\":\"x\"}]' WHERE id = 's1'",
        [],
    )
    .expect("todos");
    message(
        &conn,
        "m1",
        "s1",
        "user",
        json!([
            text("fix the build"),
            {"type": "image_url", "data": {"url": "https://example.com/a.png"}},
            {"type": "binary", "data": {"Path": "b.png", "MIMEType": "image/png", "Data": "iVBORw0K"}},
            {"type": "binary", "data": {"Path": "c.pdf", "MIMEType": "application/pdf", "Data": "JVBE"}},
            finish("stop")
        ]),
    );
    message(
        &conn,
        "m2",
        "s1",
        "assistant",
        json!([
            {"type": "reasoning", "data": {"thinking": "look first", "signature": "sig"}},
            text("Running the build."),
            call("c1", "bash", json!({"command": "make"})),
            call("c2", "view", json!({"file_path": "Makefile"})),
            call("c3", "agent", json!({"prompt": "look around"})),
            finish("tool_use")
        ]),
    );
    message(
        &conn,
        "m3",
        "s1",
        "tool",
        json!([
            result("c1", "make: *** error", true),
            result("c2", "all: build", false),
            result("c3", "found it", false),
            {"type": "tool_result", "data": {"tool_call_id": "c9", "name": "", "content": "stray"}},
            finish("stop")
        ]),
    );
    message(
        &conn,
        "m4",
        "s1",
        "user",
        json!([{"type": "shell_command", "data": {"command": "ls", "output": "a\nb", "exit_code": 0}},
            {"type": "hologram", "data": {}}]),
    );
    message(
        &conn,
        "m5",
        "s1",
        "assistant",
        json!([
            call("c4", "grep", json!({"pattern": "x"})),
            finish("canceled")
        ]),
    );
    message(
        &conn,
        "m6",
        "s1",
        "assistant",
        json!([text("Summary: the build fails."), finish("end_turn")]),
    );
    conn.execute(
        "UPDATE messages SET is_summary_message = 1, provider = 'openrouter' WHERE id = 'm6'",
        [],
    )
    .expect("summary");
    message(&conn, "m7", "s1", "user", json!([text("and now?")]));
    message(
        &conn,
        "m8",
        "s1",
        "assistant",
        json!([text("Fixed."), finish("end_turn")]),
    );
    // The agent tool's sub-session, and a title session.
    session(&conn, "m2$$c3", Some("s1"), None);
    message(&conn, "k1", "m2$$c3", "user", json!([text("look around")]));
    message(
        &conn,
        "k2",
        "m2$$c3",
        "assistant",
        json!([text("found it"), finish("end_turn")]),
    );
    session(&conn, "title-s1", Some("s1"), None);
    message(
        &conn,
        "t1",
        "title-s1",
        "user",
        json!([text("fix the build")]),
    );
    message(
        &conn,
        "t2",
        "title-s1",
        "assistant",
        json!([text("Build fix")]),
    );
    // A tool that returned an image.
    session(&conn, "img", None, None);
    message(
        &conn,
        "i1",
        "img",
        "user",
        json!([text("take a screenshot")]),
    );
    message(
        &conn,
        "i2",
        "img",
        "assistant",
        json!([call("s", "screenshot", json!({}))]),
    );
    message(
        &conn,
        "i3",
        "img",
        "tool",
        json!([{"type": "tool_result", "data": {"tool_call_id": "s", "name": "", "content": "taken",
            "data": "iVBO", "mime_type": "image/png", "metadata": "", "is_error": false}}]),
    );
    message(&conn, "i4", "img", "assistant", json!([text("done")]));
    conn.execute(
        "INSERT INTO files VALUES ('f1', 's1', 'Makefile', 'all:', '0', 1, 1), \
         ('f2', 's1', 'Makefile', 'all: build', '1', 2, 2)",
        [],
    )
    .expect("files");
    drop(conn);

    let out = converted(&[&db], &[]);
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["s1", "m2$$c3", "title-s1", "img"]);
    let img = &out[3];
    assert_eq!(
        step_classes(img),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "image_observation",
            "message_action"
        ]
    );
    assert_eq!(img["content"][2]["tool_call_id"], "s");
    assert_eq!(img["content"][3]["content"], "data:image/png;base64,iVBO");
    assert_eq!(
        img["details"]["crush"]["messages"][2]["parts"][0]["data"],
        json!({"tool_call_id": "s", "name": "", "mime_type": "image/png", "metadata": "", "is_error": false})
    );
    let t = &out[0];
    let s = t["content"].as_array().expect("content");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",  // the prompt
            "image_observation", // image_url
            "image_observation", // binary image
            "code_action",       // bash
            "api_action",        // view
            "api_action",        // agent
            "text_observation",  // c1's result
            "text_observation",  // c2's
            "text_observation",  // c3's
            "text_observation",  // the stray result, unlinked
            "text_observation",  // shell command
            "api_action",        // grep, canceled
            "text_observation",  // its empty result: a summary follows it
            "text_observation",  // the summary
            "text_observation",
            "message_action",
        ]
    );
    assert_eq!(s[1]["content"], "https://example.com/a.png");
    assert_eq!(s[2]["content"], "data:image/png;base64,iVBORw0K");
    assert_eq!(s[3]["content"], "make");
    assert_eq!(s[3]["description"], "Running the build.");
    assert_eq!(s[3]["reasoning_content"], "look first");
    assert_eq!(s[3]["tool_call_id"], "c1");
    assert_eq!(s[4]["kwargs"], json!({"file_path": "Makefile"}));
    assert_eq!(s[6]["tool_call_id"], "c1");
    assert_eq!(s[6]["name"], "bash");
    assert_eq!(s[8]["name"], "agent");
    assert!(s[9].get("tool_call_id").is_none());
    assert_eq!(s[10]["content"], "$ ls\na\nb");
    assert_eq!(s[10]["name"], "shell_command");
    assert_eq!(s[12]["tool_call_id"], "c4");
    assert_eq!(s[12]["content"], "");
    assert_eq!(s[13]["name"], "compact_summary");
    assert_eq!(s[13]["source"], "environment");
    let d = &t["details"]["crush"];
    assert_eq!(d["schema_version"], 20260127000000_i64);
    assert_eq!(d["session"]["todos"], "[{\"content\":\"x\"}]");
    assert_eq!(d["session"]["cost"], 0.25);
    assert_eq!(d["files"], json!({"snapshots": 2, "paths": 1}));
    assert_eq!(d["providers"], json!(["openrouter"]));
    assert_eq!(d["images"], 2);
    assert_eq!(d["binaries_left_out"], 1);
    assert_eq!(
        d["compactions"],
        json!([{"step": 13, "message_id": "m6", "rowid": 6, "current": true}])
    );
    assert_eq!(
        d["error_results"],
        json!([{"step": 6, "tool_call_id": "c1"}])
    );
    assert_eq!(
        d["unanswered_calls"],
        json!([{"step": 11, "id": "c4", "empty_result": true}])
    );
    assert_eq!(
        d["unlinked_results"],
        json!([{"step": 9, "tool_call_id": "c9", "rowid": 3}])
    );
    assert_eq!(
        d["sub_sessions"],
        json!([{"session_id": "m2$$c3", "step": 5}, {"session_id": "title-s1", "step": null}])
    );
    // What no step holds stays in the message's parts.
    let m2 = &d["messages"][1];
    assert_eq!(m2["step"], 3);
    assert_eq!(
        m2["parts"][0],
        json!({"type": "reasoning", "data": {"signature": "sig"}})
    );
    assert_eq!(
        m2["parts"][2]["data"],
        json!({"id": "c1", "type": "function", "finished": true})
    );
    assert_eq!(
        d["messages"][2]["parts"][0]["data"]["metadata"],
        "{\"lines\":3}"
    );
    assert_eq!(d["messages"][0]["parts"][3]["data"]["Data"], "JVBE");
    assert_eq!(
        d["messages"][3]["parts"][1],
        json!({"type": "hologram", "data": {}})
    );
    let left = &t["details"]["source"]["left_out"];
    assert_eq!(left["values"], 1, "{left}");
    assert_eq!(left["blocks"], 1, "{left}");
    // The sub-sessions, linked to their parent.
    let sub = &out[1]["details"]["crush"]["parent"];
    assert_eq!(
        *sub,
        json!({"purpose": "agent_tool", "message_id": "m2", "tool_call_id": "c3", "session_id": "s1"})
    );
    assert_eq!(
        out[1]["details"]["source"]["native_ids"]["parent_session_id"],
        "s1"
    );
    assert_eq!(out[2]["details"]["crush"]["parent"]["purpose"], "title");
    // --strict rejects the session with a part no step holds.
    let (code, strict, stderr) = convert(&[&db], None, &["--strict"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(strict.len(), 3);
    assert!(stderr.contains("hologram"), "{stderr}");
}

#[test]
fn the_go_opencode_schema_reads_and_a_project_directory_finds_its_stores() {
    let dir = tempfile::tempdir().expect("dir");
    let project = dir.path().join("project");
    for (folder, name, crush) in [
        (".opencode", "opencode.db", false),
        (".crush", "crush.db", true),
    ] {
        std::fs::create_dir_all(project.join(folder)).expect("mkdir");
        let conn = create(&project.join(folder).join(name), crush);
        short_session(&conn, name);
    }
    // Other files of the project are not read as inputs.
    std::fs::write(project.join("package.json"), "{\"name\": \"x\"}").expect("write");
    let out = converted(&[&project], &[]);
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["crush.db", "opencode.db"]);
    assert_eq!(
        out[1]["details"]["crush"]["schema_version"],
        20250515105448_i64
    );
    assert!(out[1]["details"]["crush"]["messages"][0]
        .get("provider")
        .is_none());
    assert!(out[1]["details"]["source"]["file"]
        .as_str()
        .is_some_and(|f| f.ends_with(".opencode/opencode.db")));
    for t in &out {
        assert_eq!(
            step_classes(t),
            [
                "text_observation",
                "api_action",
                "text_observation",
                "message_action"
            ]
        );
    }
}

#[test]
fn rows_only_in_the_write_ahead_log_are_read_and_a_live_writer_is_not_blocked() {
    let dir = tempfile::tempdir().expect("dir");
    let live = dir.path().join("live");
    std::fs::create_dir(&live).expect("mkdir");
    let db = live.join("crush.db");
    let writer = create(&db, true);
    writer
        .pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    short_session(&writer, "early");
    writer
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .expect("checkpoint");
    writer
        .pragma_update(None, "wal_autocheckpoint", 0)
        .expect("no autocheckpoint");
    short_session(&writer, "late");
    assert!(
        std::fs::metadata(live.join("crush.db-wal"))
            .expect("wal")
            .len()
            > 0
    );
    // A write transaction held open while trajkit reads: its rows are not seen, nothing waits.
    writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
    short_session(&writer, "uncommitted");
    let out = converted(&[&db], &[]);
    let ids: Vec<&str> = out.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["early", "late"]);
    writer
        .execute_batch("COMMIT")
        .expect("the writer commits after the read");
    // The files of a writer gone without a checkpoint: the database and its log, without -shm.
    let out = converted_copy_of_log("crush", &db);
    assert_eq!(out.len(), 3);
    let rows: i64 = writer
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .expect("count");
    assert_eq!(rows, 12);
}

#[test]
fn an_unknown_schema_version_a_corrupt_page_and_a_broken_file_are_clear_errors() {
    let dir = tempfile::tempdir().expect("dir");
    // An unknown schema version: one error naming the table, nothing written.
    let newer = dir.path().join("newer-crush.db");
    let conn = create(&newer, true);
    short_session(&conn, "s");
    conn.execute(
        "INSERT INTO goose_db_version (version_id, is_applied) VALUES (20990101000000, 1)",
        [],
    )
    .expect("version");
    drop(conn);
    let (code, out, stderr) = convert(&[&newer], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("newer-crush.db"), "{stderr}");
    assert!(
        stderr.contains(
            "table goose_db_version: schema version 20990101000000 is not one trajkit knows"
        ),
        "{stderr}"
    );

    // A corrupt page among the messages: the sessions on it are rejected naming the table,
    // the others convert.
    let db = dir.path().join("crush.db");
    let conn = create(&db, true);
    let long = "x".repeat(3000);
    for i in 0..40 {
        let id = format!("s{i:02}");
        session(&conn, &id, None, None);
        message(&conn, &format!("{id}-u"), &id, "user", json!([text(&long)]));
        message(
            &conn,
            &format!("{id}-a"),
            &id,
            "assistant",
            json!([text("ok")]),
        );
    }
    drop(conn);
    overwrite(&db, middle_page, 0xFF);
    let (code, out, stderr) = convert(&[&db], Some("crush"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!out.is_empty() && out.len() < 40, "{}", out.len());
    assert!(stderr.contains("crush.db"), "{stderr}");
    assert!(
        stderr.contains("table messages: database disk image is malformed"),
        "{stderr}"
    );

    // Messages of no session: counted as one rejected record, the sessions still convert.
    let orphans = dir.path().join("orphans-crush.db");
    let conn = create(&orphans, false);
    short_session(&conn, "s");
    message(&conn, "g1", "ghost", "user", json!([text("hello?")]));
    drop(conn);
    let (code, out, stderr) = convert(&[&orphans], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1);
    assert!(
        stderr.contains("table messages: 1 messages belong to no session"),
        "{stderr}"
    );

    // Not a database past its header.
    let broken = dir.path().join("broken").join(".crush");
    std::fs::create_dir_all(&broken).expect("mkdir");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend_from_slice(&[0xAB; 4096]);
    std::fs::write(broken.join("crush.db"), bytes).expect("write");
    let (code, out, stderr) = convert(&[&broken.join("crush.db")], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("crush.db:1: error[read-error]"), "{stderr}");
    assert!(stderr.contains("Crush/OpenCode store"), "{stderr}");
}

#[test]
fn a_stray_record_is_not_a_session() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("x.jsonl");
    std::fs::write(&file, "{\"role\": \"user\", \"content\": \"hi\"}\n").expect("write");
    let (code, out, stderr) = convert(&[&file], Some("crush"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("not a Crush/OpenCode session"), "{stderr}");
}

/// The schema of Crush's newest migration, as Crush creates it (the sample's store).
const SAMPLE_SCHEMA: &str = "
PRAGMA page_size = 1024;
CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL,
    is_applied INTEGER NOT NULL, tstamp TIMESTAMP DEFAULT (datetime('now')));
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL,
    content TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL, UNIQUE(path, session_id, version));
CREATE INDEX idx_files_session_id ON files (session_id);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts TEXT NOT NULL DEFAULT '[]', model TEXT, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
    is_summary_message INTEGER DEFAULT 0 NOT NULL);
CREATE INDEX idx_messages_session_id ON messages (session_id);
CREATE TABLE read_files (session_id TEXT NOT NULL, path TEXT NOT NULL, read_at INTEGER NOT NULL,
    PRIMARY KEY (path, session_id));
";

/// Writes the sample of `sample_data/crush/` into `dir`: a `crush.db` of Crush's newest schema
/// holding one session, in which the agent tool runs a sub-session, with two versions of a
/// file it edited.
fn write_sample(dir: &Path) {
    let conn = create_store(&dir.join("crush.db"), &[SAMPLE_SCHEMA]);
    for v in [
        0i64,
        20250424200609,
        20250515105448,
        20250624000000,
        20250627000000,
        20250810000000,
        20250812000000,
        20260127000000,
    ] {
        insert(
            &conn,
            "goose_db_version",
            &[
                ("version_id", &v),
                ("is_applied", &1),
                ("tstamp", &"2026-01-01 09:00:00"),
            ],
        );
    }
    // 2026-01-01T10:00:00Z
    let t0: i64 = 1767261600;
    let (parent, sub) = ("5f0c1d2e-0000-4a1b-9c3d-7e8f90a1b2c3", "m2$$call_find");
    let todos = r#"[{"content": "fix parse_list", "status": "completed"}]"#;
    // id, parent, title, message count, prompt and completion tokens, cost, updated and
    // created times, todos.
    let sessions = [
        (
            parent,
            None,
            "Fix the failing parser test",
            10,
            4210,
            388,
            0.0123,
            t0 + 60,
            t0,
            Some(todos),
        ),
        (
            sub,
            Some(parent),
            "Find the parser",
            4,
            900,
            40,
            0.002,
            t0 + 12,
            t0 + 5,
            None,
        ),
    ];
    for (id, up, title, count, prompt, completion, cost, updated, created, todos) in sessions {
        insert(
            &conn,
            "sessions",
            &[
                ("id", &id),
                ("parent_session_id", &up),
                ("title", &title),
                ("message_count", &count),
                ("prompt_tokens", &prompt),
                ("completion_tokens", &completion),
                ("cost", &cost),
                ("updated_at", &updated),
                ("created_at", &created),
                ("todos", &todos),
            ],
        );
    }
    let finish =
        |reason: &str, at: i64| json!({"type": "finish", "data": {"reason": reason, "time": at}});
    // A call's input and a result's metadata are JSON texts as Crush writes them.
    let call = |id: &str, name: &str, input: &str| {
        json!({"type": "tool_call", "data": {"id": id, "name": name, "input": input,
            "provider_executed": false, "finished": true}})
    };
    let result = |id: &str, content: &str, metadata: &str, is_error: bool| {
        json!({"type": "tool_result", "data": {"tool_call_id": id, "name": "", "content": content,
            "data": "", "mime_type": "", "metadata": metadata, "is_error": is_error}})
    };
    let model = Some(("anthropic/claude-sonnet-4", "openrouter"));
    let test = r#"{"command": "cargo test parse_list"}"#;
    let rows = [
        (
            "m1",
            parent,
            "user",
            json!([
                text("The test parse_list fails. Can you fix it?"),
                finish("stop", 0)
            ]),
            None,
        ),
        (
            "m2",
            parent,
            "assistant",
            json!([
                {"type": "reasoning", "data": {"thinking": "First find where lists are parsed.",
                    "signature": ""}},
                text("Let me find the parser."),
                call("call_find", "agent", r#"{"prompt": "Find the function that parses lists."}"#),
                finish("tool_use", t0 + 13),
            ]),
            model,
        ),
        (
            "m3",
            parent,
            "tool",
            json!([result(
                "call_find",
                "src/parse.rs: fn parse_list",
                "",
                false
            )]),
            None,
        ),
        (
            "m4",
            parent,
            "assistant",
            json!([call("call_test", "bash", test), finish("tool_use", t0 + 20)]),
            model,
        ),
        (
            "m5",
            parent,
            "tool",
            json!([result(
                "call_test",
                "test parse_list ... FAILED: expected 3 items, got 2",
                r#"{"exit_code": 101}"#,
                true
            )]),
            None,
        ),
        (
            "m6",
            parent,
            "assistant",
            json!([
                text("The loop stops one item early."),
                call(
                    "call_edit",
                    "edit",
                    r#"{"file_path": "src/parse.rs", "old_string": "i < n - 1", "new_string": "i < n"}"#
                ),
                finish("tool_use", t0 + 30),
            ]),
            model,
        ),
        (
            "m7",
            parent,
            "tool",
            json!([result(
                "call_edit",
                "Edited src/parse.rs",
                r#"{"additions": 1, "removals": 1}"#,
                false
            )]),
            None,
        ),
        (
            "m8",
            parent,
            "assistant",
            json!([
                call("call_retest", "bash", test),
                finish("tool_use", t0 + 40)
            ]),
            model,
        ),
        (
            "m9",
            parent,
            "tool",
            json!([result(
                "call_retest",
                "test parse_list ... ok",
                r#"{"exit_code": 0}"#,
                false
            )]),
            None,
        ),
        (
            "m10",
            parent,
            "assistant",
            json!([
                text("Fixed: `parse_list` stopped one item early; the test passes now."),
                finish("end_turn", t0 + 50),
            ]),
            model,
        ),
        (
            "k1",
            sub,
            "user",
            json!([text("Find the function that parses lists.")]),
            None,
        ),
        (
            "k2",
            sub,
            "assistant",
            json!([
                call(
                    "call_grep",
                    "grep",
                    r#"{"pattern": "fn parse_list", "path": "src"}"#
                ),
                finish("tool_use", t0 + 8),
            ]),
            model,
        ),
        (
            "k3",
            sub,
            "tool",
            json!([result(
                "call_grep",
                "src/parse.rs:42: fn parse_list",
                "",
                false
            )]),
            None,
        ),
        (
            "k4",
            sub,
            "assistant",
            json!([
                text("src/parse.rs: fn parse_list"),
                finish("end_turn", t0 + 12)
            ]),
            model,
        ),
    ];
    for (i, (id, session, role, parts, model)) in rows.into_iter().enumerate() {
        let at = t0 + i as i64;
        // A message ends with its finish part, whose time (0: none) is the message's.
        let last = parts
            .as_array()
            .and_then(|p| p.last())
            .cloned()
            .unwrap_or_default();
        let finished = (last["type"] == "finish")
            .then(|| last["data"]["time"].as_i64())
            .flatten()
            .filter(|t| *t != 0);
        insert(
            &conn,
            "messages",
            &[
                ("id", &id),
                ("session_id", &session),
                ("role", &role),
                ("parts", &parts.to_string()),
                ("model", &model.map_or("", |(m, _)| m)),
                ("created_at", &at),
                ("updated_at", &at),
                ("finished_at", &finished),
                ("provider", &model.map(|(_, p)| p)),
                ("is_summary_message", &0),
            ],
        );
    }
    for (id, content, version) in [
        ("f1", "fn parse_list() { /* i < n - 1 */ }", 0),
        ("f2", "fn parse_list() { /* i < n */ }", 1),
    ] {
        insert(
            &conn,
            "files",
            &[
                ("id", &id),
                ("session_id", &parent),
                ("path", &"src/parse.rs"),
                ("content", &content),
                ("version", &version),
                ("created_at", &(t0 + 30)),
                ("updated_at", &(t0 + 30)),
            ],
        );
    }
    conn.execute_batch("VACUUM").expect("vacuum");
}

/// `trajkit convert FILE` run in `dir`: its output.
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

/// `sample_data/crush/` converts to what [`write_sample`] writes converts to: the sample is
/// this builder's. `TRAJKIT_WRITE_SAMPLE=crush` rewrites the sample with it (its bytes then
/// change with the SQLite version, not what it converts to).
#[test]
fn the_sample_is_the_sample_builders() {
    let sample = sample_data().join("crush");
    if std::env::var("TRAJKIT_WRITE_SAMPLE").as_deref() == Ok("crush") {
        let _ = std::fs::remove_file(sample.join("crush.db"));
        write_sample(&sample);
    }
    let built = tempfile::tempdir().expect("dir");
    write_sample(built.path());
    let want = converted_in(&sample, "crush.db");
    assert!(!want.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&converted_in(built.path(), "crush.db")),
        String::from_utf8_lossy(&want)
    );
}

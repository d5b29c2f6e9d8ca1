//! The `opencode` reader: OpenCode's SQLite store (1.2 on), built by these tests with rusqlite
//! in the first release's columns and in the newest (columns added by later migrations, the
//! `migration` table instead of Drizzle's), with rows only in the write-ahead log, a live
//! writer holding a write transaction, a corrupt page and schemas it does not know; the
//! `opencode export` document (the corpus's); and the `storage/` folder of JSON files OpenCode
//! kept before 1.2.

use std::path::Path;

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::common::{
    agent_logs, assert_every_sft_target_accepts, convert, step_classes, tool_actions_and_links,
};
use crate::stores::{
    converted_as, converted_copy_of_log, create_store, insert, middle_page, overwrite,
};

/// The tables of OpenCode 1.2.0's store (its first migration), as far as the reader uses them.
const FIRST_SCHEMA: &str = "
CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric);
INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('h1', 1769552633000);
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
    slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
    share_url text, summary_additions integer, summary_deletions integer, summary_files integer,
    summary_diffs text, revert text, permission text, time_created integer NOT NULL,
    time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
    time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_idx ON message (session_id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_idx ON part (message_id);
CREATE INDEX part_session_idx ON part (session_id);
CREATE TABLE todo (session_id text NOT NULL, content text NOT NULL, status text NOT NULL,
    priority text NOT NULL, position integer NOT NULL, time_created integer NOT NULL,
    time_updated integer NOT NULL);
";

/// What later releases changed: OpenCode's own `migration` table, session columns for the
/// workspace, model and usage, and the `session_message` table.
const NEWER: &str = "
DROP TABLE __drizzle_migrations;
CREATE TABLE migration (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
INSERT INTO migration VALUES ('20260127222353_familiar_lady_ursula', 1),
    ('20260510033149_session_usage', 2), ('20260604172448_event_sourced_session_input', 3);
ALTER TABLE session ADD COLUMN workspace_id text;
ALTER TABLE session ADD COLUMN path text;
ALTER TABLE session ADD COLUMN agent text;
ALTER TABLE session ADD COLUMN model text;
ALTER TABLE session ADD COLUMN cost real DEFAULT 0 NOT NULL;
ALTER TABLE session ADD COLUMN tokens_input integer DEFAULT 0 NOT NULL;
ALTER TABLE session ADD COLUMN metadata text;
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, type text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL,
    seq integer NOT NULL);
";

/// A store with the first release's tables, or the newest's (`newer`).
fn create(path: &Path, newer: bool) -> Connection {
    let migrations: &[&str] = if newer {
        &[FIRST_SCHEMA, NEWER]
    } else {
        &[FIRST_SCHEMA]
    };
    create_store(path, migrations)
}

fn session(conn: &Connection, id: &str, parent: Option<&str>, created: i64) {
    insert(
        conn,
        "session",
        &[
            ("id", &id),
            ("project_id", &"p1"),
            ("parent_id", &parent),
            ("slug", &"calm-fox"),
            ("directory", &"/work"),
            ("title", &"A title"),
            ("version", &"1.2.21"),
            ("time_created", &created),
            ("time_updated", &created),
        ],
    );
}

/// Adds a message (`info` without its id and session, as OpenCode writes `data`) and its
/// parts (each without its ids; part `k` is `{id}-p0{k}`).
fn message(conn: &Connection, id: &str, session: &str, created: i64, info: Value, parts: &[Value]) {
    insert(
        conn,
        "message",
        &[
            ("id", &id),
            ("session_id", &session),
            ("time_created", &created),
            ("time_updated", &created),
            ("data", &info.to_string()),
        ],
    );
    for (k, p) in parts.iter().enumerate() {
        insert(
            conn,
            "part",
            &[
                ("id", &format!("{id}-p{k:02}")),
                ("message_id", &id),
                ("session_id", &session),
                ("time_created", &created),
                ("time_updated", &created),
                ("data", &p.to_string()),
            ],
        );
    }
}

fn user(created: i64) -> Value {
    json!({"role": "user", "time": {"created": created}, "agent": "build",
        "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4"}})
}

fn assistant(created: i64, summary: bool) -> Value {
    json!({"role": "assistant", "parentID": "m1", "mode": "build", "agent": "build",
        "path": {"cwd": "/work", "root": "/work"}, "summary": summary, "cost": 0.5,
        "tokens": {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 7, "write": 3}},
        "modelID": "claude-sonnet-4", "providerID": "anthropic",
        "time": {"created": created, "completed": created + 1}, "finish": "tool-calls"})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t, "time": {"start": 1, "end": 2}})
}

fn tool(call: &str, name: &str, state: Value) -> Value {
    json!({"type": "tool", "callID": call, "tool": name, "state": state})
}

fn done(input: Value, output: &str) -> Value {
    json!({"status": "completed", "input": input, "output": output, "title": "t",
        "metadata": {}, "time": {"start": 1, "end": 2}})
}

fn step_finish() -> Value {
    json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.5,
        "tokens": {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 7, "write": 3}}})
}

/// One short session: a prompt, a call and its result, an answer.
fn short_session(conn: &Connection, id: &str, created: i64) {
    session(conn, id, None, created);
    message(
        conn,
        &format!("{id}-u"),
        id,
        created,
        user(created),
        &[text("list files")],
    );
    message(
        conn,
        &format!("{id}-a"),
        id,
        created + 1,
        assistant(created + 1, false),
        &[
            json!({"type": "step-start"}),
            tool(
                &format!("{id}-c"),
                "ls",
                done(json!({"path": "."}), "a.txt"),
            ),
            text("one file"),
            step_finish(),
        ],
    );
}

/// Converts `inputs`, asserting success; the trajectories, validated.
fn converted(inputs: &[&Path], extra: &[&str]) -> Vec<Value> {
    converted_as("opencode", inputs, extra)
}

fn ids(out: &[Value]) -> Vec<&str> {
    out.iter().filter_map(|t| t["id"].as_str()).collect()
}

#[test]
fn the_corpus_export_converts_with_its_call_linked() {
    let Some(dir) = agent_logs() else { return };
    let file = dir.join("opencode/letta__opencode_tool-calls_input.json");
    let out = converted(&[&file], &[]);
    assert_eq!(ids(&out), ["oc-session-1"]);
    let t = &out[0];
    assert_eq!(
        step_classes(t),
        [
            "text_observation",
            "api_action",
            "text_observation",
            "message_action"
        ]
    );
    assert_eq!(tool_actions_and_links(t), (1, true));
    assert_eq!(t["content"][1]["tool_call_id"], "oc-call-1");
    assert_eq!(
        t["content"][1]["reasoning_content"],
        "I should list the note files first."
    );
    assert_eq!(t["content"][2]["content"], "notes/plan.md");
    assert_eq!(t["details"]["opencode"]["session"]["version"], "1.2.21");
    assert_every_sft_target_accepts(&out, "opencode export");
}

#[test]
fn every_part_and_column_maps_to_steps_or_details() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("opencode.db");
    let conn = create(&db, true);
    session(&conn, "s1", None, 1000);
    conn.execute(
        "UPDATE session SET model = '{\"id\":\"claude-sonnet-4\"}', cost = 1.5, \
         workspace_id = 'w1' WHERE id = 's1'",
        [],
    )
    .expect("columns");
    let mut system_user = user(1000);
    system_user["system"] = json!("Be brief.");
    message(
        &conn,
        "m1",
        "s1",
        1000,
        system_user,
        &[
            text("fix the build"),
            json!({"type": "text", "text": "Called the Read tool: all: build", "synthetic": true}),
            json!({"type": "text", "text": "not sent", "ignored": true}),
            json!({"type": "file", "mime": "text/plain", "url": "file:///work/Makefile",
                "filename": "Makefile"}),
            json!({"type": "file", "mime": "image/png", "url": "data:image/png;base64,iVBO",
                "filename": "a.png"}),
            json!({"type": "file", "mime": "application/pdf", "url": "file:///work/a.pdf"}),
            json!({"type": "agent", "name": "explore"}),
        ],
    );
    message(
        &conn,
        "m2",
        "s1",
        1001,
        assistant(1001, false),
        &[
            json!({"type": "step-start", "snapshot": "abc"}),
            json!({"type": "reasoning", "text": "look first", "time": {"start": 1},
                "metadata": {"anthropic": {"signature": "sig"}}}),
            text("Running the build."),
            tool(
                "c1",
                "bash",
                done(json!({"command": "make", "description": "Build"}), "ok"),
            ),
            tool(
                "c2",
                "read",
                json!({"status": "error", "input": {"filePath": "x"},
                "error": "no such file", "time": {"start": 1, "end": 2}}),
            ),
            tool(
                "c3",
                "task",
                json!({"status": "completed",
                "input": {"prompt": "look around", "description": "Explore"},
                "output": "found it", "title": "Explore",
                "metadata": {"sessionId": "s1-child"}, "time": {"start": 1, "end": 2},
                "attachments": [{"type": "file", "mime": "image/png",
                    "url": "data:image/png;base64,QUJD"}]}),
            ),
            tool(
                "c4",
                "grep",
                json!({"status": "running", "input": {"pattern": "x"},
                "time": {"start": 1}}),
            ),
            tool("c1", "bash", done(json!({"command": "make"}), "again")),
            json!({"type": "patch", "hash": "h", "files": ["/work/Makefile"]}),
            json!({"type": "hologram"}),
            step_finish(),
        ],
    );
    // A compaction: the user's compaction part, then the summary.
    message(
        &conn,
        "m3",
        "s1",
        1002,
        user(1002),
        &[json!({"type": "compaction", "auto": true, "overflow": false})],
    );
    message(
        &conn,
        "m4",
        "s1",
        1003,
        assistant(1003, true),
        &[text("Summary: the build fails.")],
    );
    message(
        &conn,
        "m5",
        "s1",
        1004,
        user(1004),
        &[
            json!({"type": "subtask", "prompt": "review it", "description": "Review",
            "agent": "general"}),
        ],
    );
    let mut failed = assistant(1005, false);
    failed["error"] = json!({"name": "MessageAbortedError", "data": {"message": "aborted"}});
    message(
        &conn,
        "m6",
        "s1",
        1005,
        failed,
        &[json!({"type": "reasoning", "text": "hmm", "time": {"start": 1}})],
    );
    // The task tool's sub-session.
    session(&conn, "s1-child", Some("s1"), 2000);
    message(
        &conn,
        "k1",
        "s1-child",
        2000,
        user(2000),
        &[text("look around")],
    );
    message(
        &conn,
        "k2",
        "s1-child",
        2001,
        assistant(2001, false),
        &[text("found it")],
    );
    conn.execute(
        "INSERT INTO session_message VALUES ('sm1', 's1', 'user', 1, 1, '{}', 1)",
        [],
    )
    .expect("session_message");
    conn.execute(
        "INSERT INTO todo VALUES ('s1', 'fix make', 'pending', 'high', 0, 1, 1)",
        [],
    )
    .expect("todo");
    drop(conn);

    let out = converted(&[&db], &[]);
    assert_eq!(ids(&out), ["s1", "s1-child"]);
    let t = &out[0];
    let s = t["content"].as_array().expect("content");
    assert_eq!(
        step_classes(t),
        [
            "text_observation",  // the system prompt
            "text_observation",  // the prompt
            "text_observation",  // the synthetic file read
            "image_observation", // the image
            "code_action",       // bash
            "text_observation",  // its output
            "api_action",        // read
            "text_observation",  // its error
            "api_action",        // task
            "text_observation",  // its output
            "image_observation", // its attachment
            "api_action",        // grep, interrupted
            "text_observation",  // its empty result
            "code_action",       // bash again, same call id
            "text_observation",
            "text_observation", // the summary
            "text_observation", // the subtask
        ]
    );
    assert_eq!(s[1]["content"], "fix the build");
    assert_eq!(s[3]["content"], "data:image/png;base64,iVBO");
    assert_eq!(s[4]["content"], "make");
    assert_eq!(s[4]["description"], "Running the build.");
    assert_eq!(s[4]["reasoning_content"], "look first");
    assert_eq!(s[4]["tool_call_id"], "c1");
    assert_eq!(s[5]["name"], "bash");
    assert_eq!(s[7]["content"], "no such file");
    assert_eq!(
        s[8]["kwargs"],
        json!({"prompt": "look around", "description": "Explore"})
    );
    assert_eq!(s[10]["content"], "data:image/png;base64,QUJD");
    assert_eq!(s[12]["content"], "");
    assert_eq!(s[12]["tool_call_id"], "c4");
    assert_eq!(s[13]["tool_call_id"], "c1#2");
    assert_eq!(s[13]["description"], Value::Null);
    assert_eq!(s[15]["name"], "compact_summary");
    assert_eq!(s[16]["name"], "subtask");
    let d = &t["details"]["opencode"];
    assert_eq!(d["schema"]["version"], 20260604172448_i64);
    assert_eq!(d["schema"]["table"], "migration");
    assert_eq!(d["session"]["workspace_id"], "w1");
    assert_eq!(d["session"]["cost"], 1.5);
    assert_eq!(d["models"], json!(["anthropic/claude-sonnet-4"]));
    assert_eq!(
        d["tokens"],
        json!({"input": 300, "output": 60, "reasoning": 15, "cache_read": 21, "cache_write": 9})
    );
    assert_eq!(d["cost"], 1.5);
    assert_eq!(
        d["compactions"],
        json!([{"message_id": "m3", "auto": true, "overflow": false, "step": 15,
            "summary_message_id": "m4"}])
    );
    assert_eq!(
        d["error_results"],
        json!([{"step": 7, "tool_call_id": "c2"}])
    );
    assert_eq!(
        d["interrupted_calls"],
        json!([{"step": 11, "id": "c4", "status": "running"}])
    );
    assert_eq!(
        d["renamed_call_ids"],
        json!([{"step": 13, "id": "c1", "as": "c1#2"}])
    );
    assert_eq!(
        d["sub_sessions"],
        json!([{"session_id": "s1-child", "step": 8}])
    );
    assert_eq!(d["message_errors"][0]["message_id"], "m6");
    assert_eq!(
        d["session_messages"],
        json!([{"id": "sm1", "session_id": "s1", "type": "user", "time_created": 1,
            "time_updated": 1, "data": {}, "seq": 1}])
    );
    assert_eq!(
        d["todos"],
        json!([{"content": "fix make", "status": "pending", "priority": "high"}])
    );
    // What no step holds stays in the message's parts.
    let m2 = &d["messages"][1];
    assert_eq!(m2["step"], 4);
    assert_eq!(
        m2["parts"][0],
        json!({"id": "m2-p00", "type": "step-start", "snapshot": "abc"})
    );
    assert_eq!(
        m2["parts"][1],
        json!({"id": "m2-p01", "type": "reasoning", "time": {"start": 1},
            "metadata": {"anthropic": {"signature": "sig"}}})
    );
    assert_eq!(
        m2["parts"][3]["state"],
        json!({"status": "completed", "title": "t", "metadata": {}, "time": {"start": 1, "end": 2}})
    );
    assert_eq!(m2["parts"][8]["files"], json!(["/work/Makefile"]));
    assert_eq!(d["messages"][0]["parts"][2]["text"], "not sent");
    let left = &t["details"]["source"]["left_out"];
    // The ignored text, the PDF and the last reasoning; the unknown part; session_message.
    assert_eq!(left["blocks"], 3, "{left}");
    assert_eq!(left["values"], 1, "{left}");
    assert_eq!(left["lines"], 1, "{left}");
    // The sub-session, linked to the call that started it.
    assert_eq!(
        out[1]["details"]["opencode"]["parent"],
        json!({"session_id": "s1", "message_id": "m2", "part_id": "m2-p05", "call_id": "c3"})
    );
    assert_eq!(
        out[1]["details"]["source"]["native_ids"]["parent_session_id"],
        "s1"
    );
    assert_every_sft_target_accepts(&out, "opencode store");
    // --strict rejects the session with a part no step holds.
    let (code, strict, stderr) = convert(&[&db], None, &["--strict"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(strict.len(), 1);
    assert!(stderr.contains("hologram"), "{stderr}");
}

#[test]
fn the_first_release_schema_reads_and_the_data_directory_finds_its_store() {
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("opencode");
    std::fs::create_dir(&data).expect("mkdir");
    let conn = create(&data.join("opencode.db"), false);
    short_session(&conn, "ses_b", 2000);
    short_session(&conn, "ses_a", 1000);
    drop(conn);
    // The files OpenCode kept before 1.2 stay beside the store: the store holds them.
    std::fs::create_dir_all(data.join("storage/session/p1")).expect("mkdir");
    std::fs::create_dir_all(data.join("storage/message")).expect("mkdir");
    std::fs::write(data.join("auth.json"), "{}").expect("write");
    let out = converted(&[&data], &[]);
    assert_eq!(ids(&out), ["ses_a", "ses_b"]);
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
        let schema = &t["details"]["opencode"]["schema"];
        assert_eq!(schema["version"], 20260127222353_i64);
        assert_eq!(schema["table"], "__drizzle_migrations");
        assert!(t["details"]["opencode"]["session"]
            .get("workspace_id")
            .is_none());
    }
}

#[test]
fn rows_only_in_the_write_ahead_log_are_read_and_a_live_writer_is_not_blocked() {
    let dir = tempfile::tempdir().expect("dir");
    let live = dir.path().join("live");
    std::fs::create_dir(&live).expect("mkdir");
    let db = live.join("opencode.db");
    let writer = create(&db, true);
    writer
        .pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    short_session(&writer, "early", 1000);
    writer
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .expect("checkpoint");
    writer
        .pragma_update(None, "wal_autocheckpoint", 0)
        .expect("no autocheckpoint");
    short_session(&writer, "late", 2000);
    assert!(
        std::fs::metadata(live.join("opencode.db-wal"))
            .expect("wal")
            .len()
            > 0
    );
    // A write transaction held open while trajkit reads: its rows are not seen, nothing waits.
    writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
    short_session(&writer, "uncommitted", 3000);
    let out = converted(&[&db], &[]);
    assert_eq!(ids(&out), ["early", "late"]);
    writer
        .execute_batch("COMMIT")
        .expect("the writer commits after the read");
    // The files of a writer gone without a checkpoint: the database and its log, no -shm.
    let out = converted_copy_of_log("opencode", &db);
    assert_eq!(out.len(), 3);
}

#[test]
fn unknown_schemas_a_corrupt_page_and_orphans_are_clear_errors() {
    let dir = tempfile::tempdir().expect("dir");
    // A part table without its data column: a schema the reader does not know.
    let changed = dir.path().join("changed.db");
    let conn = create(&changed, true);
    short_session(&conn, "s", 1000);
    conn.execute_batch("ALTER TABLE part RENAME COLUMN data TO body")
        .expect("rename");
    drop(conn);
    let (code, out, stderr) = convert(&[&changed], Some("opencode"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("changed.db"), "{stderr}");
    assert!(stderr.contains("table part: no column data"), "{stderr}");

    // A store that records no schema version.
    let unversioned = dir.path().join("unversioned.db");
    let conn = create(&unversioned, false);
    short_session(&conn, "s", 1000);
    conn.execute_batch("DROP TABLE __drizzle_migrations")
        .expect("drop");
    drop(conn);
    let (code, out, stderr) = convert(&[&unversioned], Some("opencode"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("table migration: missing"), "{stderr}");

    // A version older than OpenCode's first migration.
    let older = dir.path().join("older.db");
    let conn = create(&older, false);
    short_session(&conn, "s", 1000);
    conn.execute(
        "UPDATE __drizzle_migrations SET created_at = 1700000000000",
        [],
    )
    .expect("version");
    drop(conn);
    let (code, _, stderr) = convert(&[&older], Some("opencode"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("table __drizzle_migrations: schema version 20231114221320"),
        "{stderr}"
    );

    // A corrupt page among the parts: the sessions on it are rejected naming the table.
    let db = dir.path().join("opencode.db");
    let conn = create(&db, true);
    let long = "x".repeat(3000);
    for i in 0..40 {
        let id = format!("s{i:02}");
        session(&conn, &id, None, i);
        message(&conn, &format!("{id}-u"), &id, i, user(i), &[text(&long)]);
        message(
            &conn,
            &format!("{id}-a"),
            &id,
            i,
            assistant(i, false),
            &[text("ok")],
        );
    }
    drop(conn);
    overwrite(&db, middle_page, 0xFF);
    let (code, out, stderr) = convert(&[&db], Some("opencode"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!out.is_empty() && out.len() < 40, "{}", out.len());
    assert!(
        stderr.contains("database disk image is malformed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot read the OpenCode store: table"),
        "{stderr}"
    );

    // Messages of no session and parts of no message.
    let orphans = dir.path().join("orphans.db");
    let conn = create(&orphans, false);
    short_session(&conn, "s", 1000);
    message(&conn, "g1", "ghost", 1, user(1), &[text("hello?")]);
    conn.execute(
        "INSERT INTO part VALUES ('x', 'nowhere', 's', 1, 1, '{\"type\":\"text\",\"text\":\"?\"}')",
        [],
    )
    .expect("part");
    drop(conn);
    let (code, out, stderr) = convert(&[&orphans], None, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out.len(), 1);
    assert!(
        stderr.contains("table message: 1 rows belong to no session"),
        "{stderr}"
    );
    assert!(
        stderr.contains("table part: 1 rows belong to no message"),
        "{stderr}"
    );
}

/// Writes `value` as OpenCode wrote its storage files (indented JSON).
fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_string_pretty(value).expect("json")).expect("write");
}

#[test]
fn a_storage_folder_is_read_one_session_at_a_time() {
    let dir = tempfile::tempdir().expect("dir");
    let storage = dir.path().join("storage");
    write_json(
        &storage.join("project/p1.json"),
        &json!({"id": "p1", "worktree": "/work", "vcs": "git", "time": {"created": 1}}),
    );
    for (id, parent) in [("ses_2", None), ("ses_1", Some("ses_2"))] {
        let mut info = json!({"id": id, "projectID": "p1", "directory": "/work",
            "title": "A title", "version": "0.15.0", "time": {"created": 1, "updated": 2}});
        if let Some(p) = parent {
            info["parentID"] = json!(p);
        }
        write_json(&storage.join(format!("session/p1/{id}.json")), &info);
        let m = |n: &str| format!("msg_{id}_{n}");
        let mut u = user(1);
        u["id"] = json!(m("1"));
        u["sessionID"] = json!(id);
        write_json(&storage.join(format!("message/{id}/{}.json", m("1"))), &u);
        write_json(
            &storage.join(format!("part/{}/prt_1.json", m("1"))),
            &json!({"id": "prt_1", "sessionID": id, "messageID": m("1"), "type": "text",
                "text": "hello"}),
        );
        let mut a = assistant(2, false);
        a["id"] = json!(m("2"));
        a["sessionID"] = json!(id);
        // Older releases wrote the system prompt on each assistant message.
        a["system"] = json!(["You are a coding agent.", "Platform: linux"]);
        write_json(&storage.join(format!("message/{id}/{}.json", m("2"))), &a);
        let mut call = tool("c1", "task", done(json!({"prompt": "go"}), "went"));
        call["state"]["metadata"] = json!({"sessionId": "ses_1"});
        call["id"] = json!("prt_1");
        write_json(&storage.join(format!("part/{}/prt_1.json", m("2"))), &call);
        write_json(
            &storage.join(format!("part/{}/prt_2.json", m("2"))),
            &json!({"id": "prt_2", "type": "text", "text": "done"}),
        );
    }
    write_json(
        &storage.join("todo/ses_2.json"),
        &json!([{"content": "go", "status": "completed", "priority": "low", "id": "1"}]),
    );
    // A part file cut short: counted, the session still converts.
    std::fs::write(
        storage.join("part/msg_ses_1_2/prt_3.json"),
        "{\"type\": \"te",
    )
    .expect("write");
    let out = converted(&[&storage], &[]);
    assert_eq!(ids(&out), ["ses_1", "ses_2"]);
    for t in &out {
        assert_eq!(
            step_classes(t),
            [
                "text_observation",
                "text_observation",
                "api_action",
                "text_observation",
                "message_action"
            ]
        );
        assert_eq!(t["content"][1]["name"], "system");
        assert_eq!(
            t["content"][1]["content"],
            "You are a coding agent.\n\nPlatform: linux"
        );
        assert_eq!(t["details"]["opencode"]["project"]["worktree"], "/work");
    }
    assert_eq!(
        out[1]["details"]["opencode"]["sub_sessions"],
        json!([{"session_id": "ses_1", "step": 2}])
    );
    assert_eq!(
        out[0]["details"]["opencode"]["parent"],
        json!({"session_id": "ses_2", "message_id": "msg_ses_2_2", "part_id": "prt_1",
            "call_id": "c1"})
    );
    assert_eq!(out[1]["details"]["opencode"]["todos"][0]["content"], "go");
    let left = &out[0]["details"]["source"]["left_out"];
    assert_eq!(left["wrong_typed"], 1, "{left}");
    assert!(out[0]["details"]["source"]["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("session/p1/ses_1.json")));
    // The data directory holding it finds it too.
    assert_eq!(converted(&[dir.path()], &[]).len(), 2);
}

#[test]
fn a_stray_record_is_not_a_session_and_crush_keeps_its_stores() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("x.jsonl");
    std::fs::write(&file, "{\"role\": \"user\", \"content\": \"hi\"}\n").expect("write");
    let (code, out, stderr) = convert(&[&file], Some("opencode"), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(out.is_empty());
    assert!(stderr.contains("not an OpenCode session"), "{stderr}");
    // The Go OpenCode's store is crush's, whatever its name.
    let Some(logs) = agent_logs() else { return };
    let (code, _, stderr) = convert(&[&logs.join("opencode/rlox__opencode.db")], None, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("detected crush"), "{stderr}");
}

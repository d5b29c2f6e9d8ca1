#!/usr/bin/env python3
"""Writes sample_data/goose/: a small Goose store, sessions.db (the tables of Goose's schema
version 16), holding one session with a compaction, and one session file in the JSON lines
shape Goose wrote before its store (a metadata line, then one message per line), for the
README's pipeline and docs/formats/goose.md. Run from the repository root; it replaces them."""

import json
import os
import sqlite3

DIR = "sample_data/goose"

SCHEMA = """
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
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_messages_session_created ON messages(session_id, created_timestamp, id);
"""

BOTH = {"userVisible": True, "agentVisible": True}
USER_ONLY = {"userVisible": True, "agentVisible": False}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}


def text(t):
    return {"type": "text", "text": t}


def call(cid, name, args):
    return {"type": "toolRequest", "id": cid,
            "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}}


def result(cid, out, error=False):
    return {"type": "toolResponse", "id": cid,
            "toolResult": {"status": "success", "value": {
                "content": [text(out)], "isError": error}}}


def store():
    path = os.path.join(DIR, "sessions.db")
    if os.path.exists(path):
        os.remove(path)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_version (version) VALUES (16)")
    sid = "20260312_4"
    conn.execute(
        "INSERT INTO sessions (id, name, working_dir, created_at, updated_at, total_tokens,"
        " input_tokens, output_tokens, accumulated_total_tokens, accumulated_input_tokens,"
        " accumulated_output_tokens, accumulated_cost, provider_name, model_config_json)"
        " VALUES (?, 'Flaky date test', '/home/dev/ledger', '2026-03-12 09:14:02',"
        " '2026-03-12 09:21:40', 9120, 8710, 410, 31466, 30102, 1364, 0.1137, 'anthropic', ?)",
        (sid, json.dumps({"model_name": "claude-sonnet-4-5", "context_limit": 200000,
                          "temperature": None, "max_tokens": None, "toolshim": False})))
    rows = [
        ("user", [text("The test `parses_month_end` fails about once a week. Find out why.")],
         BOTH),
        ("assistant", [
            {"type": "thinking", "thinking": "A weekly failure smells like a date boundary."
             " Look at the test first.", "signature": "sig-a1"},
            text("I'll look at the test and the parser it exercises."),
            call("toolu_01", "developer__shell", {"command": "rg -n parses_month_end src"})],
         USER_ONLY),
        ("user", [result("toolu_01", "src/dates.rs:88:fn parses_month_end() {")], USER_ONLY),
        ("assistant", [call("toolu_02", "developer__text_editor",
                            {"command": "view", "path": "src/dates.rs"})], USER_ONLY),
        ("user", [result("toolu_02", "88 fn parses_month_end() {\n89     let today = "
                         "Local::now().date();\n90     assert_eq!(parse(\"+1m\", today).day(),"
                         " today.day());")], USER_ONLY),
        ("user", [text("Summary: the test `parses_month_end` in src/dates.rs uses today's date;"
                       " adding a month to the 31st lands on a shorter month.")], AGENT_ONLY),
        ("assistant", [text("Your context was compacted. The previous message contains a"
                            " summary of the conversation so far.")], AGENT_ONLY),
        ("assistant", [
            text("The test depends on today's date: I'll pin it to a fixed day."),
            call("toolu_03", "developer__text_editor",
                 {"command": "str_replace", "path": "src/dates.rs",
                  "old_str": "Local::now().date()",
                  "new_str": "NaiveDate::from_ymd_opt(2026, 1, 31).unwrap()"})], BOTH),
        ("user", [result("toolu_03", "The file src/dates.rs has been edited.")], BOTH),
        ("assistant", [call("toolu_04", "developer__shell",
                            {"command": "cargo test parses_month_end"})], BOTH),
        ("user", [result("toolu_04", "test dates::parses_month_end ... FAILED\n"
                         "assertion failed: left: 28, right: 31", error=True)], BOTH),
        ("assistant", [text("The fixed date shows the real bug: `+1m` from January 31 gives"
                            " February 28, and the test expected the same day. The test's"
                            " expectation is wrong for month ends; I'll assert the clamped"
                            " day instead if you agree.")], BOTH),
    ]
    for i, (role, content, meta) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json,"
            " created_timestamp, timestamp, metadata_json)"
            " VALUES (?, ?, ?, ?, ?, datetime(?, 'unixepoch'), ?)",
            (f"msg_{sid}_{i + 1}", sid, role, json.dumps(content), 1773306842 + 9 * i,
             1773306842 + 9 * i, json.dumps(meta)))
    conn.execute(
        "INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens,"
        " output_tokens, total_tokens, cost, cost_source) VALUES (?, 1773307300,"
        " 'claude-sonnet-4-5', 30102, 1364, 31466, 0.1137, 'estimated')", (sid,))
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def session_file():
    lines = [
        {"working_dir": "/home/dev/site", "description": "Broken link in footer",
         "schedule_id": None, "message_count": 4, "total_tokens": 2210, "input_tokens": 2034,
         "output_tokens": 176, "accumulated_total_tokens": 5012,
         "accumulated_input_tokens": 4630, "accumulated_output_tokens": 382,
         "extension_data": {}},
        {"role": "user", "created": 1747310102,
         "content": [text("The footer's privacy link 404s. Fix it.")]},
        {"role": "assistant", "created": 1747310106, "content": [
            text("Let me find the footer template."),
            call("toolu_bdrk_11", "developer__shell",
                 {"command": "grep -rn privacy templates/"})]},
        {"role": "user", "created": 1747310107, "content": [
            {"type": "toolResponse", "id": "toolu_bdrk_11", "toolResult": {
                "status": "success",
                "value": [text("templates/footer.html:12:<a href=\"/privacy.htm\">")]}}]},
        {"role": "assistant", "created": 1747310111, "content": [
            text("The link points to `/privacy.htm`, but the page is `/privacy/`. Change"
                 " line 12 of templates/footer.html to `href=\"/privacy/\"`.")]},
    ]
    with open(os.path.join(DIR, "20250515_2.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


os.makedirs(DIR, exist_ok=True)
store()
session_file()

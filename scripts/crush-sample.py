#!/usr/bin/env python3
"""Writes sample_data/crush/crush.db: a small Crush store (the schema of Crush's newest
migration) holding one session, in which the agent tool runs a sub-session, for the README's
pipeline and docs/formats/crush.md. Run from the repository root; it replaces the file."""

import json
import os
import sqlite3

PATH = "sample_data/crush/crush.db"

SCHEMA = """
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
"""

VERSIONS = [0, 20250424200609, 20250515105448, 20250624000000, 20250627000000,
            20250810000000, 20250812000000, 20260127000000]

T0 = 1767261600  # 2026-01-01T10:00:00Z


def text(t):
    return {"type": "text", "data": {"text": t}}


def finish(reason, at):
    return {"type": "finish", "data": {"reason": reason, "time": at}}


def call(cid, name, args):
    return {"type": "tool_call", "data": {"id": cid, "name": name, "input": json.dumps(args),
                                          "provider_executed": False, "finished": True}}


def result(cid, content, metadata="", is_error=False):
    return {"type": "tool_result", "data": {"tool_call_id": cid, "name": "", "content": content,
                                            "data": "", "mime_type": "", "metadata": metadata,
                                            "is_error": is_error}}


def main():
    if os.path.exists(PATH):
        os.remove(PATH)
    db = sqlite3.connect(PATH)
    db.execute("PRAGMA page_size = 1024")
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO goose_db_version (version_id, is_applied, tstamp) "
                   "VALUES (?, 1, '2026-01-01 09:00:00')", [(v,) for v in VERSIONS])
    parent, sub = "5f0c1d2e-0000-4a1b-9c3d-7e8f90a1b2c3", "m2$$call_find"
    db.execute("INSERT INTO sessions VALUES (?, NULL, 'Fix the failing parser test', 10, 4210, "
               "388, 0.0123, ?, ?, NULL, ?)",
               (parent, T0 + 60, T0, json.dumps([{"content": "fix parse_list",
                                                  "status": "completed"}])))
    db.execute("INSERT INTO sessions VALUES (?, ?, 'Find the parser', 4, 900, 40, 0.002, ?, ?, "
               "NULL, NULL)", (sub, parent, T0 + 12, T0 + 5))
    model = ("anthropic/claude-sonnet-4", "openrouter")
    rows = [
        ("m1", parent, "user", [text("The test parse_list fails. Can you fix it?"),
                                finish("stop", 0)], None),
        ("m2", parent, "assistant", [
            {"type": "reasoning", "data": {"thinking": "First find where lists are parsed.",
                                           "signature": ""}},
            text("Let me find the parser."),
            call("call_find", "agent", {"prompt": "Find the function that parses lists."}),
            finish("tool_use", T0 + 13)], model),
        ("m3", parent, "tool", [result("call_find", "src/parse.rs: fn parse_list")], None),
        ("m4", parent, "assistant", [
            call("call_test", "bash", {"command": "cargo test parse_list"}),
            finish("tool_use", T0 + 20)], model),
        ("m5", parent, "tool", [result(
            "call_test", "test parse_list ... FAILED: expected 3 items, got 2",
            json.dumps({"exit_code": 101}), True)], None),
        ("m6", parent, "assistant", [
            text("The loop stops one item early."),
            call("call_edit", "edit", {"file_path": "src/parse.rs", "old_string": "i < n - 1",
                                       "new_string": "i < n"}),
            finish("tool_use", T0 + 30)], model),
        ("m7", parent, "tool", [result("call_edit", "Edited src/parse.rs",
                                       json.dumps({"additions": 1, "removals": 1}))], None),
        ("m8", parent, "assistant", [
            call("call_retest", "bash", {"command": "cargo test parse_list"}),
            finish("tool_use", T0 + 40)], model),
        ("m9", parent, "tool", [result("call_retest", "test parse_list ... ok",
                                       json.dumps({"exit_code": 0}))], None),
        ("m10", parent, "assistant", [
            text("Fixed: `parse_list` stopped one item early; the test passes now."),
            finish("end_turn", T0 + 50)], model),
        ("k1", sub, "user", [text("Find the function that parses lists.")], None),
        ("k2", sub, "assistant", [
            call("call_grep", "grep", {"pattern": "fn parse_list", "path": "src"}),
            finish("tool_use", T0 + 8)], model),
        ("k3", sub, "tool", [result("call_grep", "src/parse.rs:42: fn parse_list")], None),
        ("k4", sub, "assistant", [text("src/parse.rs: fn parse_list"),
                                  finish("end_turn", T0 + 12)], model),
    ]
    for i, (mid, session, role, parts, m) in enumerate(rows):
        at = T0 + i
        finished = parts[-1]["data"]["time"] if parts[-1]["type"] == "finish" else None
        db.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                   (mid, session, role, json.dumps(parts, separators=(",", ":")),
                    m[0] if m else "", at, at, finished or None, m[1] if m else None))
    db.executemany("INSERT INTO files VALUES (?, ?, 'src/parse.rs', ?, ?, ?, ?)",
                   [("f1", parent, "fn parse_list() { /* i < n - 1 */ }", 0, T0 + 30, T0 + 30),
                    ("f2", parent, "fn parse_list() { /* i < n */ }", 1, T0 + 30, T0 + 30)])
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main()

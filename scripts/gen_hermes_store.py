#!/usr/bin/env python3
"""Writes a Hermes Agent store (state.db, schema 30's columns) of about BYTES for benchmarks.

Usage: scripts/gen_hermes_store.py OUT.db BYTES [EXPORT.jsonl]

The sessions of EXPORT (`hermes sessions export` lines; default the bundled sample) are
inserted again and again, session ids made unique (`<id>-<n>`, parent links too), with their
messages, until the file reaches BYTES. The output is deterministic.
"""
import json
import os
import sqlite3
import sys

out, size = sys.argv[1], int(sys.argv[2])
export = sys.argv[3] if len(sys.argv) > 3 else "sample_data/hermes/sessions.jsonl"
sessions = [json.loads(line) for line in open(export, encoding="utf-8") if line.strip()]
if os.path.exists(out):
    os.remove(out)
db = sqlite3.connect(out)
db.executescript("""
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (30);
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, model_config TEXT,
    system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL,
    input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, estimated_cost_usd REAL,
    cwd TEXT, title TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, finish_reason TEXT, reasoning TEXT, reasoning_content TEXT,
    observed INTEGER DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
""")
n = 0
while n == 0 or os.path.getsize(out) < size:
    for s in sessions:
        sid = f"{s['id']}-{n}"
        parent = s.get("parent_session_id")
        db.execute(
            "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (sid, s.get("source") or "cli", s.get("model"), s.get("model_config"),
             s.get("system_prompt"), parent and f"{parent}-{n}", s["started_at"] + n,
             s.get("ended_at"), s.get("input_tokens"), s.get("output_tokens"),
             s.get("estimated_cost_usd"), s.get("cwd"), s.get("title")))
        for m in s["messages"]:
            calls = m.get("tool_calls")
            db.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls,"
                " tool_name, timestamp, finish_reason, reasoning, reasoning_content)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (sid, m["role"], m.get("content"), m.get("tool_call_id"),
                 json.dumps(calls) if calls else None, m.get("tool_name"),
                 m["timestamp"] + n, m.get("finish_reason"), m.get("reasoning"),
                 m.get("reasoning_content")))
    n += 1
    if n % 2000 == 0:
        db.commit()
db.commit()
db.close()

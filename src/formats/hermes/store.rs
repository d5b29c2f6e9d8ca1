//! Reading Hermes Agent's SQLite store (`~/.hermes/state.db`) one session at a time.
//!
//! The store is opened read-only with `open_store` (rows still in the write-ahead log are
//! read; nothing is written beside it). Opening checks what the reader depends on: the
//! `sessions` and `messages` tables with the columns every schema version has, and a schema
//! version (`schema_version` table, else `state_meta`'s `schema_version` key) no later than
//! [`LATEST_SCHEMA`]; a store that fails a check, or that SQLite cannot read, is an error
//! naming the file and the table. The session ids are then read (ordered by `started_at`),
//! and each session's row and messages are read when its record is asked for, so memory holds
//! one session at a time.
//!
//! Each record is one session in the shape `hermes sessions export` writes (the `sessions` row
//! with its columns as keys, plus `messages`, the session's rows ordered by `id`), with the
//! columns holding JSON text decoded (`tool_calls`, `model_config`, `reasoning_details`, ...)
//! and content written with Hermes' `\0json:` prefix decoded; `state_db` carries the schema
//! version. Columns differ between versions (`active`, `compacted`, `api_content`,
//! `system_prompt_hash` came later): every column present is read, by name.

use std::io;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{Map, Value};

use crate::ingest::sqlite::sessions::{
    ids_with_orphans, json_of, missing, row_object, table_columns, InTable, SessionReader,
    SessionSource, Store, TableError,
};

/// The latest schema version of Hermes' store this reader knows (`SCHEMA_VERSION` of
/// `hermes_state`); a later one may have moved what the reader reads.
pub const LATEST_SCHEMA: i64 = 30;

/// The prefix Hermes writes before content it stored as JSON (a list of multimodal parts).
const JSON_CONTENT: &str = "\0json:";

/// Columns holding JSON text, decoded when they parse.
const JSON_COLUMNS: &[&str] = &[
    "tool_calls",
    "model_config",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
    "display_metadata",
    "origin_json",
    "tool_names",
];

/// Columns of Hermes' own bookkeeping for its display (an identity hash and an ordering key,
/// which `hermes sessions export` leaves out too).
const SKIPPED_COLUMNS: &[&str] = &["display_identity", "display_order"];

/// The columns every schema version has, which the reader needs.
const REQUIRED: &[(&str, &[&str])] = &[
    ("sessions", &["id"]),
    ("messages", &["id", "session_id", "role", "content"]),
];

/// An error of the store at `path`, naming the table.
fn store_error(path: &str, table: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!(
        "cannot read the Hermes store {path}: table `{table}`: {e}"
    ))
}

/// The names of the tables of an open store.
fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut q = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = q.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// The store's schema version: the `schema_version` table's, else `state_meta`'s
/// `schema_version` key; `None` when it records none.
fn schema_version(conn: &Connection, tables: &[String]) -> Result<Option<i64>, (String, String)> {
    let has = |t: &str| tables.iter().any(|n| n == t);
    fn fail(table: &'static str) -> impl Fn(rusqlite::Error) -> (String, String) {
        move |e| (table.to_owned(), e.to_string())
    }
    if has("schema_version") {
        let v: Option<i64> = conn
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
            .map_err(fail("schema_version"))?;
        if v.is_some() {
            return Ok(v);
        }
    }
    if has("state_meta") {
        let v: Option<String> = conn
            .query_row(
                "SELECT value FROM state_meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(fail("state_meta"))?;
        if let Some(v) = v {
            return v.trim().parse().map(Some).map_err(|_| {
                (
                    "state_meta".to_owned(),
                    format!("the schema version {v:?} is not a number"),
                )
            });
        }
    }
    Ok(None)
}

/// What is read of a Hermes store up front (see the module's documentation).
pub(crate) struct Reader {
    version: Option<i64>,
    /// How the session row is selected (with its system prompt resolved).
    session_sql: String,
    /// How the sessions started from a session are selected (`delegate_task` subagents,
    /// compaction and branch continuations), when the store links sessions.
    children_sql: Option<String>,
    /// True when sessions record how they ended (`end_reason`).
    has_end_reason: bool,
}

/// Opens the store at `path` and reads its session ids (see the module's documentation);
/// `max_record_bytes` bounds a session's record.
pub(crate) fn open(path: &str, max_record_bytes: usize) -> io::Result<SessionSource<Reader>> {
    let store = Store::open(Path::new(path)).map_err(|e| store_error(path, "sqlite_master", e))?;
    let conn = &store.conn;
    let tables = table_names(conn).map_err(|e| store_error(path, "sqlite_master", e))?;
    let fail = |e: TableError| store_error(path, &e.table, e.error);
    if let Some(m) = missing(conn, REQUIRED).map_err(fail)? {
        return Err(match m.column {
            None => store_error(path, m.table, "missing: not a Hermes store"),
            Some((c, _)) => store_error(
                path,
                m.table,
                format!("no column `{c}`: not a schema of Hermes' store"),
            ),
        });
    }
    let version =
        schema_version(conn, &tables).map_err(|(table, e)| store_error(path, &table, e))?;
    if let Some(v) = version.filter(|v| *v > LATEST_SCHEMA || *v < 1) {
        return Err(store_error(
            path,
            "schema_version",
            format!(
                "schema version {v}, which this reader does not know (it reads versions 1 \
                 to {LATEST_SCHEMA}); a newer trajkit may read it, or export the sessions \
                 with `hermes sessions export` and convert that"
            ),
        ));
    }
    let session_columns =
        table_columns(conn, "sessions").map_err(|e| store_error(path, "sessions", e))?;
    let prompts = tables.iter().any(|t| t == "system_prompts")
        && session_columns.iter().any(|c| c == "system_prompt_hash");
    let session_sql = if prompts {
        "SELECT s.*, p.prompt AS \"trajkit:prompt\" FROM sessions s \
         LEFT JOIN system_prompts p ON p.hash = s.system_prompt_hash WHERE s.id = ?1"
    } else {
        "SELECT s.* FROM sessions s WHERE s.id = ?1"
    }
    .to_owned();
    let order = if session_columns.iter().any(|c| c == "started_at") {
        "started_at, id"
    } else {
        "id"
    };
    let children_sql = session_columns
        .iter()
        .any(|c| c == "parent_session_id")
        .then(|| format!("SELECT id FROM sessions WHERE parent_session_id = ?1 ORDER BY {order}"));
    let ids = ids_with_orphans(conn, order).map_err(fail)?;
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let reader = Reader {
        version,
        session_sql,
        children_sql,
        has_end_reason: session_columns.iter().any(|c| c == "end_reason"),
    };
    Ok(SessionSource::new(
        path,
        path,
        bytes,
        (store, reader, ids),
        max_record_bytes,
    ))
}

impl SessionReader for Reader {
    type Session = String;

    /// The record of session `id` (see the module's documentation).
    fn record(&self, conn: &Connection, id: &String) -> Result<Vec<u8>, TableError> {
        let mut q = conn
            .prepare_cached(&self.session_sql)
            .in_table("sessions")?;
        let mut rows = q.query([id]).in_table("sessions")?;
        let mut session = match rows.next().in_table("sessions")? {
            Some(row) => row_object(row, kept_value).in_table("sessions")?,
            // Messages of a session with no row.
            None => Map::from_iter([
                ("id".to_owned(), Value::from(id.as_str())),
                ("session_row".to_owned(), Value::Bool(false)),
            ]),
        };
        if let Some(prompt) = session.remove("trajkit:prompt") {
            if !prompt.is_null() {
                session.insert("system_prompt".to_owned(), prompt);
            }
        }
        let mut q = conn
            .prepare_cached("SELECT * FROM messages WHERE session_id = ?1 ORDER BY id")
            .in_table("messages")?;
        let mut rows = q.query([id]).in_table("messages")?;
        let mut messages = Vec::new();
        while let Some(row) = rows.next().in_table("messages")? {
            messages.push(Value::Object(
                row_object(row, kept_value).in_table("messages")?,
            ));
        }
        session.insert("messages".to_owned(), Value::Array(messages));
        let children = match &self.children_sql {
            Some(sql) => {
                let mut q = conn.prepare_cached(sql).in_table("sessions")?;
                let ids = q.query_map([id], |r| r.get::<_, String>(0));
                ids.and_then(|ids| ids.collect::<rusqlite::Result<Vec<String>>>())
                    .in_table("sessions")?
            }
            None => Vec::new(),
        };
        // How the parent ended: `compression` makes this session its continuation.
        let parent_end = match session.get("parent_session_id").and_then(Value::as_str) {
            Some(parent) if self.has_end_reason => {
                let mut q = conn
                    .prepare_cached("SELECT end_reason FROM sessions WHERE id = ?1")
                    .in_table("sessions")?;
                let mut rows = q.query([parent]).in_table("sessions")?;
                match rows.next().in_table("sessions")? {
                    Some(row) => column_value("end_reason", row.get_ref(0).in_table("sessions")?),
                    None => Value::Null,
                }
            }
            _ => Value::Null,
        };
        session.insert(
            "state_db".to_owned(),
            serde_json::json!({
                "schema_version": self.version,
                "child_session_ids": children,
                "parent_end_reason": parent_end,
            }),
        );
        serde_json::to_vec(&session).in_table("messages")
    }

    fn failed(&self, id: &String, file: &str, e: TableError) -> String {
        format!(
            "cannot read session {id:?} of the Hermes store {file}: table `{}`: {}",
            e.table, e.error
        )
    }

    fn line(&self, _id: &String, n: u64) -> u64 {
        n
    }
}

/// A column's value as JSON (see [`column_value`]), none for [`SKIPPED_COLUMNS`].
fn kept_value(name: &str, v: ValueRef<'_>) -> Option<Value> {
    (!SKIPPED_COLUMNS.contains(&name)).then(|| column_value(name, v))
}

/// A column's value as JSON: text as a string (decoded when it is a [`JSON_COLUMNS`] column
/// holding JSON, or content with the [`JSON_CONTENT`] prefix), numbers as numbers (a real that
/// is not finite as null), a blob as a hex string.
fn column_value(name: &str, v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Text(t) => {
            let text = String::from_utf8_lossy(t);
            let json = if name == "content" || name == "api_content" {
                text.strip_prefix(JSON_CONTENT)
            } else if JSON_COLUMNS.contains(&name) {
                Some(text.as_ref())
            } else {
                None
            };
            json.and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or_else(|| Value::String(text.into_owned()))
        }
        ValueRef::Blob(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
        v => json_of(v),
    }
}

//! Reading Goose's SQLite store (`~/.local/share/goose/sessions/sessions.db`, Goose 1.10 and
//! later) one session at a time.
//!
//! The store is opened read-only with `open_store` (rows still in the write-ahead log are
//! read; nothing is written beside it; a writer holding a transaction is not waited for).
//! Opening checks what the reader depends on: `sessions` with `id`, `messages` with
//! `session_id`, `role` and `content_json`, and a schema version (the newest row of
//! `schema_version`, 0 without the table) no later than [`LATEST_SCHEMA`]; a store that fails
//! a check, or that SQLite cannot read, is an error naming the file and the table. The session
//! ids are then read, and each session's row and messages when its record is asked for, so
//! memory holds one session at a time.
//!
//! A record is `{"goose_session": true, "store": "sessions.db", "schema_version", "session":
//! the row (its JSON columns decoded), "usage": the session's `usage_ledger` rows summed per
//! model (schema 15 and later), "thread_messages": how many rows of that table (schema 10 and
//! later, the messages of Goose's threads) name the session, which are not read, "messages"}`;
//! each message in the shape of Goose's session files: `row_id`, `id` (`message_id`), `role`, `created` (`created_timestamp`), `content`
//! (`content_json`, the JSON it holds) and `metadata` (`metadata_json`), and any other column
//! by its name. Messages are ordered by `created_timestamp`, then row id, as Goose reads them.

use std::io::{self, Write};
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{Map, Value};

use crate::ingest::sqlite::sessions::{
    has_columns, ids_with_orphans, json_of, missing, row_object, table_columns, InTable,
    SessionReader, SessionSource, Store, TableError, BUSY_WAIT,
};
use crate::json::strict;

/// The key marking a record built from a session of the store.
pub const MARKER: &str = "goose_session";

/// The latest schema version of Goose's store this reader knows (`CURRENT_SCHEMA_VERSION` of
/// Goose's session manager: 16 from Goose 1.5x); a later one may have moved what is read.
pub const LATEST_SCHEMA: i64 = 16;

/// Session columns holding JSON text, decoded when they parse.
const JSON_COLUMNS: &[&str] = &[
    "extension_data",
    "recipe_json",
    "user_recipe_values_json",
    "model_config_json",
];

/// Message columns renamed to the names of Goose's session files.
const MESSAGE_NAMES: &[(&str, &str)] = &[
    ("id", "row_id"),
    ("message_id", "id"),
    ("created_timestamp", "created"),
    ("content_json", "content"),
    ("metadata_json", "metadata"),
];

/// The columns the reader needs.
const REQUIRED: &[(&str, &[&str])] = &[
    ("sessions", &["id"]),
    ("messages", &["session_id", "role", "content_json"]),
];

/// True when the store at `conn` has this schema's tables and columns (`REQUIRED`).
pub fn has_schema(conn: &Connection) -> bool {
    has_columns(conn, REQUIRED)
}

/// An error of the store at `path`, naming the table.
fn store_error(path: &str, table: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!(
        "cannot read the Goose store {path}: table `{table}`: {e}"
    ))
}

/// The store's schema version: the newest row of `schema_version`, 0 without the table.
fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    if table_columns(conn, "schema_version")?.is_empty() {
        return Ok(0);
    }
    let v: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
    Ok(v.unwrap_or(0))
}

/// What is read of a Goose store up front (see the module's documentation).
pub(crate) struct Reader {
    version: i64,
    message_columns: Vec<String>,
    has_ledger: bool,
    /// True when the store has the `thread_messages` table (schema 10 and later), whose rows
    /// are counted per session, not read.
    has_thread_messages: bool,
}

/// Opens the store at `path` and reads its session ids (see the module's documentation).
pub(crate) fn open(path: &str, max_record_bytes: usize) -> io::Result<SessionSource<Reader>> {
    let store = Store::open(Path::new(path)).map_err(|e| store_error(path, "sqlite_master", e))?;
    let conn = &store.conn;
    conn.busy_timeout(BUSY_WAIT)
        .map_err(|e| store_error(path, "sqlite_master", e))?;
    let fail = |e: TableError| store_error(path, &e.table, e.error);
    if let Some(m) = missing(conn, REQUIRED).map_err(fail)? {
        return Err(match m.column {
            None => store_error(path, m.table, "missing: not a Goose store"),
            Some((c, have)) => store_error(
                path,
                m.table,
                format!(
                    "no column `{c}` (it has {}): not a schema of Goose's store",
                    have.join(", ")
                ),
            ),
        });
    }
    let version = schema_version(conn).map_err(|e| store_error(path, "schema_version", e))?;
    if !(0..=LATEST_SCHEMA).contains(&version) {
        return Err(store_error(
            path,
            "schema_version",
            format!(
                "schema version {version}, which this reader does not know (it reads \
                 versions up to {LATEST_SCHEMA}); a newer Goose may have changed its tables"
            ),
        ));
    }
    let message_columns =
        table_columns(conn, "messages").map_err(|e| store_error(path, "messages", e))?;
    let has_ledger = table_columns(conn, "usage_ledger")
        .map_err(|e| store_error(path, "usage_ledger", e))?
        .iter()
        .any(|c| c == "session_id");
    if has_ledger {
        sum_usage(conn).map_err(|e| store_error(path, "usage_ledger", e))?;
    }
    let has_thread_messages = table_columns(conn, "thread_messages")
        .map_err(|e| store_error(path, "thread_messages", e))?
        .iter()
        .any(|c| c == "session_id");
    if has_thread_messages {
        count_thread_messages(conn).map_err(|e| store_error(path, "thread_messages", e))?;
    }
    let order = if table_columns(conn, "sessions")
        .map_err(|e| store_error(path, "sessions", e))?
        .iter()
        .any(|c| c == "created_at")
    {
        "created_at, rowid"
    } else {
        "rowid"
    };
    let ids = ids_with_orphans(conn, order).map_err(fail)?;
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let reader = Reader {
        version,
        message_columns,
        has_ledger,
        has_thread_messages,
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
            .prepare_cached("SELECT * FROM sessions WHERE id = ?1")
            .in_table("sessions")?;
        let mut rows = q.query([id]).in_table("sessions")?;
        let session = match rows.next().in_table("sessions")? {
            Some(row) => {
                row_object(row, |name, v| Some(column_value(name, v))).in_table("sessions")?
            }
            // Messages of a session with no row.
            None => Map::from_iter([
                ("id".to_owned(), Value::from(id.as_str())),
                ("session_row".to_owned(), Value::Bool(false)),
            ]),
        };
        let mut out = Vec::with_capacity(4096);
        // Writing to a `Vec` cannot fail.
        let _ = write!(
            out,
            "{{\"{MARKER}\":true,\"store\":\"sessions.db\",\"schema_version\":{},\"session\":",
            self.version
        );
        let _ = serde_json::to_writer(&mut out, &session);
        if self.has_ledger {
            out.extend_from_slice(b",\"usage\":");
            let usage = usage(conn, id).in_table("usage_ledger")?;
            let _ = serde_json::to_writer(&mut out, &usage);
        }
        if self.has_thread_messages {
            let rows: i64 = conn
                .prepare_cached(
                    "SELECT coalesce(sum(n), 0) FROM temp.thread_messages_by_session \
                     WHERE session_id = ?1",
                )
                .and_then(|mut q| q.query_row([id], |r| r.get(0)))
                .in_table("thread_messages")?;
            let _ = write!(out, ",\"thread_messages\":{rows}");
        }
        out.extend_from_slice(b",\"messages\":[");
        let list: Vec<String> = self
            .message_columns
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        let order = if self
            .message_columns
            .iter()
            .any(|c| c == "created_timestamp")
        {
            "created_timestamp, rowid"
        } else {
            "rowid"
        };
        let sql = format!(
            "SELECT {} FROM messages WHERE session_id = ?1 ORDER BY {order}",
            list.join(", ")
        );
        let mut q = conn.prepare_cached(&sql).in_table("messages")?;
        let mut rows = q.query([id]).in_table("messages")?;
        let mut first = true;
        while let Some(row) = rows.next().in_table("messages")? {
            if !first {
                out.push(b',');
            }
            first = false;
            self.message(row, &mut out).in_table("messages")?;
        }
        out.extend_from_slice(b"]}");
        Ok(out)
    }

    fn failed(&self, id: &String, file: &str, e: TableError) -> String {
        format!(
            "cannot read session {id:?} of the Goose store {file}: table `{}`: {}",
            e.table, e.error
        )
    }

    fn line(&self, _id: &String, n: u64) -> u64 {
        n
    }
}

impl Reader {
    /// One message row in the shape of a session file's message (see the module's
    /// documentation); `session_id` left out (the record's session).
    fn message(&self, row: &rusqlite::Row<'_>, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        out.push(b'{');
        let mut first = true;
        for (i, column) in self.message_columns.iter().enumerate() {
            if column == "session_id" {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            let name = MESSAGE_NAMES
                .iter()
                .find(|(c, _)| c == column)
                .map_or(column.as_str(), |(_, n)| n);
            let _ = serde_json::to_writer(&mut *out, name);
            out.push(b':');
            match (column.as_str(), row.get_ref(i)?) {
                // The JSON the column holds, as it is (when it is JSON by trajkit's rules).
                ("content_json" | "metadata_json", ValueRef::Text(text))
                    if strict::validate(text).is_ok() =>
                {
                    out.extend_from_slice(text);
                }
                (_, value) => {
                    let _ = serde_json::to_writer(&mut *out, &column_value(column, value));
                }
            }
        }
        out.push(b'}');
        Ok(())
    }
}

/// The session's `usage_ledger` rows summed per model, in order of first use.
fn usage(conn: &Connection, id: &str) -> rusqlite::Result<Vec<Value>> {
    let mut q = conn.prepare_cached(
        "SELECT model, requests, input_tokens, output_tokens, total_tokens, \
         cache_read_tokens, cache_write_tokens, cost, compactions \
         FROM temp.usage_by_session WHERE session_id = ?1 ORDER BY first_id",
    )?;
    let rows = q.query_map([id], |r| {
        let keys = [
            "model",
            "requests",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "cost",
            "compactions",
        ];
        let mut m = Map::new();
        for (i, k) in keys.iter().enumerate() {
            m.insert((*k).to_owned(), column_value(k, r.get_ref(i)?));
        }
        Ok(Value::Object(m))
    })?;
    rows.collect()
}

/// Counts the `thread_messages` rows per session once, into a temporary table indexed by
/// session (Goose indexes the table by thread only); the rows are not read (see the module's
/// documentation).
fn count_thread_messages(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE thread_messages_by_session AS \
         SELECT session_id, count(*) AS n FROM main.thread_messages GROUP BY session_id; \
         CREATE INDEX temp.thread_messages_by_session_id \
         ON thread_messages_by_session(session_id);",
    )
}

/// Sums the `usage_ledger` rows per session and model once, into a temporary table indexed by
/// session: Goose does not index the ledger by session, and a query per session would scan it
/// whole each time (quadratic in the store's size). The temporary table lives in SQLite's
/// temporary storage, never in the store, which is opened read-only.
fn sum_usage(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE usage_by_session AS \
         SELECT session_id, model, count(*) AS requests, sum(input_tokens) AS input_tokens, \
         sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, \
         sum(cache_read_tokens) AS cache_read_tokens, \
         sum(cache_write_tokens) AS cache_write_tokens, sum(cost) AS cost, \
         sum(is_compaction) AS compactions, min(id) AS first_id \
         FROM main.usage_ledger GROUP BY session_id, model; \
         CREATE INDEX temp.usage_by_session_id ON usage_by_session(session_id, first_id);",
    )
}

/// A column's value as JSON: text as a string (decoded when it is one of [`JSON_COLUMNS`]
/// holding JSON), numbers as numbers (a real that is not finite as null), a blob as
/// `{"blob_bytes": n}` (no column of the schema holds one).
fn column_value(name: &str, v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Text(t) if JSON_COLUMNS.contains(&name) => {
            let text = String::from_utf8_lossy(t);
            serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.into_owned()))
        }
        v => json_of(v),
    }
}

//! Reading OpenCode's SQLite store (`~/.local/share/opencode/opencode.db`, OpenCode 1.2 on;
//! `opencode-<channel>.db` for other release channels) one session at a time.
//!
//! The store is opened with `open_store` (read-only; rows still in the write-ahead log are
//! read; a live writer is never blocked). Opening checks the columns the reader depends on
//! (`session`, `message` and `part` with their ids and JSON `data`) and reads the schema
//! version: the newest migration OpenCode applied, in its `migration` table (newer
//! releases) or Drizzle's `__drizzle_migrations` (the first). A store that fails a check is one
//! error record naming the file and the table. The sessions' ids and parents are read first;
//! each session's row, messages and parts when its record is made, so memory holds one session
//! at a time.
//!
//! Each record is a JSON bundle: `{"opencode_session": true, "source": "store", "schema",
//! "session": the row's columns, "sub_sessions": ids, "parent_call"?, "session_messages"? (the
//! rows of the newer `session_message` table),
//! "todos"? (the `todo` rows, as `opencode export` writes them),
//! "messages": [{"id", "time_created", "info": data, "parts": [{"id", "data"}]}]}`, the `data`
//! columns written as the JSON they hold. Messages are ordered as OpenCode reads them
//! (`time_created`, then `id`), parts by `id`.

use std::io::Write;

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::Value;

use crate::ingest::sqlite::sessions::{
    children, has_columns, json_of, missing, read_session_rows, row_object, table_columns, InTable,
    SessionReader, SessionRow, SessionSource, TableError,
};
use crate::ingest::FrameError;
use crate::json::strict;

use super::MARKER;

/// The columns the reader needs, by table (every schema version since 1.2 has them).
pub const REQUIRED: &[(&str, &[&str])] = &[
    ("session", &["id", "parent_id", "title", "time_created"]),
    ("message", &["id", "session_id", "time_created", "data"]),
    ("part", &["id", "message_id", "session_id", "data"]),
];

/// The migration OpenCode's store starts with (`20260127222353_familiar_lady_ursula`, OpenCode
/// 1.2.0): a store whose newest migration is older is not OpenCode's.
pub const FIRST_MIGRATION: i64 = 20260127222353;

/// True when the tables of the store at `conn` are OpenCode's (see [`REQUIRED`]).
pub fn has_schema(conn: &Connection) -> bool {
    has_columns(conn, REQUIRED)
}

/// A problem reading the store, as its record says it.
fn describe(e: TableError) -> String {
    format!(
        "cannot read the OpenCode store: table {}: {}",
        e.table, e.error
    )
}

fn read_error(e: TableError) -> FrameError {
    FrameError::Read(describe(e))
}

/// The schema version: the newest migration's name (or its time, in Drizzle's table) and how
/// many were applied.
#[derive(Default)]
struct Schema {
    /// The 14 digits of the newest migration (`20260604172448`).
    version: i64,
    /// Its name, when the table records names.
    name: Option<String>,
    /// The table it was read from.
    table: &'static str,
    applied: i64,
}

/// What is read of the store up front: its schema, the tables it has and the sessions' links.
pub(crate) struct Reader {
    schema: Schema,
    /// The sub-sessions of each session that has some, in order.
    children: foldhash::HashMap<String, Vec<String>>,
    /// True when the store has the `session_message` table of newer releases.
    has_session_message: bool,
    /// True when the store has the `todo` table (each session's todo list).
    has_todo: bool,
}

/// Opens the store at `path` (found in the input `input`); problems with the store itself are
/// an error record (see [`SessionSource::open_reporting`]).
pub(crate) fn open(
    input: &str,
    path: &str,
    max_record_bytes: usize,
) -> std::io::Result<SessionSource<Reader>> {
    SessionSource::open_reporting(
        input,
        path,
        max_record_bytes,
        "the OpenCode store",
        read_error,
        read_head,
    )
}

/// Checks the columns, reads the schema version and the session rows.
fn read_head(conn: &Connection) -> Result<(Reader, Vec<SessionRow>), FrameError> {
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .in_table("sqlite_master")
        .map_err(read_error)?;
    match missing(conn, REQUIRED).map_err(read_error)? {
        None => {}
        Some(m) => {
            return Err(FrameError::Invalid(match m.column {
                None => format!("not an OpenCode store: no table {}", m.table),
                Some((c, have)) => format!(
                    "table {}: no column {c} (it has {}): a schema of OpenCode's store this \
                     reader does not know",
                    m.table,
                    have.join(", ")
                ),
            }))
        }
    }
    let schema = schema_version(conn)?;
    let has_session_message = !table_columns(conn, "session_message")
        .in_table("session_message")
        .map_err(read_error)?
        .is_empty();
    let todo = table_columns(conn, "todo")
        .in_table("todo")
        .map_err(read_error)?;
    let has_todo = ["session_id", "content", "status", "priority", "position"]
        .iter()
        .all(|c| todo.iter().any(|t| t == c));
    let sessions = read_session_rows(
        conn,
        "SELECT rowid, id, parent_id FROM session ORDER BY time_created, id",
    )
    .in_table("session")
    .map_err(read_error)?;
    let reader = Reader {
        schema,
        children: children(&sessions),
        has_session_message,
        has_todo,
    };
    Ok((reader, sessions))
}

impl SessionReader for Reader {
    type Session = SessionRow;

    /// The bundle of session `s` (see the module's documentation).
    fn record(&self, conn: &Connection, s: &SessionRow) -> Result<Vec<u8>, TableError> {
        let mut out = Vec::with_capacity(4096);
        // Writing to a `Vec` cannot fail.
        let _ = write!(out, "{{\"{MARKER}\":true,\"source\":\"store\",\"schema\":");
        let mut schema = serde_json::Map::new();
        schema.insert("version".into(), self.schema.version.into());
        if let Some(name) = &self.schema.name {
            schema.insert("migration".into(), name.clone().into());
        }
        schema.insert("migrations_applied".into(), self.schema.applied.into());
        schema.insert("table".into(), self.schema.table.into());
        let _ = serde_json::to_writer(&mut out, &schema);
        out.extend_from_slice(b",\"session\":");
        let fields = session_columns(conn, s.rowid).in_table("session")?;
        let _ = serde_json::to_writer(&mut out, &fields);
        out.extend_from_slice(b",\"sub_sessions\":");
        let none = Vec::new();
        let _ = serde_json::to_writer(&mut out, self.children.get(&s.id).unwrap_or(&none));
        if let Some(parent) = &s.parent {
            if let Some(call) = parent_call(conn, parent, &s.id).in_table("part")? {
                out.extend_from_slice(b",\"parent_call\":");
                let _ = serde_json::to_writer(&mut out, &call);
            }
        }
        if self.has_session_message {
            session_messages(conn, &s.id, &mut out).in_table("session_message")?;
        }
        if self.has_todo {
            let todos = todos(conn, &s.id).in_table("todo")?;
            if !todos.is_empty() {
                out.extend_from_slice(b",\"todos\":");
                let _ = serde_json::to_writer(&mut out, &todos);
            }
        }
        out.extend_from_slice(b",\"messages\":[");
        let mut messages = conn
            .prepare_cached(
                "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
                 ORDER BY time_created, id",
            )
            .in_table("message")?;
        let mut parts = conn
            .prepare_cached("SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id")
            .in_table("part")?;
        let mut rows = messages.query([&s.id]).in_table("message")?;
        let mut first = true;
        while let Some(row) = rows.next().in_table("message")? {
            if !first {
                out.push(b',');
            }
            first = false;
            let id = row.get_ref(0).in_table("message")?;
            let id_text = match id {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                other => json_of(other).to_string(),
            };
            out.extend_from_slice(b"{\"id\":");
            let _ = serde_json::to_writer(&mut out, &id_text);
            out.extend_from_slice(b",\"time_created\":");
            let time = row.get_ref(1).in_table("message")?;
            let _ = serde_json::to_writer(&mut out, &json_of(time));
            out.extend_from_slice(b",\"info\":");
            write_json(&mut out, row.get_ref(2).in_table("message")?);
            out.extend_from_slice(b",\"parts\":[");
            let mut part_rows = parts.query([&id_text]).in_table("part")?;
            let mut first_part = true;
            while let Some(p) = part_rows.next().in_table("part")? {
                if !first_part {
                    out.push(b',');
                }
                first_part = false;
                out.extend_from_slice(b"{\"id\":");
                let pid = p.get_ref(0).in_table("part")?;
                let _ = serde_json::to_writer(&mut out, &json_of(pid));
                out.extend_from_slice(b",\"data\":");
                write_json(&mut out, p.get_ref(1).in_table("part")?);
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(b"]}");
        Ok(out)
    }

    fn failed(&self, _s: &SessionRow, _file: &str, e: TableError) -> String {
        describe(e)
    }

    fn line(&self, s: &SessionRow, _n: u64) -> u64 {
        u64::try_from(s.rowid).unwrap_or(0)
    }

    /// Counts the messages whose session has no row and the parts whose message has none
    /// (which no session's record holds): an error record for each table that has some.
    fn after_last(&self, conn: &Connection) -> Vec<FrameError> {
        let mut found = Vec::new();
        for (table, sql, of) in [
            (
                "message",
                "SELECT count(*) FROM message WHERE session_id NOT IN (SELECT id FROM session)",
                "session of table session",
            ),
            (
                "part",
                "SELECT count(*) FROM part WHERE message_id NOT IN (SELECT id FROM message)",
                "message of table message",
            ),
        ] {
            let counted: rusqlite::Result<i64> = conn.query_row(sql, [], |r| r.get(0));
            match counted.in_table(table) {
                Ok(0) => {}
                Ok(n) => found.push(FrameError::Invalid(format!(
                    "table {table}: {n} rows belong to no {of}; they are not converted"
                ))),
                Err(e) => found.push(read_error(e)),
            }
        }
        found
    }
}

/// The `data` column as the JSON it is (when it is JSON by trajkit's rules), else as a string.
fn write_json(out: &mut Vec<u8>, value: ValueRef<'_>) {
    match value {
        ValueRef::Text(text) if strict::validate(text).is_ok() => out.extend_from_slice(text),
        other => {
            let _ = serde_json::to_writer(&mut *out, &json_of(other));
        }
    }
}

/// The call of session `parent` that started its sub-session `child` (OpenCode's task tool
/// keeps the sub-session's id in its state's metadata): `{message_id, part_id, call_id}`.
fn parent_call(
    conn: &Connection,
    parent: &str,
    child: &str,
) -> rusqlite::Result<Option<serde_json::Map<String, Value>>> {
    let mut q = conn.prepare_cached(
        "SELECT message_id, id, json_extract(data, '$.callID') FROM part \
         WHERE session_id = ?1 AND json_valid(data) \
         AND json_extract(data, '$.state.metadata.sessionId') = ?2 ORDER BY id LIMIT 1",
    )?;
    let mut rows = q.query([parent, child])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    let mut call = serde_json::Map::new();
    for (i, key) in ["message_id", "part_id", "call_id"].iter().enumerate() {
        call.insert((*key).to_owned(), json_of(row.get_ref(i)?));
    }
    Ok(Some(call))
}

/// The newest migration applied: from OpenCode's `migration` table (`id` is the migration's
/// folder name, `20260604172448_event_sourced_session_input`), else Drizzle's
/// `__drizzle_migrations` (`created_at`, the migration's time in milliseconds). A store with
/// neither, or whose newest migration is older than OpenCode's first, is refused.
fn schema_version(conn: &Connection) -> Result<Schema, FrameError> {
    let read = |table: &'static str, e: rusqlite::Error| {
        FrameError::Read(describe(TableError {
            table: table.to_owned(),
            error: e.to_string(),
        }))
    };
    if !table_columns(conn, "migration")
        .map_err(|e| read("migration", e))?
        .is_empty()
    {
        let (name, applied): (Option<String>, i64) = conn
            .query_row("SELECT max(id), count(*) FROM migration", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(|e| read("migration", e))?;
        let version = name
            .as_deref()
            .and_then(|n| n.get(..14))
            .and_then(|d| d.parse::<i64>().ok())
            .unwrap_or(0);
        return known(Schema {
            version,
            name,
            table: "migration",
            applied,
        });
    }
    if !table_columns(conn, "__drizzle_migrations")
        .map_err(|e| read("__drizzle_migrations", e))?
        .is_empty()
    {
        let (millis, applied): (Option<f64>, i64) = conn
            .query_row(
                "SELECT max(CAST(created_at AS REAL)), count(*) FROM __drizzle_migrations",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| read("__drizzle_migrations", e))?;
        return known(Schema {
            version: millis.map_or(0, |m| digits_of_millis(m as i64)),
            name: None,
            table: "__drizzle_migrations",
            applied,
        });
    }
    Err(FrameError::Invalid(
        "table migration: missing (and no __drizzle_migrations): the store records no schema \
         version, which every OpenCode store since 1.2 does"
            .to_owned(),
    ))
}

/// `schema` when its version is one of OpenCode's, else the error naming its table.
fn known(schema: Schema) -> Result<Schema, FrameError> {
    if schema.version >= FIRST_MIGRATION {
        Ok(schema)
    } else {
        Err(FrameError::Invalid(format!(
            "table {}: schema version {} is not one of OpenCode's (its first migration is {}); \
             the store's columns may mean something else",
            schema.table, schema.version, FIRST_MIGRATION
        )))
    }
}

/// A time in Unix milliseconds as the 14 digits of a migration's name (UTC, `YYYYMMDDhhmmss`).
fn digits_of_millis(millis: i64) -> i64 {
    let secs = millis.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    ((year * 100 + month) * 100 + day) * 1_000_000
        + (rest / 3600) * 10_000
        + (rest % 3600 / 60) * 100
        + rest % 60
}

/// The rows of the newer `session_message` table of session `id` (events such as a model
/// switch, which the conversation's messages do not hold), as `,"session_messages":[...]`
/// (nothing when there are none): each row's columns, `data` as the JSON it is.
fn session_messages(conn: &Connection, id: &str, out: &mut Vec<u8>) -> rusqlite::Result<()> {
    let mut q =
        conn.prepare_cached("SELECT * FROM session_message WHERE session_id = ?1 ORDER BY rowid")?;
    let names: Vec<String> = q.column_names().map(str::to_owned).collect();
    let mut rows = q.query([id])?;
    let mut first = true;
    while let Some(row) = rows.next()? {
        out.extend_from_slice(if first {
            b",\"session_messages\":[{"
        } else {
            b",{"
        });
        first = false;
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let _ = serde_json::to_writer(&mut *out, name);
            out.push(b':');
            match name.as_str() {
                "data" => write_json(out, row.get_ref(i)?),
                _ => {
                    let _ = serde_json::to_writer(&mut *out, &json_of(row.get_ref(i)?));
                }
            }
        }
        out.push(b'}');
    }
    if !first {
        out.push(b']');
    }
    Ok(())
}

/// The todo list of session `id` (`{content, status, priority}` by position), as `opencode
/// export` writes it.
fn todos(conn: &Connection, id: &str) -> rusqlite::Result<Vec<Value>> {
    let mut q = conn.prepare_cached(
        "SELECT content, status, priority FROM todo WHERE session_id = ?1 ORDER BY position",
    )?;
    let mut rows = q.query([id])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(serde_json::json!({
            "content": json_of(r.get_ref(0)?),
            "status": json_of(r.get_ref(1)?),
            "priority": json_of(r.get_ref(2)?),
        }));
    }
    Ok(out)
}

/// The columns of the session row at `rowid`, as JSON (none when it has gone).
fn session_columns(
    conn: &Connection,
    rowid: i64,
) -> rusqlite::Result<serde_json::Map<String, Value>> {
    let mut stmt = conn.prepare_cached("SELECT * FROM session WHERE rowid = ?1")?;
    let mut rows = stmt.query([rowid])?;
    match rows.next()? {
        Some(row) => row_object(row, |_, v| Some(json_of(v))),
        None => Ok(serde_json::Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drizzle_times_are_migration_names() {
        // 20260127222353_familiar_lady_ursula
        assert_eq!(digits_of_millis(1_769_552_633_000), 20260127222353);
        assert_eq!(digits_of_millis(0), 19700101000000);
    }
}

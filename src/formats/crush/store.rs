//! Reading a Crush or Go OpenCode store (`.crush/crush.db`, `.opencode/opencode.db`) one
//! session at a time: each session becomes one record, a JSON bundle of its row, its messages
//! (ordered by `rowid`: several share one second of `created_at`) with their `parts` as the
//! JSON they are, its sub-sessions and a count of its file snapshots.
//!
//! The store is opened with `open_store` (read-only; rows still in the write-ahead log are
//! read; a live writer is never blocked). The session rows are read first (they are small);
//! each session's messages are read when its record is made, so memory holds one session's
//! messages at a time. The schema version is the newest migration in `goose_db_version`; one
//! trajkit does not know is refused. A store that cannot be read is one error record naming
//! the file (the record's provenance) and the table.

use std::io::Write;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};

use crate::ingest::sqlite::sessions::{
    children, json_of, read_session_rows, row_object, table_columns, InTable, SessionReader,
    SessionRow, SessionSource, TableError,
};
use crate::ingest::{FrameError, RawRecord, RecordSource};
use crate::json::strict;

/// The key marking a record built from a session of a store.
pub const MARKER: &str = "crush_session";

/// The migrations of Crush (`internal/db/migrations`) and of the Go OpenCode (the first two),
/// by the version goose records: the schema versions this reader knows. 0 is goose's own first
/// row.
pub const KNOWN_VERSIONS: &[i64] = &[
    0,
    20250424200609, // initial: sessions, files, messages
    20250515105448, // sessions.summary_message_id
    20250624000000, // indexes on created_at (Crush from here on)
    20250627000000, // messages.provider
    20250810000000, // messages.is_summary_message
    20250812000000, // sessions.todos
    20260127000000, // read_files
];

/// True when the tables of the store at `conn` are this schema's: `sessions`, and `messages`
/// with `session_id`, `role` and `parts` columns.
pub fn has_schema(conn: &Connection) -> bool {
    let messages = table_columns(conn, "messages").unwrap_or_default();
    let sessions = table_columns(conn, "sessions").unwrap_or_default();
    sessions.iter().any(|c| c == "id")
        && ["id", "session_id", "role", "parts"]
            .iter()
            .all(|c| messages.iter().any(|m| m == c))
}

/// A problem reading the store, as its record says it.
fn describe(e: TableError) -> String {
    format!(
        "cannot read the Crush/OpenCode store: table {}: {}",
        e.table, e.error
    )
}

fn read_error(e: TableError) -> FrameError {
    FrameError::Read(describe(e))
}

/// What is read of one store up front: its schema and the sessions' links.
struct Reader {
    version: i64,
    /// The sub-sessions of each session that has some, in `rowid` order.
    children: foldhash::HashMap<String, Vec<String>>,
    has_files: bool,
    message_columns: Vec<String>,
}

/// The sessions of one store, one record each (numbered by [`Stores`]).
type SessionRecords = SessionSource<Reader>;

/// Opens the store at `path` (found in the directory `input`, or `input` itself); problems
/// with the store itself are an error record (see [`SessionSource::open_reporting`]).
fn open(input: &str, path: &str, max_record_bytes: usize) -> std::io::Result<SessionRecords> {
    SessionSource::open_reporting(
        input,
        path,
        max_record_bytes,
        "the Crush/OpenCode store",
        read_error,
        read_head,
    )
}

/// Reads the schema version, the columns and the session rows.
fn read_head(conn: &Connection) -> Result<(Reader, Vec<SessionRow>), FrameError> {
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .in_table("sqlite_master")
        .map_err(read_error)?;
    if !has_schema(conn) {
        let tables = table_columns(conn, "messages")
            .in_table("messages")
            .map_err(read_error)?;
        return Err(FrameError::Invalid(if tables.is_empty() {
            "not a Crush/OpenCode store: no table messages (with session_id, role and parts) \
             and sessions"
                .to_owned()
        } else {
            format!(
                "not a Crush/OpenCode store: table messages has columns {} (session_id, role \
                 and parts expected), or there is no table sessions",
                tables.join(", ")
            )
        }));
    }
    let version = schema_version(conn)?;
    let message_columns = table_columns(conn, "messages")
        .in_table("messages")
        .map_err(read_error)?;
    let has_files = table_columns(conn, "files")
        .in_table("files")
        .map_err(read_error)?
        .iter()
        .any(|c| c == "session_id");
    let parent = match table_columns(conn, "sessions")
        .in_table("sessions")
        .map_err(read_error)?
        .iter()
        .any(|c| c == "parent_session_id")
    {
        true => "parent_session_id",
        false => "NULL",
    };
    let sessions = read_session_rows(
        conn,
        &format!("SELECT rowid, id, {parent} FROM sessions ORDER BY rowid"),
    )
    .in_table("sessions")
    .map_err(read_error)?;
    let reader = Reader {
        version,
        children: children(&sessions),
        has_files,
        message_columns,
    };
    Ok((reader, sessions))
}

impl SessionReader for Reader {
    type Session = SessionRow;

    /// `{"crush_session": true, "schema_version", "session", "sub_sessions", "files",
    /// "messages"}`; each message's columns, with `parts` the JSON text it holds (a string
    /// when it is not JSON).
    fn record(&self, conn: &Connection, s: &SessionRow) -> Result<Vec<u8>, TableError> {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(MARKER.as_bytes());
        // Writing to a `Vec` cannot fail.
        let _ = write!(
            out,
            "\":true,\"schema_version\":{},\"session\":",
            self.version
        );
        let fields = conn
            .prepare_cached("SELECT * FROM sessions WHERE rowid = ?1")
            .and_then(|mut q| {
                q.query_row([s.rowid], |row| row_object(row, |_, v| Some(json_of(v))))
            })
            .in_table("sessions")?;
        let _ = serde_json::to_writer(&mut out, &fields);
        out.extend_from_slice(b",\"sub_sessions\":");
        let none = Vec::new();
        let _ = serde_json::to_writer(&mut out, self.children.get(&s.id).unwrap_or(&none));
        if self.has_files {
            let (snapshots, paths): (i64, i64) = conn
                .prepare_cached(
                    "SELECT count(*), count(DISTINCT path) FROM files WHERE session_id = ?1",
                )
                .and_then(|mut q| q.query_row([&s.id], |r| Ok((r.get(0)?, r.get(1)?))))
                .in_table("files")?;
            let _ = write!(
                out,
                ",\"files\":{{\"snapshots\":{snapshots},\"paths\":{paths}}}"
            );
        }
        out.extend_from_slice(b",\"messages\":[");
        let list: Vec<String> = self
            .message_columns
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        let sql = format!(
            "SELECT rowid, {} FROM messages WHERE session_id = ?1 ORDER BY rowid",
            list.join(", ")
        );
        let mut stmt = conn.prepare_cached(&sql).in_table("messages")?;
        let mut rows = stmt.query([&s.id]).in_table("messages")?;
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

    fn failed(&self, _s: &SessionRow, _file: &str, e: TableError) -> String {
        describe(e)
    }

    fn line(&self, s: &SessionRow, _n: u64) -> u64 {
        u64::try_from(s.rowid).unwrap_or(0)
    }

    /// Counts the messages whose session is not in `sessions` (which the sessions' records do
    /// not hold): an error record when there are any.
    fn after_last(&self, conn: &Connection) -> Vec<FrameError> {
        let counted: rusqlite::Result<i64> = conn.query_row(
            "SELECT count(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)",
            [],
            |r| r.get(0),
        );
        match counted {
            Ok(0) => Vec::new(),
            Ok(n) => vec![FrameError::Invalid(format!(
                "table messages: {n} messages belong to no session of table sessions; they \
                 are not converted"
            ))],
            Err(e) => vec![FrameError::Read(describe(TableError {
                table: "messages".to_owned(),
                error: e.to_string(),
            }))],
        }
    }
}

impl Reader {
    /// One message row as a JSON object, its columns in table order after `rowid`.
    fn message(&self, row: &Row<'_>, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        let rowid: i64 = row.get(0)?;
        let _ = write!(out, "{{\"rowid\":{rowid}");
        for (i, name) in self.message_columns.iter().enumerate() {
            out.push(b',');
            let _ = serde_json::to_writer(&mut *out, name);
            out.push(b':');
            let value = row.get_ref(i + 1)?;
            match (name.as_str(), value) {
                // The parts list as the JSON it is (when it is JSON by trajkit's rules).
                ("parts", ValueRef::Text(text)) if strict::validate(text).is_ok() => {
                    out.extend_from_slice(text);
                }
                _ => {
                    let _ = serde_json::to_writer(&mut *out, &json_of(value));
                }
            }
        }
        out.push(b'}');
        Ok(())
    }
}

/// The newest migration applied (`goose_db_version`), refused when this reader does not know
/// it.
fn schema_version(conn: &Connection) -> Result<i64, FrameError> {
    let version: rusqlite::Result<Option<i64>> = conn.query_row(
        "SELECT max(version_id) FROM goose_db_version WHERE is_applied",
        [],
        |r| r.get(0),
    );
    let version = version
        .in_table("goose_db_version")
        .map_err(read_error)?
        .unwrap_or(0);
    if KNOWN_VERSIONS.contains(&version) {
        Ok(version)
    } else {
        Err(FrameError::Invalid(format!(
            "table goose_db_version: schema version {version} is not one trajkit knows (it knows \
             Crush's and OpenCode's migrations up to {}); a newer Crush may have changed its \
             tables",
            KNOWN_VERSIONS.last().copied().unwrap_or_default()
        )))
    }
}

/// The sessions of several stores, one after the other (a directory holding both a `.crush/`
/// and an `.opencode/` store), numbered as one input.
pub struct Stores {
    stores: std::vec::IntoIter<SessionRecords>,
    current: Option<SessionRecords>,
    next_index: u64,
    bytes: u64,
}

impl Stores {
    /// The sessions of the stores at `paths`, found in the input `input`.
    pub fn open(input: &str, paths: &[String], max_record_bytes: usize) -> std::io::Result<Stores> {
        let stores = paths
            .iter()
            .map(|p| open(input, p, max_record_bytes))
            .collect::<std::io::Result<Vec<_>>>()?;
        let bytes = paths
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum();
        let mut stores = stores.into_iter();
        Ok(Stores {
            current: stores.next(),
            stores,
            next_index: 0,
            bytes,
        })
    }
}

impl Iterator for Stores {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        loop {
            let current = self.current.as_mut()?;
            if let Some(mut record) = current.next() {
                record.provenance.index = self.next_index;
                self.next_index += 1;
                return Some(record);
            }
            self.current = self.stores.next();
        }
    }
}

impl RecordSource for Stores {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

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
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use serde_json::Value;

use crate::ingest::sqlite::{open_store, TempStore};
use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};
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

/// How long a read waits for a writer's lock before it reports the store as locked.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// True when the tables of the store at `conn` are this schema's: `sessions`, and `messages`
/// with `session_id`, `role` and `parts` columns.
pub fn has_schema(conn: &Connection) -> bool {
    let messages = columns(conn, "messages").unwrap_or_default();
    let sessions = columns(conn, "sessions").unwrap_or_default();
    sessions.iter().any(|c| c == "id")
        && ["id", "session_id", "role", "parts"]
            .iter()
            .all(|c| messages.iter().any(|m| m == c))
}

/// The column names of `table`, in order (empty when there is no such table).
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// One session row: its `rowid`, id and parent (its other columns are read when its record is
/// made, so that the sessions listed up front stay small however many the store holds).
struct SessionRow {
    rowid: i64,
    id: String,
    parent: Option<String>,
}

/// The sessions of one store, one record each (numbered by [`Stores`]).
pub struct SessionRecords {
    conn: Option<Connection>,
    /// The private copy of a store whose log was copied to be read (kept until done).
    _copy: Option<TempStore>,
    input: Arc<str>,
    file: Arc<str>,
    version: i64,
    sessions: std::vec::IntoIter<SessionRow>,
    /// The sub-sessions of each session that has some, in `rowid` order.
    children: foldhash::HashMap<String, Vec<String>>,
    has_files: bool,
    message_columns: Vec<String>,
    max_record_bytes: usize,
    /// Records still to hand out before (or instead of) the sessions: an error reading the
    /// store.
    pending: std::collections::VecDeque<RawRecord>,
    /// True once the check for messages of no session ran.
    orphans_checked: bool,
    bytes: u64,
}

/// A problem reading the store: the table it is in, and SQLite's words.
fn table_error(table: &str, e: impl std::fmt::Display) -> String {
    format!("cannot read the Crush/OpenCode store: table {table}: {e}")
}

impl SessionRecords {
    /// Opens the store at `path` (found in the directory `input`, or `input` itself). Problems with the store itself (it cannot be opened, a table
    /// cannot be read, an unknown schema version) become an error record rather than an
    /// `Err`, so that they are reported as a rejected record naming the file.
    pub fn open(
        input: &str,
        path: &str,
        max_record_bytes: usize,
    ) -> std::io::Result<SessionRecords> {
        let bytes = std::fs::metadata(path)?.len();
        let mut records = SessionRecords {
            conn: None,
            _copy: None,
            input: Arc::from(input),
            file: Arc::from(path),
            version: 0,
            sessions: Vec::new().into_iter(),
            children: foldhash::HashMap::default(),
            has_files: false,
            message_columns: Vec::new(),
            max_record_bytes,
            pending: std::collections::VecDeque::new(),
            orphans_checked: false,
            bytes,
        };
        let mut copy = None;
        let opened = open_store(Path::new(path), &mut copy)
            .map_err(|e| format!("cannot open the Crush/OpenCode store: {e}"))
            .and_then(|conn| {
                conn.busy_timeout(BUSY_WAIT)
                    .map_err(|e| table_error("sqlite_master", e))?;
                Ok(conn)
            });
        let conn = match opened {
            Ok(conn) => conn,
            Err(e) => {
                records.fail(1, FrameError::Read(e));
                return Ok(records);
            }
        };
        match records.read_head(&conn) {
            Ok(()) => {
                records.conn = Some(conn);
                records._copy = copy;
            }
            Err(e) => records.fail(1, e),
        }
        Ok(records)
    }

    /// Reads the schema version, the columns and the session rows.
    fn read_head(&mut self, conn: &Connection) -> Result<(), FrameError> {
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
            .map_err(|e| FrameError::Read(table_error("sqlite_master", e)))?;
        if !has_schema(conn) {
            let tables = columns(conn, "messages")
                .map_err(|e| FrameError::Read(table_error("messages", e)))?;
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
        self.version = schema_version(conn)?;
        self.message_columns =
            columns(conn, "messages").map_err(|e| FrameError::Read(table_error("messages", e)))?;
        self.has_files = columns(conn, "files")
            .map_err(|e| FrameError::Read(table_error("files", e)))?
            .iter()
            .any(|c| c == "session_id");
        let sessions =
            read_sessions(conn).map_err(|e| FrameError::Read(table_error("sessions", e)))?;
        for s in &sessions {
            if let Some(parent) = &s.parent {
                let subs = self.children.entry(parent.clone()).or_default();
                subs.push(s.id.clone());
            }
        }
        self.sessions = sessions.into_iter();
        Ok(())
    }

    /// Queues an error record at `line` (a row id, or 1 for the store as a whole).
    fn fail(&mut self, line: u64, error: FrameError) {
        self.pending.push_back(RawRecord {
            provenance: self.provenance(line),
            bytes: Vec::new(),
            error: Some(error),
        });
    }

    fn provenance(&self, line: u64) -> Provenance {
        Provenance {
            input: self.input.clone(),
            file: self.file.clone(),
            line,
            index: 0,
        }
    }

    /// The record of session `s`: its bundle, or the error reading its messages.
    fn session_record(&self, conn: &Connection, s: &SessionRow) -> RawRecord {
        let line = u64::try_from(s.rowid).unwrap_or(0);
        RawRecord::assembled(
            self.provenance(line),
            self.bundle(conn, s),
            self.max_record_bytes,
        )
    }

    /// `{"crush_session": true, "schema_version", "session", "sub_sessions", "files",
    /// "messages"}`; each message's columns, with `parts` the JSON text it holds (a string
    /// when it is not JSON).
    fn bundle(&self, conn: &Connection, s: &SessionRow) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(MARKER.as_bytes());
        // Writing to a `Vec` cannot fail.
        let _ = write!(
            out,
            "\":true,\"schema_version\":{},\"session\":",
            self.version
        );
        let fields = session_fields(conn, s.rowid).map_err(|e| table_error("sessions", e))?;
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
                .map_err(|e| table_error("files", e))?;
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
        let mut stmt = conn
            .prepare_cached(&sql)
            .map_err(|e| table_error("messages", e))?;
        let mut rows = stmt
            .query([&s.id])
            .map_err(|e| table_error("messages", e))?;
        let mut first = true;
        while let Some(row) = rows.next().map_err(|e| table_error("messages", e))? {
            if !first {
                out.push(b',');
            }
            first = false;
            self.message(row, &mut out)
                .map_err(|e| table_error("messages", e))?;
        }
        out.extend_from_slice(b"]}");
        Ok(out)
    }

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

    /// Counts the messages whose session is not in `sessions` (which the sessions' records do
    /// not hold): an error record when there are any.
    fn check_orphans(&mut self) {
        self.orphans_checked = true;
        let Some(conn) = &self.conn else { return };
        let counted: rusqlite::Result<i64> = conn.query_row(
            "SELECT count(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)",
            [],
            |r| r.get(0),
        );
        match counted {
            Ok(0) => {}
            Ok(n) => self.fail(
                1,
                FrameError::Invalid(format!(
                    "table messages: {n} messages belong to no session of table sessions; they \
                     are not converted"
                )),
            ),
            Err(e) => self.fail(1, FrameError::Read(table_error("messages", e))),
        }
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
        .map_err(|e| FrameError::Read(table_error("goose_db_version", e)))?
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

/// Every session row, by `rowid`, its columns as JSON.
fn read_sessions(conn: &Connection) -> rusqlite::Result<Vec<SessionRow>> {
    let parent = match columns(conn, "sessions")?
        .iter()
        .any(|c| c == "parent_session_id")
    {
        true => "parent_session_id",
        false => "NULL",
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT rowid, id, {parent} FROM sessions ORDER BY rowid"
    ))?;
    let rows = stmt.query_map([], |row| {
        let text = |i: usize| -> rusqlite::Result<Option<String>> {
            Ok(match row.get_ref(i)? {
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                _ => None,
            })
        };
        Ok(SessionRow {
            rowid: row.get(0)?,
            id: text(1)?.unwrap_or_default(),
            parent: text(2)?.filter(|p| !p.is_empty()),
        })
    })?;
    rows.collect()
}

/// The columns of session `rowid`, as JSON.
fn session_fields(
    conn: &Connection,
    rowid: i64,
) -> rusqlite::Result<serde_json::Map<String, Value>> {
    let mut stmt = conn.prepare_cached("SELECT * FROM sessions WHERE rowid = ?1")?;
    let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    stmt.query_row([rowid], |row| {
        let mut fields = serde_json::Map::new();
        for (i, name) in names.iter().enumerate() {
            fields.insert(name.clone(), json_of(row.get_ref(i)?));
        }
        Ok(fields)
    })
}

/// A SQLite value as JSON: a blob as `{"blob_bytes": n}` (no column of the schema holds one),
/// a real that is not finite as `null`.
fn json_of(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => serde_json::json!({ "blob_bytes": b.len() }),
    }
}

impl Iterator for SessionRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        if let Some(r) = self.pending.pop_front() {
            return Some(r);
        }
        match (self.sessions.next(), self.conn.as_ref()) {
            (Some(s), Some(conn)) => Some(self.session_record(conn, &s)),
            _ if !self.orphans_checked => {
                self.check_orphans();
                self.pending.pop_front()
            }
            _ => None,
        }
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
            .map(|p| SessionRecords::open(input, p, max_record_bytes))
            .collect::<std::io::Result<Vec<_>>>()?;
        let bytes = stores.iter().map(|s| s.bytes).sum();
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

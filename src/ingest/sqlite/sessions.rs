//! Reading an agent's SQLite store one session at a time, for the readers of Crush, OpenCode,
//! Goose and Hermes: the store opened read-only ([`Store`]), the sessions listed up front
//! (small: their ids), each session's rows read when its record is asked for (so memory holds
//! one session at a time) and assembled into one record with [`RawRecord::assembled`] (so
//! `--max-record-bytes` holds), and errors naming the file (the record's provenance) and the
//! table ([`TableError`]).
//!
//! A reader implements [`SessionReader`] (what one session's record is, and which line of the
//! store it stands for); [`SessionSource`] hands out the records.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use serde_json::{Map, Value};

use super::{open_store, TempStore};
use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};

/// How long a read waits for a writer's lock before it reports the store as locked.
pub(crate) const BUSY_WAIT: Duration = Duration::from_secs(5);

/// A store opened with [`open_store`], and the private copy it is read from when there is one
/// (kept as long as the connection).
pub(crate) struct Store {
    pub conn: Connection,
    _copy: Option<TempStore>,
}

impl Store {
    /// Opens the store at `path` read-only (see [`open_store`]).
    pub fn open(path: &Path) -> rusqlite::Result<Store> {
        let mut copy = None;
        let conn = open_store(path, &mut copy)?;
        Ok(Store { conn, _copy: copy })
    }
}

/// A problem reading a store: the table it is in, and SQLite's words.
#[derive(Debug)]
pub(crate) struct TableError {
    pub table: String,
    pub error: String,
}

/// Names the table of a failed read (`.in_table("messages")?`).
pub(crate) trait InTable<T> {
    /// The error, if any, as a [`TableError`] of `table`.
    fn in_table(self, table: &str) -> Result<T, TableError>;
}

impl<T, E: std::fmt::Display> InTable<T> for Result<T, E> {
    fn in_table(self, table: &str) -> Result<T, TableError> {
        self.map_err(|e| TableError {
            table: table.to_owned(),
            error: e.to_string(),
        })
    }
}

/// The column names of `table`, in order (empty when there is no such table).
pub(crate) fn table_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// What a store lacks of the tables and columns a reader needs.
pub(crate) struct Missing {
    pub table: &'static str,
    /// The first column it lacks, with the columns the table has; `None` when there is no
    /// such table.
    pub column: Option<(&'static str, Vec<String>)>,
}

/// The first table or column of `required` (tables with the columns each must have) the store
/// lacks, if any.
pub(crate) fn missing(
    conn: &Connection,
    required: &[(&'static str, &[&'static str])],
) -> Result<Option<Missing>, TableError> {
    for &(table, needed) in required {
        let have = table_columns(conn, table).in_table(table)?;
        if have.is_empty() {
            return Ok(Some(Missing {
                table,
                column: None,
            }));
        }
        if let Some(&c) = needed.iter().find(|c| !have.iter().any(|h| h == *c)) {
            return Ok(Some(Missing {
                table,
                column: Some((c, have)),
            }));
        }
    }
    Ok(None)
}

/// True when the store has every table and column of `required`.
pub(crate) fn has_columns(conn: &Connection, required: &[(&'static str, &[&'static str])]) -> bool {
    matches!(missing(conn, required), Ok(None))
}

/// A SQLite value as JSON: a blob as `{"blob_bytes": n}` (no column of the stores holds one),
/// a real that is not finite as `null`.
pub(crate) fn json_of(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => serde_json::json!({ "blob_bytes": b.len() }),
    }
}

/// An id column's value as text (a number as its digits); `None` for null or a blob.
pub(crate) fn id_text(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

/// The ids a query's first column gives (see [`id_text`]; none is the empty id).
pub(crate) fn read_ids(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<String>> {
    let mut q = conn.prepare(sql)?;
    let ids = q.query_map([], |r| Ok(id_text(r.get_ref(0)?).unwrap_or_default()))?;
    ids.collect()
}

/// A row as an object of its columns, each as `value` makes it (`None`: the column left out).
pub(crate) fn row_object(
    row: &Row<'_>,
    value: impl Fn(&str, ValueRef<'_>) -> Option<Value>,
) -> rusqlite::Result<Map<String, Value>> {
    let stmt = row.as_ref();
    let mut out = Map::new();
    for i in 0..stmt.column_count() {
        let name = stmt.column_name(i)?;
        if let Some(v) = value(name, row.get_ref(i)?) {
            out.insert(name.to_owned(), v);
        }
    }
    Ok(out)
}

/// The ids of the `sessions` table (ordered by `order`), then those of the sessions that only
/// `messages` names (messages whose session has no row: read as sessions of their own).
pub(crate) fn ids_with_orphans(conn: &Connection, order: &str) -> Result<Vec<String>, TableError> {
    let mut ids = read_ids(conn, &format!("SELECT id FROM sessions ORDER BY {order}"))
        .in_table("sessions")?;
    ids.extend(
        read_ids(
            conn,
            "SELECT DISTINCT session_id FROM messages \
             WHERE session_id NOT IN (SELECT id FROM sessions) ORDER BY session_id",
        )
        .in_table("messages")?,
    );
    Ok(ids)
}

/// A session listed up front by its `rowid`, id and parent (its other columns are read with
/// its record).
pub(crate) struct SessionRow {
    pub rowid: i64,
    pub id: String,
    pub parent: Option<String>,
}

/// The sessions `sql` lists (its columns: `rowid`, id, parent id; see [`id_text`]; an empty
/// parent is none).
pub(crate) fn read_session_rows(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<SessionRow>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |row| {
        Ok(SessionRow {
            rowid: row.get(0)?,
            id: id_text(row.get_ref(1)?).unwrap_or_default(),
            parent: id_text(row.get_ref(2)?).filter(|p| !p.is_empty()),
        })
    })?;
    rows.collect()
}

/// The sub-sessions of each session of `rows` that has some, in the order of `rows`.
pub(crate) fn children(rows: &[SessionRow]) -> foldhash::HashMap<String, Vec<String>> {
    let mut children: foldhash::HashMap<String, Vec<String>> = foldhash::HashMap::default();
    for s in rows {
        if let Some(parent) = &s.parent {
            children
                .entry(parent.clone())
                .or_default()
                .push(s.id.clone());
        }
    }
    children
}

/// What a reader of one store's sessions knows: how to make one session's record.
pub(crate) trait SessionReader: Send {
    /// A session as listed up front.
    type Session: Send;

    /// The bytes of the record of session `s`.
    fn record(&self, conn: &Connection, s: &Self::Session) -> Result<Vec<u8>, TableError>;

    /// What the record of session `s` of the store `file` says when reading it failed.
    fn failed(&self, s: &Self::Session, file: &str, e: TableError) -> String;

    /// The line of the store session `s`, the `n`th (from 1), stands for in its record's
    /// provenance.
    fn line(&self, s: &Self::Session, n: u64) -> u64;

    /// Problems found once every session is read (rows that belong to no session), each an
    /// error record of the store.
    fn after_last(&self, _conn: &Connection) -> Vec<FrameError> {
        Vec::new()
    }
}

/// The sessions of one store, one record each, numbered from 0 (error records too).
pub(crate) struct SessionSource<R: SessionReader> {
    /// The store and its reader; `None` when the store could not be opened.
    open: Option<(Store, R)>,
    sessions: std::vec::IntoIter<R::Session>,
    input: Arc<str>,
    file: Arc<str>,
    /// Records to hand out before (or instead of) the sessions: an error opening the store.
    pending: VecDeque<RawRecord>,
    /// Sessions handed out so far.
    read: u64,
    /// True once [`SessionReader::after_last`] ran.
    finished: bool,
    next_index: u64,
    /// The store's size, counted once every session is read.
    bytes: u64,
    max_record_bytes: usize,
}

impl<R: SessionReader> SessionSource<R> {
    /// The sessions of the store `file` (found in the input `input`), of `bytes` bytes, read
    /// by `reader` from `store`.
    pub fn new(
        input: &str,
        file: &str,
        bytes: u64,
        (store, reader, sessions): (Store, R, Vec<R::Session>),
        max_record_bytes: usize,
    ) -> Self {
        SessionSource {
            open: Some((store, reader)),
            sessions: sessions.into_iter(),
            input: Arc::from(input),
            file: Arc::from(file),
            pending: VecDeque::new(),
            read: 0,
            finished: false,
            next_index: 0,
            bytes,
            max_record_bytes,
        }
    }

    /// The sessions of the store at `path` (found in the input `input`), `head` reading what
    /// is read up front. Problems with the store itself (it cannot be opened, a table cannot
    /// be read, a schema the reader does not know) become an error record rather than an
    /// `Err`, so that they are reported as a rejected record naming the file; `store` names
    /// the store in them (`the OpenCode store`), `table` says a [`TableError`] of the store.
    pub fn open_reporting(
        input: &str,
        path: &str,
        max_record_bytes: usize,
        store: &str,
        table: fn(TableError) -> FrameError,
        head: impl FnOnce(&Connection) -> Result<(R, Vec<R::Session>), FrameError>,
    ) -> std::io::Result<Self> {
        let bytes = std::fs::metadata(path)?.len();
        let opened = Store::open(Path::new(path))
            .map_err(|e| FrameError::Read(format!("cannot open {store}: {e}")))
            .and_then(|s| {
                s.conn
                    .busy_timeout(BUSY_WAIT)
                    .in_table("sqlite_master")
                    .map_err(table)?;
                let (reader, sessions) = head(&s.conn)?;
                Ok((s, reader, sessions))
            });
        Ok(match opened {
            Ok(opened) => SessionSource::new(input, path, bytes, opened, max_record_bytes),
            Err(e) => SessionSource::failed(input, path, bytes, e),
        })
    }

    /// A store that could not be read: one error record (at line 1), so that it is reported
    /// as a rejected record naming the file.
    pub fn failed(input: &str, file: &str, bytes: u64, error: FrameError) -> Self {
        let mut source = SessionSource {
            open: None,
            sessions: Vec::new().into_iter(),
            input: Arc::from(input),
            file: Arc::from(file),
            pending: VecDeque::new(),
            read: 0,
            finished: true,
            next_index: 0,
            bytes,
            max_record_bytes: 0,
        };
        source.fail(error);
        source
    }

    /// Queues an error record of the store as a whole (line 1).
    fn fail(&mut self, error: FrameError) {
        self.pending.push_back(RawRecord {
            provenance: self.provenance(1),
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

    /// The next record, not numbered yet.
    fn next_record(&mut self) -> Option<RawRecord> {
        if let Some(r) = self.pending.pop_front() {
            return Some(r);
        }
        let (store, reader) = self.open.as_ref()?;
        if let Some(s) = self.sessions.next() {
            self.read += 1;
            let built = reader
                .record(&store.conn, &s)
                .map_err(|e| reader.failed(&s, &self.file, e));
            let provenance = self.provenance(reader.line(&s, self.read));
            return Some(RawRecord::assembled(
                provenance,
                built,
                self.max_record_bytes,
            ));
        }
        if self.finished {
            return None;
        }
        self.finished = true;
        for e in reader.after_last(&store.conn) {
            self.fail(e);
        }
        self.pending.pop_front()
    }
}

impl<R: SessionReader> Iterator for SessionSource<R> {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        let mut record = self.next_record()?;
        record.provenance.index = self.next_index;
        self.next_index += 1;
        Some(record)
    }
}

impl<R: SessionReader> RecordSource for SessionSource<R> {
    fn bytes_read(&self) -> u64 {
        // The store is read session by session; its size is counted once all are read.
        if self.sessions.len() == 0 {
            self.bytes
        } else {
            0
        }
    }
}

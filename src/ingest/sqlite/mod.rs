//! Opening agents' SQLite stores (LedgerMind's `episodic.db`, the session databases of agents
//! that keep them in SQLite) read-only, so that reading one never writes beside it.

use std::io::{self, Read};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

pub(crate) mod sessions;

/// `path` with `suffix` appended to its name (`episodic.db-wal`).
fn sidecar(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// A `file:` URI of `path` with `params` (the characters a URI path cannot hold as they are
/// percent-encoded).
fn sqlite_uri(path: &Path, params: &str) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push('?');
    uri.push_str(params);
    uri
}

/// Opens a SQLite store read-only, so that reading it never writes to the database, its
/// write-ahead log (`-wal`) or its `-shm` file, nor creates a file beside them:
///
/// - without a `-wal` file (or with an empty one), every row is in the database file, which is
///   read as immutable (no locks, no `-shm`);
/// - with rows in the `-wal` (a live store in WAL mode, or one whose last writer did not
///   checkpoint), they are read through SQLite, so the log counts, with the `-shm` file opened
///   read-only (`readonly_shm`: SQLite reads from it while a writer keeps it up to date, else
///   rebuilds the index of the log in its own memory). A read-only connection never
///   checkpoints the log;
/// - with rows in the `-wal` but no `-shm` file, SQLite would have to create one beside the
///   store, so the database and its log are copied into a private temporary directory
///   (`copy`) and read there.
pub(crate) fn open_store(
    path: &Path,
    copy: &mut Option<TempStore>,
) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let logged = std::fs::metadata(sidecar(path, "-wal")).is_ok_and(|m| m.len() > 0);
    if !logged {
        return Connection::open_with_flags(sqlite_uri(path, "mode=ro&immutable=1"), flags);
    }
    if std::fs::symlink_metadata(sidecar(path, "-shm")).is_ok() {
        return Connection::open_with_flags(sqlite_uri(path, "mode=ro&readonly_shm=1"), flags);
    }
    let store = copy.insert(TempStore::copy(path).map_err(|e| {
        rusqlite::Error::ToSqlConversionFailure(
            format!("cannot copy the store and its -wal to read them: {e}").into(),
        )
    })?);
    Connection::open_with_flags(sqlite_uri(&store.db, "mode=ro"), flags)
}

/// True when the file at `path` starts with SQLite's header.
pub(crate) fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// The names of the tables of the SQLite store at `path`, sorted, SQLite's own (`sqlite_*`)
/// left out; the store is opened as `open_store` opens it, so nothing is written beside it.
/// `None` when it cannot be read.
pub(crate) fn tables(path: &Path) -> Option<Vec<String>> {
    let mut copy = None;
    let conn = open_store(path, &mut copy).ok()?;
    let mut query = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )
        .ok()?;
    let names = query
        .query_map([], |row| row.get::<_, String>(0))
        .ok()?
        .collect::<rusqlite::Result<Vec<String>>>()
        .ok();
    names
}

/// The column names of `table` in the SQLite store at `path` (empty when it has no such
/// table), the store opened as `open_store` opens it. `None` when it cannot be read.
pub(crate) fn columns(path: &Path, table: &str) -> Option<Vec<String>> {
    let store = sessions::Store::open(path).ok()?;
    sessions::table_columns(&store.conn, table).ok()
}

/// A copy of a database and its `-wal` in a temporary directory of its own, removed on drop.
pub(crate) struct TempStore {
    dir: std::path::PathBuf,
    db: std::path::PathBuf,
}

impl TempStore {
    fn copy(path: &Path) -> io::Result<TempStore> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "trajkit-store-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)?;
        let store = TempStore {
            db: dir.join("store.db"),
            dir,
        };
        std::fs::copy(path, &store.db)?;
        std::fs::copy(sidecar(path, "-wal"), sidecar(&store.db, "-wal"))?;
        Ok(store)
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        // A copy left behind in the temporary directory is harmless.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

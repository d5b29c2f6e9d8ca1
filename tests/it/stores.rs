//! Building agents' SQLite stores for the tests of the store readers (Crush, OpenCode, Goose,
//! Hermes), and the checks those tests share: a store of any schema version, rows given by
//! column (the columns an older schema lacks left out), a store whose rows stay in its
//! write-ahead log, and its files copied the way a writer gone without a checkpoint leaves
//! them.

use std::path::Path;

use rusqlite::{Connection, ToSql};
use serde_json::Value;

use crate::common::{convert, validate_adp};

/// A new store at `path`: `batches` of SQL (tables, migrations, rows) run in order.
pub fn create_store(path: &Path, batches: &[&str]) -> Connection {
    let conn = Connection::open(path).expect("create");
    for sql in batches {
        conn.execute_batch(sql).expect("schema");
    }
    conn
}

/// Puts the store in WAL mode with no automatic checkpoint: rows written from now on stay in
/// its `-wal` file.
pub fn keep_in_log(conn: &Connection) {
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .expect("wal");
}

/// Inserts a row of `table` from `(column, value)` pairs, leaving out the columns the table
/// does not have (a store of an older schema version); the row's `rowid`.
pub fn insert(conn: &Connection, table: &str, row: &[(&str, &dyn ToSql)]) -> i64 {
    let have: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .and_then(|mut q| q.query_map([table], |r| r.get(0))?.collect())
        .expect("columns");
    let row: Vec<&(&str, &dyn ToSql)> = row
        .iter()
        .filter(|(c, _)| have.iter().any(|h| h == c))
        .collect();
    let names: Vec<&str> = row.iter().map(|(c, _)| *c).collect();
    let marks: Vec<String> = (1..=row.len()).map(|i| format!("?{i}")).collect();
    let values: Vec<&dyn ToSql> = row.iter().map(|(_, v)| *v).collect();
    conn.execute(
        &format!(
            "INSERT INTO {table} ({}) VALUES ({})",
            names.join(", "),
            marks.join(", ")
        ),
        values.as_slice(),
    )
    .unwrap_or_else(|e| panic!("insert into {table}: {e}"));
    conn.last_insert_rowid()
}

/// Converts `inputs` with `--from auto` and `extra`, asserting success, `format` detected and
/// valid ADP; the trajectories.
pub fn converted_as(format: &str, inputs: &[&Path], extra: &[&str]) -> Vec<Value> {
    let (code, out, stderr) = convert(inputs, None, extra);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("detected {format}")), "{stderr}");
    assert_eq!(validate_adp(&out), 0);
    out
}

/// The names of the files in `dir`, with their bytes.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| {
            let p = e.expect("entry").path();
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap_or_default())
        })
        .collect();
    out.sort();
    out
}

/// The store at `db` and its `-wal` copied into a directory of their own without the `-shm`
/// file (as a writer gone without a checkpoint leaves them), converted as `format`: asserts
/// that nothing was written or changed beside them; the trajectories.
pub fn converted_copy_of_log(format: &str, db: &Path) -> Vec<Value> {
    let copy = tempfile::tempdir().expect("dir");
    let name = db.file_name().expect("name").to_string_lossy().into_owned();
    let wal = format!("{name}-wal");
    std::fs::copy(db, copy.path().join(&name)).expect("copy");
    std::fs::copy(db.with_file_name(&wal), copy.path().join(&wal)).expect("copy");
    let before = snapshot(copy.path());
    let out = converted_as(format, &[&copy.path().join(&name)], &[]);
    assert_eq!(
        snapshot(copy.path()),
        before,
        "the store or its log was touched, or a file written beside them"
    );
    out
}

/// Overwrites the bytes `at` gives (from the file's length) of the store at `path` with
/// `byte`: a corrupt page.
pub fn overwrite(path: &Path, at: impl FnOnce(usize) -> std::ops::Range<usize>, byte: u8) {
    let mut bytes = std::fs::read(path).expect("read");
    let range = at(bytes.len());
    bytes[range].fill(byte);
    std::fs::write(path, &bytes).expect("write");
}

/// The first 64 bytes of the page in the middle of a file of `len` bytes (4 KiB pages).
pub fn middle_page(len: usize) -> std::ops::Range<usize> {
    let page = 4096;
    let start = (len / page / 2) * page;
    start..start + 64
}

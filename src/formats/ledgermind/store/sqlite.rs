//! The `events` table of a LedgerMind `episodic.db`, read into an index.

use std::path::Path;

use serde_json::{json, Value};

use super::index::Index;
use crate::ingest::sqlite::open_store;
use crate::json::{strict, Node};

/// Reads the `events` table of a SQLite file (see `open_store`) into an index whose texts
/// are the rows as JSON objects.
pub(super) fn read_sqlite(path: &Path) -> rusqlite::Result<(Index, Vec<u8>)> {
    let mut copy = None;
    let conn = open_store(path, &mut copy)?;
    let mut stmt = conn.prepare(
        "SELECT id, source, kind, content, context, timestamp, status, linked_id, link_strength \
         FROM events ORDER BY timestamp, id",
    )?;
    let mut rows = stmt.query([])?;
    let mut index = Index::default();
    let mut texts = Vec::new();
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let context: Option<String> = r.get(4)?;
        let context = context
            .as_deref()
            .map(|c| {
                // Text that is not JSON, or JSON that would lose data read as a `Value` (a
                // duplicate key, an integer past 64 bits), is kept as the text it is.
                strict::parse_value(c.as_bytes()).unwrap_or_else(|_| Value::String(c.to_owned()))
            })
            .unwrap_or(json!({}));
        let value = json!({
            "id": id,
            "source": r.get::<_, Option<String>>(1)?,
            "kind": r.get::<_, Option<String>>(2)?,
            "content": r.get::<_, Option<String>>(3)?,
            "context": context,
            "timestamp": r.get::<_, Option<String>>(5)?,
            "status": r.get::<_, Option<String>>(6)?,
            "linked_id": r.get::<_, Option<String>>(7)?,
            "link_strength": r.get::<_, Option<f64>>(8)?,
        });
        let offset = texts.len();
        // A `Value` always serializes.
        let _ = serde_json::to_writer(&mut texts, &value);
        let len = texts.len() - offset;
        let line = u64::try_from(id).unwrap_or(0);
        if index
            .push(&Node::from_value(&value), offset as u64, len, line)
            .is_none()
        {
            return Err(rusqlite::Error::ToSqlConversionFailure(
                format!("event {id} is too large").into(),
            ));
        }
    }
    Ok((index, texts))
}

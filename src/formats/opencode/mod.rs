//! OpenCode (sst/opencode, 1.2 on): its SQLite store `~/.local/share/opencode/opencode.db`
//! (Drizzle tables `session`, `message` and `part`, each message's and part's JSON in `data`),
//! read one session at a time by [`store`]; and the document `opencode export <id>` writes
//! (`{info, messages: [{info, parts}]}`). One trajectory per session (sub-sessions of the task
//! tool too, linked to the call that started them); the steps are built in `steps`. The Go
//! OpenCode's `.opencode/opencode.db` (tables `sessions` and `messages`) is `crush`'s. The
//! mapping is in docs/formats/opencode.md.

mod steps;
pub mod storage;
pub mod store;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, PartialSink};
use crate::formats::kit::not_a_unit;
use crate::formats::Format;
use crate::ingest::sqlite::{is_sqlite, open_store};
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::validate::check::parse_node;
use crate::validate::Diagnostic;

use store::has_schema;

/// Reads OpenCode's store and exports.
pub struct OpenCode;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &OpenCode,
    side: None,
};

/// The key marking a record built from a session of a store (or of a `storage/` folder).
pub const MARKER: &str = "opencode_session";

/// What a record that is no session is told.
const NOT_A_SESSION: &str = "not an OpenCode session (use --from opencode on opencode.db, on \
     ~/.local/share/opencode, or on the JSON `opencode export` writes)";

/// True when the SQLite file at `path` has OpenCode's tables.
fn is_store(path: &Path) -> bool {
    let mut copy = None;
    path.is_file()
        && is_sqlite(path)
        && open_store(path, &mut copy).is_ok_and(|conn| has_schema(&conn))
}

/// The store a data directory (`~/.local/share/opencode`) holds.
fn store_in(dir: &Path) -> Option<PathBuf> {
    Some(dir.join("opencode.db")).filter(|p| is_store(p))
}

/// The storage folder of files OpenCode kept before 1.2: `dir` itself, or its `storage/`.
fn storage_in(dir: &Path) -> Option<PathBuf> {
    [dir.to_owned(), dir.join("storage")]
        .into_iter()
        .find(|d| storage::is_storage(d))
}

/// True when `v` is a message of an export: `{info: {id, role}, parts: [...]}`.
fn is_export_message(v: &Value) -> bool {
    v["info"]["id"].is_string() && v["info"]["role"].is_string() && v["parts"].is_array()
}

impl Converter for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn description(&self) -> &'static str {
        "OpenCode (1.2 on): its SQLite store (~/.local/share/opencode/opencode.db) or `opencode export` JSON, one trajectory per session"
    }

    /// The document of `opencode export`: a session `info` with a string `id`, and
    /// `messages` each `{info: {id, role}, parts}`.
    fn sniff(&self, first: &Value) -> bool {
        first["info"]["id"].is_string()
            && first["messages"]
                .as_array()
                .is_some_and(|m| m.iter().all(is_export_message))
    }

    /// A SQLite file with OpenCode's tables (`session`, `message`, `part` with `data`); a
    /// directory holding one as `opencode.db` (OpenCode's data directory), or a storage folder
    /// of OpenCode before 1.2 (with `session/` and `message/`), or holding one as `storage/`.
    fn claims_path(&self, path: &Path) -> bool {
        if path.is_dir() {
            return store_in(path).is_some() || storage_in(path).is_some();
        }
        is_store(path)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let at = Path::new(path);
        let store = if at.is_dir() {
            match (store_in(at), storage_in(at)) {
                (Some(db), _) => db.to_string_lossy().into_owned(),
                (None, Some(folder)) => {
                    let max = opts.run.max_record_bytes;
                    return Some(Ok(Box::new(storage::StorageSessions::open(
                        path, &folder, max,
                    ))));
                }
                (None, None) => return None,
            }
        } else if is_sqlite(at) {
            path.to_owned()
        } else {
            // JSON (an export) is read as records.
            return None;
        };
        Some(boxed(store::open(path, &store, opts.run.max_record_bytes)))
    }

    fn each_partial(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
        to: &mut PartialSink<'_>,
    ) -> Option<Result<(), Vec<Diagnostic>>> {
        let mut slow = None;
        let made = parse_node(record, &mut slow)
            .map_err(|d| vec![*d])
            .and_then(|doc| {
                let store =
                    doc[MARKER].as_bool() == Some(true) && doc["source"].as_str() == Some("store");
                let export = doc["info"].is_object() && doc["messages"].as_array().is_some();
                if !store && !export {
                    return Err(not_a_unit(record, NOT_A_SESSION));
                }
                to(steps::to_partial(&doc, record, store)?)
            });
        Some(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_an_export_document_only() {
        let doc = json!({"info": {"id": "ses_1"}, "messages": [
            {"info": {"id": "msg_1", "role": "user"}, "parts": []}]});
        assert!(OpenCode.sniff(&doc));
        assert!(OpenCode.sniff(&json!({"info": {"id": "ses_1"}, "messages": []})));
        assert!(!OpenCode.sniff(&json!({"info": {"id": 1}, "messages": []})));
        assert!(!OpenCode.sniff(&json!({"info": {"id": "s"}, "messages": [
            {"role": "user", "content": "hi"}]})));
    }
}

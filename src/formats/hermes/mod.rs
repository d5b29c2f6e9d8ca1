//! Hermes Agent sessions (NousResearch's `hermes`): its SQLite store `~/.hermes/state.db`,
//! read one session at a time by [`store`], and the JSON lines `hermes sessions export` writes
//! (one session per line: the `sessions` row plus `messages`). Both give one record per
//! session in the export's shape; its steps are built in `steps.rs`. One trajectory per
//! session, id = the session's id. The mapping is in docs/formats/hermes.md.

mod steps;
pub mod store;

use std::io;
use std::path::Path;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions, PartialSink};
use crate::formats::kit::not_a_unit;
use crate::formats::Format;
use crate::ingest::sqlite::{columns, is_sqlite, tables};
use crate::ingest::{boxed, RawRecord, RecordSource};
use crate::validate::check::parse_node;
use crate::validate::Diagnostic;

/// Reads Hermes Agent's `state.db` and session exports.
pub struct Hermes;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Hermes,
    side: None,
};

/// True when `tables` are those of Hermes' store: `sessions` and `messages`, with Hermes'
/// record of its schema (`schema_version`, or `state_meta` in the stores that keep it there).
fn is_state_db(tables: &[String]) -> bool {
    let has = |t: &str| tables.iter().any(|n| n == t);
    has("sessions") && has("messages") && (has("schema_version") || has("state_meta"))
}

impl Converter for Hermes {
    fn name(&self) -> &'static str {
        "hermes"
    }

    fn description(&self) -> &'static str {
        "Hermes Agent sessions: its SQLite store (~/.hermes/state.db) or `hermes sessions export` JSON lines, one trajectory per session"
    }

    /// A session of `hermes sessions export`: a string `id` and a `messages` list whose items
    /// have a string `role` and name no other session as their `session_id`; and either one of
    /// them names this one, or the record has the row's string `source` and numeric
    /// `started_at` (a session with no messages).
    fn sniff(&self, first: &Value) -> bool {
        let id = &first["id"];
        let Some(messages) = first["messages"].as_array() else {
            return false;
        };
        let rows = messages
            .iter()
            .all(|m| m["role"].is_string() && m.get("session_id").is_none_or(|s| s == id));
        let named = messages.iter().any(|m| m["session_id"] == *id);
        let row = first["source"].is_string() && first["started_at"].is_number();
        id.is_string() && rows && (named || row) && first.get("class_").is_none()
    }

    /// A gateway transcript (`~/.hermes/sessions/*.jsonl`, a `session_meta` line then the
    /// session's messages) is not read: the store holds the same sessions.
    fn decline(&self, first: &Value) -> Option<String> {
        (first["role"] == "session_meta" && first.get("messages").is_none()).then(|| {
            "a Hermes gateway transcript (a `session_meta` line): convert ~/.hermes/state.db, which holds its session".to_owned()
        })
    }

    /// A SQLite file with Hermes' tables (`is_state_db`) whose messages have a `content`
    /// column (Goose's store has the same tables, its messages' text in `content_json`).
    fn claims_path(&self, path: &Path) -> bool {
        path.is_file()
            && is_sqlite(path)
            && tables(path).is_some_and(|t| is_state_db(&t))
            && columns(path, "messages").is_some_and(|c| c.iter().any(|c| c == "content"))
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        is_sqlite(Path::new(path)).then(|| boxed(store::open(path, opts.run.max_record_bytes)))
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
            .and_then(|session| {
                if session["messages"].as_array().is_none() || session["id"].is_null() {
                    return Err(not_a_unit(
                        record,
                        "not a Hermes session (a `sessions` row with `messages`: use --from hermes on state.db or on `hermes sessions export` output)",
                    ));
                }
                steps::to_partial(&session, record)
            })
            .and_then(to);
        Some(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sniffs_an_export_line_only() {
        let line = json!({"id": "s", "source": "cli", "started_at": 1.5,
            "messages": [{"id": 1, "session_id": "s", "role": "user", "content": "hi"}]});
        assert!(Hermes.sniff(&line));
        assert!(Hermes.sniff(&json!({"id": "s", "source": "cli", "started_at": 1, "messages": []})));
        let mut other = line.clone();
        other["messages"][0]["session_id"] = json!("t");
        assert!(!Hermes.sniff(&other));
        assert!(!Hermes.sniff(&json!({"id": "s", "messages": [{"role": "user", "content": "hi"}]})));
        assert!(Hermes.sniff(
            &json!({"id": "s", "messages": [{"session_id": "s", "role": "user", "content": "hi"}]})
        ));
        assert!(
            !Hermes.sniff(&json!({"id": "s", "source": "cli", "started_at": "x", "messages": []}))
        );
    }

    #[test]
    fn declines_a_gateway_transcript() {
        let meta = json!({"role": "session_meta", "tools": [], "model": "m"});
        assert!(!Hermes.sniff(&meta));
        assert!(Hermes
            .decline(&meta)
            .is_some_and(|w| w.contains("state.db")));
        assert!(Hermes
            .decline(&json!({"role": "user", "content": "hi"}))
            .is_none());
    }

    #[test]
    fn a_store_is_known_by_its_tables() {
        let t = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(is_state_db(&t(&[
            "messages",
            "schema_version",
            "sessions",
            "state_meta"
        ])));
        assert!(is_state_db(&t(&["messages", "sessions", "state_meta"])));
        // Crush's and OpenCode's stores have sessions and messages, and goose's migrations.
        assert!(!is_state_db(&t(&[
            "goose_db_version",
            "messages",
            "sessions",
            "files"
        ])));
    }
}

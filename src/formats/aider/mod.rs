//! Aider chat histories (`.aider.chat.history.md`, written into the repository Aider works
//! in): Markdown, not JSON. Each run of Aider appends a session that starts with
//! `# aider chat started at <time>`; one trajectory per session. The file is cut into
//! sessions by `reader`, a session's lines sorted into user turns, status lines and replies
//! by `blocks`, replies cut into prose and edits by `edits`, and the steps built by
//! `steps`. The mapping is in docs/formats/aider.md.
//!
//! `.aider.llm.history` (the requests Aider sent, each repeating the whole conversation, and
//! the model's replies) is read by `llm_history`: one trajectory per request that got a reply.

mod blocks;
mod chunk;
mod edits;
mod llm_history;
mod reader;
mod steps;

use std::io;
use std::path::Path;

use serde_json::{json, Value};

use crate::convert::{ConvertOptions, Converter, DuplicateIds, FormatOptions, LeftOut};
use crate::formats::kit::source_details;
use crate::formats::Format;
use crate::ingest::{boxed, without_compression, RawRecord, RecordSource};
use crate::model::{AdpVersion, JsonObject, Trajectory};
use crate::validate::Diagnostic;

/// Reads Aider chat histories.
pub struct Aider;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Aider,
    side: None,
};

/// The name Aider gives its chat history (`--chat-history-file`).
const CHAT_HISTORY: &str = ".aider.chat.history.md";
/// The name Aider gives its log of the prompts sent (`--llm-history-file`).
const LLM_HISTORY: &str = ".aider.llm.history";

/// The file name of `path`, without a compression suffix.
fn file_name(path: &Path) -> Option<&str> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(without_compression)
}

/// True when `path` is named as Aider's LLM history (`.aider.llm.history`, or ending so).
fn is_llm_history(path: &str) -> bool {
    file_name(Path::new(path)).is_some_and(|n| n.ends_with(LLM_HISTORY))
}

impl Converter for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }

    fn description(&self) -> &'static str {
        "Aider chat histories (.aider.chat.history.md, Markdown): one trajectory per session, edits as actions answered by Aider's \"Applied edit\" lines; Aider's LLM history (.aider.llm.history): one trajectory per request that got a reply"
    }

    /// Never from a first JSON record: a chat history is claimed by its name.
    fn sniff(&self, _first: &Value) -> bool {
        false
    }

    /// A file named `.aider.chat.history.md` (or ending so: `repo__.aider.chat.history.md`), or
    /// one named `.aider.llm.history` (or ending so) whose first line is `TO LLM <time>`.
    fn claims_path(&self, path: &Path) -> bool {
        path.is_file()
            && file_name(path).is_some_and(|n| {
                n.ends_with(CHAT_HISTORY)
                    || (n.ends_with(LLM_HISTORY) && llm_history::starts_as_log(path))
            })
    }

    fn decline_path(&self, path: &Path) -> Option<String> {
        file_name(path)
            .filter(|n| n.ends_with(LLM_HISTORY) && !llm_history::starts_as_log(path))
            .map(|_| {
                "named as Aider's LLM history, but its first line is not `TO LLM <time>`".to_owned()
            })
    }

    /// An LLM history met while walking a directory, beside the chat history of the same
    /// session (`X.aider.llm.history` and `X.aider.chat.history.md`): the walk reads the chat
    /// history only. Given itself, the LLM history is read.
    fn beside_conversation(&self, path: &Path) -> Option<&'static str> {
        let name = file_name(path)?;
        let chat = format!("{}{CHAT_HISTORY}", name.strip_suffix(LLM_HISTORY)?);
        ["", ".gz", ".zst"]
            .iter()
            .any(|z| path.with_file_name(format!("{chat}{z}")).is_file())
            .then_some("Aider's LLM history beside the chat history of the same session, which is read instead (each request repeats the conversation); give the LLM history itself to read it")
    }

    fn duplicate_ids(&self) -> Option<DuplicateIds> {
        Some(DuplicateIds::Suffix)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let limit = opts.run.max_record_bytes;
        if is_llm_history(path) {
            return Some(boxed(llm_history::Records::open(path, limit)));
        }
        Some(boxed(reader::SessionRecords::open(path, limit)))
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        if is_llm_history(&record.provenance.file) {
            return llm_history::convert(record);
        }
        let refuse = |rule: &str, why: String| {
            vec![Diagnostic::error(&record.provenance, None, "", rule, why)]
        };
        let text = std::str::from_utf8(&record.bytes).map_err(|e| {
            refuse(
                "not-utf8",
                format!(
                    "the session is not UTF-8 text (invalid bytes at offset {})",
                    e.valid_up_to()
                ),
            )
        })?;
        let sessions = blocks::sessions(text, record.provenance.line);
        let mut out: Vec<(Trajectory, AdpVersion)> = Vec::new();
        let mut empty = Vec::new();
        let mut empty_lines = 0;
        for s in &sessions {
            let built = steps::build(s);
            if built.turns == 0 {
                if s.nonblank > 0 {
                    empty_lines += s.nonblank;
                    empty.push(json!({"line": s.line, "started_at": s.started_at}));
                }
                continue;
            }
            out.push((trajectory(record, s, built), AdpVersion::V1_5));
        }
        let Some((first, _)) = out.first_mut() else {
            let headers = sessions.iter().filter(|s| s.started_at.is_some()).count();
            return Err(if headers == 0 {
                refuse("not-a-unit", format!("not an Aider chat history: no `# aider chat started at` line and no `#### ` user turn (use --from aider on a {CHAT_HISTORY} file)"))
            } else {
                refuse("empty-trajectory", format!("no session here has a user turn ({headers} session(s), each empty or only commands)"))
            });
        };
        if !empty.is_empty() {
            if let Some(Value::Object(aider)) = first.details.get_mut("aider") {
                aider.insert("empty_sessions".into(), Value::Array(empty));
            }
            let mut extra = LeftOut::new("details.aider");
            extra.lines = empty_lines;
            if let Some(source) = first.details.get_mut("source") {
                let mut left =
                    LeftOut::read(source).unwrap_or_else(|| LeftOut::new("details.aider"));
                left.add(&extra);
                if let Some(s) = source.as_object_mut() {
                    s.remove("left_out");
                }
                left.add_to(source);
            }
        }
        Ok(out)
    }
}

/// The trajectory of a session that has steps.
fn trajectory(record: &RawRecord, s: &blocks::Session<'_>, built: steps::Built) -> Trajectory {
    let id = match s.started_at {
        Some(t) if !t.is_empty() => format!("aider-{}", t.replace(' ', "T")),
        _ => format!("aider-line-{}", s.line),
    };
    let mut source = source_details(
        "aider",
        record,
        json!({"started_at": s.started_at, "line": s.line}),
    );
    if let Some(o) = source.as_object_mut() {
        o.insert("line".into(), s.line.into());
    }
    built.left.add_to(&mut source);
    let mut details = JsonObject::new();
    details.insert("source".into(), source);
    details.insert("aider".into(), Value::Object(built.details));
    Trajectory::new(id, built.content, details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_chat_histories_by_name_and_llm_histories_by_name_and_first_line() {
        let dir = tempfile::tempdir().expect("dir"); // ok: test code
        let chat = dir.path().join("repo__.aider.chat.history.md");
        let llm = dir.path().join("repo__.aider.llm.history");
        let other = dir.path().join(".aider.llm.history");
        std::fs::write(&chat, "").expect("write"); // ok: test code
        std::fs::write(&llm, "TO LLM 2025-01-02T03:04:05\n-------\nUSER hi\n").expect("write"); // ok: test code
        std::fs::write(&other, "TO LLM yesterday\n").expect("write"); // ok: test code
        assert!(Aider.claims_path(&chat) && Aider.claims_path(&llm));
        assert!(!Aider.claims_path(&other) && !Aider.claims_path(dir.path()));
        assert!(Aider
            .decline_path(&other)
            .is_some_and(|w| w.contains("TO LLM <time>")));
        assert!(Aider.decline_path(&chat).is_none() && Aider.decline_path(&llm).is_none());
        // Beside the chat history of its session, a walk skips the LLM history.
        assert!(Aider.beside_conversation(&llm).is_some());
        assert!(Aider.beside_conversation(&other).is_none());
        assert!(Aider.beside_conversation(&chat).is_none());
    }
}

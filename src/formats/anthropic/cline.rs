//! What a Cline (Roo Code, Kilo Code) task's UI log adds to its conversation. The task folder
//! holds `api_conversation_history.json` (the conversation) and `ui_messages.json`, the UI's
//! log of `{ts, type: say | ask, say | ask, text, conversationHistoryIndex, modelInfo, ...}`
//! messages. Its `api_req_started` messages carry what the history lacks: each API request's
//! tokens (`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`), `cost`, model, and why a
//! request was cancelled or failed. Reading the history, the reader joins these (summed, and
//! per request) as the key `cline` of the conversation's record, which the trajectory keeps
//! in `details.anthropic.cline`. The UI's other messages repeat the conversation (text,
//! reasoning, tool and command displays) or are the UI's own (checkpoints, progress): they are
//! counted by kind, not kept.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::ingest::{RawRecord, RecordSource};

/// The UI log beside a task's conversation.
pub(super) const UI_MESSAGES: &str = "ui_messages.json";

/// The keys of an `api_req_started` message's `text` that are summed over the task.
const SUMMED: &[&str] = &["tokensIn", "tokensOut", "cacheWrites", "cacheReads", "cost"];

/// The UI log's summary for the task whose conversation is `history`, when a `ui_messages.json`
/// is beside it: `{ui_messages, api_requests, totals, models, timestamps, ui_message_kinds}`,
/// or `{ui_messages, error}` when the file cannot be read as a list of messages.
pub(super) fn ui_summary(history: &Path, max_bytes: usize) -> Option<Value> {
    let path = history.with_file_name(UI_MESSAGES);
    if !path.is_file() {
        return None;
    }
    let file = path.to_string_lossy().into_owned();
    let failed = |why: String| Some(json!({"ui_messages": file, "error": why}));
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if size > max_bytes as u64 {
        return failed(format!(
            "{size} bytes, more than the {max_bytes} a record may have"
        ));
    }
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) => return failed(format!("cannot be read: {e}")),
    };
    match serde_json::from_slice::<Value>(&text) {
        Ok(Value::Array(messages)) => Some(summarize(&file, &messages)),
        Ok(_) => failed("not a list of messages".to_owned()),
        Err(e) => failed(format!("not JSON: {e}")),
    }
}

/// The summary of the UI messages of file `file`.
fn summarize(file: &str, messages: &[Value]) -> Value {
    let mut requests = Vec::new();
    let mut totals = Map::new();
    let mut models: Vec<Value> = Vec::new();
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for m in messages {
        let kind = match (m["type"].as_str(), m["say"].as_str(), m["ask"].as_str()) {
            (Some(t), Some(k), _) | (Some(t), None, Some(k)) => format!("{t}:{k}"),
            (Some(t), None, None) => t.to_owned(),
            _ => "untyped".to_owned(),
        };
        if let Some(model) = m.get("modelInfo").filter(|v| v.is_object()) {
            if !models.contains(model) {
                models.push(model.clone());
            }
        }
        if kind != "say:api_req_started" {
            match kinds.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((kind, 1)),
            }
            continue;
        }
        requests.push(request(m, &mut totals));
    }
    if !requests.is_empty() {
        totals.insert("requests".into(), requests.len().into());
    }
    let stamps: Vec<&Value> = messages
        .iter()
        .map(|m| &m["ts"])
        .filter(|t| t.is_number())
        .collect();
    let mut out = Map::new();
    out.insert("ui_messages".into(), file.into());
    out.insert("totals".into(), Value::Object(totals));
    out.insert("api_requests".into(), Value::Array(requests));
    if !models.is_empty() {
        out.insert("models".into(), Value::Array(models));
    }
    if let (Some(first), Some(last)) = (stamps.first(), stamps.last()) {
        out.insert("timestamps".into(), json!({"first": first, "last": last}));
    }
    let kinds: Map<String, Value> = kinds.into_iter().map(|(k, n)| (k, n.into())).collect();
    out.insert("ui_message_kinds".into(), Value::Object(kinds));
    Value::Object(out)
}

/// One `api_req_started` message as `{ts, history_index, model, ...its text's fields but
/// request}` (the request's text is the conversation's user turn), its counts added to
/// `totals`. A `text` that is not a JSON object is kept as it is.
fn request(m: &Value, totals: &mut Map<String, Value>) -> Value {
    let mut r = Map::new();
    r.insert("ts".into(), m["ts"].clone());
    r.insert(
        "history_index".into(),
        m["conversationHistoryIndex"].clone(),
    );
    if let Some(model) = m.get("modelInfo") {
        r.insert("model".into(), model.clone());
    }
    let text = m["text"]
        .as_str()
        .and_then(|t| serde_json::from_str::<Value>(t).ok());
    match text {
        Some(Value::Object(fields)) => {
            for key in SUMMED {
                if let Some(n) = fields.get(*key).and_then(Value::as_f64) {
                    let sum = totals.get(*key).and_then(Value::as_f64).unwrap_or(0.0) + n;
                    let sum = if *key == "cost" {
                        json!(sum)
                    } else {
                        json!(sum as u64)
                    };
                    totals.insert((*key).to_owned(), sum);
                }
            }
            r.extend(fields.into_iter().filter(|(k, _)| k != "request"));
        }
        _ => {
            r.insert("text".into(), m["text"].clone());
        }
    }
    Value::Object(r)
}

/// The records of a task's conversation with the UI log's summary joined to the first: the
/// conversation of a file of bare messages is one record `{"messages": [...]}`, which gets the
/// key `cline` (a record of another shape is left as it is).
pub(super) struct Joined {
    pub inner: Box<dyn RecordSource>,
    pub summary: Option<Value>,
}

impl Iterator for Joined {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        let mut record = self.inner.next()?;
        if let Some(summary) = self.summary.take() {
            let head = b"{\"messages\":[";
            if record.error.is_none() && record.bytes.starts_with(head) {
                let mut key = b"\"cline\":".to_vec();
                key.extend(serde_json::to_vec(&summary).unwrap_or_else(|_| b"null".to_vec()));
                key.push(b',');
                record.bytes.splice(1..1, key);
            }
        }
        Some(record)
    }
}

impl RecordSource for Joined {
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }
}

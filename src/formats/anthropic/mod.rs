//! Conversations in the shape of the Anthropic Messages API: `messages` of role `user` or
//! `assistant` whose content is a string or a list of blocks (`text`, `image`, `document`,
//! `tool_use`, `tool_result`, `thinking`, `redacted_thinking`, the blocks of tools the API runs,
//! ...), with an optional top-level `system` and `tools`: a Messages API request or a dataset
//! row, JSON lines of them, or a file that is one bare list of messages (Cline's, Roo Code's
//! and Kilo Code's `api_conversation_history.json`). The steps are built in `steps.rs`; the
//! mapping is in docs/formats/anthropic.md.

mod cline;
pub(crate) mod steps;

use std::io;
use std::path::Path;

use serde_json::Value;

use crate::convert::{ConvertOptions, Converter, FormatOptions};
use crate::formats::bundle::open_chat;
use crate::formats::chat::{
    chat_trajectory, extend_details, has_messages_api_blocks, is_messages_api_chat, record_id,
};
use crate::formats::Format;
use crate::ingest::{RawRecord, RecordSource};
use crate::json::Node;
use crate::model::{AdpVersion, Trajectory};
use crate::validate::check::check_raw_node;
use crate::validate::schemas::RawSchema;
use crate::validate::Diagnostic;

/// The JSON Schema of raw `anthropic` records (`validate --schema anthropic`).
pub static SCHEMA: RawSchema = RawSchema::new(
    "anthropic",
    "id",
    &[(
        "https://trajkit.invalid/schemas/raw/anthropic.schema.json",
        include_str!("../../../schemas/raw/anthropic.schema.json"),
    )],
    &[],
);

/// Reads Anthropic Messages API conversations.
pub struct Anthropic;

/// The format in the registry: its converter (`join` reads no side files of it).
pub const FORMAT: Format = Format {
    converter: &Anthropic,
    side: None,
};

/// The file name Cline, Roo Code and Kilo Code give a task's conversation, in a folder named
/// after the task.
const TASK_HISTORY: &str = "api_conversation_history.json";

/// The files Cline, Roo Code and Kilo Code keep beside a task's conversation, none holding
/// one of its own: the UI's event log (`claude_messages.json` in the oldest versions), the
/// context manager's edits of the history, and the files and models the task used.
const BESIDE_TASK_HISTORY: &[&str] = &[
    "ui_messages.json",
    "claude_messages.json",
    "context_history.json",
    "task_metadata.json",
];

impl Converter for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    /// A Cline, Roo Code or Kilo Code task's conversation, by its file name: a task of text
    /// alone has none of the blocks detection knows this format by, and would be read as an
    /// OpenAI chat named after the file rather than the task.
    fn claims_path(&self, path: &Path) -> bool {
        path.file_name().is_some_and(|n| n == TASK_HISTORY) && path.is_file()
    }

    fn beside_conversation(&self, path: &Path) -> Option<&'static str> {
        let name = path.file_name()?.to_str()?;
        let history = path.with_file_name(TASK_HISTORY);
        (BESIDE_TASK_HISTORY.contains(&name) && history.is_file()).then_some(
            "a Cline task's UI log, context edits or metadata; its conversation is the api_conversation_history.json beside it (whose trajectory joins the UI log's API request costs and tokens)",
        )
    }

    fn raw_schemas(&self) -> &'static [&'static RawSchema] {
        static SCHEMAS: [&RawSchema; 1] = [&SCHEMA];
        &SCHEMAS
    }

    fn description(&self) -> &'static str {
        "Anthropic Messages API conversations: text, tool_use / tool_result, thinking and image blocks (requests, dataset rows, or a file of messages such as Cline's api_conversation_history.json)"
    }

    /// A chat record with a top-level `system` or Messages API blocks (`tool_use`,
    /// `tool_result`, `thinking`, an `image` with a `source`, ...), or a bare message holding
    /// such blocks, the first of a file that is one conversation ([`is_messages_api_chat`];
    /// `openai` declines exactly these).
    fn sniff(&self, first: &Value) -> bool {
        is_messages_api_chat(first)
    }

    /// A file of bare messages whose first message is text only (a task's first prompt) is an
    /// OpenAI chat to [`Converter::sniff`]; it is this format's when a later message holds
    /// Messages API blocks.
    fn sniff_chat(&self, messages: &[Value]) -> bool {
        messages.iter().any(has_messages_api_blocks)
    }

    fn open_source(
        &self,
        path: &str,
        opts: &ConvertOptions,
    ) -> Option<io::Result<Box<dyn RecordSource>>> {
        let max = opts.run.max_record_bytes;
        let history = Path::new(path);
        if history.file_name().is_none_or(|n| n != TASK_HISTORY) {
            return Some(open_chat(path, max));
        }
        // A task's conversation: what the UI log beside it adds is joined to it.
        let summary = cline::ui_summary(history, max);
        Some(
            open_chat(path, max)
                .map(|inner| Box::new(cline::Joined { inner, summary }) as Box<dyn RecordSource>),
        )
    }

    fn convert(
        &self,
        record: &RawRecord,
        _map: &FormatOptions,
    ) -> Result<Vec<(Trajectory, AdpVersion)>, Vec<Diagnostic>> {
        let mut slow = None;
        let value = check_raw_node(record, &SCHEMA, true, &mut slow)?;
        let id = conversation_id(&value, record);
        let built = steps::build(&value, record.provenance.line, "details.anthropic").map_err(
            |(pointer, message)| {
                vec![Diagnostic::error(
                    &record.provenance,
                    Some(&id),
                    pointer,
                    "chat-structure",
                    message,
                )]
            },
        )?;
        let mut traj = chat_trajectory(
            "anthropic",
            record,
            &value,
            id,
            built.content,
            built.tools,
            &["messages", "tools", "system"],
        );
        extend_details(&mut traj.details, "anthropic", built.notes.into_map());
        if let Some(source) = traj.details.get_mut("source") {
            built.left.add_to(source);
        }
        Ok(vec![(traj, AdpVersion::V1_5)])
    }
}

/// The trajectory id: the record's `id` ([`record_id`]); without one, a task's
/// `api_conversation_history.json` is named after its folder (the task id: every task's file
/// has the same name), any other record `{file name}#{index}`.
fn conversation_id(value: &Node, record: &RawRecord) -> String {
    let id = &value["id"];
    let named = matches!(id, Node::String(s) if !s.is_empty()) || id.is_number();
    let mut parts = record.provenance.file.rsplit('/');
    if let (false, 0, Some(TASK_HISTORY), Some(task)) =
        (named, record.provenance.index, parts.next(), parts.next())
    {
        if !task.is_empty() {
            return task.to_owned();
        }
    }
    record_id(id, record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::openai::OpenAi;
    use crate::ingest::Provenance;
    use crate::model::Step;
    use serde_json::json;

    fn record(v: &Value, file: &str) -> RawRecord {
        RawRecord {
            provenance: Provenance {
                input: file.into(),
                file: file.into(),
                line: 1,
                index: 0,
            },
            bytes: serde_json::to_vec(v).unwrap_or_default(),
            error: None,
        }
    }

    fn convert_at(v: &Value, file: &str) -> Result<Trajectory, Vec<Diagnostic>> {
        Anthropic
            .convert(&record(v, file), &FormatOptions::default())
            .map(|mut t| t.remove(0).0)
    }

    fn convert(v: &Value) -> Trajectory {
        match convert_at(v, "chats/demo.jsonl") {
            Ok(t) => t,
            Err(d) => panic!("{d:?}"),
        }
    }

    fn classes(t: &Trajectory) -> Vec<&'static str> {
        t.content.iter().map(Step::class_name).collect()
    }

    fn steps(t: &Trajectory) -> Vec<Value> {
        t.content
            .iter()
            .map(|s| serde_json::to_value(s).unwrap_or_default())
            .collect()
    }

    fn left_out(t: &Trajectory) -> Value {
        t.details["source"]["left_out"].clone()
    }

    /// Exactly one of `anthropic` and `openai` claims a chat: Messages API blocks or a
    /// top-level `system` make it this format's, a text chat stays OpenAI's.
    #[test]
    fn claims_what_openai_declines() {
        let ours = [
            json!({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"messages": [
                {"role": "user", "content": "ls"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash", "input": {}}]}
            ]}),
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}),
            json!({"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}),
        ];
        let theirs = [
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            json!({"system": null, "messages": [{"role": "user", "content": "hi"}]}),
            json!({"role": "user", "content": "hi"}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}),
            json!({"messages": [{"role": "assistant", "content": null,
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}]}),
        ];
        for v in &ours {
            assert!(Anthropic.sniff(v) && !OpenAi.sniff(v), "{v}");
        }
        for v in &theirs {
            assert!(!Anthropic.sniff(v) && OpenAi.sniff(v), "{v}");
        }
        let neither = [
            json!({"system": "x", "messages": [], "trajectory_format": "mini-swe-agent-1.1"}),
            json!([{"ts": 1, "type": "say", "say": "text", "text": "hi"}]),
            json!({"ts": 1, "type": "say", "say": "text", "text": "hi"}),
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result"}]}}),
        ];
        for v in &neither {
            assert!(!Anthropic.sniff(v), "{v}");
        }
        // A file of messages whose first is text only is ours when a later one has blocks.
        let chat = |v: Value| v.as_array().cloned().unwrap_or_default();
        assert!(Anthropic.sniff_chat(&chat(json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>fix</task>"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "read_file", "input": {}}]}
        ]))));
        assert!(!Anthropic.sniff_chat(&chat(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
        ]))));
    }

    /// Calls become actions linked to their results (in call order, whatever the order of the
    /// result blocks), thinking their reasoning, the text before a call its description; a
    /// bash call with only a command is bash code; `is_error` is listed.
    #[test]
    fn calls_link_to_their_results_with_reasoning_and_errors() {
        let t = convert(&json!({
            "id": "c1",
            "model": "claude-x",
            "system": [{"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "bash", "input_schema": {"type": "object"}}, {"name": "read", "input_schema": {}}],
            "messages": [
                {"role": "user", "content": "Fix it."},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": "s"},
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x"}},
                    {"type": "tool_use", "id": "b", "name": "bash", "input": {"command": "ls"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "x y"}]},
                    {"type": "tool_result", "tool_use_id": "a", "content": "no such file", "is_error": true},
                    {"type": "text", "text": "Go on."}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
            ]
        }));
        assert_eq!(
            classes(&t),
            [
                "text_observation",
                "text_observation",
                "api_action",
                "code_action",
                "text_observation",
                "text_observation",
                "text_observation",
                "message_action"
            ]
        );
        let s = steps(&t);
        assert_eq!(s[0]["name"], "system");
        assert_eq!(s[0]["content"], "Be careful.");
        assert_eq!(s[2]["description"], "Reading both.");
        assert_eq!(s[2]["reasoning_content"], "Look first.");
        assert_eq!(s[2]["kwargs"], json!({"path": "x"}));
        assert_eq!(
            (&s[2]["tool_call_id"], &s[3]["tool_call_id"]),
            (&json!("a"), &json!("b"))
        );
        assert_eq!(s[3]["content"], "ls");
        assert_eq!(
            (&s[4]["tool_call_id"], &s[4]["name"]),
            (&json!("a"), &json!("read"))
        );
        assert_eq!(s[4]["content"], "no such file");
        assert_eq!(
            (&s[5]["tool_call_id"], &s[5]["content"]),
            (&json!("b"), &json!("x y"))
        );
        assert_eq!(
            (&s[6]["source"], &s[6]["content"]),
            (&json!("user"), &json!("Go on."))
        );
        let d = &t.details["anthropic"];
        assert_eq!(d["error_results"], json!(["a"]));
        assert_eq!(d["model"], "claude-x");
        assert_eq!(d["block_fields"][0]["pointer"], "/system/0");
        assert_eq!(d["block_fields"][1]["fields"], json!({"signature": "s"}));
        assert_eq!(
            t.available_custom_tools,
            Some(vec!["bash".into(), "read".into()])
        );
        assert_eq!(t.details["tools"][1]["name"], "read");
        // Every message gave a step: nothing is left out.
        assert!(
            t.details["source"].get("left_out").is_none(),
            "{:?}",
            t.details
        );
    }

    /// A call with no result right before an observation gets an empty result (ADP links a
    /// call followed by an observation); a last call with none stays unlinked; both are listed.
    #[test]
    fn calls_without_results_are_kept_and_listed() {
        let t = convert(&json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "<task>Read a</task>"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]},
            {"role": "user", "content": [{"type": "text", "text": "Stop, read b instead."}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "attempt_completion", "input": {"result": "ok"}}]}
        ]}));
        assert_eq!(
            classes(&t),
            [
                "text_observation",
                "api_action",
                "text_observation",
                "text_observation",
                "api_action"
            ]
        );
        let s = steps(&t);
        assert_eq!(
            (&s[1]["tool_call_id"], &s[2]["tool_call_id"]),
            (&json!("t1"), &json!("t1"))
        );
        assert_eq!(
            (&s[2]["content"], &s[2]["name"]),
            (&json!(""), &json!("read_file"))
        );
        assert_eq!(s[3]["source"], "user");
        assert!(s[4].get("tool_call_id").is_none());
        assert_eq!(
            t.details["anthropic"]["unanswered_calls"],
            json!([{"step": 1, "id": "t1", "empty_result": 2}, {"step": 4, "id": "t2"}])
        );
    }

    /// Blocks of a type no step holds are counted and kept with their pointer; a result
    /// without its call stays an unlinked observation; a role-less entry is counted as a line.
    #[test]
    fn what_no_step_holds_is_counted_and_kept() {
        let t = convert(&json!({"messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_result", "tool_use_id": "gone", "content": "late"},
                {"type": "container_upload", "file_id": "f1"}
            ]},
            {"type": "reasoning", "encrypted_content": "xx"},
            {"role": "assistant", "content": [
                {"type": "redacted_thinking", "data": "enc"},
                {"type": "text", "text": "Hello."},
                {"text": "no type"}
            ]},
            {"role": "assistant", "content": [
                {"type": "redacted_thinking", "data": "enc2"},
                {"type": "thinking", "thinking": "trailing"}
            ]}
        ]}));
        assert_eq!(
            classes(&t),
            ["text_observation", "text_observation", "message_action"]
        );
        let d = &t.details["anthropic"];
        assert_eq!(d["unlinked_results"][0]["id"], "gone");
        assert_eq!(d["unlinked_results"][0]["step"], 1);
        let pointers: Vec<&str> = d["unmapped"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u["pointer"].as_str())
            .collect();
        assert_eq!(
            pointers,
            [
                "/messages/0/content/2",
                "/messages/1",
                "/messages/2/content/0",
                "/messages/2/content/2",
                "/messages/3/content/0",
                "/messages/3/content/1"
            ]
        );
        let l = left_out(&t);
        assert_eq!(
            (&l["blocks"], &l["lines"], &l["values"]),
            (&json!(4), &json!(1), &json!(1))
        );
        assert_eq!(l["messages"], json!({"in": 3, "kept": 2}));
        assert_eq!(l["where"], "details.anthropic");
        assert_eq!(l["first"]["pointer"], "/messages/2/content/2");
    }

    /// Results of tools the API runs stand in their call's message, linked; images are image
    /// observations; a repeated call id gets a link id of its own.
    #[test]
    fn server_tools_images_and_repeated_ids() {
        let t = convert(&json!({"messages": [
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}, "title": "n.txt"}
            ]},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [{"type": "web_search_result", "url": "u"}]},
                {"type": "tool_use", "id": "x", "name": "f", "input": {}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": [
                {"type": "text", "text": "shot"},
                {"type": "image", "source": {"type": "url", "url": "https://e.invalid/a.png"}}
            ]}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "again"}]}
        ]}));
        let s = steps(&t);
        assert_eq!(s[0]["content"], "data:image/png;base64,AAA");
        assert_eq!(
            (&s[1]["name"], &s[1]["content"]),
            (&json!("n.txt"), &json!("notes"))
        );
        assert_eq!(
            (&s[2]["function"], &s[3]["tool_call_id"]),
            (&json!("web_search"), &json!("s1"))
        );
        assert_eq!(
            s[3]["content"],
            r#"[{"type":"web_search_result","url":"u"}]"#
        );
        assert_eq!(
            (&s[5]["tool_call_id"], &s[5]["content"]),
            (&json!("x"), &json!("shot"))
        );
        assert_eq!(
            (&s[6]["class_"], &s[6]["source"]),
            (&json!("image_observation"), &json!("environment"))
        );
        assert_eq!(
            (&s[7]["tool_call_id"], &s[8]["tool_call_id"]),
            (&json!("x#2"), &json!("x#2"))
        );
        assert_eq!(
            t.details["anthropic"]["renamed_call_ids"],
            json!([{"step": 7, "id": "x", "as": "x#2"}])
        );
    }

    /// Strings in a list of blocks are text blocks, Roo Code's `reasoning` blocks reasoning;
    /// tools may be a JSON text holding the list.
    #[test]
    fn strings_among_blocks_and_tools_as_text() {
        let t = convert(&json!({
            "tools": "[{\"name\": \"f\"}]",
            "system": ["Be brief."],
            "messages": [
                {"role": "user", "content": ["hi", {"type": "text", "text": "there"}]},
                {"role": "assistant", "content": [
                    {"type": "reasoning", "text": "f knows.", "summary": []},
                    {"type": "thinking", "thinking": "", "signature": "omitted"},
                    "Let me call f.",
                    {"type": "tool_use", "id": "c", "name": "f", "input": "{\"x\": 1}"}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": ["one", {"type": "text", "text": "two"}]}]}
            ]
        }));
        let s = steps(&t);
        assert_eq!(s[0]["content"], "Be brief.");
        assert_eq!(
            (&s[1]["content"], &s[2]["content"]),
            (&json!("hi"), &json!("there"))
        );
        assert_eq!(
            (&s[3]["description"], &s[3]["kwargs"]),
            (&json!("Let me call f."), &json!({"x": 1}))
        );
        assert_eq!(s[3]["reasoning_content"], "f knows.");
        assert_eq!(s[4]["content"], "one\ntwo");
        assert_eq!(t.available_custom_tools, Some(vec!["f".into()]));
        let bad = convert(
            &json!({"tools": "not a list", "messages": [{"role": "user", "content": "hi"}]}),
        );
        assert_eq!(bad.details["anthropic"]["unmapped"][0]["pointer"], "/tools");
        assert_eq!(left_out(&bad)["values"], 1);
    }

    /// An OpenAI chat given to this format is refused, naming the key and the format to use.
    #[test]
    fn openai_chats_are_refused() {
        let v = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
        ]});
        let err = convert_at(&v, "x.jsonl").err().unwrap_or_default();
        assert_eq!(err[0].pointer, "/messages/1/tool_calls");
        assert!(err[0].message.contains("--from openai"), "{:?}", err[0]);
        let empty = json!({"messages": [{"role": "assistant", "content": "hi", "tool_calls": []}]});
        assert!(convert_at(&empty, "x.jsonl").is_ok());
        let tool = json!({"messages": [{"role": "tool", "content": "x", "tool_call_id": "c"}]});
        assert!(convert_at(&tool, "x.jsonl").is_err());
    }

    /// A task's history (Cline, Roo Code, Kilo Code) is named after its folder; a record's `id`
    /// wins; other files give `{file}#{index}`.
    #[test]
    fn ids_of_records_and_task_histories() {
        let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
        let id = |v: &Value, file: &str| convert_at(v, file).map(|t| t.id).unwrap_or_default();
        assert_eq!(
            id(&chat, "tasks/1769053680585/api_conversation_history.json"),
            "1769053680585"
        );
        assert_eq!(
            id(&chat, "api_conversation_history.json"),
            "api_conversation_history.json#0"
        );
        assert_eq!(id(&chat, "data/rows.jsonl"), "rows.jsonl#0");
        let named = json!({"id": "r-7", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(id(&named, "tasks/1/api_conversation_history.json"), "r-7");
    }
}

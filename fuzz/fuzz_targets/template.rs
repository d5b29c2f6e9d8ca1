//! The chat-template renderer: the fuzz bytes as a template's text and, after a `\n%%\n`, the
//! messages it renders (a JSON array; a fixed conversation when they do not parse). Rendering
//! must end within its budget (libFuzzer's time and memory limits catch one that does not)
//! and never panic; an error is an expected outcome. The counting allocator is installed as in
//! the binary, so a rendering past its memory budget is refused as there.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use minijinja::value::Serde;
use minijinja::Value;
use trajkit::training::memory::Budgeted;
use trajkit::training::ChatTemplate;
use trajkit_fuzz::split_once;

#[global_allocator]
static GLOBAL: Budgeted<std::alloc::System> = Budgeted::new(std::alloc::System);

const MESSAGES: &str = r#"[{"role": "system", "content": "Be brief."},
{"role": "user", "content": "List the files."},
{"role": "assistant", "content": "", "reasoning_content": "ls will do",
 "tool_calls": [{"id": "c1", "type": "function",
   "function": {"name": "bash", "arguments": {"command": "ls"}}}]},
{"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "a.txt"},
{"role": "assistant", "content": "One file: a.txt."}]"#;

const TOOLS: &str = r#"[{"type": "function", "function": {"name": "bash",
"description": "Run a command", "parameters": {"type": "object",
"properties": {"command": {"type": "string"}}, "required": ["command"]}}}]"#;

fuzz_target!(|data: &[u8]| {
    let (source, messages) = split_once(data, b"\n%%\n");
    let Ok(source) = std::str::from_utf8(source) else {
        return;
    };
    let special = BTreeMap::from([
        ("bos_token".to_owned(), Value::from("<s>")),
        ("eos_token".to_owned(), Value::from("</s>")),
    ]);
    let Ok(template) = ChatTemplate::new(source, special) else {
        return;
    };
    let messages: serde_json::Value = serde_json::from_slice(messages)
        .ok()
        .filter(serde_json::Value::is_array)
        .unwrap_or_else(|| serde_json::from_str(MESSAGES).expect("the fixed messages parse"));
    let values: Vec<Value> = messages
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| Value::from(Serde(m)))
        .collect();
    let tools: serde_json::Value = serde_json::from_str(TOOLS).expect("the fixed tools parse");
    let tools = Value::from(Serde(&tools));
    for prompt in [false, true] {
        if let Ok(r) = template.render(&values, &tools, prompt) {
            for span in &r.spans {
                assert!(
                    span.start <= span.end && span.end <= r.text.len(),
                    "{span:?}"
                );
            }
        }
        let _ = template.render_text(&values, &tools, prompt);
    }
});

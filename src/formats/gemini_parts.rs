//! Gemini-style message parts (`@google/genai`'s `Part`: `{text, thought?}`, `{inlineData}`,
//! `{functionCall}`, `{functionResponse}`), as Gemini CLI and its fork Qwen Code record them:
//! texts, tool calls as actions, results as text, inline images.

use std::borrow::Cow;

use serde_json::Value;

use crate::json::Node;
use crate::model::Step;

/// The shell tool: a call whose arguments are only these becomes a `code_action` in bash.
const SHELL_TOOL: &str = "run_shell_command";
const SHELL_ARGS: &[&str] = &["command", "description"];

/// The parts of a content: a string is one text part, a part a list of one.
pub fn parts<'n, 'a>(content: &'n Node<'a>) -> Vec<Cow<'n, Node<'a>>> {
    fn part<'n, 'a>(p: &'n Node<'a>) -> Cow<'n, Node<'a>> {
        match p {
            Node::String(s) => Cow::Owned(Node::object([("text", Node::String(s.clone()))])),
            other => Cow::Borrowed(other),
        }
    }
    match content {
        Node::Array(items) => items.iter().map(part).collect(),
        Node::Null => Vec::new(),
        other => vec![part(other)],
    }
}

/// The text parts of a content joined by newlines, and the other parts.
pub fn split_text<'a>(content: &Node<'a>) -> (String, Vec<Node<'a>>) {
    let mut text = Vec::new();
    let mut other = Vec::new();
    for p in parts(content) {
        match p.get("text").and_then(Node::as_str) {
            Some(t) if p.get("thought") != Some(&Node::Bool(true)) => text.push(t.to_owned()),
            _ => other.push(p.into_owned()),
        }
    }
    (text.join("\n"), other)
}

/// The text of a tool call's result: each `functionResponse`'s `response.output` (or
/// `error`, or the whole response as JSON), and the text of the other parts.
pub fn result_text(result: &Node<'_>) -> String {
    let mut out = Vec::new();
    for p in parts(result) {
        if let Some(r) = p.get("functionResponse") {
            let response = &r["response"];
            match (&response["output"], &response["error"]) {
                (Node::String(s), _) => out.push(s.as_ref().to_owned()),
                (_, Node::String(e)) => out.push(e.as_ref().to_owned()),
                _ if response.is_null() => {}
                _ => out.push(response.to_string()),
            }
        } else if let Some(t) = p.get("text").and_then(Node::as_str) {
            out.push(t.to_owned());
        } else {
            out.push(p.to_string());
        }
    }
    out.join("\n")
}

/// The action of a tool call.
pub fn call_action(call: &Node<'_>) -> Step {
    let name = call["name"].as_str().unwrap_or("tool");
    let args = call["args"].to_map();
    if name == SHELL_TOOL && args.keys().all(|k| SHELL_ARGS.contains(&k.as_str())) {
        if let Some(command) = args.get("command").and_then(Value::as_str) {
            let description = args
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            return Step::code("bash", command, description);
        }
    }
    Step::api(name, args, None)
}

/// An inline image part as a data URI.
pub fn image_uri(part: &Node<'_>) -> Option<String> {
    let data = &part["inlineData"];
    let mime = data["mimeType"].as_str()?;
    mime.starts_with("image/").then(|| {
        format!(
            "data:{mime};base64,{}",
            data["data"].as_str().unwrap_or_default()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn results_read_output_error_or_the_response() {
        let r = json!([{"functionResponse": {"id": "1", "response": {"output": "ok"}}}]);
        assert_eq!(result_text(&Node::from_value(&r)), "ok");
        let r = json!([{"functionResponse": {"response": {"error": "denied"}}}]);
        assert_eq!(result_text(&Node::from_value(&r)), "denied");
        let r = json!({"functionResponse": {"response": {"llmContent": 3}}});
        assert_eq!(result_text(&Node::from_value(&r)), "{\"llmContent\":3}");
    }
}

//! Texts of a rollout: shell commands as one command line, the context Codex injects as user
//! messages, and the text of a tool's output.

use crate::json::Node;

/// The command line of a shell call's argv. `[SHELL, -lc | -c | ..., SCRIPT]` (what Codex's
/// shell tool runs) is the script itself, with the two words before it returned apart;
/// anything else is its words quoted for a POSIX shell where needed (`'...'`, a `'` inside as
/// `'\''`) and joined by spaces, which a shell splits back into the same argv.
pub fn argv_command<'s>(argv: &[&'s str]) -> (String, Option<[&'s str; 2]>) {
    if let [shell, flag, script] = argv {
        let name = shell.rsplit(['/', '\\']).next().unwrap_or(shell);
        let name = name.strip_suffix(".exe").unwrap_or(name);
        let shell_like = matches!(name, "bash" | "sh" | "zsh" | "dash" | "ksh");
        let runs_script = flag.starts_with('-') && !flag.starts_with("--") && flag.contains('c');
        if shell_like && runs_script {
            return ((*script).to_owned(), Some([shell, flag]));
        }
    }
    let words: Vec<String> = argv.iter().map(|w| quote(w)).collect();
    (words.join(" "), None)
}

/// `word` as one word of a POSIX shell command line.
fn quote(word: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b);
    if !word.is_empty() && word.bytes().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What Codex writes as a user (or developer) message but the user did not type: the name of
/// the context it is (the observation's `name`, source `environment`), from its opening tag or
/// heading.
pub fn injected_context(text: &str) -> Option<&'static str> {
    const KNOWN: &[(&str, &str)] = &[
        ("<environment_context>", "environment_context"),
        ("<user_instructions>", "user_instructions"),
        ("# AGENTS.md instructions for ", "agents_md"),
        ("<turn_aborted>", "turn_aborted"),
        ("<user_shell_command>", "user_shell_command"),
        ("<skill>", "skill"),
        ("<subagent_notification>", "subagent_notification"),
        ("<codex_internal_context", "codex_internal_context"),
    ];
    let text = text.trim_start();
    KNOWN
        .iter()
        .find(|(opening, _)| text.starts_with(opening))
        .map(|&(_, name)| name)
}

/// A tool output read as text, with the images it carries. A string is itself; a list of
/// content parts is its texts joined by newlines (`input_image` / `image_url` parts are the
/// images; `encrypted_content`, `input_audio` and other parts are returned apart); an object
/// whose `content`, `body` or `content_items` holds the output (`{content, success}` of older
/// CLIs, the `{body, success}` payload) is read from that key, the other keys returned as
/// `rest`; any other value is compact JSON.
pub struct Output<'n, 'a> {
    /// The text the model was given.
    pub text: String,
    /// Image URLs (data URIs) among the parts.
    pub images: Vec<&'n str>,
    /// Parts that are neither text nor image, with their index.
    pub other_parts: Vec<(usize, &'n Node<'a>)>,
    /// The keys of an object output beside the one read.
    pub rest: Vec<(&'n str, &'n Node<'a>)>,
    /// The key of an object output the text was read from (for pointers to its parts).
    pub within: Option<&'static str>,
}

/// Reads `output` (see [`Output`]).
pub fn output<'n, 'a>(output: &'n Node<'a>) -> Output<'n, 'a> {
    let mut out = Output {
        text: String::new(),
        images: Vec::new(),
        other_parts: Vec::new(),
        rest: Vec::new(),
        within: None,
    };
    match output {
        Node::String(s) => out.text = s.as_ref().to_owned(),
        Node::Null => {}
        Node::Array(parts) => {
            let mut texts: Vec<&str> = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                if let Some(t) = part["text"].as_str() {
                    texts.push(t);
                } else if let Some(url) = part["image_url"]
                    .as_str()
                    .or(part["image_url"]["url"].as_str())
                {
                    out.images.push(url);
                } else if let Some(t) = part.as_str() {
                    texts.push(t);
                } else {
                    out.other_parts.push((i, part));
                }
            }
            out.text = texts.join("\n");
        }
        Node::Object(entries) => match ["content", "body", "content_items"]
            .into_iter()
            .find(|k| matches!(output[*k], Node::String(_) | Node::Array(_)))
        {
            Some(key) => {
                out = self::output(&output[key]);
                out.within = Some(key);
                out.rest = entries
                    .iter()
                    .filter(|(k, _)| k != key)
                    .map(|(k, v)| (k.as_ref(), v))
                    .collect();
            }
            None => out.text = output.to_string(),
        },
        other => out.text = other.to_string(),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shell_script_is_itself_and_other_argvs_are_quoted_words() {
        assert_eq!(
            argv_command(&["bash", "-lc", "ls -la | head"]),
            ("ls -la | head".to_owned(), Some(["bash", "-lc"]))
        );
        assert_eq!(
            argv_command(&["/bin/zsh", "-c", "echo hi"]),
            ("echo hi".to_owned(), Some(["/bin/zsh", "-c"]))
        );
        assert_eq!(
            argv_command(&["rg", "-n", "fn main", "src/", "it's", ""]),
            (r"rg -n 'fn main' src/ 'it'\''s' ''".to_owned(), None)
        );
        assert_eq!(
            argv_command(&["bash", "--norc", "x"]).0,
            "bash --norc x".to_owned()
        );
        assert_eq!(argv_command(&["python3", "-c", "print(1)"]).1, None);
    }

    #[test]
    fn injected_context_is_named_by_its_opening() {
        assert_eq!(
            injected_context("<environment_context>\n  <cwd>/x</cwd>"),
            Some("environment_context")
        );
        assert_eq!(
            injected_context("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>"),
            Some("agents_md")
        );
        assert_eq!(
            injected_context("fix the <environment_context> parser"),
            None
        );
    }

    #[test]
    fn outputs_of_every_shape_are_read_as_text() {
        let cases = [
            (json!("plain"), "plain", 0, 0),
            (
                json!([{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "data:x"}, {"type": "input_text", "text": "b"}, {"type": "audio"}]),
                "a\nb",
                1,
                1,
            ),
            (json!({"content": "c", "success": false}), "c", 0, 0),
            (
                json!({"body": [{"type": "input_text", "text": "b"}, {"type": "encrypted_content", "encrypted_content": "x"}], "success": true}),
                "b",
                0,
                1,
            ),
            (json!({"exit": 1}), "{\"exit\":1}", 0, 0),
            (json!(null), "", 0, 0),
        ];
        for (value, text, images, other) in cases {
            let node = Node::from_value(&value);
            let o = output(&node);
            assert_eq!(o.text, text);
            assert_eq!(o.images.len(), images);
            assert_eq!(o.other_parts.len(), other);
        }
        let v = json!({"content": "c", "success": false});
        let node = Node::from_value(&v);
        assert_eq!(output(&node).rest.len(), 1);
    }
}

//! SWE-agent's command lines and model outputs, read the way SWE-agent itself reads them, into
//! ADP actions.
//!
//! Sources (SWE-agent repository): the parsers in `sweagent/tools/parsing.py`
//! (`ThoughtActionParser`: the action is the last ``` block that is not nested in another, the
//! thought is the text around it; `XMLFunctionCallingParser`: the first
//! `<function=NAME>\n…</function>`, parameters `<parameter=P>…</parameter>` losing one newline
//! at each end, `view_range` parsed as JSON, `execute_bash` renamed `bash` and `finish`
//! `submit`); the command signatures in the tool bundles (`tools/search/config.yaml`:
//! `find_file <file_name> [<dir>]`, `search_dir <search_term> [<dir>]`,
//! `search_file <search_term> [<file>]`; `tools/edit_anthropic/config.yaml`:
//! `str_replace_editor <command> <path>` with `--file_text`, `--old_str`, `--new_str`,
//! `--insert_line`, `--view_range A B`; `tools/submit/config.yaml`: `submit [<target_file>]`;
//! and the windowed editor of SWE-agent 0.x, `config/commands/defaults.sh`: `open <path>
//! [<line_number>]`, `goto <line_number>`, `scroll_up`, `scroll_down`, `create <filename>`,
//! `edit <start_line>:<end_line>` followed by the replacement lines and `end_of_edit`).

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::formats::chat::{call_step, CodeTool};
use crate::model::{JsonObject, Step};

/// SWE-agent's shell tool in function-calling mode.
const SHELL: &[CodeTool] = &[("bash", "command", "bash")];

/// The type of a command parameter, as its signature declares it.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Integer,
}

/// SWE-agent's interface commands with positional parameters (optional ones last). Each
/// becomes an `api_action` whose kwargs are named after the signature; every other command line
/// is shell code.
const COMMANDS: &[(&str, &[(&str, Kind)])] = &[
    (
        "open",
        &[("path", Kind::Text), ("line_number", Kind::Integer)],
    ),
    ("goto", &[("line_number", Kind::Integer)]),
    ("scroll_up", &[]),
    ("scroll_down", &[]),
    ("create", &[("filename", Kind::Text)]),
    (
        "find_file",
        &[("file_name", Kind::Text), ("dir", Kind::Text)],
    ),
    (
        "search_dir",
        &[("search_term", Kind::Text), ("dir", Kind::Text)],
    ),
    (
        "search_file",
        &[("search_term", Kind::Text), ("file", Kind::Text)],
    ),
    ("submit", &[("target_file", Kind::Text)]),
];

/// The action a command line stands for: an interface command with arguments that fit its
/// signature is an `api_action`; anything else (a shell command, or an interface command whose
/// arguments do not fit, which SWE-agent's shell would reject) is `bash` code, as written.
pub fn command_step(action: &str) -> Step {
    let action = action.trim();
    let name = action.split_whitespace().next().unwrap_or_default();
    let parsed = match name {
        "edit" => edit(action),
        "str_replace_editor" => str_replace_editor(action),
        _ => COMMANDS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(n, params)| positional(action, n, params)),
    };
    parsed.unwrap_or_else(|| Step::code("bash", action, None))
}

/// A call of a SWE-agent tool (function calling, or its XML form): `bash` with only a command
/// is shell code, anything else an `api_action`. SWE-gym's names `execute_bash` and `finish`
/// are renamed as SWE-agent renames them.
pub fn tool_call_step(name: &str, params: JsonObject) -> Step {
    call_step(tool_name(name), params, SHELL)
}

fn tool_name(name: &str) -> &str {
    match name {
        "execute_bash" => "bash",
        "finish" => "submit",
        other => other,
    }
}

fn typed(value: &str, kind: Kind) -> Value {
    match (kind, value.parse::<i64>()) {
        (Kind::Integer, Ok(n)) => Value::from(n),
        _ => Value::from(value),
    }
}

fn positional(action: &str, name: &str, params: &[(&str, Kind)]) -> Option<Step> {
    let words = shell_words(action)?;
    let args = words.get(1..)?;
    if args.len() > params.len() {
        return None;
    }
    let kwargs: JsonObject = params
        .iter()
        .zip(args)
        .map(|(&(param, kind), value)| (param.to_owned(), typed(value, kind)))
        .collect();
    Some(Step::api(name, kwargs, None))
}

/// `edit <start>:<end>` + replacement lines + `end_of_edit` (the windowed editor; the
/// replacement is the text between, each line with its newline, as the command receives it),
/// or `edit <search> <replace> [<replace-all>]` (SWE-agent 1.0's search-and-replace editor).
fn edit(action: &str) -> Option<Step> {
    let (first, body) = action.split_once('\n').unwrap_or((action, ""));
    let words = shell_words(first)?;
    if let [_, range] = words.as_slice() {
        let (start, end) = range.split_once(':')?;
        let (start, end) = (start.parse::<i64>().ok()?, end.parse::<i64>().ok()?);
        let replacement = match body.rsplit_once('\n') {
            Some((text, last)) if last.trim() == "end_of_edit" => format!("{text}\n"),
            None if body.trim() == "end_of_edit" => String::new(),
            _ => return None,
        };
        let mut kwargs = JsonObject::new();
        kwargs.insert("start_line".into(), start.into());
        kwargs.insert("end_line".into(), end.into());
        kwargs.insert("replacement_text".into(), replacement.into());
        return Some(Step::api("edit", kwargs, None));
    }
    let words = shell_words(action)?;
    let names = ["search", "replace", "replace-all"];
    let args = words.get(1..)?;
    if !(2..=3).contains(&args.len()) {
        return None;
    }
    let kwargs: JsonObject = names
        .iter()
        .zip(args)
        .map(|(n, v)| ((*n).to_owned(), Value::from(v.as_str())))
        .collect();
    Some(Step::api("edit", kwargs, None))
}

/// `str_replace_editor <command> <path> [--file_text T] [--old_str S] [--new_str S]
/// [--insert_line N] [--view_range A B]`, as SWE-agent renders a function call of its editor.
fn str_replace_editor(action: &str) -> Option<Step> {
    let words = shell_words(action)?;
    let [_, command, path, flags @ ..] = words.as_slice() else {
        return None;
    };
    let mut kwargs = JsonObject::new();
    kwargs.insert("command".into(), command.as_str().into());
    kwargs.insert("path".into(), path.as_str().into());
    let mut rest = flags.iter();
    while let Some(flag) = rest.next() {
        let key = flag.strip_prefix("--")?;
        let value = match key {
            "file_text" | "old_str" | "new_str" => Value::from(rest.next()?.as_str()),
            "insert_line" => typed(rest.next()?, Kind::Integer),
            "view_range" => {
                let (a, b) = (rest.next()?, rest.next()?);
                Value::Array(vec![typed(a, Kind::Integer), typed(b, Kind::Integer)])
            }
            _ => return None,
        };
        kwargs.insert(key.to_owned(), value);
    }
    Some(Step::api("str_replace_editor", kwargs, None))
}

/// Splits a simple command line into words as a POSIX shell does (single and double quotes,
/// backslash escapes, adjacent quoted parts joined). `None` when the line is not one simple
/// command: unbalanced quotes, or an unquoted newline, pipe, list, redirection, substitution or
/// expansion, all of which SWE-agent hands to the shell.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => word.push(ch),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&n) if matches!(n, '"' | '\\' | '$' | '`') => {
                                word.push(n);
                                chars.next();
                            }
                            Some('\n') => {
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        ch => word.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next()? {
                    '\n' => {}
                    ch => word.push(ch),
                }
            }
            '\n' | ';' | '&' | '|' | '<' | '>' | '`' | '(' | ')' | '$' => return None,
            ch => {
                in_word = true;
                word.push(ch);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

fn code_block_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // ok: a constant pattern, compiled by every test run
    RE.get_or_init(|| Regex::new(r"(?m)^```(\S*)\s*\n|^```\s*$").expect("valid regex"))
}

/// SWE-agent's `thought_action` parser: the last ``` block not nested in another is the
/// action, the text before and after it the thought. `None` when there is no such block.
pub fn thought_action(text: &str) -> Option<(String, String)> {
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut last: Option<((usize, usize), (usize, usize))> = None;
    for caps in code_block_pattern().captures_iter(text) {
        let Some(whole) = caps.get(0) else { continue };
        let span = (whole.start(), whole.end());
        let tag = caps.get(1).map(|m| m.as_str());
        if !stack.is_empty() && tag.is_none_or(str::is_empty) {
            if let Some(open) = stack.pop() {
                if stack.is_empty() {
                    last = Some((open, span));
                }
            }
        } else if tag.is_some() {
            stack.push(span);
        }
    }
    let ((open_start, open_end), (close_start, close_end)) = last?;
    let thought = format!("{}{}", &text[..open_start], &text[close_end..]);
    Some((thought, text[open_end..close_start].to_owned()))
}

fn function_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // ok: a constant pattern, compiled by every test run
    RE.get_or_init(|| Regex::new(r"(?s)<function=([^>]+)>\n(.*?)</function>").expect("valid regex"))
}

fn parameter_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // ok: a constant pattern, compiled by every test run
    RE.get_or_init(|| Regex::new(r"(?s)<parameter=([^>]+)>(.*?)</parameter>").expect("valid regex"))
}

/// SWE-agent's `xml_function_calling` parser: the first `<function=NAME>` block is the call,
/// the text around it (trimmed) the thought. Returns the thought, the tool name and its
/// parameters (`view_range` as a JSON list and `insert_line` as an integer when they parse,
/// everything else as text).
pub fn xml_function(text: &str) -> Option<(String, String, JsonObject)> {
    let caps = function_pattern().captures(text)?;
    let (whole, name, body) = (caps.get(0)?, caps.get(1)?, caps.get(2)?);
    let mut params = JsonObject::new();
    for p in parameter_pattern().captures_iter(body.as_str()) {
        let (Some(key), Some(raw)) = (p.get(1), p.get(2)) else {
            continue;
        };
        let value = trim_one_newline(raw.as_str());
        let typed = match key.as_str() {
            "view_range" => match serde_json::from_str::<Value>(value) {
                Ok(list @ Value::Array(_)) => list,
                _ => Value::from(value),
            },
            "insert_line" => typed(value, Kind::Integer),
            _ => Value::from(value),
        };
        params.insert(key.as_str().to_owned(), typed);
    }
    let thought = format!("{}{}", &text[..whole.start()], &text[whole.end()..]);
    Some((
        thought.trim().to_owned(),
        name.as_str().trim().to_owned(),
        params,
    ))
}

/// What SWE-agent's `re.sub(r"^\n|\n$", "", value)` leaves: one newline off the start, and the
/// final newline off the end (with the one before it, which Python's `$` also matches before a
/// final newline).
fn trim_one_newline(value: &str) -> &str {
    let value = value.strip_prefix('\n').unwrap_or(value);
    match value.strip_suffix("\n\n") {
        Some(v) => v,
        None => value.strip_suffix('\n').unwrap_or(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(step: &Step) -> (String, Value) {
        match step {
            Step::ApiAction(a) => (a.function.clone(), Value::Object(a.kwargs.clone())),
            other => panic!("not an api action: {other:?}"),
        }
    }

    #[test]
    fn shell_words_follow_posix_quoting_and_refuse_compound_commands() {
        assert_eq!(
            shell_words(r#"find_file "image.py" plumbum"#),
            Some(vec![
                "find_file".into(),
                "image.py".into(),
                "plumbum".into()
            ])
        );
        assert_eq!(
            shell_words("a 'it'\"'\"'s' \"x\\\"y\" b\\ c"),
            Some(vec!["a".into(), "it's".into(), "x\"y".into(), "b c".into()])
        );
        assert_eq!(shell_words("ls | wc"), None);
        assert_eq!(shell_words("echo $HOME"), None);
        assert_eq!(shell_words("open 'unterminated"), None);
        assert_eq!(shell_words("open a\nls"), None);
    }

    #[test]
    fn interface_commands_become_api_actions_and_the_rest_bash() {
        assert_eq!(
            api(&command_step("open \"src/a.py\" 30\n")),
            (
                "open".into(),
                json!({"path": "src/a.py", "line_number": 30})
            )
        );
        assert_eq!(
            api(&command_step("search_dir 'def main' src")),
            (
                "search_dir".into(),
                json!({"search_term": "def main", "dir": "src"})
            )
        );
        assert_eq!(api(&command_step("submit")), ("submit".into(), json!({})));
        assert_eq!(
            api(&command_step("edit 3:4\n    return x\n\nend_of_edit")),
            (
                "edit".into(),
                json!({"start_line": 3, "end_line": 4, "replacement_text": "    return x\n\n"})
            )
        );
        assert_eq!(
            api(&command_step(
                "str_replace_editor str_replace /r/a.py --old_str 'a = 1\n' --new_str 'a = 2\n'"
            )),
            (
                "str_replace_editor".into(),
                json!({"command": "str_replace", "path": "/r/a.py", "old_str": "a = 1\n", "new_str": "a = 2\n"})
            )
        );
        assert_eq!(
            api(&command_step(
                "str_replace_editor view /r/a.py --view_range 5 -1"
            ))
            .1["view_range"],
            json!([5, -1])
        );
        for bash in [
            "ls -F",
            "find_file a b c",
            "open a.py && ls",
            "edit 3:4\nno terminator",
        ] {
            assert!(
                matches!(command_step(bash), Step::CodeAction(ref c) if c.content == bash.trim()),
                "{bash}"
            );
        }
    }

    #[test]
    fn model_outputs_split_like_swe_agents_parsers() {
        let (thought, action) =
            thought_action("Look first.\n```bash\nls -F\n```\nthen decide").expect("block");
        assert_eq!(thought, "Look first.\nthen decide");
        assert_eq!(action, "ls -F\n");
        // The last block that is not nested wins.
        let (_, action) = thought_action("```\na\n```\nand\n```\nb\n```").expect("block");
        assert_eq!(action, "b\n");
        assert!(thought_action("no block here").is_none());

        let text = "I will view it.\n\n<function=str_replace_editor>\n<parameter=command>view</parameter>\n<parameter=path>/t/a.py</parameter>\n<parameter=view_range>[3, 9]</parameter>\n</function>";
        let (thought, name, params) = xml_function(text).expect("call");
        assert_eq!(thought, "I will view it.");
        assert_eq!(name, "str_replace_editor");
        assert_eq!(
            Value::Object(params),
            json!({"command": "view", "path": "/t/a.py", "view_range": [3, 9]})
        );
        let (_, _, params) = xml_function(
            "<function=bash>\n<parameter=command>\n  cd /t\n\n</parameter>\n</function>",
        )
        .expect("call");
        assert_eq!(params["command"], "  cd /t");
        assert!(matches!(
            tool_call_step("execute_bash", params),
            Step::CodeAction(_)
        ));
    }
}

//! [`ChatTemplate`]: a Hugging Face chat template, loaded from a Jinja file or a
//! `tokenizer_config.json`, rendered as transformers' `apply_chat_template(messages,
//! tools=tools, tokenize=False)` renders it.
//!
//! The environment follows transformers' (docs/training.md, "Rendering rules"):
//! `trim_blocks` and `lstrip_blocks`, no autoescaping, loop controls (`break`, `continue`),
//! Python's string and dict methods (`.strip()`, `.split()`, `.items()`, ...), a `tojson` that
//! is Python's `json.dumps` (no HTML escaping, `ensure_ascii`, `indent`, `separators`,
//! `sort_keys`), `raise_exception(message)`, `strftime_now(format)` (UTC), and the context
//! `messages`, `tools`, `documents` (None), `add_generation_prompt` and the special tokens of
//! a `tokenizer_config.json` (`bos_token`, `eos_token`, ...). `{% generation %}` blocks give the
//! assistant spans ([`super::generation`]).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::ops::Range;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::budget::{self, Budget};
use super::generation;
use super::literals;
use super::pyjson;
use super::render_thread;

/// The name the template is compiled under (it appears in nothing users see).
const NAME: &str = "chat_template";
/// The same template with its `{% generation %}` blocks printing nothing (for counts).
const PLAIN: &str = "chat_template_plain";

/// The special tokens transformers passes to every template, read from
/// `tokenizer_config.json`.
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// A compiled chat template and the variables every rendering gets.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// The special tokens (`bos_token`, ...), a map.
    special: Value,
    /// The template has `{% generation %}` blocks.
    generation: bool,
    /// [`ChatTemplate::fingerprint`].
    fingerprint: [u8; 16],
}

/// A rendered conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text.
    pub text: String,
    /// Byte ranges of the `{% generation %}` blocks' output, in order.
    pub spans: Vec<Range<usize>>,
}

/// Why a template could not render a record: its message, and the line of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// What went wrong (a `raise_exception` message as the template gives it).
    pub message: String,
    /// The template line.
    pub line: Option<usize>,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "chat template line {line}: {}", self.message),
            None => write!(f, "chat template: {}", self.message),
        }
    }
}

impl From<Error> for TemplateError {
    fn from(e: Error) -> Self {
        let message = match e.detail() {
            Some(d) => d.to_owned(),
            None => e.kind().to_string(),
        };
        TemplateError {
            message,
            line: e.line(),
        }
    }
}

/// [`ChatTemplate::fingerprint`] of `source` and `special`: each part hashed after its length,
/// so no two lists of parts hash the same bytes.
fn fingerprint(source: &str, special: &BTreeMap<String, Value>) -> [u8; 16] {
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    part(source);
    for (k, v) in special {
        part(k);
        part(&v.to_string());
    }
    let mut out = [0u8; 16];
    out.copy_from_slice(&h.finalize()[..16]);
    out
}

impl ChatTemplate {
    /// Loads `path`: a `tokenizer_config.json` (its `chat_template`, a string or a list of
    /// `{name, template}` from which `name` picks one, `default` unless given, and its special
    /// tokens), or else a Jinja file. The error names the file and says what is wrong.
    pub fn load(path: &str, name: Option<&str>) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--chat-template {path}: cannot read it: {e}"))?;
        let config = match serde_json::from_str::<Json>(&text) {
            Ok(Json::Object(config)) => Some(config),
            _ => None,
        };
        let Some(config) = config else {
            if name.is_some() {
                return Err(format!(
                    "--chat-template-name needs a tokenizer_config.json, and {path} is a Jinja file"
                ));
            }
            return Self::new(&text, BTreeMap::new())
                .map_err(|e| format!("--chat-template {path}: {e}"));
        };
        let source = pick(&config, name).map_err(|e| format!("--chat-template {path}: {e}"))?;
        let special = SPECIAL_TOKENS
            .iter()
            .filter_map(|k| {
                let token = match config.get(*k)? {
                    Json::String(s) => s.as_str(),
                    Json::Object(o) => o.get("content")?.as_str()?,
                    _ => return None,
                };
                Some(((*k).to_owned(), Value::from(token)))
            })
            .collect();
        Self::new(source, special).map_err(|e| format!("--chat-template {path}: {e}"))
    }

    /// Compiles `source` with `special` tokens in every rendering's context.
    pub fn new(source: &str, special: BTreeMap<String, Value>) -> Result<Self, String> {
        // Jinja2 reads `\r\n` and `\r` as `\n`, in text and string literals alike (a
        // template saved with Windows line endings renders `\n`); minijinja keeps them.
        let source = source.replace("\r\n", "\n").replace('\r', "\n");
        let source = literals::rewrite(&source);
        let source: &str = &source;
        let fingerprint = fingerprint(source, &special);
        let plain = generation::remove(source);
        let (source, generation) = generation::rewrite(source);
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| TemplateError::from(e).to_string())?;
        env.set_syntax(syntax);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_unknown_method_callback(budget::method);
        env.set_formatter(|out, state, value| match pyjson::python_str(value) {
            Some(s) => out
                .write_str(&s)
                .map_err(|_| Error::new(ErrorKind::WriteFailure, "cannot write the output")),
            None => minijinja::escape_formatter(out, state, value),
        });
        env.add_filter("tojson", pyjson::tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(NAME, source)
            .map_err(|e| TemplateError::from(e).to_string())?;
        if generation {
            env.add_template_owned(PLAIN, plain)
                .map_err(|e| TemplateError::from(e).to_string())?;
        }
        Ok(ChatTemplate {
            env,
            special: Value::from(special),
            generation,
            fingerprint,
        })
    }

    /// A hash of the source and the special tokens: templates with the same fingerprint render
    /// alike (`trajkit run`'s exports load their own).
    pub fn fingerprint(&self) -> [u8; 16] {
        self.fingerprint
    }

    /// True when the template has `{% generation %}` blocks.
    pub fn has_generation(&self) -> bool {
        self.generation
    }

    /// Renders `messages` and `tools` (the `hf` target's, as minijinja values), with the
    /// generation prompt or not.
    pub fn render(
        &self,
        messages: &[Value],
        tools: &Value,
        add_generation_prompt: bool,
    ) -> Result<Rendered, TemplateError> {
        let mut text = self.render_with(NAME, messages, tools, add_generation_prompt)?;
        let spans = if self.generation {
            generation::take_spans(&mut text).ok_or_else(|| TemplateError {
                message: "the {% generation %} blocks' output does not pair up".into(),
                line: None,
            })?
        } else {
            Vec::new()
        };
        Ok(Rendered { text, spans })
    }

    /// The text [`ChatTemplate::render`] renders, without the spans: the `{% generation %}`
    /// blocks print no sentinels, so content holding one renders as it is.
    pub fn render_text(
        &self,
        messages: &[Value],
        tools: &Value,
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        let name = if self.generation { PLAIN } else { NAME };
        self.render_with(name, messages, tools, add_generation_prompt)
    }

    /// Renders the template `name` within the budget of its input ([`super::budget`]: fuel,
    /// and memory on a render thread of its own, [`super::render_thread`]). A panic inside the
    /// engine fails the rendering, as an error would.
    fn render_with(
        &self,
        name: &'static str,
        messages: &[Value],
        tools: &Value,
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        let budget = Budget::of(messages, tools);
        let (fuel, limit) = (budget.fuel(), budget.memory());
        let mut env = self.env.clone();
        env.set_fuel(Some(fuel));
        let ctx = minijinja::context! {
            messages => Value::from(messages.to_vec()),
            tools => tools.clone(),
            documents => (),
            add_generation_prompt => add_generation_prompt,
            ..self.special.clone()
        };
        // On a thread of its own, holding at most `limit` bytes: the engine copies some values
        // without asking its fuel ([`super::render_thread`]).
        let rendered = render_thread::run(limit, move || {
            let rendered =
                crate::training::guard::call(|| env.get_template(name).and_then(|t| t.render(ctx)));
            rendered
                .map_err(|panic| TemplateError {
                    message: format!("the template engine failed: {panic}"),
                    line: None,
                })?
                .map_err(|e| {
                    let exhausted = (e.kind() == ErrorKind::OutOfFuel)
                        .then(|| budget::exhausted(fuel, e.detail()));
                    let mut error = TemplateError::from(e);
                    if let Some(message) = exhausted {
                        error.message = message;
                    }
                    error
                })
        });
        rendered.unwrap_or_else(|refused| {
            Err(TemplateError {
                message: budget::refused(&refused),
                line: None,
            })
        })
    }
}

/// The template a `tokenizer_config.json` holds under `name` (`default` unless given).
fn pick<'a>(
    config: &'a serde_json::Map<String, Json>,
    name: Option<&str>,
) -> Result<&'a str, String> {
    match config.get("chat_template") {
        Some(Json::String(s)) => match name {
            None | Some("default") => Ok(s),
            Some(n) => Err(format!("it holds one chat template, not one named {n:?}")),
        },
        Some(Json::Array(list)) => {
            let want = name.unwrap_or("default");
            let named =
                |t: &'a Json| Some((t.get("name")?.as_str()?, t.get("template")?.as_str()?));
            let all: Vec<(&str, &str)> = list.iter().filter_map(named).collect();
            all.iter()
                .find(|(n, _)| *n == want)
                .map(|(_, t)| *t)
                .ok_or_else(|| {
                    let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
                    format!(
                        "no chat template named {want:?} (it has: {}); pick one with --chat-template-name",
                        names.join(", ")
                    )
                })
        }
        _ => Err("a JSON file without a chat_template string or list".into()),
    }
}

/// `raise_exception(message)`: fails the rendering with the template's message.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `strftime_now(format)`: the current time (UTC) in Python's `strftime` format (a format of
/// at most [`budget::MAX_STRFTIME`] bytes: each of its fields writes a few dozen bytes).
fn strftime_now(format: String) -> Result<String, Error> {
    if format.len() > budget::MAX_STRFTIME {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "strftime_now: a format of {} bytes, over the limit of {}",
                format.len(),
                budget::MAX_STRFTIME
            ),
        ));
    }
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let now = chrono::DateTime::from_timestamp(since.as_secs() as i64, 0).unwrap_or_default();
    let mut out = String::new();
    write!(out, "{}", now.format(&format)).map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: bad format {format:?}"),
        )
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::value::Serde;

    fn render(source: &str, messages: serde_json::Value) -> Result<Rendered, TemplateError> {
        let t = ChatTemplate::new(source, BTreeMap::new()).expect("compiles");
        let messages: Vec<Value> = messages
            .as_array()
            .expect("array")
            .iter()
            .map(|m| Value::from(Serde(m)))
            .collect();
        t.render(&messages, &Value::from(Vec::<Value>::new()), false)
    }

    #[test]
    fn blocks_trim_like_transformers() {
        let src = "{% for m in messages %}\n  {% if m.role == 'user' %}\nU:{{ m.content.strip() }}\n  {% endif %}\n{% endfor %}\n";
        let r = render(
            src,
            serde_json::json!([{"role": "user", "content": " hi "}]),
        )
        .expect("renders");
        assert_eq!(r.text, "U:hi\n");
    }

    #[test]
    fn windows_line_endings_render_as_jinja2_reads_them() {
        let messages = serde_json::json!([{"role": "user", "content": "hi"}]);
        let lf = "{% for m in messages %}\n{{ m.content }}\n{% endfor %}\nend{{ 'a\nb' }}\n";
        let want = render(lf, messages.clone()).expect("renders").text;
        assert_eq!(want, "hi\nenda\nb");
        for crlf in [lf.replace('\n', "\r\n"), lf.replace('\n', "\r")] {
            assert_eq!(render(&crlf, messages.clone()).expect("renders").text, want);
        }
    }

    #[test]
    fn python_values_print_as_python() {
        let src = "{{ true }} {{ none }} {{ 1.0 }} {{ {'a': '<b>'}|tojson }} {{ [1, 2]|tojson(indent=1) }}";
        assert_eq!(
            render(src, serde_json::json!([])).expect("renders").text,
            "True None 1.0 {\"a\": \"<b>\"} [\n 1,\n 2\n]"
        );
    }

    #[test]
    fn generation_blocks_give_spans() {
        let src = "{% for m in messages %}<{{ m.role }}>\n{% if m.role == 'assistant' %}\n{% generation %}\n{{ m.content }}!\n{% endgeneration %}\n{% else %}\n{{ m.content }}\n{% endif %}\n{% endfor %}";
        let r = render(
            src,
            serde_json::json!([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
        )
        .expect("renders");
        assert_eq!(r.text, "<user>\nq\n<assistant>\na!\n");
        assert_eq!(&r.text[r.spans[0].clone()], "a!\n");
    }

    #[test]
    fn raised_errors_carry_the_message_and_line() {
        let src =
            "x\n{% if messages|length == 0 %}\n{{ raise_exception('no messages') }}\n{% endif %}";
        let e = render(src, serde_json::json!([])).expect_err("raises");
        assert_eq!(e.message, "no messages");
        assert_eq!(e.line, Some(3));
    }

    #[test]
    fn tojson_refuses_unknown_arguments() {
        let e = render(
            "{{ {'a': 1}|tojson(sort_keys=true, bogus=1) }}",
            serde_json::json!([]),
        )
        .expect_err("refused");
        assert_eq!(e.message, "unknown keyword argument 'bogus'");
    }

    /// Templates that loop or build without bound, each with what its error must say.
    const HOSTILE: &[(&str, &str)] = &[
        // A string doubled in a loop.
        (
            "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
            "ran out of its budget",
        ),
        // A list doubled in a loop (minijinja concatenates lists lazily: 30 doublings cost
        // nothing until the list is walked).
        (
            "{% set ns = namespace(l=[1, 2]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|join(',')|length }}",
            "ran out of its budget",
        ),
        // Nested loops of 10^10 steps.
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "ran out of its budget",
        ),
        // A huge indent.
        ("{{ messages|tojson(indent=1000000000) }}", "over the limit of 64"),
        ("{{ messages|tojson(indent=' ' * 100) }}", "over the limit of 64"),
        // A long string split into a list of 50 million items.
        ("{{ (' ' * 50000000).split(' ')|length }}", "str.split would make a list"),
        ("{{ ('\n' * 50000000).splitlines()|length }}", "ran out of its budget"),
        ("{{ ('a ' * 25000000).split()|length }}", "str.split would make a list"),
        // Wide formats.
        ("{{ '{:>1000000000}'.format('x')|length }}", "str.format could write"),
        ("{{ '%1000000000s'|format('x')|length }}", "ran out of its budget"),
        ("{{ 'x\ny'|indent(1000000000)|length }}", "ran out of its budget"),
        ("{{ strftime_now('%c' * 1000000)|length }}", "over the limit of 256"),
        // Huge lists: repeated (minijinja refuses), or doubled lazily and written out.
        ("{{ ([1] * 1000000000)|list|length }}", "too large"),
        (
            "{% set ns = namespace(l=[1, 2]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|tojson|length }}",
            "tojson would write more than",
        ),
        ("{{ ('ab' * 10000000).replace('a', 'a' * 1000)|length }}", "ran out of its budget"),
        // Nesting deeper than any writer recurses.
        (
            "{% set ns = namespace(x=1) %}{% for i in range(600) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|tojson|length }}",
            "nested deeper than 512",
        ),
        // Recursion.
        (
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            "recursion",
        ),
    ];

    #[test]
    fn templates_that_build_or_loop_without_bound_run_out_of_budget() {
        let messages = serde_json::json!([{"role": "user", "content": "hi"}]);
        for (source, want) in HOSTILE {
            let started = std::time::Instant::now();
            let e = render(source, messages.clone()).expect_err(source);
            assert!(e.message.contains(want), "{source}: {}", e.message);
            let took = started.elapsed();
            // Seconds on a debug build of a loaded machine; a tenth of that in release.
            assert!(took.as_secs() < 60, "{source}: {took:?}");
        }
    }

    #[test]
    fn a_config_picks_its_named_template() {
        let config = serde_json::json!({"chat_template": [
            {"name": "default", "template": "d"}, {"name": "tool_use", "template": "t"}]});
        let config = config.as_object().expect("object");
        assert_eq!(pick(config, None), Ok("d"));
        assert_eq!(pick(config, Some("tool_use")), Ok("t"));
        assert!(pick(config, Some("x"))
            .expect_err("unknown")
            .contains("tool_use"));
    }
}

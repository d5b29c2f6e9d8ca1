//! How code actions become tool calls: each code language is mapped to a tool ([`CodeTools`]),
//! configurable per export.

use serde_json::{json, Map, Value};

use crate::model::JsonObject;

/// The tool a code language is mapped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeTool {
    /// Tool name.
    pub name: String,
    /// The argument holding the code.
    pub arg: String,
    /// True when the call also has a `language` argument (the fallback tool).
    pub with_language: bool,
}

/// Code languages → tools. Defaults: `bash`/`shell`/`sh` → `bash {command}`, `python` →
/// `python {code}`, anything else → `execute_code {language, code}`.
#[derive(Debug, Clone)]
pub struct CodeTools {
    by_language: Vec<(String, CodeTool)>,
    fallback: CodeTool,
    /// The spec of each tool, by name: made from the two fields above whenever they change, as
    /// every record that calls a code tool lists its spec.
    specs: Vec<(String, Value)>,
}

impl PartialEq for CodeTools {
    fn eq(&self, other: &Self) -> bool {
        self.by_language == other.by_language && self.fallback == other.fallback
    }
}

impl Eq for CodeTools {}

impl Default for CodeTools {
    fn default() -> Self {
        let tool = |name: &str, arg: &str| CodeTool {
            name: name.into(),
            arg: arg.into(),
            with_language: false,
        };
        let mut tools = CodeTools {
            by_language: vec![
                ("bash".into(), tool("bash", "command")),
                ("shell".into(), tool("bash", "command")),
                ("sh".into(), tool("bash", "command")),
                ("python".into(), tool("python", "code")),
            ],
            fallback: CodeTool {
                name: "execute_code".into(),
                arg: "code".into(),
                with_language: true,
            },
            specs: Vec::new(),
        };
        tools.make_specs();
        tools
    }
}

impl CodeTools {
    /// Applies one `--code-tool LANG=TOOL[:ARG]` (ARG defaults to `code`; LANG `*` sets the
    /// fallback, whose calls also carry `language`).
    pub fn set(&mut self, mapping: &str) -> Result<(), String> {
        let (lang, tool) = mapping
            .split_once('=')
            .ok_or_else(|| format!("--code-tool {mapping:?}: expected LANG=TOOL[:ARG]"))?;
        let (name, arg) = tool.split_once(':').unwrap_or((tool, "code"));
        if lang.is_empty() || name.is_empty() || arg.is_empty() || arg == "language" {
            return Err(format!(
                "--code-tool {mapping:?}: expected LANG=TOOL[:ARG] with non-empty parts (ARG not `language`)"
            ));
        }
        let tool = CodeTool {
            name: name.into(),
            arg: arg.into(),
            with_language: lang == "*",
        };
        if lang == "*" {
            self.fallback = tool;
        } else {
            self.by_language.retain(|(l, _)| l != lang);
            self.by_language.push((lang.into(), tool));
        }
        self.make_specs();
        Ok(())
    }

    /// Every tool: the fallback, then by language.
    fn tools(&self) -> impl Iterator<Item = &CodeTool> {
        std::iter::once(&self.fallback).chain(self.by_language.iter().map(|(_, t)| t))
    }

    /// Makes [`CodeTools::specs`] from the tools.
    fn make_specs(&mut self) {
        let mut names: Vec<&str> = self.tools().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let specs = names
            .iter()
            .filter_map(|&name| Some((name.to_owned(), self.make_spec(name)?)))
            .collect();
        self.specs = specs;
    }

    fn tool(&self, language: &str) -> &CodeTool {
        self.by_language
            .iter()
            .find(|(l, _)| l == language)
            .map_or(&self.fallback, |(_, t)| t)
    }

    /// The tool name and arguments of code `content` in `language`.
    pub fn call(&self, language: &str, content: String) -> (String, JsonObject) {
        let tool = self.tool(language);
        let mut args = Map::new();
        if tool.with_language {
            args.insert("language".into(), Value::String(language.into()));
        }
        args.insert(tool.arg.clone(), Value::String(content));
        (tool.name.clone(), args)
    }

    /// The fixed spec of the code tool called `name`, if one is.
    pub(super) fn spec(&self, name: &str) -> Option<&Value> {
        self.specs.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// Makes the fixed spec of the code tool called `name`, if one is.
    fn make_spec(&self, name: &str) -> Option<Value> {
        let tool = self.tools().find(|t| t.name == name)?;
        let mut props = Map::new();
        let mut required = Vec::new();
        if tool.with_language {
            props.insert(
                "language".into(),
                json!({"type": "string", "description": "The programming language of the code."}),
            );
            required.push(json!("language"));
        }
        props.insert(
            tool.arg.clone(),
            json!({"type": "string", "description": "The code to run."}),
        );
        required.push(Value::String(tool.arg.clone()));
        let what = if tool.with_language {
            "Run code in the given language and return its output.".to_owned()
        } else {
            let langs: Vec<&str> = self
                .by_language
                .iter()
                .filter(|(_, t)| t.name == name)
                .map(|(l, _)| l.as_str())
                .collect();
            format!("Run {} code and return its output.", langs.join("/"))
        };
        Some(json!({
            "name": name,
            "description": what,
            "parameters": {"type": "object", "properties": props, "required": required},
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn code_languages_map_to_configurable_tools() {
        let mut t = CodeTools::default();
        assert_eq!(
            t.call("bash", "ls".into()),
            ("bash".into(), obj(json!({"command": "ls"})))
        );
        assert_eq!(
            t.call("python", "1".into()),
            ("python".into(), obj(json!({"code": "1"})))
        );
        assert_eq!(
            t.call("r", "x".into()),
            (
                "execute_code".into(),
                obj(json!({"language": "r", "code": "x"}))
            )
        );
        t.set("python=ipython:cell").expect("valid");
        t.set("*=run").expect("valid");
        assert_eq!(
            t.call("python", "1".into()),
            ("ipython".into(), obj(json!({"cell": "1"})))
        );
        assert_eq!(t.call("r", "x".into()).0, "run");
        assert!(t.set("python").is_err());
        assert!(t.set("*=run:language").is_err());
    }
}

//! Tools: the tool specs a record lists ([`ToolCatalog`], [`tool_specs`]); how code actions
//! become tool calls is [`super::code_tools`].
//!
//! Specs come, by tool name, from `--tools FILE` (dataset metadata) when it has the tool; a
//! code tool gets its fixed schema; any other tool's schema is inferred from the arguments of
//! its calls: across the whole input (`--infer-tools dataset`, a first pass over the inputs by
//! [`super::infer`]), or in the same trajectory (`--infer-tools trajectory`: one pass, for
//! stdin). Names in `available_custom_tools` that are never called and have no spec get an
//! empty object schema.

use std::collections::{BTreeMap, HashMap};

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::code_tools::CodeTools;
use super::conversation::Conversation;
use crate::model::JsonObject;

/// Tool specs by name, from `--tools FILE`: a JSON array of OpenAI-style tools
/// (`{"type": "function", "function": {name, description, parameters}}`) or bare functions
/// (`{name, description, parameters}`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCatalog {
    specs: HashMap<String, Value>,
    /// Specs inferred from the calls of the whole input (`--infer-tools dataset`), used after
    /// `specs` and the code tools.
    inferred: HashMap<String, Value>,
}

impl ToolCatalog {
    /// Reads a catalog from JSON text.
    pub fn parse(text: &str) -> Result<ToolCatalog, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Value::Array(items) = value else {
            return Err("expected a JSON array of tool specs".into());
        };
        let mut specs = HashMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let function = match item.get("function") {
                Some(f) if item.get("type").and_then(Value::as_str) == Some("function") => {
                    f.clone()
                }
                _ => item,
            };
            let Some(name) = function.get("name").and_then(Value::as_str) else {
                return Err(format!("tool {i} has no string \"name\""));
            };
            if !function.get("parameters").is_none_or(Value::is_object) {
                return Err(format!("tool {name:?}: \"parameters\" is not an object"));
            }
            specs.insert(name.to_owned(), function);
        }
        Ok(ToolCatalog {
            specs,
            inferred: HashMap::new(),
        })
    }

    /// Adds the specs inferred from the calls of the whole input, by tool name.
    pub fn set_inferred(&mut self, shapes: &BTreeMap<String, ArgShapes>) {
        self.inferred = shapes
            .iter()
            .map(|(name, s)| {
                (
                    name.clone(),
                    json!({"name": name, "parameters": s.schema()}),
                )
            })
            .collect();
    }

    /// Number of specs.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// True when the catalog has no spec.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
}

/// A function spec (`{name, description?, parameters}`) a record lists.
#[derive(Debug)]
pub enum ToolSpec<'a> {
    /// From the catalog, a code tool, or inferred over the whole input: borrowed.
    Fixed(&'a Value),
    /// Inferred from the calls of the record's own trajectory: written as
    /// `{"name", "parameters"}` without building a `Value`.
    Inferred {
        /// The tool name.
        name: &'a str,
        /// What its calls passed.
        shapes: ArgShapes,
    },
}

impl Serialize for ToolSpec<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolSpec::Fixed(spec) => spec.serialize(s),
            ToolSpec::Inferred { name, shapes } => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("name", name)?;
                map.serialize_entry("parameters", shapes)?;
                map.end()
            }
        }
    }
}

/// The function specs of the tools `conv` calls and of `available` (a trajectory's
/// `available_custom_tools`), sorted by name.
pub fn tool_specs<'a>(
    conv: &'a Conversation,
    available: &'a [String],
    code: &'a CodeTools,
    catalog: &'a ToolCatalog,
) -> Vec<ToolSpec<'a>> {
    let mut by_name: BTreeMap<&str, Vec<&JsonObject>> = BTreeMap::new();
    for call in conv.calls() {
        by_name.entry(&call.name).or_default().push(&call.arguments);
    }
    for name in available {
        by_name.entry(name).or_default();
    }
    by_name
        .into_iter()
        .map(|(name, calls)| {
            let fixed = catalog.specs.get(name).or_else(|| code.spec(name));
            match fixed.or_else(|| catalog.inferred.get(name)) {
                Some(spec) => ToolSpec::Fixed(spec),
                None => ToolSpec::Inferred {
                    name,
                    shapes: ArgShapes::of(&calls),
                },
            }
        })
        .collect()
}

/// What the calls of one tool passed: each key's JSON types and how many calls had it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArgShapes {
    calls: usize,
    keys: Vec<(String, Vec<&'static str>, usize)>,
}

impl ArgShapes {
    /// What `calls` passed.
    pub fn of(calls: &[&JsonObject]) -> Self {
        let mut shapes = ArgShapes::default();
        calls.iter().for_each(|args| shapes.add(args));
        shapes
    }

    /// Adds one call's arguments.
    pub fn add(&mut self, args: &JsonObject) {
        self.calls += 1;
        for (k, v) in args {
            let t = json_type(v);
            match self.keys.iter_mut().find(|(name, _, _)| name == k) {
                Some((_, types, n)) => {
                    *n += 1;
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
                None => self.keys.push((k.clone(), vec![t], 1)),
            }
        }
    }

    /// The object schema (see the `Serialize` impl) as a value.
    pub fn schema(&self) -> Value {
        // Strings, lists and maps with string keys always convert.
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl Serialize for ArgShapes {
    /// The object schema: each key's types (sorted; one type as a string, several as a list),
    /// `required` the keys present in every call, keys in first-seen order.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Properties<'a>(&'a ArgShapes);
        impl Serialize for Properties<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(self.0.keys.len()))?;
                for (k, types, _) in &self.0.keys {
                    let mut types = types.clone();
                    types.sort_unstable();
                    let t = match types.as_slice() {
                        [one] => Types::One(one),
                        _ => Types::Several(&types),
                    };
                    map.serialize_entry(k, &TypeOf { r#type: t })?;
                }
                map.end()
            }
        }
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Types<'a> {
            One(&'a str),
            Several(&'a [&'static str]),
        }
        #[derive(Serialize)]
        struct TypeOf<'a> {
            r#type: Types<'a>,
        }
        let required: Vec<&str> = self
            .keys
            .iter()
            .filter(|(_, _, n)| *n == self.calls)
            .map(|(k, _, _)| k.as_str())
            .collect();
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("type", "object")?;
        map.serialize_entry("properties", &Properties(self))?;
        map.serialize_entry("required", &required)?;
        map.end()
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        }
    }

    #[test]
    fn schemas_are_inferred_from_the_calls() {
        let a = obj(json!({"q": "x", "n": 5}));
        let b = obj(json!({"q": "y", "n": 2.5, "flag": true}));
        let shapes = ArgShapes::of(&[&a, &b]);
        // What is written is what the value holds.
        assert_eq!(
            serde_json::to_string(&shapes).ok(),
            Some(shapes.schema().to_string())
        );
        assert_eq!(
            shapes.schema(),
            json!({"type": "object", "properties": {
                "q": {"type": "string"}, "n": {"type": ["integer", "number"]}, "flag": {"type": "boolean"}
            }, "required": ["q", "n"]})
        );
    }

    #[test]
    fn catalog_reads_both_spec_shapes() {
        let c = ToolCatalog::parse(
            r#"[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},{"name":"b"}]"#,
        )
        .expect("valid");
        assert_eq!(c.len(), 2);
        assert!(ToolCatalog::parse(r#"[{"description":"no name"}]"#).is_err());
        assert!(ToolCatalog::parse("{}").is_err());
    }
}

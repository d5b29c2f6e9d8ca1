//! [`Shapes`]: a raw format's JSON Schema compiled into checks that run while a record is parsed
//! into a [`Node`], so a conforming record is read in one pass, with no `Value` and no separate
//! schema validation.
//!
//! Only the keywords trajkit's raw schemas use are compiled, each with the meaning the
//! `jsonschema` validator gives it: `type`, `enum` (of strings and null),
//! `const` (a string), `minLength`, `pattern` (escaping only punctuation), `minimum`, `maximum`,
//! `items`, `minItems`, `maxItems`, `properties`, `required`, `additionalProperties: false`,
//! `anyOf` of branches that admit distinct types, `allOf` of `if`/`then` pairs, and `$ref` to a
//! whole sibling document, to the document itself (`#`) or to one of its `$defs`; `format` and
//! the annotations are ignored, as the validator does. A schema using anything else does not
//! compile, and its format is always read the slow way.
//!
//! Records are read by `super::read::Reader`, straight from their bytes rather than through
//! serde's visitors (about 30 % less CPU on small, structure-heavy records).
//!
//! Why this is hand-written rather than `jsonschema` over a `serde_json::Value`: end to end,
//! reading records as nodes checked while parsing took memabra conversion from 116-138 to
//! 235-249 MB/s and Reflexion from 261-271 to 349-413 MB/s (`scripts/bench.sh`, seeds), and
//! OpenAI / ShareGPT conversion of 200 MB from 3.8-4.3 to 2.7-3.3 s and 4.0-4.9 to 3.1-3.7 s of
//! CPU. Every record it refuses still goes through `jsonschema`, so it can only be faster, and
//! a test mutates every sample value by value to check it accepts nothing the validator
//! refuses.
//!
//! The parse accepts a subset of what the schema accepts: it also refuses duplicate keys and
//! integers past 64 bits (rejected the slow way, see [`super::strict`]) and integers written as
//! floats (`1.0`, valid for `type: integer`). Refused records take the slow way
//! ([`crate::validate::check::check_raw`]), which reports the schema's diagnostics (or the
//! broken JSON rule) for invalid ones and reads the valid ones as values.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Number, Value};

use super::node::{Entries, Node};
use super::read::Reader;

/// Instance types a shape admits, as bits.
type Types = u8;
const NULL: Types = 1;
const BOOLEAN: Types = 2;
const INTEGER: Types = 4;
/// Any number; `type: number` admits integers too.
const NUMBER: Types = 8;
const STRING: Types = 16;
const ARRAY: Types = 32;
const OBJECT: Types = 64;
const ANY_TYPE: Types = 127;

/// Index of a shape in [`Shapes`]; 0 is the shape without constraints.
type ShapeId = usize;
const ANY: ShapeId = 0;

/// Numeric bounds must be smaller than 2^53 in magnitude, so comparing any JSON number with them
/// as `f64` gives the validator's answer (an integer past 2^53 is past the bound either way).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// The checks of one subschema.
struct Shape {
    types: Types,
    /// `enum`: the admitted strings, and whether null is admitted.
    one_of: Option<(Vec<String>, bool)>,
    min_length: Option<usize>,
    pattern: Option<Regex>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    items: ShapeId,
    min_items: Option<usize>,
    max_items: Option<usize>,
    /// At most [`MAX_PROPERTIES`], so a set of them fits a `u64`.
    properties: Vec<(String, ShapeId)>,
    /// The required keys among `properties`, as bits of their indices.
    required: u64,
    /// The required keys that are not among `properties`.
    required_others: Vec<String>,
    /// `additionalProperties: false`.
    closed: bool,
    /// `allOf` of `{if, then}`: an object the first shape admits must be admitted by the
    /// second (checked once the object is read, see `Checked::admits_node`).
    conditionals: Vec<(ShapeId, ShapeId)>,
}

/// The most `properties` a compiled shape may have.
const MAX_PROPERTIES: usize = 64;

impl Default for Shape {
    fn default() -> Self {
        Shape {
            types: ANY_TYPE,
            one_of: None,
            min_length: None,
            pattern: None,
            minimum: None,
            maximum: None,
            items: ANY,
            min_items: None,
            max_items: None,
            properties: Vec::new(),
            required: 0,
            required_others: Vec::new(),
            closed: false,
            conditionals: Vec::new(),
        }
    }
}

/// A compiled schema: the root shape and every shape it refers to.
pub struct Shapes {
    shapes: Vec<Shape>,
    root: ShapeId,
}

impl Shapes {
    /// Compiles the schema whose documents are `documents` (`(uri, schema)`, the root first),
    /// or `None` when it uses a keyword or form this module does not check.
    pub fn compile(documents: &[(&str, Value)]) -> Option<Shapes> {
        let mut c = Compiler {
            documents,
            shapes: vec![Shape::default()],
            by_uri: HashMap::new(),
        };
        let root = c.document(documents.first()?.0)?;
        Some(Shapes {
            shapes: c.shapes,
            root,
        })
    }

    /// The schema without constraints: its [`Shapes::parse`] reads any UTF-8 JSON value
    /// without a duplicate key or an integer past 64 bits.
    pub fn any() -> &'static Shapes {
        static ANY_VALUE: OnceLock<Shapes> = OnceLock::new();
        ANY_VALUE.get_or_init(|| Shapes {
            shapes: vec![Shape::default()],
            root: ANY,
        })
    }

    /// Parses `bytes` as one JSON value that conforms to the schema, or `None` when it does
    /// not, is not UTF-8 JSON, or has a duplicate key or an integer past 64 bits.
    pub fn parse<'a>(&self, bytes: &'a [u8]) -> Option<Node<'a>> {
        // One UTF-8 check of the whole record costs less than one per string.
        let text = std::str::from_utf8(bytes).ok()?;
        let mut reader = Reader::new(text);
        let mut node = Node::Null;
        Checked {
            shapes: self,
            id: self.root,
        }
        .read_into(&mut reader, &mut node)?;
        reader.at_end().then_some(node)
    }
}

/// The entries named `names` of the JSON object in `bytes`, when [`Shapes::any`] would parse
/// it (`None` when it would not, or when the text is not an object). The other values are
/// checked as they are read but not built, so finding a few fields costs much less than
/// parsing the record.
pub fn any_object_fields<'a>(bytes: &'a [u8], names: &[String]) -> Option<Entries<'a>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut r = Reader::new(text);
    if r.peek()? != b'{' {
        return None;
    }
    let any = Checked {
        shapes: Shapes::any(),
        id: ANY,
    };
    let mut keys = Vec::new();
    let mut found = Entries::new();
    r.elements(b'}', |r| {
        if r.peek()? != b'"' {
            return None;
        }
        let key = r.string()?;
        r.eat(b':')?;
        if names.iter().any(|n| *n == key) {
            let mut value = Node::Null;
            any.read_into(r, &mut value)?;
            found.push((key.clone(), value));
        } else {
            skip(r, &mut Vec::new())?;
        }
        keys.push(key);
        Some(())
    })?;
    (r.at_end() && !has_duplicate_key(&keys, |k| k.as_ref())).then_some(found)
}

/// Whether `bytes` are one JSON value that [`Shapes::any`] would parse, read without building
/// it: `Some(true)` for an object, `Some(false)` for another value, `None` when the parse
/// would refuse it (not UTF-8 JSON, a duplicate key, an integer past 64 bits) or this reader
/// leaves it to `serde_json` (its module docs say when). Checking JSON lines this way costs
/// about half of what `serde_json` takes; callers ask `serde_json` only when it says `None`.
pub fn skim(bytes: &[u8]) -> Option<bool> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut r = Reader::new(text);
    let object = r.peek()? == b'{';
    skip(&mut r, &mut Vec::new())?;
    r.at_end().then_some(object)
}

/// The keywords that check nothing (or, `format`, that the validator does not check).
const ANNOTATIONS: &[&str] = &[
    "$defs",
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "format",
    "examples",
    "default",
];

struct Compiler<'d> {
    documents: &'d [(&'d str, Value)],
    shapes: Vec<Shape>,
    by_uri: HashMap<String, ShapeId>,
}

impl Compiler<'_> {
    /// The shape of the document at `uri`, or of the subschema its fragment names
    /// (`#/$defs/NAME`), compiled once (a document may refer to itself).
    fn document(&mut self, uri: &str) -> Option<ShapeId> {
        if let Some(&id) = self.by_uri.get(uri) {
            return Some(id);
        }
        let documents = self.documents;
        let (base, fragment) = uri.split_once('#').unwrap_or((uri, ""));
        let (_, document) = documents.iter().find(|(u, _)| *u == base)?;
        let schema = document.pointer(fragment)?;
        let id = self.shapes.len();
        self.shapes.push(Shape::default());
        self.by_uri.insert(uri.to_owned(), id);
        let shape = self.shape(schema, base)?;
        match shape {
            Compiled::Shape(s) => self.shapes[id] = *s,
            // A document that is only a reference: point at its target's shape.
            Compiled::Ref(target) => {
                self.by_uri.insert(uri.to_owned(), target);
                return Some(target);
            }
        }
        Some(id)
    }

    /// Compiles `schema` (found in the document at `base`) and stores it.
    fn subschema(&mut self, schema: &Value, base: &str) -> Option<ShapeId> {
        match self.shape(schema, base)? {
            Compiled::Ref(id) => Some(id),
            Compiled::Shape(s) => {
                self.shapes.push(*s);
                Some(self.shapes.len() - 1)
            }
        }
    }

    fn shape(&mut self, schema: &Value, base: &str) -> Option<Compiled> {
        let map = match schema {
            Value::Bool(true) => return Some(Compiled::Ref(ANY)),
            Value::Object(map) => map,
            _ => return None,
        };
        // An `$id` other than the document's sets another base for references: not followed.
        if map.get("$id").is_some_and(|id| id.as_str() != Some(base)) {
            return None;
        }
        if let Some(reference) = map.get("$ref") {
            let only_ref = map
                .keys()
                .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()));
            let target = resolve(base, reference.as_str()?)?;
            return if only_ref {
                self.document(&target).map(Compiled::Ref)
            } else {
                None
            };
        }
        if let Some(branches) = map.get("anyOf") {
            let only_any_of = map
                .keys()
                .all(|k| k == "anyOf" || ANNOTATIONS.contains(&k.as_str()));
            return match only_any_of {
                true => self
                    .any_of(branches.as_array()?, base)
                    .map(|s| Compiled::Shape(Box::new(s))),
                false => None,
            };
        }
        let mut s = Shape::default();
        let mut required: Vec<&str> = Vec::new();
        for (key, v) in map {
            match key.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "type" => s.types = types(v)?,
                "enum" => {
                    let (mut strings, mut null) = (Vec::new(), false);
                    for item in v.as_array()? {
                        match item {
                            Value::String(text) => strings.push(text.clone()),
                            Value::Null => null = true,
                            _ => return None,
                        }
                    }
                    if s.one_of.replace((strings, null)).is_some() {
                        return None;
                    }
                }
                "const" => {
                    let text = v.as_str()?.to_owned();
                    if s.one_of.replace((vec![text], false)).is_some() {
                        return None;
                    }
                }
                "minLength" => s.min_length = Some(usize::try_from(v.as_u64()?).ok()?),
                "pattern" => {
                    let pattern = v.as_str()?;
                    // Escapes of letters mean different classes in ECMA and Rust regexes;
                    // an escaped punctuation character is itself in both.
                    let mut escapes = pattern.split('\\').skip(1);
                    if escapes.any(|after| !after.starts_with(|c: char| c.is_ascii_punctuation())) {
                        return None;
                    }
                    s.pattern = Some(Regex::new(pattern).ok()?);
                }
                "minimum" => s.minimum = Some(bound(v)?),
                "maximum" => s.maximum = Some(bound(v)?),
                "items" => s.items = self.subschema(v, base)?,
                "minItems" => s.min_items = Some(usize::try_from(v.as_u64()?).ok()?),
                "maxItems" => s.max_items = Some(usize::try_from(v.as_u64()?).ok()?),
                "allOf" => {
                    for pair in v.as_array()? {
                        s.conditionals.push(self.conditional(pair, base)?);
                    }
                }
                "properties" => {
                    for (name, sub) in v.as_object()? {
                        let id = self.subschema(sub, base)?;
                        s.properties.push((name.clone(), id));
                    }
                }
                "required" => {
                    for name in v.as_array()? {
                        required.push(name.as_str()?);
                    }
                }
                "additionalProperties" => s.closed = !v.as_bool()?,
                _ => return None,
            }
        }
        // Conditionals are checked on objects only.
        if s.properties.len() > MAX_PROPERTIES || (!s.conditionals.is_empty() && s.types != OBJECT)
        {
            return None;
        }
        for name in required {
            match s.properties.iter().position(|(p, _)| p == name) {
                Some(i) => s.required |= 1 << i,
                None => s.required_others.push(name.to_owned()),
            }
        }
        Some(Compiled::Shape(Box::new(s)))
    }
}

impl Compiler<'_> {
    /// One `{if, then}` of an `allOf` (annotations aside, nothing else).
    fn conditional(&mut self, pair: &Value, base: &str) -> Option<(ShapeId, ShapeId)> {
        let map = pair.as_object()?;
        let only_if_then = map
            .keys()
            .all(|k| k == "if" || k == "then" || ANNOTATIONS.contains(&k.as_str()));
        if !only_if_then {
            return None;
        }
        let condition = self.subschema(map.get("if")?, base)?;
        let then = self.subschema(map.get("then")?, base)?;
        Some((condition, then))
    }

    /// `anyOf` of branches that each name their `type`s, admit types no other branch admits
    /// (integers and numbers count as one), and list no `enum`: one shape admitting every
    /// branch's types, with each branch's checks, since those only constrain values of its own
    /// types (`minLength` strings, `items` arrays, `properties` objects...).
    fn any_of(&mut self, branches: &[Value], base: &str) -> Option<Shape> {
        let numeric = |t: Types| match t & (INTEGER | NUMBER) {
            0 => t,
            _ => t | INTEGER | NUMBER,
        };
        let mut merged = Shape {
            types: 0,
            ..Shape::default()
        };
        for branch in branches {
            let Compiled::Shape(s) = self.shape(branch, base)? else {
                return None;
            };
            let disjoint = numeric(s.types) & numeric(merged.types) == 0;
            let conditional = !s.conditionals.is_empty();
            if s.types == ANY_TYPE || s.one_of.is_some() || !disjoint || conditional {
                return None;
            }
            merged.types |= s.types;
            if s.types & STRING != 0 {
                merged.min_length = s.min_length;
                merged.pattern = s.pattern;
            }
            if s.types & (INTEGER | NUMBER) != 0 {
                merged.minimum = s.minimum;
                merged.maximum = s.maximum;
            }
            if s.types & ARRAY != 0 {
                merged.items = s.items;
                merged.min_items = s.min_items;
                merged.max_items = s.max_items;
            }
            if s.types & OBJECT != 0 {
                merged.properties = s.properties;
                merged.required = s.required;
                merged.required_others = s.required_others;
                merged.closed = s.closed;
            }
        }
        (merged.types != 0).then_some(merged)
    }
}

enum Compiled {
    Shape(Box<Shape>),
    Ref(ShapeId),
}

/// The URI of a `$ref` to a sibling document (`name.schema.json`), relative to `base`.
fn resolve(base: &str, reference: &str) -> Option<String> {
    if reference == "#" {
        return Some(base.to_owned());
    }
    if let Some(name) = reference.strip_prefix("#/$defs/") {
        // A subschema of the same document, named without escapes.
        return (!name.is_empty() && !name.contains(['/', '~', '#']))
            .then(|| format!("{base}{reference}"));
    }
    if reference.contains(['#', ':']) || reference.starts_with('/') || reference.contains("..") {
        return None;
    }
    let dir = &base[..=base.rfind('/')?];
    Some(format!("{dir}{reference}"))
}

fn types(v: &Value) -> Option<Types> {
    let one = |name: &str| match name {
        "null" => Some(NULL),
        "boolean" => Some(BOOLEAN),
        "integer" => Some(INTEGER),
        "number" => Some(NUMBER),
        "string" => Some(STRING),
        "array" => Some(ARRAY),
        "object" => Some(OBJECT),
        _ => None,
    };
    match v {
        Value::String(name) => one(name),
        Value::Array(names) => names
            .iter()
            .try_fold(0, |acc, n| Some(acc | one(n.as_str()?)?)),
        _ => None,
    }
}

fn bound(v: &Value) -> Option<f64> {
    v.as_f64().filter(|b| b.abs() < EXACT)
}

/// Parses one value under shape `id`.
/// The checks of one shape, applied to a value as it is read.
#[derive(Clone, Copy)]
struct Checked<'s> {
    shapes: &'s Shapes,
    id: ShapeId,
}

impl<'s> Checked<'s> {
    fn shape(&self) -> &'s Shape {
        &self.shapes.shapes[self.id]
    }

    fn admits(&self, types: Types) -> bool {
        self.shape().types & types != 0
    }

    /// The checks of shape `id`.
    fn of(&self, id: ShapeId) -> Checked<'s> {
        Checked {
            shapes: self.shapes,
            id,
        }
    }

    /// Reads the next value, checked, into `out` (built in place: moving each value out of
    /// the call that read it cost more than reading it).
    fn read_into<'a>(self, r: &mut Reader<'a>, out: &mut Node<'a>) -> Option<()> {
        *out = match r.peek()? {
            b'"' => {
                let text = r.string()?;
                self.admits_string(&text).then_some(())?;
                Node::String(text)
            }
            b'{' => {
                self.plain(OBJECT)?;
                return self.object(r, out);
            }
            b'[' => {
                self.plain(ARRAY)?;
                return self.array(r, out);
            }
            b't' => {
                r.literal("true")?;
                self.plain(BOOLEAN)?;
                Node::Bool(true)
            }
            b'f' => {
                r.literal("false")?;
                self.plain(BOOLEAN)?;
                Node::Bool(false)
            }
            b'n' => {
                r.literal("null")?;
                self.null()?;
                Node::Null
            }
            _ => {
                let (n, integer, as_f64) = r.number()?;
                self.number(n, as_f64, integer)?
            }
        };
        Some(())
    }

    fn number<'a>(&self, n: Number, as_f64: f64, integer: bool) -> Option<Node<'a>> {
        let s = self.shape();
        let typed = if integer {
            self.admits(INTEGER | NUMBER)
        } else {
            self.admits(NUMBER)
        };
        let in_range =
            s.minimum.is_none_or(|m| as_f64 >= m) && s.maximum.is_none_or(|m| as_f64 <= m);
        (typed && in_range && s.one_of.is_none()).then_some(Node::Number(n))
    }

    /// Whether the shape admits the string `text`.
    fn admits_string(&self, text: &str) -> bool {
        let s = self.shape();
        let listed = s
            .one_of
            .as_ref()
            .is_none_or(|(strings, _)| strings.iter().any(|x| x == text));
        let long_enough = s
            .min_length
            .is_none_or(|n| n == 0 || text.chars().nth(n - 1).is_some());
        let matches = s.pattern.as_ref().is_none_or(|p| p.is_match(text));
        self.admits(STRING) && listed && long_enough && matches
    }

    fn null(&self) -> Option<()> {
        let listed = self.shape().one_of.as_ref().is_none_or(|(_, null)| *null);
        (self.admits(NULL) && listed).then_some(())
    }

    /// For booleans, arrays and objects, which no supported `enum` lists.
    fn plain(&self, types: Types) -> Option<()> {
        (self.admits(types) && self.shape().one_of.is_none()).then_some(())
    }

    /// Reads an array into `out`, each item checked by `items`.
    fn array<'a>(self, r: &mut Reader<'a>, out: &mut Node<'a>) -> Option<()> {
        let item = self.of(self.shape().items);
        // The items gather on the reader's stack (an inner array's are taken off it before
        // the next item goes on), then move into a vector of their number.
        let base = r.items.len();
        r.elements(b']', |r| {
            let mut value = Node::Null;
            item.read_into(r, &mut value)?;
            r.items.push(value);
            Some(())
        })?;
        let items: Vec<Node<'a>> = r.items.drain(base..).collect();
        let fits = self.admits_len(items.len());
        *out = Node::Array(items);
        fits.then_some(())
    }

    /// Whether `minItems` and `maxItems` admit an array of `len` items.
    fn admits_len(&self, len: usize) -> bool {
        let s = self.shape();
        s.min_items.is_none_or(|n| len >= n) && s.max_items.is_none_or(|n| len <= n)
    }

    /// Whether the `if`/`then` pairs hold for the object `node`.
    fn conditionals_hold(&self, node: &Node<'_>) -> bool {
        self.shape().conditionals.iter().all(|&(condition, then)| {
            !self.of(condition).admits_node(node) || self.of(then).admits_node(node)
        })
    }

    /// Whether the shape admits `node`, as the validator decides: exactly, since a `then` is
    /// checked only where its `if` holds (an integer written as a float, `1.0`, is an integer
    /// here, as it is there, though [`Checked::read_into`] refuses it).
    fn admits_node(self, node: &Node<'_>) -> bool {
        if self.id == ANY {
            return true;
        }
        let s = self.shape();
        match node {
            Node::Null => self.null().is_some(),
            Node::Bool(_) => self.plain(BOOLEAN).is_some(),
            Node::Number(n) => {
                let as_f64 = n.as_f64().unwrap_or(f64::NAN);
                let integer = n.is_u64() || n.is_i64() || as_f64.fract() == 0.0;
                self.number(n.clone(), as_f64, integer).is_some()
            }
            Node::String(text) => self.admits_string(text),
            Node::Array(items) => {
                let item = self.of(s.items);
                self.plain(ARRAY).is_some()
                    && self.admits_len(items.len())
                    && items.iter().all(|i| item.admits_node(i))
            }
            Node::Object(entries) => {
                let values_hold = entries.iter().all(|(k, v)| {
                    match s.properties.iter().find(|(name, _)| name == k) {
                        Some(&(_, id)) => self.of(id).admits_node(v),
                        None => !s.closed,
                    }
                });
                let has = |name: &str| entries.iter().any(|(k, _)| k == name);
                let required = s
                    .properties
                    .iter()
                    .enumerate()
                    .all(|(i, (name, _))| s.required & (1 << i) == 0 || has(name))
                    && s.required_others.iter().all(|name| has(name));
                self.plain(OBJECT).is_some()
                    && values_hold
                    && required
                    && self.conditionals_hold(node)
            }
        }
    }

    /// Reads an object into `out`: each property's value checked by its shape, the others'
    /// by none (refused when the shape is closed), then the required keys looked for.
    fn object<'a>(self, r: &mut Reader<'a>, out: &mut Node<'a>) -> Option<()> {
        let s = self.shape();
        // The entries gather on the reader's stack, as an array's items do.
        let base = r.entries.len();
        // Keys usually come in the schema's order: try the property after the last one first.
        let mut next = 0;
        let mut seen = 0u64;
        let mut others = false;
        r.elements(b'}', |r| {
            if r.peek()? != b'"' {
                return None;
            }
            let key = r.string()?;
            r.eat(b':')?;
            let found = match s.properties.get(next) {
                Some((name, _)) if *name == key => Some(next),
                _ => s.properties.iter().position(|(name, _)| *name == key),
            };
            let id = match found {
                Some(i) if seen & (1 << i) != 0 => return None,
                Some(i) => {
                    seen |= 1 << i;
                    next = i + 1;
                    s.properties[i].1
                }
                None if s.closed => return None,
                None => {
                    others = true;
                    ANY
                }
            };
            let mut value = Node::Null;
            self.of(id).read_into(r, &mut value)?;
            r.entries.push((key, value));
            Some(())
        })?;
        let entries: Entries<'a> = r.entries.drain(base..).collect();
        let complete = seen & s.required == s.required
            && s.required_others
                .iter()
                .all(|r| entries.iter().any(|(k, _)| k == r));
        // Keys of properties were checked above; others can only repeat each other.
        let unique = !(others && has_duplicate_key(&entries, |(k, _)| k.as_ref()));
        *out = Node::Object(entries);
        (complete && unique && self.conditionals_hold(out)).then_some(())
    }
}

/// Reads a value as [`Shapes::any`] reads it (the same checks, the same refusals), building
/// nothing. `keys` is scratch room for the keys of the objects being read, shared by the
/// nested ones (each reads its keys after those of the objects around it and takes them out
/// when done), so that a value allocates once rather than once per object.
fn skip<'a>(r: &mut Reader<'a>, keys: &mut Vec<Cow<'a, str>>) -> Option<()> {
    match r.peek()? {
        b'"' => r.string().map(drop),
        b'{' => {
            let outer = keys.len();
            r.elements(b'}', |r| {
                if r.peek()? != b'"' {
                    return None;
                }
                let key = r.string()?;
                r.eat(b':')?;
                skip(r, keys)?;
                keys.push(key);
                Some(())
            })?;
            let unique = !has_duplicate_key(&keys[outer..], |k| k.as_ref());
            keys.truncate(outer);
            unique.then_some(())
        }
        b'[' => r.elements(b']', |r| skip(r, keys)),
        b't' => r.literal("true"),
        b'f' => r.literal("false"),
        b'n' => r.literal("null"),
        _ => r.number().map(drop),
    }
}

/// Whether two of `items` have the same key.
fn has_duplicate_key<T>(items: &[T], key: impl Fn(&T) -> &str) -> bool {
    if items.len() <= 16 {
        return items
            .iter()
            .enumerate()
            .any(|(i, item)| items[..i].iter().any(|earlier| key(earlier) == key(item)));
    }
    let mut keys: Vec<&str> = items.iter().map(key).collect();
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shapes(schema: Value) -> Option<Shapes> {
        Shapes::compile(&[("https://x.invalid/s/root.schema.json", schema)])
    }

    fn accepts(s: &Shapes, text: &str) -> bool {
        s.parse(text.as_bytes()).is_some()
    }

    #[test]
    fn object_fields_are_read_when_the_whole_object_parses() {
        let names = ["k".to_owned(), "n".to_owned()];
        let fields = |text: &str| {
            any_object_fields(text.as_bytes(), &names).map(|e| Node::Object(e).to_string())
        };
        assert_eq!(
            fields(r#"{"a": [1, {"b": "x"}], "k": {"deep": [2.5]}, "z": null, "n": 3}"#).as_deref(),
            Some(r#"{"k":{"deep":[2.5]},"n":3}"#)
        );
        assert_eq!(fields(r#"{"a": 1}"#).as_deref(), Some("{}"));
        for text in [
            r#"{"a": 1, "k": 2} "#,
            r#"{"a": {"b": 1, "c": [true, false, null, "\u00e9"]}, "k": "x\ny"}"#,
            // Refused by the whole parse, so by this read too.
            r#"{"a": {"b": 1, "b": 2}, "k": 1}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"k": 1, "k": 2}"#,
            r#"{"a": 123456789012345678901234567890, "k": 1}"#,
            r#"{"a": [1,], "k": 1}"#,
            r#"{"a": "\ud83d alone", "k": 1}"#,
            r#"{"a": tru, "k": 1}"#,
            r#"{"k": 1} x"#,
            r#"{"k": 1"#,
        ] {
            let whole = Shapes::any().parse(text.as_bytes()).is_some();
            assert_eq!(fields(text).is_some(), whole, "{text}");
        }
        let deep = format!(
            "{{\"a\": {}{}, \"k\": 1}}",
            "[".repeat(130),
            "]".repeat(130)
        );
        assert_eq!(fields(&deep), None, "nesting past the limit");
        assert_eq!(fields("[1]"), None, "not an object");
    }

    #[test]
    fn skimming_accepts_only_what_serde_json_accepts() {
        for text in [
            r#"{"a": [1, {"b": "x"}], "k": {"deep": [2.5e-3]}, "z": null} "#,
            r#" [1, "\u00e9", true] "#,
            "\"text\"",
            "-0.5",
            // What the fast read leaves to serde_json: refused, or not read the same way.
            r#"{"a": {"b": 1, "b": 2}}"#,
            r#"{"a": 123456789012345678901234567890}"#,
            r#"{"a": [1,]}"#,
            r#"{"a": "\ud83d alone"}"#,
            r#"{"a": tru}"#,
            r#"{"k": 1} x"#,
            r#"{"k": 1"#,
            "",
        ] {
            let skimmed = skim(text.as_bytes());
            let serde = crate::json::strict::validate(text.as_bytes()).is_ok();
            assert!(skimmed.is_none() || serde, "{text}");
            assert_eq!(
                skimmed.is_some(),
                Shapes::any().parse(text.as_bytes()).is_some()
            );
            if let Some(object) = skimmed {
                assert_eq!(object, text.trim_start().starts_with('{'), "{text}");
            }
        }
    }

    #[test]
    fn each_keyword_checks_what_the_validator_checks() {
        let s = shapes(json!({
            "type": "object",
            "required": ["id", "n"],
            "properties": {
                "id": {"type": "string", "minLength": 2, "pattern": "^a[a-zé]+$", "format": "date-time"},
                "name": {"minLength": 2},
                "n": {"type": "integer", "minimum": 0, "maximum": 10},
                "x": {"type": ["number", "null"], "minimum": 0.5},
                "kind": {"enum": ["on", "off", null]},
                "list": {"type": "array", "items": {"type": "boolean"}},
                "free": {}
            },
            "additionalProperties": false
        }))
        .expect("compiles");
        assert!(accepts(
            &s,
            r#"{"id": "ab", "n": 10, "x": null, "kind": "on", "list": [true], "free": {"a": [1]}}"#
        ));
        assert!(accepts(
            &s,
            r#"{"n": 0, "id": "aé", "x": 0.5, "kind": null, "name": 3}"#
        ));
        for bad in [
            r#"{"id": "ab"}"#,
            r#"{"id": "a", "n": 1}"#,
            r#"{"id": "ba", "n": 1}"#,
            r#"{"id": "ab", "n": 11}"#,
            r#"{"id": "ab", "n": -1}"#,
            r#"{"id": "ab", "n": 1.5}"#,
            r#"{"id": "ab", "n": 1, "x": 0.4}"#,
            r#"{"id": "ab", "n": 1, "x": "1"}"#,
            r#"{"id": "ab", "n": 1, "kind": "up"}"#,
            r#"{"id": "ab", "n": 1, "kind": {"on": null}}"#,
            r#"{"id": "ab", "n": 1, "list": [1]}"#,
            r#"{"id": "ab", "n": 1, "other": 1}"#,
            r#"{"id": "ab", "n": 1, "name": "é"}"#,
            r#"[1]"#,
        ] {
            assert!(!accepts(&s, bad), "{bad}");
        }
        // Valid for the validator, but left to the slow way.
        assert!(!accepts(&s, r#"{"id": "ab", "n": 1.0}"#));
        assert!(!accepts(&s, r#"{"id": "ab", "n": 1, "n": 2}"#));
        assert!(!accepts(
            &s,
            r#"{"id": "ab", "n": 1, "free": {"a": 1, "a": 2}}"#
        ));
        assert!(!accepts(&s, r#"{"id": "ab", "n": 1} x"#));
        assert!(s.parse(b"{\"id\": \"a\xff\", \"n\": 1}").is_none());
    }

    #[test]
    fn a_schema_with_keywords_it_does_not_check_does_not_compile() {
        assert!(shapes(json!({"anyOf": [{"minLength": 1}, {"type": "null"}]})).is_none());
        assert!(shapes(json!({"anyOf": [{"type": "integer"}, {"type": "number"}]})).is_none());
        assert!(shapes(json!({"anyOf": [{"enum": ["a"], "type": "string"}]})).is_none());
        assert!(shapes(json!({"type": "object", "anyOf": [{"type": "null"}]})).is_none());
        assert!(shapes(json!({"properties": {"a": {"const": 1}}})).is_none());
        assert!(shapes(json!({"items": {"$ref": "#/$defs/x"}})).is_none());
        assert!(
            shapes(json!({"items": {"$ref": "#/$defs/x/y"}, "$defs": {"x": {"y": {}}}})).is_none()
        );
        assert!(shapes(json!({"pattern": "^\\d+$"})).is_none());
        assert!(shapes(json!({"pattern": "^a\\\\d$"})).is_none());
        let dot = shapes(json!({"pattern": "^v[0-9]\\.[0-9]$"})).expect("compiles");
        assert!(accepts(&dot, r#""v1.2""#) && !accepts(&dot, r#""v1x2""#));
        assert!(shapes(json!({"additionalProperties": {"type": "string"}})).is_none());
        assert!(shapes(json!({"properties": {"a": {"$ref": "missing.schema.json"}}})).is_none());
        assert!(shapes(json!({"properties": {"a": {"$id": "https://x.invalid/t/"}}})).is_none());
    }

    #[test]
    fn if_then_pairs_item_counts_and_self_references_check_what_the_validator_checks() {
        let schema = json!({
            "type": "object",
            "properties": {
                "kind": {"enum": ["a", "b"]},
                "list": {"type": ["array", "null"], "minItems": 1, "maxItems": 2},
                "n": {"type": ["number", "null"]},
                "children": {"type": "array", "items": {"$ref": "#"}}
            },
            "allOf": [
                {"if": {"properties": {"kind": {"const": "a"}}},
                 "then": {"required": ["n"], "properties": {"n": {"type": "integer", "minimum": 0}}}},
                {"if": {"properties": {"kind": {"enum": ["b"]}}},
                 "then": {"properties": {"list": {"maxItems": 1}}}}
            ]
        });
        let s = shapes(schema.clone()).expect("compiles");
        let validator = jsonschema::validator_for(&schema).expect("a schema");
        let texts = [
            r#"{"kind": "a", "n": 1}"#,
            r#"{"kind": "a", "n": 1.0}"#,
            r#"{"kind": "a", "n": 1.5}"#,
            r#"{"kind": "a", "n": -1}"#,
            r#"{"kind": "a"}"#,
            r#"{"n": 2}"#,
            r#"{"n": 2.5}"#,
            r#"{"n": null}"#,
            r#"{"kind": "b", "list": [1]}"#,
            r#"{"kind": "b", "list": [1, 2]}"#,
            r#"{"kind": "a", "n": 0, "list": [1, 2]}"#,
            r#"{"list": []}"#,
            r#"{"list": [1, 2, 3]}"#,
            r#"{"list": null}"#,
            r#"{"children": [{"kind": "a", "n": 1}, {"children": []}]}"#,
            r#"{"children": [{"kind": "a"}]}"#,
            r#"{"children": [{"children": [{"kind": "b", "list": [1, 2]}]}]}"#,
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).expect("json");
            let fast = accepts(&s, text);
            assert!(!fast || validator.is_valid(&value), "{text}");
            let integral_float = text.contains("1.0");
            assert_eq!(fast || integral_float, validator.is_valid(&value), "{text}");
        }
        // Conditionals other than `if`/`then` on objects are left to the validator.
        assert!(shapes(json!({"allOf": [{"type": "object"}]})).is_none());
        assert!(shapes(json!({"allOf": [{"if": {}, "then": {}, "else": {}}]})).is_none());
        assert!(
            shapes(json!({"type": ["object", "null"], "allOf": [{"if": {}, "then": {}}]}))
                .is_none()
        );
        assert!(shapes(json!({"const": "a", "enum": ["b"]})).is_none());
    }

    #[test]
    fn a_subschema_of_defs_is_checked_where_it_is_referred_to() {
        let s = shapes(json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
            "$defs": {
                "item": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}},
                "unused": {"const": 1}
            }
        }))
        .expect("compiles");
        assert!(accepts(&s, r#"{"items": [{"n": 1}, {"n": 2, "x": null}]}"#));
        assert!(!accepts(&s, r#"{"items": [{"n": 1}, {"m": 2}]}"#));
        assert!(!accepts(&s, r#"{"items": [{"n": "1"}]}"#));
    }

    #[test]
    fn any_of_branches_of_distinct_types_check_each_type_as_its_branch_does() {
        let s = shapes(json!({"properties": {"a": {"anyOf": [
            {"type": "null"},
            {"type": "string", "minLength": 2},
            {"type": "array", "items": {"type": "integer"}},
            {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}}}
        ]}}}))
        .expect("compiles");
        for good in [
            r#"{"a": null}"#,
            r#"{"a": "ab"}"#,
            r#"{"a": [1, 2]}"#,
            r#"{"a": {"url": "u", "x": 1}}"#,
        ] {
            assert!(accepts(&s, good), "{good}");
        }
        for bad in [
            r#"{"a": "a"}"#,
            r#"{"a": ["1"]}"#,
            r#"{"a": {"x": 1}}"#,
            r#"{"a": {"url": 1}}"#,
            r#"{"a": 1}"#,
            r#"{"a": true}"#,
        ] {
            assert!(!accepts(&s, bad), "{bad}");
        }
    }

    /// Texts around JSON's edges, each mutated byte by byte: whatever the fast parse reads,
    /// serde_json reads as the same value, written back the same way.
    #[test]
    fn reads_nothing_serde_json_reads_otherwise() {
        let texts = [
            r#"{"a": [1, -2, 3.5, -0, 1e2, 18446744073709551616, true, false, null], "b": {}}"#,
            r#"{"s": "plain", "e": "q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00", "k\n": []}"#,
            r#"[{"x": {"y": [[], [{}], "z"]}}, "é😀", -12345678901234567890, 0.1]"#,
            " \t\r\n{ \"a\" : 1 , \"b\" : [ 2 , 3 ] } \n",
            include_str!("../../sample_data/ledgermind/events.jsonl"),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let specials = b"{}[]:,\"\\ 0-.eEu\n\x01";
        for text in texts {
            for line in text.lines().chain([text]) {
                let bytes = line.as_bytes();
                let mut variants = vec![bytes.to_vec()];
                for at in 0..bytes.len() {
                    let mut cut = bytes.to_vec();
                    cut.remove(at);
                    variants.push(cut);
                    let mut changed = bytes.to_vec();
                    changed[at] = specials[(random() % specials.len() as u64) as usize];
                    variants.push(changed);
                }
                for v in variants {
                    let Some(node) = Shapes::any().parse(&v) else {
                        continue;
                    };
                    let value: Value = serde_json::from_slice(&v).unwrap_or_else(|e| {
                        panic!(
                            "{} read here, not by serde_json: {e}",
                            String::from_utf8_lossy(&v)
                        )
                    });
                    assert_eq!(node.to_value(), value, "{}", String::from_utf8_lossy(&v));
                    assert_eq!(node.to_string(), value.to_string());
                }
            }
        }
        // Nesting: within serde_json's limit read, past it left to serde_json (which refuses).
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(Shapes::any().parse(nested(127).as_bytes()).is_some());
        assert!(Shapes::any().parse(nested(128).as_bytes()).is_none());
        assert!(serde_json::from_str::<Value>(&nested(128)).is_err());
    }
}

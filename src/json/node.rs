//! [`Node`]: a JSON value that borrows its strings from the bytes it was parsed from and keeps
//! object entries in a plain list.
//!
//! It behaves like a [`serde_json::Value`] built with `preserve_order` (which trajkit uses): keys
//! keep their input order, [`Node::insert`] replaces a present key in place, [`Node::remove`]
//! moves the last entry into the gap, and a node serializes to exactly the bytes of the
//! equivalent `Value`. What it saves is the cost of a `Value` on structure-heavy records: one
//! allocation per string and key, and hashing every key into a map.

use std::borrow::Cow;
use std::fmt;
use std::ops::Index;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Number, Value};

/// The entries of a JSON object, in order. Keys are unique in a node built by this crate (a
/// record with a duplicate key is rejected: [`crate::json::strict`]).
pub type Entries<'a> = Vec<(Cow<'a, str>, Node<'a>)>;

/// A JSON value whose strings may borrow from the parsed input.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Node<'a> {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as `serde_json` reads it.
    Number(Number),
    /// A string.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Node<'a>>),
    /// An object, entries in input order.
    Object(Entries<'a>),
}

/// What indexing a missing key or element returns, as `Value` does.
static NULL: Node<'static> = Node::Null;

impl<'a> Node<'a> {
    /// A view of `value`, borrowing its strings.
    pub fn from_value(value: &'a Value) -> Node<'a> {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(Cow::Borrowed(s)),
            Value::Array(items) => Node::Array(items.iter().map(Node::from_value).collect()),
            Value::Object(map) => Node::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Node::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The equivalent `Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.as_ref().to_owned()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(_) => Value::Object(self.to_map()),
        }
    }

    /// The entries of an object as a `Value` map; empty for any other node.
    pub fn to_map(&self) -> Map<String, Value> {
        let entries = self.as_object().map_or(&[][..], Vec::as_slice);
        // Sized once: collecting from a flattened iterator would grow the map from empty.
        let mut map = Map::with_capacity(entries.len());
        for (k, v) in entries {
            map.insert(k.as_ref().to_owned(), v.to_value());
        }
        map
    }

    /// An object node from `(key, value)` pairs.
    pub fn object<K: Into<Cow<'a, str>>>(entries: impl IntoIterator<Item = (K, Node<'a>)>) -> Self {
        Node::Object(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The value of `key` when this is an object that has it.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.as_object()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The value of `key`, mutable, when this is an object that has it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node<'a>> {
        match self {
            Node::Object(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes the value of `key` out of an object, leaving null in its place (entries keep their
    /// order); null when there is no such key.
    pub fn take(&mut self, key: &str) -> Node<'a> {
        self.get_mut(key).map(std::mem::take).unwrap_or_default()
    }

    /// Removes `key` from an object and returns its value; the last entry takes its place
    /// (`serde_json::Map::remove` with `preserve_order`).
    pub fn remove(&mut self, key: &str) -> Option<Node<'a>> {
        let Node::Object(entries) = self else {
            return None;
        };
        let i = entries.iter().position(|(k, _)| k == key)?;
        Some(entries.swap_remove(i).1)
    }

    /// Sets `key` of an object: in place when present, else at the end (`Map::insert`). Does
    /// nothing to a node that is not an object.
    pub fn insert(&mut self, key: impl Into<Cow<'a, str>>, value: Node<'a>) {
        let Node::Object(entries) = self else {
            return;
        };
        let key = key.into();
        match entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = value,
            None => entries.push((key, value)),
        }
    }

    /// The first of `keys` whose value is present and not null, with the key (formats whose
    /// field names vary between writers are read through lists of candidate keys).
    pub fn first_present(&self, keys: &[&'static str]) -> Option<(&'static str, &Node<'a>)> {
        keys.iter()
            .find_map(|&k| self.get(k).filter(|v| !v.is_null()).map(|v| (k, v)))
    }

    /// The node as text: a string as it is, null as empty, anything else as compact JSON.
    pub fn text(&self) -> String {
        match self {
            Node::String(s) => s.as_ref().to_owned(),
            Node::Null => String::new(),
            other => other.to_string(),
        }
    }

    /// The value at a JSON pointer, as `Value::pointer` finds it: `""` is the node itself, each
    /// `/token` (with `~1` for `/` and `~0` for `~`) an object key or an array index written
    /// without a sign or leading zeros.
    pub fn pointer(&self, pointer: &str) -> Option<&Node<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let tokens = pointer.strip_prefix('/')?;
        tokens.split('/').try_fold(self, |target, token| {
            let token = pointer_token(token);
            match target {
                Node::Object(_) => target.get(&token),
                Node::Array(items) => array_index(&token).and_then(|i| items.get(i)),
                _ => None,
            }
        })
    }

    /// Equality as `Value`'s: an object equals one with the same entries in any order (`==`
    /// compares entries in order).
    pub fn equals(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Array(a), Node::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.equals(y))
            }
            (Node::Object(a), Node::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| other.get(k).is_some_and(|w| v.equals(w)))
            }
            (Node::Null, Node::Null) => true,
            (Node::Bool(x), Node::Bool(y)) => x == y,
            (Node::Number(x), Node::Number(y)) => x == y,
            (Node::String(x), Node::String(y)) => x == y,
            _ => false,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number as `u64`, if it is one that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Node::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The number as `i64`, if it is one that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Node::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The number, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Node::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Node<'a>]> {
        match self {
            Node::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The entries, if this is an object.
    pub fn as_object(&self) -> Option<&Entries<'a>> {
        match self {
            Node::Object(entries) => Some(entries),
            _ => None,
        }
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }

    /// True for a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Node::Number(_))
    }

    /// True for an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Node::Object(_))
    }
}

/// An array index token of a JSON pointer: digits, no sign, no leading zero (but `0`).
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

impl<'a> Index<&str> for Node<'a> {
    type Output = Node<'a>;

    /// The value of `key`, or null when absent or when this is not an object (as `Value`).
    fn index(&self, key: &str) -> &Node<'a> {
        self.get(key).unwrap_or(&NULL)
    }
}

impl<'a> From<&'a str> for Node<'a> {
    fn from(s: &'a str) -> Self {
        Node::String(Cow::Borrowed(s))
    }
}

impl From<String> for Node<'_> {
    fn from(s: String) -> Self {
        Node::String(Cow::Owned(s))
    }
}

impl From<Value> for Node<'_> {
    /// The node of an owned value (its strings moved in).
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(b),
            Value::Number(n) => Node::Number(n),
            Value::String(s) => Node::String(Cow::Owned(s)),
            Value::Array(items) => Node::Array(items.into_iter().map(Node::from).collect()),
            Value::Object(map) => Node::Object(
                map.into_iter()
                    .map(|(k, v)| (Cow::Owned(k), Node::from(v)))
                    .collect(),
            ),
        }
    }
}

impl From<bool> for Node<'_> {
    fn from(b: bool) -> Self {
        Node::Bool(b)
    }
}

impl From<u64> for Node<'_> {
    fn from(n: u64) -> Self {
        Node::Number(n.into())
    }
}

impl Serialize for Node<'_> {
    /// Writes what the equivalent `Value` writes.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Number(n) => n.serialize(s),
            Node::String(text) => s.serialize_str(text),
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k.as_ref(), v)?;
                }
                map.end()
            }
        }
    }
}

/// The key or index a JSON pointer's `/token` names: `~1` read as `/`, `~0` as `~`.
pub fn pointer_token(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

impl fmt::Display for Node<'_> {
    /// Compact JSON, as `Value`'s `Display`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_what_its_value_writes_and_edits_like_a_map() {
        let value =
            json!({"b": 1, "a": [true, null, -2, 0.5, "x\n\"y"], "c": {"d": 1.0}, "e": "é"});
        let node = Node::from_value(&value);
        assert_eq!(node.to_string(), value.to_string());
        assert_eq!(node.to_value(), value);
        assert_eq!(Node::from(value.clone()), node);
        assert_eq!(node["a"].as_array().map(<[_]>::len), Some(5));
        assert!(node["missing"]["deeper"].is_null());

        let (mut map, mut n) = (value.as_object().cloned().unwrap_or_default(), node);
        assert_eq!(n.remove("b").map(|v| v.to_value()), map.remove("b"));
        n.insert("a", Node::from(false));
        map.insert("a".into(), json!(false));
        n.insert("z", Node::from(3u64));
        map.insert("z".into(), json!(3));
        assert_eq!(n.to_string(), Value::Object(map).to_string());
    }

    #[test]
    fn pointers_find_what_value_pointers_find() {
        let value = json!({"a": [{"b": 1}, "x"], "c/d": {"e~f": 2}, "": 3, "07": 4});
        let node = Node::from_value(&value);
        for p in [
            "",
            "/a",
            "/a/0",
            "/a/0/b",
            "/a/1",
            "/a/2",
            "/a/01",
            "/a/+1",
            "/a/-1",
            "/c~1d",
            "/c~1d/e~0f",
            "/",
            "/07",
            "/07/x",
            "a",
            "/a/0/b/c",
            "/missing",
        ] {
            assert_eq!(
                node.pointer(p).map(Node::to_value).as_ref(),
                value.pointer(p),
                "{p}"
            );
        }
    }

    #[test]
    fn equality_is_values_whatever_the_order_of_entries() {
        let pairs = [
            (
                json!({"a": 1, "b": [1, {"c": null, "d": "x"}]}),
                json!({"b": [1, {"d": "x", "c": null}], "a": 1}),
            ),
            (json!({"a": 1}), json!({"a": 1.0})),
            (json!({"a": 1}), json!({"a": 1, "b": 2})),
            (json!([1, 2]), json!([2, 1])),
            (json!("x"), json!("x")),
            (json!(null), json!(false)),
        ];
        for (x, y) in pairs {
            let (a, b) = (Node::from_value(&x), Node::from_value(&y));
            assert_eq!(a.equals(&b), x == y, "{x} {y}");
            assert_eq!(b.equals(&a), x == y, "{y} {x}");
        }
    }

    #[test]
    fn text_is_the_string_itself_empty_for_null_or_compact_json() {
        assert_eq!(Node::from("a b").text(), "a b");
        assert_eq!(Node::Null.text(), "");
        let v = json!({"k": [1, "2"]});
        assert_eq!(Node::from_value(&v).text(), r#"{"k":[1,"2"]}"#);
        let entries = json!({"a": null, "b": 2});
        let n = Node::from_value(&entries);
        assert_eq!(
            n.first_present(&["a", "b"]).map(|(k, v)| (k, v.text())),
            Some(("b", "2".to_owned()))
        );
    }
}

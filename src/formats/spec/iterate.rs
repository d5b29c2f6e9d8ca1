//! Iteration in specs (`for_each`): the items of a list, the entries of an object, or lists
//! zipped by position, each seen by templates as `{$index}`, `{$key}` and `{$value/...}`.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;

use super::template::{node_text, Scope, Template, Var};
use super::usage::Usage;
use crate::json::node::pointer_token;
use crate::json::Node;

/// What a `for_each` goes over.
#[derive(Debug)]
pub enum Over {
    /// The list or object a variable holds (`"/steps"`, `"$value/children"`).
    One(Var),
    /// Lists zipped by position: item `i` is the object `{name: list[i], ...}`.
    Zip(Vec<(String, Var)>),
}

/// A compiled `for_each`.
#[derive(Debug)]
pub struct Iteration {
    /// What is iterated.
    pub over: Over,
    /// Leave out items that are empty: `null`, `""`, `[]`, `{}` (for zipped lists, an item
    /// whose values all are).
    pub skip_empty: bool,
    /// Keep only the items for which this template [`holds`] (`keep_if`).
    pub keep_if: Option<Template>,
    /// Leave out the items for which this template [`holds`] (`skip_if`).
    pub skip_if: Option<Template>,
    /// The counts of whether the one list or object is found (a missing one has no items).
    pub usage: Option<Arc<Usage>>,
}

/// One item of an iteration.
pub struct Item<'s> {
    /// Its 0-based position among all items (skipped ones counted).
    pub index: usize,
    /// Its key, when an object's entries are iterated.
    pub key: Option<Cow<'s, str>>,
    /// The item.
    pub value: ItemValue<'s>,
}

/// The value of an item, borrowed from the data.
pub enum ItemValue<'s> {
    /// An item of a list, or the value of an object's entry.
    One(&'s Node<'s>),
    /// Item `i` of zipped lists: each list's name with its item `i`. Templates see the object
    /// `{name: item, ...}`, built only when one reads it whole (`{$value}`).
    Zipped(Vec<(&'s str, &'s Node<'s>)>, OnceCell<Node<'s>>),
}

impl<'s> ItemValue<'s> {
    /// The value at a JSON pointer inside the item, as [`Node::pointer`] finds it.
    fn pointer(&self, pointer: &str) -> Option<&Node<'s>> {
        let (members, whole) = match self {
            ItemValue::One(node) => return node.pointer(pointer),
            ItemValue::Zipped(members, whole) => (members, whole),
        };
        if pointer.is_empty() {
            return Some(whole.get_or_init(|| {
                Node::Object(
                    members
                        .iter()
                        .map(|(name, item)| (Cow::Borrowed(*name), (*item).clone()))
                        .collect(),
                )
            }));
        }
        let tokens = pointer.strip_prefix('/')?;
        let (name, rest) = tokens.split_at(tokens.find('/').unwrap_or(tokens.len()));
        let name = pointer_token(name);
        let (_, item) = members.iter().find(|(n, _)| *n == name)?;
        item.pointer(rest)
    }

    /// True for `null`, `""`, `[]` and `{}`, and for zipped items whose values all are.
    fn is_empty(&self) -> bool {
        match self {
            ItemValue::One(node) => is_empty(node),
            ItemValue::Zipped(members, _) => members.iter().all(|(_, item)| is_empty(item)),
        }
    }
}

impl Iteration {
    /// The items, in order; a missing or null list has none. Errors are `(pointer, message)`.
    pub fn items<'s>(&'s self, scope: &'s dyn Scope) -> Result<Vec<Item<'s>>, (String, String)> {
        let mut items = match &self.over {
            Over::One(var) => match self.found(scope.node(var)) {
                None | Some(Node::Null) => Vec::new(),
                Some(Node::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(index, v)| Item {
                        index,
                        key: None,
                        value: ItemValue::One(v),
                    })
                    .collect(),
                Some(Node::Object(entries)) => entries
                    .iter()
                    .enumerate()
                    .map(|(index, (k, v))| Item {
                        index,
                        key: Some(Cow::Borrowed(k.as_ref())),
                        value: ItemValue::One(v),
                    })
                    .collect(),
                Some(other) => {
                    return Err((
                        var.written(),
                        format!(
                            "for_each needs a list or an object, found {}",
                            preview(other)
                        ),
                    ))
                }
            },
            Over::Zip(lists) => zip(lists, scope)?,
        };
        if self.skip_empty {
            items.retain(|i| !i.value.is_empty());
        }
        if self.keep_if.is_none() && self.skip_if.is_none() {
            return Ok(items);
        }
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            let item_scope = ItemScope { outer: scope, item };
            let holds = |t: &Option<Template>| -> Result<Option<bool>, (String, String)> {
                Ok(match t {
                    None => None,
                    Some(t) => Some(holds(t.render(&item_scope)?.as_deref())),
                })
            };
            if holds(&self.keep_if)? != Some(false) && holds(&self.skip_if)? != Some(true) {
                kept.push(item_scope.item);
            }
        }
        Ok(kept)
    }

    /// `node`, its finding counted when the iteration is tracked.
    fn found<'n>(&self, node: Option<&'n Node<'n>>) -> Option<&'n Node<'n>> {
        if let Some(counts) = &self.usage {
            counts.note(node.is_some());
        }
        node
    }
}

/// The zipped items of `lists`, which must all be lists of one length.
fn zip<'s>(
    lists: &'s [(String, Var)],
    scope: &'s dyn Scope,
) -> Result<Vec<Item<'s>>, (String, String)> {
    let mut found: Vec<(&'s str, &'s [Node<'s>])> = Vec::with_capacity(lists.len());
    for (name, var) in lists {
        match scope.node(var) {
            Some(Node::Array(list)) => found.push((name, list)),
            other => {
                return Err((
                    var.written(),
                    format!(
                        "for_each zips lists, but {name} is {}",
                        other.map_or_else(|| "missing".to_owned(), preview)
                    ),
                ))
            }
        }
    }
    let len = found.first().map_or(0, |(_, l)| l.len());
    if let Some(((name, list), var)) = found
        .iter()
        .zip(lists.iter().map(|(_, v)| v))
        .find(|((_, l), _)| l.len() != len)
    {
        return Err((
            var.written(),
            format!(
                "for_each zips lists of one length, but {name} has {} items and {} has {len}",
                list.len(),
                found[0].0
            ),
        ));
    }
    Ok((0..len)
        .map(|index| Item {
            index,
            key: None,
            value: ItemValue::Zipped(
                found
                    .iter()
                    .filter_map(|(name, list)| Some((*name, list.get(index)?)))
                    .collect(),
                OnceCell::new(),
            ),
        })
        .collect())
}

/// True when a condition (`keep_if`, `skip_if`, a rule's `when`) rendered `text`: anything but
/// nothing and the empty values `skip_empty` leaves out (`""`, and `[]` or `{}`, an empty list
/// or object read whole).
pub fn holds(text: Option<&str>) -> bool {
    !matches!(text, None | Some("" | "[]" | "{}"))
}

fn is_empty(node: &Node<'_>) -> bool {
    match node {
        Node::Null => true,
        Node::String(s) => s.is_empty(),
        Node::Array(items) => items.is_empty(),
        Node::Object(entries) => entries.is_empty(),
        Node::Bool(_) | Node::Number(_) => false,
    }
}

/// A short description of a value, for messages.
fn preview(node: &Node<'_>) -> String {
    let text = node.to_string();
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// The scope of one item: `$index`, `$key` and `$value`, over the scope it is in.
pub struct ItemScope<'s> {
    /// The scope around the iteration.
    pub outer: &'s dyn Scope,
    /// The item.
    pub item: Item<'s>,
}

impl Scope for ItemScope<'_> {
    fn get(&self, var: &Var) -> Option<Cow<'_, str>> {
        match var {
            Var::Index => Some(Cow::Owned(self.item.index.to_string())),
            Var::Key => self.item.key.as_deref().map(Cow::Borrowed),
            Var::Value(p) => self.item.value.pointer(p).and_then(node_text),
            other => self.outer.get(other),
        }
    }

    fn node(&self, var: &Var) -> Option<&Node<'_>> {
        match var {
            Var::Value(p) => self.item.value.pointer(p),
            other => self.outer.node(other),
        }
    }
}

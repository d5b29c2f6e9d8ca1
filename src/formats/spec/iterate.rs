//! Iteration in specs (`for_each`): the items of a list, the entries of an object, or lists
//! zipped by position, each seen by templates as `{$index}`, `{$key}` and `{$value/...}`.

use std::borrow::Cow;
use std::sync::Arc;

use super::template::{node_text, Scope, Var};
use super::usage::Usage;
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
    pub value: Node<'s>,
}

impl Iteration {
    /// The items, in order; a missing or null list has none. Errors are `(pointer, message)`.
    pub fn items<'s>(&self, scope: &'s dyn Scope) -> Result<Vec<Item<'s>>, (String, String)> {
        let mut items = match &self.over {
            Over::One(var) => match self.found(scope.node(var)) {
                None | Some(Node::Null) => Vec::new(),
                Some(Node::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(index, v)| Item {
                        index,
                        key: None,
                        value: v.clone(),
                    })
                    .collect(),
                Some(Node::Object(entries)) => entries
                    .iter()
                    .enumerate()
                    .map(|(index, (k, v))| Item {
                        index,
                        key: Some(Cow::Borrowed(k.as_ref())),
                        value: v.clone(),
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
            items.retain(|i| !is_empty(&i.value, matches!(self.over, Over::Zip(_))));
        }
        Ok(items)
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
    lists: &[(String, Var)],
    scope: &'s dyn Scope,
) -> Result<Vec<Item<'s>>, (String, String)> {
    let mut found: Vec<(&str, &'s [Node<'s>])> = Vec::with_capacity(lists.len());
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
            value: Node::Object(
                found
                    .iter()
                    .map(|(name, list)| (Cow::Owned((*name).to_owned()), list[index].clone()))
                    .collect(),
            ),
        })
        .collect())
}

fn is_empty(node: &Node<'_>, zipped: bool) -> bool {
    match node {
        Node::Null => true,
        Node::String(s) => s.is_empty(),
        Node::Array(items) => items.is_empty(),
        Node::Object(entries) if zipped => entries.iter().all(|(_, v)| is_empty(v, false)),
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

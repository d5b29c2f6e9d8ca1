//! JSON values built from templates: keyword arguments and image annotations. Strings are
//! templates ([`Template::render_value`]), other scalars constants, objects and lists are built
//! member by member, and an object with a `for_each` key is a list with one such object per
//! item.

use serde_json::{Map, Value};

use super::iterate::{Item, ItemScope, Iteration};
use super::template::{Scope, Template};

/// A JSON value to build.
#[derive(Debug)]
pub enum ValueTemplate {
    /// A number, boolean or null written in the spec.
    Constant(Value),
    /// A template: text, or the JSON value of a field or item.
    Text(Template),
    /// An object, members in the spec's order.
    Object(Vec<(String, ValueTemplate)>),
    /// A list.
    List(Vec<ValueTemplate>),
    /// A list with one `body` per item of `each`.
    Each(Box<Iteration>, Box<ValueTemplate>),
}

impl ValueTemplate {
    /// Builds the value; errors are `(pointer, message)` of an iteration over data that is not
    /// a list.
    pub fn render(&self, scope: &dyn Scope) -> Result<Value, (String, String)> {
        Ok(match self {
            ValueTemplate::Constant(v) => v.clone(),
            ValueTemplate::Text(t) => t.render_value(scope)?.unwrap_or(Value::Null),
            ValueTemplate::Object(members) => {
                let mut object = Map::with_capacity(members.len());
                for (k, v) in members {
                    object.insert(k.clone(), v.render(scope)?);
                }
                Value::Object(object)
            }
            ValueTemplate::List(items) => Value::Array(
                items
                    .iter()
                    .map(|v| v.render(scope))
                    .collect::<Result<_, _>>()?,
            ),
            ValueTemplate::Each(each, body) => Value::Array(
                each.items(scope)?
                    .into_iter()
                    .map(|item: Item<'_>| body.render(&ItemScope { outer: scope, item }))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

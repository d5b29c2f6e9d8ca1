//! Reading records without building `serde_json::Value`s: [`Node`], a JSON value borrowed from
//! the record's bytes, and [`Shapes`], a raw schema checked while a record is parsed into one.

pub mod node;
mod read;
pub mod shape;
pub mod strict;

pub use node::{Entries, Node};
pub use shape::Shapes;

use serde_json::{Map, Value};

/// A JSON object of `entries`, in order, the values moved in. `json!` would copy each value
/// through `serde_json::to_value`, a deep copy of a `Value` built to be given away: use this
/// where a value is large (a session's lines, a record's unmapped fields).
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<Map<String, Value>>(),
    )
}

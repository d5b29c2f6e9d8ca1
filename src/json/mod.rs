//! Reading records without building `serde_json::Value`s: [`Node`], a JSON value borrowed from
//! the record's bytes, and [`Shapes`], a raw schema checked while a record is parsed into one.

pub mod node;
mod read;
pub mod shape;
pub mod strict;

pub use node::{Entries, Node};
pub use shape::Shapes;

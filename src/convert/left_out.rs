//! What a reader left out of a trajectory, counted: lines it skipped on purpose (abandoned
//! branches, sidechains, bookkeeping), values it could not map, content blocks no step holds,
//! lines of the wrong type, and how many of the source's conversation messages the steps keep.
//!
//! A reader records them in `details.source.left_out` (written only when something was left
//! out); the convert stage reads them back to print them per input, to warn about a trajectory
//! that keeps under half of its source's messages, and, with `--strict`, to reject a record
//! whose values could not be mapped or whose lines had the wrong type
//! (docs/inputs.md, "What a reader leaves out").

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::json::Node;

/// The counts a reader keeps while it converts one trajectory, and the first problem among
/// the values it could not map and the lines of the wrong type (what `--strict` rejects).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeftOut {
    /// Where the left-out material is listed, as a details path (`details.claude_code`).
    pub place: String,
    /// Source lines or entries skipped on purpose: branches not taken, sidechains, bookkeeping.
    pub lines: u64,
    /// Values the reader could not map to a step (kept as they were in `place`).
    pub values: u64,
    /// Content blocks of a type no step holds (kept in `place`).
    pub blocks: u64,
    /// Lines or values whose type is wrong for their field, skipped.
    pub wrong_typed: u64,
    /// The conversation messages of the source (user and assistant turns, tool results), when
    /// the reader counts them: `(in the source, kept as steps)`.
    pub messages: Option<(u64, u64)>,
    /// The first unmapped value or wrong-typed line: its line, JSON pointer and why.
    pub first: Option<Problem>,
}

/// One value a reader could not map or one line of the wrong type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Problem {
    /// The source line (or record) it is on.
    pub line: u64,
    /// JSON pointer within that line's record.
    pub pointer: String,
    /// Why it could not be read.
    pub reason: String,
}

impl LeftOut {
    /// Nothing left out yet; what is left out is listed at `place` (`details.codex`).
    pub fn new(place: &str) -> LeftOut {
        LeftOut {
            place: place.to_owned(),
            ..LeftOut::default()
        }
    }

    /// Counts a value the reader could not map, at `line` and `pointer`, for `reason`.
    pub fn unmapped(&mut self, line: u64, pointer: &str, reason: impl Into<String>) {
        self.values += 1;
        self.note(line, pointer, reason);
    }

    /// Counts a line (or value) of the wrong type, skipped, at `line` and `pointer`.
    pub fn wrong_type(&mut self, line: u64, pointer: &str, reason: impl Into<String>) {
        self.wrong_typed += 1;
        self.note(line, pointer, reason);
    }

    fn note(&mut self, line: u64, pointer: &str, reason: impl Into<String>) {
        if self.first.is_none() {
            self.first = Some(Problem {
                line,
                pointer: pointer.to_owned(),
                reason: reason.into(),
            });
        }
    }

    /// True when nothing was left out and the messages (if counted) were all kept.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
            && self.values == 0
            && self.blocks == 0
            && self.wrong_typed == 0
            && self.messages.is_none_or(|(n, kept)| kept >= n)
    }

    /// True when `--strict` rejects the record: a value could not be mapped or a line had the
    /// wrong type.
    pub fn is_lossy(&self) -> bool {
        self.values > 0 || self.wrong_typed > 0
    }

    /// Why the steps keep under half of the source's conversation messages, in words (the
    /// counts without the messages).
    pub fn why_lost(&self) -> String {
        self.words(false)
    }

    /// True when the steps keep under half of the source's conversation messages.
    pub fn keeps_under_half(&self) -> bool {
        self.messages.is_some_and(|(n, kept)| n > 0 && kept * 2 < n)
    }

    /// `details.source.left_out`: the counts that are not 0, `messages` as `{in, kept}`,
    /// `where`, and the first problem.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        for (key, n) in [
            ("lines", self.lines),
            ("values", self.values),
            ("blocks", self.blocks),
            ("wrong_typed", self.wrong_typed),
        ] {
            if n > 0 {
                m.insert(key.to_owned(), n.into());
            }
        }
        if let Some((n, kept)) = self.messages {
            m.insert("messages".to_owned(), json!({"in": n, "kept": kept}));
        }
        m.insert("where".to_owned(), self.place.as_str().into());
        if let Some(p) = &self.first {
            m.insert(
                "first".to_owned(),
                json!({"line": p.line, "pointer": p.pointer, "reason": p.reason}),
            );
        }
        Value::Object(m)
    }

    /// Adds `left_out` to `source` (a `details.source` object) unless nothing was left out.
    pub fn add_to(&self, source: &mut Value) {
        if let (false, Some(source)) = (self.is_empty(), source.as_object_mut()) {
            source.insert("left_out".to_owned(), self.to_value());
        }
    }

    /// [`LeftOut::add_to`] for a `details.source` node (a [`crate::convert::Partial`]'s tail).
    pub fn add_to_node(&self, source: &mut Node<'_>) {
        if !self.is_empty() {
            source.insert("left_out", Node::from(self.to_value()));
        }
    }

    /// Adds the counts of `other` (another trajectory of the same input) to these; the place
    /// and first problem are the first ones seen.
    pub fn add(&mut self, other: &LeftOut) {
        if self.place.is_empty() {
            self.place.clone_from(&other.place);
        }
        self.lines += other.lines;
        self.values += other.values;
        self.blocks += other.blocks;
        self.wrong_typed += other.wrong_typed;
        if let Some((n, kept)) = other.messages {
            let (a, b) = self.messages.unwrap_or((0, 0));
            self.messages = Some((a + n, b + kept));
        }
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }

    /// The counts in words, for a summary line: "12 lines left out, 2 values unmapped:
    /// details.claude_code"; empty when nothing was left out.
    pub fn describe(&self) -> String {
        self.words(true)
    }

    /// [`LeftOut::describe`], with the messages kept (`messages`) or without.
    fn words(&self, messages: bool) -> String {
        let plural = |n: u64, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        let mut parts = Vec::new();
        if self.lines > 0 {
            parts.push(plural(self.lines, "line left out", "lines left out"));
        }
        if self.values > 0 {
            parts.push(plural(self.values, "value unmapped", "values unmapped"));
        }
        if self.blocks > 0 {
            parts.push(plural(
                self.blocks,
                "block no step holds",
                "blocks no step holds",
            ));
        }
        if self.wrong_typed > 0 {
            parts.push(plural(
                self.wrong_typed,
                "wrong-typed value",
                "wrong-typed values",
            ));
        }
        if let Some((n, kept)) = self.messages.filter(|(n, kept)| messages && kept < n) {
            parts.push(format!("{kept} of {n} messages kept"));
        }
        if parts.is_empty() {
            return String::new();
        }
        match self.place.as_str() {
            "" => parts.join(", "),
            place => format!("{}: {place}", parts.join(", ")),
        }
    }

    /// The counts a reader wrote in `details.source.left_out`, read back from `source`.
    pub fn read(source: &Value) -> Option<LeftOut> {
        Some(LeftOut::from_value(source.get("left_out")?))
    }

    /// The counts of a `left_out` object (missing counts are 0).
    pub fn from_value(l: &Value) -> LeftOut {
        let n = |k: &str| l.get(k).and_then(Value::as_u64).unwrap_or(0);
        let messages = l.get("messages").map(|m| {
            (
                m["in"].as_u64().unwrap_or(0),
                m["kept"].as_u64().unwrap_or(0),
            )
        });
        let first = l.get("first").map(|p| Problem {
            line: p["line"].as_u64().unwrap_or(0),
            pointer: p["pointer"].as_str().unwrap_or_default().to_owned(),
            reason: p["reason"].as_str().unwrap_or_default().to_owned(),
        });
        LeftOut {
            place: l
                .get("where")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            lines: n("lines"),
            values: n("values"),
            blocks: n("blocks"),
            wrong_typed: n("wrong_typed"),
            messages,
            first,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_counts_read_back() {
        let mut l = LeftOut::new("details.x");
        l.lines = 3;
        l.blocks = 1;
        l.messages = Some((10, 4));
        l.wrong_type(7, "/parentUuid", "expected a string");
        l.unmapped(9, "/message/content/2", "a block of unknown type \"x\"");
        let mut source = json!({"format": "x"});
        l.add_to(&mut source);
        let back = LeftOut::read(&source).expect("written");
        assert_eq!(
            (back.lines, back.values, back.blocks, back.wrong_typed),
            (3, 1, 1, 1)
        );
        assert_eq!(back.messages, Some((10, 4)));
        assert_eq!(back.first.as_ref().map(|p| p.line), Some(7));
        assert!(back.is_lossy() && back.keeps_under_half());
        assert_eq!(source["left_out"]["where"], "details.x");
    }

    #[test]
    fn nothing_left_out_writes_nothing() {
        let mut l = LeftOut::new("details.x");
        l.messages = Some((4, 4));
        let mut source = json!({});
        l.add_to(&mut source);
        assert_eq!(source, json!({}));
    }
}

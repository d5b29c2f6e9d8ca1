//! The budget of a chat template's rendering: how much work and memory one rendering of one
//! record may take, so that a template that loops or builds text without bound rejects the
//! record in bounded time and memory instead of taking the machine down.
//!
//! The budget is minijinja's fuel (one unit per instruction, one per 64 bytes of the strings
//! and list slots a template creates, one per half list item it visits; docs/training.md,
//! "The template's budget"). Each rendering gets [`Budget::fuel`]: a fixed part, and a part
//! that grows with the input, its values and its bytes, so that the real templates of model
//! families, which do a bounded amount of work per message and per byte, never come near it on
//! any record however large. minijinja checks the allocations whose size it knows before it
//! makes them (`"x" * n`, `~`, `+`); trajkit's own filters and functions and the Python
//! methods that can build more than their input ([`method`]) check theirs here too.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, State, Value};

use super::render_thread::{Refused, MAX_STOPPED};

/// Fuel every rendering gets, whatever its input: 2 million instructions, or 128 MiB of
/// strings and lists built. (TRL's 55 templates and the test templates spend at most
/// 25,000 on any trajectory of the shared corpus, but one that walks string content as a list
/// of parts, character by character.)
pub const BASE_FUEL: u64 = 2_000_000;
/// Fuel per value of the input (a message, a key of one, a tool, an item of a tool's
/// parameters, ...): those templates spend at most 125 per value.
pub const FUEL_PER_VALUE: u64 = 1_000;
/// minijinja's fuel is counted in 64ths, one per byte copied: a template may spend this many
/// per byte of the input's strings. Those templates spend at most 13 (Qwen 3.5's, which
/// splits each message's thinking from its content; most spend 1 to 10).
pub const UNITS_PER_BYTE: u64 = 48;
/// The units of one fuel.
const UNITS_PER_FUEL: u64 = 64;
/// What a list slot costs (minijinja's cost: a value and the list's growth).
const SLOT_UNITS: u64 = 32;

/// Bytes a rendering may hold at once, whatever its input: 32 MiB ([`Budget::memory`]). (What
/// minijinja writes without fuel it may write slowly: a lazily doubled list as a string
/// reaches this in a few seconds.)
pub const BASE_MEMORY: u64 = 32 << 20;
/// Bytes a rendering may hold at once per byte of the input's strings.
pub const MEMORY_PER_BYTE: u64 = 16;
/// Bytes a rendering may hold at once per value of the input.
pub const MEMORY_PER_VALUE: u64 = 1024;

/// The largest `indent` `tojson` takes (real templates write 2 or 4).
pub const MAX_INDENT: usize = 64;
/// The longest format `strftime_now` takes (real templates pass a dozen characters).
pub const MAX_STRFTIME: usize = 256;

/// The size of a rendering's input: its values and the bytes of its strings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// The number of values (strings, numbers, list items, map entries, ...).
    pub values: u64,
    /// The bytes of its strings (keys included).
    pub bytes: u64,
}

impl Budget {
    /// The budget of rendering `messages` and `tools`.
    pub fn of(messages: &[Value], tools: &Value) -> Budget {
        let mut b = Budget::default();
        for m in messages {
            b.add(m, 0);
        }
        b.add(tools, 0);
        b
    }

    /// Counts `value` in (nested values up to a depth the JSON reader allows anyway).
    fn add(&mut self, value: &Value, depth: usize) {
        self.values += 1;
        match value.kind() {
            ValueKind::String => self.bytes += value.as_str().map_or(0, str::len) as u64,
            ValueKind::Seq | ValueKind::Map if depth < 256 => {
                let Ok(items) = value.try_iter() else { return };
                let map = value.kind() == ValueKind::Map;
                for item in items {
                    if map {
                        self.add(&value.get_item(&item).unwrap_or_default(), depth + 1);
                    }
                    self.add(&item, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// The fuel of a rendering of this input.
    pub fn fuel(&self) -> u64 {
        BASE_FUEL
            .saturating_add(self.values.saturating_mul(FUEL_PER_VALUE))
            .saturating_add(self.bytes.saturating_mul(UNITS_PER_BYTE) / UNITS_PER_FUEL)
    }
}

impl Budget {
    /// The bytes a rendering of this input may hold at once: what minijinja builds without
    /// asking its fuel is bounded by this ([`super::render_thread`]).
    pub fn memory(&self) -> usize {
        let bytes = BASE_MEMORY
            .saturating_add(self.values.saturating_mul(MEMORY_PER_VALUE))
            .saturating_add(self.bytes.saturating_mul(MEMORY_PER_BYTE));
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }
}

/// The message of a rendering that [`super::render_thread::run`] refused.
pub fn refused(why: &Refused) -> String {
    match why {
        Refused::OverBudget(limit) => format!(
            "the template ran out of its memory budget for this record: it held more than \
             {limit} bytes at once (strings, lists and maps it built); a template that builds \
             without bound"
        ),
        Refused::TooManyStopped => format!(
            "not rendered: {MAX_STOPPED} renderings of this run already ran out of their memory \
             budget (each keeps what it held until the run ends); fix the template"
        ),
        Refused::NoThread(e) => format!("cannot start a thread to render it: {e}"),
    }
}

/// The message of a rendering that ran out of its budget of `fuel`, with what minijinja or
/// a check here said (`detail`).
pub fn exhausted(fuel: u64, detail: Option<&str>) -> String {
    let what = detail.map(|d| format!(" ({d})")).unwrap_or_default();
    format!(
        "the template ran out of its budget for this record{what}: {fuel} units of \
         instructions and of strings and lists built; a template that loops or builds text \
         without bound"
    )
}

/// Fails when building `units` 64ths of fuel's worth of data (bytes, or list slots at 32
/// each) would exhaust what is left, saying `what` would be built.
pub fn ensure(state: &State, units: u64, what: impl FnOnce() -> String) -> Result<(), Error> {
    match state.fuel_levels() {
        Some((_, left)) if units / UNITS_PER_FUEL >= left => {
            Err(Error::new(ErrorKind::OutOfFuel, what()))
        }
        _ => Ok(()),
    }
}

/// The bytes the rest of the budget can still pay for (unbounded without fuel).
pub fn bytes_left(state: &State) -> usize {
    state.fuel_levels().map_or(usize::MAX, |(_, left)| {
        usize::try_from(left.saturating_mul(UNITS_PER_FUEL)).unwrap_or(usize::MAX)
    })
}

/// Python's string, dict and list methods (minijinja-contrib's), after checking that what
/// `str.split`, `str.splitlines` and `str.format` would build fits in the budget (those build
/// lists or text larger than their input, before the engine could charge for it).
pub fn method(
    state: &mut State,
    value: &Value,
    name: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if let Some(s) = value.as_str() {
        match name {
            "split" | "splitlines" => {
                let items = pieces(s, name, args) as u64;
                ensure(state, items.saturating_mul(SLOT_UNITS), || {
                    format!("str.{name} would make a list of {items} items")
                })?;
            }
            "format" => {
                let bytes = format_bound(s, args) as u64;
                ensure(state, bytes, || {
                    format!("str.format could write {bytes} bytes")
                })?;
            }
            _ => {}
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, name, args)
}

/// The number of pieces `s.split(...)` or `s.splitlines()` gives (counted, not built).
fn pieces(s: &str, name: &str, args: &[Value]) -> usize {
    if name == "splitlines" {
        return s.lines().count();
    }
    let limit = args
        .get(1)
        .and_then(|n| i64::try_from(n.clone()).ok())
        .filter(|n| *n >= 0)
        .map_or(usize::MAX, |n| {
            usize::try_from(n).unwrap_or(usize::MAX).saturating_add(1)
        });
    let count = match args.first().and_then(Value::as_str) {
        Some("") => s.chars().count() + 2,
        Some(sep) => s.matches(sep).count() + 1,
        None => s.split_whitespace().count(),
    };
    count.min(limit)
}

/// An upper bound of what `s.format(args)` writes: the text, and for each field the widest
/// of its width or precision and the longest argument as text.
fn format_bound(s: &str, args: &[Value]) -> usize {
    let longest = args
        .iter()
        .map(|a| a.as_str().map_or(64, str::len))
        .max()
        .unwrap_or(0);
    let mut bound = s.len();
    for field in s.split('{').skip(1) {
        let spec = field.split('}').next().unwrap_or_default();
        let widest = spec
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|d| {
                d.parse::<usize>()
                    .ok()
                    .or((!d.is_empty()).then_some(usize::MAX))
            })
            .max()
            .unwrap_or(0);
        bound = bound.saturating_add(widest.max(longest)).saturating_add(64);
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::value::Serde;

    #[test]
    fn the_input_is_measured_by_values_and_bytes() {
        let m = Value::from(Serde(
            serde_json::json!({"role": "user", "content": "hello"}),
        ));
        let b = Budget::of(&[m], &Value::from(Vec::<Value>::new()));
        // The message, two keys and two strings; the tools list.
        assert_eq!(
            b,
            Budget {
                values: 6,
                bytes: 4 + 4 + 7 + 5
            }
        );
        assert_eq!(
            b.fuel(),
            BASE_FUEL + 6 * FUEL_PER_VALUE + 20 * UNITS_PER_BYTE / 64
        );
    }

    #[test]
    fn pieces_are_counted_as_split_makes_them() {
        let arg = |s: &str| Value::from(s);
        assert_eq!(pieces("a b  c", "split", &[]), 3);
        assert_eq!(pieces("a b  c", "split", &[arg(" ")]), 4);
        assert_eq!(pieces("a b  c", "split", &[arg(" "), Value::from(1)]), 2);
        assert_eq!(pieces("ab", "split", &[arg("")]), 4);
        assert_eq!(pieces("a\nb\n", "splitlines", &[]), 2);
    }

    #[test]
    fn a_format_is_bounded_by_its_widths_and_arguments() {
        assert!(format_bound("{:>1000000}", &[Value::from("x")]) >= 1_000_000);
        assert_eq!(
            format_bound("{:>99999999999999999999999}", &[]),
            usize::MAX,
            "a width past usize"
        );
        assert!(format_bound("{0}{0}", &[Value::from("abc")]) < 200);
    }
}

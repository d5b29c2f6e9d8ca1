//! Rules trajkit adds to JSON text: what `serde_json` reads without a word but trajkit refuses,
//! because reading it would change the data.
//!
//! - **A duplicate key** in an object (`json-duplicate-key`): a `Value` keeps the last one, so
//!   the other would be lost silently.
//! - **An integer literal that fits neither `i64` nor `u64`** (`json-number-range`): without
//!   serde_json's `arbitrary_precision` (which trajkit does not enable: it would change how
//!   every number is held and cost an allocation per number) such an integer becomes an `f64`
//!   and loses digits, so two distinct ids can collide. Numbers written with a fraction or an
//!   exponent are floats by their own account and are read as such.
//!
//! The fast reader ([`super::Shapes::parse`]) refuses both (and its callers take the slow way
//! through `serde_json`); the slow way reads with [`parse_value`], which finds a duplicate key
//! while it builds each object and looks for a long integer only when a number came out as a
//! whole float past 2^63, so the rules hold on every path a record takes at next to no cost. [`check`] is the
//! scan that locates a problem (its JSON pointer) once one is known to be there.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::model::rules::escape_pointer;

/// Rule name of a duplicate key.
pub const DUPLICATE_KEY: &str = "json-duplicate-key";
/// Rule name of an integer past 64 bits.
pub const NUMBER_RANGE: &str = "json-number-range";

/// Well-formed JSON text that breaks one of trajkit's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonProblem {
    /// The rule broken, e.g. [`DUPLICATE_KEY`].
    pub rule: &'static str,
    /// JSON pointer to the offending value (or key) in the record.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// Whether an integer literal (an optional `-` and digits) fits `i64` or `u64`.
pub fn integer_fits(token: &str) -> bool {
    token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok()
}

/// The problem of an integer literal that does not fit 64 bits, at `pointer`.
fn out_of_range(token: &str, pointer: String) -> JsonProblem {
    JsonProblem {
        rule: NUMBER_RANGE,
        pointer,
        message: format!(
            "integer {token} does not fit in 64 bits; trajkit would lose digits — store it as a \
             string"
        ),
    }
}

/// The keys of one open object: a list while short, a set once long.
#[derive(Default)]
struct Keys<'a> {
    list: Vec<Cow<'a, str>>,
    set: HashSet<Cow<'a, str>>,
}

impl<'a> Keys<'a> {
    /// Adds `key`; false when it was there already.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        if self.set.is_empty() && self.list.len() < 16 {
            if self.list.contains(&key) {
                return false;
            }
            self.list.push(key);
            return true;
        }
        self.set.extend(self.list.drain(..));
        self.set.insert(key)
    }
}

/// An open array or object, with where in it the scan is.
enum Open<'a> {
    Array(usize),
    Object {
        keys: Keys<'a>,
        /// The key whose value is being read.
        key: Cow<'a, str>,
        /// Whether the next string is a key.
        expect_key: bool,
    },
}

/// The pointer to the value being read in `stack`.
fn pointer(stack: &[Open<'_>]) -> String {
    let mut out = String::new();
    for open in stack {
        out.push('/');
        match open {
            Open::Array(i) => out.push_str(&i.to_string()),
            Open::Object { key, .. } => out.push_str(&escape_pointer(key)),
        }
    }
    out
}

/// Checks JSON text that `serde_json` accepted against trajkit's rules; the first problem in
/// text order. Text that is not well-formed JSON is not diagnosed here (`Ok`).
pub fn check(text: &[u8]) -> Result<(), JsonProblem> {
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => {
                let Some(end) = string_end(text, i + 1) else {
                    return Ok(());
                };
                if let Some(Open::Object {
                    keys,
                    key,
                    expect_key: expect @ true,
                }) = stack.last_mut()
                {
                    let Some(name) = decode(text.get(i..=end).unwrap_or_default()) else {
                        return Ok(());
                    };
                    *expect = false;
                    *key = name.clone();
                    if !keys.insert(name) {
                        let message = format!(
                            "duplicate key {key:?} in an object (JSON readers would keep only \
                             its last value)"
                        );
                        return Err(JsonProblem {
                            rule: DUPLICATE_KEY,
                            pointer: pointer(&stack),
                            message,
                        });
                    }
                }
                i = end + 1;
            }
            b'{' => {
                stack.push(Open::Object {
                    keys: Keys::default(),
                    key: Cow::Borrowed(""),
                    expect_key: true,
                });
                i += 1;
            }
            b'[' => {
                stack.push(Open::Array(0));
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Open::Array(n)) => *n += 1,
                    Some(Open::Object { expect_key, .. }) => *expect_key = true,
                    None => {}
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let len = text[i..]
                    .iter()
                    .take_while(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .count();
                let token = text.get(i..i + len).unwrap_or_default();
                let integer = !token.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                // Up to 18 digits fit either way.
                if integer && len > 18 {
                    let token = std::str::from_utf8(token).unwrap_or_default();
                    if !integer_fits(token) {
                        return Err(out_of_range(token, pointer(&stack)));
                    }
                }
                i += len;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// The position of the quote that closes the string whose text starts at `from`.
fn string_end(text: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let j = from + memchr::memchr2(b'"', b'\\', text.get(from..)?)?;
        if text[j] == b'"' {
            return Some(j);
        }
        from = j + 2;
    }
}

/// The text of a quoted JSON string: borrowed when it has no escape.
fn decode(quoted: &[u8]) -> Option<Cow<'_, str>> {
    let inner = quoted.get(1..quoted.len().checked_sub(1)?)?;
    if memchr::memchr(b'\\', inner).is_none() {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(quoted)
        .ok()
        .map(Cow::Owned)
}

/// Why JSON text could not be read as a [`Value`] under trajkit's rules.
#[derive(Debug)]
pub enum ParseError {
    /// Not JSON (as `serde_json` says).
    Syntax(serde_json::Error),
    /// Well-formed JSON that breaks one of trajkit's rules.
    Rule(JsonProblem),
}

/// Reads `text` into a [`Value`] exactly as `serde_json::from_slice` does, but refuses a
/// duplicate key (found while each object is built) and an integer literal past 64 bits
/// (looked for only when a number came out as a whole float of 2^63 or more, which is what
/// `serde_json` makes of such a literal). Either problem is then located by [`check`].
pub fn parse_value(text: &[u8]) -> Result<Value, ParseError> {
    read_strictly(text, |seen, de| StrictValue(seen).deserialize(de))
}

/// Whether [`parse_value`] would read `text`, found without building the value (the same
/// errors, in the same cases).
pub fn validate(text: &[u8]) -> Result<(), ParseError> {
    read_strictly(text, |seen, de| StrictIgnore(seen).deserialize(de))
}

/// Reads `text` with `read` (given what to note on the way), then refuses it as
/// [`parse_value`] says.
fn read_strictly<'de, T>(
    text: &'de [u8],
    read: impl FnOnce(
        &Seen,
        &mut serde_json::Deserializer<serde_json::de::SliceRead<'de>>,
    ) -> Result<T, serde_json::Error>,
) -> Result<T, ParseError> {
    let seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(text);
    let read = read(&seen, &mut de).and_then(|value| de.end().map(|()| value));
    match read {
        Err(_) if seen.duplicate.get() => Err(ParseError::Rule(locate(text))),
        Err(e) => Err(ParseError::Syntax(e)),
        Ok(value) if seen.huge.get() => match check(text) {
            Ok(()) => Ok(value),
            Err(p) => Err(ParseError::Rule(p)),
        },
        Ok(value) => Ok(value),
    }
}

/// The problem [`check`] finds in text known to have one.
fn locate(text: &[u8]) -> JsonProblem {
    check(text).err().unwrap_or_else(|| JsonProblem {
        rule: DUPLICATE_KEY,
        pointer: String::new(),
        message: "duplicate key in an object (JSON readers would keep only its last value)"
            .to_owned(),
    })
}

/// What [`StrictValue`] met on the way.
#[derive(Default)]
struct Seen {
    /// A key twice in one object (the read fails there).
    duplicate: Cell<bool>,
    /// A whole float of magnitude 2^63 or more: maybe an integer literal past 64 bits.
    huge: Cell<bool>,
}

/// A [`Value`] as `serde_json` builds one, noting in [`Seen`] what trajkit's rules ask about.
#[derive(Clone, Copy)]
struct StrictValue<'a>(&'a Seen);

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // 2^63: an integer literal that fits neither i64 nor u64 is at least this large.
        if v.abs() >= -(i64::MIN as f64) && v.fract() == 0.0 {
            self.0.huge.set(true);
        }
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            if object.insert(key, value).is_some() {
                self.0.duplicate.set(true);
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(Value::Object(object))
    }
}

/// The visitor of [`validate`]: [`StrictValue`]'s checks, with nothing built; an object's keys
/// are borrowed from the text where they hold no escape.
#[derive(Clone, Copy)]
struct StrictIgnore<'a>(&'a Seen);

impl<'de> DeserializeSeed<'de> for StrictIgnore<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictIgnore<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        StrictValue(self.0).visit_f64(v).map(drop)
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A short object's keys are compared in a list; a long one's go to a set.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            map.next_value_seed(self)?;
            let repeated = if many.is_empty() && keys.len() < 32 {
                let seen = keys.contains(&key);
                keys.push(key);
                seen
            } else {
                many.extend(keys.drain(..));
                !many.insert(key)
            };
            if repeated {
                self.0.duplicate.set(true);
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(())
    }
}

/// An object key, borrowed from the text when it can be.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_value_reads_as_serde_json_does_and_refuses_what_check_refuses_and_validate_agrees() {
        let texts = [
            r#"{"id":"a","content":[{"x":1.5,"y":null,"z":[true,"s\u00e9"]}],"n":-3}"#,
            r#"{"id":"a","content":[{"x":1,"y":{"k":1},"x":2}]}"#,
            r#"{"events":[{"id":18446744073709551616}]}"#,
            r#"[1,-9223372036854775809,1e19,-9223372036854775808]"#,
            r#"{"big":18446744073709551615,"float":0.12345678901234567890123}"#,
            r#"[1,2"#,
            r#"{"a":1} x"#,
            r#""a\ud800""#,
        ];
        let long: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let long_ok = format!("{{{}}}", long.join(","));
        let long_repeated = format!("{{{},\"k39\":0}}", long.join(","));
        let escaped_repeat = r#"{"a/b":1,"a\u002fb":2}"#;
        let texts =
            texts
                .into_iter()
                .chain([long_ok.as_str(), long_repeated.as_str(), escaped_repeat]);
        for text in texts {
            let checked = validate(text.as_bytes()).map_err(|e| format!("{e:?}"));
            let parsed = parse_value(text.as_bytes()).map_err(|e| format!("{e:?}"));
            assert_eq!(checked, parsed.map(drop), "{text}");
            let ours = parse_value(text.as_bytes());
            let theirs = serde_json::from_str::<Value>(text);
            match (ours, check(text.as_bytes())) {
                (Ok(v), Ok(())) => assert_eq!(Some(v), theirs.ok(), "{text}"),
                (Err(ParseError::Rule(p)), Err(q)) => assert_eq!(p, q, "{text}"),
                (Err(ParseError::Syntax(e)), _) => {
                    let theirs = theirs.expect_err("serde_json refuses it too");
                    assert_eq!(e.to_string(), theirs.to_string(), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    fn problem(text: &str) -> Option<(&'static str, String, String)> {
        check(text.as_bytes())
            .err()
            .map(|p| (p.rule, p.pointer, p.message))
    }

    #[test]
    fn a_duplicate_key_is_reported_with_its_pointer() {
        assert_eq!(
            problem(r#"{"id":"a","content":[{"x":1,"y":{"k":1},"x":2}]}"#),
            Some((
                DUPLICATE_KEY,
                "/content/0/x".to_owned(),
                "duplicate key \"x\" in an object (JSON readers would keep only its last value)"
                    .to_owned()
            ))
        );
        // Keys equal once decoded, and keys in long objects.
        assert_eq!(
            problem(r#"{"a/b":1,"a\u002fb":2}"#).map(|p| p.1),
            Some("/a~1b".to_owned())
        );
        let long: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let text = format!("{{{},\"k7\":0}}", long.join(","));
        assert_eq!(problem(&text).map(|p| p.1), Some("/k7".to_owned()));
        // The same key in sibling objects, and strings that look like keys, are fine.
        assert_eq!(problem(r#"[{"a":1},{"a":2,"b":"a","c":["a","a"]}]"#), None);
        assert_eq!(problem(r#"{"s":"x\"y","t":{"s":"\\"}}"#), None);
    }

    #[test]
    fn integers_past_64_bits_are_reported_floats_are_not() {
        assert_eq!(
            problem(r#"{"events":[{"id":18446744073709551616}]}"#),
            Some((
                NUMBER_RANGE,
                "/events/0/id".to_owned(),
                "integer 18446744073709551616 does not fit in 64 bits; trajkit would lose \
                 digits — store it as a string"
                    .to_owned()
            ))
        );
        assert_eq!(
            problem("[1,-9223372036854775809]").map(|p| p.1),
            Some("/1".to_owned())
        );
        for fine in [
            "18446744073709551615",
            "-9223372036854775808",
            "1.8446744073709552e19",
            "18446744073709551616.0",
            "1e400",
            "\"18446744073709551616\"",
            "{\"18446744073709551616\":0}",
        ] {
            assert_eq!(problem(fine), None, "{fine}");
        }
    }
}

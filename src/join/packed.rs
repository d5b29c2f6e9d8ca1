//! Numbers of the side index packed into 8 bytes and a kind byte (serde_json's `Number` takes
//! 16), and every record's reward components in three parallel arrays: 13 bytes a component
//! instead of 24 for a `(u32, Number)` pair.

use std::ops::Range;

use serde_json::Number;

/// A number's kind: which of serde_json's three representations its bits hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// No number.
    None,
    /// A `u64`.
    PosInt,
    /// An `i64` below zero.
    NegInt,
    /// An `f64`'s bits.
    Float,
}

/// `n` as a kind and 8 bytes.
pub(crate) fn pack(n: &Number) -> (Kind, u64) {
    if let Some(u) = n.as_u64() {
        (Kind::PosInt, u)
    } else if let Some(i) = n.as_i64() {
        (Kind::NegInt, i as u64)
    } else {
        (Kind::Float, n.as_f64().unwrap_or_default().to_bits())
    }
}

/// The number [`pack`] packed (`None` for [`Kind::None`]).
pub(crate) fn unpack(kind: Kind, bits: u64) -> Option<Number> {
    match kind {
        Kind::None => None,
        Kind::PosInt => Some(Number::from(bits)),
        Kind::NegInt => Some(Number::from(bits as i64)),
        // Packed from a `Number`, so finite: `from_f64` refuses only NaN and infinities.
        Kind::Float => Number::from_f64(f64::from_bits(bits)),
    }
}

/// Reward components, (interned name, value), record after record.
#[derive(Debug, Default)]
pub(crate) struct Components {
    names: Vec<u32>,
    kinds: Vec<Kind>,
    values: Vec<u64>,
}

impl Components {
    /// Components stored.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when none is stored.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Components that fit before the arrays grow.
    pub fn capacity(&self) -> usize {
        self.names.capacity()
    }

    /// Makes room for exactly `n` more components.
    pub fn reserve_exact(&mut self, n: usize) {
        self.names.reserve_exact(n);
        self.kinds.reserve_exact(n);
        self.values.reserve_exact(n);
    }

    /// Appends a component.
    pub fn push(&mut self, name: u32, value: &Number) {
        let (kind, bits) = pack(value);
        self.names.push(name);
        self.kinds.push(kind);
        self.values.push(bits);
    }

    /// The components in `range`, as (name, value).
    pub fn get(&self, range: Range<usize>) -> impl Iterator<Item = (u32, Number)> + '_ {
        let names = self.names.get(range.clone()).unwrap_or_default();
        let kinds = self.kinds.get(range.clone()).unwrap_or_default();
        let values = self.values.get(range).unwrap_or_default();
        names
            .iter()
            .zip(kinds)
            .zip(values)
            .filter_map(|((&name, &kind), &bits)| Some((name, unpack(kind, bits)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_kind_and_value() {
        for text in [
            "0",
            "1",
            "18446744073709551615",
            "-1",
            "-9223372036854775808",
            "1.0",
            "-0.5",
            "1e300",
        ] {
            let n: Number = serde_json::from_str(text).expect("number");
            let (kind, bits) = pack(&n);
            let back = unpack(kind, bits).expect("a number");
            assert_eq!(back.to_string(), n.to_string(), "{text}");
            assert_eq!(back.is_f64(), n.is_f64(), "{text}");
        }
        assert_eq!(unpack(Kind::None, 7), None);
    }

    #[test]
    fn components_come_back_by_range() {
        let mut c = Components::default();
        let n = |t: &str| serde_json::from_str::<Number>(t).expect("number");
        c.push(3, &n("1"));
        c.push(4, &n("0.25"));
        c.push(3, &n("-2"));
        assert_eq!(c.len(), 3);
        let got: Vec<(u32, String)> = c.get(1..3).map(|(k, v)| (k, v.to_string())).collect();
        assert_eq!(got, [(4, "0.25".to_owned()), (3, "-2".to_owned())]);
        assert_eq!(c.get(3..3).count(), 0);
        assert_eq!(c.get(2..9).count(), 0);
    }
}

//! The arithmetic template filters (`add`, `subtract`, `multiply`, `divide`) on numbers: JSON
//! numbers of the data taken as they are, text parsed once.

use serde_json::Number;

/// A number the arithmetic filters compute with: an integer while the result is exact, else a
/// finite float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// An integer.
    Int(i64),
    /// A finite float.
    Float(f64),
}

impl Num {
    /// The number `text` writes (spaces around it ignored): an `i64`, else a finite `f64`;
    /// `None` for anything else.
    pub fn parse(text: &str) -> Option<Num> {
        let text = text.trim();
        if let Ok(i) = text.parse::<i64>() {
            return Some(Num::Int(i));
        }
        text.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Num::Float)
    }

    /// The number a JSON number holds, the same as [`Num::parse`] of its text (an integer that
    /// fits `i64` stays one; a larger one becomes the nearest `f64`, as its digits parse).
    pub fn of(n: &Number) -> Option<Num> {
        match n.as_i64() {
            Some(i) => Some(Num::Int(i)),
            None => n.as_f64().filter(|f| f.is_finite()).map(Num::Float),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// The JSON number, whose text is the result's: integers as digits, floats as Python
    /// writes them (`29.0`).
    pub fn to_number(self) -> Option<Number> {
        match self {
            Num::Int(i) => Some(Number::from(i)),
            Num::Float(f) => Number::from_f64(f),
        }
    }
}

/// An arithmetic operation of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `add`.
    Add,
    /// `subtract`.
    Subtract,
    /// `multiply`.
    Multiply,
    /// `divide`.
    Divide,
}

/// `lhs op rhs`: an integer when both sides are integers and the result is exact (division of
/// integers that does not divide evenly gives a float), else a float. `None` on division by
/// zero, or when the result is not finite.
pub fn apply(op: Op, lhs: Num, rhs: Num) -> Option<Num> {
    if let (Num::Int(a), Num::Int(b)) = (lhs, rhs) {
        let exact = match op {
            Op::Add => a.checked_add(b),
            Op::Subtract => a.checked_sub(b),
            Op::Multiply => a.checked_mul(b),
            Op::Divide => (b != 0 && a % b == 0).then(|| a / b),
        };
        if let Some(n) = exact {
            return Some(Num::Int(n));
        }
    }
    let (a, b) = (lhs.as_f64(), rhs.as_f64());
    let result = match op {
        Op::Add => a + b,
        Op::Subtract => a - b,
        Op::Multiply => a * b,
        Op::Divide if b == 0.0 => return None,
        Op::Divide => a / b,
    };
    result.is_finite().then_some(Num::Float(result))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(op: Op, lhs: &str, rhs: &str) -> Option<String> {
        let n = apply(op, Num::parse(lhs)?, Num::parse(rhs)?)?;
        n.to_number().map(|n| n.to_string())
    }

    #[test]
    fn integers_stay_integers_and_floats_print_as_json() {
        assert_eq!(
            text(Op::Subtract, "1242.0", "1213.0").as_deref(),
            Some("29.0")
        );
        assert_eq!(text(Op::Add, "2", " 3 ").as_deref(), Some("5"));
        assert_eq!(text(Op::Divide, "7", "2").as_deref(), Some("3.5"));
        assert_eq!(text(Op::Divide, "8", "2").as_deref(), Some("4"));
        assert_eq!(text(Op::Subtract, "2", "8").as_deref(), Some("-6"));
        assert_eq!(text(Op::Multiply, "0.5", "3").as_deref(), Some("1.5"));
        assert_eq!(text(Op::Divide, "1", "0"), None);
        assert_eq!(text(Op::Add, "x", "1"), None);
        assert_eq!(text(Op::Add, "inf", "1"), None);
        assert_eq!(
            text(Op::Add, "1e308", "1e308"),
            None,
            "overflow to infinity"
        );
        assert_eq!(
            text(Op::Add, "9223372036854775807", "1").as_deref(),
            Some("9.223372036854776e+18"),
            "integer overflow falls back to floats"
        );
    }

    #[test]
    fn a_json_number_is_the_number_its_text_parses_to() {
        let numbers = [
            "0",
            "-0",
            "7",
            "-7",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551615",
            "-9223372036854775808",
            "0.5",
            "-0.0",
            "1.0",
            "29.0",
            "1e16",
            "1e22",
            "123456789.125",
            "1.7976931348623157e308",
            "5e-324",
            "0.1",
        ];
        for text in numbers {
            let n: Number = serde_json::from_str(text).unwrap();
            let shown = crate::json::Node::Number(n.clone()).to_string();
            assert_eq!(Num::of(&n), Num::parse(&shown), "{text}");
            assert_eq!(n.to_string(), shown, "{text}");
        }
    }
}

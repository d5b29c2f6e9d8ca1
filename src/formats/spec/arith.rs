//! The arithmetic template filters (`add`, `subtract`, `multiply`, `divide`) on numbers written
//! as text.

use serde_json::Number;

use super::template::Op;

/// `lhs op rhs`, both JSON numbers as text, as JSON number text: integers when both sides are
/// integers and the result is exact (division of integers that does not divide evenly gives a
/// float), else a float (`29.0`, as Python writes it). `None` when a side is not a number, on
/// division by zero, or when the result is not finite.
pub fn apply(op: Op, lhs: &str, rhs: &str) -> Option<String> {
    let (lhs, rhs) = (lhs.trim(), rhs.trim());
    if let (Ok(a), Ok(b)) = (lhs.parse::<i64>(), rhs.parse::<i64>()) {
        let exact = match op {
            Op::Add => a.checked_add(b),
            Op::Subtract => a.checked_sub(b),
            Op::Multiply => a.checked_mul(b),
            Op::Divide => (b != 0 && a % b == 0).then(|| a / b),
        };
        if let Some(n) = exact {
            return Some(n.to_string());
        }
    }
    let a: f64 = lhs.parse().ok().filter(|a: &f64| a.is_finite())?;
    let b: f64 = rhs.parse().ok().filter(|b: &f64| b.is_finite())?;
    let result = match op {
        Op::Add => a + b,
        Op::Subtract => a - b,
        Op::Multiply => a * b,
        Op::Divide if b == 0.0 => return None,
        Op::Divide => a / b,
    };
    Number::from_f64(result).map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_stay_integers_and_floats_print_as_json() {
        assert_eq!(
            apply(Op::Subtract, "1242.0", "1213.0").as_deref(),
            Some("29.0")
        );
        assert_eq!(apply(Op::Add, "2", "3").as_deref(), Some("5"));
        assert_eq!(apply(Op::Divide, "7", "2").as_deref(), Some("3.5"));
        assert_eq!(apply(Op::Divide, "8", "2").as_deref(), Some("4"));
        assert_eq!(apply(Op::Multiply, "0.5", "3").as_deref(), Some("1.5"));
        assert_eq!(apply(Op::Divide, "1", "0"), None);
        assert_eq!(apply(Op::Add, "x", "1"), None);
        assert_eq!(
            apply(Op::Add, "1e308", "1e308"),
            None,
            "overflow to infinity"
        );
        assert_eq!(
            apply(Op::Add, "9223372036854775807", "1").as_deref(),
            Some("9.223372036854776e+18"),
            "integer overflow falls back to floats"
        );
    }
}

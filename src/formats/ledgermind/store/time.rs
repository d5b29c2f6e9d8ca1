//! LedgerMind timestamps as seconds since the epoch (what an idle gap is measured in).

use chrono::{DateTime, NaiveDateTime};

/// Seconds since the epoch of an ISO 8601 timestamp, with or without an offset (a timestamp
/// without one is taken as UTC).
pub(super) fn seconds(ts: &str) -> Option<i64> {
    if let Some(t) = plain_seconds(ts) {
        return Some(t);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(ts) {
        return Some(t.timestamp());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(ts, f).ok())
        .map(|t| t.and_utc().timestamp())
}

/// [`seconds`] of the usual timestamp without an offset, `YYYY-MM-DD[T ]hh:mm:ss[.f]` (1 to 9
/// fraction digits), read without chrono's format parser; `None` for any other text, which
/// `seconds` then reads the general way.
pub(super) fn plain_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        b.get(range)?.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let fraction = b.get(19..).unwrap_or_default();
    let fraction_ok = match fraction {
        [] => true,
        [b'.', rest @ ..] => (1..=9).contains(&rest.len()) && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    let shape_ok = b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !(shape_ok && fraction_ok) {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(
        i32::try_from(digits(0..4)?).ok()?,
        digits(5..7)?,
        digits(8..10)?,
    )?;
    let time = date.and_hms_opt(digits(11..13)?, digits(14..16)?, digits(17..19)?)?;
    Some(time.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_timestamps_read_as_chrono_reads_them() {
        for ts in [
            "2025-03-01T12:34:56",
            "2025-03-01 12:34:56.5",
            "2024-02-29T23:59:59.123456789",
            "1969-12-31T23:59:59",
        ] {
            let general =
                NaiveDateTime::parse_from_str(&ts.replace(' ', "T"), "%Y-%m-%dT%H:%M:%S%.f")
                    .map(|t| t.and_utc().timestamp());
            assert_eq!(plain_seconds(ts), general.ok(), "{ts}");
        }
        // Not the plain form, or not a real date: left to the general parser.
        for ts in [
            "2025-02-30T00:00:00",
            "2025-03-01T24:00:00",
            "2025-03-01T12:34:56Z",
            "2025-03-01T12:34:56.",
            "2025-03-01T12:34:56.1234567890",
            "2025-3-01T12:34:56",
            "+2025-03-01T12:34:56",
            "2025-03-01t12:34:56",
        ] {
            assert_eq!(plain_seconds(ts), None, "{ts}");
        }
        assert_eq!(
            seconds("2025-03-01T12:34:56Z"),
            plain_seconds("2025-03-01T12:34:56")
        );
    }

    #[test]
    fn timestamps_with_and_without_offsets() {
        assert_eq!(seconds("1970-01-01T00:01:00Z"), Some(60));
        assert_eq!(seconds("1970-01-01T00:01:00"), Some(60));
        assert_eq!(seconds("1970-01-01 00:01:00.250"), Some(60));
        assert_eq!(seconds("1970-01-01T01:01:00+01:00"), Some(60));
        assert_eq!(seconds("yesterday"), None);
    }
}

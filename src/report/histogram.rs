//! Fixed-bucket histograms: counts of whole numbers in powers-of-two buckets, and of rewards
//! in tenths of [0, 1]. Their size does not grow with the input.

use serde::Serialize;

/// Counts of whole numbers in the buckets `0`, `1`, `2`, `3–4`, `5–8`, ..., `2^(k-1)+1 – 2^k`
/// (the last one open).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Log2Histogram {
    /// Values counted in each bucket (trailing empty buckets left out).
    pub counts: Vec<u64>,
}

/// Buckets of a [`Log2Histogram`]: `0`, `1`, then up to `2^40`.
const LOG2_BUCKETS: usize = 42;

impl Log2Histogram {
    /// The bucket of `n`.
    pub fn bucket(n: u64) -> usize {
        match n {
            0 => 0,
            1 => 1,
            // 2 → 2, 3..=4 → 3, 5..=8 → 4: one more than the bits of n - 1.
            _ => (1 + (64 - (n - 1).leading_zeros()) as usize).min(LOG2_BUCKETS - 1),
        }
    }

    /// Counts `n`.
    pub fn add(&mut self, n: u64) {
        let b = Self::bucket(n);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
    }

    /// The label of bucket `b`: `0`, `1`, `2`, `3–4`, `5–8`, ...
    pub fn label(b: usize) -> String {
        if b <= 2 {
            return b.to_string();
        }
        let high = 1u64 << (b - 1);
        format!("{}–{}", high / 2 + 1, high)
    }

    /// `(label, count)` of each bucket up to the last non-empty one.
    pub fn rows(&self) -> Vec<(String, u64)> {
        let first = self.counts.iter().position(|&c| c > 0).unwrap_or(0);
        (first..self.counts.len())
            .map(|b| (Self::label(b), self.counts[b]))
            .collect()
    }

    /// The bucket holding the median (nearest rank) of the values counted.
    pub fn median_bucket(&self) -> Option<usize> {
        let total: u64 = self.counts.iter().sum();
        let want = total.div_ceil(2).max(1);
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Some(b);
            }
        }
        None
    }
}

/// Rewards: count, sum, least and greatest, and counts below 0, in each tenth of [0, 1] (the
/// last one closed) and above 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RewardHistogram {
    /// Trajectories with a reward.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The least.
    pub min: Option<f64>,
    /// The greatest.
    pub max: Option<f64>,
    /// Below 0, the ten tenths of [0, 1], above 1.
    pub counts: [u64; 12],
}

impl RewardHistogram {
    /// Counts `r` (not-a-number is not counted).
    pub fn add(&mut self, r: f64) {
        if r.is_nan() {
            return;
        }
        self.count += 1;
        self.sum += r;
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        self.max = Some(self.max.map_or(r, |m| m.max(r)));
        let b = if r < 0.0 {
            0
        } else if r > 1.0 {
            11
        } else {
            1 + ((r * 10.0) as usize).min(9)
        };
        self.counts[b] += 1;
    }

    /// `(label, count)` of each bucket; the open ends only when they hold values.
    pub fn rows(&self) -> Vec<(String, u64)> {
        let mut rows = Vec::new();
        if self.counts[0] > 0 {
            rows.push(("< 0".to_owned(), self.counts[0]));
        }
        for t in 0..10 {
            let close = if t == 9 { "]" } else { ")" };
            rows.push((
                format!(
                    "[{:.1}, {:.1}{close}",
                    t as f64 / 10.0,
                    (t + 1) as f64 / 10.0
                ),
                self.counts[t + 1],
            ));
        }
        if self.counts[11] > 0 {
            rows.push(("> 1".to_owned(), self.counts[11]));
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_hold_their_labels() {
        for n in [0u64, 1, 2, 3, 4, 5, 8, 9, 16, 17, 1000, 10_000] {
            let label = Log2Histogram::label(Log2Histogram::bucket(n));
            let (lo, hi) = match label.split_once('–') {
                Some((a, b)) => (a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()),
                None => (label.parse().unwrap(), label.parse().unwrap()),
            };
            assert!(lo <= n && n <= hi, "{n} in {label}");
        }
    }

    #[test]
    fn the_median_bucket_is_nearest_rank() {
        let mut h = Log2Histogram::default();
        for n in [1, 1, 5, 100] {
            h.add(n);
        }
        assert_eq!(h.median_bucket(), Some(1));
        h.add(6);
        assert_eq!(h.median_bucket(), Some(Log2Histogram::bucket(5)));
    }

    #[test]
    fn rewards_fall_in_tenths() {
        let mut h = RewardHistogram::default();
        for r in [-0.5, 0.0, 0.05, 0.95, 1.0, 2.0, f64::NAN] {
            h.add(r);
        }
        assert_eq!(h.count, 6);
        assert_eq!(h.counts, [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1]);
        assert_eq!(h.rows().len(), 12);
    }
}

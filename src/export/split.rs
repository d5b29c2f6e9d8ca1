//! Deterministic splits by a stable hash of the trajectory id.
//!
//! The hash: the first 8 bytes of SHA-256 of the id's UTF-8 bytes, read as a big-endian
//! unsigned integer `x`; the record goes to the first split whose cumulative fraction exceeds
//! `x / 2^64`. SHA-256 is specified once and for all, so the assignment never changes with a
//! trajkit or crate version, and anyone can recompute it (Python:
//! `int.from_bytes(hashlib.sha256(id.encode()).digest()[:8], "big") / 2**64`). A trajectory
//! keeps its split when others are added or removed.

use sha2::{Digest, Sha256};

/// Named splits with their fractions, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Splits {
    names: Vec<String>,
    /// Cumulative fractions; the last is 1.
    bounds: Vec<f64>,
}

impl Default for Splits {
    /// Everything in `train`.
    fn default() -> Self {
        Splits {
            names: vec!["train".into()],
            bounds: vec![1.0],
        }
    }
}

impl Splits {
    /// Parses `train=0.98,validation=0.02`: names of letters, digits and `_`, positive
    /// fractions summing to 1.
    pub fn parse(spec: &str) -> Result<Splits, String> {
        let mut names: Vec<String> = Vec::new();
        let mut bounds = Vec::new();
        let mut total = 0.0;
        for part in spec.split(',') {
            let (name, frac) = part
                .split_once('=')
                .ok_or_else(|| format!("--split {spec:?}: expected NAME=FRACTION,..."))?;
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "--split: split name {name:?} must be letters, digits and _"
                ));
            }
            if names.iter().any(|n| n == name) {
                return Err(format!("--split: split {name:?} is given twice"));
            }
            let f: f64 = frac
                .trim()
                .parse()
                .map_err(|_| format!("--split: {frac:?} is not a number"))?;
            if !(f > 0.0 && f <= 1.0) {
                return Err(format!(
                    "--split: the fraction of {name:?} must be in (0, 1]"
                ));
            }
            total += f;
            names.push(name.to_owned());
            bounds.push(total);
        }
        if (total - 1.0).abs() > 1e-9 {
            return Err(format!("--split: fractions sum to {total}, not 1"));
        }
        if let Some(last) = bounds.last_mut() {
            *last = 1.0;
        }
        Ok(Splits { names, bounds })
    }

    /// The split names, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The index of the split of the trajectory `id`.
    pub fn assign(&self, id: &str) -> usize {
        let u = hash_fraction(id);
        self.bounds
            .iter()
            .position(|&b| u < b)
            .unwrap_or(self.bounds.len() - 1)
    }
}

/// `x / 2^64` for `x` the first 8 bytes of SHA-256(`id`), big-endian: a number in [0, 1).
pub fn hash_fraction(id: &str) -> f64 {
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) as f64 / 18_446_744_073_709_551_616.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_prefix() {
        // sha256("abc") = ba7816bf 8f01cfea ...
        assert_eq!(
            hash_fraction("abc"),
            0xba7816bf8f01cfea_u64 as f64 / 2f64.powi(64)
        );
    }

    #[test]
    fn parses_and_rejects_split_specs() {
        let s = Splits::parse("train=0.9,test=0.1").expect("valid");
        assert_eq!(s.names(), ["train", "test"]);
        assert!(Splits::parse("train=0.9").is_err());
        assert!(Splits::parse("train=0.5,train=0.5").is_err());
        assert!(Splits::parse("a-b=1").is_err());
        assert!(Splits::parse("train=x").is_err());
        assert!(Splits::parse("train=1.5,test=-0.5").is_err());
    }

    #[test]
    fn assignment_is_proportional() {
        let s = Splits::parse("train=0.8,validation=0.2").expect("valid");
        let n = 20_000;
        let val = (0..n)
            .filter(|i| s.assign(&format!("traj-{i}")) == 1)
            .count();
        let share = val as f64 / n as f64;
        assert!((share - 0.2).abs() < 0.015, "{share}");
    }
}

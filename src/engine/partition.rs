//! Deterministic partitioning of a run (`trajkit run --partition I/N`): N runs of the same
//! pipeline, each with its own I, produce disjoint shares whose union is the unpartitioned run.
//!
//! A key (an input path relative to the pipeline file's directory, or a trajectory id) belongs
//! to partition `x mod N`, where `x` is the first 8 bytes of SHA-256 of the key's UTF-8 bytes
//! read as a big-endian unsigned integer. SHA-256 is fixed once and for all, so the assignment
//! never changes with a trajkit version or a machine, and anyone can recompute it (Python:
//! `int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % N`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::choice::choice;

choice!(
    /// What a partition is chosen by.
    PartitionBy, "partition key" {
        /// The input file's path relative to the pipeline file's directory: each partition
        /// reads only its own inputs.
        Path = "path",
        /// The trajectory id: each partition reads every input and keeps its trajectories
        /// (for few large inputs).
        Id = "id",
    }
);

/// Partition `index` of `count`, chosen by `by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// 0-based, below `count`.
    pub index: u32,
    /// At least 1.
    pub count: u32,
    /// The key.
    pub by: PartitionBy,
}

/// A partition as recorded in manifests: `index` is left out of a merged manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionInfo {
    /// The partition, or none for a merged manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The number of partitions.
    pub count: u32,
    /// `path` or `id`.
    pub by: String,
}

/// What a partition left to the others (`run.json`, the summary).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elsewhere {
    /// `I/N`.
    pub partition: String,
    /// `path` or `id`.
    pub by: String,
    /// Inputs not read (by path).
    pub inputs: u64,
    /// Records read whose trajectories all belong to other partitions (by id).
    pub records: u64,
    /// Trajectories that belong to other partitions (by id).
    pub trajectories: u64,
}

/// The partition `key` belongs to, of `count` (at least 1).
pub fn bucket(key: &str, count: u32) -> u32 {
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % u64::from(count.max(1))) as u32
}

impl Partition {
    /// Parses `I/N` (0 ≤ I < N).
    pub fn parse(spec: &str, by: PartitionBy) -> Result<Partition, String> {
        let bad = || format!("--partition {spec:?}: expected I/N with 0 <= I < N (e.g. 0/4)");
        let (i, n) = spec.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Partition { index, count, by })
    }

    /// True when `key` belongs to this partition.
    pub fn owns(&self, key: &str) -> bool {
        bucket(key, self.count) == self.index
    }

    /// `part-00000-of-00002`: the tag in this partition's file names.
    pub fn tag(&self) -> String {
        format!("part-{:05}-of-{:05}", self.index, self.count)
    }

    /// `I/N`.
    pub fn spec(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }

    /// As recorded in this partition's manifest.
    pub fn info(&self) -> PartitionInfo {
        PartitionInfo {
            index: Some(self.index),
            count: self.count,
            by: self.by.name().to_owned(),
        }
    }

    /// `path` with the tag before its extension: `out/rejects.jsonl` is
    /// `out/rejects.part-00000-of-00002.jsonl`, `run.json` is `run.part-00000-of-00002.json`.
    pub fn file_name(&self, path: &str) -> String {
        let name_start = path.rfind('/').map_or(0, |i| i + 1);
        let tag = self.tag();
        match path[name_start..].find('.') {
            Some(dot) if dot > 0 => {
                let at = name_start + dot;
                format!("{}.{tag}{}", &path[..at], &path[at..])
            }
            _ => format!("{path}.{tag}"),
        }
    }
}

/// The name of a `run`'s state directory (its resume journal), inside its first export's
/// directory.
const STATE_DIR: &str = ".trajkit-run";

/// The state directory of a run whose first export writes to `export_dir`: `.trajkit-run`, or
/// `.trajkit-run-part-I-of-N` for a partition (N partitions may share the export directory).
pub fn state_dir(export_dir: &Path, partition: Option<&Partition>) -> PathBuf {
    match partition {
        Some(p) => export_dir.join(format!("{STATE_DIR}-{}", p.tag())),
        None => export_dir.join(STATE_DIR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n() {
        let p = Partition::parse("1/3", PartitionBy::Id).expect("valid");
        assert_eq!((p.index, p.count), (1, 3));
        for bad in ["3/3", "0/0", "x/3", "1", "-1/2", "1/2/3", ""] {
            assert!(Partition::parse(bad, PartitionBy::Path).is_err(), "{bad}");
        }
    }

    /// The hash is SHA-256's first 8 bytes, big-endian, mod N: values computed with Python's
    /// hashlib (`int.from_bytes(hashlib.sha256(b"abc").digest()[:8], "big")` is
    /// 0xba7816bf8f01cfea).
    #[test]
    fn buckets_are_sha256_prefixes_mod_n() {
        assert_eq!(
            bucket("abc", 1000),
            (0xba78_16bf_8f01_cfea_u64 % 1000) as u32
        );
        assert_eq!(bucket("abc", 1), 0);
        let p = Partition::parse("0/2", PartitionBy::Path).expect("valid");
        let q = Partition::parse("1/2", PartitionBy::Path).expect("valid");
        for key in ["a", "b", "logs/x.jsonl", ""] {
            assert!(p.owns(key) != q.owns(key), "{key} in exactly one partition");
        }
    }

    #[test]
    fn file_names_carry_the_tag_before_the_extension() {
        let p = Partition::parse("0/2", PartitionBy::Path).expect("valid");
        assert_eq!(
            p.file_name("out/rejects.jsonl"),
            "out/rejects.part-00000-of-00002.jsonl"
        );
        assert_eq!(p.file_name("run.json"), "run.part-00000-of-00002.json");
        assert_eq!(
            p.file_name("a.b/rejects"),
            "a.b/rejects.part-00000-of-00002"
        );
        assert_eq!(p.file_name("x/.hidden"), "x/.hidden.part-00000-of-00002");
    }
}

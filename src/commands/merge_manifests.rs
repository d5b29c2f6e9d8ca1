//! `trajkit merge-manifests`: the part manifests of a partitioned export
//! (`manifest.part-00000-of-00002.json`, ...) checked and combined into `manifest.json` and the
//! dataset card, so the directory reads like an unpartitioned export.
//!
//! The parts must be every partition of one partitioning exactly once, made by this trajkit
//! version with the same target and options (the recorded input paths may differ: machines
//! mount the data in different places), and their data files must be present, listed once and
//! the only shard files in `data/`.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::engine::partition::PartitionInfo;
use crate::export::manifest::{write_manifest_files, Manifest, SplitEntry};
use crate::export::shard::{is_shard_name, ShardFile};
use crate::export::{ExportSummary, Target};

/// What a merge combined.
#[derive(Debug, Clone)]
pub struct MergeSummary {
    /// The number of partitions.
    pub parts: u32,
    /// Data files listed.
    pub files: usize,
    /// The summed counts.
    pub counts: ExportSummary,
}

/// Why a directory's parts could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The parts are incomplete, duplicated or inconsistent (every problem, one a line).
    #[error("{dir}: cannot merge the partition manifests:\n{}", problems.join("\n"))]
    Parts {
        /// The export directory.
        dir: String,
        /// Each problem.
        problems: Vec<String>,
    },
    /// Reading or writing failed.
    #[error("{dir}: {source}")]
    Io {
        /// The export directory.
        dir: String,
        /// Why.
        source: io::Error,
    },
}

/// One part manifest as read back.
#[derive(Debug, Deserialize)]
struct Part {
    trajkit_version: String,
    target: String,
    options: Value,
    counts: ExportSummary,
    splits: Vec<SplitEntry>,
    files: Vec<ShardFile>,
    partition: Option<PartitionInfo>,
}

/// `manifest.part-00001-of-00002.json` is (1, 2).
fn part_of_name(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("manifest.part-")?.strip_suffix(".json")?;
    let (i, n) = rest.split_once("-of-")?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// The options without the input paths.
fn comparable(options: &Value) -> Value {
    let mut o = options.clone();
    if let Value::Object(m) = &mut o {
        m.remove("inputs");
    }
    o
}

/// Keys of two option objects whose values differ.
fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec!["options".into()];
    };
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Reads every part manifest of `dir`, in name order.
fn read_parts(dir: &Path) -> io::Result<Vec<(String, Result<Part, String>)>> {
    let mut names: Vec<String> = fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| part_of_name(n).is_some())
        .collect();
    names.sort();
    let mut parts = Vec::with_capacity(names.len());
    for name in names {
        let bytes = fs::read(dir.join(&name))?;
        let part = serde_json::from_slice::<Part>(&bytes)
            .map_err(|e| format!("{name}: not a partition manifest: {e}"));
        parts.push((name, part));
    }
    Ok(parts)
}

/// Checks the parts of `dir` and writes `manifest.json` and `README.md`.
pub fn merge_parts(dir: &Path) -> Result<MergeSummary, MergeError> {
    let shown = dir.display().to_string();
    let io_err = |source| MergeError::Io {
        dir: shown.clone(),
        source,
    };
    let mut problems = Vec::new();
    let mut parts: Vec<(String, Part, u32, u32)> = Vec::new();
    for (name, part) in read_parts(dir).map_err(io_err)? {
        match part {
            Err(e) => problems.push(e),
            Ok(p) => match &p.partition {
                Some(PartitionInfo {
                    index: Some(i),
                    count,
                    ..
                }) => {
                    let (i, n) = (*i, *count);
                    if part_of_name(&name) != Some((i, n)) {
                        problems.push(format!(
                            "{name} records partition {i}/{n}, not the one its name says \
                             (a copied or renamed manifest?)"
                        ));
                    }
                    parts.push((name, p, i, n));
                }
                _ => problems.push(format!("{name}: records no partition index")),
            },
        }
    }
    parts.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
    let Some((first_name, first, _, count)) = parts.first() else {
        problems.push(
            "no partition manifests (manifest.part-I-of-N.json): run `trajkit run --partition \
             I/N` for every I first"
                .into(),
        );
        return Err(MergeError::Parts {
            dir: shown,
            problems,
        });
    };
    let count = *count;
    let version = env!("CARGO_PKG_VERSION");
    if first.trajkit_version != version {
        problems.push(format!(
            "{first_name} was made by trajkit {}; this is trajkit {version}: merge with the \
             version that made the parts",
            first.trajkit_version
        ));
    }
    let by = first.partition.as_ref().map(|p| p.by.clone());
    let split_names: Vec<&str> = first.splits.iter().map(|s| s.name.as_str()).collect();
    let options = comparable(&first.options);
    for (name, p, _, n) in &parts[1..] {
        if *n != count {
            problems.push(format!(
                "{name} is one of {n} partitions, {first_name} one of {count}: parts of \
                 different partitionings (remove the stale ones)"
            ));
        }
        let mut differ = differing_keys(&options, &comparable(&p.options));
        if p.target != first.target {
            differ.insert(0, "target".into());
        }
        if p.trajkit_version != first.trajkit_version {
            differ.push("trajkit_version".into());
        }
        if p.partition.as_ref().map(|x| &x.by) != by.as_ref() {
            differ.push("partition by".into());
        }
        if p.splits
            .iter()
            .map(|s| s.name.as_str())
            .ne(split_names.iter().copied())
        {
            differ.push("splits".into());
        }
        if !differ.is_empty() {
            problems.push(format!(
                "{name} was made with other options than {first_name} ({} differ): every \
                 partition must run the same pipeline",
                differ.join(", ")
            ));
        }
    }
    let mut by_index: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for (name, _, i, n) in &parts {
        if *n == count {
            by_index.entry(*i).or_default().push(name);
        }
    }
    for i in 0..count {
        match by_index.get(&i).map(Vec::as_slice) {
            None | Some([]) => problems.push(format!(
                "partition {i}/{count} is missing (manifest.part-{i:05}-of-{count:05}.json): \
                 run `trajkit run --partition {i}/{count}` (or copy its files here)"
            )),
            Some([_]) => {}
            Some(names) => problems.push(format!(
                "partition {i}/{count} appears {} times: {}",
                names.len(),
                names.join(", ")
            )),
        }
    }
    let mut listed: HashSet<&str> = HashSet::new();
    for (name, p, _, _) in &parts {
        for f in &p.files {
            if !listed.insert(f.path.as_str()) {
                problems.push(format!(
                    "{} is listed by two parts (again in {name})",
                    f.path
                ));
                continue;
            }
            match fs::metadata(dir.join(&f.path)) {
                Ok(m) if m.len() == f.bytes => {}
                Ok(m) => problems.push(format!(
                    "{} has {} bytes; {name} says {}",
                    f.path,
                    m.len(),
                    f.bytes
                )),
                Err(e) => problems.push(format!("{} (listed in {name}): {e}", f.path)),
            }
        }
    }
    let data = dir.join("data");
    if data.is_dir() {
        let mut strays: Vec<String> = fs::read_dir(&data)
            .map_err(io_err)?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(|n| format!("data/{n}")))
            .filter(|p| {
                is_shard_name(p.trim_start_matches("data/")) && !listed.contains(p.as_str())
            })
            .collect();
        strays.sort();
        for s in strays {
            problems.push(format!(
                "{s} is in no part manifest (a leftover of another run, or a partition still \
                 running?): remove it"
            ));
        }
    }
    let target: Result<Target, String> = first.target.parse();
    if let Err(e) = &target {
        problems.push(format!("{first_name}: {e}"));
    }
    let Ok(target) = target else {
        return Err(MergeError::Parts {
            dir: shown,
            problems,
        });
    };
    if !problems.is_empty() {
        return Err(MergeError::Parts {
            dir: shown,
            problems,
        });
    }
    let mut counts = ExportSummary::default();
    for (_, p, _, _) in &parts {
        counts.add(&p.counts);
    }
    // Split by split, the parts in order, each part's files in its own order.
    let mut files: Vec<ShardFile> = Vec::new();
    for split in &split_names {
        for (_, p, _, _) in &parts {
            files.extend(p.files.iter().filter(|f| f.split == *split).cloned());
        }
    }
    let names: Vec<String> = split_names.iter().map(|s| (*s).to_owned()).collect();
    let mut manifest = Manifest::new(target.name(), &first.options, &counts, &names, &files);
    manifest.partition = Some(PartitionInfo {
        index: None,
        count,
        by: by.unwrap_or_default(),
    });
    write_manifest_files(dir, "manifest.json", &manifest, target).map_err(io_err)?;
    Ok(MergeSummary {
        parts: count,
        files: files.len(),
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_parse() {
        assert_eq!(
            part_of_name("manifest.part-00001-of-00002.json"),
            Some((1, 2))
        );
        assert_eq!(part_of_name("manifest.json"), None);
        assert_eq!(part_of_name("manifest.part-x-of-2.json"), None);
    }

    #[test]
    fn options_compare_without_inputs() {
        let a = serde_json::json!({"inputs": ["/a/x"], "split": "train=1", "dedup": false});
        let b = serde_json::json!({"inputs": ["/b/x"], "split": "train=1", "dedup": true});
        assert_eq!(
            differing_keys(&comparable(&a), &comparable(&b)),
            vec!["dedup".to_owned()]
        );
    }
}

//! Continuation files: a trajectory that context management cut (Harbor's Terminus-2
//! summarizes and goes on in a new file) names its continuation in `continued_trajectory_ref`;
//! Harbor writes `trajectory.json`, `trajectory.cont-1.json`, `trajectory.cont-2.json`, ...
//!
//! The files of a chain are read as one unit only when they were given together (in one
//! directory, or as several inputs: [`ConvertOptions::inputs`]). Each file of a chain is then
//! one record: with `atif_merge_continuations` (the default), the first file's record bundles
//! every file of the chain (one trajectory) and the others' records say which record holds
//! them (no trajectory); without it, each file's record bundles that file with the names of
//! its neighbours in the chain (one trajectory each, linked in `details`). A file outside any
//! chain is read by the generic JSON framing, as any other ATIF input.
//!
//! The file a `continued_trajectory_ref` names is looked up beside the file holding it: the
//! name as written, else its last component, else, when files were renamed with a common
//! prefix (`run-7.trajectory.json` naming `trajectory.cont-1.json`), that prefix and the name.
//! A link counts only both ways: the continuation of `X.cont-N.json` is looked for in its
//! parent `X.cont-(N-1).json` (or `X.json`), and that parent must name it.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::convert::ConvertOptions;
use crate::ingest::{Provenance, RawRecord, RecordSource};
use crate::json::shape::any_object_fields;
use crate::json::{strict, Node};

/// The marker of a record this reader bundled.
pub const BUNDLE: &str = "atif_files";

/// The keys of a document that link it in a chain and name it: all a file's chain is found
/// from (the chain's own file is parsed whole only when it is in a chain).
const HEAD_KEYS: [&str; 3] = ["continued_trajectory_ref", "trajectory_id", "session_id"];

/// The most files a chain is followed through.
const MAX_CHAIN: usize = 10_000;

/// The records of one input file of a chain.
pub struct ChainRecords {
    pending: std::vec::IntoIter<RawRecord>,
}

impl Iterator for ChainRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.pending.next()
    }
}

impl RecordSource for ChainRecords {}

/// The records of `path` when it belongs to a chain of files given together; `None` for any
/// other input (read as JSON values by the generic framing).
pub fn open(path: &str, opts: &ConvertOptions) -> Option<io::Result<Box<dyn RecordSource>>> {
    let file = Path::new(path);
    let name = file.file_name()?.to_str()?;
    if path == "-" || !name.ends_with(".json") || !file.is_file() {
        return None;
    }
    let size = fs::metadata(file).ok()?.len();
    if size > opts.run.max_record_bytes as u64 {
        return None;
    }
    let bytes = fs::read(file).ok()?;
    if cont_index(name).is_none()
        && memchr::memmem::find(&bytes, b"\"continued_trajectory_ref\"").is_none()
    {
        return None;
    }
    // Most such files are in no chain given together, which the keys naming files tell: the
    // whole document is parsed only for a chain.
    let head = any_object_fields(&bytes, &HEAD_KEYS.map(str::to_owned))
        .map(|keys| Node::Object(keys).to_value());
    let head_only = head.is_some();
    let value = match head {
        Some(head) => head,
        None => parse_object(&bytes)?,
    };
    let inputs = given(&opts.inputs);
    let me = Member {
        path: file.to_path_buf(),
        canonical: fs::canonicalize(file).ok()?,
        value,
    };
    let mut chain = chain(root_of(me, &inputs), &inputs);
    if chain.len() < 2 {
        return None;
    }
    let canonical = fs::canonicalize(file).ok()?;
    let at = chain.iter().position(|m| m.canonical == canonical)?;
    if head_only {
        chain[at].value = parse_object(&bytes)?;
    }
    let merge = opts.mapping.bool(&super::MERGE);
    let bundle = if merge && at > 0 {
        json!({BUNDLE: true, "merged_into": show(&chain[0].path), "parts": []})
    } else if merge {
        let parts: Vec<Value> = chain.iter().map(Member::part).collect();
        json!({BUNDLE: true, "parts": parts})
    } else {
        let link = |m: &Member, k: usize| json!({"file": show(&m.path), "index": k, "trajectory_id": m.value["trajectory_id"]});
        json!({
            BUNDLE: true,
            "parts": [chain[at].part()],
            "chain_index": at,
            "chain_root": chain[0].part_head(),
            "continues": at.checked_sub(1).map(|k| link(&chain[k], k)),
            "continued_by": chain.get(at + 1).map(|m| link(m, at + 1)),
        })
    };
    let record = RawRecord {
        provenance: Provenance {
            input: Arc::from(path),
            file: Arc::from(path),
            line: 1,
            index: 0,
        },
        bytes: serde_json::to_vec(&bundle).ok()?,
        error: None,
    };
    Some(Ok(Box::new(ChainRecords {
        pending: vec![record].into_iter(),
    })))
}

/// One file of a chain.
struct Member {
    /// As given (or as derived from a path given).
    path: PathBuf,
    canonical: PathBuf,
    value: Value,
}

impl Member {
    /// The file and its document, as a bundle part.
    fn part(&self) -> Value {
        json!({"file": show(&self.path), "document": self.value})
    }

    /// The file and the keys that name its trajectory (for ids), without its steps.
    fn part_head(&self) -> Value {
        let mut head = json!({"file": show(&self.path)});
        for k in ["trajectory_id", "session_id"] {
            head[k] = self.value[k].clone();
        }
        head
    }
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

/// A JSON object parsed by trajkit's rules on JSON text, or `None`.
fn parse_object(bytes: &[u8]) -> Option<Value> {
    strict::parse_value(bytes).ok().filter(Value::is_object)
}

fn load(path: &Path) -> Option<Member> {
    let bytes = fs::read(path).ok()?;
    Some(Member {
        path: path.to_path_buf(),
        canonical: fs::canonicalize(path).ok()?,
        value: parse_object(&bytes)?,
    })
}

/// `N` of a file named `*.cont-N.json`.
fn cont_index(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".json")?;
    let (_, n) = stem.rsplit_once(".cont-")?;
    n.parse().ok().filter(|n| *n > 0)
}

/// The name without `.json` and without a `.cont-N` suffix.
fn chain_stem(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".json")?;
    Some(match stem.rsplit_once(".cont-") {
        Some((base, n)) if n.parse::<u64>().is_ok() => base,
        _ => stem,
    })
}

/// The file `parent`'s `continued_trajectory_ref` names, if it exists.
fn child_path(parent: &Member) -> Option<PathBuf> {
    let reference = parent.value["continued_trajectory_ref"].as_str()?;
    let dir = parent.path.parent().unwrap_or(Path::new(""));
    let exact = dir.join(reference);
    if exact.is_file() {
        return Some(exact);
    }
    let ref_name = Path::new(reference).file_name()?.to_str()?;
    let plain = dir.join(ref_name);
    if plain.is_file() {
        return Some(plain);
    }
    // Renamed with a prefix: the parent's stem ends with the reference's stem.
    let parent_stem = chain_stem(parent.path.file_name()?.to_str()?)?;
    let ref_stem = chain_stem(ref_name)?;
    let prefix = parent_stem.strip_suffix(ref_stem)?;
    if prefix.is_empty() {
        return None;
    }
    let renamed = dir.join(format!("{prefix}{ref_name}"));
    renamed.is_file().then_some(renamed)
}

/// The file whose continuation `path` would be, by Harbor's names, if it exists.
fn parent_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let n = cont_index(name)?;
    let base = chain_stem(name)?;
    let parent = if n == 1 {
        format!("{base}.json")
    } else {
        format!("{base}.cont-{}.json", n - 1)
    };
    let parent = path.with_file_name(parent);
    parent.is_file().then_some(parent)
}

/// True when `parent` names `child` as its continuation.
fn continues(parent: &Member, child: &Member) -> bool {
    child_path(parent)
        .and_then(|p| fs::canonicalize(p).ok())
        .is_some_and(|c| c == child.canonical)
}

/// The first file of the chain `me` is in, going back through parents given with it.
fn root_of(me: Member, inputs: &HashSet<PathBuf>) -> Member {
    let mut current = me;
    for _ in 0..MAX_CHAIN {
        let Some(parent) = parent_path(&current.path).and_then(|p| load(&p)) else {
            break;
        };
        if !inputs.contains(&parent.canonical) || !continues(&parent, &current) {
            break;
        }
        current = parent;
    }
    current
}

/// `root` and its continuations given with it, in order.
fn chain(root: Member, inputs: &HashSet<PathBuf>) -> Vec<Member> {
    let mut chain = vec![root];
    while chain.len() < MAX_CHAIN {
        let Some(last) = chain.last() else { break };
        let Some(next) = child_path(last).and_then(|p| load(&p)) else {
            break;
        };
        let fresh = chain.iter().all(|m| m.canonical != next.canonical);
        if !fresh || !inputs.contains(&next.canonical) {
            break;
        }
        chain.push(next);
    }
    chain
}

/// The run's inputs, canonical (computed once per run: the list is shared by every input).
fn given(inputs: &Arc<Vec<String>>) -> Arc<HashSet<PathBuf>> {
    type Cache = Option<(Arc<Vec<String>>, Arc<HashSet<PathBuf>>)>;
    static CACHE: Mutex<Cache> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((list, set)) = cache.as_ref() {
        if Arc::ptr_eq(list, inputs) {
            return set.clone();
        }
    }
    let set: Arc<HashSet<PathBuf>> = Arc::new(
        inputs
            .iter()
            .filter_map(|p| fs::canonicalize(p).ok())
            .collect(),
    );
    *cache = Some((inputs.clone(), set.clone()));
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harbor_names_give_the_index_and_the_chain_stem() {
        assert_eq!(cont_index("trajectory.cont-2.json"), Some(2));
        assert_eq!(cont_index("trajectory.json"), None);
        assert_eq!(cont_index("trajectory.cont-x.json"), None);
        assert_eq!(chain_stem("a.trajectory.cont-1.json"), Some("a.trajectory"));
        assert_eq!(chain_stem("a.trajectory.json"), Some("a.trajectory"));
    }

    #[test]
    fn a_renamed_chain_is_followed_both_ways() {
        let dir = tempfile::tempdir().expect("dir");
        let base = dir.path().join("run-7.trajectory.json");
        let cont = dir.path().join("run-7.trajectory.cont-1.json");
        let doc = |r: Option<&str>| json!({"schema_version": "ATIF-v1.7", "continued_trajectory_ref": r, "steps": []});
        fs::write(&base, doc(Some("trajectory.cont-1.json")).to_string()).expect("write");
        fs::write(&cont, doc(None).to_string()).expect("write");
        let parent = load(&base).expect("base");
        assert_eq!(child_path(&parent).as_deref(), Some(cont.as_path()));
        assert_eq!(parent_path(&cont).as_deref(), Some(base.as_path()));
        let inputs: HashSet<PathBuf> = [&base, &cont]
            .iter()
            .filter_map(|p| fs::canonicalize(p).ok())
            .collect();
        let chain = chain(root_of(load(&cont).expect("cont"), &inputs), &inputs);
        assert_eq!(chain.len(), 2);
        assert_eq!(chain[0].path, base);
        // Not given together: no chain.
        let only_base: HashSet<PathBuf> = inputs
            .iter()
            .filter(|p| p.ends_with("run-7.trajectory.json"))
            .cloned()
            .collect();
        assert_eq!(chain_len(&base, &only_base), 1);
    }

    fn chain_len(path: &Path, inputs: &HashSet<PathBuf>) -> usize {
        chain(root_of(load(path).expect("load"), inputs), inputs).len()
    }
}

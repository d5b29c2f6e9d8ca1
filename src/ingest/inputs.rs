//! Expanding the command line's inputs: files as given, directories into their data files;
//! and a pipeline file's glob patterns into the paths they match.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// File names read from a directory input: JSON, JSON lines and `.traj` (one JSON
/// document), optionally gzip- or zstd-compressed.
const DATA_SUFFIXES: &[&str] = &[".json", ".jsonl", ".ndjson", ".traj"];

/// An input that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct InputError {
    /// The input.
    pub path: String,
    /// Why.
    #[source]
    pub source: io::Error,
}

fn is_data_file(name: &str) -> bool {
    let base = super::without_compression(name);
    DATA_SUFFIXES.iter().any(|s| base.ends_with(s))
}

/// The inputs to read, and what was skipped while directories were walked.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expanded {
    /// The inputs, in order.
    pub paths: Vec<String>,
    /// Entries of input directories that were not read, each with the reason: a dangling
    /// symbolic link, a directory reached a second time (a link loop, or two links to it).
    pub warnings: Vec<String>,
}

/// Checks that every input exists and expands directories (recursively, in byte order of their
/// paths, so runs are deterministic) into their data files. `-` (stdin) passes through. A
/// directory without data files is an error.
///
/// Symbolic links inside a directory are followed, to files and to directories. A directory
/// already walked (by its canonical path: a link loop, or a second link to the same directory)
/// is skipped, and so is a dangling link; both are listed in [`Expanded::warnings`].
pub fn expand_inputs(inputs: &[String]) -> Result<Expanded, InputError> {
    expand_inputs_with(inputs, &|_| false, &|_| None)
}

/// [`expand_inputs`], where a path for which `is_unit` holds (given, or found while walking:
/// a directory not to walk into, or a non-JSON file such as a database) is one input, and a
/// file found while walking for which `skip` gives a reason is not read (a file an agent keeps
/// beside its conversation, holding none of its own: Cline's UI log). Skipped files are listed
/// in [`Expanded::warnings`], one line per reason.
pub fn expand_inputs_with(
    inputs: &[String],
    is_unit: &dyn Fn(&Path) -> bool,
    skip: &dyn Fn(&Path) -> Option<&'static str>,
) -> Result<Expanded, InputError> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for input in inputs {
        if input == "-" {
            out.push(input.clone());
            continue;
        }
        let err = |source| InputError {
            path: input.clone(),
            source,
        };
        let meta = fs::metadata(input).map_err(err)?;
        if meta.is_dir() && is_unit(Path::new(input)) {
            out.push(input.clone());
        } else if meta.is_dir() {
            let mut walk = Walk {
                is_unit,
                skip,
                found: Vec::new(),
                visited: HashSet::new(),
                skipped: BTreeMap::new(),
                warnings: &mut warnings,
            };
            walk.dir(Path::new(input)).map_err(err)?;
            for (reason, (first, n)) in walk.skipped {
                walk.warnings.push(match n {
                    1 => format!("{first}: skipped: {reason}"),
                    n => format!("{first} and {} more: skipped: {reason}", n - 1),
                });
            }
            let mut found = walk.found;
            if found.is_empty() {
                return Err(err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "the directory holds no .json, .jsonl, .ndjson or .traj files (optionally .gz/.zst)",
                )));
            }
            found.sort();
            out.extend(found);
        } else {
            fs::File::open(input).map_err(err)?;
            out.push(input.clone());
        }
    }
    Ok(Expanded {
        paths: out,
        warnings,
    })
}

/// True when `path` is a glob pattern (holds `*`, `?` or `[`).
pub fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// The paths `pattern` matches (files and directories), sorted by byte order so runs are
/// deterministic. `*`, `?` and `[...]` do not match `/` or a leading `.` (hidden files, and the
/// partial files of a running export); `**` matches any number of directories. A pattern that
/// matches nothing is an error, as a missing file is.
pub fn expand_glob(pattern: &str) -> Result<Vec<String>, InputError> {
    let err = |source| InputError {
        path: pattern.to_owned(),
        source,
    };
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let paths = glob::glob_with(pattern, options)
        .map_err(|e| err(io::Error::new(io::ErrorKind::InvalidInput, e.to_string())))?;
    let mut found = Vec::new();
    for p in paths {
        let p = p.map_err(|e| err(io::Error::other(e.to_string())))?;
        found.push(p.to_string_lossy().into_owned());
    }
    if found.is_empty() {
        return Err(err(io::Error::new(
            io::ErrorKind::NotFound,
            "the pattern matches no file",
        )));
    }
    found.sort();
    Ok(found)
}

/// A walk of one input directory.
struct Walk<'a> {
    is_unit: &'a dyn Fn(&Path) -> bool,
    skip: &'a dyn Fn(&Path) -> Option<&'static str>,
    found: Vec<String>,
    /// Files not read, by reason: the first one found and how many.
    skipped: BTreeMap<&'static str, (String, usize)>,
    /// The canonical paths of the directories walked so far.
    visited: HashSet<PathBuf>,
    warnings: &'a mut Vec<String>,
}

impl Walk<'_> {
    /// Walks `dir` (unless it was walked already), its entries in byte order of their names so
    /// that which of two links to one directory is read does not depend on the file system.
    fn dir(&mut self, dir: &Path) -> io::Result<()> {
        if !self.visited.insert(fs::canonicalize(dir)?) {
            self.warnings.push(format!(
                "{}: skipped: this directory was already read (a symbolic link loop, or another link to it)",
                dir.display()
            ));
            return Ok(());
        }
        let mut entries = fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<Vec<PathBuf>>>()?;
        entries.sort();
        if let Some(files) = dataset_files(dir, &entries)? {
            self.found
                .extend(files.iter().map(|p| p.to_string_lossy().into_owned()));
            return Ok(());
        }
        for path in entries {
            // Links are followed, to files and to directories.
            let kind = match fs::metadata(&path) {
                Ok(meta) => meta.file_type(),
                Err(e) if fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) => {
                    self.warnings.push(format!(
                        "{}: skipped: dangling symbolic link ({e})",
                        path.display()
                    ));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if kind.is_dir() && (self.is_unit)(&path) {
                self.found.push(path.to_string_lossy().into_owned());
            } else if kind.is_dir() {
                self.dir(&path)?;
            } else if let Some(reason) = (self.skip)(&path) {
                let first = || (path.to_string_lossy().into_owned(), 0);
                self.skipped.entry(reason).or_insert_with(first).1 += 1;
            } else if (self.is_unit)(&path)
                || path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(is_data_file)
            {
                self.found.push(path.to_string_lossy().into_owned());
            }
        }
        Ok(())
    }
}

/// The data files of a dataset directory that `trajkit export` wrote, as its manifests list
/// them: `manifest.json`, else the partitions' `manifest.part-*.json` (a dataset not merged
/// yet). `None` when `dir` holds no such manifest (a manifest of another tool, or a JSON file
/// that is not one, is data like any other). A listed file that is missing is an error: the
/// dataset is incomplete.
fn dataset_files(dir: &Path, entries: &[PathBuf]) -> io::Result<Option<Vec<PathBuf>>> {
    let name = |p: &PathBuf| p.file_name().and_then(|n| n.to_str()).map(str::to_owned);
    let whole = dir.join("manifest.json");
    let manifests: Vec<&PathBuf> = if entries.contains(&whole) {
        entries.iter().filter(|p| **p == whole).collect()
    } else {
        entries
            .iter()
            .filter(|p| {
                name(p).is_some_and(|n| n.starts_with("manifest.part-") && n.ends_with(".json"))
            })
            .collect()
    };
    let mut files = Vec::new();
    for manifest in manifests {
        let Ok(text) = fs::read(manifest) else {
            return Ok(None);
        };
        let Some(listed) = export_manifest_paths(&text) else {
            return Ok(None);
        };
        for path in listed {
            let file = dir.join(&path);
            if !file.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{} lists {path}, which is missing: the dataset is incomplete",
                        manifest.display()
                    ),
                ));
            }
            files.push(file);
        }
    }
    Ok((!files.is_empty()).then_some(files))
}

/// The `files[].path` of a manifest `trajkit export` wrote (an object with `trajkit_version`
/// and `files`), each a relative path inside the directory; `None` for any other JSON.
fn export_manifest_paths(text: &[u8]) -> Option<Vec<String>> {
    let value: serde_json::Value = serde_json::from_slice(text).ok()?;
    value.get("trajkit_version")?.as_str()?;
    let files = value.get("files")?.as_array()?;
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let path = f.get("path")?.as_str()?;
        let relative = Path::new(path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !relative {
            return None;
        }
        out.push(path.to_owned());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_expand_sorted_to_data_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["b.jsonl", "a.json.gz", "notes.txt", "sub/c.ndjson.zst"] {
            let p = dir.path().join(name);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, "").expect("write");
        }
        let root = dir.path().to_string_lossy().into_owned();
        let got = expand_inputs(&[root.clone(), "-".into()])
            .expect("expands")
            .paths;
        assert_eq!(
            got,
            vec![
                format!("{root}/a.json.gz"),
                format!("{root}/b.jsonl"),
                format!("{root}/sub/c.ndjson.zst"),
                "-".into()
            ]
        );
        let units = expand_inputs_with(
            std::slice::from_ref(&root),
            &|p| p.ends_with("sub"),
            &|_| None,
        )
        .expect("expands")
        .paths;
        assert_eq!(
            units,
            vec![
                format!("{root}/a.json.gz"),
                format!("{root}/b.jsonl"),
                format!("{root}/sub"),
            ]
        );
        // Files a format keeps beside a conversation are skipped, one warning per reason.
        let beside = |p: &Path| p.to_str()?.ends_with(".json.gz").then_some("beside");
        let skipped =
            expand_inputs_with(std::slice::from_ref(&root), &|_| false, &beside).expect("expands");
        assert_eq!(
            skipped.paths,
            vec![
                format!("{root}/b.jsonl"),
                format!("{root}/sub/c.ndjson.zst")
            ]
        );
        assert_eq!(
            skipped.warnings,
            vec![format!("{root}/a.json.gz: skipped: beside")]
        );
        let missing = expand_inputs(&[format!("{root}/nope.jsonl")]).expect_err("missing");
        assert!(missing.to_string().contains("nope.jsonl"));
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_are_followed_once_and_dangling_ones_reported() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        fs::write(elsewhere.path().join("x.jsonl"), "").expect("write");
        let root = dir.path().join("in");
        fs::create_dir_all(root.join("real")).expect("mkdir");
        fs::write(root.join("real/a.jsonl"), "").expect("write");
        // A link to a directory outside, a second link to one inside, a loop back to the
        // root, a link to a file and a dangling link.
        symlink(elsewhere.path(), root.join("linked")).expect("link");
        symlink(root.join("real"), root.join("same")).expect("link");
        symlink(&root, root.join("real/up")).expect("link");
        symlink(root.join("real/a.jsonl"), root.join("b.jsonl")).expect("link");
        symlink(root.join("gone"), root.join("dangling.jsonl")).expect("link");
        let r = root.to_string_lossy().into_owned();
        let got = expand_inputs(std::slice::from_ref(&r)).expect("expands");
        assert_eq!(
            got.paths,
            vec![
                format!("{r}/b.jsonl"),
                format!("{r}/linked/x.jsonl"),
                format!("{r}/real/a.jsonl"),
            ]
        );
        assert_eq!(got.warnings.len(), 3, "{:?}", got.warnings);
        assert!(got.warnings[0].starts_with(&format!("{r}/dangling.jsonl: skipped: dangling")));
        assert!(got.warnings[1].starts_with(&format!(
            "{r}/real/up: skipped: this directory was already read"
        )));
        assert!(got.warnings[2].starts_with(&format!(
            "{r}/same: skipped: this directory was already read"
        )));
    }

    #[test]
    fn globs_match_sorted_and_not_hidden_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in [
            "b/x.jsonl",
            "a/y.jsonl",
            "a/deep/z.jsonl",
            "a/.hidden.jsonl",
            "c.json",
        ] {
            let p = dir.path().join(name);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, "").expect("write");
        }
        let root = dir.path().to_string_lossy().into_owned();
        let got = expand_glob(&format!("{root}/**/*.jsonl")).expect("matches");
        assert_eq!(
            got,
            vec![
                format!("{root}/a/deep/z.jsonl"),
                format!("{root}/a/y.jsonl"),
                format!("{root}/b/x.jsonl"),
            ]
        );
        assert_eq!(
            expand_glob(&format!("{root}/*/y.jsonl")).expect("matches"),
            vec![format!("{root}/a/y.jsonl")]
        );
        let none = expand_glob(&format!("{root}/*.parquet")).expect_err("no match");
        assert!(none.to_string().contains("matches no file"), "{none}");
        assert!(is_glob("a/*.json") && is_glob("a/[ab].json") && !is_glob("a/b.json"));
    }
}

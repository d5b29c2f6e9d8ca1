//! Expanding the command line's inputs: files as given, directories into their data files;
//! and a pipeline file's glob patterns into the paths they match.

use std::fs;
use std::io;
use std::path::Path;

/// File names read from a directory input: JSON, JSON lines and SWE-agent's `.traj` (one JSON
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
    let base = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(name);
    DATA_SUFFIXES.iter().any(|s| base.ends_with(s))
}

/// Checks that every input exists and expands directories (recursively, in byte order of their
/// paths, so runs are deterministic) into their data files. `-` (stdin) passes through. A
/// directory without data files is an error.
pub fn expand_inputs(inputs: &[String]) -> Result<Vec<String>, InputError> {
    expand_inputs_with(inputs, &|_| false)
}

/// [`expand_inputs`], where a path for which `is_unit` holds (given, or found while walking:
/// a directory not to walk into, or a non-JSON file such as a database) is one input.
pub fn expand_inputs_with(
    inputs: &[String],
    is_unit: &dyn Fn(&Path) -> bool,
) -> Result<Vec<String>, InputError> {
    let mut out = Vec::new();
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
            let mut found = Vec::new();
            walk(Path::new(input), is_unit, &mut found).map_err(err)?;
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
    Ok(out)
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

fn walk(dir: &Path, is_unit: &dyn Fn(&Path) -> bool, found: &mut Vec<String>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() && is_unit(&path) {
            found.push(path.to_string_lossy().into_owned());
        } else if kind.is_dir() {
            walk(&path, is_unit, found)?;
        } else if is_unit(&path)
            || path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_data_file)
        {
            found.push(path.to_string_lossy().into_owned());
        }
    }
    Ok(())
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
        let got = expand_inputs(&[root.clone(), "-".into()]).expect("expands");
        assert_eq!(
            got,
            vec![
                format!("{root}/a.json.gz"),
                format!("{root}/b.jsonl"),
                format!("{root}/sub/c.ndjson.zst"),
                "-".into()
            ]
        );
        let units = expand_inputs_with(std::slice::from_ref(&root), &|p| p.ends_with("sub"))
            .expect("expands");
        assert_eq!(
            units,
            vec![
                format!("{root}/a.json.gz"),
                format!("{root}/b.jsonl"),
                format!("{root}/sub"),
            ]
        );
        let missing = expand_inputs(&[format!("{root}/nope.jsonl")]).expect_err("missing");
        assert!(missing.to_string().contains("nope.jsonl"));
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

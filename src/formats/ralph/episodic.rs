//! Reading an aiwg Ralph episodic-memory directory (`tasks/task-NNN/attempts/NNN/…`) into one
//! record per attempt.
//!
//! Accepted roots: the memory directory holding `tasks/`, the `tasks/` directory itself, or one
//! `task-*` directory holding `attempts/`. Tasks and attempts are read in name order. Each
//! attempt becomes a JSON bundle (see [`Bundle`]) that the `ralph` converter maps; files that
//! are missing are `null` (no `actions.jsonl`: no actions yet), files that are there but cannot
//! be read (a directory, no permission) or are malformed are listed in `problems` with their
//! file and line, and the converter rejects such an attempt. A directory that cannot be listed
//! is a problem too; a task whose problems no attempt carries yields them as records of their
//! own. A line of the task's `reflections.jsonl` that is not a JSON object, or whose
//! `attempt_id` names no attempt directory, becomes a record of its own, so it is rejected
//! with its line.
//! Symbolic links that resolve outside the root are refused.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::ingest::{FrameError, Provenance, RawRecord, RecordSource};
use crate::json::strict::{self, ParseError};

/// One attempt with everything the directory says about it.
#[derive(Debug, Serialize)]
pub struct Bundle {
    /// Marks the record as a bundle (not a stray line).
    pub episodic_attempt: bool,
    /// The task directory's name (`task-001`).
    pub task_id: String,
    /// The attempt directory's name (`001`).
    pub attempt: String,
    /// `metadata.json` of the task.
    pub task: Value,
    /// `attempt.json`.
    pub attempt_meta: Value,
    /// `plan.md`, as text.
    pub plan: Option<String>,
    /// The objects of `actions.jsonl`, in order.
    pub actions: Vec<Value>,
    /// `outcome.json`.
    pub outcome: Value,
    /// The task's reflections whose `attempt_id` is this attempt's number.
    pub reflections: Vec<Value>,
    /// Malformed files and lines.
    pub problems: Vec<Problem>,
}

/// A file (and line) of an attempt that could not be read.
#[derive(Debug, Serialize)]
pub struct Problem {
    /// The file.
    pub file: String,
    /// 1-based line, for JSON-lines files.
    pub line: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// True when `dir` looks like an episodic-memory root (see the module docs).
pub fn is_episodic_root(dir: &Path) -> bool {
    dir.join("tasks").is_dir() || is_task_dir(dir) || has_task_dirs(dir)
}

fn is_task_dir(dir: &Path) -> bool {
    dir.join("attempts").is_dir()
}

fn has_task_dirs(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("task-") && is_task_dir(&e.path()))
    })
}

/// Sorted subdirectories of `dir` (following links that stay inside `root`); a directory
/// that cannot be listed, or an entry of it that cannot be read, is a problem.
fn subdirs(dir: &Path, root: &Path, problems: &mut Vec<Problem>) -> Vec<PathBuf> {
    let problem = |e: io::Error| Problem {
        file: dir.display().to_string(),
        line: None,
        message: format!("cannot list the directory: {e}"),
    };
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(problem(e));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        match entry {
            Ok(e) => out.push(e.path()),
            Err(e) => problems.push(problem(e)),
        }
    }
    out.retain(|p| confined(p, root, problems) && p.is_dir());
    out.sort();
    out
}

/// False (with a problem) for a symbolic link that resolves outside `root`.
fn confined(path: &Path, root: &Path, problems: &mut Vec<Problem>) -> bool {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return true;
    }
    match fs::canonicalize(path) {
        Ok(target) if target.starts_with(root) => true,
        Ok(target) => {
            problems.push(Problem {
                file: path.display().to_string(),
                line: None,
                message: format!(
                    "symbolic link to {} leaves the input root; refused",
                    target.display()
                ),
            });
            false
        }
        Err(e) => {
            problems.push(Problem {
                file: path.display().to_string(),
                line: None,
                message: format!("broken symbolic link: {e}"),
            });
            false
        }
    }
}

/// Reads `dir/name` as JSON: `null` when missing, a problem when unreadable or malformed.
fn read_json(dir: &Path, name: &str, root: &Path, problems: &mut Vec<Problem>) -> Value {
    let path = dir.join(name);
    if !path.exists() && fs::symlink_metadata(&path).is_err() {
        return Value::Null;
    }
    if !confined(&path, root, problems) {
        return Value::Null;
    }
    let problem = |message: String| Problem {
        file: path.display().to_string(),
        line: None,
        message,
    };
    match fs::read(&path) {
        Ok(bytes) => match strict::parse_value(&bytes) {
            Ok(value) => value,
            Err(ParseError::Rule(p)) => {
                problems.push(problem(format!(
                    "[{}] {}: {}",
                    p.rule, p.pointer, p.message
                )));
                Value::Null
            }
            Err(ParseError::Syntax(e)) => {
                problems.push(Problem {
                    line: Some(e.line() as u64),
                    ..problem(format!("not valid JSON: {e}"))
                });
                Value::Null
            }
        },
        Err(e) => {
            problems.push(problem(format!("cannot read: {e}")));
            Value::Null
        }
    }
}

/// A line of a JSON-lines file that is not a JSON object.
struct BadLine {
    line: u64,
    text: String,
    error: FrameError,
}

/// The JSON objects of a JSON-lines file with their line numbers, and its other lines.
type Lines = (Vec<(u64, Value)>, Vec<BadLine>);

/// The JSON objects of a JSON-lines file with their line numbers, and the other lines. A
/// missing file has none; a file that is there but cannot be read (a directory, no permission)
/// is an error, with the reason.
fn read_jsonl(path: &Path) -> io::Result<Lines> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let text = match fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(path).is_err() => {
            return Ok((good, bad));
        }
        Err(e) => return Err(e),
    };
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let n = i as u64 + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match strict::parse_value(line) {
            Ok(v @ Value::Object(_)) => good.push((n, v)),
            Ok(_) => bad.push(BadLine {
                line: n,
                text: String::from_utf8_lossy(line).into_owned(),
                error: FrameError::Invalid("a line must be a JSON object".to_owned()),
            }),
            Err(ParseError::Rule(p)) => bad.push(BadLine {
                line: n,
                text: String::from_utf8_lossy(line).into_owned(),
                error: FrameError::Json(Box::new(p)),
            }),
            Err(ParseError::Syntax(e)) => bad.push(BadLine {
                line: n,
                text: String::from_utf8_lossy(line).into_owned(),
                error: FrameError::Syntax(format!("not valid JSON: {e}")),
            }),
        }
    }
    Ok((good, bad))
}

/// [`read_jsonl`] of `path`, when it is confined to `root`; why it cannot be read is a problem.
fn read_jsonl_in(path: &Path, root: &Path, problems: &mut Vec<Problem>) -> Lines {
    if !confined(path, root, problems) {
        return (Vec::new(), Vec::new());
    }
    read_jsonl(path).unwrap_or_else(|e| {
        problems.push(Problem {
            file: path.display().to_string(),
            line: None,
            message: format!("cannot read: {e}"),
        });
        (Vec::new(), Vec::new())
    })
}

/// The input's root as given and as resolved: files are read through the resolved path and
/// named in provenance through the given one, so outputs do not depend on where the checkout
/// lives.
struct Root {
    given: PathBuf,
    resolved: PathBuf,
    input: Arc<str>,
}

impl Root {
    fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.resolved) {
            Ok(rest) => self.given.join(rest).display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    fn provenance(&self, path: &Path, line: u64, index: u64) -> Provenance {
        Provenance {
            input: self.input.clone(),
            file: Arc::from(self.show(path)),
            line,
            index,
        }
    }
}

/// The records of an episodic-memory directory.
pub struct EpisodicRecords {
    pending: std::vec::IntoIter<RawRecord>,
}

impl EpisodicRecords {
    /// Reads the directory `root`. The work per attempt is small, so every record is built
    /// here; memory grows with the number of attempts, not with trajectory sizes elsewhere.
    pub fn open(root: &str) -> io::Result<EpisodicRecords> {
        let root_path = fs::canonicalize(root)?;
        let ctx = Root {
            given: PathBuf::from(root),
            resolved: root_path.clone(),
            input: Arc::from(root),
        };
        if !root_path.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an episodic-memory input must be a directory",
            ));
        }
        let mut records = Vec::new();
        let mut problems = Vec::new();
        let tasks: Vec<PathBuf> = if is_task_dir(&root_path) {
            vec![root_path.clone()]
        } else {
            let base = if root_path.join("tasks").is_dir() {
                root_path.join("tasks")
            } else {
                root_path.clone()
            };
            subdirs(&base, &root_path, &mut problems)
                .into_iter()
                .filter(|p| is_task_dir(p))
                .collect()
        };
        for task in tasks {
            read_task(&task, &ctx, &mut records);
        }
        for p in problems {
            let index = records.len() as u64;
            records.push(problem_record(&ctx, &p, index));
        }
        Ok(EpisodicRecords {
            pending: records.into_iter(),
        })
    }
}

fn problem_record(ctx: &Root, p: &Problem, index: u64) -> RawRecord {
    RawRecord {
        provenance: ctx.provenance(Path::new(&p.file), p.line.unwrap_or(1), index),
        bytes: Vec::new(),
        error: Some(FrameError::Read(p.message.clone())),
    }
}

fn read_task(task: &Path, ctx: &Root, out: &mut Vec<RawRecord>) {
    let root = ctx.resolved.as_path();
    let task_id = task
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut task_problems = Vec::new();
    let metadata = read_json(task, "metadata.json", root, &mut task_problems);
    let reflections_path = task.join("reflections.jsonl");
    let (reflections, bad_lines) = read_jsonl_in(&reflections_path, root, &mut task_problems);
    for bad in bad_lines {
        let index = out.len() as u64;
        out.push(RawRecord {
            provenance: ctx.provenance(&reflections_path, bad.line, index),
            bytes: bad.text.into_bytes(),
            error: Some(bad.error),
        });
    }
    let attempts = subdirs(&task.join("attempts"), root, &mut task_problems);
    if attempts.is_empty() {
        // No attempt to carry the task's problems: each is a record of its own.
        for p in &task_problems {
            let index = out.len() as u64;
            out.push(problem_record(ctx, p, index));
        }
    }
    let numbers: Vec<u64> = attempts
        .iter()
        .filter_map(|a| a.file_name()?.to_str()?.parse().ok())
        .collect();
    for attempt in attempts {
        let name = attempt
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let number: Option<u64> = name.parse().ok();
        let mut problems: Vec<Problem> = task_problems
            .iter()
            .map(|p| Problem {
                file: p.file.clone(),
                line: p.line,
                message: p.message.clone(),
            })
            .collect();
        let attempt_meta = read_json(&attempt, "attempt.json", root, &mut problems);
        let outcome = read_json(&attempt, "outcome.json", root, &mut problems);
        let plan_path = attempt.join("plan.md");
        // A dangling link is there (and `confined` reports it), though `exists` says not.
        let plan_there = fs::symlink_metadata(&plan_path).is_ok();
        let plan = if plan_there && confined(&plan_path, root, &mut problems) {
            match fs::read(&plan_path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => Some(text),
                    Err(_) => {
                        problems.push(Problem {
                            file: plan_path.display().to_string(),
                            line: None,
                            message: "not UTF-8 text".into(),
                        });
                        None
                    }
                },
                Err(e) => {
                    problems.push(Problem {
                        file: plan_path.display().to_string(),
                        line: None,
                        message: format!("cannot read: {e}"),
                    });
                    None
                }
            }
        } else {
            None
        };
        let actions_path = attempt.join("actions.jsonl");
        let (actions, bad) = read_jsonl_in(&actions_path, root, &mut problems);
        problems.extend(bad.into_iter().map(|b| Problem {
            file: actions_path.display().to_string(),
            line: Some(b.line),
            message: b.error.to_string(),
        }));
        let mut bundle = Bundle {
            episodic_attempt: true,
            task_id: task_id.clone(),
            attempt: name,
            task: metadata.clone(),
            attempt_meta,
            plan,
            actions: actions.into_iter().map(|(_, v)| v).collect(),
            outcome,
            reflections: reflections
                .iter()
                .filter(|(_, r)| number.is_some() && r["attempt_id"].as_u64() == number)
                .map(|(_, r)| r.clone())
                .collect(),
            problems,
        };
        for p in &mut bundle.problems {
            p.file = ctx.show(Path::new(&p.file));
        }
        let bytes = serde_json::to_vec(&bundle).unwrap_or_default();
        let index = out.len() as u64;
        out.push(RawRecord {
            provenance: ctx.provenance(&attempt, 1, index),
            bytes,
            error: None,
        });
    }
    // A reflection no attempt takes would be lost: it is a record of its own, rejected with
    // its line.
    for (line, r) in &reflections {
        let why = match r["attempt_id"].as_u64() {
            Some(n) if numbers.contains(&n) => continue,
            Some(n) => {
                format!("a reflection for attempt {n}, which has no directory under attempts/")
            }
            None => "a reflection without an integer attempt_id belongs to no attempt".to_owned(),
        };
        let index = out.len() as u64;
        out.push(RawRecord {
            provenance: ctx.provenance(&reflections_path, *line, index),
            bytes: serde_json::to_vec(r).unwrap_or_default(),
            error: Some(FrameError::Invalid(why)),
        });
    }
}

impl Iterator for EpisodicRecords {
    type Item = RawRecord;

    fn next(&mut self) -> Option<RawRecord> {
        self.pending.next()
    }
}

impl RecordSource for EpisodicRecords {}

//! The journal of a `trajkit run`, and where `--resume` restarts an interrupted run from.
//!
//! Every run keeps `<first export dir>/.trajkit-run/`: `journal.jsonl` (JSON lines, each synced
//! to disk after the files it describes) and, with `dedup`, `export-N.seen` (the 16-byte dedup
//! hashes of export N in the order they were first seen). The directory is removed when the
//! run ends, successfully or with an error; a killed run leaves it behind.
//!
//! The lines:
//! - `run`: the trajkit version and the run's identity (a hash of the effective configuration
//!   and of each input's path, size and modification time); `--resume` refuses another;
//! - `input`: at the start of each input, the run's counters, each stage's counts and state
//!   (a join: the side records it used since the previous `input` line), the rejects file's
//!   length and, per export, the rows offered to it so far (one per trajectory, or each of its
//!   segments with `segments`: exports may cut trajectories differently);
//! - `shard`: each time a shard of an export starts, that export's state at that position (see
//!   [`ShardCheckpoint`]) with the shard it completed, if any;
//! - `commit`: the pass is over and every output is complete under a temporary name; the line
//!   holds the [`Commit`] that puts them in place (with the manifests, cards and `run.json` to
//!   write) and the run's summary. A run killed after it is finished by `--resume`, which
//!   applies the commit again (see [`Commit::apply`]); one killed before it has renamed nothing,
//!   and `--resume` restarts it from its checkpoints as usual.
//!
//! A resumed run restarts each export at the oldest start of its splits' open shards (every
//! shard completed before is kept, no file is ever appended to), and the whole pass at the
//! last input boundary before the oldest of those positions (`plan_restart`). A resumed run
//! appends to the journal: lines written again by the replay repeat what they said, so a run
//! can be interrupted and resumed any number of times.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};

use super::summary::{InputSummary, RunSummary};
use crate::engine::output::Commit;
use crate::engine::stage::Counts;
use crate::export::shard::ClosedShard;
use crate::export::{ExportRestart, ExportSummary, ShardCheckpoint};

/// Environment variable of the test hook that simulates a kill: the process aborts (no
/// destructor runs, no buffer is flushed) right after accepting this many records.
pub const ABORT_AFTER_RECORDS: &str = "TRAJKIT_TEST_ABORT_AFTER_RECORDS";

/// Environment variable of the test hook that holds a run between its pass and its commit for
/// this many milliseconds (a run that is still going, for another command to meet).
pub const PAUSE_BEFORE_COMMIT: &str = "TRAJKIT_TEST_PAUSE_BEFORE_COMMIT";

/// How a run keeps its journal.
#[derive(Debug, Clone)]
pub struct JournalOptions {
    /// What identifies the run: see [`identity`].
    pub identity: String,
    /// Restart from the journal an interrupted run left (`--resume`).
    pub resume: bool,
}

/// The run's counters at an input boundary.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GlobalState {
    /// Records read.
    pub records: u64,
    /// Trajectories converted.
    pub trajectories: u64,
    /// Records rejected at any stage.
    pub rejected_records: u64,
    /// Records the convert stage rejected.
    pub convert_rejected: u64,
    /// Per input completed since the previous boundary journaled (in a restart: every input
    /// before it).
    pub inputs: Vec<InputSummary>,
    /// Per stage of the plan (after convert, before the exports), in order.
    pub stages: Vec<StageState>,
    /// Bytes of the rejects file (`None` without one, or when it is stdout or a device).
    pub rejects: Option<u64>,
    /// In a partition: records and trajectories left to the other partitions so far.
    #[serde(default)]
    pub elsewhere_records: u64,
    /// See `elsewhere_records`.
    #[serde(default)]
    pub elsewhere_trajectories: u64,
}

/// A stage's counts and its own state ([`Ordered::checkpoint`]) at an input boundary.
///
/// [`Ordered::checkpoint`]: crate::engine::stage::Ordered::checkpoint
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageState {
    /// Its counts.
    pub counts: Counts,
    /// Its state.
    pub state: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
enum Line {
    Run {
        trajkit: String,
        identity: String,
    },
    Input {
        input: usize,
        offered: Vec<u64>,
        state: GlobalState,
    },
    Shard {
        export: usize,
        seen: u64,
        #[serde(flatten)]
        checkpoint: Box<ShardCheckpoint>,
    },
    Commit(Box<Committing>),
}

/// What the `commit` line holds: the commit of a run's outputs and the run's summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Committing {
    /// Puts the outputs in place.
    pub commit: Commit,
    /// The run's counts.
    pub summary: RunSummary,
}

/// Where a resumed pass starts.
#[derive(Debug, Clone, Default)]
pub struct Restart {
    /// The first input to read (its index in the plan).
    pub input: usize,
    /// Per export, the rows offered to it before it.
    pub offered: Vec<u64>,
    /// The run's counters there.
    pub state: GlobalState,
    /// Per stage, the states it journaled at every boundary up to the restart one, in order
    /// ([`Ordered::restore`](crate::engine::stage::Ordered::restore)).
    pub stage_history: Vec<Vec<serde_json::Value>>,
    /// Per export, where it restarts.
    pub exports: Vec<ExportRestart>,
    /// The commit the interrupted run was making, when its pass was over: `--resume` finishes
    /// it instead of restarting anything.
    pub commit: Option<Committing>,
}

/// A journal being written.
pub struct Journal {
    dir: PathBuf,
    file: File,
    seen: Vec<Option<File>>,
    seen_counts: Vec<u64>,
    /// The `commit` line is written: the journal stays (for `--resume` to finish the commit)
    /// unless [`Journal::close`] removes it.
    committing: bool,
}

/// The identity of a run: the SHA-256 of `config` (the effective configuration, as text) and
/// of each input's path, size and modification time.
pub fn identity(config: &str, inputs: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(config.as_bytes());
    for path in inputs {
        let meta = fs::metadata(path).ok();
        let mtime = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos());
        let line = serde_json::json!([path, meta.map(|m| m.len()), mtime.map(|t| t.to_string())]);
        h.update(line.to_string().as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Journal {
    /// Starts the journal of a run in `dir` (the state directory). A fresh run replaces any
    /// journal there; a resumed one (`opts.resume`) reads it and returns where to restart
    /// (`None` when there is none: the run starts from the beginning). `splits` is the number
    /// of splits of each export.
    pub fn start(
        dir: &Path,
        opts: &JournalOptions,
        splits: &[usize],
    ) -> Result<(Journal, Option<Restart>), ResumeError> {
        let path = dir.join("journal.jsonl");
        let restart = if opts.resume && path.exists() {
            let lines = read_lines(&path)?;
            Some(plan_restart(&lines, &opts.identity, splits, dir)?)
        } else {
            if dir.exists() {
                fs::remove_dir_all(dir)?;
            }
            None
        };
        fs::create_dir_all(dir)?;
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let mut journal = Journal {
            dir: dir.to_owned(),
            file,
            seen: splits.iter().map(|_| None).collect(),
            seen_counts: vec![0; splits.len()],
            committing: false,
        };
        match &restart {
            Some(r) => {
                for (e, x) in r.exports.iter().enumerate() {
                    journal.truncate_seen(e, x.seen.len() as u64)?;
                }
            }
            None => journal.write(&Line::Run {
                trajkit: env!("CARGO_PKG_VERSION").to_owned(),
                identity: opts.identity.clone(),
            })?,
        }
        Ok((journal, restart))
    }

    fn seen_path(&self, export: usize) -> PathBuf {
        self.dir.join(format!("export-{export}.seen"))
    }

    fn truncate_seen(&mut self, export: usize, count: u64) -> io::Result<()> {
        let path = self.seen_path(export);
        if count == 0 && !path.exists() {
            return Ok(());
        }
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        f.set_len(count * 16)?;
        f.seek(io::SeekFrom::End(0))?;
        if let (Some(slot), Some(c)) = (self.seen.get_mut(export), self.seen_counts.get_mut(export))
        {
            *slot = Some(f);
            *c = count;
        }
        Ok(())
    }

    fn write(&mut self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_vec(line)?;
        text.push(b'\n');
        self.file.write_all(&text)?;
        self.file.sync_data()
    }

    /// Records the state at the start of input `input`.
    pub fn input(&mut self, input: usize, offered: &[u64], state: GlobalState) -> io::Result<()> {
        let offered = offered.to_vec();
        self.write(&Line::Input {
            input,
            offered,
            state,
        })
    }

    /// Records a shard start of export `export` (its dedup hashes first, synced).
    pub fn shard(&mut self, export: usize, checkpoint: ShardCheckpoint) -> io::Result<()> {
        if !checkpoint.new_seen.is_empty() {
            if self.seen.get(export).is_some_and(Option::is_none) {
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.seen_path(export))?;
                if let Some(slot) = self.seen.get_mut(export) {
                    *slot = Some(f);
                }
            }
            if let Some(Some(f)) = self.seen.get_mut(export) {
                let bytes: Vec<u8> = checkpoint.new_seen.concat();
                f.write_all(&bytes)?;
                f.sync_data()?;
            }
        }
        let seen = match self.seen_counts.get_mut(export) {
            Some(c) => {
                *c += checkpoint.new_seen.len() as u64;
                *c
            }
            None => 0,
        };
        self.write(&Line::Shard {
            export,
            seen,
            checkpoint: Box::new(checkpoint),
        })
    }

    /// Records the commit of the run's outputs, and the run's summary: from here on, the
    /// journal stays until [`Journal::close`], and a kill is finished by `--resume`.
    pub fn commit(&mut self, commit: &Commit, summary: &RunSummary) -> io::Result<()> {
        self.write(&Line::Commit(Box::new(Committing {
            commit: commit.clone(),
            summary: summary.clone(),
        })))?;
        self.committing = true;
        Ok(())
    }

    /// Removes the journal of a run whose outputs are committed.
    pub fn close(mut self) {
        self.committing = false;
    }
}

impl Drop for Journal {
    /// A run that ends (successfully or with an error: its partial files are removed) leaves
    /// nothing to resume, unless its commit failed part way.
    fn drop(&mut self) {
        if !self.committing {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Why `--resume` cannot resume.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The journal says another run, or that the run was being committed.
    #[error("cannot resume: {0}")]
    Refused(String),
    /// The journal could not be read or written.
    #[error("the run's journal (.trajkit-run/ in the first export's directory): {0}")]
    Io(#[from] io::Error),
}

fn read_lines(path: &Path) -> Result<Vec<Line>, ResumeError> {
    let texts = BufReader::new(File::open(path)?)
        .lines()
        .collect::<io::Result<Vec<String>>>()?;
    let mut out = Vec::new();
    for (n, text) in texts.iter().enumerate() {
        match serde_json::from_str::<Line>(text) {
            Ok(l) => out.push(l),
            // A last line cut short by the kill was never synced: it does not count.
            Err(_) if n + 1 == texts.len() => {}
            Err(e) => {
                return Err(ResumeError::Refused(format!(
                    "{}:{}: not a journal line ({e}); run again without --resume",
                    path.display(),
                    n + 1
                )))
            }
        }
    }
    Ok(out)
}

/// Per split: the completed shards by number, and the start of its latest shard.
#[derive(Default, Clone)]
struct SplitState {
    closed: BTreeMap<usize, ClosedShard>,
    open_at: Option<u64>,
}

/// Where to restart, from a journal's lines (see the module documentation). `dir` holds the
/// dedup hash files.
fn plan_restart(
    lines: &[Line],
    identity: &str,
    splits: &[usize],
    dir: &Path,
) -> Result<Restart, ResumeError> {
    // A commit is finished whatever changed since: its outputs are complete.
    if let Some(committing) = lines.iter().find_map(|l| match l {
        Line::Commit(c) => Some(c),
        _ => None,
    }) {
        return Ok(Restart {
            commit: Some((**committing).clone()),
            ..Restart::default()
        });
    }
    match lines.first() {
        Some(Line::Run {
            trajkit,
            identity: id,
        }) => {
            if trajkit != env!("CARGO_PKG_VERSION") {
                return Err(ResumeError::Refused(format!(
                    "the interrupted run was made by trajkit {trajkit}; run again without --resume"
                )));
            }
            if id != identity {
                return Err(ResumeError::Refused(
                    "the pipeline's effective configuration (its redaction rule file and hash \
                     key included) or its inputs (paths, sizes, modification times) changed \
                     since the interrupted run; run again without --resume"
                        .to_owned(),
                ));
            }
        }
        _ => {
            return Err(ResumeError::Refused(
                "the journal does not start with the run's identity; run again without --resume"
                    .to_owned(),
            ))
        }
    }
    let mut states: Vec<Vec<SplitState>> = splits
        .iter()
        .map(|&n| vec![SplitState::default(); n])
        .collect();
    let mut snapshots: Vec<BTreeMap<u64, (ExportSummary, u64)>> =
        splits.iter().map(|_| BTreeMap::new()).collect();
    for line in lines {
        if let Line::Shard {
            export,
            seen,
            checkpoint: c,
        } = line
        {
            let (Some(st), Some(snap)) = (
                states.get_mut(*export).and_then(|s| s.get_mut(c.split)),
                snapshots.get_mut(*export),
            ) else {
                return Err(ResumeError::Refused(
                    "the journal names an export or split the pipeline does not have".to_owned(),
                ));
            };
            if let Some(closed) = &c.closed {
                st.closed.insert(closed.index, closed.clone());
            }
            st.open_at = Some(st.open_at.map_or(c.at, |a| a.max(c.at)));
            snap.insert(c.at, (c.summary.clone(), *seen));
        }
    }
    let mut exports = Vec::new();
    for (e, (st, snap)) in states.iter().zip(&snapshots).enumerate() {
        let at = st.iter().filter_map(|s| s.open_at).min().unwrap_or(0);
        let (summary, seen) = snap.get(&at).cloned().unwrap_or_default();
        exports.push(ExportRestart {
            summary,
            seen: read_seen(&dir.join(format!("export-{e}.seen")), seen)?,
            closed: st
                .iter()
                .map(|s| s.closed.values().cloned().collect())
                .collect(),
            written_from: st.iter().map(|s| s.open_at.unwrap_or(0)).collect(),
            skip: at,
        });
    }
    // The last input boundary at or before every export's restart position (rows offered to
    // each export grow with the inputs, so the latest such boundary is the one to replay from).
    let before = |offered: &[u64]| {
        exports
            .iter()
            .enumerate()
            .all(|(e, x)| offered.get(e).copied().unwrap_or(0) <= x.skip)
    };
    let mut restart = Restart {
        offered: vec![0; exports.len()],
        ..Restart::default()
    };
    for line in lines {
        if let Line::Input {
            input,
            offered,
            state,
        } = line
        {
            if before(offered) && *input >= restart.input {
                restart.input = *input;
                restart.offered = offered.clone();
                restart.offered.resize(exports.len(), 0);
                restart.state = state.clone();
            }
        }
    }
    // Each stage restarts from its states journaled at or before the restart input (what it
    // did during a later input is done again by the replay).
    let mut history: Vec<Vec<serde_json::Value>> = Vec::new();
    for line in lines {
        if let Line::Input { input, state, .. } = line {
            if *input <= restart.input {
                history.resize(history.len().max(state.stages.len()), Vec::new());
                for (h, s) in history.iter_mut().zip(&state.stages) {
                    h.push(s.state.clone());
                }
            }
        }
    }
    restart.stage_history = history;
    restart.state.inputs = completed_inputs(lines, restart.input)?;
    for (x, offered) in exports.iter_mut().zip(&restart.offered) {
        x.skip -= offered;
    }
    restart.exports = exports;
    Ok(restart)
}

/// The counts of the inputs before `first`, from the `input` lines that list them.
fn completed_inputs(lines: &[Line], first: usize) -> Result<Vec<InputSummary>, ResumeError> {
    let mut inputs: Vec<Option<InputSummary>> = vec![None; first];
    for line in lines {
        if let Line::Input { input, state, .. } = line {
            let start = input.checked_sub(state.inputs.len());
            for (k, summary) in state.inputs.iter().enumerate() {
                if let Some(slot) = start.and_then(|s| inputs.get_mut(s + k)) {
                    *slot = Some(summary.clone());
                }
            }
        }
    }
    inputs
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            ResumeError::Refused(
                "the journal misses the counts of an input; run again without --resume".to_owned(),
            )
        })
}

/// The first `count` hashes of a dedup hash file.
fn read_seen(path: &Path, count: u64) -> Result<Vec<[u8; 16]>, ResumeError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut bytes = Vec::new();
    File::open(path)?.take(count * 16).read_to_end(&mut bytes)?;
    if (bytes.len() as u64) < count * 16 {
        return Err(ResumeError::Refused(format!(
            "{} holds fewer dedup hashes than the journal recorded; run again without --resume",
            path.display()
        )));
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| {
            let mut h = [0u8; 16];
            h.copy_from_slice(c);
            h
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("journal.jsonl");
        fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn a_last_line_cut_short_by_a_kill_is_ignored_but_not_a_bad_line_before() {
        let run = r#"{"line":"run","trajkit":"x","identity":"i"}"#;
        let (_d, path) = journal(&format!("{run}\n{{\"line\":\"inp"));
        assert_eq!(read_lines(&path).expect("reads").len(), 1);
        let (_d, path) = journal(&format!("{run}\n{{\"line\":\"inp\n{run}\n"));
        let err = read_lines(&path).expect_err("refused");
        assert!(err.to_string().contains("journal.jsonl:2"), "{err}");
    }

    #[test]
    fn another_identity_is_refused() {
        let lines = vec![Line::Run {
            trajkit: env!("CARGO_PKG_VERSION").to_owned(),
            identity: "before".to_owned(),
        }];
        let dir = tempfile::tempdir().expect("tmp");
        let err = plan_restart(&lines, "after", &[1], dir.path()).expect_err("refused");
        assert!(err.to_string().contains("changed"), "{err}");
        assert!(plan_restart(&lines, "before", &[1], dir.path()).is_ok());
    }

    #[test]
    fn input_counts_are_gathered_from_the_lines_that_list_them() {
        let summary = |p: &str| InputSummary {
            path: p.to_owned(),
            records: 1,
            ..InputSummary::default()
        };
        let at = |input: usize, inputs: Vec<InputSummary>| Line::Input {
            input,
            offered: vec![0],
            state: GlobalState {
                inputs,
                ..GlobalState::default()
            },
        };
        // Boundaries 1 and 3 journaled (2 was skipped), then 1 again by a resumed run.
        let lines = vec![
            at(0, vec![]),
            at(1, vec![summary("a")]),
            at(3, vec![summary("b"), summary("c")]),
            at(1, vec![summary("a")]),
        ];
        let got = completed_inputs(&lines, 3).expect("complete");
        let paths: Vec<&str> = got.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, ["a", "b", "c"]);
        assert!(completed_inputs(&lines[..2], 3).is_err());
    }
}

//! `report`: one self-contained HTML page describing a set of trajectories, read in one
//! streaming pass (see [`crate::report`]).
//!
//! Inputs are ADP files and directories, trajkit Parquet files, an export directory (its
//! `manifest.json` names the data files; `adp` and `parquet` exports hold trajectories; its
//! `run.json` and redaction counts are shown), or the output directory of a `run` (the export
//! directories in it, the first `adp` or else `parquet` export read, and its `rejects.jsonl`).

use std::borrow::Cow;
use std::fs;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use super::inputs::{adp_source, expand_adp};
use super::stats::{check, Checked};
use crate::config::ConfigError;
use crate::engine::output::Output;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::export::encode::{count_tokens, with_conversation};
use crate::export::ExportOptions;
use crate::ingest::RawRecord;
use crate::model::Trajectory;
use crate::redact::Redaction;
use crate::report::html::{render, Report};
use crate::report::outputs::{Manifest, Rejects, RunCounts};
use crate::report::segments::{SegmentProfile, SessionSegments};
use crate::report::Profile;
use crate::segment::{self, Mode};
use crate::validate::check::upgrade_checked;

/// What the report reads: the trajectory files, and the files a run or export left beside
/// them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    /// Files of trajectories, in reading order.
    pub files: Vec<String>,
    /// The rejects file found in a run's output directory.
    pub rejects: Option<PathBuf>,
    /// The `run.json` of the first export directory that has one.
    pub run_json: Option<PathBuf>,
    /// The redaction counts of the first export whose manifest has them.
    pub redaction: Option<Redaction>,
}

/// Resolves the inputs as the module documentation says; what a directory walk skipped goes
/// to `notice`.
pub fn resolve(given: &[String], notice: &dyn Fn(&str)) -> Result<Sources, ConfigError> {
    let mut s = Sources::default();
    for g in given {
        let dir = Path::new(g);
        if dir.join("manifest.json").is_file() {
            export_dir(dir, &mut s)?;
        } else if dir.is_dir() && !exports_in(dir)?.is_empty() {
            let exports = exports_in(dir)?;
            let pick = ["adp", "parquet"]
                .iter()
                .find_map(|t| exports.iter().find(|(_, m)| m.target == *t));
            let Some((path, _)) = pick else {
                return Err(ConfigError::Invalid(format!(
                    "{g}: none of its exports holds trajectories (adp or parquet); SFT exports \
                     hold conversations the report does not read"
                )));
            };
            export_dir(path, &mut s)?;
            let rejects = dir.join("rejects.jsonl");
            if rejects.is_file() && s.rejects.is_none() {
                s.rejects = Some(rejects);
            }
        } else {
            s.files.extend(expand_adp(std::slice::from_ref(g), notice)?);
        }
    }
    if given.is_empty() {
        s.files.push("-".to_owned());
    }
    Ok(s)
}

fn read_manifest(dir: &Path) -> Result<Manifest, ConfigError> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path)
        .map_err(|e| ConfigError::Io(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        ConfigError::Invalid(format!("{}: not a trajkit manifest: {e}", path.display()))
    })
}

/// The export directories directly in `dir`, sorted by name, with their manifests.
fn exports_in(dir: &Path) -> Result<Vec<(PathBuf, Manifest)>, ConfigError> {
    let entries = fs::read_dir(dir)
        .map_err(|e| ConfigError::Io(format!("cannot read {}: {e}", dir.display())))?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.join("manifest.json").is_file() {
            let m = read_manifest(&path)?;
            found.push((path, m));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

fn export_dir(dir: &Path, s: &mut Sources) -> Result<(), ConfigError> {
    let m = read_manifest(dir)?;
    if !m.holds_trajectories() {
        return Err(ConfigError::Invalid(format!(
            "{}: a {} export holds conversations, not trajectories; give an adp or parquet \
             export, or the ADP files",
            dir.display(),
            m.target
        )));
    }
    s.files.extend(
        m.files
            .iter()
            .map(|f| dir.join(&f.path).to_string_lossy().into_owned()),
    );
    let run = dir.join("run.json");
    if s.run_json.is_none() && run.is_file() {
        s.run_json = Some(run);
    }
    if s.redaction.is_none() {
        s.redaction = m.counts.redaction;
    }
    Ok(())
}

struct ReportSink(Profile);

impl Sink for ReportSink {
    type Item = (Checked, Option<SessionSegments>);

    fn accept(&mut self, record: RawRecord, (item, segments): Self::Item) -> io::Result<Flow> {
        let p = &mut self.0;
        let bytes = record.bytes.len() as u64;
        p.bytes += bytes;
        p.stats.accept(&item);
        if let Some((t, _, tokens)) = item {
            p.add(t, &record.provenance.file, bytes, tokens);
        }
        if let Some(s) = segments {
            p.segments.add(s);
        }
        Ok(Flow::Continue)
    }
}

/// Checks one record ([`check`]) and measures its compaction segments: how many, and for a
/// compacted session with `tokens_with`, each segment's tokens (cut as `export --segments
/// compaction` cuts it: once upgraded).
fn check_segments(
    record: &RawRecord,
    tokens_with: Option<&ExportOptions>,
) -> (Checked, Option<SessionSegments>) {
    let checked = check(record, tokens_with);
    let measured = checked.as_ref().map(|(t, _, whole)| {
        let segments = segment::count(t);
        let tokens = tokens_with.filter(|_| segments > 1).and_then(|opts| {
            let mut t = t.clone();
            upgrade_checked(&mut t, &record.provenance, &opts.upgrade).ok()?;
            let count = |row: Cow<'_, Trajectory>| {
                with_conversation(row, &opts.sft, |conv, tools| {
                    count_tokens(conv, tools, opts)
                })
                .ok()
                .flatten()
            };
            Some(Mode::Compaction.rows(t).each(count))
        });
        SessionSegments {
            id: t.id.clone(),
            segments,
            tokens,
            whole: whole.map(|n| n as u64),
        }
    });
    (checked, measured)
}

/// Counts what `files` hold in one pass: `stats`' numbers ([`check`], with tokens under
/// `tokens_with`) and the report's.
pub fn profile(
    files: &[String],
    run: &RunOptions,
    progress: &dyn Progress,
    tokens_with: Option<&ExportOptions>,
) -> Result<Profile, PipelineError> {
    let (sink, _) = pipeline::run_with_sources(
        files,
        &adp_source,
        run,
        progress,
        |r| check_segments(r, tokens_with),
        ReportSink(Profile {
            segments: SegmentProfile::new(context(tokens_with)),
            ..Profile::default()
        }),
    )?;
    let mut p = sink.0;
    p.stats.finish();
    Ok(p)
}

/// The model's context the segments are measured against: the `max_tokens` of the token
/// options (`report --context`).
fn context(tokens_with: Option<&ExportOptions>) -> Option<u64> {
    tokens_with
        .and_then(|o| o.training.as_ref())
        .and_then(|t| t.max_tokens)
        .map(|n| n as u64)
}

/// A report that failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The inputs or a file beside them could not be used.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// Reading the trajectories failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// Reading a side file or writing the page failed.
    #[error("{0}")]
    Io(String),
}

/// Options of a report.
pub struct ReportOptions<'a> {
    /// The inputs as given.
    pub inputs: &'a [String],
    /// A rejects file to count (besides the one of a run's output directory).
    pub rejects: Option<&'a str>,
    /// The page to write (`-` for stdout).
    pub output: &'a str,
    /// With a chat template and tokenizer: the options of a `--to tokens` export.
    pub tokens_with: Option<&'a ExportOptions>,
}

/// Reads the inputs and writes the page; returns the profile.
pub fn report(
    opts: &ReportOptions<'_>,
    run: &RunOptions,
    progress: &dyn Progress,
    notice: &dyn Fn(&str),
) -> Result<Profile, ReportError> {
    let sources = resolve(opts.inputs, notice)?;
    let rejects_path = opts.rejects.map(PathBuf::from).or(sources.rejects.clone());
    let rejects = rejects_path
        .map(|p| {
            let f = fs::File::open(&p)
                .map_err(|e| ReportError::Io(format!("cannot read {}: {e}", p.display())))?;
            Rejects::read(BufReader::new(f))
                .map_err(|e| ReportError::Io(format!("cannot read {}: {e}", p.display())))
        })
        .transpose()?;
    let run_counts = match &sources.run_json {
        Some(p) => {
            let text = fs::read_to_string(p)
                .map_err(|e| ReportError::Io(format!("cannot read {}: {e}", p.display())))?;
            Some(RunCounts::parse(&text).map_err(|e| {
                ReportError::Io(format!("{}: not a trajkit run.json: {e}", p.display()))
            })?)
        }
        None => None,
    };
    let profile = profile(&sources.files, run, progress, opts.tokens_with)?;
    let page = render(&Report {
        trajkit_version: env!("CARGO_PKG_VERSION"),
        inputs: opts.inputs,
        profile: &profile,
        rejects: rejects.as_ref(),
        run: run_counts.as_ref(),
        redaction: sources.redaction.as_ref(),
    });
    let write = |e: io::Error| ReportError::Io(format!("cannot write {}: {e}", opts.output));
    let mut out = Output::create(opts.output).map_err(write)?;
    out.write_all(page.as_bytes()).map_err(write)?;
    out.finish().map_err(write)?;
    Ok(profile)
}

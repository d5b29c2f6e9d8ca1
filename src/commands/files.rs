//! The files a command writes besides its exports: its output, rejects file and JSON summary,
//! each locked against another trajkit process writing it and written under a temporary name,
//! and its report. Every failure is a [`ConfigError::Io`] naming the file.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::config::ConfigError;
use crate::engine::output::{stdout, Lock, Output};
use crate::engine::rejects::RejectsWriter;

/// Locks the output files a command writes (`-o`, `--rejects`; `None`s, stdout and devices are
/// passed over) for as long as the locks are kept: another command writing one of them is
/// refused at once.
pub fn lock_files<'a>(
    paths: impl IntoIterator<Item = Option<&'a str>>,
) -> Result<Vec<Lock>, ConfigError> {
    let mut locks = Vec::new();
    for path in paths.into_iter().flatten() {
        locks.extend(Lock::file(path).map_err(|e| ConfigError::Io(e.to_string()))?);
    }
    Ok(locks)
}

/// Opens the `--rejects` file when one was asked for.
pub fn rejects_writer(path: Option<&str>) -> Result<Option<RejectsWriter>, ConfigError> {
    path.map(RejectsWriter::create)
        .transpose()
        .map_err(|e| ConfigError::Io(format!("cannot create the rejects file: {e}")))
}

/// What a command that writes one JSON-lines output opens before its first record: the locks
/// on its files (kept until the value is dropped), the output and the `--rejects` file.
pub struct StageFiles {
    /// The locks on the output, the rejects file and the JSON summary, held while the value
    /// lives (its other fields may be moved out).
    _locks: Vec<Lock>,
    /// The output (`-o`).
    pub output: Output,
    /// The rejects file, when one was asked for.
    pub rejects: Option<RejectsWriter>,
}

impl StageFiles {
    /// Locks `output`, `rejects` and `summary_json` (see [`lock_files`]), then creates the
    /// output and the rejects file.
    pub fn open(
        output: &str,
        rejects: Option<&str>,
        summary_json: Option<&str>,
    ) -> Result<StageFiles, ConfigError> {
        let locks = lock_files([Some(output), rejects, summary_json])?;
        let out = Output::create(output)
            .map_err(|e| ConfigError::Io(format!("cannot create {output}: {e}")))?;
        Ok(StageFiles {
            _locks: locks,
            output: out,
            rejects: rejects_writer(rejects)?,
        })
    }
}

/// Writes a command's summary as pretty JSON to `path` (`--summary-json`).
pub fn write_summary_json(path: &str, summary: &impl serde::Serialize) -> Result<(), ConfigError> {
    let mut out =
        Output::create(path).map_err(|e| ConfigError::Io(format!("cannot create {path}: {e}")))?;
    let io = |e: std::io::Error| ConfigError::Io(format!("cannot write {path}: {e}"));
    serde_json::to_writer_pretty(&mut out, summary).map_err(|e| io(e.into()))?;
    out.write_all(b"\n").map_err(io)?;
    out.finish().map_err(io)
}

/// Where a report goes (`--report-file`): `file`, or stdout.
pub fn report_writer(file: Option<&str>) -> Result<Box<dyn Write + Send>, ConfigError> {
    Ok(match file {
        Some(path) => {
            Box::new(BufWriter::new(File::create(path).map_err(|e| {
                ConfigError::Io(format!("cannot create {path}: {e}"))
            })?))
        }
        None => Box::new(BufWriter::new(stdout())),
    })
}

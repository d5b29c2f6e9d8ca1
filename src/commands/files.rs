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

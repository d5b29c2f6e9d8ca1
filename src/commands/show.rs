//! `show`: find one trajectory in a file by id or position, reading only up to it.

use std::io;

use super::inputs::{adp_source, expand_adp};
use super::stats::{check, Checked};
use crate::config::ConfigError;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::ingest::{Provenance, RawRecord};
use crate::model::Trajectory;

/// Which trajectory to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// The first with this id.
    Id(String),
    /// The record at this 0-based position (over all inputs, in order).
    Index(u64),
}

impl Wanted {
    /// What is missing when no record is the one wanted.
    fn missing(&self) -> String {
        match self {
            Wanted::Id(id) => format!("no trajectory has the id {id:?}"),
            Wanted::Index(i) => format!("there is no record {i}"),
        }
    }
}

/// What the search found.
enum Found {
    /// The trajectory, with where it was read.
    Trajectory(Box<Trajectory>, Provenance),
    /// The record wanted is there but is not valid ADP.
    Invalid(Provenance),
}

struct FindSink {
    wanted: Wanted,
    seen: u64,
    found: Option<Found>,
}

impl Sink for FindSink {
    type Item = Checked;

    fn accept(&mut self, record: RawRecord, item: Self::Item) -> io::Result<Flow> {
        let index = self.seen;
        self.seen += 1;
        let hit = match (&self.wanted, &item) {
            (Wanted::Index(n), _) => *n == index,
            (Wanted::Id(id), Some((t, _, _))) => t.id == *id,
            (Wanted::Id(_), None) => false,
        };
        if !hit {
            return Ok(Flow::Continue);
        }
        self.found = Some(match item {
            Some((t, _, _)) => Found::Trajectory(Box::new(t), record.provenance),
            None => Found::Invalid(record.provenance),
        });
        Ok(Flow::Stop)
    }
}

/// Reads `given` (files, directories, Parquet) in order until the wanted trajectory, and
/// returns it with where it was read; the rest is not read. A wanted record that is not valid
/// ADP, or none, is an error ([`ShowError::Invalid`], [`ShowError::Missing`]).
pub fn find(
    given: &[String],
    wanted: Wanted,
    run: &RunOptions,
    progress: &dyn Progress,
    notice: &dyn Fn(&str),
) -> Result<(Box<Trajectory>, Provenance), ShowError> {
    let files = expand_adp(given, notice)?;
    let sink = FindSink {
        wanted,
        seen: 0,
        found: None,
    };
    let (sink, _) =
        pipeline::run_with_sources(&files, &adp_source, run, progress, |r| check(r, None), sink)?;
    match sink.found {
        Some(Found::Trajectory(t, p)) => Ok((t, p)),
        Some(Found::Invalid(p)) => Err(ShowError::Invalid(p)),
        None => Err(ShowError::Missing {
            given: given.join(" "),
            wanted: sink.wanted,
            read: sink.seen,
        }),
    }
}

/// A search that could not run, or found nothing to show.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    /// The record wanted is there but is not valid ADP.
    #[error("{}:{}: the record is not valid ADP (trajkit validate says why)", .0.file, .0.line)]
    Invalid(Provenance),
    /// No record is the one wanted.
    #[error("{given}: {} ({read} records read)", .wanted.missing())]
    Missing {
        /// The inputs as given, separated by spaces.
        given: String,
        /// The record wanted.
        wanted: Wanted,
        /// The records read.
        read: u64,
    },
    /// The inputs could not be expanded.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// Reading failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
}

//! The JSON lines a plan writes ([`super::Output::AdpLines`]): one file, in input order, and the
//! trajectory ids of the converters that check for duplicates ([`Converter::duplicate_ids`]),
//! with where each was first written.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::convert::{write_renamed, ConvertOptions, Converter, DuplicateIds};
use crate::engine::output::Output;
use crate::ingest::RawRecord;
use crate::validate::Diagnostic;

/// The lines file of a pass, and the ids written so far.
pub(super) struct Lines<'a> {
    out: Output,
    /// The converter of each input, and the options, to write a record again with ids renamed.
    by_path: HashMap<&'a str, &'static dyn Converter>,
    opts: &'a ConvertOptions,
    /// Every trajectory id written by a converter that checks for duplicates, with the file
    /// and line it came from: one entry per distinct id.
    seen: HashMap<String, (Arc<str>, u64)>,
}

impl<'a> Lines<'a> {
    /// Lines written to `out`; `by_path` and `opts` convert a record again when its ids are
    /// renamed.
    pub(super) fn new(
        out: Output,
        by_path: HashMap<&'a str, &'static dyn Converter>,
        opts: &'a ConvertOptions,
    ) -> Self {
        Lines {
            out,
            by_path,
            opts,
            seen: HashMap::new(),
        }
    }

    /// Writes `bytes`, lines of trajectories whose ids nobody checks.
    pub(super) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }

    /// Writes `bytes`, the lines `record` made, whose trajectories' ids the converter checks
    /// (`ids`, in order; none: written as they are): as they are when no id was written
    /// before; otherwise rejected, or written again with the repeated ids numbered, as the
    /// converter's policy says.
    pub(super) fn write_checked(
        &mut self,
        record: &RawRecord,
        bytes: Vec<u8>,
        ids: Vec<String>,
    ) -> io::Result<Result<(), Vec<Diagnostic>>> {
        let converter = self.by_path.get(record.provenance.input.as_ref()).copied();
        let mut mine: HashSet<&str> = HashSet::new();
        let repeated = ids
            .iter()
            .find(|id| self.seen.contains_key(id.as_str()) || !mine.insert(id.as_str()));
        let Some(repeated) = repeated else {
            self.out.write_all(&bytes)?;
            let at = (record.provenance.file.clone(), record.provenance.line);
            for id in ids {
                self.seen.insert(id, at.clone());
            }
            return Ok(Ok(()));
        };
        let policy = converter.and_then(|c| c.duplicate_ids());
        let (Some(converter), Some(DuplicateIds::Suffix)) = (converter, policy) else {
            let first = match self.seen.get(repeated.as_str()) {
                Some((file, line)) => format!("was already written, from {file}:{line}"),
                None => "is made twice by this record".to_owned(),
            };
            return Ok(Err(vec![Diagnostic::error(
                &record.provenance,
                Some(repeated),
                "/id",
                "duplicate-id",
                format!(
                    "trajectory id {repeated:?} {first} (ids must be unique; the spec's \
                     `[record] duplicate_ids = \"suffix\"` numbers repeated ones, \"keep\" \
                     writes them as they are)"
                ),
            )]));
        };
        let at = (record.provenance.file.clone(), record.provenance.line);
        let seen = &mut self.seen;
        let mut out = Vec::with_capacity(bytes.len() + 64);
        let written = write_renamed(converter, record, self.opts, &mut out, |id| {
            let fresh = if seen.contains_key(id) {
                (2u64..)
                    .map(|n| format!("{id}_{n}"))
                    .find(|candidate| !seen.contains_key(candidate))
            } else {
                None
            };
            seen.insert(fresh.clone().unwrap_or_else(|| id.to_owned()), at.clone());
            fresh
        });
        match written {
            Ok(_) => {
                self.out.write_all(&out)?;
                Ok(Ok(()))
            }
            Err(d) => Ok(Err(d)),
        }
    }

    /// Flushes and syncs the file, and hands back its temporary name and target to rename
    /// ([`Output::into_pending`]).
    pub(super) fn into_pending(self) -> io::Result<Option<(PathBuf, PathBuf)>> {
        self.out.into_pending()
    }
}

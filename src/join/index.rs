//! The side index: every side record read into memory, by key. Side files are small next to the
//! trajectories (a million rewards take about 100 MB here); only what a record attaches is kept,
//! not the record.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Number;

use super::policy::Duplicates;
use super::spec::{Attach, Extracted, SideSpec};
use crate::ingest::{FramedRecords, Provenance, RawRecord};
use crate::validate::check::parse_json;
use crate::validate::Diagnostic;

/// Side records read in parallel per batch of this many.
const BATCH: usize = 8192;

/// One set of side files read the same way (`--reflections` or `--rewards`).
#[derive(Debug, Clone)]
pub struct SideSet {
    /// `reflections` or `rewards`, for messages and the summary.
    pub name: String,
    /// How its records are read and matched.
    pub spec: SideSpec,
    /// Its files, in order (`-` is stdin).
    pub files: Vec<String>,
}

/// A side file and what was read from it.
#[derive(Debug, Clone)]
pub struct SideFile {
    /// The path as given.
    pub path: Arc<str>,
    /// The name of its set.
    pub set: String,
    /// Records read.
    pub records: u64,
    /// Records the format does not attach (LedgerMind events that are steps).
    pub skipped: u64,
}

/// One indexed side record.
#[derive(Debug)]
pub(crate) struct SideRecord {
    pub file: u32,
    pub set: u16,
    pub line: u64,
    pub index: u64,
    pub reward: Option<Number>,
    /// Everything but the reward, when there is anything (most reward files have none).
    pub rest: Option<Box<Attach>>,
    /// Group id and iteration for the memory window.
    pub window: Option<(u32, i64)>,
}

/// The records of one key: usually one.
#[derive(Debug)]
pub(crate) enum Postings {
    One(u32),
    Many(Vec<u32>),
}

impl Postings {
    pub fn as_slice(&self) -> &[u32] {
        match self {
            Postings::One(r) => std::slice::from_ref(r),
            Postings::Many(v) => v,
        }
    }

    fn push(&mut self, r: u32) {
        match self {
            Postings::One(first) => *self = Postings::Many(vec![*first, r]),
            Postings::Many(v) => v.push(r),
        }
    }
}

/// The index of one side set.
#[derive(Debug)]
pub(crate) struct SetIndex {
    pub name: String,
    pub spec: SideSpec,
    pub keys: HashMap<Box<str>, Postings>,
    pub groups: HashMap<String, u32>,
    /// Per group: (iteration, record) of the records with a reflection, sorted.
    pub window: Vec<Vec<(i64, u32)>>,
    /// Postings removed by `--duplicates first|last`.
    pub superseded: u64,
}

/// Every side record, by key, per set.
#[derive(Debug)]
pub struct SideIndex {
    pub(crate) files: Vec<SideFile>,
    pub(crate) records: Vec<SideRecord>,
    pub(crate) sets: Vec<SetIndex>,
    /// False for records every key of which was superseded by a duplicate.
    pub(crate) live: Vec<bool>,
}

/// Why the side files could not be indexed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A side file could not be opened.
    #[error("cannot open side file {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// Side records that cannot be read, or duplicates refused by `--duplicates error`.
    #[error("{} problem(s) in the side files", .0.len())]
    Invalid(Vec<Diagnostic>),
    /// More than 4 billion side records, or 65,536 side sets.
    #[error("too many side records to index")]
    TooMany,
}

impl SideIndex {
    /// Reads every file of `sets` and indexes its records by key, applying `duplicates`.
    pub fn build(
        sets: Vec<SideSet>,
        duplicates: Duplicates,
        max_record_bytes: usize,
    ) -> Result<SideIndex, IndexError> {
        let mut index = SideIndex {
            files: Vec::new(),
            records: Vec::new(),
            sets: Vec::new(),
            live: Vec::new(),
        };
        let mut problems = Vec::new();
        for (s, set) in sets.into_iter().enumerate() {
            let s16 = u16::try_from(s).map_err(|_| IndexError::TooMany)?;
            let mut si = SetIndex {
                name: set.name.clone(),
                spec: set.spec,
                keys: HashMap::new(),
                groups: HashMap::new(),
                window: Vec::new(),
                superseded: 0,
            };
            for path in &set.files {
                let framed = FramedRecords::open(path, max_record_bytes).map_err(|source| {
                    IndexError::Open {
                        path: path.clone(),
                        source,
                    }
                })?;
                let file = u32::try_from(index.files.len()).map_err(|_| IndexError::TooMany)?;
                let mut sf = SideFile {
                    path: Arc::from(path.as_str()),
                    set: set.name.clone(),
                    records: 0,
                    skipped: 0,
                };
                let mut framed = framed.peekable();
                while framed.peek().is_some() {
                    let batch: Vec<RawRecord> = framed.by_ref().take(BATCH).collect();
                    let read: Vec<Result<Option<Extracted>, Box<Diagnostic>>> = batch
                        .par_iter()
                        .map(|r| read_record(&si.spec, r, path))
                        .collect();
                    for (raw, result) in batch.iter().zip(read) {
                        sf.records += 1;
                        match result {
                            Err(d) => problems.push(*d),
                            Ok(None) => sf.skipped += 1,
                            Ok(Some(x)) => index.add(&mut si, s16, file, raw, x)?,
                        }
                    }
                }
                index.files.push(sf);
            }
            if duplicates == Duplicates::Error {
                problems.extend(index.duplicate_diagnostics(&si));
            } else {
                si.superseded = apply_duplicates(&mut si.keys, duplicates);
            }
            index.sets.push(si);
        }
        if !problems.is_empty() {
            return Err(IndexError::Invalid(problems));
        }
        index.finish();
        Ok(index)
    }

    fn add(
        &mut self,
        si: &mut SetIndex,
        set: u16,
        file: u32,
        raw: &RawRecord,
        x: Extracted,
    ) -> Result<(), IndexError> {
        let id = u32::try_from(self.records.len()).map_err(|_| IndexError::TooMany)?;
        for key in x.keys {
            match si.keys.get_mut(key.as_str()) {
                Some(p) => p.push(id),
                None => {
                    si.keys.insert(key.into_boxed_str(), Postings::One(id));
                }
            }
        }
        let mut attach = x.attach;
        let reward = attach.reward.take();
        let window = x.window.map(|(group, iteration)| {
            let next = si.groups.len() as u32;
            let g = *si.groups.entry(group).or_insert(next);
            (g, iteration)
        });
        self.records.push(SideRecord {
            file,
            set,
            line: raw.provenance.line,
            index: raw.provenance.index,
            reward,
            rest: (attach != Attach::default()).then(|| Box::new(attach)),
            window,
        });
        Ok(())
    }

    fn duplicate_diagnostics(&self, si: &SetIndex) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let mut dups: Vec<(&str, &[u32])> = si
            .keys
            .iter()
            .map(|(k, p)| (k.as_ref(), p.as_slice()))
            .filter(|(_, p)| p.len() > 1)
            .collect();
        dups.sort_by_key(|(_, p)| p[1]);
        for (key, postings) in dups {
            let first = self.place(postings[0]);
            for &r in &postings[1..] {
                out.push(Diagnostic::error(
                    &self.provenance(r),
                    None,
                    "",
                    "join-duplicate",
                    format!(
                        "duplicate {} key {key:?} (first at {first}); --duplicates first|last|all choose how to treat them",
                        si.name
                    ),
                ));
            }
        }
        out
    }

    /// Marks live records and sorts the memory windows.
    fn finish(&mut self) {
        self.live = vec![false; self.records.len()];
        for si in &self.sets {
            for p in si.keys.values() {
                for &r in p.as_slice() {
                    self.live[r as usize] = true;
                }
            }
        }
        for si in &mut self.sets {
            si.window = vec![Vec::new(); si.groups.len()];
        }
        for (r, rec) in self.records.iter().enumerate() {
            let has_reflection = rec.rest.as_ref().is_some_and(|a| a.reflection.is_some());
            if let (Some((g, it)), true, true) = (rec.window, has_reflection, self.live[r]) {
                if let Some(w) = self.sets[rec.set as usize].window.get_mut(g as usize) {
                    w.push((it, r as u32));
                }
            }
        }
        for si in &mut self.sets {
            for w in &mut si.window {
                w.sort_unstable();
            }
        }
    }

    /// `file:line` of record `r`.
    pub(crate) fn place(&self, r: u32) -> String {
        let rec = &self.records[r as usize];
        format!("{}:{}", self.files[rec.file as usize].path, rec.line)
    }

    /// Provenance of record `r`, for diagnostics.
    pub(crate) fn provenance(&self, r: u32) -> Provenance {
        let rec = &self.records[r as usize];
        let path = self.files[rec.file as usize].path.clone();
        Provenance {
            input: path.clone(),
            file: path,
            line: rec.line,
            index: rec.index,
        }
    }

    /// The side files, in order.
    pub fn files(&self) -> &[SideFile] {
        &self.files
    }

    /// Number of side records indexed.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no side record was indexed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Postings removed by `--duplicates first|last`, over all sets.
    pub fn superseded(&self) -> u64 {
        self.sets.iter().map(|s| s.superseded).sum()
    }
}

fn read_record(
    spec: &SideSpec,
    raw: &RawRecord,
    path: &str,
) -> Result<Option<Extracted>, Box<Diagnostic>> {
    let value = parse_json(raw)?;
    spec.extract(value, path).map_err(|m| {
        Box::new(Diagnostic::error(
            &raw.provenance,
            None,
            "",
            "join-side-record",
            m,
        ))
    })
}

/// Keeps the first or last record of each key; returns how many postings were removed.
fn apply_duplicates(keys: &mut HashMap<Box<str>, Postings>, policy: Duplicates) -> u64 {
    let mut removed = 0u64;
    for p in keys.values_mut() {
        if let Postings::Many(v) = p {
            let keep = match policy {
                Duplicates::First => v[0],
                Duplicates::Last => v[v.len() - 1],
                Duplicates::All | Duplicates::Error => continue,
            };
            removed += v.len() as u64 - 1;
            *p = Postings::One(keep);
        }
    }
    removed
}

//! The side index: every side record read into memory, by key. Only what a record attaches is
//! kept, not the record: a million generic reward records (a key, a reward, an outcome and two
//! reward components each) take about 110 MB here (the records, their components and the keys).

use std::io;
use std::sync::Arc;

use foldhash::HashMap;
use serde_json::{Map, Number, Value};

use super::key_table::KeyTable;
use super::packed::{self, Components, Kind};
use super::policy::Duplicates;
use super::side::{Outcome, OUTCOMES};
use super::spec::{Extracted, SideSpec};
use crate::engine::pipeline::{self, Flow, NoProgress, PipelineError, RunOptions, Sink};
use crate::ingest::{Provenance, RawRecord};
use crate::validate::check::parse_json;
use crate::validate::Diagnostic;

/// One side record read: what it attaches, nothing (not attachable), or why not.
type Read = Result<Option<Extracted>, Box<Diagnostic>>;

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
    /// Records the side format does not attach (skipped).
    pub skipped: u64,
    /// The number of its set.
    pub(crate) set_no: u16,
    /// The number of its first indexed record: a file's records are numbered consecutively,
    /// so a record's file (and set) need not be stored with it ([`SideIndex::file_of`]).
    pub(crate) first: u32,
}

/// One indexed side record: what it attaches, stored compactly. A million generic reward
/// records (an outcome and two components each) take 32 bytes each here plus 26 bytes of
/// components in [`SideIndex::components`]: what is rare (reflections, step rewards, memory
/// window places, outcomes that are whole JSON values) is boxed in [`Rest`], and its file and
/// set follow from its number ([`SideIndex::file_of`]).
#[derive(Debug)]
pub(crate) struct SideRecord {
    /// The reward, packed ([`packed::pack`]).
    reward_bits: u64,
    /// Its line and record index in its file (a side file of more than 2^32 lines is refused).
    pub line: u32,
    pub index: u32,
    /// Where its reward components start in [`SideIndex::components`] (they end where the
    /// next record's start).
    components_start: u32,
    reward_kind: Kind,
    /// The outcome read from a status or a boolean (the rarer whole-value outcome is in
    /// [`Rest`]).
    outcome: Option<CompactOutcome>,
    rest: Option<Box<Rest>>,
}

/// The rarer parts of what a record attaches.
#[derive(Debug)]
struct Rest {
    reflection: Option<Value>,
    step_rewards: Vec<(usize, f64)>,
    /// An outcome that is a whole JSON value (the side formats' outcomes).
    outcome: Option<Value>,
    /// Group id and iteration for the memory window.
    window: Option<(u32, i64)>,
}

impl SideRecord {
    /// `details.reward`.
    pub fn reward(&self) -> Option<Number> {
        packed::unpack(self.reward_kind, self.reward_bits)
    }

    pub fn reflection(&self) -> Option<&Value> {
        self.rest.as_ref()?.reflection.as_ref()
    }

    pub fn step_rewards(&self) -> &[(usize, f64)] {
        self.rest.as_ref().map_or(&[], |r| &r.step_rewards)
    }

    /// Group id and iteration for the memory window.
    pub fn window(&self) -> Option<(u32, i64)> {
        self.rest.as_ref()?.window
    }

    /// The outcome as JSON.
    pub fn outcome(&self) -> Option<Value> {
        if let Some(o) = &self.outcome {
            return Some(o.to_value());
        }
        self.rest.as_ref()?.outcome.clone()
    }
}

/// An outcome read from a status name or a boolean, without a JSON map per record.
#[derive(Debug, Clone, Copy)]
struct CompactOutcome {
    /// Index into [`OUTCOMES`].
    status: u8,
    native: Option<bool>,
}

impl CompactOutcome {
    fn to_value(self) -> Value {
        Outcome::Status {
            status: OUTCOMES
                .get(self.status as usize)
                .copied()
                .unwrap_or("unknown"),
            native: self.native,
        }
        .to_value()
    }
}

/// A key's records: one record number, or (high bit set) an index into [`SetIndex::multi`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Postings(u32);

const MULTI: u32 = 1 << 31;

impl SetIndex {
    /// The records of the key `key` (empty when none).
    pub fn get(&self, key: &str) -> &[u32] {
        self.keys.get(key).map_or(&[], |p| self.records(p))
    }

    /// The records of a postings entry.
    pub fn records<'a>(&'a self, p: &'a Postings) -> &'a [u32] {
        if p.0 & MULTI == 0 {
            std::slice::from_ref(&p.0)
        } else {
            self.multi
                .get((p.0 & !MULTI) as usize)
                .map_or(&[], Vec::as_slice)
        }
    }

    fn push(&mut self, key: String, r: u32) -> Result<(), IndexError> {
        let found = self
            .keys
            .get_or_insert(&key, Postings(r))
            .map_err(|_| IndexError::TooMany)?;
        match found {
            None => {}
            Some(p) if p.0 & MULTI == 0 => {
                let m = u32::try_from(self.multi.len())
                    .ok()
                    .filter(|m| m & MULTI == 0)
                    .ok_or(IndexError::TooMany)?;
                self.multi.push(vec![p.0, r]);
                *p = Postings(m | MULTI);
            }
            Some(p) => {
                if let Some(v) = self.multi.get_mut((p.0 & !MULTI) as usize) {
                    v.push(r);
                }
            }
        }
        Ok(())
    }
}

/// The index of one side set.
#[derive(Debug)]
pub(crate) struct SetIndex {
    pub name: String,
    pub spec: Arc<SideSpec>,
    pub keys: KeyTable<Postings>,
    /// Records of keys that have several.
    pub multi: Vec<Vec<u32>>,
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
    /// Every record's reward components, (interned name, value), record after record.
    components: Components,
    /// Interned reward-component names.
    pub(crate) component_names: Vec<Box<str>>,
    component_ids: HashMap<Box<str>, u32>,
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
    /// More than 2 billion side records, 65,536 side sets, or a side file of more than 4
    /// billion lines.
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
            components: Components::default(),
            component_names: Vec::new(),
            component_ids: HashMap::default(),
            live: Vec::new(),
        };
        let mut problems = Vec::new();
        let opts = RunOptions {
            max_record_bytes,
            ..RunOptions::default()
        };
        for (s, set) in sets.into_iter().enumerate() {
            let set_no = u16::try_from(s).map_err(|_| IndexError::TooMany)?;
            let spec = Arc::new(set.spec);
            let sink = IndexSink {
                si: SetIndex {
                    name: set.name.clone(),
                    spec: Arc::clone(&spec),
                    keys: KeyTable::default(),
                    multi: Vec::new(),
                    groups: HashMap::default(),
                    window: Vec::new(),
                    superseded: 0,
                },
                index,
                set: set_no,
                problems,
                error: None,
                seen_bytes: 0,
            };
            // The pipeline frames, parses in parallel and indexes in order, all at once.
            let (sink, _) = pipeline::run(
                &set.files,
                &opts,
                &NoProgress,
                |r| read_record(&spec, r),
                sink,
            )
            .map_err(|e| match e {
                PipelineError::Open { path, source } => IndexError::Open { path, source },
                PipelineError::Write(e) => IndexError::Open {
                    path: set.files.join(", "),
                    source: e,
                },
            })?;
            if let Some(e) = sink.error {
                return Err(e);
            }
            let mut si = sink.si;
            index = sink.index;
            problems = sink.problems;
            if duplicates == Duplicates::Error {
                problems.extend(index.duplicate_diagnostics(&si));
            } else {
                si.superseded = apply_duplicates(&mut si, duplicates);
            }
            index.sets.push(si);
        }
        if !problems.is_empty() {
            return Err(IndexError::Invalid(problems));
        }
        index.finish();
        Ok(index)
    }

    fn add(&mut self, si: &mut SetIndex, raw: &RawRecord, x: Extracted) -> Result<(), IndexError> {
        let id = u32::try_from(self.records.len())
            .ok()
            .filter(|id| id & MULTI == 0)
            .ok_or(IndexError::TooMany)?;
        for key in x.keys {
            si.push(key, id)?;
        }
        let a = x.attach;
        let too_many = |_| IndexError::TooMany;
        let components_start = u32::try_from(self.components.len()).map_err(too_many)?;
        for (name, n) in a.components.unwrap_or_default() {
            let name = self.intern(name)?;
            self.components.push(name, &n);
        }
        // The next record's components start where these end: that must fit a u32 too.
        u32::try_from(self.components.len()).map_err(too_many)?;
        let (reward_kind, reward_bits) = a.reward.as_ref().map_or((Kind::None, 0), packed::pack);
        let line = u32::try_from(raw.provenance.line).map_err(too_many)?;
        let index = u32::try_from(raw.provenance.index).map_err(too_many)?;
        let window = x.window.map(|(group, iteration)| {
            let next = si.groups.len() as u32;
            let g = *si.groups.entry(group).or_insert(next);
            (g, iteration)
        });
        let (outcome, whole_outcome) = match a.outcome {
            Some(Outcome::Status { status, native }) => {
                let status = OUTCOMES.iter().position(|s| *s == status).unwrap_or(4) as u8;
                (Some(CompactOutcome { status, native }), None)
            }
            Some(Outcome::Value(v)) => (None, Some(v)),
            None => (None, None),
        };
        let rare = a.reflection.is_some()
            || !a.step_rewards.is_empty()
            || whole_outcome.is_some()
            || window.is_some();
        let rest = rare.then(|| {
            Box::new(Rest {
                reflection: a.reflection,
                step_rewards: a.step_rewards,
                outcome: whole_outcome,
                window,
            })
        });
        self.records.push(SideRecord {
            reward_bits,
            line,
            index,
            components_start,
            reward_kind,
            outcome,
            rest,
        });
        Ok(())
    }

    /// Reserves room for the rest of the current file's records, estimated from its size and the
    /// `records` read so far (`bytes` of them), so that the index does not grow by doubling
    /// (copies, page faults, and up to twice the room needed) on a large side file. Called again
    /// whenever the records or their components fill what was reserved (the first records of a
    /// file may be longer than the rest), each time with a better estimate. Compressed files
    /// and stdin are not estimated.
    fn reserve(&mut self, si: &mut SetIndex, bytes: u64, records: u64) {
        let Some(f) = self.files.last() else { return };
        let path: &str = &f.path;
        if path == "-" || path.ends_with(".gz") || path.ends_with(".zst") {
            return;
        }
        let Ok(len) = std::fs::metadata(path).map(|m| m.len()) else {
            return;
        };
        let per_record = (bytes / records.max(1)).max(1);
        let rest = (len / per_record).saturating_sub(records).min(1 << 26) as usize;
        // A margin for the estimate, so that it is not short by a few records.
        let rest = rest + rest / 16 + 1024;
        let room = self.records.capacity() - self.records.len();
        self.records.reserve_exact(rest.saturating_sub(room));
        let per_record = self.components.len().div_ceil(self.records.len().max(1));
        let room = self.components.capacity() - self.components.len();
        self.components
            .reserve_exact(rest.saturating_mul(per_record).saturating_sub(room));
        si.keys.reserve(rest);
    }

    /// True when the next record may not fit in what was reserved.
    fn full(&self) -> bool {
        self.records.len() == self.records.capacity()
            || (!self.components.is_empty()
                && self.components.capacity() - self.components.len() < 64)
    }

    fn intern(&mut self, name: String) -> Result<u32, IndexError> {
        if let Some(&id) = self.component_ids.get(name.as_str()) {
            return Ok(id);
        }
        let id = u32::try_from(self.component_names.len()).map_err(|_| IndexError::TooMany)?;
        self.component_names.push(name.clone().into_boxed_str());
        self.component_ids.insert(name.into_boxed_str(), id);
        Ok(id)
    }

    /// The reward components of record `r`, as JSON (`None` when it has none).
    pub(crate) fn components(&self, r: u32) -> Option<Map<String, Value>> {
        let start = self.records.get(r as usize)?.components_start as usize;
        let end = self
            .records
            .get(r as usize + 1)
            .map_or(self.components.len(), |next| next.components_start as usize);
        let c: Map<String, Value> = self
            .components
            .get(start..end)
            .map(|(name, n)| {
                let name = self.component_names.get(name as usize).map_or("", |n| n);
                (name.to_owned(), Value::Number(n))
            })
            .collect();
        (!c.is_empty()).then_some(c)
    }

    fn duplicate_diagnostics(&self, si: &SetIndex) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let mut dups: Vec<(&str, &[u32])> = si
            .keys
            .iter()
            .map(|(k, p)| (k, si.records(p)))
            .filter(|(_, p)| p.len() > 1)
            .collect();
        dups.sort_by_key(|&(k, p)| (p[1], k));
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
                for &r in si.records(p) {
                    self.live[r as usize] = true;
                }
            }
        }
        for si in &mut self.sets {
            si.window = vec![Vec::new(); si.groups.len()];
        }
        for (r, rec) in self.records.iter().enumerate() {
            let has_reflection = rec.reflection().is_some();
            if let (Some((g, it)), true, true) = (rec.window(), has_reflection, self.live[r]) {
                let set = self.set_of(r as u32);
                if let Some(w) = self.sets[set].window.get_mut(g as usize) {
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

    /// The number of the file record `r` was read from.
    pub(crate) fn file_of(&self, r: u32) -> usize {
        // Files that indexed no record share their `first` with the next file; the last file
        // starting at or before `r` is the one that holds it.
        self.files
            .partition_point(|f| f.first <= r)
            .saturating_sub(1)
    }

    /// The number of the set record `r` belongs to.
    pub(crate) fn set_of(&self, r: u32) -> usize {
        self.files
            .get(self.file_of(r))
            .map_or(0, |f| usize::from(f.set_no))
    }

    /// `file:line` of record `r`.
    pub(crate) fn place(&self, r: u32) -> String {
        let rec = &self.records[r as usize];
        format!("{}:{}", self.files[self.file_of(r)].path, rec.line)
    }

    /// Provenance of record `r`, for diagnostics.
    pub(crate) fn provenance(&self, r: u32) -> Provenance {
        let rec = &self.records[r as usize];
        let path = self.files[self.file_of(r)].path.clone();
        Provenance {
            input: path.clone(),
            file: path,
            line: u64::from(rec.line),
            index: u64::from(rec.index),
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

fn read_record(spec: &SideSpec, raw: &RawRecord) -> Read {
    let value = parse_json(raw)?;
    spec.extract(value, &raw.provenance.file).map_err(|m| {
        Box::new(Diagnostic::error(
            &raw.provenance,
            None,
            "",
            "join-side-record",
            m,
        ))
    })
}

/// Indexes the records of one side set as the pipeline hands them over, in input order.
struct IndexSink {
    index: SideIndex,
    si: SetIndex,
    set: u16,
    problems: Vec<Diagnostic>,
    error: Option<IndexError>,
    /// Bytes of the current file's records so far, to estimate how many it holds.
    seen_bytes: u64,
}

/// Records of a file after which the index reserves room for the rest.
const ESTIMATE_AFTER: u64 = 1000;

impl Sink for IndexSink {
    type Item = Read;

    fn start_input(&mut self, path: &Arc<str>) -> io::Result<()> {
        // Past 2^31 records `add` refuses the next one (TooMany) before this could be wrong.
        let first = u32::try_from(self.index.records.len()).unwrap_or(u32::MAX);
        self.index.files.push(SideFile {
            path: Arc::clone(path),
            set: self.si.name.clone(),
            records: 0,
            skipped: 0,
            set_no: self.set,
            first,
        });
        self.seen_bytes = 0;
        Ok(())
    }

    fn accept(&mut self, record: RawRecord, item: Read) -> io::Result<Flow> {
        let Some(file) = self.index.files.len().checked_sub(1) else {
            return Ok(Flow::Continue);
        };
        let sf = &mut self.index.files[file];
        sf.records += 1;
        let records = sf.records;
        self.seen_bytes += record.bytes.len() as u64 + 1;
        if records == ESTIMATE_AFTER || (records > ESTIMATE_AFTER && self.index.full()) {
            self.index.reserve(&mut self.si, self.seen_bytes, records);
        }
        match item {
            Err(d) => self.problems.push(*d),
            Ok(None) => self.index.files[file].skipped += 1,
            Ok(Some(x)) => {
                if let Err(e) = self.index.add(&mut self.si, &record, x) {
                    self.error = Some(e);
                    return Ok(Flow::Stop);
                }
            }
        }
        Ok(Flow::Continue)
    }
}

/// Keeps the first or last record of each key; returns how many postings were removed.
fn apply_duplicates(si: &mut SetIndex, policy: Duplicates) -> u64 {
    let mut removed = 0u64;
    for p in si.keys.values_mut() {
        if p.0 & MULTI == 0 {
            continue;
        }
        let Some(v) = si.multi.get((p.0 & !MULTI) as usize) else {
            continue;
        };
        let keep = match (policy, v.first(), v.last()) {
            (Duplicates::First, Some(&r), _) | (Duplicates::Last, _, Some(&r)) => r,
            _ => continue,
        };
        removed += v.len() as u64 - 1;
        *p = Postings(keep);
    }
    if matches!(policy, Duplicates::First | Duplicates::Last) {
        si.multi = Vec::new();
    }
    removed
}

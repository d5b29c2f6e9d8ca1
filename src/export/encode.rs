//! Export, as one file until it is split by concern.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::conversation::{self, MapOptions, Untrainable};
use super::manifest::Manifest;
use super::parquet::{ParquetConfig, ParquetShard};
use super::shard::{ClosedShard, JsonLines, ShardFile, ShardOptions, ShardSet, ShardWriter};
use super::split::Splits;
use super::tools::{tool_specs, ToolCatalog};
use super::{hf, infer, openai, shard, sharegpt};
use crate::choice::choice;
use crate::engine::output::Commit;
use crate::engine::partition::{state_dir, Partition};
use crate::engine::pipeline::{
    self, empty_inputs, Flow, InputCount, PipelineError, Progress, RunOptions, Sink,
};
use crate::engine::rejects::{reject, RejectsWriter};
use crate::ingest::{Provenance, RawRecord};
use crate::model::upgrade::UpgradeOptions;
use crate::model::Trajectory;
use crate::validate::check::upgrade_checked;
use crate::validate::report::Reporter;
use crate::validate::{check_adp, Diagnostic};

choice!(
    /// What `export` writes.
    Target, "export target" {
        /// OpenAI chat fine-tuning JSONL.
        Openai = "openai",
        /// Hugging Face chat-template messages (TRL, transformers, axolotl).
        Hf = "hf",
        /// LLaMA-Factory ShareGPT.
        Sharegpt = "sharegpt",
        /// ADP 1.5.0 trajectories.
        Adp = "adp",
        /// Parquet, one row per ADP 1.5.0 trajectory.
        Parquet = "parquet",
    }
);

impl Target {
    /// True for the SFT JSON-lines targets (openai, hf, sharegpt), which list tool specs.
    pub fn is_sft(self) -> bool {
        matches!(self, Target::Openai | Target::Hf | Target::Sharegpt)
    }

    /// Where thoughts go unless `--thoughts` says otherwise.
    pub fn default_thoughts(self) -> Thoughts {
        match self {
            Target::Hf => Thoughts::Reasoning,
            _ => Thoughts::Think,
        }
    }

    /// The row shape, for the dataset card.
    fn shape(self) -> &'static str {
        match self {
            Target::Openai => "Each row is an OpenAI chat fine-tuning record: `messages` (system, user, assistant with `tool_calls` whose `arguments` are JSON strings, tool with `tool_call_id`; optional `weight`), `tools` (function specs) and `parallel_tool_calls`.",
            Target::Hf => "Each row has `id`, `messages` for chat templates (assistant `tool_calls` with `arguments` as objects, thoughts in `reasoning_content`, tool messages with `tool_call_id` and `name`) and `tools` (function specs).",
            Target::Sharegpt => "Each row is LLaMA-Factory ShareGPT: `id`, `conversations` of `{from, value}` (human/observation at odd positions, gpt/function_call at even ones), `system` and `tools` (a JSON string).",
            Target::Adp => "Each row is an ADP 1.5.0 trajectory (`schema_version`, `id`, `content`, `details`, ...).",
            Target::Parquet => "Each row is one ADP 1.5.0 trajectory: `id`, `schema_version`, columns derived from `details` (`source_format`, `outcome`, `reward`, `reward_components`, `reflections`), counts (`num_steps`, `num_actions`, `num_observations`, `num_chars`), `available_custom_tools`, `available_code_languages`, `steps` (a list of structs tagged by `class`; kwargs, JSON content and other free-form values as JSON text) and `details` (JSON text). `trajkit convert --from parquet` turns the files back into ADP JSON lines.",
        }
    }
}

choice!(
    /// Where an assistant turn's thought (`reasoning_content`, and descriptions with
    /// `--description-as thought`) goes.
    Thoughts, "thought placement" {
        /// Before the text, as plain text.
        Content = "content",
        /// In `reasoning_content` (hf only).
        Reasoning = "reasoning",
        /// Before the text, as `<think>\n…\n</think>\n\n`.
        Think = "think",
        /// Nowhere.
        Drop = "drop",
    }
);

choice!(
    /// Where the inferred spec of a tool comes from (tools without a `--tools` or code-tool
    /// spec).
    InferTools, "--infer-tools value" {
        /// The arguments of all its calls in the input (a first pass over the inputs).
        Dataset = "dataset",
        /// The arguments of its calls in the same trajectory (one pass; for stdin).
        Trajectory = "trajectory",
    }
);

choice!(
    /// Which assistant messages train (`weight`, openai only).
    TrainOn, "--train-on value" {
        /// All of them (no `weight` written).
        All = "all",
        /// Only the last one (`weight` 1 on it, 0 on the others).
        Last = "last",
    }
);

/// Options of the SFT targets.
#[derive(Debug, Clone)]
pub struct SftOptions {
    /// Where thoughts go.
    pub thoughts: Thoughts,
    /// `weight` on assistant messages (openai).
    pub train_on: TrainOn,
    /// The mapping from trajectories to conversations.
    pub map: MapOptions,
    /// Tool specs by name (`--tools`).
    pub catalog: ToolCatalog,
    /// Where inferred tool specs come from.
    pub infer_tools: InferTools,
}

/// An assistant turn's text with its thought placed: before it (plain or in `<think>`), or
/// not at all.
pub fn visible<'a>(text: &'a str, thought: &'a str, placement: Thoughts) -> Cow<'a, str> {
    if thought.is_empty() {
        return Cow::Borrowed(text);
    }
    let sep = if text.is_empty() { "" } else { "\n\n" };
    match placement {
        Thoughts::Reasoning | Thoughts::Drop => Cow::Borrowed(text),
        Thoughts::Content => Cow::Owned(format!("{thought}{sep}{text}")),
        Thoughts::Think => Cow::Owned(format!("<think>\n{thought}\n</think>\n\n{text}")),
    }
}

/// Which trajectories are written.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Filters {
    /// `details.reward` at least this (trajectories without a reward are filtered).
    pub min_reward: Option<f64>,
    /// `details.outcome.status` one of these.
    pub outcome: Vec<String>,
    /// At most this many steps.
    pub max_steps: Option<usize>,
    /// At most this many characters of free text (contents, code, pages, thoughts).
    pub max_chars: Option<usize>,
}

/// Why a trajectory was filtered out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filtered {
    /// `--min-reward`.
    MinReward,
    /// `--outcome`.
    Outcome,
    /// `--max-steps`.
    MaxSteps,
    /// `--max-chars`.
    MaxChars,
    /// `--dedup`.
    Duplicate,
}

impl Filters {
    /// The first filter `traj` fails, if any.
    pub fn check(&self, traj: &Trajectory) -> Option<Filtered> {
        if let Some(min) = self.min_reward {
            let reward = traj.details.get("reward").and_then(Value::as_f64);
            if reward.is_none_or(|r| r < min) {
                return Some(Filtered::MinReward);
            }
        }
        if !self.outcome.is_empty() {
            let status = traj.details.get("outcome").and_then(|o| match o {
                Value::String(s) => Some(s.as_str()),
                other => other.get("status").and_then(Value::as_str),
            });
            if status.is_none_or(|s| !self.outcome.iter().any(|o| o == s)) {
                return Some(Filtered::Outcome);
            }
        }
        if self.max_steps.is_some_and(|m| traj.content.len() > m) {
            return Some(Filtered::MaxSteps);
        }
        if let Some(m) = self.max_chars {
            let chars: usize = traj.content.iter().map(|s| s.text_chars()).sum();
            if chars > m {
                return Some(Filtered::MaxChars);
            }
        }
        None
    }
}

/// Options of [`export_inputs`].
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The target.
    pub target: Target,
    /// SFT options (ignored by `adp`).
    pub sft: SftOptions,
    /// Splits.
    pub splits: Splits,
    /// Shards.
    pub shards: ShardOptions,
    /// Parquet files (`--to parquet`).
    pub parquet: ParquetConfig,
    /// Filters.
    pub filters: Filters,
    /// Drop rows whose content (the row without its id) was already written.
    pub dedup: bool,
    /// Replace the data files and manifest of an earlier export in the directory.
    pub force: bool,
    /// Recorded in the manifest as the run's options.
    pub recorded_options: Value,
    /// The ADP version read into (1.5.0).
    pub upgrade: UpgradeOptions,
    /// Runner options.
    pub run: RunOptions,
}

/// Filter counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilteredBy {
    /// `--min-reward`.
    pub min_reward: u64,
    /// `--outcome`.
    pub outcome: u64,
    /// `--max-steps`.
    pub max_steps: u64,
    /// `--max-chars`.
    pub max_chars: u64,
    /// `--dedup`.
    pub duplicate: u64,
}

/// Counts of an export: `records_in == written + filtered + rejected` (trajectories; a record
/// that does not parse counts as one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportSummary {
    /// Trajectories read.
    #[serde(rename = "in")]
    pub records_in: u64,
    /// Rows written.
    pub written: u64,
    /// Trajectories filtered out.
    pub filtered: u64,
    /// By which filter.
    pub filtered_by: FilteredBy,
    /// Trajectories rejected (invalid ADP, untrainable).
    pub rejected: u64,
    /// Inputs that held no records.
    #[serde(skip)]
    pub empty_inputs: Vec<String>,
}

impl ExportSummary {
    /// Adds the counts of `other` (another partition's) to these.
    pub fn add(&mut self, other: &ExportSummary) {
        self.records_in += other.records_in;
        self.written += other.written;
        self.filtered += other.filtered;
        self.rejected += other.rejected;
        let (a, b) = (&mut self.filtered_by, &other.filtered_by);
        a.min_reward += b.min_reward;
        a.outcome += b.outcome;
        a.max_steps += b.max_steps;
        a.max_chars += b.max_chars;
        a.duplicate += b.duplicate;
    }
}

/// A row of the target, ready for the writer.
pub struct Encoded<R> {
    /// The row.
    pub row: R,
    /// Its bytes of data (what shards are cut by).
    pub len: u64,
    /// With `--dedup`, the hash of its content without the id.
    pub hash: Option<[u8; 16]>,
}

/// What export made of one trajectory.
pub enum Outcome<R> {
    /// A row, and its split.
    Row(usize, Encoded<R>),
    /// Filtered out.
    Filtered(Filtered),
    /// Rejected.
    Rejected(Vec<Diagnostic>),
}

/// Why a trajectory could not be encoded.
pub enum RenderError {
    /// It cannot train.
    Untrainable(Untrainable),
    /// A value did not serialize.
    Json(serde_json::Error),
}

impl From<serde_json::Error> for RenderError {
    fn from(e: serde_json::Error) -> Self {
        RenderError::Json(e)
    }
}

/// Turns an accepted trajectory into a row of the target; given a borrowed one, a target that
/// needs its own copy (the SFT targets) clones it, and Parquet does not.
pub type Encoder<R> =
    dyn Fn(Cow<'_, Trajectory>, &ExportOptions) -> Result<Encoded<R>, RenderError> + Sync;

/// Exports one ADP record (any version): parse, then [`export_trajectory`] each trajectory.
pub fn export_record<R>(
    record: &RawRecord,
    opts: &ExportOptions,
    encode: &Encoder<R>,
) -> Vec<Outcome<R>> {
    match check_adp(record).into_result() {
        Ok((traj, _)) => vec![export_trajectory(traj, &record.provenance, opts, encode)],
        Err(d) => vec![Outcome::Rejected(d)],
    }
}

/// Exports one trajectory: upgrade to 1.5.0 and check, filter, then `encode`, and assign the
/// split. `prov` locates it for diagnostics.
pub fn export_trajectory<R>(
    mut traj: Trajectory,
    prov: &Provenance,
    opts: &ExportOptions,
    encode: &Encoder<R>,
) -> Outcome<R> {
    if let Err(d) = upgrade_checked(&mut traj, prov, &opts.upgrade) {
        return Outcome::Rejected(d);
    }
    export_upgraded(Cow::Owned(traj), prov, opts, encode)
}

/// [`export_trajectory`] of a trajectory already upgraded and checked with `opts.upgrade`.
pub fn export_upgraded<R>(
    traj: Cow<'_, Trajectory>,
    prov: &Provenance,
    opts: &ExportOptions,
    encode: &Encoder<R>,
) -> Outcome<R> {
    if let Some(f) = opts.filters.check(&traj) {
        return Outcome::Filtered(f);
    }
    let id = traj.id.clone();
    let split = opts.splits.assign(&id);
    let diagnose = |rule: &str, pointer: &str, message: String| {
        Outcome::Rejected(vec![Diagnostic::error(
            prov,
            Some(&id),
            pointer,
            rule,
            message,
        )])
    };
    match encode(traj, opts) {
        Ok(row) => Outcome::Row(split, row),
        Err(RenderError::Untrainable(u)) => diagnose(u.rule, &u.pointer, u.message),
        Err(RenderError::Json(e)) => diagnose("serialize", "", e.to_string()),
    }
}

/// A row of any target: what [`encode_any`] makes, for passes that fan one trajectory out to
/// exports of several targets (`trajkit run`).
pub enum AnyRow {
    /// A JSON line (SFT targets and `adp`).
    Line(Vec<u8>),
    /// A Parquet row.
    Parquet(Box<crate::parquet::Row>),
}

/// Encodes a row of `opts.target`, whichever it is.
pub fn encode_any(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
) -> Result<Encoded<AnyRow>, RenderError> {
    Ok(match opts.target {
        Target::Parquet => {
            let e = encode_parquet(traj, opts)?;
            Encoded {
                row: AnyRow::Parquet(Box::new(e.row)),
                len: e.len,
                hash: e.hash,
            }
        }
        _ => {
            let e = encode_line(traj, opts)?;
            Encoded {
                row: AnyRow::Line(e.row),
                len: e.len,
                hash: e.hash,
            }
        }
    })
}

fn content_hash(body: &[u8]) -> [u8; 16] {
    let mut h = [0u8; 16];
    h.copy_from_slice(&Sha256::digest(body)[..16]);
    h
}

/// The `--dedup` hash of a trajectory: of its JSON with the id left out.
fn trajectory_hash(traj: &mut Trajectory) -> Result<[u8; 16], serde_json::Error> {
    let id = std::mem::take(&mut traj.id);
    let body = serde_json::to_vec(&*traj);
    traj.id = id;
    Ok(content_hash(&body?))
}

/// Encodes a JSON-lines row: an SFT record, or the trajectory itself for `adp`.
///
/// The body is rendered into a per-thread scratch buffer and copied out once into a line of
/// exactly its size: the rows of a batch wait for their turn to be written, so a buffer grown while
/// rendering (or a generous first capacity) would be held that long for each of them.
fn encode_line(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
) -> Result<Encoded<Vec<u8>>, RenderError> {
    thread_local! {
        static BODY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut traj = traj;
    let id = traj.id.clone();
    BODY.with_borrow_mut(|body| {
        body.clear();
        let (with_id, hash) = if opts.target == Target::Adp {
            // Written from a borrowed trajectory; hashing blanks the id for a moment, so a
            // borrowed one is copied only for --dedup.
            let hash = opts
                .dedup
                .then(|| trajectory_hash(traj.to_mut()))
                .transpose()?;
            serde_json::to_writer(&mut *body, &*traj)?;
            (false, hash)
        } else {
            // Rendering takes the trajectory apart: a borrowed one is copied.
            render_sft(traj.into_owned(), opts, body)?;
            // OpenAI's format has no id key; the others carry it first.
            (
                opts.target != Target::Openai,
                opts.dedup.then(|| content_hash(body)),
            )
        };
        let row = line(&id, body, with_id);
        // A scratch buffer grown by one huge record is not kept for the rest of the run.
        if body.capacity() > SCRATCH_KEEP {
            *body = Vec::new();
        }
        Ok(Encoded {
            len: row.len() as u64,
            row,
            hash,
        })
    })
}

/// The largest scratch buffer [`encode_line`] keeps between rows.
const SCRATCH_KEEP: usize = 4 << 20;

/// Encodes a Parquet row.
fn encode_parquet(
    traj: Cow<'_, Trajectory>,
    opts: &ExportOptions,
) -> Result<Encoded<crate::parquet::Row>, RenderError> {
    let mut traj = traj;
    // Hashing blanks the id for a moment: a borrowed trajectory is copied only then.
    let hash = opts
        .dedup
        .then(|| trajectory_hash(traj.to_mut()))
        .transpose()?;
    let row = crate::parquet::Row::new(&traj)?;
    Ok(Encoded {
        len: row.bytes,
        row,
        hash,
    })
}

/// An SFT record body (a JSON object without the id).
fn render_sft(
    traj: Trajectory,
    opts: &ExportOptions,
    body: &mut Vec<u8>,
) -> Result<(), RenderError> {
    let available = traj.available_custom_tools.clone().unwrap_or_default();
    let sft = &opts.sft;
    let conv = conversation::build(traj, &sft.map).map_err(RenderError::Untrainable)?;
    let tools = tool_specs(&conv, &available, &sft.map.code_tools, &sft.catalog);
    match opts.target {
        Target::Openai => openai::render(&conv, &tools, sft, body)?,
        Target::Hf => hf::render(&conv, &tools, sft, body)?,
        _ => sharegpt::render(&conv, &tools, sft, body).map_err(|e| match e {
            sharegpt::Error::Untrainable(u) => RenderError::Untrainable(u),
            sharegpt::Error::Json(e) => RenderError::Json(e),
        })?,
    }
    Ok(())
}

/// The JSON line of a row, at exactly its size: `{"id":…,` before the body's members when
/// `with_id`.
fn line(id: &str, body: &[u8], with_id: bool) -> Vec<u8> {
    if !with_id {
        let mut out = Vec::with_capacity(body.len() + 1);
        out.extend_from_slice(body);
        out.push(b'\n');
        return out;
    }
    let members = body.get(1..).unwrap_or_default();
    // `{"id":`, the quoted id (longer only when it has characters to escape), `,`, `\n`.
    let mut out = Vec::with_capacity(6 + id.len() + 2 + 1 + members.len() + 1);
    out.extend_from_slice(b"{\"id\":");
    // A string always serializes.
    let _ = serde_json::to_writer(&mut out, id);
    if body.len() > 2 {
        out.push(b',');
    }
    out.extend_from_slice(members);
    out.push(b'\n');
    out
}

/// The shards of one export being written, the `--dedup` hashes seen and the counts.
struct Shards<W: ShardWriter> {
    shards: Vec<ShardSet<W>>,
    seen: HashSet<[u8; 16]>,
    summary: ExportSummary,
    /// Collect a [`ShardCheckpoint`] each time a shard starts (`trajkit run`).
    checkpoints: bool,
    /// Checkpoints not yet taken by [`ExportStage::take_checkpoints`].
    pending: Vec<ShardCheckpoint>,
    /// `--dedup` hashes seen since the last checkpoint, in order.
    new_seen: Vec<[u8; 16]>,
    /// Per split: rows of trajectories offered before this position are already in completed
    /// shards of a resumed run, and are counted but not written again.
    written_from: Vec<u64>,
}

/// The state of an export at the moment one of its shards starts: what a resumed run
/// restarts that split from. `at` counts the trajectories offered to the export before the
/// one whose row starts the shard.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ShardCheckpoint {
    /// The split whose shard starts.
    pub split: usize,
    /// Trajectories offered before.
    pub at: u64,
    /// The shard it completed (synced to disk), when it was not the split's first.
    pub closed: Option<ClosedShard>,
    /// The counts at `at`.
    pub summary: ExportSummary,
    /// `--dedup` hashes first seen since the previous checkpoint, in order.
    #[serde(skip)]
    pub new_seen: Vec<[u8; 16]>,
}

/// Where a resumed export restarts (see [`ExportStage::resume`]).
#[derive(Debug, Clone, Default)]
pub struct ExportRestart {
    /// The counts at the restart position.
    pub summary: ExportSummary,
    /// The `--dedup` hashes seen before it.
    pub seen: Vec<[u8; 16]>,
    /// Per split, the completed shards to keep.
    pub closed: Vec<Vec<ClosedShard>>,
    /// Per split, the position its open shard started at (its rows before are kept).
    pub written_from: Vec<u64>,
    /// Trajectories the resumed pass offers before the restart position: passed over, except
    /// that their rejections are still reported (the rejects file is rewound further back).
    pub skip: u64,
}

impl<W: ShardWriter> Shards<W> {
    fn new(data: &Path, opts: &ExportOptions, config: &W::Config) -> Self {
        let shards: Vec<ShardSet<W>> = opts
            .splits
            .names()
            .iter()
            .map(|s| ShardSet::new(data, s, &opts.shards, config))
            .collect();
        Shards {
            written_from: vec![0; shards.len()],
            shards,
            seen: HashSet::new(),
            summary: ExportSummary::default(),
            checkpoints: false,
            pending: Vec::new(),
            new_seen: Vec::new(),
        }
    }

    /// The shards of a resumed export, restarting at `restart`'s position.
    fn resume(
        data: &Path,
        opts: &ExportOptions,
        config: &W::Config,
        restart: ExportRestart,
    ) -> io::Result<Self> {
        let names = opts.splits.names();
        let mut closed = restart.closed;
        closed.resize(names.len(), Vec::new());
        let shards = names
            .iter()
            .zip(closed)
            .map(|(s, c)| ShardSet::resume(data, s, &opts.shards, config, c))
            .collect::<io::Result<Vec<_>>>()?;
        let mut written_from = restart.written_from;
        written_from.resize(names.len(), 0);
        Ok(Shards {
            shards,
            seen: restart.seen.into_iter().collect(),
            summary: restart.summary,
            checkpoints: true,
            pending: Vec::new(),
            new_seen: Vec::new(),
            written_from,
        })
    }

    /// Writes or counts one outcome; a rejection's diagnostics are handed back to report.
    fn add(&mut self, item: Outcome<W::Row>) -> io::Result<Option<Vec<Diagnostic>>> {
        let at = self.summary.records_in;
        let out = self.count(item, at);
        self.summary.records_in += 1;
        out
    }

    fn count(&mut self, item: Outcome<W::Row>, at: u64) -> io::Result<Option<Vec<Diagnostic>>> {
        let by = &mut self.summary.filtered_by;
        match item {
            Outcome::Row(split, encoded) => {
                if encoded.hash.is_some_and(|h| self.seen.contains(&h)) {
                    by.duplicate += 1;
                    self.summary.filtered += 1;
                    return Ok(None);
                }
                let from = self.written_from.get(split).copied().unwrap_or(0);
                if let Some(s) = self.shards.get_mut(split).filter(|_| at >= from) {
                    if self.checkpoints && s.starts_shard(encoded.len) {
                        let closed = s.close()?.cloned();
                        self.pending.push(ShardCheckpoint {
                            split,
                            at,
                            closed,
                            summary: self.summary.clone(),
                            new_seen: std::mem::take(&mut self.new_seen),
                        });
                    }
                    s.write(encoded.row, encoded.len)?;
                }
                if let Some(h) = encoded.hash {
                    self.seen.insert(h);
                    if self.checkpoints {
                        self.new_seen.push(h);
                    }
                }
                self.summary.written += 1;
            }
            Outcome::Filtered(f) => {
                *match f {
                    Filtered::MinReward => &mut by.min_reward,
                    Filtered::Outcome => &mut by.outcome,
                    Filtered::MaxSteps => &mut by.max_steps,
                    Filtered::MaxChars => &mut by.max_chars,
                    Filtered::Duplicate => &mut by.duplicate,
                } += 1;
                self.summary.filtered += 1;
            }
            Outcome::Rejected(diagnostics) => {
                self.summary.rejected += 1;
                return Ok(Some(diagnostics));
            }
        }
        Ok(None)
    }

    /// Completes the shards, and hands back the commit that removes the `earlier` ones and
    /// gives the new ones their final names.
    fn into_commit(
        mut self,
        earlier: &[PathBuf],
    ) -> io::Result<(ExportSummary, Vec<ShardFile>, Commit)> {
        // Every shard is completed before any is handed over: on an error, dropping the sets
        // removes every partial file.
        for s in &mut self.shards {
            s.finish()?;
        }
        let mut commit = Commit {
            remove: earlier.to_vec(),
            ..Commit::default()
        };
        let mut files: Vec<ShardFile> = Vec::new();
        for s in self.shards.drain(..) {
            let (renames, f) = s.into_commit()?;
            commit.rename.extend(renames);
            files.extend(f);
        }
        Ok((self.summary, files, commit))
    }
}

struct ExportSink<W: ShardWriter> {
    out: Shards<W>,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
}

impl<W: ShardWriter> Sink for ExportSink<W> {
    type Item = Vec<Outcome<W::Row>>;

    fn accept(&mut self, record: RawRecord, items: Self::Item) -> io::Result<Flow> {
        for item in items {
            if let Some(diagnostics) = self.out.add(item)? {
                reject(
                    self.reporter.as_mut(),
                    self.rejects.as_mut(),
                    &record,
                    "export",
                    &diagnostics,
                )?;
            }
        }
        Ok(Flow::Continue)
    }
}

/// Why an export could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The directory holds an earlier export and `force` is off.
    #[error(
        "{0} already holds an export (manifest.json or data files); pass --force to replace it"
    )]
    Exists(String),
    /// The run failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// Creating or finishing the outputs failed.
    #[error("cannot write the export in {dir}: {source}")]
    Io {
        /// The output directory.
        dir: String,
        /// Why.
        source: io::Error,
    },
}

/// The shard files in `data` (finished and partial ones), sorted: all of them, or only
/// `partition`'s.
fn earlier_shards(data: &Path, partition: Option<&Partition>) -> io::Result<Vec<PathBuf>> {
    if !data.is_dir() {
        return Ok(Vec::new());
    }
    let tag = partition.map(|p| format!("-{}-", p.tag()));
    let mut found = Vec::new();
    for entry in fs::read_dir(data)? {
        let path = entry?.path();
        if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            shard::is_shard_name(n) && tag.as_ref().is_none_or(|t| n.contains(t.as_str()))
        }) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// True for a shard's partial name (`.{split}-{i}.partial`).
fn is_partial(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "partial")
}

enum RunError {
    Pipeline(PipelineError),
    Io(io::Error),
}

/// One export run's inputs and outputs, before the writer is chosen.
struct Run<'a> {
    inputs: &'a [String],
    data: &'a Path,
    earlier: &'a [PathBuf],
    opts: &'a ExportOptions,
    progress: &'a dyn Progress,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
}

impl Run<'_> {
    /// Streams the inputs into shards written by `W`; once everything is written, replaces
    /// the `earlier` shards with the new ones.
    fn write<W: ShardWriter>(
        self,
        config: &W::Config,
        encode: &Encoder<W::Row>,
    ) -> Result<(ExportSummary, Vec<ShardFile>, Commit, Vec<InputCount>), RunError> {
        let opts = self.opts;
        let sink = ExportSink::<W> {
            out: Shards::new(self.data, opts, config),
            rejects: self.rejects,
            reporter: self.reporter,
        };
        let (mut sink, inputs_read) = pipeline::run(
            self.inputs,
            &opts.run,
            self.progress,
            |r| export_record(r, opts, encode),
            sink,
        )
        .map_err(RunError::Pipeline)?;
        sink.reporter
            .finish(&Default::default())
            .map_err(RunError::Io)?;
        if let Some(r) = sink.rejects.take() {
            r.finish().map_err(RunError::Io)?;
        }
        let (summary, files, commit) = sink.out.into_commit(self.earlier).map_err(RunError::Io)?;
        Ok((summary, files, commit, inputs_read))
    }
}

/// The manifest's file name: `manifest.json`, or `manifest.part-00000-of-00002.json` for a
/// partition.
fn manifest_name(partition: Option<&Partition>) -> String {
    match partition {
        Some(p) => p.file_name("manifest.json"),
        None => "manifest.json".to_owned(),
    }
}

/// Checks that `dir` may be written (no earlier export unless `force`), creates `dir/data`,
/// and returns it with the earlier shards to replace. A partition looks only at its own
/// shards and manifest (and at a merged `manifest.json`): the other partitions may be writing
/// to the same directory.
fn prepare_dir(
    dir: &Path,
    force: bool,
    partition: Option<&Partition>,
) -> Result<(PathBuf, Vec<PathBuf>), ExportError> {
    let io_err = |source: io::Error| ExportError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let data = dir.join("data");
    let (partial, earlier): (Vec<PathBuf>, Vec<PathBuf>) = earlier_shards(&data, partition)
        .map_err(io_err)?
        .into_iter()
        .partition(|p| is_partial(p));
    // Partial files beside the journal of a killed `run` are what `--resume` goes on from:
    // kept unless `force`. Any other partial file was left by a killed command (the
    // directory's lock keeps out a running one): removed now, as this run writes partial
    // files of the same names.
    let interrupted = !partial.is_empty() && state_dir(dir, partition).exists();
    if !force && (interrupted || holds_export(dir, &earlier, partition)) {
        return Err(ExportError::Exists(dir.display().to_string()));
    }
    for p in &partial {
        fs::remove_file(p).map_err(io_err)?;
    }
    fs::create_dir_all(&data).map_err(io_err)?;
    Ok((data, earlier))
}

/// True when `dir` holds a finished export: shards (`earlier`, partial files left out) or a
/// manifest. The lock file and the files of an interrupted run do not count.
fn holds_export(dir: &Path, earlier: &[PathBuf], partition: Option<&Partition>) -> bool {
    let manifest = |name: &str| dir.join(name).exists();
    !earlier.is_empty() || manifest("manifest.json") || manifest(&manifest_name(partition))
}

/// The commit step that writes `manifest.json` and the dataset card of a finished export (and
/// for a partition, removes a stale merged manifest and card).
fn manifest_commit(
    dir: &Path,
    opts: &ExportOptions,
    summary: &ExportSummary,
    files: &[ShardFile],
) -> io::Result<Commit> {
    let mut manifest = Manifest::new(
        opts.target.name(),
        &opts.recorded_options,
        summary,
        opts.splits.names(),
        files,
    );
    let partition = opts.shards.partition.as_ref();
    manifest.partition = partition.map(Partition::info);
    let mut commit = manifest_files(dir, &manifest_name(partition), &manifest, opts.target)?;
    if partition.is_some() {
        // A merged manifest and card no longer describe the data files: the directory must not
        // look finished until `merge-manifests` runs again.
        commit.remove = ["manifest.json", "README.md"]
            .iter()
            .map(|stale| dir.join(stale))
            .collect();
    }
    Ok(commit)
}

/// The commit step that writes `manifest` as `name` in `dir`, with the dataset card unless it
/// is a partition's.
fn manifest_files(
    dir: &Path,
    name: &str,
    manifest: &Manifest<'_>,
    target: Target,
) -> io::Result<Commit> {
    let mut text = serde_json::to_string_pretty(manifest)?;
    text.push('\n');
    let mut commit = Commit::default();
    commit.write.push((dir.join(name), text));
    if manifest
        .partition
        .as_ref()
        .is_none_or(|p| p.index.is_none())
    {
        commit
            .write
            .push((dir.join("README.md"), manifest.card(target.shape())));
    }
    Ok(commit)
}

/// Writes `manifest` as `name` in `dir`, with the dataset card unless it is a partition's.
pub(super) fn write_manifest_files(
    dir: &Path,
    name: &str,
    manifest: &Manifest<'_>,
    target: Target,
) -> io::Result<()> {
    manifest_files(dir, name, manifest, target)?.apply()
}

enum AnyShards {
    Lines(Shards<JsonLines>),
    Parquet(Shards<ParquetShard>),
}

/// One export as a stage of a larger pass (`trajkit run`): the caller encodes rows with
/// [`export_trajectory`] and [`encode_any`] in parallel, and hands the outcomes to
/// [`ExportStage::add`] in input order. Like [`export_inputs`], nothing in the directory looks
/// finished until [`ExportStage::finish`].
pub struct ExportStage {
    dir: PathBuf,
    earlier: Vec<PathBuf>,
    shards: AnyShards,
    /// Trajectories still to pass over (a resumed run, before the restart position).
    skip: u64,
}

impl ExportStage {
    /// Prepares `dir` for an export with `opts` (refused if it holds one, unless `force`).
    pub fn open(dir: &Path, opts: &ExportOptions) -> Result<Self, ExportError> {
        let (data, earlier) = prepare_dir(dir, opts.force, opts.shards.partition.as_ref())?;
        let mut shards = match opts.target {
            Target::Parquet => AnyShards::Parquet(Shards::new(&data, opts, &opts.parquet)),
            _ => AnyShards::Lines(Shards::new(&data, opts, &opts.shards.zstd)),
        };
        match &mut shards {
            AnyShards::Lines(s) => s.checkpoints = true,
            AnyShards::Parquet(s) => s.checkpoints = true,
        }
        Ok(ExportStage {
            dir: dir.to_owned(),
            earlier,
            shards,
            skip: 0,
        })
    }

    /// Reopens `dir` for a resumed run: keeps the completed shards `restart` lists and removes
    /// every other partial shard file. An earlier finished export in the directory is still
    /// replaced only with `force`.
    pub fn resume(
        dir: &Path,
        opts: &ExportOptions,
        restart: ExportRestart,
    ) -> Result<Self, ExportError> {
        let io_err = |source: io::Error| ExportError::Io {
            dir: dir.display().to_string(),
            source,
        };
        let data = dir.join("data");
        let partition = opts.shards.partition.as_ref();
        let (partial, earlier): (Vec<PathBuf>, Vec<PathBuf>) = earlier_shards(&data, partition)
            .map_err(io_err)?
            .into_iter()
            .partition(|p| is_partial(p));
        if !opts.force && holds_export(dir, &earlier, partition) {
            return Err(ExportError::Exists(dir.display().to_string()));
        }
        let names = opts.splits.names();
        let keep: HashSet<PathBuf> = restart
            .closed
            .iter()
            .zip(names)
            .flat_map(|(c, n)| {
                let (data, prefix) = (&data, opts.shards.prefix(n));
                c.iter()
                    .map(move |c| shard::partial_path(data, &prefix, c.index))
            })
            .collect();
        for p in partial.iter().filter(|p| !keep.contains(*p)) {
            fs::remove_file(p).map_err(io_err)?;
        }
        fs::create_dir_all(&data).map_err(io_err)?;
        let skip = restart.skip;
        let shards = match opts.target {
            Target::Parquet => AnyShards::Parquet(
                Shards::resume(&data, opts, &opts.parquet, restart).map_err(io_err)?,
            ),
            _ => AnyShards::Lines(
                Shards::resume(&data, opts, &opts.shards.zstd, restart).map_err(io_err)?,
            ),
        };
        Ok(ExportStage {
            dir: dir.to_owned(),
            earlier,
            shards,
            skip,
        })
    }

    /// The checkpoints collected since the last call, in order: one each time a shard starts.
    pub fn take_checkpoints(&mut self) -> Vec<ShardCheckpoint> {
        match &mut self.shards {
            AnyShards::Lines(s) => std::mem::take(&mut s.pending),
            AnyShards::Parquet(s) => std::mem::take(&mut s.pending),
        }
    }

    /// Writes or counts one outcome; a rejection's diagnostics are handed back to report.
    pub fn add(&mut self, item: Outcome<AnyRow>) -> io::Result<Option<Vec<Diagnostic>>> {
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(match item {
                Outcome::Rejected(d) => Some(d),
                _ => None,
            });
        }
        let mismatch = || io::Error::other("a row of another target reached this export");
        match (&mut self.shards, item) {
            (AnyShards::Lines(s), Outcome::Row(split, e)) => match e.row {
                AnyRow::Line(row) => s.add(Outcome::Row(
                    split,
                    Encoded {
                        row,
                        len: e.len,
                        hash: e.hash,
                    },
                )),
                AnyRow::Parquet(_) => Err(mismatch()),
            },
            (AnyShards::Parquet(s), Outcome::Row(split, e)) => match e.row {
                AnyRow::Parquet(row) => s.add(Outcome::Row(
                    split,
                    Encoded {
                        row: *row,
                        len: e.len,
                        hash: e.hash,
                    },
                )),
                AnyRow::Line(_) => Err(mismatch()),
            },
            (AnyShards::Lines(s), Outcome::Filtered(f)) => s.add(Outcome::Filtered(f)),
            (AnyShards::Parquet(s), Outcome::Filtered(f)) => s.add(Outcome::Filtered(f)),
            (AnyShards::Lines(s), Outcome::Rejected(d)) => s.add(Outcome::Rejected(d)),
            (AnyShards::Parquet(s), Outcome::Rejected(d)) => s.add(Outcome::Rejected(d)),
        }
    }

    /// Counts so far.
    pub fn summary(&self) -> &ExportSummary {
        match &self.shards {
            AnyShards::Lines(s) => &s.summary,
            AnyShards::Parquet(s) => &s.summary,
        }
    }

    /// Completes the shards, and hands back the export's counts and the commit that renames
    /// the shards into place (replacing an earlier export's) and writes the manifest and card.
    pub fn into_commit(self, opts: &ExportOptions) -> Result<(ExportSummary, Commit), ExportError> {
        let io_err = |source: io::Error| ExportError::Io {
            dir: self.dir.display().to_string(),
            source,
        };
        let (summary, files, mut commit) = match self.shards {
            AnyShards::Lines(s) => s.into_commit(&self.earlier),
            AnyShards::Parquet(s) => s.into_commit(&self.earlier),
        }
        .map_err(io_err)?;
        match manifest_commit(&self.dir, opts, &summary, &files) {
            Ok(m) => commit.extend(m),
            Err(e) => {
                commit.discard();
                return Err(io_err(e));
            }
        }
        Ok((summary, commit))
    }
}

/// Exports every trajectory of `inputs` to `dir`: `data/{split}-{i:05}-of-{n:05}.jsonl[.zst]`,
/// `manifest.json` and `README.md`. Rejected records go to `rejects` and their diagnostics to
/// `reporter`. Nothing in `dir` looks finished until the whole run succeeded.
pub fn export_inputs(
    inputs: &[String],
    dir: &Path,
    opts: &ExportOptions,
    progress: &dyn Progress,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
) -> Result<ExportSummary, ExportError> {
    let io_err = |source: io::Error| ExportError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let (data, earlier) = prepare_dir(dir, opts.force, opts.shards.partition.as_ref())?;
    let sft_with_specs;
    let mut opts = opts;
    if !matches!(opts.target, Target::Adp | Target::Parquet)
        && opts.sft.infer_tools == InferTools::Dataset
    {
        let shapes = infer::scan_inputs(inputs, &opts.run, progress)?;
        let mut with_specs = opts.clone();
        with_specs.sft.catalog.set_inferred(&shapes);
        sft_with_specs = with_specs;
        opts = &sft_with_specs;
    }
    let run = Run {
        inputs,
        data: &data,
        earlier: &earlier,
        opts,
        progress,
        rejects,
        reporter,
    };
    let (mut summary, files, mut commit, inputs_read) = match opts.target {
        Target::Parquet => run.write::<ParquetShard>(&opts.parquet, &encode_parquet),
        _ => run.write::<JsonLines>(&opts.shards.zstd, &encode_line),
    }
    .map_err(|e| match e {
        RunError::Pipeline(p) => ExportError::Pipeline(p),
        RunError::Io(e) => io_err(e),
    })?;
    summary.empty_inputs = empty_inputs(&inputs_read);
    let done = manifest_commit(dir, opts, &summary, &files).and_then(|m| {
        commit.extend(m);
        commit.apply()
    });
    if let Err(e) = done {
        commit.discard();
        return Err(io_err(e));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thoughts_are_placed() {
        assert_eq!(
            visible("a", "t", Thoughts::Think),
            "<think>\nt\n</think>\n\na"
        );
        assert_eq!(visible("a", "t", Thoughts::Content), "t\n\na");
        assert_eq!(visible("", "t", Thoughts::Content), "t");
        assert_eq!(visible("a", "t", Thoughts::Reasoning), "a");
        assert_eq!(visible("a", "", Thoughts::Think), "a");
    }

    #[test]
    fn the_id_goes_first_in_the_line() {
        assert_eq!(
            line("x\"", b"{\"a\":1}", true),
            b"{\"id\":\"x\\\"\",\"a\":1}\n"
        );
        assert_eq!(line("x", b"{}", true), b"{\"id\":\"x\"}\n");
        assert_eq!(line("x", b"{\"a\":1}", false), b"{\"a\":1}\n");
    }

    #[test]
    fn a_line_is_allocated_at_its_size() {
        // Rows wait in queues for the writer: room left over in each would add up.
        for (id, body, with_id) in [("x", &b"{\"a\":1}"[..], true), ("y", b"{\"b\":2}", false)] {
            let l = line(id, body, with_id);
            assert_eq!(l.capacity(), l.len(), "{}", String::from_utf8_lossy(&l));
        }
    }
}

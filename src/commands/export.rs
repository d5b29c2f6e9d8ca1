//! `export`: every trajectory of the inputs into a training dataset in one directory: shards
//! per split, `manifest.json` and the dataset card, with the rejected records and their
//! diagnostics.
//!
//! The input streams through the pipeline: each record is parsed as ADP (any version, like
//! `convert --from adp`), upgraded to 1.5.0 and checked, filtered, rendered and assigned its
//! split in parallel ([`crate::export::encode`]); the ordered writer
//! ([`crate::export::writer`]) drops duplicates and writes shards, so the output bytes do not
//! depend on the thread count.

use std::io;
use std::path::Path;

use crate::config::redact::redactor;
use crate::config::ConfigError;
use crate::engine::output::{Commit, Lock, LockError};
use crate::engine::pipeline::{
    self, empty_inputs, Flow, InputCount, PipelineError, Progress, Sink,
};
use crate::engine::rejects::{reject, RejectsWriter};
use crate::export::dir::{prepare_dir, Earlier};
use crate::export::encode::{encode_line, encode_parquet, export_upgraded, Encoder, Outcome};
use crate::export::infer;
use crate::export::manifest::manifest_commit;
use crate::export::parquet::ParquetShard;
use crate::export::shard::{JsonLines, ShardFile, ShardWriter};
use crate::export::summary::SegmentCounts;
use crate::export::tokens::{encode_tokens, TokensShard};
use crate::export::writer::Shards;
use crate::export::{ExportError, ExportOptions, ExportSummary, InferTools, Target};
use crate::ingest::RawRecord;
use crate::redact::{MaskedReporter, Redactor, Tally};
use crate::validate::check::upgrade_checked;
use crate::validate::check_adp;
use crate::validate::report::Reporter;

/// What `export` opens before reading: the locks on its directory and rejects file (held
/// while the value lives), the rejects file and the redactor.
pub struct Opened {
    _locks: (Lock, Option<Lock>),
    /// The rejects file, when one was asked for.
    pub rejects: Option<RejectsWriter>,
    /// The redactor of `--redact`.
    pub redactor: Option<Redactor>,
}

/// Why `export` could not open what it writes.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process writes the directory or the rejects file.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The rejects file could not be created.
    #[error("cannot create the rejects file: {0}")]
    Rejects(io::Error),
    /// The redaction options cannot work (a rule file that does not read or check).
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The redaction flags of `export --redact` (as `trajkit redact`'s).
#[derive(Debug, Clone, Copy, Default)]
pub struct RedactFlags<'a> {
    /// `--hash-key`.
    pub hash_key: Option<&'a str>,
    /// `--rules`.
    pub rules: Option<&'a str>,
    /// `--private-ips`.
    pub private_ips: bool,
}

/// Locks `dir` (this partition's share of it) and `rejects`, opens the rejects file and, with
/// `redact`, makes the redactor: what [`export_inputs`] is handed.
pub fn open(
    dir: &Path,
    opts: &ExportOptions,
    rejects: Option<&str>,
    redact: Option<RedactFlags<'_>>,
) -> Result<Opened, OpenError> {
    let locks = (
        Lock::dir(dir, opts.shards.partition.as_ref())?,
        rejects.map(Lock::file).transpose()?.flatten(),
    );
    let rejects = (rejects.map(RejectsWriter::create).transpose()).map_err(OpenError::Rejects)?;
    let redactor = redact
        .map(|r| redactor(r.hash_key, r.rules, r.private_ips))
        .transpose()?;
    Ok(Opened {
        _locks: locks,
        rejects,
        redactor,
    })
}

/// What one record became: its outcomes (a row each, several when `--segments` cut its
/// trajectory), the number of rows its trajectory made and whether it is a subagent branch
/// linked to its parent (`None` when it was rejected before),
/// and with `--redact`, its replacements per rule (`Err` when redaction rejected it: its one
/// outcome is that rejection).
struct Exported<R> {
    outcomes: Vec<Outcome<R>>,
    rows: Option<(usize, bool)>,
    redact: Option<Result<Vec<u64>, ()>>,
}

struct ExportSink<W: ShardWriter> {
    out: Shards<W>,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    redact: Option<Tally>,
    /// With `--segments` other than `none`: what it cut.
    segments: Option<SegmentCounts>,
}

impl<W: ShardWriter> Sink for ExportSink<W> {
    type Item = Exported<W::Row>;

    fn accept(&mut self, record: RawRecord, item: Self::Item) -> io::Result<Flow> {
        let mut stage = "export";
        if let (Some(step), Some(tally)) = (&item.redact, &mut self.redact) {
            match step {
                Ok(counts) => tally.written(counts),
                Err(()) => {
                    tally.rejected();
                    stage = "redact";
                }
            }
        }
        if let Some(counts) = &mut self.segments {
            let (rows, branch) = item.rows.unwrap_or((1, false));
            counts.count(rows, branch);
        }
        for outcome in item.outcomes {
            if let Some(diagnostics) = self.out.add(outcome)? {
                reject(
                    self.reporter.as_mut(),
                    self.rejects.as_mut(),
                    &record,
                    stage,
                    &diagnostics,
                )?;
            }
        }
        Ok(Flow::Continue)
    }
}

/// Exports one record: its trajectory checked and upgraded, redacted (`redactor`), cut into
/// rows (`--segments`), each row filtered, encoded and given its split.
fn export_one<R>(
    record: &RawRecord,
    opts: &ExportOptions,
    encode: &Encoder<R>,
    redactor: Option<&Redactor>,
) -> Exported<R> {
    let prov = &record.provenance;
    let rejected = |d, redact| Exported {
        outcomes: vec![Outcome::Rejected(d)],
        rows: None,
        redact,
    };
    let mut traj = match check_adp(record).into_result() {
        Ok((t, _)) => t,
        Err(d) => return rejected(d, None),
    };
    if let Err(d) = upgrade_checked(&mut traj, prov, &opts.upgrade) {
        return rejected(d, None);
    }
    let redact = match redactor.map(|r| r.redact_trajectory(&mut traj, prov)) {
        None => None,
        Some(Ok(counts)) => Some(Ok(counts)),
        Some(Err(d)) => return rejected(d, Some(Err(()))),
    };
    let rows = opts.segments.rows(traj);
    Exported {
        rows: Some((rows.len(), rows.is_branch())),
        outcomes: rows.each(|t| export_upgraded(t, prov, opts, encode)),
        redact,
    }
}

enum RunError {
    Pipeline(PipelineError),
    Io(io::Error),
}

/// One export run's inputs and outputs, before the writer is chosen.
struct Run<'a> {
    inputs: &'a [String],
    data: &'a Path,
    earlier: &'a Earlier,
    opts: &'a ExportOptions,
    progress: &'a dyn Progress,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    redactor: Option<&'a Redactor>,
}

impl Run<'_> {
    /// Streams the inputs into shards written by `W`; once everything is written, hands back
    /// the commit that replaces the `earlier` export with the new shards.
    fn write<W: ShardWriter>(
        self,
        config: &W::Config,
        encode: &Encoder<W::Row>,
    ) -> Result<(ExportSummary, Vec<ShardFile>, Commit, Vec<InputCount>), RunError> {
        let opts = self.opts;
        let redactor = self.redactor;
        let sink = ExportSink::<W> {
            out: Shards::new(self.data, opts, config),
            rejects: self.rejects,
            reporter: self.reporter,
            redact: redactor.map(|r| Tally::new(r.scanner())),
            segments: SegmentCounts::of_mode(opts.segments),
        };
        let (mut sink, inputs_read) = pipeline::run(
            self.inputs,
            &opts.run,
            self.progress,
            |r| export_one(r, opts, encode, redactor),
            sink,
        )
        .map_err(RunError::Pipeline)?;
        sink.reporter
            .finish(&Default::default())
            .map_err(RunError::Io)?;
        if let Some(r) = sink.rejects.take() {
            r.finish().map_err(RunError::Io)?;
        }
        let (mut summary, files, commit) =
            sink.out.into_commit(self.earlier).map_err(RunError::Io)?;
        summary.redaction = sink.redact.as_ref().map(Tally::report);
        summary.segments = sink.segments.map(Box::new);
        Ok((summary, files, commit, inputs_read))
    }
}

/// Exports every trajectory of `inputs` to `dir`: `data/{split}-{i:05}-of-{n:05}.jsonl[.zst]`,
/// `manifest.json` and `README.md`. Rejected records go to `rejects` and their diagnostics to
/// `reporter`. Nothing in `dir` looks finished until the whole run succeeded.
///
/// With `redact`, each trajectory is redacted once upgraded and checked (a trajectory in which
/// something is still found is rejected at stage `redact`), the tool specs are inferred from
/// the redacted trajectories, and the rejects and diagnostics show what its rules find masked.
pub fn export_inputs(
    inputs: &[String],
    dir: &Path,
    opts: &ExportOptions,
    progress: &dyn Progress,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    redact: Option<&Redactor>,
) -> Result<ExportSummary, ExportError> {
    let io_err = |source: io::Error| ExportError::Io {
        dir: dir.display().to_string(),
        source,
    };
    let (data, earlier) = prepare_dir(dir, opts.force, opts.shards.partition.as_ref())?;
    let sft_with_specs;
    let mut opts = opts;
    if opts.builds_conversations() && opts.sft.infer_tools == InferTools::Dataset {
        let shapes = infer::scan_inputs(inputs, &opts.run, progress, redact)?;
        let mut with_specs = opts.clone();
        with_specs.sft.catalog.set_inferred(&shapes);
        sft_with_specs = with_specs;
        opts = &sft_with_specs;
    }
    let (rejects, reporter) = match redact {
        Some(r) => (
            rejects.map(|w| w.masked(Box::new(r.scanner().clone()))),
            Box::new(MaskedReporter::new(reporter, r.scanner().clone())) as Box<dyn Reporter>,
        ),
        None => (rejects, reporter),
    };
    let run = Run {
        inputs,
        data: &data,
        earlier: &earlier,
        opts,
        progress,
        rejects,
        reporter,
        redactor: redact,
    };
    let (mut summary, files, mut commit, inputs_read) = match opts.target {
        Target::Parquet => run.write::<ParquetShard>(&opts.parquet, &encode_parquet),
        Target::Tokens => run.write::<TokensShard>(&opts.parquet, &encode_tokens),
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

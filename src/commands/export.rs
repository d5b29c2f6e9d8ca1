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
use std::path::{Path, PathBuf};

use crate::engine::output::Commit;
use crate::engine::pipeline::{
    self, empty_inputs, Flow, InputCount, PipelineError, Progress, Sink,
};
use crate::engine::rejects::{reject, RejectsWriter};
use crate::export::dir::prepare_dir;
use crate::export::encode::{encode_line, encode_parquet, export_record, Encoder, Outcome};
use crate::export::infer;
use crate::export::manifest::manifest_commit;
use crate::export::parquet::ParquetShard;
use crate::export::shard::{JsonLines, ShardFile, ShardWriter};
use crate::export::tokens::{encode_tokens, TokensShard};
use crate::export::writer::Shards;
use crate::export::{ExportError, ExportOptions, ExportSummary, InferTools, Target};
use crate::ingest::RawRecord;
use crate::validate::report::Reporter;

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

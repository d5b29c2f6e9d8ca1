//! The streaming, parallel, order-preserving runner every command plugs into.
//!
//! Three stages connected by bounded channels:
//! 1. a reader thread opens the inputs in order and cuts them into records, grouped in batches
//!    of about [`RunOptions::batch_bytes`];
//! 2. the calling thread processes each batch in parallel with rayon (`par_iter` keeps order);
//! 3. a writer thread hands the results, in input order, to a [`Sink`].
//!
//! At most [`QUEUE_DEPTH`] batches wait between stages, so memory depends on the batch size and
//! the largest record, not on the input size. Output order, and so output bytes, do not depend
//! on the thread count.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread;

use rayon::prelude::*;

use crate::ingest::{FramedRecords, RawRecord, RecordSource};

/// Batches waiting between two stages.
pub const QUEUE_DEPTH: usize = 2;

/// Options of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Target size of a batch of records, in bytes.
    pub batch_bytes: usize,
    /// Records larger than this are rejected (`record-too-large`) without being parsed.
    pub max_record_bytes: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            batch_bytes: 1 << 20,
            max_record_bytes: 256 << 20,
        }
    }
}

/// What a sink wants after a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// Stop reading input (for example `--max-errors` was reached).
    Stop,
}

/// Receives processed records in input order, on one thread.
pub trait Sink: Send {
    /// The per-record result of processing.
    type Item: Send;
    /// Called when an input starts, before its records.
    fn start_input(&mut self, _path: &Arc<str>) -> io::Result<()> {
        Ok(())
    }
    /// One record and what processing made of it.
    fn accept(&mut self, record: RawRecord, item: Self::Item) -> io::Result<Flow>;
}

/// Observes progress; the binary draws progress bars with it. All methods may be called from
/// any thread.
pub trait Progress: Sync {
    /// `n` more input bytes were read.
    fn bytes(&self, _n: u64) {}
    /// `n` more records were processed.
    fn records(&self, _n: u64) {}
    /// The counts of every stage of a pass with stages (`trajkit run`), in pipeline order:
    /// from the writer thread now and then while the pass runs, and once at the end with the
    /// counts of the summary.
    fn stages(&self, _stages: &[crate::run::StageSummary]) {}
}

/// A progress observer that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {}

/// Records read from one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputCount {
    /// The input path as given.
    pub path: Arc<str>,
    /// Records read from it (including ones that could not be framed).
    pub records: u64,
}

/// A run that could not complete.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// An input could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The input.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// Writing an output failed.
    #[error("cannot write output: {0}")]
    Write(#[source] io::Error),
}

/// What flows from the reader to the processor.
enum Batch {
    Start(Arc<str>),
    Records(Vec<RawRecord>),
}

/// What flows from the processor to the writer.
enum Processed<I> {
    Start(Arc<str>),
    Records(Vec<RawRecord>, Vec<I>),
}

/// Opens an input's records itself, or returns `None` for the generic JSON framing.
pub type SourceOpener<'a> = dyn Fn(&str) -> Option<io::Result<Box<dyn RecordSource>>> + Sync + 'a;

/// [`run_with_sources`] with the generic JSON framing for every input.
pub fn run<S, F>(
    inputs: &[String],
    opts: &RunOptions,
    progress: &dyn Progress,
    process: F,
    sink: S,
) -> Result<(S, Vec<InputCount>), PipelineError>
where
    S: Sink,
    F: Fn(&RawRecord) -> S::Item + Sync,
{
    run_with_sources(inputs, &|_| None, opts, progress, process, sink)
}

/// Runs `process` over every record of `inputs` (paths, `-` for stdin) and feeds the results to
/// `sink` in input order. Returns the sink, so the caller can read its counters, and the record
/// count of each input read (an input the sink stopped in is counted up to that point).
/// `sources` may open an input's records itself (directories, databases).
pub fn run_with_sources<S, F>(
    inputs: &[String],
    sources: &SourceOpener<'_>,
    opts: &RunOptions,
    progress: &dyn Progress,
    process: F,
    sink: S,
) -> Result<(S, Vec<InputCount>), PipelineError>
where
    S: Sink,
    F: Fn(&RawRecord) -> S::Item + Sync,
{
    let stop = AtomicBool::new(false);
    let (raw_tx, raw_rx) = sync_channel::<Result<Batch, PipelineError>>(QUEUE_DEPTH);
    let (out_tx, out_rx) = sync_channel::<Processed<S::Item>>(QUEUE_DEPTH);
    thread::scope(|scope| {
        scope.spawn(|| read_inputs(inputs, sources, opts, progress, &stop, raw_tx));
        let writer = scope.spawn(|| write_results(sink, out_rx, &stop));
        let outcome = process_batches(raw_rx, &out_tx, progress, &process);
        drop(out_tx);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        outcome?;
        written
    })
}

fn process_batches<I: Send>(
    raw_rx: Receiver<Result<Batch, PipelineError>>,
    out_tx: &SyncSender<Processed<I>>,
    progress: &dyn Progress,
    process: &(dyn Fn(&RawRecord) -> I + Sync),
) -> Result<(), PipelineError> {
    for batch in raw_rx {
        let processed = match batch? {
            Batch::Start(path) => Processed::Start(path),
            Batch::Records(records) => {
                let items: Vec<I> = records.par_iter().map(process).collect();
                progress.records(records.len() as u64);
                Processed::Records(records, items)
            }
        };
        if out_tx.send(processed).is_err() {
            break;
        }
    }
    Ok(())
}

fn write_results<S: Sink>(
    mut sink: S,
    out_rx: Receiver<Processed<S::Item>>,
    stop: &AtomicBool,
) -> Result<(S, Vec<InputCount>), PipelineError> {
    let mut counts: Vec<InputCount> = Vec::new();
    for batch in out_rx {
        match batch {
            Processed::Start(path) => {
                sink.start_input(&path).map_err(PipelineError::Write)?;
                counts.push(InputCount { path, records: 0 });
            }
            Processed::Records(records, items) => {
                for (record, item) in records.into_iter().zip(items) {
                    if let Some(c) = counts.last_mut() {
                        c.records += 1;
                    }
                    if sink.accept(record, item).map_err(PipelineError::Write)? == Flow::Stop {
                        stop.store(true, Ordering::Relaxed);
                        return Ok((sink, counts));
                    }
                }
            }
        }
    }
    Ok((sink, counts))
}

fn read_inputs(
    inputs: &[String],
    sources: &SourceOpener<'_>,
    opts: &RunOptions,
    progress: &dyn Progress,
    stop: &AtomicBool,
    tx: SyncSender<Result<Batch, PipelineError>>,
) {
    for path in inputs {
        let opened = sources(path).unwrap_or_else(|| {
            FramedRecords::open(path, opts.max_record_bytes)
                .map(|r| Box::new(r) as Box<dyn RecordSource>)
        });
        let mut records = match opened {
            Ok(records) => records,
            Err(source) => {
                let _ = tx.send(Err(PipelineError::Open {
                    path: path.clone(),
                    source,
                }));
                return;
            }
        };
        if tx.send(Ok(Batch::Start(Arc::from(path.as_str())))).is_err() {
            return;
        }
        let mut batch = Vec::new();
        let mut batch_bytes = 0usize;
        let mut reported = 0u64;
        while let Some(record) = records.next() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            batch_bytes += record.bytes.len() + 64;
            batch.push(record);
            if batch_bytes >= opts.batch_bytes {
                progress.bytes(records.bytes_read() - reported);
                reported = records.bytes_read();
                if tx
                    .send(Ok(Batch::Records(std::mem::take(&mut batch))))
                    .is_err()
                {
                    return;
                }
                batch_bytes = 0;
            }
        }
        progress.bytes(records.bytes_read() - reported);
        if !batch.is_empty() && tx.send(Ok(Batch::Records(batch))).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    struct Collect(Vec<(u64, String)>, Option<usize>);

    impl Sink for Collect {
        type Item = String;
        fn accept(&mut self, record: RawRecord, item: String) -> io::Result<Flow> {
            self.0.push((record.provenance.line, item));
            Ok(match self.1 {
                Some(n) if self.0.len() >= n => Flow::Stop,
                _ => Flow::Continue,
            })
        }
    }

    fn input(lines: usize) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        for i in 0..lines {
            writeln!(f, "{{\"n\":{i}}}").expect("write");
        }
        f
    }

    #[test]
    fn keeps_input_order_across_many_small_batches() {
        let f = input(5000);
        let path = f.path().to_string_lossy().into_owned();
        let opts = RunOptions {
            batch_bytes: 100,
            ..Default::default()
        };
        let (sink, counts) = run(
            &[path.clone(), path],
            &opts,
            &NoProgress,
            |r| String::from_utf8_lossy(&r.bytes).into_owned(),
            Collect(Vec::new(), None),
        )
        .expect("runs");
        assert_eq!(sink.0.len(), 10_000);
        assert_eq!(
            counts.iter().map(|c| c.records).collect::<Vec<_>>(),
            vec![5000, 5000]
        );
        for (i, (line, text)) in sink.0.iter().enumerate() {
            let n = i % 5000;
            assert_eq!(*line, n as u64 + 1);
            assert_eq!(text, &format!("{{\"n\":{n}}}"));
        }
    }

    #[test]
    fn stop_ends_the_run_early() {
        let f = input(100_000);
        let path = f.path().to_string_lossy().into_owned();
        let opts = RunOptions {
            batch_bytes: 1000,
            ..Default::default()
        };
        let (sink, _) = run(
            &[path],
            &opts,
            &NoProgress,
            |_| String::new(),
            Collect(Vec::new(), Some(10)),
        )
        .expect("runs");
        assert_eq!(sink.0.len(), 10);
    }

    #[test]
    fn missing_input_is_an_open_error() {
        let err = run(
            &["/nonexistent/trajkit-input.jsonl".to_owned()],
            &RunOptions::default(),
            &NoProgress,
            |_| String::new(),
            Collect(Vec::new(), None),
        )
        .err()
        .expect("fails");
        assert!(matches!(err, PipelineError::Open { .. }));
        assert!(err.to_string().contains("/nonexistent/trajkit-input.jsonl"));
    }
}

//! The streaming, parallel, order-preserving runner every command plugs into.
//!
//! 1. A reader thread opens the inputs in order and cuts them into records, grouped in batches
//!    of about [`RunOptions::batch_bytes`], and passes them on through a channel of
//!    [`QUEUE_DEPTH`] batches.
//! 2. The calling thread hands each batch to the rayon pool as a task, which processes its
//!    records in parallel (`par_iter` keeps their order).
//! 3. The worker that finishes a batch writes it to the [`Sink`], with every later batch
//!    already finished, if it is next in input order and no other worker is writing; batches
//!    that finish early wait for their turn. The sink is used by one thread at a time, in
//!    input order.
//!
//! At most [`IN_FLIGHT`] batches are between reading and writing at once, so memory depends on
//! the batch size and the largest record, not on the input size. Output order, and so output
//! bytes, do not depend on the thread count.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::ingest::{boxed, FramedRecords, RawRecord, RecordSource};

/// Batches read ahead of processing.
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
    fn stages(&self, _stages: &[StageSummary]) {}
}

/// Counts of one stage: `in == written + filtered + rejected`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// `convert`, a stage's name (`join[N]`, `filter`, `redact`: see `stage::names`) or
    /// `export[N]` (1-based, in file order).
    pub stage: String,
    /// Records (convert) or trajectories (join, export) in.
    #[serde(rename = "in")]
    pub records_in: u64,
    /// Passed on (convert: records converted; join: trajectories kept; export: rows written).
    pub written: u64,
    /// Dropped by a policy or filter (join `unmatched = "drop"`, export filters and dedup).
    pub filtered: u64,
    /// Rejected.
    pub rejected: u64,
    /// Busy time of the stage, summed over threads, in seconds (see `commands::run`); left
    /// out of `run.json`, which does not depend on timing, so 0 when read from one.
    #[serde(default)]
    pub seconds: f64,
}

/// The inputs that held no records.
pub fn empty_inputs(counts: &[InputCount]) -> Vec<String> {
    counts
        .iter()
        .filter(|c| c.records == 0)
        .map(|c| c.path.to_string())
        .collect()
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
    let (permit_tx, permit_rx) = sync_channel::<()>(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        // The channel holds IN_FLIGHT messages: these sends never block or fail.
        let _ = permit_tx.send(());
    }
    let writer = Writer {
        queue: Mutex::new(Queue {
            waiting: BTreeMap::new(),
            next: 0,
        }),
        sink: Mutex::new(Written {
            sink,
            counts: Vec::new(),
            error: None,
        }),
        stop: &stop,
        permits: permit_tx,
    };
    thread::scope(|threads| {
        threads.spawn(|| read_inputs(inputs, sources, opts, progress, &stop, raw_tx));
        let outcome = rayon::in_place_scope(|tasks| {
            for (seq, batch) in (0u64..).zip(raw_rx) {
                // One permit per batch between reading and writing bounds the memory they hold.
                if permit_rx.recv().is_err() || stop.load(Ordering::Relaxed) {
                    break;
                }
                match batch? {
                    Batch::Start(path) => writer.done(seq, Processed::Start(path)),
                    Batch::Records(records) => {
                        let (writer, process) = (&writer, &process);
                        tasks.spawn(move |_| {
                            let _unblock = writer.unblock_on_panic();
                            let items: Vec<S::Item> = records.par_iter().map(process).collect();
                            progress.records(records.len() as u64);
                            writer.done(seq, Processed::Records(records, items));
                        });
                    }
                }
            }
            Ok(())
        });
        // The reader stops at its next record once `stop` is set, or when it finds the batch
        // channel closed (`raw_rx` was consumed above).
        stop.store(true, Ordering::Relaxed);
        outcome
    })?;
    let written = writer.sink.into_inner().unwrap_or_else(|e| e.into_inner());
    match written.error {
        Some(e) => Err(PipelineError::Write(e)),
        None => Ok((written.sink, written.counts)),
    }
}

/// Batches being read, processed or waiting to be written at once.
pub const IN_FLIGHT: usize = 4;

/// Hands processed batches to the sink in input order. There is no writer thread: the worker
/// that finishes a batch writes it, and every later batch already finished, unless another
/// worker is writing (which then writes it too). With a writer thread, the three busy threads
/// (two workers and the writer, on two cores) kept waking and waiting on one another, and
/// about a sixth of the machine sat idle.
struct Writer<'a, S: Sink> {
    queue: Mutex<Queue<S::Item>>,
    sink: Mutex<Written<S>>,
    stop: &'a AtomicBool,
    /// A permit goes back once a batch is written.
    permits: SyncSender<()>,
}

/// Finished batches waiting for an earlier one.
struct Queue<I> {
    waiting: BTreeMap<u64, Processed<I>>,
    /// The sequence number written next.
    next: u64,
}

/// The sink and what writing to it has come to.
struct Written<S> {
    sink: S,
    counts: Vec<InputCount>,
    /// The first write error; the run stops at it.
    error: Option<io::Error>,
}

impl<S: Sink> Writer<'_, S> {
    /// Takes batch `seq` (finished, or an input start) and writes what is now in order, unless
    /// another thread is writing: that one writes it before it lets go of the sink.
    fn done(&self, seq: u64, batch: Processed<S::Item>) {
        lock(&self.queue).waiting.insert(seq, batch);
        loop {
            let Ok(mut written) = self.sink.try_lock() else {
                // Whoever holds the sink looks at the queue again after letting go.
                return;
            };
            while let Some(batch) = self.next_in_order() {
                if written.error.is_none() && !self.stop.load(Ordering::Relaxed) {
                    if let Err(e) = written.write(batch, self.stop) {
                        written.error = Some(e);
                        self.stop.store(true, Ordering::Relaxed);
                    }
                }
                // The main thread may be waiting for this permit; it only ends when it stops.
                let _ = self.permits.try_send(());
            }
            drop(written);
            // A batch queued after our last look, while its thread found the sink taken.
            let queue = lock(&self.queue);
            if !queue.waiting.contains_key(&queue.next) {
                return;
            }
        }
    }

    /// A guard that, if its task panics, stops the run and frees the main thread, which may be
    /// waiting for a permit this batch would never give back; the scope then carries the panic
    /// out instead of hanging.
    fn unblock_on_panic(&self) -> PanicGuard<'_> {
        PanicGuard {
            stop: self.stop,
            permits: &self.permits,
        }
    }

    fn next_in_order(&self) -> Option<Processed<S::Item>> {
        let mut queue = lock(&self.queue);
        let next = queue.next;
        let batch = queue.waiting.remove(&next)?;
        queue.next += 1;
        Some(batch)
    }
}

impl<S: Sink> Written<S> {
    fn write(&mut self, batch: Processed<S::Item>, stop: &AtomicBool) -> io::Result<()> {
        match batch {
            Processed::Start(path) => {
                self.sink.start_input(&path)?;
                self.counts.push(InputCount { path, records: 0 });
            }
            Processed::Records(records, items) => {
                for (record, item) in records.into_iter().zip(items) {
                    if let Some(c) = self.counts.last_mut() {
                        c.records += 1;
                    }
                    if self.sink.accept(record, item)? == Flow::Stop {
                        stop.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }
}

/// See [`Writer::unblock_on_panic`].
struct PanicGuard<'a> {
    stop: &'a AtomicBool,
    permits: &'a SyncSender<()>,
}

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = self.permits.try_send(());
        }
    }
}

/// Locks `m`; a thread that panicked while holding it has already failed the run (the panic
/// is carried out of the thread scope), so the data is still used as it is.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
        let opened = sources(path)
            .unwrap_or_else(|| boxed(FramedRecords::open(path, opts.max_record_bytes)));
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

    /// A file of `lines` records, its path, and options cutting it into batches of about
    /// `batch_bytes` (keep the file alive while the run reads it).
    fn batched(lines: usize, batch_bytes: usize) -> (tempfile::NamedTempFile, String, RunOptions) {
        let f = input(lines);
        let path = f.path().to_string_lossy().into_owned();
        let opts = RunOptions {
            batch_bytes,
            ..Default::default()
        };
        (f, path, opts)
    }

    #[test]
    fn keeps_input_order_across_many_small_batches() {
        let (_f, path, opts) = batched(5000, 100);
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

    /// Batches finish out of order (some records are slow), and are written in order anyway.
    #[test]
    fn batches_that_finish_early_wait_for_their_turn() {
        let (_f, path, opts) = batched(3000, 200);
        let (sink, _) = run(
            &[path],
            &opts,
            &NoProgress,
            |r| {
                if r.provenance.line % 97 == 1 {
                    thread::sleep(std::time::Duration::from_millis(2));
                }
                String::from_utf8_lossy(&r.bytes).into_owned()
            },
            Collect(Vec::new(), None),
        )
        .expect("runs");
        let lines: Vec<u64> = sink.0.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, (1..=3000).collect::<Vec<u64>>());
    }

    struct FailAt(u64, u64);

    impl Sink for FailAt {
        type Item = ();
        fn accept(&mut self, record: RawRecord, _: ()) -> io::Result<Flow> {
            assert_eq!(
                record.provenance.line,
                self.0 + 1,
                "in order, none after the error"
            );
            self.0 += 1;
            if self.0 == self.1 {
                return Err(io::Error::other("disk full"));
            }
            Ok(Flow::Continue)
        }
    }

    #[test]
    fn a_sink_error_ends_the_run_with_it() {
        let (_f, path, opts) = batched(20_000, 500);
        let err = run(&[path], &opts, &NoProgress, |_| (), FailAt(0, 1234))
            .err()
            .expect("fails");
        assert!(matches!(err, PipelineError::Write(_)), "{err}");
        assert!(err.to_string().contains("disk full"), "{err}");
    }

    /// A bug that panics while a batch is processed fails the run; it must not leave the
    /// calling thread waiting for that batch forever.
    #[test]
    fn a_panic_in_processing_is_carried_out_not_a_hang() {
        let (_f, path, opts) = batched(20_000, 300);
        let outcome = std::panic::catch_unwind(|| {
            run(
                &[path],
                &opts,
                &NoProgress,
                |r| assert_ne!(r.provenance.line, 777, "a bug"),
                FailAt(0, u64::MAX),
            )
        });
        assert!(outcome.is_err());
    }

    #[test]
    fn stop_ends_the_run_early() {
        let (_f, path, opts) = batched(100_000, 1000);
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

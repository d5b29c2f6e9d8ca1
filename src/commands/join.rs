//! `join`: every trajectory of the inputs joined with side files, into one JSON-lines output,
//! with the rejected records and their diagnostics, and the orphans reported.

use std::io::{self, Write};

use crate::engine::output::Output;
use crate::engine::pipeline::{self, empty_inputs, Flow, PipelineError, Progress, Sink};
use crate::engine::rejects::{commit_outputs, reject, RejectsWriter};
use crate::ingest::RawRecord;
use crate::join::{finish_side, join_record, Join, JoinRunOptions, JoinSummary, Joined};
use crate::validate::report::Reporter;

struct JoinSink {
    output: Output,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
    summary: JoinSummary,
    used: Vec<bool>,
}

impl Sink for JoinSink {
    type Item = Joined;

    fn accept(&mut self, record: RawRecord, item: Joined) -> io::Result<Flow> {
        self.summary.records += 1;
        match item {
            Joined::Written(bytes, matched, used) => {
                self.output.write_all(&bytes)?;
                self.summary.written_records += 1;
                if matched {
                    self.summary.matched += 1;
                } else {
                    self.summary.unmatched_kept += 1;
                }
                for r in used {
                    if let Some(u) = self.used.get_mut(r as usize) {
                        *u = true;
                    }
                }
            }
            Joined::Dropped => self.summary.dropped += 1,
            Joined::Rejected(diagnostics) => {
                self.summary.rejected += 1;
                reject(
                    self.reporter.as_mut(),
                    self.rejects.as_mut(),
                    &record,
                    "join",
                    &diagnostics,
                )?;
            }
        }
        Ok(Flow::Continue)
    }
}

/// Joins every trajectory of `inputs` (ADP, any version) with `join`, writing them to
/// `output`, rejected records to `rejects` and diagnostics to `reporter`. Side records no
/// trajectory matched are reported through `reporter` (as warnings under
/// [`crate::join::Orphans::Report`], as errors written to `rejects` under [`crate::join::Orphans::Reject`]).
pub fn join_inputs(
    inputs: &[String],
    join: &Join,
    opts: &JoinRunOptions,
    progress: &dyn Progress,
    output: Output,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
) -> Result<JoinSummary, PipelineError> {
    let sink = JoinSink {
        output,
        rejects,
        reporter,
        summary: JoinSummary::default(),
        used: vec![false; join.index.len()],
    };
    let (mut sink, inputs_read) = pipeline::run(
        inputs,
        &opts.run,
        progress,
        |r| join_record(join, r, &opts.upgrade),
        sink,
    )?;
    let write = |e: io::Error| PipelineError::Write(e);
    finish_side(
        join,
        &sink.used,
        opts,
        "join",
        sink.reporter.as_mut(),
        sink.rejects.as_mut(),
        &mut sink.summary,
    )
    .map_err(write)?;
    sink.reporter.finish(&Default::default()).map_err(write)?;
    commit_outputs(sink.output, sink.rejects).map_err(write)?;
    let mut summary = sink.summary;
    summary.empty_inputs = empty_inputs(&inputs_read);
    Ok(summary)
}

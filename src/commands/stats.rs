//! `stats`: what a set of ADP trajectories contains.

use std::borrow::Cow;
use std::io;

use super::inputs::adp_source;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::export::encode::{count_tokens, with_conversation};
use crate::export::ExportOptions;
use crate::ingest::RawRecord;
use crate::model::Trajectory;
use crate::validate::check::upgrade_checked;
use crate::validate::check_adp;

pub use crate::report::stats::{Checked, Stats};

struct StatsSink(Stats);

impl Sink for StatsSink {
    type Item = Checked;

    fn accept(&mut self, _record: RawRecord, item: Self::Item) -> io::Result<Flow> {
        self.0.accept(&item);
        Ok(Flow::Continue)
    }
}

/// Checks one record as `stats` does: valid ADP (any version), and its tokens under
/// `tokens_with` (the options of a `--to tokens` export).
pub fn check(record: &RawRecord, tokens_with: Option<&ExportOptions>) -> Checked {
    let (t, v) = check_adp(record).trajectory?;
    let n = tokens_with.and_then(|o| tokens(t.clone(), record, o));
    Some((t, v, n))
}

/// The tokens of `traj` under `opts`' chat template and tokenizer (`--to tokens` options), if
/// it becomes a conversation the template renders: what an export's rows count.
fn tokens(mut traj: Trajectory, record: &RawRecord, opts: &ExportOptions) -> Option<usize> {
    upgrade_checked(&mut traj, &record.provenance, &opts.upgrade).ok()?;
    let n = with_conversation(Cow::Owned(traj), &opts.sft, |conv, tools| {
        count_tokens(conv, tools, opts)
    });
    usize::try_from(n.ok()??).ok()
}

/// Computes [`Stats`] over every record of `inputs`; with `tokens` (the options of a `--to
/// tokens` export), token counts too.
pub fn stats_inputs(
    inputs: &[String],
    run: &RunOptions,
    progress: &dyn Progress,
    tokens_with: Option<&ExportOptions>,
) -> Result<Stats, PipelineError> {
    let (sink, _) = pipeline::run_with_sources(
        inputs,
        &adp_source,
        run,
        progress,
        |r| check(r, tokens_with),
        StatsSink(Stats::default()),
    )?;
    let mut stats = sink.0;
    stats.finish();
    Ok(stats)
}

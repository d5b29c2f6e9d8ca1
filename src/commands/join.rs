//! `join`: every trajectory of the inputs joined with side files, into one JSON-lines output,
//! with the rejected records and their diagnostics, and the orphans reported: the join stage
//! ([`JoinStage`]) over ADP records ([`run_pass`]).

use super::pass::{run_pass, Pass};
use crate::engine::output::Output;
use crate::engine::pipeline::{PipelineError, Progress};
use crate::engine::rejects::RejectsWriter;
use crate::engine::stage::Outputs;
use crate::join::{Join, JoinRunOptions, JoinStage, JoinSummary};
use crate::validate::report::Reporter;

/// Joins every trajectory of `inputs` (ADP, any version) with `join`, writing them to
/// `output`, rejected records to `rejects` and diagnostics to `reporter`. Side records no
/// trajectory matched are reported through `reporter` (as warnings under
/// [`crate::join::Orphans::Report`], as errors written to `rejects` under [`crate::join::Orphans::Reject`]).
pub fn join_inputs(
    inputs: &[String],
    join: Join,
    opts: &JoinRunOptions,
    progress: &dyn Progress,
    output: Output,
    rejects: Option<RejectsWriter>,
    reporter: Box<dyn Reporter>,
) -> Result<JoinSummary, PipelineError> {
    let stage = JoinStage {
        join,
        opts: opts.clone(),
    };
    let pass = Pass {
        stage: &stage,
        upgrade: &opts.upgrade,
        run: &opts.run,
        mask: None,
    };
    let passed = run_pass(
        inputs,
        &pass,
        progress,
        output,
        Outputs { reporter, rejects },
    )?;
    let mut summaries: Vec<JoinSummary> = passed.sections.get("joins").unwrap_or_default();
    let mut summary = summaries.pop().unwrap_or_default();
    summary.empty_inputs = passed.empty_inputs;
    Ok(summary)
}

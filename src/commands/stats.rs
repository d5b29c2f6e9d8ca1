//! `stats`: what a set of ADP trajectories contains.

use std::borrow::Cow;

use std::fmt::Write as _;
use std::io;

use super::inputs::adp_source;
use crate::engine::pipeline::{self, Flow, PipelineError, Progress, RunOptions, Sink};
use crate::export::encode::{count_tokens, with_conversation};
use crate::export::ExportOptions;
use crate::ingest::RawRecord;
use crate::model::Trajectory;
use crate::terminal::escape_controls;
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

/// `s` as the table `trajkit stats` prints: a row per count, the `top` most frequent values
/// of each list (names made safe to print).
pub fn table(s: &Stats, top: usize) -> String {
    let mut out = String::new();
    let mut row = |k: &str, v: String| {
        let _ = writeln!(out, "{k:<24} {v}");
    };
    row("records", s.records.to_string());
    row("valid", s.valid.to_string());
    row("invalid", s.invalid.to_string());
    row(
        "steps",
        format!(
            "{} (mean {:.1}, max {})",
            s.steps, s.mean_steps, s.max_steps
        ),
    );
    row("actions", s.actions.to_string());
    row("observations", s.observations.to_string());
    row("linked steps", s.linked_steps.to_string());
    row(
        "text characters",
        format!(
            "{} (mean {:.0}, max {})",
            s.text_chars, s.mean_text_chars, s.max_text_chars
        ),
    );
    let list = |m: &std::collections::BTreeMap<String, u64>| {
        let mut v: Vec<(&String, &u64)> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = v
            .iter()
            .take(top)
            .map(|(k, n)| format!("{} {n}", escape_controls(k)))
            .collect();
        let more = v.len().saturating_sub(top);
        if more > 0 {
            format!("{}, ... {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    row("versions", list(&s.versions));
    row("steps by class", list(&s.steps_by_class));
    row("observation sources", list(&s.observations_by_source));
    row("code languages", list(&s.code_languages));
    row("functions", list(&s.functions));
    if let Some(t) = &s.tokens {
        row(
            "tokens",
            format!(
                "{} (p50 {}, p90 {}, p99 {}, max {})",
                t.total, t.p50, t.p90, t.p99, t.max
            ),
        );
    }
    out
}

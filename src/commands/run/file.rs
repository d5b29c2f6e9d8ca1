//! Running a pipeline file: what `trajkit run` does between reading the file and printing the
//! summary, for any front end.
//!
//! [`Prepared::new`] checks what the file names (converters, converter specs, join keys,
//! export options, outputs that would collide), locks every output, expands the inputs and
//! reads the side files; [`Prepared::run`] makes the one streaming pass, commits the outputs
//! and writes the `[report]` page; [`Outcome::lines`] is the summary to print and
//! [`Prepared::usage_message`] the message, with its hint, of an error that the pipeline or
//! its outputs cause. [`check`] is the first half without locking or reading anything (`run
//! --check`).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::journal::{identity, JournalOptions, ResumeError};
use super::{run_plan, ExportTarget, Output, Plan, RunError, RunSummary, Source};
use crate::commands::report::{report, ReportOptions};
use crate::config::convert::{named_converter, upgrade_options};
use crate::config::pipeline::Pipeline;
use crate::config::redact::RedactConfig;
use crate::config::ConfigError;
use crate::convert::{ConvertOptions, Converter, OutputFormat};
use crate::engine::output::{Lock, LockError};
use crate::engine::partition::{Partition, PartitionBy};
use crate::engine::pipeline::{NoProgress, Progress, RunOptions};
use crate::engine::stage::Stage;
use crate::export::ExportError;
use crate::filter::{Filter, FilterReport};
use crate::ingest::inputs::expand_glob;
use crate::join::{IndexError, JoinRunOptions, JoinStage, JoinSummary, Orphans, SideSet};
use crate::model::upgrade::UpgradeOptions;
use crate::redact::Redactor;
use crate::validate::report::Reporter;
use crate::validate::Diagnostic;

/// How a pipeline is run: the choices a pipeline file does not hold.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The maximum reject rate, instead of `[validate] max_reject_rate`.
    pub max_reject_rate: Option<f64>,
    /// Finish a killed run from its journal.
    pub resume: bool,
    /// The partition to make, if any.
    pub partition: Option<Partition>,
    /// The runner's options (the record size limit).
    pub run: RunOptions,
    /// How many orphan warnings each join reports (`None`: all).
    pub orphan_diagnostics: Option<u64>,
}

/// Why a pipeline could not run.
#[derive(Debug, thiserror::Error)]
pub enum FileRunError {
    /// The pipeline, or what it names, cannot work.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The side files of a join hold records that cannot be attached; nothing was written.
    #[error("{} problem(s) in the side files; nothing was written", .0.len())]
    SideFiles(Vec<Diagnostic>),
    /// Another process writes an output.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The pass failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// The converter of each `[[input]]` and the side sets of each `[[join]]`: what the file names,
/// checked without reading any input.
struct Checked {
    upgrade: UpgradeOptions,
    named: Vec<Option<&'static dyn Converter>>,
    sets: Vec<Vec<SideSet>>,
}

fn checked(p: &Pipeline, partition: Option<&Partition>) -> Result<Checked, ConfigError> {
    let upgrade = upgrade_options(p.convert.adp_version, p.convert.decode_details.as_deref())?;
    let named = p
        .inputs
        .iter()
        .map(|i| named_converter(&i.format, i.spec.as_deref()))
        .collect::<Result<_, _>>()?;
    let mut sets = Vec::new();
    for (i, j) in p.joins.iter().enumerate() {
        if partition.is_some() && j.orphans == Orphans::Reject {
            return Err(p.stage_error(
                "join",
                i,
                ConfigError::Invalid(
                    "not supported yet: orphans = \"reject\" with --partition (a partition \
                     sees its share of the trajectories, so it cannot tell which side records \
                     no partition uses)"
                        .into(),
                ),
            ));
        }
        sets.push(j.side_sets().map_err(|e| p.stage_error("join", i, e))?);
    }
    p.check_outputs()?;
    Ok(Checked {
        upgrade,
        named,
        sets,
    })
}

/// Checks everything the pipeline names without reading an input or writing anything: the
/// converters and converter specs, the joins' keys, the exports' options (their tool and
/// system-prompt files are read) and outputs that would collide.
pub fn check(p: &Pipeline, partition: Option<&Partition>) -> Result<(), ConfigError> {
    fully_checked(p, partition).map(drop)
}

/// [`check`], keeping what it found.
fn fully_checked(p: &Pipeline, partition: Option<&Partition>) -> Result<Checked, ConfigError> {
    let found = checked(p, partition)?;
    for (i, e) in p.exports.iter().enumerate() {
        e.options(&[], RunOptions::default())
            .map_err(|err| p.stage_error("export", i, err))?;
    }
    if let Some(r) = &p.redact {
        r.redactor()?;
    }
    Ok(found)
}

/// An input path and the converter that reads it.
type Planned = (String, &'static dyn Converter);

/// Every `[[input]]` expanded (globs, directories), each file with its converter: the named
/// one or the one detected from its first record (each detection goes to `notice`).
fn input_plan(
    p: &Pipeline,
    named: Vec<Option<&'static dyn Converter>>,
    notice: &dyn Fn(&str),
) -> Result<Vec<Planned>, ConfigError> {
    let mut plan = Vec::new();
    for (input, conv) in p.inputs.iter().zip(named) {
        let given = if input.glob {
            expand_glob(&input.path).map_err(|e| ConfigError::Io(e.to_string()))?
        } else {
            vec![input.path.clone()]
        };
        plan.extend(super::super::inputs::plan(&given, conv, notice)?);
    }
    Ok(plan)
}

/// The inputs of `plan` a partition reads: its own by path, every one by id or unpartitioned.
fn partition_share(p: &Pipeline, plan: &[Planned], partition: Option<&Partition>) -> Vec<Planned> {
    match partition {
        Some(part) if part.by == PartitionBy::Path => plan
            .iter()
            .filter(|(path, _)| part.owns(&p.partition_key(path)))
            .cloned()
            .collect(),
        _ => plan.to_vec(),
    }
}

/// The inputs a run of `p` reads (`run --list-inputs`), in order: checked as [`check`] does,
/// then globs and directories expanded and each file's format detected (each detection goes to
/// `notice`); with a partition, its share. Nothing is locked or written.
pub fn list_inputs(
    p: &Pipeline,
    partition: Option<&Partition>,
    notice: &dyn Fn(&str),
) -> Result<Vec<String>, ConfigError> {
    let named = fully_checked(p, partition)?.named;
    let plan = input_plan(p, named, notice)?;
    Ok(partition_share(p, &plan, partition)
        .into_iter()
        .map(|(path, _)| path)
        .collect())
}

/// A pipeline ready to run: outputs locked, inputs expanded, side files read.
pub struct Prepared<'p> {
    pipeline: &'p Pipeline,
    request: Request,
    plan: Vec<Planned>,
    share: Vec<Planned>,
    convert: ConvertOptions,
    joins: Vec<JoinStage>,
    exports: Vec<ExportTarget>,
    rejects: Option<String>,
    filter: Option<Filter>,
    redactor: Option<Redactor>,
    max_reject_rate: f64,
    _locks: Vec<Lock>,
}

/// The outcome of a run: its summary, and whether it rejected more than the maximum rate.
pub struct Outcome {
    /// What the run read, wrote and rejected.
    pub summary: RunSummary,
    /// The maximum reject rate the run was held to.
    pub max_reject_rate: f64,
    /// Rejected records over records read exceed the maximum (the outputs are written).
    pub exceeded: bool,
    /// The `[report]` page written, and the export it reports on.
    pub report: Option<(String, String)>,
}

impl Outcome {
    /// The run's summary as a front end prints it, a line each: per input (and what its
    /// readers left out), per stage (an export with its target and directory, from `p`), the
    /// filter's reasons, per side file of a join, the totals and `speed` (how fast the inputs were read), then what
    /// a partition left to the others, or the report written.
    pub fn lines(&self, p: &Pipeline, speed: &str) -> Vec<String> {
        let s = &self.summary;
        let mut out = Vec::new();
        for i in &s.inputs {
            out.push(format!(
                "run: input {}: {} records in, {} trajectories, {} rejected; {:.2} s",
                i.path, i.records, i.trajectories, i.rejected, i.seconds
            ));
            let left_out = i.left_out.describe();
            if !left_out.is_empty() {
                out.push(format!("run: input {}: {left_out}", i.path));
            }
        }
        // The export stages are the exports of the file, in order.
        let mut exports = p.exports.iter().zip(&s.exports);
        for st in &s.stages {
            let mut what = if st.stage == "convert" {
                "records in".to_owned()
            } else {
                "trajectories in".to_owned()
            };
            let mut target = String::new();
            if st.stage.starts_with("export[") {
                if let Some((e, summary)) = exports.next() {
                    target = format!(" --to {} -> {}", e.to.name(), e.output);
                    // A segmented export counts rows, and says what it cut.
                    if let Some(c) = &summary.segments {
                        what = c.describe();
                    }
                }
            }
            out.push(format!(
                "run: {}{target}: {} {what}, {} written, {} filtered, {} rejected; {:.2} s busy",
                st.stage, st.records_in, st.written, st.filtered, st.rejected, st.seconds
            ));
        }
        let reasons: Option<FilterReport> = s.sections.get("filter");
        if let Some(r) = reasons.filter(|r| !r.filtered.is_empty()) {
            let by: Vec<String> = (r.filtered.iter())
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            out.push(format!("run: filter: left out by {}", by.join(", ")));
        }
        let joins: Vec<JoinSummary> = s.sections.get("joins").unwrap_or_default();
        for (n, j) in joins.iter().enumerate() {
            for f in &j.side_files {
                out.push(format!(
                    "run: join[{}] {} {}: {} records, {} matched, {} orphans",
                    n + 1,
                    f.set,
                    f.file,
                    f.records,
                    f.matched,
                    f.orphans
                ));
            }
        }
        out.push(format!(
            "run: {} records in, {} trajectories, {} records rejected ({:.2}%); {}",
            s.records,
            s.trajectories,
            s.rejected_records,
            s.reject_rate() * 100.0,
            speed
        ));
        if let Some(e) = &s.partition {
            out.push(format!(
                "run: partition {} by {}: left to the other partitions: {} inputs, {} records, \
                 {} trajectories",
                e.partition, e.by, e.inputs, e.records, e.trajectories
            ));
        } else if let Some((export, output)) = &self.report {
            out.push(format!("run: report of {export} -> {output}"));
        }
        out
    }
}

impl<'p> Prepared<'p> {
    /// Checks `p` as [`check`] does, locks its outputs (another process writing one is
    /// refused), expands its inputs (detecting their formats; each detection and skipped
    /// entry goes to `notice`) and reads its side files.
    pub fn new(
        p: &'p Pipeline,
        request: Request,
        notice: &dyn Fn(&str),
    ) -> Result<Prepared<'p>, FileRunError> {
        let partition = request.partition;
        let Checked {
            upgrade,
            named,
            sets,
        } = checked(p, partition.as_ref())?;
        if let Some(r) = request.max_reject_rate.filter(|r| !(0.0..=1.0).contains(r)) {
            return Err(ConfigError::Invalid(format!(
                "the maximum reject rate {r} is not a fraction between 0 and 1"
            ))
            .into());
        }
        if request.resume && p.validate.rejects.as_deref() == Some("-") {
            return Err(ConfigError::Invalid(
                "not supported yet: --resume with the rejects written to stdout".into(),
            )
            .into());
        }
        // Each partition writes its own rejects file and run.json (stdout stays stdout).
        let rejects = p
            .validate
            .rejects
            .as_deref()
            .map(|r| tagged(partition.as_ref(), r));
        // Every output is locked for the whole run, before any input is read: another command
        // writing one is refused.
        let mut locks: Vec<Lock> = rejects
            .as_deref()
            .map(Lock::file)
            .transpose()?
            .into_iter()
            .flatten()
            .collect();
        for e in &p.exports {
            locks.push(Lock::dir(
                std::path::Path::new(&e.output),
                partition.as_ref(),
            )?);
        }
        let plan = input_plan(p, named, notice)?;
        let all_paths: Vec<String> = plan.iter().map(|(p, _)| p.clone()).collect();
        let share = partition_share(p, &plan, partition.as_ref());
        let mut exports = Vec::new();
        for (i, e) in p.exports.iter().enumerate() {
            // Every partition records every input, so their options agree.
            let mut opts = e
                .options(&all_paths, request.run.clone())
                .map_err(|err| p.stage_error("export", i, err))?;
            opts.shards.partition = partition;
            exports.push(ExportTarget {
                dir: PathBuf::from(&e.output),
                opts,
            });
        }
        let mut joins = Vec::new();
        for (j, s) in p.joins.iter().zip(sets) {
            let join = j
                .build(s, request.run.max_record_bytes)
                .map_err(|e| match e {
                    IndexError::Invalid(problems) => FileRunError::SideFiles(problems),
                    other => ConfigError::Io(other.to_string()).into(),
                })?;
            let opts = JoinRunOptions {
                upgrade: UpgradeOptions::default(),
                run: request.run.clone(),
                orphans: Some(j.orphans),
                // Side records other partitions use would be reported as orphans.
                orphan_diagnostics: match partition {
                    Some(_) => Some(0),
                    None => request.orphan_diagnostics,
                },
            };
            joins.push(JoinStage { join, opts });
        }
        let redactor = p.redact.as_ref().map(RedactConfig::redactor).transpose()?;
        let convert = ConvertOptions {
            to: OutputFormat::Adp,
            upgrade,
            run: request.run.clone(),
            mapping: p.convert.formats.clone(),
            strict: p.convert.strict,
            inputs: std::sync::Arc::new(all_paths.clone()),
        };
        Ok(Prepared {
            pipeline: p,
            max_reject_rate: request
                .max_reject_rate
                .unwrap_or(p.validate.max_reject_rate),
            request,
            plan,
            share,
            convert,
            joins,
            exports,
            rejects,
            filter: p.filter.as_ref().map(|f| f.stage()),
            redactor,
            _locks: locks,
        })
    }

    /// The inputs this run reads (its partition's share), in order.
    pub fn inputs(&self) -> Vec<String> {
        self.share.iter().map(|(p, _)| p.clone()).collect()
    }

    /// The rejects file this run writes, if any (tagged with the partition).
    pub fn rejects(&self) -> Option<&str> {
        self.rejects.as_deref()
    }

    /// The journal of this run's first export (`.trajkit-run/`), where `--resume` starts from.
    pub fn journal_dir(&self) -> Option<PathBuf> {
        self.exports
            .first()
            .map(|e| crate::engine::partition::state_dir(&e.dir, self.request.partition.as_ref()))
    }

    /// Why the run failed when the pipeline or what it left in its outputs is the cause (a
    /// usage error: an export directory that holds an export, a resume refused), with a hint
    /// of what to do; `None` for other errors (I/O).
    pub fn usage_message(&self, e: &RunError) -> Option<String> {
        match e {
            RunError::Export(x) if x.is_usage() => {
                let hint = if self.journal_dir().is_some_and(|j| j.exists()) {
                    "; or pass --resume to finish the interrupted run it holds"
                } else {
                    ""
                };
                let what = match x {
                    ExportError::Exists(dir) => format!(
                        "{dir} already holds an export (manifest.json or data files); set \
                         `force = true` in its [[export]] table to replace it"
                    ),
                    damaged => damaged.to_string(),
                };
                Some(format!("{what}{hint}"))
            }
            RunError::Resume(ResumeError::Refused(_)) => Some(e.to_string()),
            _ => None,
        }
    }

    /// Why an outcome over the maximum reject rate fails, and where its rejects are.
    pub fn exceeded_message(&self, outcome: &Outcome) -> String {
        let s = &outcome.summary;
        format!(
            "{} of {} records rejected ({:.2}%), above the maximum reject rate {}; the outputs \
             were written and each export's run.json records it{}",
            s.rejected_records,
            s.records,
            s.reject_rate() * 100.0,
            outcome.max_reject_rate,
            match self.rejects() {
                Some(r) => format!("; the rejected records are in {r}"),
                None => "; set [validate] rejects to keep the rejected records".to_owned(),
            }
        )
    }

    /// The `[report]` page of the run's export (its first `adp` or `parquet` one) and its
    /// rejects file; `None` without `[report]` or in a partition (whose export is a share).
    fn write_report(
        &self,
        summary: &RunSummary,
        notice: &dyn Fn(&str),
    ) -> Result<Option<(String, String)>, RunError> {
        let p = self.pipeline;
        let (Some(output), Some(export), None) = (
            p.report.as_ref().map(|r| &r.output),
            p.report_export(),
            &summary.partition,
        ) else {
            return Ok(None);
        };
        let inputs = [export.to_owned()];
        let opts = ReportOptions {
            inputs: &inputs,
            rejects: self.rejects().filter(|r| *r != "-"),
            output,
            tokens_with: None,
        };
        report(&opts, &self.request.run, &NoProgress, notice)
            .map_err(|e| RunError::Report(e.to_string()))?;
        Ok(Some((export.to_owned(), output.clone())))
    }

    /// Makes the pass: every input converted, joined and exported, the rejects written, the
    /// outputs (and each export's `run.json`) committed, then the `[report]` page written;
    /// progress to `progress`, diagnostics to `reporter`, the report's notices to `notice`.
    pub fn run(
        &self,
        progress: &dyn Progress,
        reporter: Box<dyn Reporter>,
        notice: &dyn Fn(&str),
    ) -> Result<Outcome, RunError> {
        let p = self.pipeline;
        let partition = self.request.partition;
        let max = self.max_reject_rate;
        // The hash key is no part of the configuration, but a resumed run must use the same
        // one: its tag of a fixed text joins the identity (the key itself is never written).
        let key_tag = self
            .redactor
            .as_ref()
            .and_then(|r| r.key_tag(b"trajkit run identity"));
        // The rule file is named by the configuration, but may change under the same name.
        let rules = (self.redactor.as_ref())
            .map(|r| r.scanner().rule_set())
            .filter(|s| !s.is_builtin())
            .map(|s| s.fingerprint());
        let identity_text = json!({
            "config": p.effective(),
            "redact_key": key_tag,
            "redact_rules": rules,
            "max_reject_rate": max,
            "max_record_bytes": self.request.run.max_record_bytes,
            "partition": partition.map(|p| p.spec()),
        })
        .to_string();
        let paths = self.inputs();
        let journal = JournalOptions {
            identity: identity(&identity_text, &paths),
            resume: self.request.resume,
        };
        // `run.json` in each export directory is written with the outputs it describes.
        let run_jsons: Vec<PathBuf> = self
            .exports
            .iter()
            .map(|e| e.dir.join(tagged(partition.as_ref(), "run.json")))
            .collect();
        let describe = |summary: &RunSummary| -> Vec<(PathBuf, String)> {
            let text = format!("{:#}\n", run_report(&p.file, max, summary));
            run_jsons
                .iter()
                .map(|p| (p.clone(), text.clone()))
                .collect()
        };
        // The stages in pipeline order: the joins, the filter, then redaction.
        let joins = self.joins.iter().map(|j| j as &dyn Stage);
        let filter = self.filter.as_ref().map(|f| f as &dyn Stage);
        let redact = self.redactor.as_ref().map(|r| r as &dyn Stage);
        let stages: Vec<&dyn Stage> = joins.chain(filter).chain(redact).collect();
        let summary = run_plan(
            &Plan {
                inputs: Source::Formats(&self.share),
                convert: &self.convert,
                stages: &stages,
                numbered: true,
                sections: &["joins"],
                output: Output::Exports(&self.exports),
                partition,
                all_inputs: partition.map(|_| self.plan.as_slice()),
                journal: Some(&journal),
                describe: Some(&describe),
            },
            progress,
            self.rejects.as_deref(),
            reporter,
        )?;
        let exceeded = summary.reject_rate() > max;
        let report = self.write_report(&summary, notice)?;
        Ok(Outcome {
            summary,
            max_reject_rate: max,
            exceeded,
            report,
        })
    }
}

/// `path` tagged with the partition (`part-I-of-N`), unless it is stdout.
fn tagged(partition: Option<&Partition>, path: &str) -> String {
    match partition {
        Some(p) if path != "-" => p.file_name(path),
        _ => path.to_owned(),
    }
}

/// `summary` as JSON without its times (`seconds` of stages and inputs): `run.json` holds
/// what the run made, so the same run (or one resumed) writes the same bytes; the times are
/// in the summary on stderr and in `--progress json` lines.
fn untimed(summary: &RunSummary) -> Value {
    let mut v = json!(summary);
    for list in ["stages", "inputs"] {
        for item in v[list].as_array_mut().into_iter().flatten() {
            if let Some(o) = item.as_object_mut() {
                o.remove("seconds");
            }
        }
    }
    v
}

/// What `run.json` holds: the run's options that matter to its outcome and its summary.
fn run_report(pipeline: &str, max: f64, summary: &RunSummary) -> Value {
    json!({
        "trajkit_version": env!("CARGO_PKG_VERSION"),
        "pipeline": pipeline,
        "max_reject_rate": max,
        "reject_rate": summary.reject_rate(),
        "reject_rate_exceeded": summary.reject_rate() > max,
        "summary": untimed(summary),
    })
}

//! `join`: every trajectory of the inputs joined with side files, into one JSON-lines output,
//! with the rejected records and their diagnostics, and the orphans reported: a plan of the
//! join stage ([`JoinStage`]) over ADP records ([`Plan::command`]), on `run`'s runner.

use super::run::{run_plan, Output, Plan, RunError, Source, Unread};
use crate::config::join::JoinConfig;
use crate::config::ConfigError;
use crate::convert::ConvertOptions;
use crate::engine::pipeline::Progress;
use crate::engine::stage::Stage;
use crate::join::{Join, JoinRunOptions, JoinStage, JoinSummary, SideSet};
use crate::model::AdpVersion;
use crate::validate::report::Reporter;

/// The side sets of `config` (no file is read), or why a join with it cannot work: ADP
/// `target` holds no JSON in details, or the side sets are wrong ([`JoinConfig::side_sets`]).
pub fn side_sets(config: &JoinConfig, target: AdpVersion) -> Result<Vec<SideSet>, ConfigError> {
    if !target.has_free_details() {
        return Err(ConfigError::Invalid(format!(
            "join writes JSON values into details, which ADP {target} cannot hold; use 1.1.0 or later"
        )));
    }
    config.side_sets()
}

/// Refuses to read stdin (`-`) twice: among the trajectories (`inputs`, expanded) and the side
/// files of `config`, one may be `-`.
pub fn check_stdin(config: &JoinConfig, inputs: &[String]) -> Result<(), ConfigError> {
    let sides = config.reflections.iter().chain(&config.rewards);
    let side_stdin = sides.filter(|f| *f == "-").count();
    if side_stdin + usize::from(inputs.iter().any(|i| i == "-")) > 1 {
        return Err(ConfigError::Invalid(
            "stdin (`-`) can be read once: give the trajectories or one side file on stdin, not several".into(),
        ));
    }
    Ok(())
}

/// Joins every trajectory of `inputs` (ADP, any version) with `join`, writing them to the file
/// `output` (`-`: stdout), rejected records to the file `rejects` and diagnostics to
/// `reporter`. Side records no trajectory matched are reported through `reporter` (as warnings
/// under [`crate::join::Orphans::Report`], as errors written to `rejects` under
/// [`crate::join::Orphans::Reject`]).
pub fn join_inputs(
    inputs: &[String],
    join: Join,
    opts: &JoinRunOptions,
    progress: &dyn Progress,
    output: &str,
    rejects: Option<&str>,
    reporter: Box<dyn Reporter>,
) -> Result<JoinSummary, RunError> {
    let stage = JoinStage {
        join,
        opts: opts.clone(),
    };
    let convert = ConvertOptions {
        upgrade: opts.upgrade.clone(),
        run: opts.run.clone(),
        ..ConvertOptions::default()
    };
    let stages: [&dyn Stage; 1] = [&stage];
    let source = Source::Adp(inputs, Unread::FirstStage);
    let plan = Plan::command(source, &convert, &stages, Output::AdpLines(output));
    let run = run_plan(&plan, progress, rejects, reporter)?;
    let mut summaries: Vec<JoinSummary> = run.sections.get("joins").unwrap_or_default();
    let mut summary = summaries.pop().unwrap_or_default();
    summary.empty_inputs = run.empty_inputs;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewards(files: &[&str]) -> JoinConfig {
        JoinConfig {
            rewards: files.iter().map(|f| f.to_string()).collect(),
            ..JoinConfig::default()
        }
    }

    #[test]
    fn a_version_without_json_details_is_refused() {
        let config = rewards(&["r.jsonl"]);
        let err = side_sets(&config, AdpVersion::V1_0).expect_err("refused");
        assert_eq!(
            err,
            ConfigError::Invalid(
                "join writes JSON values into details, which ADP 1.0.0 cannot hold; use 1.1.0 or later"
                    .into()
            )
        );
        // From 1.1.0 on, the config's own checks decide.
        let own = config.side_sets().err();
        assert_eq!(side_sets(&config, AdpVersion::V1_1).err(), own);
    }

    #[test]
    fn stdin_is_read_once() {
        let stdin = ["-".to_owned()];
        let file = ["t.jsonl".to_owned()];
        assert!(check_stdin(&rewards(&["-"]), &file).is_ok());
        assert!(check_stdin(&rewards(&["r.jsonl"]), &stdin).is_ok());
        assert!(check_stdin(&rewards(&["-"]), &stdin).is_err());
        assert!(check_stdin(&rewards(&["-", "-"]), &file).is_err());
    }
}

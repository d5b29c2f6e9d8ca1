//! Semantic rules that JSON Schema cannot express, run on the typed model after the schema check.

use serde_json::Value;

use super::languages::is_known_language;
use super::links::check_links;
use super::step::Step;
use super::trajectory::Trajectory;
use super::version::AdpVersion;
pub use super::violation::Violation;

/// Runs every semantic rule that applies to `version`.
pub fn check(traj: &Trajectory, version: AdpVersion) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, step) in traj.content.iter().enumerate() {
        if let Step::CodeAction(c) = step {
            if !is_known_language(&c.language) {
                out.push(Violation::new(
                    format!("/content/{i}/language"),
                    "code-language",
                    format!("unknown code language {:?} (not in ADP's language set; names are lower case, e.g. \"python\", \"bash\")", c.language),
                ));
            }
        }
    }
    if version.has_tool_call_links() {
        out.extend(check_links(&traj.content));
    }
    if let Some(declared) = &traj.available_code_languages {
        out.extend(check_available_code_languages(traj, declared));
    }
    out
}

/// `available_code_languages` must be exactly the set of languages the code actions use.
fn check_available_code_languages(traj: &Trajectory, declared: &[String]) -> Vec<Violation> {
    let used = traj.used_code_languages().unwrap_or_default();
    let missing: Vec<&String> = used.iter().filter(|l| !declared.contains(l)).collect();
    let unused: Vec<&String> = declared.iter().filter(|l| !used.contains(l)).collect();
    let mut out = Vec::new();
    if !missing.is_empty() {
        out.push(Violation::new(
            "/available_code_languages",
            "available-code-languages",
            format!("code actions use {missing:?}, which available_code_languages does not list"),
        ));
    }
    if !unused.is_empty() {
        out.push(Violation::new(
            "/available_code_languages",
            "available-code-languages",
            format!("available_code_languages lists {unused:?}, which no code action uses"),
        ));
    }
    out
}

/// Reports what in `traj` cannot be written as `version` (used before writing an older version,
/// so a downgrade never drops data silently).
pub fn fit(traj: &Trajectory, version: AdpVersion) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut refuse = |pointer: String, what: &str| {
        out.push(Violation::new(
            pointer,
            "version-fit",
            format!("{what} cannot be written as ADP {version}"),
        ));
    };
    if !version.has_available_apis() && traj.available_apis.is_some() {
        refuse("/available_apis".into(), "available_apis");
    }
    if !version.has_available_custom_tools() && traj.available_custom_tools.is_some() {
        refuse("/available_custom_tools".into(), "available_custom_tools");
    }
    if !version.has_available_code_languages() && traj.available_code_languages.is_some() {
        refuse(
            "/available_code_languages".into(),
            "available_code_languages",
        );
    }
    if !version.has_free_details() {
        for (k, v) in &traj.details {
            if !matches!(v, Value::String(_)) {
                refuse(
                    format!("/details/{}", escape_pointer(k)),
                    "a details value that is not a string",
                );
            }
        }
    }
    for (i, step) in traj.content.iter().enumerate() {
        if !version.has_json_observation() && matches!(step, Step::JsonObservation(_)) {
            refuse(format!("/content/{i}"), "json_observation");
        }
        if !version.has_tool_call_links() && step.tool_call_id().is_some() {
            refuse(format!("/content/{i}/tool_call_id"), "tool_call_id");
        }
        if !version.has_step_extras() {
            if step.reasoning_content().is_some() {
                refuse(
                    format!("/content/{i}/reasoning_content"),
                    "reasoning_content",
                );
            }
            if step.reward().is_some() {
                refuse(format!("/content/{i}/reward"), "reward");
            }
        }
    }
    out
}

/// Escapes a key for use as one JSON-pointer segment (RFC 6901).
pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

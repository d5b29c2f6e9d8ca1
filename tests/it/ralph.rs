//! aiwg Ralph episodic-memory directories: one trajectory per attempt, reflections attached by
//! attempt, malformed files reported with file and line, links out of the root refused.

use std::fs;
use std::path::Path;

use crate::common::{self, json_lines, sample_data, trajkit};
use serde_json::Value;

/// Copies `sample_data/ralph` into a temporary directory to mutate it.
fn copy_sample(to: &Path) {
    common::copy_dir(&sample_data().join("ralph"), to);
}

fn convert(root: &Path, rejects: Option<&Path>) -> (i32, Vec<Value>, String) {
    let mut cmd = trajkit();
    cmd.args(["convert", "--from", "ralph"]).arg(root);
    if let Some(r) = rejects {
        cmd.arg("--rejects").arg(r);
    }
    let out = cmd.output().expect("runs");
    (
        out.status.code().expect("exit code"),
        json_lines(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ids(trajectories: &[Value]) -> Vec<&str> {
    trajectories
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect()
}

#[test]
fn sample_attempts_become_trajectories_with_their_reflections() {
    let (code, out, stderr) = convert(&sample_data().join("ralph"), None);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        ids(&out),
        vec![
            "task-001/attempt-001",
            "task-001/attempt-002",
            "task-002/attempt-001"
        ]
    );
    let first = &out[0];
    let text = first["content"][0]["content"].as_str().expect("task text");
    assert!(text.starts_with("Add an --json flag"), "{text}");
    assert!(text.contains("Plan:\n1. Add the flag"), "{text}");
    // read + output, edit + output, bash + output (with its error)
    let classes: Vec<&str> = first["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|s| s["class_"].as_str())
        .collect();
    assert_eq!(
        classes,
        vec![
            "text_observation",
            "api_action",
            "text_observation",
            "api_action",
            "text_observation",
            "code_action",
            "text_observation"
        ]
    );
    assert_eq!(
        first["content"][5]["content"],
        "pytest tests/test_report.py -q"
    );
    assert!(first["content"][6]["content"]
        .as_str()
        .is_some_and(|t| t.contains("error: AssertionError")));
    assert_eq!(first["details"]["outcome"]["status"], "failure");
    assert_eq!(first["details"]["outcome"]["native"]["final_quality"], 40);
    let reflections = first["details"]["reflections"]
        .as_array()
        .expect("reflections");
    assert_eq!(reflections.len(), 1);
    assert_eq!(reflections[0]["iteration"], 1);
    assert_eq!(reflections[0]["key"], "task-001/attempt-001");
    assert!(reflections[0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Learning: Trace a new option")));
    assert_eq!(out[1]["details"]["reflections"][0]["iteration"], 2);
    // task-002 has no metadata, plan or outcome: still converted.
    assert_eq!(out[2]["details"]["outcome"]["status"], "unknown");
    assert_eq!(out[2]["content"][0]["class_"], "api_action");
    let (_, again, _) = convert(&sample_data().join("ralph"), None);
    assert_eq!(again, out, "stable across runs");
}

#[test]
fn malformed_lines_are_rejected_with_file_and_line_and_the_rest_converted() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("ralph");
    copy_sample(&root);
    let actions = root.join("tasks/task-001/attempts/002/actions.jsonl");
    let mut text = fs::read_to_string(&actions).expect("read");
    text.push_str("{\"type\": \"bash\", \"params\": \n");
    fs::write(&actions, text).expect("write");
    let reflections = root.join("tasks/task-001/reflections.jsonl");
    let mut text = fs::read_to_string(&reflections).expect("read");
    text.push_str("[\"not an object\"]\n");
    fs::write(&reflections, text).expect("write");
    let rejects = dir.path().join("rejects.jsonl");
    let (code, out, stderr) = convert(&root, Some(&rejects));
    assert_eq!(code, 1);
    assert_eq!(
        ids(&out),
        vec!["task-001/attempt-001", "task-002/attempt-001"]
    );
    assert!(
        stderr.contains("attempts/002/actions.jsonl:3: error[episodic-file]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("reflections.jsonl:3: error[invalid-record]"),
        "{stderr}"
    );
    let rejected = json_lines(&fs::read(&rejects).expect("rejects"));
    assert_eq!(rejected.len(), 2);
    assert_eq!(rejected[0]["raw"], "[\"not an object\"]");
}

/// A reflection for an attempt that has no directory would be lost: it is rejected with its
/// line, and the attempts still convert.
#[test]
fn a_reflection_of_no_attempt_is_rejected_with_its_line() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("ralph");
    copy_sample(&root);
    let reflections = root.join("tasks/task-001/reflections.jsonl");
    let mut text = fs::read_to_string(&reflections).expect("read");
    text.push_str("{\"attempt_id\": 9, \"reflection\": \"lost\"}\n");
    fs::write(&reflections, text).expect("write");
    let (code, out, stderr) = convert(&root, None);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 3, "{stderr}");
    assert!(
        stderr.contains("reflections.jsonl:3: error[invalid-record]")
            && stderr.contains("attempt 9, which has no directory"),
        "{stderr}"
    );
}

#[test]
fn an_unreadable_actions_file_rejects_its_attempt_and_an_absent_one_does_not() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("ralph");
    copy_sample(&root);
    // A directory where the file should be: there, but not readable as a file.
    let actions = root.join("tasks/task-001/attempts/002/actions.jsonl");
    fs::remove_file(&actions).expect("rm");
    fs::create_dir(&actions).expect("mkdir");
    // Absent: the attempt has no actions yet, which the format allows (its plan and outcome
    // still make steps).
    fs::remove_file(root.join("tasks/task-001/attempts/001/actions.jsonl")).expect("rm");
    let (code, out, stderr) = convert(&root, None);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        ids(&out),
        vec!["task-001/attempt-001", "task-002/attempt-001"]
    );
    assert!(
        stderr.contains("attempts/002/actions.jsonl:1: error[episodic-file]")
            && stderr.contains("cannot read"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_dangling_plan_link_is_reported() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("ralph");
    copy_sample(&root);
    let plan = root.join("tasks/task-001/attempts/001/plan.md");
    fs::remove_file(&plan).expect("rm");
    std::os::unix::fs::symlink(root.join("gone.md"), &plan).expect("symlink");
    let (code, out, stderr) = convert(&root, None);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        ids(&out),
        vec!["task-001/attempt-002", "task-002/attempt-001"]
    );
    assert!(
        stderr.contains("attempts/001/plan.md") && stderr.contains("broken symbolic link"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_leaving_the_root_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("ralph");
    copy_sample(&root);
    let outside = dir.path().join("secret.json");
    fs::write(&outside, "{\"status\": \"success\"}").expect("write");
    let outcome = root.join("tasks/task-002/attempts/001/outcome.json");
    std::os::unix::fs::symlink(&outside, &outcome).expect("symlink");
    let (code, out, stderr) = convert(&root, None);
    assert_eq!(code, 1);
    assert_eq!(out.len(), 2);
    assert!(stderr.contains("leaves the input root"), "{stderr}");
}

#[test]
fn a_directory_is_detected_as_ralph_inside_a_larger_tree() {
    let out = trajkit()
        .args(["convert", "-o", "-"])
        .arg(sample_data())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sample_data/ralph: detected ralph"),
        "{stderr}"
    );
}

#[test]
fn ralph_files_validate_against_their_raw_schemas() {
    let task = sample_data().join("ralph/tasks/task-001");
    for (schema, file) in [
        ("ralph-task", "metadata.json"),
        ("ralph-reflection", "reflections.jsonl"),
        ("ralph-action", "attempts/001/actions.jsonl"),
        ("ralph-attempt", "attempts/001/attempt.json"),
        ("ralph-outcome", "attempts/001/outcome.json"),
    ] {
        trajkit()
            .args(["validate", "-q", "--schema", schema])
            .arg(task.join(file))
            .assert()
            .code(0);
    }
    let out = trajkit()
        .args([
            "validate",
            "--report",
            "json",
            "--schema",
            "ralph-attempt",
            "-",
        ])
        .write_stdin("{\"id\": 1, \"outcome\": {\"status\": \"won\"}}\n{\"type\": 3}\n")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let diags = json_lines(&out.stdout);
    let pointers: Vec<&str> = diags.iter().filter_map(|d| d["pointer"].as_str()).collect();
    // The attempt's outcome is checked through the relative $ref to outcome.schema.json.
    assert_eq!(pointers, vec!["/outcome/status"]);
    let out = trajkit()
        .args([
            "validate",
            "--report",
            "json",
            "--schema",
            "ralph-action",
            "-",
        ])
        .write_stdin("{\"type\": \"teleport\"}\n")
        .output()
        .expect("runs");
    assert_eq!(json_lines(&out.stdout)[0]["pointer"], "/type");
}

//! `trajkit join`: the four joins of issue 5 (Reflexion, Ralph, generic rewards on the ADP
//! corpus, LedgerMind), each policy, diagnostics with side file and line, bad side input.
//! Expected values are read from the input fixtures, never from an earlier run.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{self, json_lines, sample_data, trajkit, validate_adp};
use serde_json::{json, Value};

/// The result of one `trajkit join` run.
struct Run {
    code: i32,
    out: Vec<Value>,
    stderr: String,
    summary: Value,
}

/// Runs `trajkit join INPUTS ARGS` with the summary written as JSON.
fn join(inputs: &[&Path], args: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let out = trajkit()
        .arg("join")
        .args(inputs)
        .args(args)
        .arg("--summary-json")
        .arg(&summary)
        .output()
        .expect("runs");
    let code = out.status.code().expect("exited with a code, not a signal");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(code, 101, "panicked: {stderr}");
    Run {
        code,
        out: json_lines(&out.stdout),
        summary: fs::read(&summary)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null),
        stderr,
    }
}

/// `trajkit convert` of `inputs` into `to`.
fn convert_to(inputs: &[&Path], to: &Path) {
    let out = trajkit()
        .args(["convert", "-q"])
        .args(inputs)
        .arg("-o")
        .arg(to)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Converts `side` into `dir/converted.jsonl`, writes it again to `dir/bare.jsonl` without the
/// `details` keys `strip`, and returns the latter's path.
fn converted_without(side: &Path, dir: &Path, strip: &[&str]) -> std::path::PathBuf {
    let converted = dir.join("converted.jsonl");
    convert_to(&[side], &converted);
    let mut bare = read_jsonl(&converted);
    for t in &mut bare {
        let d = t["details"].as_object_mut().expect("details");
        for k in strip {
            d.remove(*k);
        }
    }
    let input = dir.join("bare.jsonl");
    write_jsonl(&input, &bare);
    input
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    json_lines(&fs::read(path).expect("read"))
}

fn write_jsonl(path: &Path, values: &[Value]) {
    let text: String = values.iter().map(|v| format!("{v}\n")).collect();
    fs::write(path, text).expect("write");
}

/// Checks every trajectory's `details` against `schemas/details.schema.json`, the documented
/// contract of what trajkit attaches.
fn assert_details_fit(out: &[Value]) {
    let schema: Value = serde_json::from_str(include_str!("../../schemas/details.schema.json"))
        .expect("details schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("details schema compiles");
    for t in out {
        let errors: Vec<String> = validator
            .iter_errors(&t["details"])
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", t["id"]);
    }
}

fn by_id<'a>(out: &'a [Value], id: &str) -> &'a Value {
    out.iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no trajectory {id}"))
}

fn side_file<'a>(summary: &'a Value, file: &Path) -> &'a Value {
    summary["side_files"]
        .as_array()
        .expect("side_files")
        .iter()
        .find(|f| f["file"] == file.to_string_lossy().as_ref())
        .expect("side file in the summary")
}

/// Four iterations of one Reflexion loop, made from the bundled sample record: each with its
/// own reward and reflection text.
fn reflexion_loop(dir: &Path) -> (PathBuf, Vec<Value>) {
    let sample = read_jsonl(&sample_data().join("reflexion/loop.jsonl"));
    let records: Vec<Value> = (0..4)
        .map(|i| {
            let mut r = sample[0].clone();
            r["iteration"] = json!(i);
            r["evaluator_output"]["reward_signal"] = json!(0.25 * i as f64);
            r["evaluator_output"]["passed"] = json!(i == 3);
            r["self_reflection"]["reflection_text"] = json!(format!("reflection of iteration {i}"));
            r
        })
        .collect();
    let path = dir.join("loop.jsonl");
    write_jsonl(&path, &records);
    (path, records)
}

#[test]
fn reflexion_records_join_onto_trajectories_of_the_same_loop_with_a_memory_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (side, records) = reflexion_loop(dir.path());
    // Strip what the converter attached, so that the join has to put it back.
    let input = converted_without(&side, dir.path(), &["reward", "outcome", "reflections"]);
    let converted = dir.path().join("converted.jsonl");

    let run = join(
        &[&input],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--reflections-from",
            "reflexion",
            "--memory-window",
            "2",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.out.len(), 4);
    for (i, r) in records.iter().enumerate() {
        let id = format!("{}#{i}", r["loop_id"].as_str().expect("loop_id"));
        let t = by_id(&run.out, &id);
        let d = &t["details"];
        assert_eq!(d["reward"], r["evaluator_output"]["reward_signal"]);
        let status = if r["evaluator_output"]["passed"] == true {
            "success"
        } else {
            "failure"
        };
        assert_eq!(d["outcome"]["status"], status);
        let reflections = d["reflections"].as_array().expect("reflections");
        assert_eq!(reflections.len(), 1);
        assert_eq!(
            reflections[0]["text"],
            r["self_reflection"]["reflection_text"]
        );
        assert_eq!(reflections[0]["key"], id.as_str());
        assert_eq!(reflections[0]["iteration"], i);
        assert_eq!(
            reflections[0]["lessons"],
            r["self_reflection"]["lessons_learned"]
        );
        assert_eq!(
            reflections[0]["root_cause"],
            r["self_reflection"]["credit_assignment"]["root_cause"]
        );
        // Ω = 2: the reflections of the two iterations before this one, oldest first.
        let prior: Vec<&Value> = d["prior_reflections"]
            .as_array()
            .map(|p| p.iter().map(|x| &x["text"]).collect())
            .unwrap_or_default();
        let expected: Vec<&Value> = records[i.saturating_sub(2)..i]
            .iter()
            .map(|x| &x["self_reflection"]["reflection_text"])
            .collect();
        assert_eq!(prior, expected, "window of iteration {i}");
    }
    // The join puts back exactly what the converter attached.
    for (joined, conv) in run.out.iter().zip(read_jsonl(&converted)) {
        for k in ["reward", "outcome", "reflections"] {
            assert_eq!(joined["details"][k], conv["details"][k], "{k}");
        }
    }
    assert_eq!(run.summary["matched"], 4);
    assert_eq!(run.summary["unmatched_kept"], 0);
    assert_eq!(side_file(&run.summary, &side)["matched"], 4);
    assert_eq!(run.summary["side_orphans"], 0);
    assert_eq!(validate_adp(&run.out), 0);
    assert_details_fit(&run.out);

    // Joining onto the converted trajectories themselves changes nothing but the window: the
    // same reflection is not added twice and equal rewards are no conflict.
    let again = join(
        &[&converted],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--reflections-from",
            "reflexion",
        ],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.out, read_jsonl(&converted));
}

#[test]
fn memory_window_reaches_an_iteration_without_its_own_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (side, records) = reflexion_loop(dir.path());
    let converted = dir.path().join("converted.jsonl");
    convert_to(&[&side], &converted);
    // Only iterations 0 and 1 have been reflected on; iteration 3 finds them by its details.
    write_jsonl(&side, &records[..2]);
    let run = join(
        &[&converted],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--reflections-from",
            "reflexion",
            "--memory-window",
            "5",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = format!("{}#3", records[0]["loop_id"].as_str().expect("loop_id"));
    let prior: Vec<&Value> = by_id(&run.out, &id)["details"]["prior_reflections"]
        .as_array()
        .expect("prior")
        .iter()
        .map(|p| &p["text"])
        .collect();
    assert_eq!(
        prior,
        vec![
            &records[0]["self_reflection"]["reflection_text"],
            &records[1]["self_reflection"]["reflection_text"]
        ]
    );
    assert_eq!(
        run.summary["matched"], 2,
        "iterations 2 and 3 have no record of their own"
    );

    // Ω = 1 counts iterations that have reflections: iteration 3 gets iteration 1's.
    let run = join(
        &[&converted],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--reflections-from",
            "reflexion",
            "--memory-window",
            "1",
        ],
    );
    let prior = &by_id(&run.out, &id)["details"]["prior_reflections"];
    assert_eq!(prior.as_array().map(Vec::len), Some(1));
    assert_eq!(
        prior[0]["text"],
        records[1]["self_reflection"]["reflection_text"]
    );
    // Iteration 0 has nothing before it.
    let first = format!("{}#0", records[0]["loop_id"].as_str().expect("loop_id"));
    assert!(by_id(&run.out, &first)["details"]
        .get("prior_reflections")
        .is_none());
}

/// The bundled Ralph directory, with the task's reflections.jsonl moved to a side directory
/// named after the task.
fn ralph_without_reflections(dir: &Path) -> (PathBuf, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        fs::create_dir_all(to).expect("mkdir");
        for e in fs::read_dir(from).expect("read dir") {
            let e = e.expect("entry");
            if e.path().is_dir() {
                copy(&e.path(), &to.join(e.file_name()));
            } else {
                fs::copy(e.path(), to.join(e.file_name())).expect("copy");
            }
        }
    }
    let root = dir.join("ralph");
    copy(&sample_data().join("ralph"), &root);
    let side = dir.join("side/task-001/reflections.jsonl");
    fs::create_dir_all(side.parent().expect("parent")).expect("mkdir");
    fs::rename(root.join("tasks/task-001/reflections.jsonl"), &side).expect("move");
    (root, side)
}

#[test]
fn ralph_reflections_join_onto_ralph_attempts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (root, side) = ralph_without_reflections(dir.path());
    let converted = dir.path().join("attempts.jsonl");
    convert_to(&[&root], &converted);
    let run = join(
        &[&converted],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--reflections-from",
            "ralph",
            "--memory-window",
            "1",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = read_jsonl(&sample_data().join("ralph/tasks/task-001/reflections.jsonl"));
    for line in &lines {
        let attempt = line["attempt_id"].as_u64().expect("attempt_id");
        let id = format!("task-001/attempt-{attempt:03}");
        let r = &by_id(&run.out, &id)["details"]["reflections"][0];
        assert_eq!(r["key"], id.as_str());
        assert_eq!(r["iteration"], attempt);
        assert!(r["text"]
            .as_str()
            .expect("text")
            .contains(line["observation"].as_str().expect("obs")));
        assert_eq!(r["lessons"], json!([line["learning"]]));
        assert_eq!(r["insights"], line["action_items"]);
        assert_eq!(r["root_cause"], line["analysis"]);
    }
    // Attempt 2's window holds attempt 1's reflection.
    let prior = &by_id(&run.out, "task-001/attempt-002")["details"]["prior_reflections"];
    assert_eq!(prior.as_array().map(Vec::len), Some(1));
    assert_eq!(prior[0]["root_cause"], lines[0]["analysis"]);
    assert!(by_id(&run.out, "task-001/attempt-001")["details"]
        .get("prior_reflections")
        .is_none());
    // task-002 has no reflections: kept, unmatched.
    assert!(by_id(&run.out, "task-002/attempt-001")["details"]
        .get("reflections")
        .is_none());
    assert_eq!(run.summary["matched"], 2);
    assert_eq!(run.summary["unmatched_kept"], 1);
    assert_eq!(side_file(&run.summary, &side)["records"], lines.len());
    assert_eq!(side_file(&run.summary, &side)["orphans"], 0);
    assert_details_fit(&run.out);
    // The same reflections the converter attaches when reflections.jsonl is in place.
    let (code, full, stderr) = common::convert(&[&sample_data().join("ralph")], Some("ralph"), &[]);
    assert_eq!(code, 0, "{stderr}");
    for t in &full {
        let id = t["id"].as_str().expect("id");
        assert_eq!(
            by_id(&run.out, id)["details"]["reflections"],
            t["details"]["reflections"],
            "{id}"
        );
    }
}

#[test]
fn generic_rewards_join_onto_adp_corpus_trajectories_by_id() {
    let Some(corpus) = common::adp_corpus() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs: Vec<PathBuf> = ["agenttuning_os", "swe-gym_openhands_sampled_trajectories"]
        .iter()
        .map(|d| corpus.join(d).join("sample_std.json"))
        .collect();
    let trajectories: Vec<Value> = inputs
        .iter()
        .flat_map(|p| {
            serde_json::from_slice::<Vec<Value>>(&fs::read(p).expect("read")).expect("array")
        })
        .collect();
    // An evaluation file for every trajectory but the last, plus one for an unknown instance.
    let mut evals: Vec<Value> = trajectories[..trajectories.len() - 1]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"instance_id": t["id"], "reward": i as f64 / 10.0, "resolved": i % 2 == 0,
                             "components": {"tests": i, "style": 1}})
        })
        .collect();
    evals.push(json!({"instance_id": "no-such-instance", "reward": 0.5, "resolved": false, "components": {}}));
    let side = dir.path().join("evals.jsonl");
    write_jsonl(&side, &evals);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let args = [
        "--rewards",
        side.to_str().expect("utf-8"),
        "--key",
        "/instance_id",
        "--value",
        "/reward",
        "--outcome",
        "/resolved",
        "--components",
        "/components",
    ];
    let run = join(&refs, &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.out.len(), trajectories.len());
    for (t, e) in run.out.iter().zip(&evals[..evals.len() - 1]) {
        assert_eq!(t["id"], e["instance_id"]);
        assert_eq!(t["details"]["reward"], e["reward"]);
        assert_eq!(t["details"]["reward_components"], e["components"]);
        let status = if e["resolved"] == true {
            "success"
        } else {
            "failure"
        };
        assert_eq!(
            t["details"]["outcome"],
            json!({"status": status, "native": e["resolved"]})
        );
        assert_eq!(t["schema_version"], "1.5.0");
    }
    let last = run.out.last().expect("last");
    assert!(last["details"].get("reward").is_none());
    assert_eq!(run.summary["records"], trajectories.len());
    assert_eq!(run.summary["matched"], trajectories.len() - 1);
    assert_eq!(run.summary["unmatched_kept"], 1);
    assert_eq!(run.summary["side_matched"], evals.len() - 1);
    assert_eq!(run.summary["side_orphans"], 1);
    // The orphan is named with its file and line.
    let orphan = format!("{}:{}: warning[join-orphan]", side.display(), evals.len());
    assert!(run.stderr.contains(&orphan), "{}", run.stderr);
    assert!(run.stderr.contains("no-such-instance"), "{}", run.stderr);
    assert_eq!(validate_adp(&run.out), 0);
    assert_details_fit(&run.out);

    // Same bytes whatever the thread count.
    let bytes = |threads: &str| {
        trajkit()
            .args(["join", "--threads", threads, "-q"])
            .args(&refs)
            .args(args)
            .output()
            .expect("runs")
            .stdout
    };
    assert_eq!(bytes("1"), bytes("2"));
}

#[test]
fn ledgermind_reflection_events_join_onto_sessions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let converted = dir.path().join("sessions.jsonl");
    convert_to(
        &[&sample_data().join("ledgermind/events.jsonl")],
        &converted,
    );
    let side =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/join/ledgermind-semantic.jsonl");
    let events = read_jsonl(&side);
    let run = join(
        &[&converted],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--reflections-from",
            "ledgermind",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Event 20 cites events 12 and 13, which are in the implicit session started by event 11.
    let deploy = &by_id(&run.out, "session-11")["details"]["reflections"];
    assert_eq!(deploy.as_array().map(Vec::len), Some(1));
    assert_eq!(deploy[0]["key"], events[0]["id"].to_string());
    assert_eq!(deploy[0]["text"], events[0]["content"]);
    assert_eq!(deploy[0]["kind"], events[0]["kind"]);
    assert_eq!(deploy[0]["source"], "ledgermind");
    // Event 21 names its session.
    let s2 = &by_id(&run.out, "s-2")["details"]["reflections"];
    assert_eq!(s2[0]["text"], events[1]["content"]);
    // s-1 keeps the reflection the converter attached, once.
    let (_, sessions, _) =
        common::convert(&[&sample_data().join("ledgermind/events.jsonl")], None, &[]);
    assert_eq!(
        by_id(&run.out, "s-1")["details"]["reflections"],
        by_id(&sessions, "s-1")["details"]["reflections"]
    );
    assert_eq!(run.summary["matched"], 2);
    assert_eq!(run.summary["unmatched_kept"], 2);
    let f = side_file(&run.summary, &side);
    assert_eq!(
        (f["records"].as_u64(), f["skipped"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(
        (f["matched"].as_u64(), f["orphans"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(
        run.stderr
            .contains(&format!("{}:3: warning[join-orphan]", side.display())),
        "{}",
        run.stderr
    );
    assert_details_fit(&run.out);
}

#[test]
fn memabra_rewards_join_onto_trajectories_by_trajectory_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let side = sample_data().join("memabra/traces.jsonl");
    let traces = read_jsonl(&side);
    let input = converted_without(
        &side,
        dir.path(),
        &["reward", "reward_components", "outcome"],
    );
    let run = join(
        &[&input],
        &[
            "--rewards",
            side.to_str().expect("utf-8"),
            "--rewards-from",
            "memabra",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for trace in &traces {
        let t = by_id(&run.out, trace["trajectory_id"].as_str().expect("id"));
        assert_eq!(t["details"]["reward"], trace["reward"]["total"]);
        assert_eq!(
            t["details"]["reward_components"],
            trace["reward"]["components"]
        );
        assert_eq!(
            t["details"]["outcome"]["status"],
            trace["outcome"]["status"]
        );
        assert_eq!(t["details"]["outcome"]["native"], trace["outcome"]);
    }
    assert_eq!(run.summary["matched"], traces.len());
    assert_eq!(run.summary["side_matched"], traces.len());
    assert_details_fit(&run.out);
}

/// `sample_data/adp/v1.5.jsonl` (sample-py-1 has reward 1.0 and outcome success, sample-api-1
/// nothing) with a generic rewards file of `lines`.
fn rewards_case(lines: &[Value], args: &[&str]) -> (Run, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let side = dir.path().join("rewards.jsonl");
    write_jsonl(&side, lines);
    let mut all = vec![
        "--rewards",
        side.to_str().expect("utf-8"),
        "--key",
        "/id",
        "--value",
        "/reward",
    ];
    all.extend_from_slice(args);
    let run = join(&[&sample_data().join("adp/v1.5.jsonl")], &all);
    (run, side, dir)
}

#[test]
fn unmatched_trajectories_are_kept_dropped_or_rejected() {
    let lines = [json!({"id": "sample-api-1", "reward": 0.5})];
    let (keep, _, _) = rewards_case(&lines, &[]);
    assert_eq!(keep.code, 0, "{}", keep.stderr);
    assert_eq!(keep.out.len(), 2);
    assert_eq!(
        (
            keep.summary["matched"].as_u64(),
            keep.summary["unmatched_kept"].as_u64()
        ),
        (Some(1), Some(1))
    );

    let (drop, _, _) = rewards_case(&lines, &["--unmatched", "drop"]);
    assert_eq!(drop.code, 0, "{}", drop.stderr);
    assert_eq!(drop.out.len(), 1);
    assert_eq!(drop.out[0]["id"], "sample-api-1");
    assert_eq!(drop.summary["dropped"], 1);

    let dir = tempfile::tempdir().expect("temp dir");
    let rejects = dir.path().join("rejects.jsonl");
    let (reject, _, _) = rewards_case(
        &lines,
        &[
            "--unmatched",
            "reject",
            "--rejects",
            rejects.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(reject.code, 1);
    assert_eq!(reject.out.len(), 1);
    assert_eq!(reject.summary["rejected"], 1);
    let r = read_jsonl(&rejects);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["record_id"], "sample-py-1");
    assert_eq!(r[0]["stage"], "join");
    assert_eq!(r[0]["diagnostics"][0]["rule"], "join-unmatched");
    assert!(
        reject
            .stderr
            .contains("v1.5.jsonl:1: error[join-unmatched]"),
        "{}",
        reject.stderr
    );
}

#[test]
fn orphan_side_records_are_reported_or_rejected_with_their_line() {
    let lines = [
        json!({"id": "sample-api-1", "reward": 0.5}),
        json!({"id": "ghost", "reward": 0.1}),
    ];
    let (report, side, _dir) = rewards_case(&lines, &[]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        report
            .stderr
            .contains(&format!("{}:2: warning[join-orphan]", side.display())),
        "{}",
        report.stderr
    );
    assert_eq!(report.summary["side_orphans"], 1);

    let dir = tempfile::tempdir().expect("temp dir");
    let rejects = dir.path().join("rejects.jsonl");
    let (reject, side, _dir) = rewards_case(
        &lines,
        &[
            "--orphans",
            "reject",
            "--rejects",
            rejects.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(reject.code, 1, "{}", reject.stderr);
    assert_eq!(reject.out.len(), 2, "trajectories are still written");
    let r = read_jsonl(&rejects);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["file"], side.to_string_lossy().as_ref());
    assert_eq!(r[0]["line"], 2);
    assert_eq!(r[0]["record"], lines[1]);
    assert_eq!(r[0]["diagnostics"][0]["rule"], "join-orphan");
}

/// The index numbers records across side files and keeps no file per record: each orphan must
/// still be placed in its own file, past files that indexed nothing, at its line (not its
/// record index: a blank line comes first in the last file).
#[test]
fn orphans_of_several_side_files_are_placed_in_their_own_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = dir.path().join("a.jsonl");
    let empty = dir.path().join("empty.jsonl");
    let c = dir.path().join("c.jsonl");
    write_jsonl(
        &a,
        &[
            json!({"id": "sample-api-1", "reward": 0.5}),
            json!({"id": "ghost-a", "reward": 0.1}),
        ],
    );
    fs::write(&empty, "").expect("write");
    let ghost_c = json!({"id": "ghost-c", "reward": 0.2});
    fs::write(
        &c,
        format!(
            "\n{ghost_c}\n{}\n",
            json!({"id": "sample-py-1", "reward": 1.0})
        ),
    )
    .expect("write");
    let rejects = dir.path().join("rejects.jsonl");
    let path = |p: &Path| p.to_str().expect("utf-8").to_owned();
    let (a_s, empty_s, c_s, rejects_s) = (path(&a), path(&empty), path(&c), path(&rejects));
    let run = join(
        &[&sample_data().join("adp/v1.5.jsonl")],
        &[
            "--rewards",
            &a_s,
            &empty_s,
            &c_s,
            "--key",
            "/id",
            "--value",
            "/reward",
            "--orphans",
            "reject",
            "--rejects",
            &rejects_s,
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = read_jsonl(&rejects);
    let placed: Vec<(&str, u64)> = r
        .iter()
        .map(|x| {
            (
                x["file"].as_str().unwrap_or(""),
                x["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(placed, [(a_s.as_str(), 2), (c_s.as_str(), 2)]);
    assert_eq!(r[1]["record"], ghost_c);
    let files = &run.summary["side_files"];
    let counts = |i: usize| {
        let f = &files[i];
        (
            f["records"].as_u64(),
            f["matched"].as_u64(),
            f["orphans"].as_u64(),
        )
    };
    assert_eq!(counts(0), (Some(2), Some(1), Some(1)));
    assert_eq!(counts(1), (Some(0), Some(0), Some(0)));
    assert_eq!(counts(2), (Some(2), Some(1), Some(1)));
}

#[test]
fn duplicate_keys_follow_the_policy() {
    let lines = [
        json!({"id": "sample-api-1", "reward": 0.25}),
        json!({"id": "sample-api-1", "reward": 0.75}),
    ];
    let reward = |run: &Run| by_id(&run.out, "sample-api-1")["details"]["reward"].clone();
    let (first, _, _) = rewards_case(&lines, &["--duplicates", "first"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(reward(&first), lines[0]["reward"]);
    assert_eq!(first.summary["side_files"][0]["superseded"], 1);
    let (last, _, _) = rewards_case(&lines, &["--duplicates", "last"]);
    assert_eq!(reward(&last), lines[1]["reward"]);

    // all (the default): both apply, and two different rewards are a conflict.
    let (all, side, _dir) = rewards_case(&lines, &[]);
    assert_eq!(all.code, 1);
    assert!(
        all.stderr.contains("error[join-conflict]"),
        "{}",
        all.stderr
    );
    assert!(
        all.stderr.contains(&format!("{}:2", side.display())),
        "{}",
        all.stderr
    );
    assert!(
        all.stderr.contains(&format!("{}:1", side.display())),
        "{}",
        all.stderr
    );
    let (all_replace, _, _) = rewards_case(&lines, &["--conflicts", "replace"]);
    assert_eq!(reward(&all_replace), lines[1]["reward"]);

    let (error, side, _dir) = rewards_case(&lines, &["--duplicates", "error"]);
    assert_eq!(error.code, 1);
    assert!(error.out.is_empty(), "nothing is written");
    let expected = format!("{}:2: error[join-duplicate]", side.display());
    assert!(error.stderr.contains(&expected), "{}", error.stderr);
    assert!(
        error
            .stderr
            .contains(&format!("first at {}:1", side.display())),
        "{}",
        error.stderr
    );
}

#[test]
fn conflicting_rewards_are_errors_unless_a_policy_chooses() {
    // sample-py-1 already has reward 1.0; equal values are no conflict.
    let same = [json!({"id": "sample-py-1", "reward": 1})];
    let (ok, _, _) = rewards_case(&same, &[]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert_eq!(by_id(&ok.out, "sample-py-1")["details"]["reward"], 1.0);

    let other = [json!({"id": "sample-py-1", "reward": 0.3})];
    let (error, side, _dir) = rewards_case(&other, &[]);
    assert_eq!(error.code, 1);
    assert_eq!(error.summary["rejected"], 1);
    let line = error
        .stderr
        .lines()
        .find(|l| l.contains("join-conflict"))
        .expect("diagnostic");
    assert!(
        line.contains(&format!("{}:1", side.display())) && line.contains("the input trajectory"),
        "{line}"
    );
    assert!(line.contains("/details/reward"), "{line}");

    let (keep, _, _) = rewards_case(&other, &["--conflicts", "keep"]);
    assert_eq!(keep.code, 0);
    assert_eq!(by_id(&keep.out, "sample-py-1")["details"]["reward"], 1.0);
    let (replace, _, _) = rewards_case(&other, &["--conflicts", "replace"]);
    assert_eq!(
        by_id(&replace.out, "sample-py-1")["details"]["reward"],
        other[0]["reward"]
    );
}

#[test]
fn per_step_rewards_go_into_the_steps() {
    let lines = [json!({"id": "sample-api-1", "reward": 1, "steps": [null, 0.5, null, 1.0]})];
    let (run, _, _) = rewards_case(&lines, &["--step-rewards", "/steps"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let steps = by_id(&run.out, "sample-api-1")["content"]
        .as_array()
        .expect("content")
        .clone();
    let rewards: Vec<Value> = steps
        .iter()
        .map(|s| s.get("reward").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        rewards,
        lines[0]["steps"].as_array().expect("steps").clone()
    );
    assert_eq!(validate_adp(&run.out), 0);

    let too_far = [json!({"id": "sample-api-1", "reward": 1, "steps": [{"step": 9, "reward": 1}]})];
    let (run, _, _) = rewards_case(&too_far, &["--step-rewards", "/steps"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("error[join-step-reward]"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_side_input_is_a_clear_error_never_a_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let side = dir.path().join("bad.jsonl");
    fs::write(&side, "{\"id\": \"sample-api-1\", \"reward\": 1}\n{\"id\": \"x\", \"reward\": \n{\"reward\": 2}\n{\"id\": \"y\", \"reward\": \"high\"}\n").expect("write");
    let out_file = dir.path().join("out.jsonl");
    let run = join(
        &[&sample_data().join("adp/v1.5.jsonl")],
        &[
            "--rewards",
            side.to_str().expect("utf-8"),
            "--key",
            "/id",
            "--value",
            "/reward",
            "-o",
            out_file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let s = side.display();
    assert!(
        run.stderr.contains(&format!("{s}:2: error[json-")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("{s}:3: error[join-side-record]")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("key field /id: missing"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("{s}:4: error[join-side-record]")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("a reward is a number or a boolean"),
        "{}",
        run.stderr
    );
    assert!(!out_file.exists(), "no output when the side files are bad");

    let missing = join(
        &[&sample_data().join("adp/v1.5.jsonl")],
        &[
            "--rewards",
            "/nonexistent/r.jsonl",
            "--key",
            "/id",
            "--value",
            "/reward",
        ],
    );
    assert_eq!(missing.code, 3, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("/nonexistent/r.jsonl"),
        "{}",
        missing.stderr
    );

    let bad_key = join(
        &[&sample_data().join("adp/v1.5.jsonl")],
        &[
            "--rewards",
            side.to_str().expect("utf-8"),
            "--key",
            "{id",
            "--value",
            "/reward",
        ],
    );
    assert_eq!(bad_key.code, 2, "{}", bad_key.stderr);
    assert!(bad_key.stderr.contains("unclosed"), "{}", bad_key.stderr);

    let no_value = join(
        &[&sample_data().join("adp/v1.5.jsonl")],
        &["--rewards", side.to_str().expect("utf-8"), "--key", "/id"],
    );
    assert_eq!(no_value.code, 2, "{}", no_value.stderr);
    let nothing = join(&[&sample_data().join("adp/v1.5.jsonl")], &[]);
    assert_eq!(nothing.code, 2, "{}", nothing.stderr);
    let both_stdin = join(
        &[],
        &["--rewards", "-", "--key", "/id", "--value", "/reward"],
    );
    assert_eq!(both_stdin.code, 2, "{}", both_stdin.stderr);
    assert!(both_stdin.stderr.contains("stdin"), "{}", both_stdin.stderr);
}

#[test]
fn templates_with_integer_padding_key_ralph_style_ids() {
    // A generic reflections file keyed like Ralph attempts, from separate fields.
    let dir = tempfile::tempdir().expect("temp dir");
    let (root, _) = ralph_without_reflections(dir.path());
    let converted = dir.path().join("attempts.jsonl");
    convert_to(&[&root], &converted);
    let notes = [json!({"task": "task-002", "n": 1, "note": "Retry with the cache cleared."})];
    let side = dir.path().join("notes.jsonl");
    write_jsonl(&side, &notes);
    let run = join(
        &[&converted],
        &[
            "--reflections",
            side.to_str().expect("utf-8"),
            "--key",
            "{task}/attempt-{n:03}",
            "--text",
            "/note",
            "--unmatched",
            "drop",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.out.len(), 1);
    assert_eq!(run.out[0]["id"], "task-002/attempt-001");
    assert_eq!(
        run.out[0]["details"]["reflections"][0]["text"],
        notes[0]["note"]
    );
    assert_eq!(
        run.out[0]["details"]["reflections"][0]["key"],
        "task-002/attempt-001"
    );
}

/// `--key` and the value paths read generic side files; with only side sets of a format of
/// their own they would be ignored, so they are refused instead.
#[test]
fn generic_options_without_a_generic_side_set_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let side = dir.path().join("rewards.jsonl");
    fs::write(&side, "{}\n").expect("side");
    let trajectories = dir.path().join("t.jsonl");
    fs::write(&trajectories, "").expect("trajectories");
    for extra in [&["--value", "/v"][..], &["--key", "/id"]] {
        let mut args = vec![
            "--rewards",
            side.to_str().expect("utf-8"),
            "--rewards-from",
            "memabra",
        ];
        args.extend(extra);
        let run = join(&[&trajectories], &args);
        assert_eq!(run.code, 2, "{extra:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("are for generic side files"),
            "{}",
            run.stderr
        );
    }
}

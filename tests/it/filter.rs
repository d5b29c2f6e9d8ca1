//! The `[filter]` stage of a pipeline: trajectories left out by the keys the exports already
//! filter on, counted as filtered with a reason.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::common::{sample_data, trajkit};

/// A pipeline over the sample data with one join (its rewards and outcomes), `filter` (a
/// `[filter]` table or nothing) and one `adp` export given `export_keys`.
fn pipeline(out: &Path, filter: &str, export_keys: &str) -> String {
    let sd = sample_data().to_string_lossy().into_owned();
    let out = out.to_string_lossy().into_owned();
    format!(
        r#"[[input]]
path = "{sd}"

[validate]
max_reject_rate = 0.5
rejects = "{out}/rejects.jsonl"

[[join]]
rewards = ["{sd}/side/evaluations.rewards"]
key = "/id"
value = "/reward"
outcome = "/resolved"

{filter}

[[export]]
to = "adp"
output = "{out}/adp"
{export_keys}
"#
    )
}

/// Runs `text` as a pipeline in `dir`: its stderr.
fn run(dir: &Path, text: &str) -> String {
    let file = dir.join("pipeline.toml");
    fs::write(&file, text).expect("write pipeline");
    let out = trajkit().arg("run").arg(&file).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    err
}

/// Every data file of an export, by name.
fn data_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(dir.join("data")).expect("data dir") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        out.insert(name, fs::read(&p).expect("read"));
    }
    out
}

fn run_json(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(out.join("adp/run.json")).expect("run.json")).expect("JSON")
}

/// The stage `name` of a `run.json`.
fn stage<'a>(run: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let stages = run["summary"]["stages"].as_array().expect("stages");
    stages
        .iter()
        .find(|s| s["stage"] == name)
        .unwrap_or_else(|| panic!("no stage {name}: {stages:?}"))
}

#[test]
fn a_filter_table_leaves_out_what_the_same_export_option_does() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let err = run(tmp.path(), &pipeline(&a, "[filter]\nmax_steps = 6\n", ""));
    run(tmp.path(), &pipeline(&b, "", "max_steps = 6\n"));
    assert_eq!(data_files(&a.join("adp")), data_files(&b.join("adp")));

    let (filtered, exported) = (run_json(&a), run_json(&b));
    let f = stage(&filtered, "filter");
    let left_out = stage(&exported, "export[1]")["filtered"]
        .as_u64()
        .expect("n");
    assert!(
        left_out > 0,
        "the sample data has trajectories over 6 steps"
    );
    assert_eq!(f["filtered"], left_out);
    assert_eq!(f["rejected"], 0);
    let n = |v: &serde_json::Value| v.as_u64().expect("a count");
    assert_eq!(n(&f["in"]), n(&f["written"]) + n(&f["filtered"]));
    assert_eq!(stage(&filtered, "export[1]")["in"], f["written"]);
    assert_eq!(
        filtered["summary"]["filter"],
        serde_json::json!({"filtered": {"max_steps": left_out}})
    );
    let line = format!(
        "run: filter: {} trajectories in, {} written, {left_out} filtered, 0 rejected;",
        f["in"], f["written"]
    );
    assert!(err.contains(&line), "{err}");
    let reasons = format!("run: filter: left out by max_steps {left_out}\n");
    assert!(err.contains(&reasons), "{err}");
    // Left out is not rejected: the rejects file has the same records either way.
    assert_eq!(
        fs::read(a.join("rejects.jsonl")).expect("rejects"),
        fs::read(b.join("rejects.jsonl")).expect("rejects")
    );
}

#[test]
fn each_trajectory_is_counted_under_the_first_key_it_fails() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("o");
    let table = "[filter]\nmin_reward = 0.5\nmin_steps = 3\n";
    run(tmp.path(), &pipeline(&out, table, ""));
    let run = run_json(&out);
    let f = stage(&run, "filter");
    let reasons = &run["summary"]["filter"]["filtered"];
    let by_reason: u64 = reasons
        .as_object()
        .expect("reasons")
        .values()
        .map(|v| v.as_u64().expect("n"))
        .sum();
    assert_eq!(f["filtered"], by_reason);
    assert!(
        reasons["min_reward"].as_u64().expect("min_reward") > 0,
        "{reasons}"
    );
    // Every trajectory written has a reward of at least 0.5 and 3 steps.
    let mut written = 0;
    for bytes in data_files(&out.join("adp")).values() {
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let t: serde_json::Value = serde_json::from_slice(line).expect("a trajectory");
            assert!(t["details"]["reward"].as_f64().expect("reward") >= 0.5);
            assert!(t["content"].as_array().expect("steps").len() >= 3);
            written += 1;
        }
    }
    assert_eq!(f["written"], written);
}

#[test]
fn an_unknown_filter_key_is_located() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("pipeline.toml");
    let text = pipeline(&tmp.path().join("o"), "[filter]\nmax_turns = 3\n", "");
    fs::write(&file, text).expect("write");
    let out = trajkit()
        .args(["run", "--check"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("filter"), "{err}");
    assert!(err.contains("max_turns"), "{err}");
}

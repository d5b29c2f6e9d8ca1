//! `segments` in a pipeline's exports (`trajkit run`): the same rows and counts as
//! `trajkit export --segments`, and a run killed at any record and resumed writes the same bytes
//! as an uninterrupted one (its journal counts each export's rows, a shard may start in the
//! middle of a trajectory's segments).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{json_lines, trajkit, tree, valid_v15};

const HOOK: &str = "TRAJKIT_TEST_ABORT_AFTER_RECORDS";

/// Five ADP inputs, each with the two compacted fixture sessions (under ids of their own) and
/// a trajectory with no compaction; with `bad`, the third also holds an invalid trajectory
/// (records in all: 16).
fn inputs(dir: &Path, bad: bool) -> Vec<PathBuf> {
    let compacted = crate::segment::compacted_adp(dir);
    let sessions = json_lines(&fs::read(&compacted).expect("reads"));
    (0..5)
        .map(|i| {
            let mut lines = Vec::new();
            for (k, s) in sessions.iter().enumerate() {
                let mut s = s.clone();
                s["id"] = format!("{}-{i}", s["id"].as_str().expect("an id")).into();
                lines.push(s.to_string());
                if k == 0 {
                    let mut plain = valid_v15();
                    plain["id"] = format!("plain-{i}").into();
                    lines.push(plain.to_string());
                }
            }
            if bad && i == 2 {
                lines.push(r#"{"id":"bad-1","content":"x"}"#.to_owned());
            }
            let path = dir.join(format!("in-{i}.jsonl"));
            fs::write(&path, lines.join("\n") + "\n").expect("writes");
            path
        })
        .collect()
}

/// The segmented export's options, as pipeline keys and as `trajkit export` flags.
const KEYS: &str = "to = \"adp\"\nsegments = \"compaction\"\n\
                    split = \"train=0.5,validation=0.5\"\nshard_rows = 3\ndedup = true\n";
const FLAGS: [&str; 10] = [
    "--to",
    "adp",
    "--segments",
    "compaction",
    "--split",
    "train=0.5,validation=0.5",
    "--shard-rows",
    "3",
    "--dedup",
    "-o",
];

/// A pipeline over `inputs` writing under `out`: the segmented export, and an `openai` export
/// with a row per trajectory beside it (the two count different rows for one trajectory).
fn pipeline(dir: &Path, inputs: &[PathBuf], out: &Path) -> PathBuf {
    let mut text = String::new();
    for p in inputs {
        text.push_str(&format!(
            "[[input]]\npath = {:?}\nformat = \"adp\"\n",
            p.display().to_string()
        ));
    }
    let out = out.display().to_string();
    text.push_str(&format!(
        "[validate]\nmax_reject_rate = 0.9\nrejects = \"{out}/rejects.jsonl\"\n\
         [[export]]\noutput = \"{out}/segments\"\n{KEYS}\
         [[export]]\nto = \"openai\"\noutput = \"{out}/openai\"\nshard_rows = 3\n"
    ));
    let file = dir.join("p.toml");
    fs::write(&file, text).expect("writes");
    file
}

fn run(file: &Path, resume: bool, abort_after: Option<u64>) -> std::process::Output {
    let mut cmd = trajkit();
    cmd.arg("run").arg(file).arg("-q");
    if resume {
        cmd.arg("--resume");
    }
    if let Some(n) = abort_after {
        cmd.env(HOOK, n.to_string());
    }
    cmd.output().expect("runs")
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&fs::read(dir.join("manifest.json")).expect("manifest")).expect("JSON")
}

#[test]
fn a_pipeline_segments_its_export_as_export_segments_does() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inputs = inputs(tmp.path(), false);
    let out = tmp.path().join("work");
    let file = pipeline(tmp.path(), &inputs, &out);
    let done = trajkit().arg("run").arg(&file).output().expect("runs");
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(
        err.contains(
            "/segments: 25 rows in (15 trajectories, 10 cut at compactions into 20 segments), \
             21 written, 4 filtered, 0 rejected"
        ),
        "{err}"
    );
    assert!(
        err.contains("/openai: 15 trajectories in, 15 written"),
        "{err}"
    );
    let exported = tmp.path().join("exported");
    let plain = trajkit()
        .arg("export")
        .args(FLAGS)
        .arg(&exported)
        .args(&inputs)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(plain.status.success(), "{err}");
    // 10 compacted sessions into 20 segments and 5 plain trajectories (4 of them duplicates).
    assert!(
        err.contains(
            "25 rows in (15 trajectories, 10 cut at compactions into 20 segments), 21 written, \
             4 filtered, 0 rejected"
        ),
        "{err}"
    );
    // The same shards, byte for byte, and the same counts.
    let (got, want) = (
        tree(&out.join("segments/data")),
        tree(&exported.join("data")),
    );
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(got == want, "the shards differ");
    let (got, want) = (manifest(&out.join("segments")), manifest(&exported));
    assert_eq!(got["counts"], want["counts"]);
    let counts = &got["counts"];
    assert_eq!(counts["segments"]["trajectories"], 15);
    assert_eq!(counts["segments"]["segments"], 20);
    let n = |k: &str| counts[k].as_u64().expect("a count");
    assert_eq!(n("in"), n("written") + n("filtered") + n("rejected"));
    // The export beside it writes a row per trajectory.
    let openai = manifest(&out.join("openai"));
    assert_eq!(openai["counts"]["in"], 15);
    assert!(openai["counts"].get("segments").is_none());
}

#[test]
fn a_segmenting_pipeline_killed_at_any_record_resumes_to_the_same_bytes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inputs = inputs(tmp.path(), true);
    let out = tmp.path().join("work");
    let file = pipeline(tmp.path(), &inputs, &out);
    let done = run(&file, false, None);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let want = tree(&out);
    assert!(
        want.keys()
            .filter(|k| k.starts_with("segments/data/train-"))
            .count()
            > 2,
        "several shards expected: {:?}",
        want.keys().collect::<Vec<_>>()
    );
    // A shard starts with the second segment of a session: a checkpoint inside a trajectory.
    let starts_inside = want.iter().any(|(name, bytes)| {
        name.starts_with("segments/data/")
            && json_lines(bytes)
                .first()
                .and_then(|row| row["id"].as_str())
                .is_some_and(|id| id.ends_with("#segment-1"))
    });
    assert!(starts_inside, "no shard starts inside a trajectory");
    fs::remove_dir_all(&out).expect("clear");
    for n in 1..16 {
        let killed = run(&file, false, Some(n));
        assert!(!killed.status.success(), "not killed after {n} records");
        let resumed = run(&file, true, None);
        assert!(
            resumed.status.success(),
            "resume after {n}: {}",
            String::from_utf8_lossy(&resumed.stderr)
        );
        let got = tree(&out);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "killed after {n} records"
        );
        for (name, bytes) in &want {
            assert!(
                got[name] == *bytes,
                "killed after {n} records: {name} differs"
            );
        }
        fs::remove_dir_all(&out).expect("clear");
    }
}

/// The sample data's compacted sessions and subagent branches: a pipeline reading the logs
/// writes the rows `trajkit export --segments compaction,subagents` writes from their
/// conversion, and resumes them byte for byte after a kill.
#[test]
fn sample_sessions_segment_in_a_pipeline_as_in_export_and_resume() {
    let tmp = tempfile::tempdir().expect("tmp");
    let sd = crate::common::sample_data();
    let out = tmp.path().join("work");
    let file = tmp.path().join("p.toml");
    fs::write(
        &file,
        format!(
            "[[input]]\npath = {:?}\n[[export]]\nto = \"openai\"\noutput = {:?}\n\
             segments = \"compaction,subagents\"\nsplit = \"train=0.7,test=0.3\"\nshard_rows = 5\ninfer_tools = \"dataset\"\n",
            sd.display().to_string(),
            out.display().to_string()
        ),
    )
    .expect("writes");
    let done = run(&file, false, None);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let want = tree(&out);
    let counts = manifest(&out)["counts"].clone();
    assert!(counts["segments"]["cut"].as_u64() > Some(0), "{counts}");
    assert!(
        counts["segments"]["subagents"].as_u64() > Some(0),
        "{counts}"
    );
    // The same rows and counts as an export of the converted sessions.
    let converted = trajkit().arg("convert").arg(&sd).output().expect("runs");
    assert!(converted.status.success());
    let adp = tmp.path().join("sample.jsonl");
    fs::write(&adp, &converted.stdout).expect("writes");
    let exported = tmp.path().join("exported");
    let plain = trajkit()
        .args([
            "export",
            "--to",
            "openai",
            "--segments",
            "compaction,subagents",
        ])
        .args(["--split", "train=0.7,test=0.3", "--shard-rows", "5"])
        .args(["--infer-tools", "dataset", "-o"])
        .arg(&exported)
        .arg(&adp)
        .output()
        .expect("runs");
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert!(
        tree(&exported.join("data")) == tree(&out.join("data")),
        "the shards differ"
    );
    assert_eq!(manifest(&exported)["counts"], counts);
    let records: u64 = {
        let run: Value = serde_json::from_slice(&want["run.json"]).expect("run.json");
        run["summary"]["records"].as_u64().expect("records")
    };
    fs::remove_dir_all(&out).expect("clear");
    for n in [1, records / 3, records / 2, records - 1] {
        let killed = run(&file, false, Some(n));
        assert!(!killed.status.success(), "not killed after {n} records");
        let resumed = run(&file, true, None);
        assert!(
            resumed.status.success(),
            "resume after {n}: {}",
            String::from_utf8_lossy(&resumed.stderr)
        );
        assert!(
            tree(&out) == want,
            "killed after {n} records: the outputs differ"
        );
        fs::remove_dir_all(&out).expect("clear");
    }
}

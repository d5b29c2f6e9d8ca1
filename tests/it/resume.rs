//! `trajkit run --resume`: a run killed at any point and resumed writes the same bytes as an
//! uninterrupted run (shards, manifests, dataset cards, run.json, rejects), leaves no partial
//! file, and is refused when the pipeline or an input changed.
//!
//! Kills are simulated deterministically with the test hook `TRAJKIT_TEST_ABORT_AFTER_RECORDS`
//! (the process aborts after accepting N records: no destructor runs, no buffer is flushed),
//! and once with a real SIGKILL.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{adp_corpus, corpus_std_files, sample_data, trajkit, tree, valid_v15};

const HOOK: &str = "TRAJKIT_TEST_ABORT_AFTER_RECORDS";
const COMMIT_HOOK: &str = trajkit::engine::output::ABORT_IN_COMMIT;

/// Asserts that `got` holds exactly the files of `want`, byte for byte.
fn assert_same_tree(want: &BTreeMap<String, Vec<u8>>, got: &Path, what: &str) {
    let got = tree(got);
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&got), names(want), "{what}: the files differ");
    for (name, bytes) in want {
        assert!(got[name] == *bytes, "{what}: {name} differs");
    }
}

/// A pipeline over the sample data, the corpus (when present) and a file of bad records, with
/// a join, dedup, splits and small shards: Parquet cut by rows, openai (inferred tool specs)
/// compressed and cut by bytes. Outputs under `out`.
fn pipeline(out: &Path, bad: &Path, extra_export_keys: &str) -> String {
    let sd = sample_data();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut text = format!("[[input]]\npath = \"{}\"\n", s(&sd));
    if let Some(corpus) = adp_corpus() {
        for f in corpus_std_files(&corpus) {
            text.push_str(&format!(
                "\n[[input]]\npath = \"{}\"\nformat = \"adp\"\n",
                s(&f)
            ));
        }
    }
    text.push_str(&format!(
        r#"
[[input]]
path = "{bad}"
format = "adp"

[validate]
max_reject_rate = 0.9
rejects = "{out}/rejects.jsonl"

[[join]]
reflections = ["{sd}/reflexion/loop.jsonl"]
reflections_from = "reflexion"
memory_window = 2
rewards = ["{sd}/side/evaluations.rewards"]
key = "/id"
value = "/reward"
outcome = "/resolved"

[[export]]
to = "parquet"
output = "{out}/parquet"
split = "train=0.8,validation=0.2"
shard_rows = 7
dedup = true
{extra_export_keys}
[[export]]
to = "openai"
output = "{out}/openai"
split = "train=0.7,test=0.3"
shard_bytes = 60000
compress = "zstd"
dedup = true
"#,
        bad = s(bad),
        sd = s(&sd),
        out = s(out),
    ));
    text
}

/// A workspace: the pipeline file and the bad-records input live beside `work/`, the run's
/// output directory (outputs record their paths, so every run writes to the same place).
struct Setup {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    file: PathBuf,
}

fn setup(extra_export_keys: &str) -> Setup {
    let tmp = tempfile::tempdir().expect("tmp");
    let bad = tmp.path().join("bad.jsonl");
    // An invalid trajectory, a line that is not JSON, a trajectory with no steps, and a
    // duplicate of a valid one under another id (dedup drops it).
    let mut dup = valid_v15();
    dup["id"] = "dup-1".into();
    let mut dup2 = valid_v15();
    dup2["id"] = "dup-2".into();
    fs::write(
        &bad,
        format!(
            "{{\"id\":\"bad-1\",\"content\":\"x\"}}\nnot json\n\
             {{\"schema_version\":\"1.5.0\",\"id\":\"bad-2\",\"content\":[]}}\n{dup}\n{dup2}\n"
        ),
    )
    .expect("write bad input");
    let work = tmp.path().join("work");
    let file = tmp.path().join("pipeline.toml");
    fs::write(&file, pipeline(&work, &bad, extra_export_keys)).expect("write pipeline");
    Setup {
        _tmp: tmp,
        work,
        file,
    }
}

fn run(s: &Setup, resume: bool, abort_after: Option<u64>) -> std::process::Output {
    let mut cmd = trajkit();
    cmd.arg("run").arg(&s.file).arg("-q");
    if resume {
        cmd.arg("--resume");
    }
    if let Some(n) = abort_after {
        cmd.env(HOOK, n.to_string());
    }
    cmd.output().expect("runs")
}

/// The uninterrupted run's files; `work` is left empty.
fn reference(s: &Setup) -> BTreeMap<String, Vec<u8>> {
    let out = run(s, false, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = tree(&s.work);
    fs::remove_dir_all(&s.work).expect("clear");
    t
}

/// Records the pipeline reads (from the uninterrupted run's summary).
fn records_read(want: &BTreeMap<String, Vec<u8>>) -> u64 {
    let run: serde_json::Value =
        serde_json::from_slice(&want["openai/run.json"]).expect("run.json");
    run["summary"]["records"].as_u64().expect("records")
}

/// After a kill: nothing looks finished (no manifest, no final shard name).
fn assert_nothing_finished(work: &Path) {
    for name in tree(work).keys() {
        assert!(
            !name.ends_with("manifest.json") && !name.contains("-of-"),
            "{name} looks finished after a kill"
        );
    }
}

fn killed(s: &Setup, n: u64) {
    let out = run(s, false, Some(n));
    assert!(
        !out.status.success(),
        "the run was not killed after {n} records"
    );
    assert_nothing_finished(&s.work);
}

#[test]
fn killed_at_any_point_and_resumed_writes_the_same_bytes() {
    let s = setup("");
    let want = reference(&s);
    let total = records_read(&want);
    assert!(total > 20, "too few records ({total}) to kill midway");
    assert!(
        want.keys()
            .filter(|k| k.starts_with("parquet/data/train-"))
            .count()
            > 2,
        "several shards expected: {:?}",
        want.keys().collect::<Vec<_>>()
    );
    assert!(want.contains_key("rejects.jsonl"));
    // First record, mid first input, input boundaries, after shard closes, last record.
    for n in [1, 2, 3, 8, 15, total / 3, total / 2, total - 4, total - 1] {
        killed(&s, n);
        let out = run(&s, true, None);
        assert!(
            out.status.success(),
            "resume after {n}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_same_tree(&want, &s.work, &format!("killed after {n} records"));
        fs::remove_dir_all(&s.work).expect("clear");
    }
}

#[test]
fn a_resumed_run_killed_again_resumes_to_the_same_bytes() {
    let s = setup("");
    let want = reference(&s);
    let total = records_read(&want);
    for (first, second) in [(total / 2, 3), (total - 5, 1), (10, total / 2)] {
        killed(&s, first);
        let out = run(&s, true, Some(second));
        assert!(!out.status.success(), "the resumed run was not killed");
        let out = run(&s, true, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_same_tree(
            &want,
            &s.work,
            &format!("killed after {first}, then {second}"),
        );
        fs::remove_dir_all(&s.work).expect("clear");
    }
}

/// One export without splits, cut every 2 rows, and many inputs: a kill near the end is
/// resumed without reading the first inputs again.
#[test]
fn a_resumed_run_does_not_read_the_completed_inputs_again() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut text = String::new();
    for i in 0..12 {
        let p = tmp.path().join(format!("in-{i:02}.jsonl"));
        let mut f = fs::File::create(&p).expect("create");
        for j in 0..3 {
            let mut t = valid_v15();
            t["id"] = format!("t-{i}-{j}").into();
            writeln!(f, "{t}").expect("write");
        }
        text.push_str(&format!(
            "[[input]]\npath = \"{}\"\nformat = \"adp\"\n",
            p.display()
        ));
    }
    let out = tmp.path().join("out");
    text.push_str(&format!(
        "[[export]]\nto = \"adp\"\noutput = \"{}\"\nshard_rows = 2\n",
        out.display()
    ));
    let file = tmp.path().join("p.toml");
    fs::write(&file, text).expect("write");
    let plain = trajkit()
        .arg("run")
        .arg(&file)
        .arg("-q")
        .output()
        .expect("runs");
    assert!(plain.status.success());
    let want = tree(&out);
    fs::remove_dir_all(&out).expect("clear");
    let killed = trajkit()
        .arg("run")
        .arg(&file)
        .arg("-q")
        .env(HOOK, "31")
        .output()
        .expect("runs");
    assert!(!killed.status.success());
    let resumed = trajkit()
        .args(["run", "--resume", "--progress", "json", "-q"])
        .arg(&file)
        .output()
        .expect("runs");
    assert!(resumed.status.success());
    assert_same_tree(&want, &out, "resumed");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    let last: serde_json::Value = stderr
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("a progress line");
    // 36 records in all; the kill came after 31, and the open shard began at record 31.
    let read = last["records"].as_u64().expect("records");
    assert!(read <= 6, "the resumed run read {read} records");
}

#[test]
fn resume_is_refused_when_the_pipeline_or_an_input_changed() {
    let s = setup("");
    let bad = s.file.with_file_name("bad.jsonl");
    killed(&s, 10);
    let original = fs::read_to_string(&s.file).expect("read");
    fs::write(
        &s.file,
        original.replace("shard_rows = 7", "shard_rows = 8"),
    )
    .expect("write");
    let out = run(&s, true, None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot resume") && err.contains("changed"),
        "{err}"
    );
    fs::write(&s.file, &original).expect("write");
    // The same pipeline, but an input grew.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&bad)
        .expect("open");
    writeln!(f, "not json either").expect("append");
    drop(f);
    let out = run(&s, true, None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("inputs") && err.contains("changed"), "{err}");
    // The journal is still there, and a run without --resume refuses the directory (it
    // holds the interrupted run's partial files) and says how to go on.
    let out = run(&s, false, None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--resume"), "{err}");
}

#[test]
fn resume_without_a_journal_runs_from_the_start() {
    let s = setup("");
    let want = reference(&s);
    let out = run(&s, true, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_same_tree(&want, &s.work, "resumed without a journal");
}

/// A kill at each step of the commit (after the journal recorded it: renaming the rejects file
/// and the shards into place, writing manifests, cards and `run.json`; step 0 is before the
/// first), with the temporary manifest a kill while writing it would leave: a plain run is
/// refused and points to `--resume`, which finishes the commit to the bytes of an
/// uninterrupted run.
#[test]
fn killed_while_committing_and_resumed_writes_the_same_bytes() {
    let s = setup("");
    let want = reference(&s);
    let dead = {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("true runs");
        let pid = child.id();
        child.wait().expect("waits");
        pid
    };
    let mut step = 0;
    loop {
        let out = trajkit()
            .arg("run")
            .arg(&s.file)
            .arg("-q")
            .env(COMMIT_HOOK, step.to_string())
            .output()
            .expect("runs");
        if out.status.success() {
            // Past the last step: the run was not killed.
            assert!(step > 10, "only {step} steps in the commit");
            break;
        }
        fs::write(
            s.work.join(format!("openai/manifest.json.tmp-{dead}")),
            "{\"half\": ",
        )
        .expect("write a stale temporary file");
        if step % 4 == 0 {
            let plain = run(&s, false, None);
            let err = String::from_utf8_lossy(&plain.stderr);
            assert_eq!(plain.status.code(), Some(2), "step {step}: {err}");
            assert!(err.contains("--resume"), "step {step}: {err}");
        }
        let out = run(&s, true, None);
        assert!(
            out.status.success(),
            "resume after commit step {step}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_same_tree(&want, &s.work, &format!("killed at commit step {step}"));
        fs::remove_dir_all(&s.work).expect("clear");
        step += 1;
    }
    assert_same_tree(&want, &s.work, "not killed");
}

/// A real SIGKILL at whatever point the run reached once a shard was being written; the
/// resumed run's bytes must not depend on when that was. `force` lets the resume re-run a run
/// the kill came too late for.
#[test]
fn a_sigkilled_run_resumes_to_the_same_bytes() {
    let s = setup("force = true\n");
    // A larger input, so that the kill is likely to come midway.
    let big = s.file.with_file_name("big.jsonl");
    let mut f = std::io::BufWriter::new(fs::File::create(&big).expect("create"));
    for i in 0..6000 {
        let mut t = valid_v15();
        t["id"] = format!("big-{i}").into();
        t["content"][0]["content"] = format!("task {i} {}", "x".repeat(i % 300)).into();
        writeln!(f, "{t}").expect("write");
    }
    f.flush().expect("flush");
    drop(f);
    let text = fs::read_to_string(&s.file).expect("read");
    let text = format!(
        "[[input]]\npath = \"{}\"\nformat = \"adp\"\n\n{text}",
        big.display()
    );
    fs::write(&s.file, text).expect("write");
    let want = reference(&s);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("trajkit"))
        .arg("run")
        .arg(&s.file)
        .arg("-q")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let data = s.work.join("parquet/data");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let partial = fs::read_dir(&data).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        });
        if partial || child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().ok();
    child.wait().expect("wait");
    let out = run(&s, true, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_same_tree(&want, &s.work, "resumed after SIGKILL");
}

#[test]
fn a_killed_partition_resumes_to_the_same_bytes_with_its_own_journal() {
    let s = setup("");
    let part = |abort_after: Option<u64>, resume: bool| {
        let mut cmd = trajkit();
        cmd.arg("run").arg(&s.file).arg("-q");
        cmd.args(["--partition", "0/2", "--partition-by", "id"]);
        if resume {
            cmd.arg("--resume");
        }
        if let Some(n) = abort_after {
            cmd.env(HOOK, n.to_string());
        }
        cmd.output().expect("runs")
    };
    let out = part(None, false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = tree(&s.work);
    assert!(
        want.keys().any(|k| k.contains("-part-00000-of-00002-")),
        "partition shards expected: {:?}",
        want.keys().collect::<Vec<_>>()
    );
    fs::remove_dir_all(&s.work).expect("clear");
    for n in [3, 15] {
        let out = part(Some(n), false);
        assert!(!out.status.success(), "not killed after {n} records");
        let journal = s.work.join("parquet/.trajkit-run-part-00000-of-00002");
        assert!(
            journal.is_dir(),
            "the partition's journal is {}",
            journal.display()
        );
        assert!(!s.work.join("parquet/.trajkit-run").exists());
        let out = part(None, true);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_same_tree(
            &want,
            &s.work,
            &format!("partition killed after {n} records"),
        );
        fs::remove_dir_all(&s.work).expect("clear");
    }
}

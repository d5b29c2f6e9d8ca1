//! How commands write their outputs when things go wrong: a closed stdout or stderr, a second
//! command writing the same output, a full disk, a failing rejects file, pipelines whose
//! exports overlap, temporary files that a killed command left.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, sample_data, trajkit, valid_v15};

/// Names of the files under `dir` (recursively), relative to it, sorted.
fn names(dir: &Path) -> Vec<String> {
    common::tree(dir).into_keys().collect()
}

/// The binary, for commands whose pipes the test holds itself.
fn bin() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("trajkit"));
    cmd.env_remove("RUST_LOG");
    cmd
}

/// `n` valid ADP trajectories (distinct ids) and `bad` lines that are not JSON, in `dir`.
fn input(dir: &Path, n: usize, bad: usize) -> PathBuf {
    let mut text = String::new();
    for i in 0..n {
        let mut t = valid_v15();
        t["id"] = format!("t-{i}").into();
        text.push_str(&format!("{t}\n"));
    }
    for i in 0..bad {
        text.push_str(&format!("not json {i}\n"));
    }
    let path = dir.join("in.jsonl");
    fs::write(&path, text).expect("write input");
    path
}

/// Asserts that no temporary, partial or lock file is left under `dir`.
fn assert_no_leftovers(dir: &Path) {
    for name in names(dir) {
        assert!(
            !name.contains(".tmp-")
                && !name.ends_with(".partial")
                && !name.ends_with(".lock")
                && !name.contains(".trajkit-run"),
            "{name} was left behind: {:?}",
            names(dir)
        );
    }
}

/// A pipe whose reading end is already closed: writing to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_closed_stderr_drops_the_diagnostics_without_a_panic() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 3, 50);
    let (out, rejects) = (tmp.path().join("out.jsonl"), tmp.path().join("rej.jsonl"));
    let status = bin()
        .args(["convert", "--from", "adp"])
        .arg(&inp)
        .arg("-o")
        .arg(&out)
        .arg("--rejects")
        .arg(&rejects)
        .stdout(Stdio::null())
        .stderr(closed_pipe())
        .status()
        .expect("runs");
    // 1: records were rejected (not 101, a panic printing to the closed stderr).
    assert_eq!(status.code(), Some(1));
    assert_eq!(fs::read_to_string(&out).expect("out").lines().count(), 3);
    assert_eq!(
        fs::read_to_string(&rejects).expect("rej").lines().count(),
        50
    );
    assert_no_leftovers(tmp.path());
}

#[test]
fn a_closed_stdout_stops_the_command_quietly_and_commits_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 200, 5);
    let rejects = tmp.path().join("rej.jsonl");
    let out = bin()
        .args(["convert", "--from", "adp", "-o", "-"])
        .arg(&inp)
        .arg("--rejects")
        .arg(&rejects)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !err.contains("trajkit: error") && !err.contains("panicked"),
        "{err}"
    );
    // The output was cut short: the rejects file of the run is not committed either.
    assert!(!rejects.exists());
    assert_no_leftovers(tmp.path());
}

/// Starts `trajkit ARGS` reading stdin from a pipe the test keeps open, and waits until
/// `lock` exists (the command holds its outputs' locks).
fn held_open(args: &[&str], lock: &Path) -> std::process::Child {
    let child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let started = Instant::now();
    while !lock.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            lock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Closes the held command's stdin and asserts that it succeeds.
fn release(mut child: std::process::Child) {
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{}", valid_v15()).expect("feed a record");
    drop(stdin);
    let status = child.wait().expect("waits");
    assert!(status.success(), "the first command failed: {status}");
}

#[test]
fn a_second_export_to_a_directory_being_written_is_refused_at_once_naming_the_first() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("sft");
    let d = dir.to_string_lossy().into_owned();
    let first = held_open(
        &["export", "-", "--to", "openai", "-o", &d],
        &dir.join(".trajkit.lock"),
    );
    let started = Instant::now();
    let out = trajkit()
        .args(["export", "-", "--to", "openai", "-o", &d, "--force"])
        .write_stdin(format!("{}\n", valid_v15()))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("pid {}: ", first.id())) && err.contains("export - --to openai"),
        "{err}"
    );
    assert!(
        err.contains("is being written by another trajkit process"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "it waited");
    release(first);
    // The first export completed, its manifest lists what is on disk, and the lock is gone.
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["counts"]["written"], 1, "{manifest}");
    assert!(!dir.join(".trajkit.lock").exists());
    // Now that it ended, the directory can be written again.
    trajkit()
        .args(["export", "-", "--to", "openai", "-o", &d, "--force"])
        .write_stdin(format!("{}\n", valid_v15()))
        .assert()
        .success();
}

#[test]
fn a_second_convert_to_a_file_being_written_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("out.jsonl");
    let o = out.to_string_lossy().into_owned();
    let first = held_open(
        &["convert", "--from", "adp", "-", "-o", &o],
        &tmp.path().join("out.jsonl.lock"),
    );
    let second = trajkit()
        .args(["convert", "--from", "adp", "-", "--rejects", &o])
        .write_stdin("")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    release(first);
    assert_eq!(fs::read_to_string(&out).expect("out").lines().count(), 1);
    assert_no_leftovers(tmp.path());
}

fn check_pipeline(dir: &Path, exports: &[&str], rejects: &str) -> (Option<i32>, String) {
    let sd = sample_data().to_string_lossy().into_owned();
    let mut text =
        format!("[[input]]\npath = \"{sd}/openai\"\n\n[validate]\nrejects = \"{rejects}\"\n");
    for e in exports {
        text.push_str(&format!(
            "\n[[export]]\nto = \"openai\"\noutput = \"{e}\"\n"
        ));
    }
    let file = dir.join("pipeline.toml");
    fs::write(&file, text).expect("write pipeline");
    let out = trajkit()
        .current_dir(dir)
        .args(["run", "--check", "pipeline.toml"])
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    )
}

#[test]
fn check_refuses_exports_that_share_or_nest_their_outputs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    assert_eq!(
        check_pipeline(d, &["out/a", "out/b", "out/a"], "rej.jsonl"),
        (
            Some(2),
            "trajkit: error: pipeline.toml: export[3]: its output out/a is export[1]'s too; \
             each export needs a directory of its own"
                .to_owned()
        )
    );
    assert_eq!(
        check_pipeline(d, &["out/a", "out/a/inner"], "rej.jsonl"),
        (
            Some(2),
            "trajkit: error: pipeline.toml: export[2]: its output and export[1]'s nest \
             (out/a/inner is inside out/a); each export needs a directory of its own"
                .to_owned()
        )
    );
    assert_eq!(
        check_pipeline(d, &["out/a", "out/b"], "out/b/rej.jsonl"),
        (
            Some(2),
            "trajkit: error: pipeline.toml: [validate] rejects: out/b/rej.jsonl is inside the \
             directory of export[2] (out/b); write it elsewhere"
                .to_owned()
        )
    );
    let (code, err) = check_pipeline(d, &["out/a", "out/ab"], "out/rej.jsonl");
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_parquet_export_on_a_full_disk_leaves_no_partial_file_and_a_retry_succeeds() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 400, 0);
    let dir = tmp.path().join("pq");
    let export = |full: bool| {
        let mut cmd = trajkit();
        cmd.args(["export", "--to", "parquet", "-q"])
            .arg(&inp)
            .arg("-o")
            .arg(&dir);
        if full {
            cmd.env(trajkit::engine::output::WRITE_LIMIT, "4096");
        }
        cmd.output().expect("runs")
    };
    let out = export(true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no space left"), "{err}");
    assert_eq!(
        names(&dir),
        Vec::<String>::new(),
        "files left on a full disk"
    );
    let out = export(false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_leftovers(&dir);
    assert!(dir.join("manifest.json").exists());
}

#[test]
fn a_run_on_a_full_disk_leaves_nothing_to_resume_and_a_retry_succeeds() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 400, 3);
    let work = tmp.path().join("work");
    let text = format!(
        "[[input]]\npath = \"{}\"\nformat = \"adp\"\n\n[validate]\nrejects = \"{w}/rej.jsonl\"\n\
         max_reject_rate = 0.5\n\n[[export]]\nto = \"parquet\"\noutput = \"{w}/pq\"\n",
        inp.display(),
        w = work.display()
    );
    let file = tmp.path().join("pipeline.toml");
    fs::write(&file, text).expect("write pipeline");
    let run = |full: bool| {
        let mut cmd = trajkit();
        cmd.args(["run", "-q"]).arg(&file);
        if full {
            cmd.env(trajkit::engine::output::WRITE_LIMIT, "4096");
        }
        cmd.output().expect("runs")
    };
    let out = run(true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(
        names(&work),
        Vec::<String>::new(),
        "files left on a full disk"
    );
    let out = run(false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_leftovers(&work);
    assert!(work.join("pq/manifest.json").exists());
    assert!(work.join("rej.jsonl").exists());
}

#[test]
fn a_failing_rejects_file_commits_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 3, 2);
    let out = tmp.path().join("out.jsonl");
    for cmd in ["convert", "join"] {
        let mut c = trajkit();
        c.arg(cmd);
        if cmd == "convert" {
            c.args(["--from", "adp"]);
        } else {
            c.args([
                "--rewards",
                "/dev/null",
                "--key",
                "/id",
                "--value",
                "/reward",
            ]);
        }
        let o = c
            .arg(&inp)
            .arg("-o")
            .arg(&out)
            .args(["--rejects", "/dev/full", "-q"])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{cmd}: {err}");
        assert!(!out.exists(), "{cmd}: the output was committed: {err}");
        assert_no_leftovers(tmp.path());
    }
}

/// The pid of a process that ran and ended.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("true runs");
    let pid = child.id();
    child.wait().expect("waits");
    pid
}

#[test]
fn temporary_files_of_killed_commands_are_removed_by_the_next_writer() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 2, 0);
    let out = tmp.path().join("out.jsonl");
    let stale = tmp.path().join(format!("out.jsonl.tmp-{}", dead_pid()));
    // This test process runs: its file may be another command's, being written.
    let live = tmp
        .path()
        .join(format!("out.jsonl.tmp-{}", std::process::id()));
    let other = tmp.path().join(format!("other.jsonl.tmp-{}", dead_pid()));
    for f in [&stale, &live, &other] {
        fs::write(f, "half a line").expect("write");
    }
    trajkit()
        .args(["convert", "--from", "adp", "-q"])
        .arg(&inp)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert!(!stale.exists(), "the stale temporary file is still there");
    assert!(live.exists() && other.exists());
}

/// `run --resume` started while the run goes on (what the audit saw corrupt a dataset) is
/// refused at once, naming the running process; the run then completes.
#[test]
fn a_resume_while_the_run_goes_on_is_refused_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 20, 0);
    let work = tmp.path().join("work");
    let file = tmp.path().join("pipeline.toml");
    fs::write(
        &file,
        format!(
            "[[input]]\npath = \"{}\"\nformat = \"adp\"\n\n[[export]]\nto = \"parquet\"\n\
             output = \"{}\"\n",
            inp.display(),
            work.display()
        ),
    )
    .expect("write pipeline");
    // The run holds on for 5 s before its commit: it is still going when the second starts.
    let mut first = bin()
        .args(["run", "-q"])
        .arg(&file)
        .env(trajkit::commands::run::journal::PAUSE_BEFORE_COMMIT, "5000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let lock = work.join(".trajkit.lock");
    let started = Instant::now();
    while !lock.exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "no lock file");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = trajkit()
        .args(["run", "--resume"])
        .arg(&file)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("pid {}: ", first.id())), "{err}");
    assert!(first.wait().expect("waits").success());
    assert_no_leftovers(&work);
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(work.join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["counts"]["written"], 20, "{manifest}");
}

/// What `datasets.load_dataset(DIR)` reads from an export directory, split by split (file
/// name → bytes), resolved as the `datasets` library resolves data files: the patterns of the
/// card's `configs` front matter (a pattern ending in `*` matches the files of its directory
/// whose names start with the rest, hidden ones only when the pattern names them, and may
/// match nothing; a path without `*` must exist), or without a card every non-hidden
/// `data/{split}-NNNNN-of-NNNNN.*`. An error where `load_dataset` raises.
type Reads = std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<u8>>>;

fn load_dataset_reads(dir: &Path) -> Result<Reads, String> {
    let mut patterns: Vec<(String, String)> = Vec::new();
    match fs::read_to_string(dir.join("README.md")) {
        Ok(card) => {
            let front = card
                .strip_prefix("---\n")
                .and_then(|c| c.split_once("\n---\n"))
                .map(|(f, _)| f)
                .ok_or("the card has no front matter")?;
            let mut split = String::new();
            for line in front.lines().map(str::trim) {
                let unquote = |s: &str| s.trim().trim_matches('"').to_owned();
                if let Some(s) = line.strip_prefix("- split:") {
                    split = s.trim().to_owned();
                } else if let Some(p) = line.strip_prefix("path:").filter(|p| !p.is_empty()) {
                    patterns.push((split.clone(), unquote(p)));
                } else if let Some(p) = line.strip_prefix("- \"") {
                    patterns.push((split.clone(), unquote(p)));
                }
            }
        }
        Err(_) => {
            for name in fs::read_dir(dir.join("data"))
                .map_err(|e| e.to_string())?
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            {
                let shard = name
                    .split_once('-')
                    .filter(|(_, rest)| {
                        rest.len() > 14
                            && rest[..5].bytes().all(|b| b.is_ascii_digit())
                            && &rest[5..9] == "-of-"
                    })
                    .map(|(split, _)| split.to_owned());
                if let Some(split) = shard.filter(|_| !name.starts_with('.')) {
                    patterns.push((split, format!("data/{name}")));
                }
            }
        }
    }
    let mut reads = Reads::new();
    for (split, pattern) in patterns {
        let files = reads.entry(split).or_default();
        match pattern.strip_suffix('*') {
            Some(prefix) => {
                let (sub, start) = prefix.rsplit_once('/').unwrap_or(("", prefix));
                let Ok(entries) = fs::read_dir(dir.join(sub)) else {
                    continue;
                };
                for entry in entries {
                    let path = entry.expect("entry").path();
                    let name = path
                        .file_name()
                        .expect("name")
                        .to_string_lossy()
                        .into_owned();
                    if path.is_file() && name.starts_with(start) && !name.starts_with('.') {
                        files.insert(name, fs::read(&path).expect("read"));
                    }
                }
            }
            None => {
                let path = dir.join(&pattern);
                let bytes = fs::read(&path).map_err(|_| format!("Unable to find '{pattern}'"))?;
                files.insert(pattern, bytes);
            }
        }
    }
    if reads.values().all(|f| f.is_empty()) {
        return Err("no data files".to_owned());
    }
    Ok(reads)
}

/// Replaces everything in `dir` with the files of `tree`.
fn restore(dir: &Path, tree: &std::collections::BTreeMap<String, Vec<u8>>) {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).expect("create");
    for (name, bytes) in tree {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().expect("parent")).expect("create");
        fs::write(path, bytes).expect("write");
    }
}

/// `export --force` killed after each step of its commit (setting the earlier export aside,
/// renaming the new shards, writing the manifest and card, removing what was set aside), over
/// an earlier export whose shards have the same names, and over nothing: `load_dataset` reads
/// the earlier dataset or the new one, never a mix (with nothing earlier, it fails until the
/// new one is whole). A rerun without `--force` calls a half-replaced directory damaged and
/// says to pass `--force`; with it, it ends as an uninterrupted export.
#[test]
fn a_kill_at_any_step_of_export_force_leaves_the_old_dataset_or_the_new_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    fs::create_dir_all(&a).expect("a");
    fs::create_dir_all(&b).expect("b");
    let (old_in, new_in) = (input(&a, 9, 0), input(&b, 6, 0));
    // The new input has other texts under the same ids: new rows in shards of the same names.
    let text = fs::read_to_string(&new_in).expect("read");
    fs::write(
        &new_in,
        text.replace("\"content\":\"", "\"content\":\"new: "),
    )
    .expect("write");
    let work = tmp.path().join("work");
    let export = |input: &Path, rows: &str, force: bool, hook: Option<usize>| {
        let mut cmd = trajkit();
        cmd.arg("export")
            .arg(input)
            .args(["--to", "openai", "-q", "-o"]);
        cmd.arg(&work).args(["--shard-rows", rows]);
        if force {
            cmd.arg("--force");
        }
        if let Some(k) = hook {
            cmd.env(trajkit::engine::output::ABORT_IN_COMMIT, k.to_string());
        }
        cmd.output().expect("runs")
    };
    let out = export(&old_in, "3", false, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old = common::tree(&work);
    let old_reads = load_dataset_reads(&work).expect("the old export reads");
    let out = export(&new_in, "2", true, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = common::tree(&work);
    let new_reads = load_dataset_reads(&work).expect("the new export reads");
    let shards = |t: &std::collections::BTreeMap<String, Vec<u8>>| {
        t.keys()
            .filter(|k| k.starts_with("data/"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        shards(&old),
        shards(&new),
        "the same shard names, to replace"
    );
    assert_ne!(old_reads, new_reads);
    for earlier in [Some(&old), None] {
        let mut step = 0;
        loop {
            restore(&work, earlier.unwrap_or(&Default::default()));
            let killed = export(&new_in, "2", true, Some(step));
            if killed.status.success() {
                assert!(step > 6, "only {step} steps in the commit");
                break;
            }
            let reads = load_dataset_reads(&work);
            match (earlier, &reads) {
                (Some(_), Ok(r)) => assert!(
                    *r == old_reads || *r == new_reads,
                    "killed at step {step}: a mix of the old and new datasets"
                ),
                (None, Ok(r)) => assert!(*r == new_reads, "killed at step {step}: a part"),
                (Some(_), Err(e)) => panic!("killed at step {step}: nothing reads ({e})"),
                (None, Err(_)) => {}
            }
            // Killed before its first step, an export into nothing left nothing to refuse.
            if let Ok(card) = fs::read_to_string(work.join("README.md")) {
                let plain = export(&new_in, "2", false, None);
                let err = String::from_utf8_lossy(&plain.stderr);
                assert_eq!(plain.status.code(), Some(2), "step {step}: {err}");
                assert!(err.contains("--force"), "step {step}: {err}");
                if card.contains("unfinished export") {
                    assert!(err.contains("damaged"), "step {step}: {err}");
                }
            }
            let again = export(&new_in, "2", true, None);
            assert!(
                again.status.success(),
                "step {step}: {}",
                String::from_utf8_lossy(&again.stderr)
            );
            assert!(
                common::tree(&work) == new,
                "step {step}: not the new export"
            );
            step += 1;
        }
    }
}

/// An export whose shards no longer match its manifest (as a kill during an older trajkit's
/// `--force` left it) is called damaged, naming what does not match.
#[test]
fn a_directory_whose_shards_do_not_match_its_manifest_is_called_damaged() {
    let tmp = tempfile::tempdir().expect("tmp");
    let inp = input(tmp.path(), 6, 0);
    let out = tmp.path().join("out");
    let export = |force: bool| {
        let mut cmd = trajkit();
        cmd.arg("export")
            .arg(&inp)
            .args(["--to", "openai", "-q", "-o"]);
        cmd.arg(&out).args(["--shard-rows", "2"]);
        if force {
            cmd.arg("--force");
        }
        cmd.output().expect("runs")
    };
    assert!(export(false).status.success());
    fs::remove_file(out.join("data/train-00001-of-00003.jsonl")).expect("rm");
    let again = export(false);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(
        err.contains("damaged")
            && err.contains("1 of the 3 files it lists are missing")
            && err.contains("data/train-00001-of-00003.jsonl")
            && err.contains("--force"),
        "{err}"
    );
    assert!(export(true).status.success());
    assert_eq!(names(&out.join("data")).len(), 3);
}

/// A `run` whose export replaces an earlier one (`force = true`), killed after each step of
/// its commit: `load_dataset` reads the earlier dataset or the new one, and `--resume`
/// finishes the commit to the bytes of an uninterrupted run.
#[test]
fn a_run_killed_while_replacing_an_export_leaves_the_old_or_the_new_and_resumes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    fs::create_dir_all(&a).expect("a");
    fs::create_dir_all(&b).expect("b");
    let (old_in, new_in) = (input(&a, 9, 0), input(&b, 6, 0));
    let work = tmp.path().join("work");
    let file = tmp.path().join("p.toml");
    fs::write(
        &file,
        format!(
            "[[input]]\npath = \"{}\"\nformat = \"adp\"\n\n[[export]]\nto = \"openai\"\n\
             output = \"{}\"\nshard_rows = 2\nforce = true\n",
            new_in.display(),
            work.display()
        ),
    )
    .expect("write");
    let run = |resume: bool, hook: Option<usize>| {
        let mut cmd = trajkit();
        cmd.arg("run").arg(&file).arg("-q");
        if resume {
            cmd.arg("--resume");
        }
        if let Some(k) = hook {
            cmd.env(trajkit::engine::output::ABORT_IN_COMMIT, k.to_string());
        }
        cmd.output().expect("runs")
    };
    let out = trajkit()
        .arg("export")
        .arg(&old_in)
        .args(["--to", "openai", "-q", "--shard-rows", "3", "-o"])
        .arg(&work)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old = common::tree(&work);
    let old_reads = load_dataset_reads(&work).expect("the old export reads");
    let out = run(false, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = common::tree(&work);
    let new_reads = load_dataset_reads(&work).expect("the new export reads");
    let mut step = 0;
    loop {
        restore(&work, &old);
        let killed = run(false, Some(step));
        if killed.status.success() {
            assert!(step > 6, "only {step} steps in the commit");
            break;
        }
        let reads = load_dataset_reads(&work).expect("something reads");
        assert!(
            reads == old_reads || reads == new_reads,
            "killed at step {step}: a mix of the old and new datasets"
        );
        let resumed = run(true, None);
        assert!(
            resumed.status.success(),
            "step {step}: {}",
            String::from_utf8_lossy(&resumed.stderr)
        );
        assert!(
            common::tree(&work) == new,
            "step {step}: not the new export"
        );
        step += 1;
    }
}
